#!/bin/sh
# fused on one thread against the memory bound and an expert numpy, with and
# without huge pages, in interleaved rounds (docs/adapters.md, "Huge pages"
# and "Against an expert numpy"). Each round runs, for every scenario, its
# gate variant at full size on fused with huge pages advised, on fused with
# SLUICE_HUGEPAGES=0, on BASE's fused where a second build is given (the
# same command, an older binary: a before-and-after), and for PC-1 the
# three-line expert numpy (ci/measure/numpy_expert.py); the order is
# reversed every other round, so drift falls on every column alike.
# ci/cpu_vs_numpy.py then pools the rounds: each column's median batch time,
# its fraction of the hardware bound, and every ratio with its range over
# the rounds, with the load and CPU wait the records saw. Long (minutes a
# round on a 2-vCPU machine); a person runs it, the tests never do.
#
#   ci/cpu-vs-numpy.sh BUILD_DIR OUT_DIR [ROUNDS]
#   SCENARIOS="PC-1 CV-1 IO-1"  which gate scenarios (default these three)
#   PYTHON=python3              a Python with numpy, for the expert
#   BASE=/path/to/sluice        an older sluice binary to compare with
set -eu
build=${1:?usage: ci/cpu-vs-numpy.sh BUILD_DIR OUT_DIR [ROUNDS]}
out=${2:?usage: ci/cpu-vs-numpy.sh BUILD_DIR OUT_DIR [ROUNDS]}
rounds=${3:-3}
here=$(cd "$(dirname "$0")/.." && pwd)
sluice="$build/tools/sluice"
scenarios=${SCENARIOS:-PC-1 CV-1 IO-1}
python=${PYTHON:-python3}
base=${BASE:-}
# The gate variant of each gate scenario.
variant_of() {
    case $1 in
    CV-1) echo 32x32 ;; IO-1) echo memory ;; PC-1) echo depth1 ;;
    PR-2) echo 64x64 ;; TAB-1) echo 10k ;; NLP-1) echo 128 ;;
    *) echo "cpu-vs-numpy: $1 is not a gate scenario" >&2; exit 2 ;;
    esac
}
columns="huge plain"
[ -n "$base" ] && columns="$columns base"
mkdir -p "$out"
{
    echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs"
    echo "commit: $(git -C "$here" rev-parse --short HEAD)"
    echo "command: $0 $*"
    echo "scenarios: $scenarios; base: ${base:-none}"
    echo "THP: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null); defrag: $(cat /sys/kernel/mm/transparent_hugepage/defrag 2>/dev/null)"
} >"$out/run.txt"
run_column() { # round scenario column
    v=$(variant_of "$2")
    dir="$out/round$1-$3"
    case $3 in
    huge) SLUICE_HUGEPAGES=1 "$sluice" bench --profile full --scenarios "$2" --variants "$v" --adapters fused \
        --threads 1 --repetitions 1 --quiet --output-dir "$dir" >>"$dir.log" 2>&1 || true ;;
    plain) SLUICE_HUGEPAGES=0 "$sluice" bench --profile full --scenarios "$2" --variants "$v" --adapters fused \
        --threads 1 --repetitions 1 --quiet --output-dir "$dir" >>"$dir.log" 2>&1 || true ;;
    base) "$base" bench --profile full --scenarios "$2" --variants "$v" --adapters fused \
        --threads 1 --repetitions 1 --quiet --output-dir "$dir" >>"$dir.log" 2>&1 || true ;;
    esac
}
for r in $(seq 1 "$rounds"); do
    order=$columns
    [ $((r % 2)) = 0 ] && order=$(echo "$columns" | tr ' ' '\n' | awk '{a[NR] = $0} END {for (i = NR; i > 0; i--) printf "%s ", a[i]}')
    echo "round $r ($order), load $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/run.txt"
    for s in $scenarios; do
        [ "$s" = PC-1 ] && [ $((r % 2)) = 0 ] &&
            echo "round $r PC-1 expert-numpy $("$python" "$here/ci/measure/numpy_expert.py") load $(cut -d' ' -f1 /proc/loadavg)" >>"$out/expert.txt"
        for c in $order; do
            run_column "$r" "$s" "$c"
        done
        [ "$s" = PC-1 ] && [ $((r % 2)) = 1 ] &&
            echo "round $r PC-1 expert-numpy $("$python" "$here/ci/measure/numpy_expert.py") load $(cut -d' ' -f1 /proc/loadavg)" >>"$out/expert.txt"
    done
done
echo "done, load $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/run.txt"
/usr/bin/python3 "$here/ci/cpu_vs_numpy.py" "$out" "$rounds" | tee "$out/results.md"

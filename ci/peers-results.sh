#!/bin/sh
# The peers' results at full size (docs/peers.md, "Results"): ROUNDS
# interleaved rounds (default 3) of the gate scenarios, each round running
# fused on one thread, every peer that is installed, then fused on --threads
# auto, the adapters' order reversed every other round, and the tables
# computed from the records (ci/peers_results.py): each adapter's median
# batch time pooled over the rounds, its per-round ratio to fused, and the
# ratio to the fastest equivalent per-batch peer with its spread over the
# rounds. The default PEERS are every framework peer in both forms and
# every storage peer; those not installed are left out, named. Long: about
# an hour for each eight peers on a 2-vCPU machine. A person runs it; the
# default tests never do.
#
#   ci/peers-results.sh BUILD_DIR OUT_DIR [ROUNDS]
set -eu
build=${1:?usage: ci/peers-results.sh BUILD_DIR OUT_DIR [ROUNDS]}
out=${2:?usage: ci/peers-results.sh BUILD_DIR OUT_DIR [ROUNDS]}
rounds=${3:-3}
here=$(cd "$(dirname "$0")/.." && pwd)
sluice="$build/tools/sluice"
scenarios=${SCENARIOS:-gate}
profile=${PROFILE:-full}
peers=${PEERS:-peer:numpy,peer:numpy-idiomatic,peer:torch,peer:torch-idiomatic,peer:torch-idiomatic-w2,peer:grain,peer:grain-idiomatic,peer:grain-idiomatic-t2,peer:tfdata,peer:tfdata-idiomatic,peer:jax,peer:jax-idiomatic,peer:datarax,peer:datarax-scan,peer:dali,peer:energon,peer:litdata,peer:hf-datasets,peer:webdataset,peer:spdl,peer:ray-data,peer:deeplake,peer:mosaicml-streaming,peer:ffcv}
# Only the peers that can run here; the others are named once.
available=""
for p in $(echo "$peers" | tr ',' ' '); do
    if "$sluice" list | awk -v p="$p" '$1 == p && $4 != "no:" {found = 1} END {exit !found}'; then
        available="$available,$p"
    else
        echo "peers-results: $p is not available here, left out" >&2
    fi
done
available=${available#,}
reverse() { echo "$1" | tr ',' '\n' | awk '{a[NR] = $0} END {for (i = NR; i > 0; i--) printf "%s%s", a[i], (i > 1 ? "," : "\n")}'; }
mkdir -p "$out"
{
    echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs"
    echo "commit: $(git -C "$here" rev-parse --short HEAD)"
    echo "command: $0 $*"
    echo "peers: $available"
} >"$out/run.txt"
for r in $(seq 1 "$rounds"); do
    order=$available
    [ $((r % 2)) = 0 ] && order=$(reverse "$available")
    echo "round $r, load $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/run.txt"
    "$sluice" bench --profile "$profile" --scenarios "$scenarios" --repetitions 1 --threads 1 --quiet \
        --adapters "fused,$order" --output-dir "$out/round$r-t1" >"$out/round$r-t1.log" 2>&1 || true
    "$sluice" bench --profile "$profile" --scenarios "$scenarios" --repetitions 1 --threads auto --quiet \
        --adapters fused --output-dir "$out/round$r-auto" >"$out/round$r-auto.log" 2>&1 || true
    echo "round $r done, load $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/run.txt"
done
python3 "$here/ci/peers_results.py" "$out" "$rounds" | tee "$out/results.md"

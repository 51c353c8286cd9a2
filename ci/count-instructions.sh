#!/usr/bin/env bash
# Instruction counts of the gate rows: ci/count-instructions.sh SLUICE OUT
#
# Runs each gate scenario and adapter once under valgrind's callgrind,
# counting instructions only inside sl_bench_run (1 warmup and 3 measured
# batches, no probes, one fused thread, the AVX2 kernels, which valgrind can
# run), and writes one line per row to OUT:
#   SCENARIO<TAB>VARIANT<TAB>ADAPTER<TAB>INSTRUCTIONS
# with "-" for the count when valgrind failed. ci/gate.sh compares two such
# files; `sluice history add --instructions OUT` files them with a run, so
# that a step in wall time can be checked against the instructions.
# Environment: INSTRUCTION_ROWS, space-separated SCENARIO/VARIANT/ADAPTER
# rows (default: every gate variant with reference, iter and fused); any
# other variable is passed to sluice as it is (the gate's head environment).
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: ci/count-instructions.sh SLUICE OUT" >&2
  exit 2
fi
sluice=$1
out=$2
rows=${INSTRUCTION_ROWS:-}
if [ -z "$rows" ]; then
  for sv in CV-1/32x32 NLP-1/128 TAB-1/10k PC-1/depth1 IO-1/memory PR-2/64x64; do
    for adapter in reference iter fused; do
      rows="$rows $sv/$adapter"
    done
  done
fi
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
: >"$out.tmp"
for row in $rows; do
  IFS=/ read -r scenario variant adapter <<<"$row"
  valgrind --tool=callgrind --collect-atstart=no --toggle-collect=sl_bench_run \
    --callgrind-out-file="$scratch/callgrind.out" \
    "$sluice" bench --scenarios "$scenario" --variants "$variant" --adapters "$adapter" --kernels cpu-avx2 \
    --threads 1 --repetitions 1 --warmup 1 --batches 3 --no-probes --quiet --output-dir "$scratch/records" \
    >/dev/null 2>&1 || true
  count=$(awk '/^summary:/ {print $2}' "$scratch/callgrind.out" 2>/dev/null || true)
  rm -f "$scratch/callgrind.out"
  printf '%s\t%s\t%s\t%s\n' "$scenario" "$variant" "$adapter" "${count:--}" >>"$out.tmp"
done
mv "$out.tmp" "$out"

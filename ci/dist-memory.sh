#!/usr/bin/env bash
# What one rank of DIST-1 (or SCENARIO, e.g. DIST-2) costs, per rank count:
# docs/distributed.md's figures. Two measurements:
#   1. real jobs, `mpirun --oversubscribe -np K sluice bench --scenarios DIST-1`
#      for K = 1, 2, 4, 8, each rank's lifetime peak RSS (GNU time's %M);
#   2. one rank's build alone (ci/measure/dist_rank_cost.c), whole fixture
#      against shard-only, for the same K and for K = 1000.
#   ci/dist-memory.sh BUILD_DIR [PROFILE] [SLUICE_FOR_BEFORE]
# SLUICE_FOR_BEFORE: a sluice built before shard-only generation, whose
# jobs are measured the same way, for comparison.
set -euo pipefail
build=${1:?usage: ci/dist-memory.sh BUILD_DIR [PROFILE] [SLUICE_FOR_BEFORE]}
profile=${2:-full}
before=${3:-}
scenario=${SCENARIO:-DIST-1}
here=$(cd "$(dirname "$0")/.." && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "scenario: $scenario, profile $profile"
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg)"

jobs() {
  local sluice=$1 label=$2
  for k in 1 2 4 8; do
    mpirun --oversubscribe -np "$k" /usr/bin/time -f "maxrss_kib %M" "$sluice" bench --profile "$profile" \
      --scenarios "$scenario" --adapters fused --quiet --output-dir "$work/$label-$k" >"$work/log" 2>&1 || {
      echo "K=$k failed:"; tail -5 "$work/log"; continue; }
    grep maxrss_kib "$work/log" | awk -v k="$k" -v l="$label" \
      '{ v = $2 / 1024; s += v; if (n == 0 || v < lo) lo = v; if (v > hi) hi = v; n++ }
       END { printf "%-7s K=%d: %d ranks, peak RSS per rank %.1f to %.1f MiB (mean %.1f)\n", l, k, n, lo, hi, s / n }'
  done
}
jobs "$build/tools/sluice" after
[ -n "$before" ] && jobs "$before" before

cc -std=c11 -O2 -D_GNU_SOURCE -I"$here/include" -I"$build/config" "$here/ci/measure/dist_rank_cost.c" \
  -L"$build" -lsluice -Wl,-rpath,"$build" -o "$work/cost"
# The batches a bench run reads: the profile's warmup and measured batches
# (bench/profiles.c: ci 3 + 20, full 5 + 50).
case "$profile" in ci) read_batches=23 ;; *) read_batches=55 ;; esac
for k in 1 2 4 8 1000; do
  "$work/cost" "$profile" "$k" $((k > 1 ? 1 : 0)) 0
  "$work/cost" "$profile" "$k" $((k > 1 ? 1 : 0)) "$read_batches"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

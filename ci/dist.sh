#!/usr/bin/env bash
# DIST-1 on 1, 2 and 4 ranks of this machine (oversubscribed where it has
# fewer cores), one `mpirun -np K sluice bench` per K, then a table of each
# rank's p50 batch latency and of the slowest rank against one rank alone.
#   RANKS       the rank counts (default "1 2 4")
#   OUTPUT_DIR  records go to $OUTPUT_DIR/k<K>/<profile>/ (default records/dist)
#   extra arguments go to `sluice bench` (default: --adapters fused)
# docs/distributed.md explains the figures.
set -euo pipefail
cd "$(dirname "$0")/.."
ci/install-deps.sh
build_dir=${BUILD_DIR:-build}
BUILD_DIR=$build_dir ci/build.sh
sluice=$build_dir/tools/sluice
ranks=${RANKS:-"1 2 4"}
output_dir=${OUTPUT_DIR:-records/dist}
args=("$@")
[ ${#args[@]} -eq 0 ] && args=(--adapters fused)
# Open MPI refuses to start as root unless told; containers and CI run as root.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

notes=$(mktemp)
trap 'rm -f "$notes"' EXIT
for k in $ranks; do
  # bench prints one line per distributed record:
  # "DIST-1/32x32 fused: 4 ranks in 4 processes; p50 per rank (µs): a b c d; slowest rank 2, 12.34 ms measured"
  mpirun --oversubscribe -np "$k" "$sluice" bench --scenarios DIST-1 --output-dir "$output_dir/k$k" "${args[@]}" \
    2>&1 | tee /dev/stderr | grep 'p50 per rank' >>"$notes"
done

echo
awk '
  {
    run = $1 " " $2; sub(/:$/, "", run)
    k = $3
    split($0, parts, "\\(µs\\): "); split(parts[2], rest, ";"); n = split(rest[1], p50, " ")
    match($0, /slowest rank [0-9]+, [0-9.]+ ms/); split(substr($0, RSTART, RLENGTH), s, /[ ,]+/)
    slowest = s[3]; wall = s[4]; slow_p50 = p50[slowest + 1]
    if (k == 1) { base_p50[run] = slow_p50; base_wall[run] = wall }
    line = sprintf("%-22s %5d  %-36s %5d  %8.1f  %7.2fx  %9.2f  %7.2fx", run, k, rest[1], slowest, slow_p50,
                   (run in base_p50) ? slow_p50 / base_p50[run] : 0, wall, (run in base_wall) ? wall / base_wall[run] : 0)
    print line
  }
  BEGIN {
    printf "%-22s %5s  %-36s %5s  %8s  %8s  %9s  %8s\n", "run", "ranks", "p50 per rank (µs)", "slow", "its p50",
           "vs 1", "wall (ms)", "vs 1"
  }' "$notes"
echo "(slow: the rank whose measured batches took longest; its p50 and its measured wall time against one rank alone)"

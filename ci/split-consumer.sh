#!/bin/sh
# Whether the bench's consumer costs fused its split (docs/adapters.md,
# "Two threads and the consumer"): builds ci/measure/split_consumer.c
# against BUILD_DIR's libsluice and runs it on each scenario given, fused
# on one and two threads with no consumer and with a digest of every batch,
# in interleaved rounds. With BASELINE set to another build folder (of
# another commit), each round runs both builds, in alternating order, so
# that the machine's drift falls on both alike. Each folder's library is
# brought up to date with ninja first, so BASELINE must be the build folder
# of a checkout of the other commit (a git worktree): the build folder of
# this checkout would be rebuilt from this commit's code, and the two runs
# would compare a build with itself. Wants a quiet machine with its second
# CPU free; a person runs it, the tests never do.
#
#   ci/split-consumer.sh BUILD_DIR [ROUNDS] [BATCHES]
#   SCENARIOS="CV-1:32x32 PR-2:64x64 IO-1:memory"  scenario:variant pairs
#   BASELINE=OTHER_BUILD_DIR                        A/B against that build
set -eu
build=${1:?usage: ci/split-consumer.sh BUILD_DIR [ROUNDS] [BATCHES]}
rounds=${2:-5}
batches=${3:-200}
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Builds the measuring program against one build folder's library, as
# $work/<name>.
measure_against() {
  dir=$(cd "$1" && pwd)
  ninja -C "$dir" libsluice.so.0.1.0 >/dev/null
  cc -std=c11 -O2 -D_GNU_SOURCE -I"$here/include" -I"$dir/config" "$here/ci/measure/split_consumer.c" \
    -L"$dir" -lsluice -Wl,-rpath,"$dir" -o "$work/$2"
}

measure_against "$build" this
builds="this"
if [ -n "${BASELINE:-}" ]; then
  measure_against "$BASELINE" baseline
  builds="this baseline"
fi
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "builds: this=$build${BASELINE:+, baseline=$BASELINE}"
if [ "$builds" = this ]; then
  for pair in ${SCENARIOS:-CV-1:32x32 PR-2:64x64 IO-1:memory}; do
    "$work/this" "${pair%%:*}" "${pair#*:}" "$rounds" "$batches"
  done
else
  round=1
  while [ "$round" -le "$rounds" ]; do
    order="this baseline"
    [ $((round % 2)) -eq 0 ] && order="baseline this"
    for pair in ${SCENARIOS:-CV-1:32x32 PR-2:64x64 IO-1:memory}; do
      for which in $order; do
        printf 'round %d, %s, ' "$round" "$which"
        "$work/$which" "${pair%%:*}" "${pair#*:}" 1 "$batches" | sed -n 's/^round 1: *//p' | sed "s|^|${pair} |"
      done
    done
    round=$((round + 1))
  done
fi
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

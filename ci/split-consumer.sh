#!/bin/sh
# Whether the bench's consumer costs fused its split (docs/adapters.md,
# "Two threads and the consumer"): builds ci/measure/split_consumer.c
# against BUILD_DIR's libsluice and runs it on each scenario given, fused
# on one and two threads with no consumer and with a digest of every batch,
# in interleaved rounds. Wants a quiet machine with its second CPU free; a
# person runs it, the tests never do.
#
#   ci/split-consumer.sh BUILD_DIR [ROUNDS] [BATCHES]
#   SCENARIOS="CV-1:32x32 PR-2:64x64 IO-1:memory"  scenario:variant pairs
set -eu
build=${1:?usage: ci/split-consumer.sh BUILD_DIR [ROUNDS] [BATCHES]}
rounds=${2:-5}
batches=${3:-200}
here=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$build" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ninja -C "$build" libsluice.so.0.1.0 >/dev/null
cc -std=c11 -O2 -D_GNU_SOURCE -I"$here/include" -I"$build/config" "$here/ci/measure/split_consumer.c" \
  -L"$build" -lsluice -Wl,-rpath,"$build" -o "$work/split_consumer"
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg)"
for pair in ${SCENARIOS:-CV-1:32x32 PR-2:64x64 IO-1:memory}; do
  "$work/split_consumer" "${pair%%:*}" "${pair#*:}" "$rounds" "$batches"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

#!/usr/bin/env bash
# ci/benchmark.sh, what `meson test --benchmark` runs, on one small row:
# without a baseline it is a visible SKIP (exit 77), never a green OK;
# with one it fails (exit 1) on a slowdown and passes on the same build.
# TAP output. usage: test_benchmark.sh SLUICE PATH/TO/ci/benchmark.sh
sluice=$1
script=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. "$(dirname "$0")/tap.sh"
# PC-1 depth 1 on fused: batches of a few hundred µs, steadier than a row
# of a few µs, whose processes scatter on a busy machine.
export SLUICE_BASELINE_DIR=$work/baselines SLUICE_BENCHMARK_PROCESSES=3 SLUICE_BENCHMARK_SCENARIOS=PC-1
export SLUICE_BENCHMARK_ARGS="--variants depth1 --adapters fused --warmup 1 --batches 6"
# The machine running the tests may be busy: only the test decides here.
quiet_machine="--max-load 0 --max-wait 1"

# run NAME STATUS NEEDLE CHECK_ARGS: one benchmark, its status and output.
run() {
  expect_run "$2" "$3" "$1" -- env SLUICE_BENCHMARK_CHECK_ARGS="$4" bash "$script" "$sluice" "$work/build"
}
mkdir -p "$work/build"
run "without a baseline it is a SKIP (77) that says how to save one" 77 "SKIP: no baseline 'gate'" ""
"$sluice" baseline save gate --from "$work/build/benchmark-records/p1/ci" \
  --from "$work/build/benchmark-records/p2/ci" --from "$work/build/benchmark-records/p3/ci" \
  --baseline-dir "$SLUICE_BASELINE_DIR" >/dev/null 2>&1
run "with a baseline, a run ten times slower fails (exit 1)" 1 "slower: +" "$quiet_machine --inflate 9"
echo "1..$n"
[ "$failed" -eq 0 ]

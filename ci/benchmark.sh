#!/usr/bin/env bash
# `meson test --benchmark` (or `ninja benchmark`): the gate set on this
# build, then, when a baseline named 'gate' was saved, the gate's wall-time
# check against it (docs/gate.md). Without one it says so plainly: the run
# alone cannot fail on a slowdown. Usage: benchmark.sh SLUICE BUILD_DIR.
# SLUICE_BASELINE_DIR overrides where baselines live (default
# BUILD_DIR/baselines). Exit status: 0 no row slower; 1 a row slower or a
# run failed; 77 (meson's SKIP) when the check is inconclusive.
set -uo pipefail
sluice=$(realpath "$1")
build=$2
baselines=${SLUICE_BASELINE_DIR:-$build/baselines}
records=$build/benchmark-records
# One fused thread and five repetitions, as ci/gate.sh measures.
"$sluice" bench --scenarios gate --threads 1 --repetitions 5 --no-probes --quiet \
  --junit "$build/benchmark-junit.xml" --output-dir "$records" || exit 1
if [ ! -d "$baselines/gate" ]; then
  echo "no baseline 'gate' in $baselines: this run was not compared with anything, so it cannot fail on a"
  echo "slowdown. To compare later runs with this one, save it:"
  echo "  $sluice baseline save gate --from $records/ci --baseline-dir $baselines"
  exit 0
fi
status=0
"$sluice" check --baseline gate --baseline-dir "$baselines" --records "$records/ci" || status=$?
if [ "$status" -eq 3 ]; then
  echo "inconclusive: wall time could not tell for some rows (reported to meson as SKIP)"
  exit 77
fi
exit "$status"

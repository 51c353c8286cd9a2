#!/usr/bin/env bash
# `meson test --benchmark` (or `ninja benchmark`): the gate set on this
# build, in several processes (the gate's unit: docs/gate.md), then, when
# a baseline named 'gate' was saved, the gate's wall-time check against it.
# Without one the run is not compared with anything and cannot fail on a
# slowdown, so it is a SKIP (exit 77), not a green OK, and says how to
# save one. Usage: benchmark.sh SLUICE BUILD_DIR.
# Environment: SLUICE_BASELINE_DIR (default BUILD_DIR/baselines),
# SLUICE_BENCHMARK_PROCESSES (runs, each one process, default 5: the
# fewest with which a doubling is called slower), SLUICE_BENCHMARK_SCENARIOS
# (default gate), SLUICE_BENCHMARK_ARGS (more `sluice bench` arguments) and
# SLUICE_BENCHMARK_CHECK_ARGS (more `sluice check` arguments; the test
# uses them). Exit status: 0 no row slower; 1 a row slower or a run
# failed; 77 (meson's SKIP) without a baseline, or when the check cannot
# tell.
set -uo pipefail
sluice=$(realpath "$1")
build=$2
baselines=${SLUICE_BASELINE_DIR:-$build/baselines}
records=$build/benchmark-records
processes=${SLUICE_BENCHMARK_PROCESSES:-5}
read -r -a bench_args <<<"${SLUICE_BENCHMARK_ARGS:-}"
read -r -a check_args <<<"${SLUICE_BENCHMARK_CHECK_ARGS:-}"
rm -rf "$records"
runs=() from=()
# One fused thread and two repetitions a process, as ci/gate.sh measures.
for p in $(seq 1 "$processes"); do
  junit=()
  [ "$p" = 1 ] && junit=(--junit "$build/benchmark-junit.xml")
  "$sluice" bench --scenarios "${SLUICE_BENCHMARK_SCENARIOS:-gate}" --threads 1 --repetitions 2 --no-probes --quiet \
    "${junit[@]}" "${bench_args[@]}" --output-dir "$records/p$p" >/dev/null || exit 1
  runs+=(--records "$records/p$p/ci")
  from+=(--from "$records/p$p/ci")
done
if [ ! -d "$baselines/gate" ]; then
  echo "SKIP: no baseline 'gate' in $baselines, so this run was compared with nothing and cannot fail on a"
  echo "slowdown. To compare later runs with this one ($processes processes), save it:"
  echo "  $sluice baseline save gate ${from[*]} --baseline-dir $baselines"
  exit 77
fi
status=0
"$sluice" check --baseline gate --baseline-dir "$baselines" "${runs[@]}" "${check_args[@]}" || status=$?
if [ "$status" -eq 3 ]; then
  echo "SKIP: wall time cannot tell for some rows (reported to meson as SKIP): see each row's rule"
  exit 77
fi
exit "$status"

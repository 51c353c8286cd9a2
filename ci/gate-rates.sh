#!/usr/bin/env bash
# Measures the gate's error rates from real samples (docs/gate.md):
#   - false alarms: R runs of the gate set from one build, in sequence;
#     every window of four consecutive runs is two gate decisions with both
#     sides the same code, as ci/gate.sh interleaves them (base = runs 1 and
#     3 of the window, head = runs 2 and 4, and the other way round), so the
#     machine's drift over time falls on both sides as it does in the gate;
#   - detection: the same decisions with the new side's samples stretched
#     by 10% (`sluice check --inflate 0.10`), a known slowdown applied to
#     real, noisy samples.
# A row is one scenario, variant and adapter; a decision fails when any
# row is slower. Environment: GATE_RATE_RUNS (default 8), GATE_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${GATE_RATE_RUNS:-40}
dir=${GATE_DIR:-build-gate-rates}
ci/install-deps.sh
BUILD_DIR="$dir/build" ci/build.sh -Dtests=false -Dcuda=disabled
sluice=$dir/build/tools/sluice
rm -rf "$dir/runs" "$dir/baselines"
for r in $(seq 1 "$runs"); do
  # One fused thread, as ci/gate.sh measures (its comment says why).
  "$sluice" bench --scenarios gate --kernels cpu-avx2 --threads 1 --quiet --output-dir "$dir/runs/$r" >/dev/null
done
# pool NAME FIRST SECOND: saves runs FIRST and SECOND as baseline NAME.
pool() {
  "$sluice" baseline save "$1" --baseline-dir "$dir/baselines" --from "$dir/runs/$2/ci" --from "$dir/runs/$3/ci" \
    >/dev/null
}

tally() { # tally INFLATE -> "rows_slower rows decisions_failed decisions"
  local inflate=$1 rows=0 slower=0 decisions=0 failed=0 out n s w
  for w in $(seq 1 $((runs - 3))); do
    for side in 0 1; do
      local b1=$((w + side)) b2=$((w + side + 2)) h1=$((w + 1 - side)) h2=$((w + 3 - side))
      pool "w$w-$side" "$b1" "$b2"
      out=$("$sluice" check --baseline "w$w-$side" --baseline-dir "$dir/baselines" \
        --records "$dir/runs/$h1/ci" --records "$dir/runs/$h2/ci" --inflate "$inflate" || true)
      n=$(printf '%s\n' "$out" | awk '/ compared, / {print $1}')
      s=$(printf '%s\n' "$out" | awk '/ compared, / {print $3}')
      rows=$((rows + n))
      slower=$((slower + s))
      decisions=$((decisions + 1))
      [ "$s" -gt 0 ] && failed=$((failed + 1))
    done
  done
  echo "$slower $rows $failed $decisions"
}
read -r fa_rows rows fa_dec decisions < <(tally 0)
read -r det_rows rows2 det_dec decisions2 < <(tally 0.10)
echo "false alarms (same code): $fa_rows of $rows rows, $fa_dec of $decisions gate decisions"
echo "detection (10% slower):   $det_rows of $rows2 rows, $det_dec of $decisions2 gate decisions"

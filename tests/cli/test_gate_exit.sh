#!/usr/bin/env bash
# The gate's exit from its two signals (ci/gate-exit.sh), every
# combination against the table of docs/gate.md ("Two signals, one exit"):
# a slower signal fails; a wall time that cannot tell passes only when the
# counts ran and found nothing, and never under GATE_STRICT=1.
# usage: test_gate_exit.sh PATH/TO/ci/gate-exit.sh
sluice=true
source "$(dirname "$0")/tap.sh"
# shellcheck source=/dev/null
source "$1"

# case COUNTS WALL STRICT STATUS NEEDLE
case_of() {
  local what="counts $1, wall $2, strict $3: exit $4"
  GATE_STRICT=$3 gate_exit "$1" "$2"
  if [ "$gate_status" != "$4" ]; then
    not_ok "$what" "exit $gate_status ($gate_verdict)"
  elif [[ "$gate_verdict" != *"$5"* ]]; then
    not_ok "$what" "verdict '$gate_verdict' lacks '$5'"
  else
    ok "$what"
  fi
}

case_of 0 0 0 0 "pass"
case_of 1 0 0 1 "slower"
case_of 0 1 0 1 "slower"
case_of 1 3 0 1 "slower"
case_of skipped 1 0 1 "slower"
# The A/A gate on a busy machine: the counts decide.
case_of 0 3 0 0 "pass by the counts"
case_of 0 3 1 3 "INCONCLUSIVE"
case_of skipped 3 0 3 "INCONCLUSIVE"
case_of skipped 0 0 0 "pass"
# A signal that failed to run (check's exit 2) is not a pass.
case_of 2 0 0 1 "could not be measured"
case_of 0 2 0 1 "could not be measured"

# Confirm, never retry (gate_confirm): the second pass measures only the
# rows the first found slower; a row fails only when both found it slower.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# confirm WHAT FIRST SECOND_STATUS SECOND EXPECTED: FIRST and SECOND are
# the rows each pass found slower, ';'-separated.
confirm() {
  tr ';' '\n' <<<"$2" | sed '/^$/d' >"$work/first"
  tr ';' '\n' <<<"$4" | sed '/^$/d' >"$work/second"
  gate_confirm "$work/first" "$3" "$work/second" >/dev/null
  if [ "$gate_wall" = "$5" ]; then
    ok "$1: wall $5"
  else
    not_ok "$1: wall $5" "got $gate_wall"
  fi
}
confirm "slower in both passes fails" "CV-1 a fused;TAB-1 b iter" 1 "TAB-1 b iter" 1
confirm "slower once, same the second time, is not confirmed" "CV-1 a fused" 0 "" 3
confirm "slower once, cannot tell the second time, is not confirmed" "CV-1 a fused" 3 "" 3
confirm "two different rows slower once each confirm nothing" "CV-1 a fused" 1 "TAB-1 b iter" 3
confirm "a second pass that could not run is passed on" "CV-1 a fused" 2 "" 2
# ci/gate.sh reruns only the first pass's slower rows, and only when it
# found some: an inconclusive first pass (3) is never rerun.
gate_sh=$(dirname "$1")/gate.sh
if grep -q 'if \[ "$wall" -eq 1 \] && \[ -s "$dir/slower" \]' "$gate_sh" &&
  ! grep -q 'check[^|]*--unsettled[^|]*inconclusive' "$gate_sh"; then
  ok "ci/gate.sh confirms only rows found slower"
else
  not_ok "ci/gate.sh confirms only rows found slower"
fi
echo "1..$n"
[ "$failed" -eq 0 ]

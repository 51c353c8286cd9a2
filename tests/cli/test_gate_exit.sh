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
echo "1..$n"
[ "$failed" -eq 0 ]

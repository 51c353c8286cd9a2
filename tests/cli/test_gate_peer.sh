#!/usr/bin/env bash
# ci/gate-peer.sh, the gate for a loader of one's own, on two versions of a
# small loader of the standard library (tests/cli/loaders): the same
# version against itself is never slower (exit 0, or 3 where the machine
# is too noisy to tell), a version that does real extra
# work on every batch fails (exit 1, and the row says slower), and a bad
# command line is refused (exit 2). On TAB-1 alone (a per-feature z-score),
# with few batches, so that it takes seconds; the slowdown is several times
# the batch (about 6x here), and the test asks only whether a version is
# twice as slow (--min-effect 1), which four processes a side answer even
# when a busy machine scatters them by 15% (they detect about 40% then).
# The machine running the tests may be busy: only the test decides here
# (--max-load 0 --max-wait 1; the load and wait rules have tests of their
# own). TAP output. usage: test_gate_peer.sh SLUICE SOURCE_ROOT
sluice=$1
root=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. "$(dirname "$0")/tap.sh"
if [ ! -x /usr/bin/python3 ] && ! command -v python3 >/dev/null; then
  echo "1..0 # SKIP the loaders need python3"
  exit 0
fi
export SLUICE=$sluice GATE_ROUNDS=4 GATE_REPETITIONS=2
export GATE_CHECK_ARGS="--min-effect 1 --max-load 0 --max-wait 1"
loaders=$root/tests/cli/loaders
bench=(--scenarios TAB-1 --warmup 1 --batches 4)

# gate NAME STATUS NEEDLE OLD NEW: one peer gate, its status and output.
gate() {
  expect_run "$2" "$3" "$1: exit $2" -- env GATE_DIR="$work/$1" bash "$root/ci/gate-peer.sh" "$4" "$5" "${bench[@]}"
}
# The same version against itself must never be called slower (exit 1).
# On a quiet machine it passes (exit 0); where the machine scatters four
# processes beyond what can rule out a doubling, the honest answer is
# "cannot tell" (exit 3), which the tests' own machine, busy with other
# tests or a sanitizer, sometimes gives; either is right, a slower is not.
same_out=$(env GATE_DIR="$work/same" bash "$root/ci/gate-peer.sh" "$loaders/my_loader.py" "$loaders/my_loader.py" \
  "${bench[@]}" 2>&1)
same_status=$?
if { [ "$same_status" -eq 0 ] && printf '%s' "$same_out" | grep -qF "pass"; } ||
  { [ "$same_status" -eq 3 ] && printf '%s' "$same_out" | grep -qF "cannot tell"; }; then
  ok "the same loader against itself is never slower: exit $same_status"
else
  not_ok "the same loader against itself is never slower" "exit status $same_status, expected 0 (pass) or 3" \
    "$(printf '%s' "$same_out" | tail -8)"
fi
gate "a loader with real extra work per batch is slower" 1 "slower in both passes" "$loaders/my_loader.py" \
  "$loaders/my_loader_slow.py"
expect_run 2 "usage: ci/gate-peer.sh OLD.py NEW.py" "one loader is a bad command line: exit 2" -- \
  bash "$root/ci/gate-peer.sh" "$loaders/my_loader.py"
expect_run 2 "at least 2 processes a side" "one process a side is refused up front: exit 2" -- \
  env GATE_ROUNDS=1 bash "$root/ci/gate-peer.sh" "$loaders/my_loader.py" "$loaders/my_loader.py"
echo "1..$n"
[ "$failed" -eq 0 ]

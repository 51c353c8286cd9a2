# The gate's one exit from its two signals; sourced by ci/gate.sh and by
# tests/cli/test_gate_exit.sh, which runs every combination.
#
# gate_exit COUNTS WALL: sets gate_status and gate_verdict from the counts'
# status (0 same, 1 slower, "skipped", anything else could not be measured)
# and `sluice check`'s wall-time status (0 same, 1 slower, 3 could not tell,
# anything else failed). A slower signal fails the gate. A wall time that
# could not tell passes when the counts ran and found no row slower: they
# judged every row, and wall time only declined to add a verdict on a busy
# machine (docs/gate.md, "Two signals, one exit"); it is INCONCLUSIVE (3)
# when the counts were skipped, or with GATE_STRICT=1.
gate_exit() {
  local counts=$1 wall=$2
  gate_status=0
  gate_verdict="pass"
  if [ "$counts" = 1 ] || [ "$wall" = 1 ]; then
    gate_status=1
    gate_verdict="FAIL: head is slower than base"
  elif [ "$wall" = 3 ] && [ "$counts" = 0 ] && [ "${GATE_STRICT:-0}" != 1 ]; then
    gate_verdict="pass by the counts: no row slower; wall time could not tell for some rows (see above), so it adds no verdict"
  elif [ "$wall" = 3 ]; then
    gate_status=3
    gate_verdict="INCONCLUSIVE: wall time could not tell for some rows and no counts decided them; see above"
  elif { [ "$counts" != 0 ] && [ "$counts" != skipped ]; } || [ "$wall" != 0 ]; then
    gate_status=1
    gate_verdict="FAIL: a signal could not be measured (see above)"
  fi
}

# gate_confirm FIRST_SLOWER SECOND_STATUS SECOND_SLOWER: the wall-time
# status after a confirming pass. FIRST_SLOWER lists the rows the first
# pass found slower (`sluice check --unsettled`), and only those were
# measured again, with fresh processes; SECOND_STATUS and SECOND_SLOWER are
# that pass's. A row fails only when both passes found it slower: a false
# alarm must then happen twice to the same row. A row slower once is not
# confirmed: wall time cannot tell (3). A second pass that failed to run
# (a status other than 0, 1 or 3) is passed on. Rows that were only
# inconclusive in the first pass are never measured again, so they never
# get a fresh single chance to fail the gate. Sets gate_wall and prints the
# confirmed rows.
gate_confirm() {
  local first=$1 second_status=$2 second=$3 confirmed
  confirmed=$(comm -12 <(sort -u "$first") <(sort -u "$second" 2>/dev/null || true))
  if [ -n "$confirmed" ]; then
    gate_wall=1
    echo "wall time: slower in both passes (confirmed):"
    printf '  %s\n' "$confirmed"
  elif [ "$second_status" != 0 ] && [ "$second_status" != 1 ] && [ "$second_status" != 3 ]; then
    gate_wall=$second_status
  else
    gate_wall=3
    echo "wall time: no row slower in both passes; slower once is not confirmed, so it cannot tell"
  fi
}

# gate_rounds SCRIPT ROUNDS: refuses (exit 2) fewer than 2 processes a side
# and warns below 5. The wall-time test is over processes, one per run:
# with one a side it can never call a row slower, and below five a side
# only a change several times their spread (docs/gate.md, "What N
# processes detect").
gate_rounds() {
  if ! [ "$2" -ge 2 ] 2>/dev/null; then
    echo "$1: GATE_ROUNDS=$2: the wall-time test needs at least 2 processes a side (default 8)" >&2
    exit 2
  fi
  if [ "$2" -lt 5 ]; then
    echo "$1: warning: GATE_ROUNDS=$2 processes a side: only a change several times their spread can be" \
      "called slower, and most rows will say 'cannot tell' (8 or more recommended)" >&2
  fi
}

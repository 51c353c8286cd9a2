# The TAP helpers the CLI tests share; source it after setting sluice.
#   ok DESCRIPTION, not_ok DESCRIPTION [DETAIL...]: one test line;
#   expect STATUS NEEDLE DESCRIPTION -- ARGS...: runs sluice, checks the exit
#     status and that stdout+stderr contain NEEDLE (empty: anything);
#   expect_run STATUS NEEDLE DESCRIPTION -- COMMAND...: the same for any
#     command.
# Each script ends with `echo "1..$n"` and `[ "$failed" -eq 0 ]`.
n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() {
  n=$((n + 1))
  failed=$((failed + 1))
  echo "not ok $n - $1"
  shift
  for line in "$@"; do echo "# $line"; done
}
expect() {
  local status=$1 needle=$2 what=$3
  shift 4
  expect_run "$status" "$needle" "$what" -- "$sluice" "$@"
}
# expect_run STATUS NEEDLE DESCRIPTION -- COMMAND...: the same for any
# command (a script under ci/, with its environment through env).
expect_run() {
  local status=$1 needle=$2 what=$3
  shift 4
  local out rc
  out=$("$@" 2>&1)
  rc=$?
  if [ "$rc" -ne "$status" ]; then
    not_ok "$what" "exit status $rc, expected $status" "$(printf '%s' "$out" | tail -8)"
  elif [ -n "$needle" ] && ! printf '%s' "$out" | grep -qF -- "$needle"; then
    not_ok "$what" "output lacks '$needle'" "$(printf '%s' "$out" | tail -8)"
  else
    ok "$what"
  fi
}

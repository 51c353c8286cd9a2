#!/usr/bin/env bash
# Configure refuses compiler flags that break DESIGN.md invariant 3: by name
# where it knows the spelling, whether it comes from c_args or from CFLAGS,
# and by what the compiler then does (config/fp_probe.c and the fast-math
# macros, built with the final flags) where it does not. sluice's own
# floating-point flags come after the user's on every compile line. TAP
# output; each configure takes a few seconds.
set -u
source_root=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
n=0
failed=0

# refused DESCRIPTION NEEDLE -- COMMAND...: configuring must fail and say NEEDLE.
refused() {
  local what=$1 needle=$2
  shift 3
  n=$((n + 1))
  local out
  if out=$("$@" 2>&1); then
    failed=$((failed + 1))
    echo "not ok $n - $what"
    echo "# configure succeeded"
  elif printf '%s' "$out" | grep -qF -- "$needle"; then
    echo "ok $n - $what"
  else
    failed=$((failed + 1))
    echo "not ok $n - $what"
    printf '%s\n' "$out" | tail -3 | sed 's/^/# /'
  fi
  rm -rf "$work/build"
}

refused "-ffast-math in c_args is refused by name" "-ffast-math" -- \
  meson setup "$work/build" "$source_root" -Dtests=false -Dcuda=disabled -Dc_args=-ffast-math
refused "-ffp-contract=fast in CFLAGS is refused by name" "-ffp-contract=fast" -- \
  env CFLAGS="-O2 -ffp-contract=fast" meson setup "$work/build" "$source_root" -Dtests=false -Dcuda=disabled
refused "-Ofast is refused by name" "-Ofast" -- \
  meson setup "$work/build" "$source_root" -Dtests=false -Dcuda=disabled -Dc_args=-Ofast

# Under clang, whose -ffp-model=fast the spelling check once let through:
# it landed before sluice's flags then and defined __FAST_MATH__.
if command -v clang >/dev/null; then
  refused "clang's -ffp-model=fast is refused" "-ffp-model=fast" -- \
    env CC=clang meson setup "$work/build" "$source_root" -Dtests=false -Dcuda=disabled -Dc_args=-ffp-model=fast
  # No spelling the list knows: only the compiler's behaviour gives these away.
  refused "a NaN-ignoring cc1 flag is refused by its behaviour" "assumes no NaN" -- \
    env CC=clang meson setup "$work/build" "$source_root" -Dtests=false -Dcuda=disabled \
    "-Dc_args=-Xclang -menable-no-nans"
  printf '#pragma STDC FP_CONTRACT ON\n' >"$work/contract_on.h"
  refused "a header that turns contraction on is refused by its behaviour" "fused multiply-add" -- \
    env CC=clang meson setup "$work/build" "$source_root" -Dtests=false -Dcuda=disabled \
    "-Dc_args=-include $work/contract_on.h"
else
  for what in "clang's -ffp-model=fast is refused" "a NaN-ignoring cc1 flag is refused by its behaviour" \
    "a header that turns contraction on is refused by its behaviour"; do
    n=$((n + 1))
    echo "ok $n - $what # SKIP clang is not installed"
  done
fi
refused "a compiler that says __FAST_MATH__ is refused" "__FAST_MATH__" -- \
  meson setup "$work/build" "$source_root" -Dtests=false -Dcuda=disabled -Dc_args=-D__FAST_MATH__=1

# A harmless flag configures, and on every C compile line sluice's
# floating-point flags come after it, so they win over anything the user
# adds.
n=$((n + 1))
if meson setup "$work/build" "$source_root" -Dtests=false -Dcuda=disabled -Dc_args=-DSLUICE_USER_MARK \
  >"$work/setup.log" 2>&1 && python3 - "$work/build/compile_commands.json" <<'PY'
import json, sys
bad = []
for c in json.load(open(sys.argv[1])):
    if not c["file"].endswith(".c"):
        continue
    args = c["command"].split()
    mark = args.index("-DSLUICE_USER_MARK")
    if not all(flag in args[mark:] for flag in ("-ffp-contract=off", "-fno-fast-math")):
        bad.append(c["file"])
if bad:
    sys.exit("sluice's floating-point flags do not follow the user's in %d of them, e.g. %s" % (len(bad), bad[0]))
PY
then
  echo "ok $n - sluice's floating-point flags come after the user's on every compile line"
else
  failed=$((failed + 1))
  echo "not ok $n - sluice's floating-point flags come after the user's on every compile line"
  tail -3 "$work/setup.log" | sed 's/^/# /'
fi
rm -rf "$work/build"

echo "1..$n"
[ "$failed" -eq 0 ]

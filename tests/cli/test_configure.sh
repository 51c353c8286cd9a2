#!/usr/bin/env bash
# Configure refuses compiler flags that break DESIGN.md invariant 3, naming
# the flag, whether it comes from c_args or from CFLAGS. TAP output.
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

echo "1..$n"
[ "$failed" -eq 0 ]

#!/usr/bin/env bash
# sluice-device-bandwidth, the figures ci/gpu-check.sh prints for a device,
# run on the host emulation: its table has every row with a positive
# bandwidth and a fraction of the copy, and a bad argument exits 2. On a
# machine with a GPU the same program measures the device. TAP output.
set -u
program=$1
n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; shift; for line in "$@"; do echo "# $line"; done; }

out=$("$program" --emulate 2>&1)
rc=$?
if [ $rc -eq 0 ]; then ok "--emulate exits 0"; else not_ok "--emulate exits 0" "exit $rc" "$out"; fi
for row in "device-to-device copy" "normalize u8 to f32" "element-wise chain of 4 steps" \
    "page-locked host-to-device copy"; do
    line=$(printf '%s\n' "$out" | grep -F "| $row")
    gbs=$(printf '%s' "$line" | awk -F'|' '{gsub(/ /, "", $3); print $3}')
    if [ -n "$line" ] && awk -v v="$gbs" 'BEGIN { exit !(v + 0 > 0) }'; then
        ok "the table has '$row' with a positive bandwidth ($gbs GB/s)"
    else
        not_ok "the table has '$row' with a positive bandwidth" "$out"
    fi
done
# A kernel's fraction is its bandwidth over the copy's, within what the
# printed roundings allow (two decimals for the fraction, three significant
# digits for GB/s, so that a sanitized emulation's few MB/s print as such,
# not as 0.0): on a slow build a chain at 0.1 GB/s beside a 26 GB/s copy
# reads 0.00, which is right.
copy=$(printf '%s\n' "$out" | grep -F "| device-to-device copy" | awk -F'|' '{gsub(/ /, "", $3); print $3}')
for row in "normalize u8 to f32" "element-wise chain of 4 steps"; do
    gbs=$(printf '%s\n' "$out" | grep -F "| $row" | awk -F'|' '{gsub(/ /, "", $3); print $3}')
    fraction=$(printf '%s\n' "$out" | grep -F "| $row" | awk -F'|' '{gsub(/ /, "", $4); print $4}')
    if awk -v g="$gbs" -v c="$copy" -v f="$fraction" \
        'BEGIN { want = g / c; d = f - want; if (d < 0) d = -d; exit !(c > 0 && f != "" && d <= 0.005 + 0.05 / c + 0.02 * want) }'; then
        ok "'$row' is its bandwidth over the copy's ($fraction)"
    else
        not_ok "'$row' is its bandwidth over the copy's" "$out"
    fi
done
# The emulation's matrix products are the reference's ordered sums, so its
# log_mel is the reference's to the bit.
if printf '%s\n' "$out" | grep -q "^log_mel on the host-emulation device .*largest difference from the reference 0,"; then
    ok "the emulation's log_mel is the reference's bit for bit"
else
    not_ok "the emulation's log_mel is the reference's bit for bit" "$out"
fi
"$program" --frobnicate >/dev/null 2>&1
rc=$?
if [ $rc -eq 2 ]; then ok "an unknown argument exits 2"; else not_ok "an unknown argument exits 2" "exit $rc"; fi
echo "1..$n"
[ $failed -eq 0 ]

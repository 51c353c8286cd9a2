#!/bin/sh
# The real peers on the gate scenarios: every one must be ok and bitwise
# equivalent to the reference. Skips (exit 77) with the reason when a
# framework is not installed (ci/install-peers.sh installs them).
set -eu
sluice="$1"
adapters="${SLUICE_TEST_PEERS:-peer:numpy,peer:torch,peer:torch-w2,peer:grain,peer:grain-t2,peer:tfdata,peer:jax}"
out="$(mktemp -d "${TMPDIR:-/tmp}/sluice-peers-test-XXXXXX")"
trap 'rm -rf "$out"' EXIT
missing="$("$sluice" list | awk -v want=",$adapters," '$1 ~ /^peer:/ && index(want, "," $1 ",") && $4 == "no:" {print $1}')"
if [ -n "$missing" ]; then
    "$sluice" list | grep -E "^($(echo $missing | tr ' ' '|')) " >&2
    echo "SKIP: peers not available here: $missing" >&2
    exit 77
fi
"$sluice" bench --scenarios gate --adapters "$adapters" --repetitions 1 --quiet --output-dir "$out" >"$out/log" 2>&1 || {
    cat "$out/log" >&2
    exit 1
}
cat "$out/log"
n=$(cat "$out"/ci/*__peer*.json | grep -c '"outcome":[[:space:]]*"ok"' || true)
bad=$(grep -L '"equivalence":[[:space:]]*"bitwise"' "$out"/ci/*__peer*.json || true)
if [ -n "$bad" ]; then
    echo "not bitwise equivalent: $bad" >&2
    exit 1
fi
echo "$n peer records ok and bitwise"

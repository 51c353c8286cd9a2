#!/bin/sh
# The real peers on a set of scenarios: test_peers.sh SLUICE SCENARIOS ADAPTERS.
# Every peer record that runs must be ok and bitwise equivalent to the
# reference (statistically equivalent on a plan with gaussian noise); a peer may be excluded from a scenario (an op it lacks) or the
# variant skipped (DIST-2 2d needs two ranks), never failed or mismatched,
# and at least one record must run. Skips (exit 77)
# with the reason when a framework is not installed (ci/install-peers.sh
# installs them). SLUICE_TEST_PEERS overrides the adapters.
set -eu
sluice="$1"
scenarios="$2"
adapters="${SLUICE_TEST_PEERS:-$3}"
out="$(mktemp -d "${TMPDIR:-/tmp}/sluice-peers-test-XXXXXX")"
trap 'rm -rf "$out"' EXIT
missing="$("$sluice" list | awk -v want=",$adapters," '$1 ~ /^peer:/ && index(want, "," $1 ",") && $4 == "no:" {print $1}')"
if [ -n "$missing" ]; then
    "$sluice" list | grep -E "^($(echo $missing | tr ' ' '|')) " >&2
    echo "SKIP: peers not available here: $missing" >&2
    exit 77
fi
"$sluice" bench --scenarios "$scenarios" --adapters "$adapters" --repetitions 1 --quiet --output-dir "$out" \
    >"$out/log" 2>&1 || {
    cat "$out/log" >&2
    exit 1
}
cat "$out/log"
ran=$(grep -l '"outcome":[[:space:]]*"ok"' "$out"/ci/*__peer*.json || true)
other=$(grep -L -E '"outcome":[[:space:]]*"(ok|excluded|skipped)"' "$out"/ci/*__peer*.json || true)
if [ -n "$other" ]; then
    echo "peer records neither ok, excluded nor skipped: $other" >&2
    exit 1
fi
if [ -z "$ran" ]; then
    echo "no peer record ran" >&2
    exit 1
fi
# A plan whose draws are values (gaussian noise) is checked statistically
# (docs/peers.md), one with a stated tolerance (MM-2's log_mel) within it;
# every other must be bitwise.
bad=$(grep -L -E '"equivalence":[[:space:]]*"(bitwise|statistical|within [^"]*)"' $ran || true)
if [ -n "$bad" ]; then
    echo "not equivalent: $bad" >&2
    exit 1
fi
# A real peer's latencies are costs: none may be a hand-over.
handover=$(grep -l -E '"timing":[[:space:]]*"hand-over"' $ran || true)
if [ -n "$handover" ]; then
    echo "hand-over (latencies that leave its work out): $handover" >&2
    exit 1
fi
echo "$(echo "$ran" | wc -l) peer records ok and equivalent (bitwise; statistical on noise; within a stated tolerance)"

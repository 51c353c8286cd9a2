#!/usr/bin/env bash
# `sluice check` as the gate uses it, on records whose samples are set by
# hand so that every answer is known: the same run is the same, a run ten
# times slower is slower (exit 1), a row whose processes spread too much
# for its test to see 5% cannot tell and says how many processes it needs
# (exit 3), one process a side cannot tell even a doubling (exit 3, with a
# warning up front), a failed row is 'not ok' and an unavailable one left
# out, every row says the rule that decided it, --unsettled lists the rows
# found slower, and pooled runs keep their processes apart. Counts: a row
# whose instructions grew past the threshold is slower. TAP output.
set -u
sluice=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

. "$(dirname "$0")/tap.sh"

if ! "$sluice" bench --scenarios NLP-1 --adapters fused,iter,cuda --warmup 1 --batches 4 --repetitions 2 \
  --output-dir "$work/run" --quiet >/dev/null 2>&1; then
  not_ok "a run to start from"
  echo "1..$n"
  exit 1
fi

# make NAME SPREAD [one]: a copy of the run whose fused and iter records
# hold eight repetitions of 20 batches near 1000 ns, repetition r scaled by
# 1 + SPREAD * r / 7 and 1 ns longer per r (no two medians tie), each
# repetition a process of its own (eight runs pooled), or with "one" all
# in one process (one run); cuda stays as it ran (unavailable without a
# GPU).
make() {
  python3 - "$work/run/ci" "$work/$1" "$2" "${3:-}" <<'PY'
import json, os, shutil, sys
src, dst, spread, one = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4] == "one"
os.makedirs(dst, exist_ok=True)
for name in os.listdir(src):
    if not name.endswith(".json"):
        continue
    record = json.load(open(os.path.join(src, name)))
    if record["outcome"] == "ok":
        samples = [int(1000 * (1 + spread * r / 7) * (1 + ((i * 7919) % 41 - 20) / 1000)) + r
                   for r in range(8) for i in range(20)]
        record.update({"measured_batches": 20, "repetitions": 8, "repetition_kept": 0, "samples_ns": samples,
                       "latency_ns": samples[:20], "repetition_elements_per_s": [1.0] * 8})
        record.pop("repetition_process", None)
        if not one:
            record["repetition_process"] = list(range(8))
    # A quiet machine, so that only --max-load and --max-wait decide the
    # load and wait rules, whatever this machine was doing.
    record["environment"].update({"load_start": 0.5, "load_end": 0.5, "cpu_wait_fraction": 0.001})
    json.dump(record, open(os.path.join(dst, name), "w"))
PY
}
make steady 0.02
make unsteady 0.30
"$sluice" baseline save steady --from "$work/steady" --baseline-dir "$work/b" >/dev/null 2>&1
"$sluice" baseline save unsteady --from "$work/unsteady" --baseline-dir "$work/b" >/dev/null 2>&1

expect 0 "same:" "a run checked against itself is the same, exit 0" -- check --baseline steady --baseline-dir "$work/b" \
  --records "$work/steady"
expect 1 "slower: +900.0% >= 5% and p " "a run ten times slower is slower by the Holm rule, exit 1" -- check \
  --baseline steady --baseline-dir "$work/b" --records "$work/steady" --inflate 9 --unsettled "$work/unsettled"
if [ "$(sort "$work/unsettled" | tr '\n' ';')" = "NLP-1 128 fused;NLP-1 128 iter;" ]; then
  ok "--unsettled lists the slower rows, one 'scenario variant adapter' a line"
else
  not_ok "--unsettled lists the slower rows, one 'scenario variant adapter' a line" "$(cat "$work/unsettled")"
fi
expect 3 "processes a side" "processes that spread 10% cannot tell 5%, exit 3, and say how many they need" -- \
  check --baseline unsteady --baseline-dir "$work/b" --records "$work/unsteady"
out=$("$sluice" check --baseline unsteady --baseline-dir "$work/b" --records "$work/unsteady" 2>&1)
if printf '%s' "$out" | grep -q "same:"; then
  not_ok "a row that cannot tell never says same" "$(printf '%s' "$out" | grep "same:")"
else
  ok "a row that cannot tell never says same"
fi
# One run a side is one process a side: even a doubling cannot be told.
make single 0.02 one
"$sluice" baseline save single --from "$work/single" --baseline-dir "$work/b" >/dev/null 2>&1
expect 3 "cannot tell: 1 process against 1 (+100.0%)" "one process a side cannot tell a doubling, exit 3" -- check \
  --baseline single --baseline-dir "$work/b" --records "$work/single" --inflate 1
expect 3 "warning: some rows have one process a side" "one process a side is warned about up front" -- check \
  --baseline single --baseline-dir "$work/b" --records "$work/single"
# Runs pooled are processes of their own: two runs of one process each.
"$sluice" baseline save pooled2 --from "$work/single" --from "$work/single" --baseline-dir "$work/b" >/dev/null 2>&1
if python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
sys.exit(r["repetition_process"] != [0] * 8 + [1] * 8)' "$work/b/pooled2/NLP-1__128__fused.json"; then
  ok "baseline save --from A --from B numbers each run's repetitions as its own process"
else
  not_ok "baseline save --from A --from B numbers each run's repetitions as its own process"
fi
expect 3 "cannot tell: 2 processes against 1" "pooled runs count as processes in check" -- check \
  --baseline pooled2 --baseline-dir "$work/b" --records "$work/single"
expect 3 "but the load average reached" "a slowdown under too much load is inconclusive" -- check \
  --baseline steady --baseline-dir "$work/b" --records "$work/steady" --inflate 9 --max-load 0.000001
# The same run, its processes waiting for a CPU 35% of their runnable time
# (what stress-ng with a busy process per CPU makes of a benchmark, under
# a load average near the CPU count).
cp -r "$work/steady" "$work/waiting"
sed -i 's/"cpu_wait_fraction":[[:space:]]*[0-9.e-]*/"cpu_wait_fraction": 0.35/' "$work/waiting/"*.json
expect 3 "but its runs waited for a CPU 34.9 points of their time more than the base's, above 4.8" \
  "a slowdown whose runs alone waited for a CPU a third of their time is inconclusive, exit 3" -- check \
  --baseline steady --baseline-dir "$work/b" --records "$work/waiting" --inflate 9
# A base that waited as much: the wait both sides met is no reason to doubt.
"$sluice" baseline save waiting --from "$work/waiting" --baseline-dir "$work/b" >/dev/null 2>&1
expect 1 "slower: +900.0%" "a slowdown whose base waited as much is believed, exit 1" -- check \
  --baseline waiting --baseline-dir "$work/b" --records "$work/waiting" --inflate 9
expect 1 "slower: +900.0%" "--max-wait 1 believes it, exit 1" -- check --baseline steady --baseline-dir "$work/b" \
  --records "$work/waiting" --inflate 9 --max-wait 1
# A wait nobody could measure is unknown, not none.
cp -r "$work/steady" "$work/unknown-wait"
sed -i 's/"cpu_wait_fraction":[[:space:]]*[0-9.e-]*/"cpu_wait_fraction": -1/' "$work/unknown-wait/"*.json
expect 3 "how long the runs waited for a CPU is unknown" "a slowdown whose runs' CPU wait is unknown is inconclusive" \
  -- check --baseline steady --baseline-dir "$work/b" --records "$work/unknown-wait" --inflate 9
expect 2 "option --max-wait: '1.5' is not a number in" "--max-wait past 1 is refused, exit 2" -- check \
  --baseline steady --baseline-dir "$work/b" --records "$work/waiting" --max-wait 1.5
out=$("$sluice" check --baseline steady --baseline-dir "$work/b" --records "$work/steady" 2>&1)
if printf '%s' "$out" | grep -q "cuda"; then
  not_ok "an adapter that did not run here is left out" "$(printf '%s' "$out" | grep cuda)"
else
  ok "an adapter that did not run here is left out"
fi
cp -r "$work/steady" "$work/broken"
sed -i 's/"outcome":[[:space:]]*"ok"/"outcome": "failed"/' "$work/broken/NLP-1__128__iter.json"
expect 0 "not ok: failed in this run" "a row that failed is 'not ok', and does not fail the check" -- check \
  --baseline steady --baseline-dir "$work/b" --records "$work/broken"

# Counts: instructions per batch 3% up on one row, 1% on another.
printf '# scenario\tvariant\tadapter\tbatches\tinstructions\td1_misses\tll_misses\n' >"$work/base.tsv"
printf 'CV-1\t32x32\tfused\t4\t1000000\t20000\t3000\nCV-1\t32x32\titer\t4\t1000000\t20000\t3000\n' >>"$work/base.tsv"
printf 'CV-1\t32x32\tfused\t4\t1030000\t20000\t3000\nCV-1\t32x32\titer\t4\t1010000\t20000\t3000\n' >"$work/head.tsv"
expect 1 "slower: instructions per batch +3.00% > 2%" "counts 3% up are slower, exit 1" -- check \
  --counts "$work/base.tsv" "$work/head.tsv"
sed 's/1030000/1010000/' "$work/head.tsv" >"$work/head1.tsv"
expect 0 "same: instructions +1.00%" "counts 1% up are the same, exit 0" -- check --counts "$work/base.tsv" \
  "$work/head1.tsv" --max-instructions 0.02
printf 'CV-1\t32x32\tfused\tfour\n' >"$work/bad.tsv"
expect 1 "line 1" "a counts file that is not one is named with its line" -- check --counts "$work/bad.tsv" \
  "$work/head.tsv"
expect 2 "--baseline and --counts" "--baseline and --counts together are refused" -- check --baseline steady \
  --counts "$work/base.tsv" "$work/head.tsv"

# Pooling runs into a baseline: a record only the second run has cannot be
# pooled into the first's, and is left out with its name, not dropped unseen.
mkdir -p "$work/partial"
cp "$work/steady"/*.json "$work/partial/"
rm "$work/partial/NLP-1__128__iter.json"
expect 0 "NLP-1__128__iter.json: left out, since $work/partial has no run of NLP-1/128 on iter" \
  "baseline save --from A --from B names a record only B has" -- baseline save pooled --from "$work/partial" \
  --from "$work/steady" --baseline-dir "$work/b"
if [ -e "$work/b/pooled/NLP-1__128__fused.json" ] && [ ! -e "$work/b/pooled/NLP-1__128__iter.json" ]; then
  ok "the pooled baseline holds the first run's records only"
else
  not_ok "the pooled baseline holds the first run's records only" "$(ls "$work/b/pooled")"
fi

echo "1..$n"
[ "$failed" -eq 0 ]

#!/usr/bin/env bash
# One headline figure everywhere, and reports that are safe to open: a
# record made from a fixed set of samples, whose figure is worked out by
# hand, must read the same in the summary, the record, the report and the
# Google Benchmark export; a hostile record must not inject markup into
# report.md or report.html; charts carry no temporary paths. TAP output.
set -u
sluice=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

. "$(dirname "$0")/tap.sh"
check() { # check DESCRIPTION COMMAND...: ok when the command succeeds
  local what=$1
  shift
  if "$@" >/dev/null 2>&1; then ok "$what"; else not_ok "$what" "$("$@" 2>&1 | head -5)"; fi
}

# Two real records to start from: the fixed samples replace fused's
# latencies; reference keeps its own, so that ratios have a partner.
if ! "$sluice" bench --scenarios NLP-1 --adapters fused,reference --warmup 1 --batches 3 --repetitions 2 \
  --output-dir "$work/run" --quiet >/dev/null 2>&1; then
  not_ok "a run to start from"
  echo "1..$n"
  exit 1
fi

# The fixed samples: five batches of 64 elements, three repetitions.
# Sorted, the 15 batch times (ms) are 1.0 1.2 1.5 1.8 1.9 2.0 2.0 2.0 2.0
# 2.1 2.2 2.5 2.8 3.0 40.0: the median is the 8th, 2.0 ms, so the headline
# figure is 64 / 2.0 ms = 32000 elements/s ("32.0k"). For 15 samples the
# median's 95% interval is [x(4), x(12)] = [1.8, 2.5] ms: 25600 to 35556/s.
# The mean, 68 ms / 15 = 4.533 ms, gives 14118/s ("14.1k"): the 40 ms stall
# makes the row noisy. The kept repetition is the third, whose summed time
# (48 ms) would give 6667/s: a summary that divided elements by summed
# latencies would print that instead.
python3 - "$work/run/ci/NLP-1__128__fused.json" "$work/fixed" <<'EOF'
import json, os, sys
record = json.load(open(sys.argv[1]))
ms = 1000000
reps = [[1.0, 1.5, 2.0, 2.5, 3.0], [1.2, 1.8, 2.0, 2.2, 2.8], [1.9, 2.0, 2.1, 2.0, 40.0]]
record.update({
    "batch_size": 64, "measured_batches": 5, "repetitions": 3, "repetition_kept": 2, "elements": 320,
    "bytes": 320 * 512,
    "samples_ns": [int(v * ms) for rep in reps for v in rep],
    "latency_ns": [int(v * ms) for v in reps[2]],
    "repetition_elements_per_s": [1.0, 2.0, 3.0],
})
os.makedirs(sys.argv[2], exist_ok=True)
json.dump(record, open(os.path.join(sys.argv[2], "NLP-1__128__fused.json"), "w"), indent=1)
EOF
cp "$work/run/ci/NLP-1__128__reference.json" "$work/fixed/"

# The record: written again by the library (baseline save reads and
# rewrites each record), its headline fields hold the figure.
"$sluice" baseline save fixed --from "$work/fixed" --baseline-dir "$work/baselines" >/dev/null 2>&1
check "the rewritten record's elements_per_s is 32000, its interval 25600 to 35556, its mean 14118, noisy" \
  python3 - "$work/baselines/fixed/NLP-1__128__fused.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
def near(a, b): return abs(a - b) <= 1e-6 * abs(b)
assert near(r["elements_per_s"], 32000), r["elements_per_s"]
assert near(r["elements_per_s_ci_low"], 25600), r["elements_per_s_ci_low"]
assert near(r["elements_per_s_ci_high"], 320 / 5 / 1.8e-3), r["elements_per_s_ci_high"]
assert near(r["mean_elements_per_s"], 64 / (68 / 15 * 1e-3)), r["mean_elements_per_s"]
assert r["noisy"] is True and "mean" in r["noisy_reason"]
EOF

# The summary, the same figure.
summary=$("$sluice" summary "$work/fixed" 2>&1)
if printf '%s\n' "$summary" | grep -E '^NLP-1 +128 +fused ' | grep -q ' 32\.0k .* 14\.1k '; then
  ok "the summary shows 32.0k with the mean 14.1k beside it"
else
  not_ok "the summary shows 32.0k with the mean 14.1k beside it" "$(printf '%s\n' "$summary" | grep fused)"
fi

# The report, the same figure and interval.
"$sluice" report "$work/fixed" >/dev/null 2>&1
if grep -E '^\| fused \|' "$work/fixed/report.md" | grep -q '| 32.0k | 25.6k to 35.6k |'; then
  ok "the report shows 32.0k, from 25.6k to 35.6k"
else
  not_ok "the report shows 32.0k, from 25.6k to 35.6k" "$(grep -E '^\| fused' "$work/fixed/report.md")"
fi

# Google Benchmark's JSON: the median aggregate is the headline figure;
# each repetition's real_time is its own median batch time (2.0, 2.0 and
# 2.0 ms here: every repetition's middle batch is 2.0 ms), and the
# aggregates are over those.
"$sluice" summary "$work/fixed" --format gbench >"$work/gbench.json" 2>/dev/null
check "gbench: the median aggregate is 32000 items/s at 2.0 ms; each repetition is its median batch; mean, stddev, cv" \
  python3 - "$work/gbench.json" <<'EOF'
import json, sys
entries = [b for b in json.load(open(sys.argv[1]))["benchmarks"] if b["run_name"] == "NLP-1/128/fused"]
def near(a, b): return abs(a - b) <= 1e-6 * max(abs(b), 1e-9)
reps = [b for b in entries if b["run_type"] == "iteration"]
assert len(reps) == 3 and all(near(b["real_time"], 2.0e6) for b in reps), [b["real_time"] for b in reps]
agg = {b["aggregate_name"]: b for b in entries if b["run_type"] == "aggregate"}
assert set(agg) == {"mean", "median", "stddev", "cv"}, agg.keys()
assert agg["median"]["name"] == "NLP-1/128/fused_median"
assert near(agg["median"]["items_per_second"], 32000) and near(agg["median"]["real_time"], 2.0e6)
assert near(agg["stddev"]["real_time"], 0.0) and agg["cv"]["aggregate_unit"] == "percentage"
EOF
check "library_build_type is the build type the records name, not a constant" python3 - "$work/gbench.json" \
  "$work/fixed/NLP-1__128__fused.json" <<'EOF'
import json, re, sys
flags = json.load(open(sys.argv[2]))["environment"]["compile_flags"]
want = re.search(r"buildtype=(\S+)", flags).group(1)
assert json.load(open(sys.argv[1]))["context"]["library_build_type"] == want
EOF

# JUnit: a testcase's time is the run's wall time; the figure is a property.
"$sluice" summary "$work/fixed" --junit "$work/junit.xml" >/dev/null 2>&1
check "JUnit: time is wall_ns and elements_per_s is a property" python3 - "$work/junit.xml" \
  "$work/fixed/NLP-1__128__fused.json" <<'EOF'
import json, sys, xml.etree.ElementTree as ET
wall = json.load(open(sys.argv[2]))["wall_ns"] / 1e9
case = [c for c in ET.parse(sys.argv[1]).iter("testcase") if c.get("name") == "fused"][0]
assert abs(float(case.get("time")) - wall) < 2e-6, (case.get("time"), wall)
props = {p.get("name"): p.get("value") for p in case.iter("property")}
assert abs(float(props["elements_per_s"]) - 32000) < 1e-6, props
assert props["noisy"] == "true"
EOF

# A hostile record: strings that would end a Markdown cell, inject HTML or
# a link; and beside it a record with bytes that are not UTF-8.
python3 - "$work/run/ci/NLP-1__128__fused.json" "$work/hostile" <<'EOF'
import json, os, sys
record = json.load(open(sys.argv[1]))
record.update({"outcome": "failed", "adapter": "fused",
               "reason": "<script>alert(1)</script> | **x** [y](javascript:alert(2)) `z`\nnext line",
               "transforms": ["<img src=x onerror=alert(3)>"]})
os.makedirs(sys.argv[2], exist_ok=True)
open(os.path.join(sys.argv[2], "NLP-1__128__fused.json"), "w").write(json.dumps(record, indent=1))
record.update({"adapter": "iter", "reason": "next \u00e9 XBADX"})
text = json.dumps(record, indent=1)
open(os.path.join(sys.argv[2], "NLP-1__128__iter.json"), "wb").write(text.encode().replace(b"XBADX", b"\xff\xfe"))
EOF
cp "$work/run/ci/NLP-1__128__reference.json" "$work/hostile/"
"$sluice" report "$work/hostile" >/dev/null 2>"$work/hostile.err"
md="$work/hostile/report.md"
html="$work/hostile/report.html"
if grep -qE '<script|<img|[^\\]\]\(javascript' "$md"; then
  not_ok "report.md escapes HTML and Markdown in record strings" "$(grep -n 'script\|img\|javascript' "$md" | head -3)"
else
  ok "report.md escapes HTML and Markdown in record strings"
fi
row=$(grep -E '^\| fused \|' "$md")
cells=$(printf '%s' "$row" | sed 's/\\|//g' | tr -cd '|' | wc -c)
header=$(grep -E '^\| adapter \|' "$md" | head -1 | tr -cd '|' | wc -c)
if [ "$cells" -eq "$header" ]; then
  ok "a '|' or line break in a reason does not add cells to its row"
else
  not_ok "a '|' or line break in a reason does not add cells to its row" "$row"
fi
if grep -q '<script\|<img' "$html"; then
  not_ok "report.html escapes record strings" "$(grep -n 'script\|<img' "$html" | head -3)"
else
  ok "report.html escapes record strings"
fi
if python3 -c 'import sys; [open(p, encoding="utf-8").read() for p in sys.argv[1:]]' "$md" "$html" 2>/dev/null &&
  grep -q "NLP-1__128__iter.json: field 'reason' is not valid UTF-8" "$work/hostile.err" &&
  ! grep -qE '^\| iter \|' "$md"; then
  ok "a record with bytes that are not UTF-8 is named and left out; both reports are valid UTF-8"
else
  not_ok "a record with bytes that are not UTF-8 is named and left out; both reports are valid UTF-8" \
    "$(cat "$work/hostile.err")"
fi

# A device row beside CPU rows: the same statistics, and a column that says
# where each row was verified and timed and when, from the record's device
# object and its environment's time (docs/report.md).
python3 - "$work/run/ci/NLP-1__128__fused.json" "$work/device" <<'EOF'
import json, os, sys
record = json.load(open(sys.argv[1]))
record.update({"adapter": "cuda", "backend": {"requested": "cuda", "active": "cuda"},
               "device": {"name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0", "driver": "13.0",
                          "runtime": "13.0", "peak_memory_bytes": 1048576,
                          "allocated_peak_bytes": 3145728, "source": "resident", "source_setup_ns": 2000000}})
record["environment"]["time_utc"] = "2026-11-26T12:34:56Z"
os.makedirs(sys.argv[2], exist_ok=True)
json.dump(record, open(os.path.join(sys.argv[2], "NLP-1__128__cuda.json"), "w"), indent=1)
EOF
cp "$work/run/ci/NLP-1__128__reference.json" "$work/device/"
"$sluice" report "$work/device" >/dev/null 2>&1
cuda_row=$(grep -E '^\| cuda \|' "$work/device/report.md")
cpu_model=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["environment"]["cpu_model"])' \
  "$work/device/NLP-1__128__reference.json")
if printf '%s' "$cuda_row" | grep -qF 'cuda: NVIDIA H100 80GB HBM3 (compute 9.0, driver 13.0, runtime 13.0); 2026-11-26T12:34:56Z' &&
  printf '%s' "$cuda_row" | grep -qE '\| [0-9.]+[kMG]? \| [0-9.]+[kMG]? to [0-9.]+[kMG]? \|' &&
  grep -E '^\| reference \|' "$work/device/report.md" | grep -qF "cpu: $cpu_model"; then
  ok "a device row shows its rate and interval, and names its device and when; a CPU row names its CPU"
else
  not_ok "a device row shows its rate and interval, and names its device and when; a CPU row names its CPU" \
    "$cuda_row"
fi

# The device row's own runs, beside its peak RSS: its allocations' device
# memory at their peak (3 MiB above) and the source's path with its setup
# time (2 ms), in the report and in the summary.
device_runs='device memory 3.0 MiB at peak; source resident, placed in 2.0 ms'
summary_out=$("$sluice" summary "$work/device" 2>&1)
if grep -qF "$device_runs" "$work/device/report.md" && printf '%s' "$summary_out" | grep -qF "$device_runs"; then
  ok "a device row's report and summary say its device memory at peak and where its source was"
else
  not_ok "a device row's report and summary say its device memory at peak and where its source was" \
    "$(grep -F 'device memory' "$work/device/report.md")" "$(printf '%s' "$summary_out" | grep -F 'device memory')"
fi

# The page reads on a phone: a viewport, tables that scroll sideways.
html="$work/fixed/report.html"
if grep -q '<meta name="viewport"' "$html" && grep -q 'class="scroll"' "$html"; then
  ok "the page has a viewport and scrollable tables"
else
  not_ok "the page has a viewport and scrollable tables"
fi
if grep -q '^## Winners' "$work/fixed/report.md" && grep -q '| NLP-1 / 128 |' "$work/fixed/report.md"; then
  ok "the report opens with the winners table"
else
  not_ok "the report opens with the winners table"
fi
# --step-ms prints the p99 it judged.
"$sluice" report "$work/fixed" --step-ms 5 >/dev/null 2>&1
if grep -E '^\| fused \|' "$work/fixed/report.md" | grep -qE '(keeps up|STALLS the step) \(p99 [0-9.]+ ms, [0-9.]+x margin\)'; then
  ok "--step-ms prints the p99 beside its verdict"
else
  not_ok "--step-ms prints the p99 beside its verdict" "$(grep -E '^\| fused' "$work/fixed/report.md")"
fi

# Charts, when gnuplot is here: the rates and the batch times of the one
# variant (no overview: its fastest is the reference), and nothing of the
# temporary folder it was drawn in (gnuplot's <title>s once carried it).
if command -v gnuplot >/dev/null 2>&1; then
  svgs=$(grep -c '<svg' "$html")
  if [ "$svgs" -ge 2 ] && ! grep -q 'chart\.dat\|chart\.gp\|sluice-report-' "$html" &&
    [ "$(grep -c '<title>' "$html")" -eq 1 ]; then
    ok "with gnuplot the page has its charts, and no temporary path or tooltip title in them"
  else
    not_ok "with gnuplot the page has its charts, and no temporary path or tooltip title in them" "$svgs charts" \
      "$(grep -o 'chart\.[a-z]*\|sluice-report-[^/]*\|<title>[^<]*' "$html" | head -3)"
  fi
else
  n=$((n + 1))
  echo "ok $n - charts # SKIP gnuplot is not installed"
fi

# A run whose threads waited for a CPU a third of their runnable time, as
# beside a load generator with a busy process per CPU, under a load average
# no higher than the CPU count: the summary and the report say it was too
# busy to rank, naming the wait (the load alone would not have told).
# The same runs on a quiet machine are the control.
for wait in 0.35 0.001; do
  cp -r "$work/fixed" "$work/wait-$wait"
  python3 - "$work/wait-$wait" "$wait" <<'EOF2'
import json, os, sys
for name in os.listdir(sys.argv[1]):
    if name.endswith(".json") and "__" in name:
        path = os.path.join(sys.argv[1], name)
        record = json.load(open(path))
        record["environment"].update({"load_start": 1.0, "load_end": 1.0, "steal_fraction": 0.0,
                                      "cpu_cores": 2, "cpu_wait_fraction": float(sys.argv[2])})
        json.dump(record, open(path, "w"))
EOF2
done
"$sluice" report "$work/wait-0.35" >/dev/null 2>&1
if "$sluice" summary "$work/wait-0.35" 2>&1 | grep -q "too busy to rank .*waiting for a CPU up to 35%" &&
  grep -q "too busy to rank .*waiting for a CPU up to 35%" "$work/wait-0.35/report.md"; then
  ok "runs that waited for a CPU 35% of their time are too busy to rank, in the summary and the report"
else
  not_ok "runs that waited for a CPU 35% of their time are too busy to rank, in the summary and the report" \
    "$("$sluice" summary "$work/wait-0.35" 2>&1 | grep -i busy)"
fi
if "$sluice" summary "$work/wait-0.001" 2>&1 | grep -q "too busy"; then
  not_ok "the same runs without the wait are not called too busy"
else
  ok "the same runs without the wait are not called too busy"
fi

# The winners compare sluice with the peers: a peer's record beside fused
# and reference (the reference's own record, renamed a per-batch bitwise
# peer) puts sluice's fastest adapter over the best peer in the winners
# row, both named, whichever row is the runner-up.
mkdir -p "$work/peers"
cp "$work/run/ci/NLP-1__128__fused.json" "$work/run/ci/NLP-1__128__reference.json" "$work/peers/"
python3 - "$work/run/ci/NLP-1__128__reference.json" "$work/peers/NLP-1__128__peer:fake.json" <<'EOF'
import json, sys
record = json.load(open(sys.argv[1]))
record.update(adapter="peer:fake", framework="fake 1.0", timing="per-batch", equivalence="bitwise")
json.dump(record, open(sys.argv[2], "w"), indent=1)
EOF
"$sluice" report "$work/peers" >/dev/null 2>&1
winners_row=$(grep -E '^\| NLP-1 / 128 \|' "$work/peers/report.md" | head -1)
if printf '%s' "$winners_row" | grep -qE '\| (fused|reference): \(?[0-9.]+x\)? .* over peer:fake \|$'; then
  ok "the winners row puts sluice's fastest adapter over the best peer"
else
  not_ok "the winners row puts sluice's fastest adapter over the best peer" "$winners_row"
fi
# Without a peer, that cell is "-".
if grep -E '^\| NLP-1 / 128 \|' "$work/fixed/report.md" | head -1 | grep -qE '\| - \|$'; then
  ok "a winners row without a peer says so with -"
else
  not_ok "a winners row without a peer says so with -" "$(grep -E '^\| NLP-1 / 128 \|' "$work/fixed/report.md")"
fi

# At 800 px (issue 30): no table needs more width than the page. A table
# of wrapping cells fits when it has few enough columns: the variant
# table drops what no row fills and moves shared columns and notes under
# it; the cells wrap at spaces (ci/report-screenshots.sh measures the same
# page in a browser).
html="$work/fixed/report.html"
"$sluice" report "$work/fixed" >/dev/null 2>&1
widest=$(python3 - "$html" <<'EOF2'
import re, sys
page = open(sys.argv[1], encoding="utf-8").read()
print(max(table.count("<th>") for table in re.findall(r"<table>.*?</table>", page, re.S)))
EOF2
)
if [ "$widest" -le 9 ] && grep -q 'th,td{[^}]*white-space:normal' "$html" && ! grep -q 'white-space:nowrap' "$html"; then
  ok "every table has at most 9 columns and its cells wrap"
else
  not_ok "every table has at most 9 columns and its cells wrap" "widest table: $widest columns"
fi
if grep -q '<li>fused: noisy: ' "$html" && ! grep -q '<td>noisy: ' "$html" &&
  grep -q '<li>verified: bitwise, every row.</li>' "$html" && ! grep -q '<th>vs best peer</th>' "$html"; then
  ok "notes and the shared verified column are lines under the table; an empty column is dropped"
else
  not_ok "notes and the shared verified column are lines under the table" "$(grep -o '<li>[^<]*' "$html" | head -3)"
fi
for term in '(1.23x)' 'cannot tell' 'too busy to rank'; do
  if grep -qF "<dt>$term</dt>" "$html" && grep -qF -- "- **$term**: " "$work/fixed/report.md"; then
    ok "the legend explains \"$term\" in both documents"
  else
    not_ok "the legend explains \"$term\" in both documents"
  fi
done

# One colour per adapter, whatever its rank: in a second set fused is made
# the fastest (its batches 1000 times shorter); its swatch keeps its colour.
python3 - "$work/fixed/NLP-1__128__fused.json" "$work/fast" <<'EOF2'
import json, os, sys
record = json.load(open(sys.argv[1]))
record["samples_ns"] = [max(1, v // 1000) for v in record["samples_ns"]]
record["latency_ns"] = [max(1, v // 1000) for v in record["latency_ns"]]
os.makedirs(sys.argv[2], exist_ok=True)
json.dump(record, open(os.path.join(sys.argv[2], "NLP-1__128__fused.json"), "w"), indent=1)
EOF2
cp "$work/fixed/NLP-1__128__reference.json" "$work/fast/"
"$sluice" report "$work/fast" >/dev/null 2>&1
swatch() { grep -o "background:#[0-9a-f]*\"></span>$2<" "$1" | head -1 | cut -d'"' -f1; }
rank() { grep -E '^\| ' "$1" | grep -nE "^\| $2 \|" | head -1 | cut -d: -f1; }
slow_fused=$(swatch "$work/fixed/report.html" fused) fast_fused=$(swatch "$work/fast/report.html" fused)
slow_ref=$(swatch "$work/fixed/report.html" reference) fast_ref=$(swatch "$work/fast/report.html" reference)
if [ "$(rank "$work/fixed/report.md" fused)" != "$(rank "$work/fast/report.md" fused)" ] && [ -n "$slow_fused" ] &&
  [ "$slow_fused" = "$fast_fused" ] && [ "$slow_ref" = "$fast_ref" ] && [ "$slow_fused" != "$slow_ref" ]; then
  ok "an adapter keeps its colour when its rank changes ($slow_fused fused, $slow_ref reference)"
else
  not_ok "an adapter keeps its colour when its rank changes" "fused $slow_fused / $fast_fused" \
    "reference $slow_ref / $fast_ref"
fi

# Records of two commits: the warning comes before the Winners it
# contradicts.
mkdir -p "$work/mixed"
cp "$work/fixed/"*.json "$work/mixed/"
sed -i -E 's/("git_commit":[[:space:]]*")[^"]*"/\1abcdef0123456789abcdef0123456789abcdef01"/' \
  "$work/mixed/NLP-1__128__reference.json"
"$sluice" report "$work/mixed" >/dev/null 2>&1
warn=$(grep -n 'different machines or commits' "$work/mixed/report.html" | head -1 | cut -d: -f1)
winners=$(grep -n '<h2>Winners</h2>' "$work/mixed/report.html" | cut -d: -f1)
if [ -n "$warn" ] && [ -n "$winners" ] && [ "$warn" -lt "$winners" ]; then
  ok "the mixed-commit warning is above the Winners"
else
  not_ok "the mixed-commit warning is above the Winners" "warning at line ${warn:-none}, Winners at ${winners:-none}"
fi

echo "1..$n"
[ "$failed" -eq 0 ]

#!/usr/bin/env bash
# How much a CPU wait moves the gate rows' medians: processes of the gate
# set (fused, 3 repetitions each) alternate between the machine as it is and
# the machine beside `stress-ng --cpu N` (N = the CPUs), and each row prints
# the two conditions' medians of the processes' median batch times, their
# ratio, each condition's median CPU wait share, the correlation within
# conditions of a process's log median with its wait, and the as-is spread
# between processes. docs/gate.md, "The CPU wait, re-examined", has the
# figures that set the gate's wait rule. A person runs it; about 10 s a
# round on a 2-vCPU machine.
#
#   ci/gate-wait.sh BUILD_DIR OUT_DIR [ROUNDS]   (default 12 rounds)
set -euo pipefail
if [ $# -lt 2 ] || [ $# -gt 3 ]; then
  echo "usage: ci/gate-wait.sh BUILD_DIR OUT_DIR [ROUNDS]" >&2
  exit 2
fi
build=$1 out=$2 rounds=${3:-12}
sluice=$build/tools/sluice
[ -x "$sluice" ] || { echo "gate-wait: no sluice at $sluice (build it first)" >&2; exit 2; }
command -v stress-ng >/dev/null || { echo "gate-wait: needs stress-ng (apt-get install stress-ng)" >&2; exit 2; }
mkdir -p "$out"
echo "gate-wait: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs, load before: $(cat /proc/loadavg)"
bench() {
  "$sluice" bench --scenarios gate --adapters fused --repetitions 3 --no-probes --output-dir "$1" >/dev/null 2>&1
}
for ((r = 0; r < rounds; r++)); do
  bench "$out/asis$r"
  stress-ng --cpu "$(nproc)" --cpu-method matrixprod --timeout 300 >/dev/null 2>&1 &
  stress=$!
  sleep 1
  bench "$out/stress$r"
  kill "$stress"
  wait "$stress" 2>/dev/null || true
  echo "gate-wait: round $((r + 1)) of $rounds, load $(cut -d' ' -f1-3 /proc/loadavg)"
done
python3 - "$out" <<'PY'
import glob, json, math, statistics, sys

out = sys.argv[1]
rows = {}
for cond in ("asis", "stress"):
    for f in glob.glob("%s/%s[0-9]*/ci/*__fused.json" % (out, cond)):
        r = json.load(open(f))
        if r["outcome"] == "ok":
            key = r["scenario"] + "/" + r["variant"]
            rows.setdefault(key, {}).setdefault(cond, []).append((r["p50_ns"], r["environment"]["cpu_wait_fraction"]))
print("%-14s %5s %10s %10s %6s %7s %7s %6s %7s" % ("row", "n", "as-is µs", "stress µs", "ratio", "wait", "wait", "corr", "spread"))
for key, c in sorted(rows.items()):
    a, s = c.get("asis", []), c.get("stress", [])
    if len(a) < 3 or len(s) < 3:
        continue
    ma, ms = statistics.median(x for x, _ in a), statistics.median(x for x, _ in s)
    def wait(side):
        known = [w for _, w in side if w >= 0]
        return statistics.median(known) if known else float("nan")
    pts = [(math.log(x / ma), w) for x, w in a if w >= 0] + [(math.log(x / ms), w) for x, w in s if w >= 0]
    try:
        corr = statistics.correlation([p for p, _ in pts], [w for _, w in pts])
    except statistics.StatisticsError:
        corr = float("nan")
    spread = (max(x for x, _ in a) - min(x for x, _ in a)) / ma
    print("%-14s %2d/%-2d %10.1f %10.1f %6.3f %7.3f %7.3f %6.2f %6.0f%%"
          % (key, len(a), len(s), ma / 1e3, ms / 1e3, ms / ma, wait(a), wait(s), corr, 100 * spread))
PY

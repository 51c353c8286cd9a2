#!/usr/bin/env bash
# The between-process spread of every gate row (docs/gate.md, "What N
# processes detect"): ci/gate-spread.sh [PROCESSES]
#
# Runs the gate set PROCESSES times (default 6) as ci/gate.sh measures it
# (cpu-avx2 kernels, one fused thread, GATE_REPETITIONS repetitions, each
# run a process of its own), alternately with the address-space layout
# fixed (setarch -R, what ci/gate.sh does) and randomized as usual, and
# prints per row and per layout: the spread of the repetitions inside a
# process, the spread between processes (the standard deviation of the log
# process figures, as a fraction) and the smallest change 8 processes a
# side detect at one-sided 0.01/24 with 80% power. SLUICE names the sluice
# program (default build/tools/sluice); the results go to GATE_DIR
# (default build-gate-spread). Prints the load average before and after:
# on a shared machine, say it beside the figures.
set -euo pipefail
cd "$(dirname "$0")/.."
processes=${1:-6}
sluice=${SLUICE:-build/tools/sluice}
dir=${GATE_DIR:-build-gate-spread}
repetitions=${GATE_REPETITIONS:-2}
rm -rf "$dir"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
fixed=(setarch "$(uname -m)" -R)
if ! "${fixed[@]}" true 2>/dev/null; then
  echo "ci/gate-spread.sh: setarch -R is refused here; both layouts are randomized" >&2
  fixed=()
fi
for p in $(seq 1 "$processes"); do
  for layout in fixed random; do
    run=()
    [ "$layout" = fixed ] && run=("${fixed[@]}")
    "${run[@]}" "$sluice" bench --scenarios gate --kernels cpu-avx2 --threads 1 --repetitions "$repetitions" \
      --no-probes --quiet --output-dir "$dir/$layout/p$p" >/dev/null
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$dir" "$processes" <<'PY'
import glob, json, math, os, statistics, sys

# The smallest change 8 processes a side detect at one-sided 0.01/24 with
# 80% power: (t(1 - 0.01/24, 14) + t(0.8, 14)) x sd x sqrt(2/8), the same
# as sl_gate_detectable; the two quantiles are 4.234 and 0.868.
REACH = (4.2342 + 0.8681) * math.sqrt(2 / 8)
root, processes = sys.argv[1], int(sys.argv[2])
rows = {}
for layout in ("fixed", "random"):
    for p in range(1, processes + 1):
        for path in glob.glob(os.path.join(root, layout, "p%d" % p, "ci", "*.json")):
            r = json.load(open(path))
            if r.get("outcome") != "ok" or not r.get("samples_ns"):
                continue
            per = r["measured_batches"]
            s = r["samples_ns"]
            medians = [statistics.median(s[i:i + per]) for i in range(0, len(s), per)]
            key = (r["scenario"], r["variant"], r["adapter"])
            rows.setdefault(key, {}).setdefault(layout, []).append(medians)
print("%-6s %-8s %-12s %8s | %10s %10s %10s | %10s %10s %10s" % (
    "row", "variant", "adapter", "p50 µs", "fixed: in", "between", "detects", "random: in", "between", "detects"))
for key in sorted(rows):
    cells = []
    p50 = None
    for layout in ("fixed", "random"):
        procs = rows[key].get(layout, [])
        if len(procs) < 2:
            cells += ["-", "-", "-"]
            continue
        figures = [statistics.median(m) for m in procs]
        p50 = p50 or statistics.median(figures) / 1e3
        inside = statistics.median(
            [statistics.stdev([math.log(x) for x in m]) if len(m) > 1 else 0.0 for m in procs])
        between = statistics.stdev([math.log(f) for f in figures])
        cells += ["%.1f%%" % (100 * math.expm1(inside)), "%.1f%%" % (100 * math.expm1(between)),
                  "%.0f%%" % (100 * math.expm1(REACH * between))]
    print("%-6s %-8s %-12s %8.1f | %10s %10s %10s | %10s %10s %10s" % (key + (p50 or 0.0,) + tuple(cells)))
PY

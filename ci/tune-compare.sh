#!/usr/bin/env bash
# The tuned kernels against the flag-chosen table, measured: ci/tune-compare.sh
#
# Tunes the kernels afresh (sluice tune, into a cache of this script's own,
# printing every table's time per kernel and the choice, and how long the
# tuner took), then runs `fused` on one thread on the gate scenarios with
# the table the CPU's features choose (the default before the tuner) and
# with --kernels auto, alternately (A B A B ...) so that drift of the
# machine falls on both sides alike, and prints per scenario variant each
# side's p50 (the pooled median batch time over every repetition of every
# round), elements/s, fraction of roofline and of the hardware bound, and
# the per-round ratios of the two p50s. The machine's load is printed
# before and after: a shared machine's figures are only as good as its
# quiet.
# Environment: ROUNDS (default 5), REPETITIONS (default 5), SCENARIOS
# (default gate), BUILD_DIR (default build), OUT (default build/tune-compare).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-5}
repetitions=${REPETITIONS:-5}
scenarios=${SCENARIOS:-gate}
build_dir=${BUILD_DIR:-build}
out=${OUT:-$build_dir/tune-compare}
sluice=$build_dir/tools/sluice
rm -rf "$out"
mkdir -p "$out"
export XDG_CACHE_HOME="$out/cache"

echo "== machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== sluice tune"
"$sluice" tune --cases
default=$(python3 -c 'import glob, json, sys; print(json.load(open(glob.glob(sys.argv[1] + "/sluice/kernels-*.json")[0]))["default"])' "$XDG_CACHE_HOME")

for r in $(seq 1 "$rounds"); do
  echo "== round $r of $rounds: $default, then auto (load $(cut -d' ' -f1-3 /proc/loadavg))"
  for side in "$default" auto; do
    "$sluice" bench --scenarios "$scenarios" --adapters fused --threads 1 --kernels "$side" \
      --repetitions "$repetitions" --quiet --output-dir "$out/$side-$r" >/dev/null
  done
done
echo "== load after: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$out" "$default" "$rounds" <<'EOF'
import glob, json, os, statistics, sys
out, default, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])

def records(side):
    by_run = {}
    for r in range(1, rounds + 1):
        for path in glob.glob(f"{out}/{side}-{r}/ci/*__fused.json"):
            rec = json.load(open(path))
            if rec["outcome"] != "ok":
                continue
            key = (rec["scenario"], rec["variant"])
            by_run.setdefault(key, []).append(rec)
    return by_run

def metric(rec, name):
    return next((m["value"] for m in rec["metrics"] if m["name"] == name), float("nan"))

a, b = records(default), records("auto")
print(f"\nfused, 1 thread, {rounds} alternating rounds; p50 pooled over every repetition's batches, median over rounds")
print(f"{'scenario':<8} {'variant':<8} {default + ' p50 us':>16} {'auto p50 us':>12} {default + ' elem/s':>17} "
      f"{'auto elem/s':>12} {'ratio (min-max)':>22} {'of roofline':>17} {'of hw bound':>17}")
for key in sorted(a):
    if key not in b:
        continue
    pa = [rec["median_all_ns"] for rec in a[key]]
    pb = [rec["median_all_ns"] for rec in b[key]]
    ea = statistics.median(rec["elements_per_s"] for rec in a[key])
    eb = statistics.median(rec["elements_per_s"] for rec in b[key])
    ratios = [x / y for x, y in zip(pa, pb)]
    roof = (statistics.median(metric(rec, "fraction_of_roofline") for rec in a[key]),
            statistics.median(metric(rec, "fraction_of_roofline") for rec in b[key]))
    bound = (statistics.median(metric(rec, "fraction_of_hardware_bound") for rec in a[key]),
             statistics.median(metric(rec, "fraction_of_hardware_bound") for rec in b[key]))
    print(f"{key[0]:<8} {key[1]:<8} {statistics.median(pa) / 1e3:>16.1f} {statistics.median(pb) / 1e3:>12.1f} "
          f"{ea:>17.3g} {eb:>12.3g} {statistics.median(ratios):>8.2f} ({min(ratios):.2f}-{max(ratios):.2f}) "
          f"{roof[0]:>8.2f}/{roof[1]:<8.2f} {bound[0]:>8.2f}/{bound[1]:<8.2f}")
print(f"\nratio: {default}'s p50 over auto's, per round (above 1: the tuned table is faster); "
      f"'of roofline' and 'of hw bound': {default}/auto")
EOF

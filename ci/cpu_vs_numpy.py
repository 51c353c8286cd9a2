"""The tables of ci/cpu-vs-numpy.sh: per scenario, each column's median
batch time pooled over the rounds (the median of the rounds' medians), its
fraction of the hardware bound, the load and CPU wait its records saw, and
the per-round ratios with their range. Standard library only.

    python3 ci/cpu_vs_numpy.py OUT_DIR ROUNDS
"""

import glob
import json
import os
import re
import statistics
import sys


def metric(record, name):
    for m in record.get("metrics", []):
        if m["name"] == name:
            return m["value"]
    return None


def load(out, rounds):
    """{(scenario, column): {round: record}} for every fused record."""
    runs = {}
    for r in range(1, rounds + 1):
        for path in glob.glob(os.path.join(out, "round%d-*" % r, "full", "*__fused.json")):
            column = os.path.basename(os.path.dirname(os.path.dirname(path))).split("-", 1)[1]
            with open(path) as f:
                record = json.load(f)
            if record["outcome"] == "ok":
                runs.setdefault((record["scenario"], column), {})[r] = record
    return runs


def expert(out):
    """{round: µs} of the three-line numpy on PC-1, and its loads."""
    times, loads = {}, []
    path = os.path.join(out, "expert.txt")
    if os.path.exists(path):
        for line in open(path):
            m = re.match(r"round (\d+) PC-1 expert-numpy ([\d.]+) load ([\d.]+)", line)
            if m:
                times[int(m.group(1))] = float(m.group(2))
                loads.append(float(m.group(3)))
    return times, loads


def ratio_cell(ratios):
    if not ratios:
        return "-"
    return "%.2fx [%.2f-%.2f]" % (statistics.median(ratios), min(ratios), max(ratios))


def probe_us(recs, name):
    """The median of one probe over the rounds, in µs, or "-" where no
    record carries it (records older than the traffic probe)."""
    values = [metric(r, name + "_probe_ns_per_batch") for r in recs.values()]
    values = [v / 1e3 for v in values if v is not None]
    return "%.1f" % statistics.median(values) if values else "-"


def main():
    out, rounds = sys.argv[1], int(sys.argv[2])
    runs = load(out, rounds)
    numpy_us, numpy_loads = expert(out)
    scenarios = sorted({s for s, _ in runs})
    print(
        "| scenario | column | fused p50 (µs) | of hw bound | gather probe (µs) | write probe (µs) "
        "| traffic probe (µs) | huge-page MiB | load | CPU wait |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---|---|")
    for s in scenarios:
        for column in ("huge", "plain", "base"):
            recs = runs.get((s, column), {})
            if not recs:
                continue
            p50 = statistics.median(r["median_all_ns"] / 1e3 for r in recs.values())
            bound = [metric(r, "fraction_of_hardware_bound") for r in recs.values()]
            bound = [b for b in bound if b is not None]
            probes = [probe_us(recs, name) for name in ("gather", "write", "traffic")]
            huge = [r["environment"].get("anon_huge_bytes", -1) for r in recs.values()]
            loads = [max(r["environment"]["load_start"], r["environment"]["load_end"]) for r in recs.values()]
            waits = [r["environment"].get("cpu_wait_fraction", -1) for r in recs.values()]
            print(
                "| %s | %s | %.1f | %s | %s | %s | %s | %s | %.1f-%.1f | %.2f-%.2f |"
                % (
                    s,
                    column,
                    p50,
                    "%.2f [%.2f-%.2f]" % (statistics.median(bound), min(bound), max(bound)) if bound else "-",
                    *probes,
                    "%.0f" % (max(huge) / 2**20) if huge and max(huge) >= 0 else "-",
                    min(loads),
                    max(loads),
                    min(waits),
                    max(waits),
                )
            )
    print()
    print("Per-round ratios, median [range] over the rounds:")
    print()
    print("| scenario | huge pages over none | new over base | expert numpy over fused |")
    print("|---|---|---|---|")
    for s in scenarios:
        huge, plain, base = (runs.get((s, c), {}) for c in ("huge", "plain", "base"))
        pages = [plain[r]["median_all_ns"] / huge[r]["median_all_ns"] for r in huge if r in plain]
        versus = [base[r]["median_all_ns"] / huge[r]["median_all_ns"] for r in huge if r in base]
        numpy = [numpy_us[r] * 1e3 / huge[r]["median_all_ns"] for r in huge if r in numpy_us] if s == "PC-1" else []
        print("| %s | %s | %s | %s |" % (s, ratio_cell(pages), ratio_cell(versus), ratio_cell(numpy)))
    if numpy_us:
        print()
        print(
            "Expert numpy on PC-1 (µs per batch, by round): %s; load %s"
            % (", ".join("%.1f" % numpy_us[r] for r in sorted(numpy_us)), ", ".join("%.1f" % x for x in numpy_loads))
        )


if __name__ == "__main__":
    main()

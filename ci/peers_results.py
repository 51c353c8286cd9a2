"""The tables of docs/peers.md's results from ci/peers-results.sh's records:
per scenario, each adapter's median batch time pooled over the rounds, its
framework and timing, and per-round ratios (the ratio of medians within a
round, so the machine's drift between rounds cancels) with their median and
range over the rounds. Medians of per-batch times and per-round ratios, as
issue 20's "one honest number" allows until it lands. Last, every record's
load average at its start and its CPU wait (the share of its threads'
runnable time spent waiting for a CPU; -1 where its run was too short to
read), so that a reader can tell which figures a busy machine made."""

import glob
import json
import os
import statistics
import sys

out, rounds = sys.argv[1], int(sys.argv[2])


def load(pattern):
    records = {}
    for path in glob.glob(pattern):
        with open(path) as f:
            r = json.load(f)
        records[(r["scenario"], r["variant"], r["adapter"])] = r
    return records


def median_ns(r):
    if r.get("outcome") != "ok":
        return None
    return statistics.median(r["latency_ns"]) if r.get("latency_ns") else None


def metric(r, name):
    for m in r.get("metrics", []):
        if m["name"] == name:
            return m["value"]
    return None


per_round = []
for k in range(1, rounds + 1):
    recs = load(os.path.join(out, "round%d-t1" % k, "*", "*.json"))
    for key, r in load(os.path.join(out, "round%d-auto" % k, "*", "*.json")).items():
        recs[(key[0], key[1], "fused --threads auto")] = r
    per_round.append(recs)

variants = sorted({(s, v) for recs in per_round for (s, v, a) in recs})
print(
    "Medians of per-batch times (µs) pooled over %d rounds; ratios are per round (peer's median over "
    "fused's in the same round), shown as median [min, max] over the rounds.\n" % rounds
)
for s, v in variants:
    adapters = sorted({a for recs in per_round for (s2, v2, a) in recs if (s2, v2) == (s, v)})
    print("### %s %s\n" % (s, v))
    print("| adapter | framework | timing | verified | median (µs) | fused t1 faster by | note |")
    print("|---|---|---|---|---|---|---|")
    best = None
    rows = []
    for a in adapters:
        recs = [rr.get((s, v, a)) for rr in per_round]
        recs = [r for r in recs if r]
        if not recs:
            continue
        r0 = recs[-1]
        pooled = [x for r in recs if r.get("outcome") == "ok" for x in r.get("latency_ns", [])]
        med = statistics.median(pooled) / 1e3 if pooled else None
        ratios = []
        for rr in per_round:
            f, p = rr.get((s, v, "fused")), rr.get((s, v, a))
            if f and p and median_ns(f) and median_ns(p):
                ratios.append(median_ns(p) / median_ns(f))
        ratio = "%.2fx [%.2f, %.2f]" % (statistics.median(ratios), min(ratios), max(ratios)) if ratios else "-"
        timing = r0.get("timing", "")
        note = r0.get("note", "") or r0.get("reason", "")
        if timing == "throughput":
            thr = metric(r0, "peer_throughput_elements_per_s")
            first = metric(r0, "peer_first_batch_ns")
            note = "throughput %.4g elements/s over all batches, first batch %.3g ms" % (thr or 0, (first or 0) / 1e6)
        if timing == "prefetching":
            dig = metric(r0, "peer_p50_with_digest_ns")
            if dig:
                note = ("with a digest between batches: %.1f µs; " % (dig / 1e3)) + note
        rows.append((a, r0.get("framework", ""), timing, r0.get("equivalence", ""), med, ratio, note[:160]))
        if (
            a.startswith("peer:")
            and r0.get("outcome") == "ok"
            and timing in ("per-batch", "prefetching")
            and r0.get("equivalence") in ("bitwise", "statistical")
            and ratios
        ):
            m = statistics.median(ratios)
            if best is None or m < best[1]:
                best = (a, m, min(ratios), max(ratios), ", ".join("%.2fx" % x for x in ratios))
    for row in rows:
        print(
            "| %s | %s | %s | %s | %s | %s | %s |"
            % (row[0], row[1], row[2], row[3], "%.1f" % row[4] if row[4] else "-", row[5], row[6])
        )
    if best:
        print(
            "\nfastest equivalent per-batch peer: %s; fused (1 thread) is %.2fx faster [%.2f, %.2f] "
            "(rounds 1 to %d: %s)\n" % (best[:4] + (rounds, best[4]))
        )
    else:
        print()

print("## Each record: its load and CPU wait\n")
print("| round | scenario | adapter | p50 (µs) | load at start | cpu_wait_fraction |")
print("|---|---|---|---:|---:|---:|")
waits = []
for k, recs in enumerate(per_round, 1):
    for (s, v, a), r in sorted(recs.items()):
        env = r.get("environment", {})
        med = median_ns(r)
        wait = env.get("cpu_wait_fraction")
        if isinstance(wait, (int, float)) and wait >= 0:
            waits.append(wait)
        print(
            "| %d | %s %s | %s | %s | %s | %s |"
            % (
                k,
                s,
                v,
                a,
                "%.1f" % (med / 1e3) if med else "-",
                env.get("load_start", "-"),
                "%.2f" % wait if isinstance(wait, (int, float)) else "-",
            )
        )
if waits:
    print(
        "\nCPU wait over the %d records that could read it: median %.2f, range %.2f to %.2f."
        % (len(waits), statistics.median(waits), min(waits), max(waits))
    )

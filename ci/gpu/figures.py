#!/usr/bin/env python3
"""The device check's derived figures, from the records it wrote.

Usage: figures.py RECORDS_DIR

RECORDS_DIR holds devices/ (the gate set on reference, fused, cuda and
cuda-graph) and threads-K/ (fused alone at K threads). Prints Markdown:
per gate scenario the device adapters' median batch time against fused's,
what a graph saves per batch, and the output bytes each adapter delivers per
second; then fused's median batch time at every thread count with its
speedup over one thread; then each device record's own runs (the path its
source took, the time placing it took, its allocations' device memory at
their peak beside the process's peak RSS); then issue 34's targets, each met
or not. Only the records' own fields are read (p50_ns, bytes,
measured_batches, peak_rss_bytes, device), so the figures are the records'
figures.
"""

import glob
import json
import os
import sys


def load(folder):
    rows = {}
    for path in glob.glob(os.path.join(folder, "**", "*.json"), recursive=True):
        try:
            with open(path) as f:
                r = json.load(f)
        except (OSError, ValueError) as e:
            print(f"figures: skipping {path}: {e}", file=sys.stderr)
            continue
        if not isinstance(r, dict) or "scenario" not in r:
            continue
        rows[(r["scenario"], r["variant"], r["adapter"])] = r
    return rows


def p50_us(r):
    return r["p50_ns"] / 1e3 if r and r.get("outcome") == "ok" and r.get("p50_ns", 0) > 0 else None


def fmt(v, spec=".1f"):
    return "-" if v is None else format(v, spec)


def device_table(rows):
    keys = sorted({(s, v) for (s, v, _) in rows})
    print(
        "| scenario | fused p50 µs (1 thread) | cuda p50 µs | cuda-graph p50 µs | fused ÷ cuda | fused ÷ cuda-graph "
        "| graph saves per batch µs | cuda-graph output GB/s |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for s, v in keys:
        fused = p50_us(rows.get((s, v, "fused")))
        cuda = p50_us(rows.get((s, v, "cuda")))
        graph = p50_us(rows.get((s, v, "cuda-graph")))
        g = rows.get((s, v, "cuda-graph"))
        gbs = None
        if graph and g.get("measured_batches"):
            gbs = g["bytes"] / g["measured_batches"] / (graph * 1e3)

        def ratio(a, b):
            return a / b if a and b else None

        saved = cuda - graph if cuda and graph else None
        print(
            f"| {s}/{v} | {fmt(fused)} | {fmt(cuda)} | {fmt(graph)} | {fmt(ratio(fused, cuda), '.2f')} "
            f"| {fmt(ratio(fused, graph), '.2f')} | {fmt(saved)} | {fmt(gbs, '.2f')} |"
        )
        for a in ("cuda", "cuda-graph"):
            r = rows.get((s, v, a))
            if r and r.get("outcome") != "ok":
                print(f"|  | {a}: {r.get('outcome')}: {r.get('reason', '')} | | | | | | |")


def mib(v):
    return None if v is None or v < 0 else v / 1048576.0


def device_runs_table(rows):
    print("| scenario | adapter | source | placing it ms | device memory at peak MiB | peak RSS MiB |")
    print("| --- | --- | --- | --- | --- | --- |")
    for (s, v, a), r in sorted(rows.items()):
        device = r.get("device")
        if not device or r.get("outcome") != "ok":
            continue
        setup = device.get("source_setup_ns")
        setup_ms = setup / 1e6 if device.get("source") == "resident" and setup is not None else None
        print(
            f"| {s}/{v} | {a} | {device.get('source', '-')} | {fmt(setup_ms, '.2f')} "
            f"| {fmt(mib(device.get('allocated_peak_bytes')))} | {fmt(mib(r.get('peak_rss_bytes')))} |"
        )


# Issue 34's targets on the gate set: cuda-graph at or ahead of fused on one
# thread everywhere, CV-1 at 15 µs a batch or less, NLP-1 and TAB-1 ahead of
# fused.
def targets(rows):
    keys = sorted({(s, v) for (s, v, _) in rows})
    print("| target | figure | met |")
    print("| --- | --- | --- |")
    for s, v in keys:
        fused = p50_us(rows.get((s, v, "fused")))
        graph = p50_us(rows.get((s, v, "cuda-graph")))
        if fused is None or graph is None:
            print(f"| {s}/{v}: cuda-graph at or ahead of fused | - | cannot tell |")
            continue
        strict = s in ("NLP-1", "TAB-1")
        met = graph < fused if strict else graph <= fused
        word = "ahead of" if strict else "at or ahead of"
        verdict = "yes" if met else "no"
        print(f"| {s}/{v}: cuda-graph {word} fused (1 thread) | {graph:.1f} vs {fused:.1f} µs | {verdict} |")
        if s == "CV-1":
            verdict = "yes" if graph <= 15.0 else "no"
            print(f"| {s}/{v}: cuda-graph at 15 µs a batch or less | {graph:.1f} µs | {verdict} |")


def threads_table(root):
    by_threads = {}
    for d in sorted(glob.glob(os.path.join(root, "threads-*"))):
        k = int(d.rsplit("-", 1)[1])
        by_threads[k] = load(d)
    if not by_threads:
        return
    ks = sorted(by_threads)
    keys = sorted({(s, v) for rows in by_threads.values() for (s, v, _) in rows})
    print(
        "| scenario | " + " | ".join(f"{k} threads p50 µs" for k in ks) + " | speedup at " + str(ks[-1]) + " threads |"
    )
    print("| --- | " + " | ".join("---" for _ in ks) + " | --- |")
    for s, v in keys:
        p = [p50_us(by_threads[k].get((s, v, "fused"))) for k in ks]
        speedup = p[0] / p[-1] if p[0] and p[-1] else None
        print(f"| {s}/{v} | " + " | ".join(fmt(x) for x in p) + f" | {fmt(speedup, '.2f')} |")


def main():
    if len(sys.argv) != 2:
        print("usage: figures.py RECORDS_DIR", file=sys.stderr)
        return 2
    root = sys.argv[1]
    devices = load(os.path.join(root, "devices"))
    print("### The device adapters against fused (median batch times)\n")
    device_table(devices)
    print("\n### fused at every thread count (full size)\n")
    threads_table(root)
    print("\n### The device runs' source and memory\n")
    device_runs_table(devices)
    print("\n### Issue 34's targets\n")
    targets(devices)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Synthetic histories for ci/history-vs-asv.sh, from a template run file
(one real `sluice history add`): the same machine and rows, with the
median batch time of each row, commit and process drawn from a keyed
random generator (random.Random(seed), nothing else), so that every run of
the script writes the same histories.

Each case is a history of its own: the `iter` row carries what is planted,
the `reference` row never changes (a control). Between processes of one
commit the level moves with a standard deviation of 10% (issue 30 measured
ranges of 30% across processes of one binary); "busy" slows one process in
ten by 20 to 60% more.

usage: synthetic.py TEMPLATE_RUN OUT_DIR   prints CASE<TAB>PLANTED lines."""

import copy
import hashlib
import json
import math
import os
import random
import shutil
import sys

PROCESS_SD = 0.10

# name, commits, first changed commit, time factor from it, processes,
# busy, kernel-choice change (the factor is then the tuner's), seeds
CASES = [
    ("double-4+2-3proc", 6, 4, 2.0, 3, False, False, 5),
    ("double-4+2-1proc", 6, 4, 2.0, 1, False, False, 2),
    ("slower20-4+4-4proc", 8, 4, 1.25, 4, False, False, 5),
    ("slower20-4+4-1proc", 8, 4, 1.25, 1, False, False, 2),
    ("unchanged-8-3proc", 8, -1, 1.0, 3, False, False, 10),
    ("unchanged-busy-8-3proc", 8, -1, 1.0, 3, True, False, 5),
    ("kernel-choice-12-3proc", 12, 6, 0.85, 3, False, True, 3),
]


def commit_id(case, seed, c):
    # The position leads the id (4 hex digits), so a verdict can say where.
    return f"{c + 1:04x}" + hashlib.sha1(f"{case}/{seed}/{c}".encode()).hexdigest()[4:]


def main(template_path, out):
    with open(template_path) as f:
        template = json.load(f)
    history_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(template_path))))
    machine = template["machine"]
    for name, commits, at, factor, processes, busy, kernel_change, seeds in CASES:
        for seed in range(1, seeds + 1):
            case = f"{name}-s{seed}"
            rng = random.Random(f"{case}")
            dest = os.path.join(out, case)
            os.makedirs(os.path.join(dest, "machines", machine, "runs"))
            shutil.copy(os.path.join(history_root, "history.json"), dest)
            shutil.copy(
                os.path.join(history_root, "machines", machine, "machine.json"), os.path.join(dest, "machines", machine)
            )
            for c in range(commits):
                run = copy.deepcopy(template)
                run["commit"] = run["environment"]["git_commit"] = commit_id(case, seed, c)
                run["position"] = c + 1
                run["commit_time"] = ""
                rows = []
                for p in range(processes):
                    for row in template["rows"]:
                        if not row.get("measured"):
                            continue
                        r = copy.deepcopy(row)
                        ns = 100000.0 * math.exp(rng.gauss(0.0, PROCESS_SD))
                        if busy and rng.random() < 0.1:
                            ns *= rng.uniform(1.2, 1.6)
                        changed = at >= 0 and c >= at
                        if changed and (kernel_change or r["adapter"] == "iter"):
                            ns *= factor
                        if kernel_change and changed:
                            r["kernel_choice"] = r.get("kernel_choice", "") + ",retuned=cpu-avx512"
                        r["median_ns"] = round(ns)
                        r["low_ns"] = round(ns * 0.98)
                        r["high_ns"] = round(ns * 1.02)
                        r["samples_ns"] = [round(ns * (1 + (i - 2) / 100.0)) for i in range(5)]
                        if p:
                            r["process"] = p
                        else:
                            r.pop("process", None)
                        rows.append(r)
                run["rows"] = rows
                path = os.path.join(dest, "machines", machine, "runs", f"{c + 1:010d}-{run['commit']}.json")
                with open(path, "w") as f:
                    json.dump(run, f, indent=1)
            if kernel_change:
                planted = f"tuner x{factor:g} at {at}..{at + 1} (no code step)"
            elif at >= 0:
                planted = f"iter time x{factor:g} at {at}..{at + 1}"
            else:
                planted = "none" + (" (busy)" if busy else "")
            print(f"{case}\t{planted}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

#!/usr/bin/env python3
"""One line per row of a synthetic history for ci/history-vs-asv.sh: what
`sluice history publish` said (its step lines, and from its index whether
the row was too short to test or split at a kernel-choice change) beside
what asv's step detection finds on the same rows exported for asv
(asv.step_detect.detect_steps, then detect_regressions, the regressions
asv publish lists, on the exported values, one per commit).

usage: verdicts.py PUBLISH_OUTPUT ASV_RESULTS_DIR CASE PLANTED"""

import glob
import json
import os
import re
import sys

from asv import step_detect


def position(commit):
    return int(commit[:4], 16)


def sluice_verdicts(publish_output):
    steps = {}
    with open(publish_output) as f:
        for line in f:
            m = re.match(
                r"\s+step: (\S+) (\S+) (\S+) on \S+: ([+-][\d.]+)% elements/s .* between (\w+) and (\w+), p ([\d.]+)",
                line,
            )
            if m:
                steps.setdefault(m.group(3), []).append(
                    f"{m.group(4)}% at {position(m.group(5))}..{position(m.group(6))} (p {m.group(7)})"
                )
    site = os.path.join(os.path.dirname(publish_output), "site", os.path.basename(publish_output)[: -len(".publish")])
    notes = {}
    try:
        with open(os.path.join(site, "index.html")) as f:
            for row in f.read().split("<tr>")[1:]:
                m = re.search(r"<a href=\"rows/[^\"]*\">[^<]*?(\w[\w-]*)</a>", row)
                name = re.search(r">CV-1 [^ ]+ ([\w-]+)", row)
                adapter = name.group(1) if name else (m.group(1) if m else "?")
                if "too short to test" in row:
                    notes[adapter] = "too short to test"
                if "kernel choice changed" in row:
                    notes[adapter] = (notes.get(adapter, "") + " split at kernel change").strip()
    except OSError:
        pass
    return steps, notes


def asv_verdicts(results_dir):
    runs = sorted(
        glob.glob(os.path.join(results_dir, "*", "*-sluice.json")), key=lambda p: position(os.path.basename(p))
    )
    series = {}
    for path in runs:
        with open(path) as f:
            result = json.load(f)
        for name, row in result["results"].items():
            value = row[0][0] if row and row[0] else None
            series.setdefault(name.split(".")[-1], []).append((position(result["commit_hash"]), value))
    verdicts = {}
    for adapter, points in series.items():
        points = [(p, v) for p, v in points if v is not None]
        y = [v for _, v in points]
        # What asv publish lists as regressions: the steps of asv's own
        # detection (detect_steps) up from the best level, as
        # detect_regressions reports them.
        _, _, regressions = step_detect.detect_regressions(step_detect.detect_steps(y))
        found = [
            f"x{after / before:.2f} at {points[i][0]}..{points[j][0]}" for i, j, before, after in regressions or []
        ]
        verdicts[adapter] = ", ".join(found) or "no step"
    return verdicts


def main(publish_output, results_dir, case, planted):
    steps, notes = sluice_verdicts(publish_output)
    theirs = asv_verdicts(results_dir)
    for adapter in sorted(theirs):
        what = planted if adapter == "iter" or planted.startswith(("tuner", "none")) else "none (control)"
        ours = ", ".join(steps.get(adapter, [])) or notes.get(adapter, "no step")
        if adapter in notes and adapter in steps:
            ours += f"; {notes[adapter]}"
        print(f"{case + ' ' + adapter:<34} {what:<28} {ours:<44} {theirs[adapter]}")


if __name__ == "__main__":
    main(*sys.argv[1:5])

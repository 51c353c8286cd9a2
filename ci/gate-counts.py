#!/usr/bin/env python3
"""Callgrind's counts per batch for the gate (docs/gate.md).

`sluice bench --instrument`, run under
`valgrind --tool=callgrind --cache-sim=yes --instr-atstart=no`, dumps the
counts each time a batch reaches the sink ("sluice-batch <row> <rep> <k>",
what producing batch k cost) and after the sink's own work ("sluice-sink",
left out). This reads every dump of a folder and writes, per row (scenario,
variant and adapter), the mean per batch over the windows of batches 1 and
later: batch 0's window carries the run's setup, which the gate does not
compare. Usage: gate-counts.py DUMPS_DIR > counts.tsv
"""

import collections
import os
import re
import sys

LABEL = re.compile(r"^desc: Trigger: Client Request: sluice-batch (\S+)/(\S+)/(\S+) (\d+) (\d+)$")


def read_dump(path):
    """The label's fields and the event totals of one dump, or None."""
    label = events = totals = None
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("desc: Trigger:"):
                label = LABEL.match(line)
            elif line.startswith("events:"):
                events = line.split()[1:]
            elif line.startswith("totals:") or (line.startswith("summary:") and totals is None):
                totals = [int(v) for v in line.split()[1:]]
    if not label or not events or totals is None:
        return None
    counts = dict(zip(events, totals + [0] * (len(events) - len(totals))))
    return label.groups(), counts


def main():
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        sys.exit("usage: gate-counts.py DUMPS_DIR")
    rows = collections.OrderedDict()
    for name in sorted(os.listdir(sys.argv[1])):
        path = os.path.join(sys.argv[1], name)
        got = read_dump(path) if os.path.isfile(path) else None
        if not got:
            continue
        (scenario, variant, adapter, _rep, batch), c = got
        if int(batch) == 0:
            continue
        if "D1mr" not in c:
            sys.exit(f"{name}: no cache events; run callgrind with --cache-sim=yes")
        row = rows.setdefault((scenario, variant, adapter), [0, 0, 0, 0])
        row[0] += 1
        row[1] += c["Ir"]
        row[2] += c["D1mr"] + c["D1mw"]
        row[3] += c["DLmr"] + c["DLmw"]
    if not rows:
        sys.exit(f"{sys.argv[1]}: no sluice-batch dumps (was sluice run with --instrument under callgrind?)")
    print("# scenario\tvariant\tadapter\tbatches\tinstructions\td1_misses\tll_misses (per batch, setup left out)")
    for (scenario, variant, adapter), (n, ir, d1, ll) in rows.items():
        print(f"{scenario}\t{variant}\t{adapter}\t{n}\t{ir / n:.1f}\t{d1 / n:.1f}\t{ll / n:.1f}")


if __name__ == "__main__":
    main()

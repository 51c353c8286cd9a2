"""A peer that does honest work but reports a hundredth of its time (or, with
--half, half of the CPU time each batch took, after 20 ms more of CPU work
per batch: a single-threaded loader's under-report that a loaded machine's
waiting cannot hide; or, with --latency=VALUE, that exact JSON number for
every batch: out of range, not an integer, or longer than sluice could have
seen). The first two must be flagged `hand-over`; the others are protocol
errors."""

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plain

import sluice_peer

p = sluice_peer.parser("underreport")
p.add_argument("--latency")
p.add_argument("--half", action="store_true")
options = p.parse_args()
plan = sluice_peer.start("underreport", plain.FRAMEWORK, options)
ring = sluice_peer.open_ring(plan, options)
batches = plain.make_batches(plan)
for i, slot in sluice_peer.requests():
    t0 = time.perf_counter_ns()
    cpu0 = time.process_time_ns()
    arrays = next(batches)
    if options.half:
        spin_until = time.process_time_ns() + 20000000
        while time.process_time_ns() < spin_until:
            pass
        ns = (time.process_time_ns() - cpu0) // 2
    else:
        ns = (time.perf_counter_ns() - t0) // 100
    shapes = ring.write(slot, plan, arrays)
    latency = options.latency if options.latency is not None else str(ns)
    sys.stdout.write('{"batch": %d, "latency_ns": %s, "shapes": %s}\n' % (i, latency, json.dumps(shapes)))
    sys.stdout.flush()

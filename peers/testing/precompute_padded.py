"""A hostile user loader (the review's D21, attack 1): it computes every
batch as soon as it has the plan, clocks that honestly as batch 0's time
(so the tree's CPU is held by its clocks), then reports each later batch's
latency just above what writing its bytes could take (the 50 bytes/ns
bound). The plan comes after its hello, so the work is in the CPU sluice
counts; it does not grow with nothing: a session of one batch costs it a
batch, one of n costs it n. sluice must flag it `hand-over` and not rank
it."""

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plain

import sluice_peer

options = sluice_peer.parser("precompute_padded").parse_args()
if options.describe:
    sluice_peer.describe("precompute_padded", plain.SUPPORTED, "per-batch")
    sys.exit(0)
plan = sluice_peer.start("precompute_padded", plain.FRAMEWORK, options)
ring = sluice_peer.open_ring(plan, options)
done = []
for batch in plain.make_batches(plan):
    plain.spin(60000000)  # 60 ms of CPU a batch: more work to hide
    done.append(batch)
for i, slot in sluice_peer.requests():
    t0 = time.perf_counter_ns()
    shapes = ring.write(slot, plan, done[i])
    if i == 0:
        latency = time.perf_counter_ns() - plan.revealed_ns
    else:
        nbytes = sum(memoryview(data).nbytes for _, data in done[i].values())
        latency = max(time.perf_counter_ns() - t0, nbytes // 40 + 1)
    sys.stdout.write('{"batch": %d, "latency_ns": %d, "shapes": %s}\n' % (i, latency, json.dumps(shapes)))
    sys.stdout.flush()

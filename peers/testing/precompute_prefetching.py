"""A hostile user loader (the review's D21, attack 2): it computes every
batch as soon as it has the plan (before its hello, until protocol 3 wrote
the plan after it), declares itself prefetching in its --describe (which
skips the CPU check), and reports latencies just above what writing the
bytes could take. sluice shows it as `self-declared` and does not rank it
unless asked (SLUICE_RANK_SELF_DECLARED=1)."""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plain

import sluice_peer

if "--describe" in sys.argv:
    sluice_peer.describe("precompute_prefetching", plain.SUPPORTED, "prefetching")
    sys.exit(0)
options = sluice_peer.parser("precompute_prefetching").parse_args()
plan = sluice_peer.start("precompute_prefetching", plain.FRAMEWORK, options)
ring = sluice_peer.open_ring(plan, options)
done = list(plain.make_batches(plan))
for i, slot in sluice_peer.requests():
    shapes = ring.write(slot, plan, done[i])
    nbytes = sum(len(bytes(data)) for _, data in done[i].values())
    sys.stdout.write(
        '{"batch": %d, "latency_ns": %d, "shapes": %s}\n' % (i, max(1000, nbytes // 40), json.dumps(shapes))
    )
    sys.stdout.flush()

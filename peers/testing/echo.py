"""A peer that computes nothing and claims the reference's answers: it reads
the reference digests from the file SLUICE_TEST_ANSWERS names (a user's
`sluice export --digests`; the bench hands a peer none), puts them in its
lines and leaves the ring's slots as they are. sluice reads the batches from
the ring, so it must be recorded a mismatch. It also says on stderr whether
the export it was given holds anything like an answer."""

import json
import os
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import sluice_peer

options = sluice_peer.parser("echo").parse_args()
plan = sluice_peer.start("echo", "none", options)
leaks = [n for n in os.listdir(options.export_dir) if "digest" in n]
leaks += ["plan.json:" + k for k in plan.raw if "digest" in k]
print("answers in the export: %s" % (leaks or "none"), file=sys.stderr, flush=True)
answers = []
path = os.environ.get("SLUICE_TEST_ANSWERS")
if path:
    _, shape, data = sluice_peer.read_npy(path)
    answers = ["%016x" % v for v in struct.unpack("<%dQ" % shape[0], data)]
sluice_peer.open_ring(plan, options)
for line in sys.stdin:
    request = line.split()
    if not request or request[0] == "end":
        break
    i = int(request[0])
    rows = plan.batches[i]["rows"]
    shapes = [[rows] + spec["shape"] for spec in plan.output]
    t0 = time.perf_counter_ns()
    print(
        json.dumps(
            {
                "batch": i,
                "latency_ns": time.perf_counter_ns() - t0,
                "shapes": shapes,
                "digest": answers[i] if i < len(answers) else "0" * 16,
            }
        ),
        flush=True,
    )

"""A hostile peer (the review's D21, attack 4): a helper that left the
loader's process group and session (setsid) computes every batch, and the
loader only copies each one into the ring, reporting latencies just above
what writing the bytes could take. The helper's CPU time is the loader's
work: sluice counts the CPU of the loader's whole tree (its group, and the
processes that left it, which come back to sluice, the subreaper), so the
run is a hand-over, never ranked."""

import json
import os
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plain

import sluice_peer


def read_exactly(fd, n):
    out = bytearray()
    while len(out) < n:
        chunk = os.read(fd, n - len(out))
        if not chunk:
            raise SystemExit("offload: the helper is gone")
        out += chunk
    return bytes(out)


def helper(plan, go, results):
    """Waits for the first request, then computes every batch in order."""
    os.read(go, 1)
    srcs = plain.sources(plan)
    for i in range(len(plan.batches)):
        batch = plain.batch(plan, srcs, i)
        meta = json.dumps({name: list(shape) for name, (shape, _) in batch.items()}).encode()
        os.write(results, struct.pack("<I", len(meta)) + meta)
        for name in sorted(batch):
            data = bytes(batch[name][1])
            os.write(results, struct.pack("<Q", len(data)))
            os.write(results, data)


options = sluice_peer.parser("offload").parse_args()
plan = sluice_peer.start("offload", plain.FRAMEWORK, options)
ring = sluice_peer.open_ring(plan, options)
go_r, go_w = os.pipe()
res_r, res_w = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.close(go_w)
        os.close(res_r)
        helper(plan, go_r, res_w)
        os._exit(0)
    os._exit(0)
os.wait()
os.close(go_r)
os.close(res_w)
started = False
for line in sys.stdin:
    request = line.split()
    if not request or request[0] == "end":
        break
    if not started:
        os.write(go_w, b"g")
        started = True
    i, slot = int(request[0]), int(request[1])
    cpu0 = time.process_time_ns()
    (n,) = struct.unpack("<I", read_exactly(res_r, 4))
    shapes = json.loads(read_exactly(res_r, n))
    batch = {}
    for name in sorted(shapes):
        (size,) = struct.unpack("<Q", read_exactly(res_r, 8))
        batch[name] = (tuple(shapes[name]), read_exactly(res_r, size))
    written = ring.write(slot, plan, batch)
    nbytes = sum(len(data) for _, data in batch.values())
    # Its own CPU time is reported (twice over, to cover the protocol), so
    # that only the helper's work is missing from its clock.
    own = 2 * (time.process_time_ns() - cpu0) + 200000
    sys.stdout.write(
        '{"batch": %d, "latency_ns": %d, "shapes": %s}\n' % (i, max(own, nbytes // 40), json.dumps(written))
    )
    sys.stdout.flush()

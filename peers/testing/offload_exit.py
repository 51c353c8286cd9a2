"""A hostile peer (the review's D21, attack 4, the helper that leaves
early): a child process of the loader computes every batch into a file and
exits, and the loader reaps it (waits for it) before it answers batch 0;
it then only copies each batch into the ring, reporting latencies just
above what writing the bytes could take. The child's CPU time went into
its parent's count of reaped children, which sluice adds, so the run is a
hand-over, never ranked."""

import json
import os
import pickle
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plain

import sluice_peer

options = sluice_peer.parser("offload_exit").parse_args()
plan = sluice_peer.start("offload_exit", plain.FRAMEWORK, options)
ring = sluice_peer.open_ring(plan, options)
fd, path = tempfile.mkstemp(prefix="sluice-offload-exit-")
os.close(fd)
pid = os.fork()
if pid == 0:
    done = []
    for batch in plain.make_batches(plan):
        plain.spin(60000000)  # 60 ms of CPU a batch: more work to hide
        done.append({name: (shape, bytes(data)) for name, (shape, data) in batch.items()})
    with open(path, "wb") as f:
        pickle.dump(done, f)
    os._exit(0)
os.waitpid(pid, 0)
with open(path, "rb") as f:
    done = pickle.load(f)
os.remove(path)
for i, slot in sluice_peer.requests():
    shapes = ring.write(slot, plan, done[i])
    nbytes = sum(len(data) for _, data in done[i].values())
    sys.stdout.write('{"batch": %d, "latency_ns": %d, "shapes": %s}\n' % (i, nbytes // 40 + 1000, json.dumps(shapes)))
    sys.stdout.flush()

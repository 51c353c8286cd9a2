"""A hostile peer (the review's D28): it writes each batch honestly into the
ring, then truncates the ring's memory file to nothing before it answers, so
that sluice's read of the slot would be a SIGBUS that ends the whole bench.
sluice seals the ring at its size before the peer gets it, so the truncation
fails (EPERM) and the ring stays whole. The peer says on stderr what its
ftruncate did, and carries on either way: the run must end with a record,
never with the bench's death. With --grow it enlarges the ring instead."""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plain

import sluice_peer

p = sluice_peer.parser("truncate_ring")
p.add_argument("--grow", action="store_true")
options = p.parse_args()
plan = sluice_peer.start("truncate_ring", plain.FRAMEWORK, options)
ring = sluice_peer.open_ring(plan, options)
batches = plain.make_batches(plan)
for i, slot in sluice_peer.requests():
    shapes = ring.write(slot, plan, next(batches))
    size = 4 * options.ring_slots * options.ring_slot_bytes if options.grow else 0
    try:
        os.ftruncate(options.ring_fd, size)
        print("truncate_ring: the ring is now %d bytes" % size, file=sys.stderr, flush=True)
    except OSError as e:
        print("truncate_ring: ftruncate refused: %s" % e, file=sys.stderr, flush=True)
    sys.stdout.write('{"batch": %d, "latency_ns": 1000, "shapes": %s}\n' % (i, json.dumps(shapes)))
    sys.stdout.flush()

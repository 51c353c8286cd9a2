"""A hostile peer (the review's D21, attack 3): it keeps the batches of one
run on disk and replays them in a later run without computing anything.
With SLUICE_TEST_STORE naming a folder: when the folder holds no batches
yet, it computes honestly (plain's work) and stores each batch there; when
it does, it hands the stored batches over, reporting honest-looking
latencies. Every run of a peer has a plan of its own seed, so the stored
batches are not the later run's, and the replay is a mismatch."""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plain

import sluice_peer


def stored(store, i):
    with open(os.path.join(store, "batch%d.json" % i)) as f:
        shapes = json.load(f)
    out = {}
    for name, shape in shapes.items():
        with open(os.path.join(store, "batch%d.%s" % (i, name)), "rb") as f:
            out[name] = (tuple(shape), f.read())
    return out


def keep(store, i, batch):
    shapes = {}
    for name, (shape, data) in batch.items():
        with open(os.path.join(store, "batch%d.%s" % (i, name)), "wb") as f:
            f.write(bytes(data))
        shapes[name] = list(shape)
    with open(os.path.join(store, "batch%d.json" % i), "w") as f:
        json.dump(shapes, f)


def make_batches(plan, options):
    store = os.environ["SLUICE_TEST_STORE"]
    replaying = os.path.exists(os.path.join(store, "batch0.json"))
    srcs = None if replaying else plain.sources(plan)
    for i in range(len(plan.batches)):
        if replaying:
            yield stored(store, i)
        else:
            batch = plain.batch(plan, srcs, i)
            keep(store, i, batch)
            yield batch


if __name__ == "__main__":
    sluice_peer.main("replay", plain.FRAMEWORK, make_batches, plain.SUPPORTED)

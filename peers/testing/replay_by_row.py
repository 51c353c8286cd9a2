"""A hostile user loader (the review's D21, attack 3, on a plan no seed
changes): it keeps each element's output under a hash of the element's
input row, in the folder --store names, and on a later run, once the folder
holds outputs, it computes nothing: each element's output is the one kept
under its row's hash (zeros where none is, as it expects every row to have
been seen). Where no op draws, an element's output is a function of its row
alone, whatever the seed and the order, so a fresh plan does not stop it;
only a data set of the session's own (values no earlier run saw) does: then
no row's hash is kept, and the replay is a mismatch."""

import hashlib
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plain

import sluice_peer


def row_bytes(descr, shape):
    n = plain.ITEM[descr]
    for d in shape[1:]:
        n *= d
    return n


def row_keys(srcs, ids):
    """The hash of each element's input row, every source field of it."""
    keys = []
    for k in ids:
        h = hashlib.sha256()
        for name in sorted(srcs):
            descr, shape, data = srcs[name]
            size = row_bytes(descr, shape)
            h.update(bytes(data[k * size : (k + 1) * size]))
        keys.append(h.hexdigest())
    return keys


def keep(store, keys, batch):
    """Each element's output rows, one file per row hash, and the fields'
    row shapes."""
    layout = {name: [list(shape[1:]), len(bytes(data)) // shape[0]] for name, (shape, data) in batch.items()}
    with open(os.path.join(store, "layout.json"), "w") as f:
        json.dump(layout, f)
    for j, key in enumerate(keys):
        with open(os.path.join(store, key), "wb") as f:
            for name in sorted(batch):
                shape, data = batch[name]
                size = layout[name][1]
                f.write(bytes(data)[j * size : (j + 1) * size])


def replayed(store, layout, keys):
    fields = {name: bytearray() for name in layout}
    for key in keys:
        path = os.path.join(store, key)
        row = open(path, "rb").read() if os.path.exists(path) else None
        at = 0
        for name in sorted(layout):
            size = layout[name][1]
            fields[name] += row[at : at + size] if row else bytes(size)
            at += size
    return {name: ((len(keys),) + tuple(layout[name][0]), bytes(data)) for name, data in fields.items()}


def make_batches(plan, options):
    store = options.store
    srcs = plain.sources(plan)
    layout_path = os.path.join(store, "layout.json")
    layout = json.load(open(layout_path)) if os.path.exists(layout_path) else None
    for i in range(len(plan.batches)):
        keys = row_keys(srcs, [int(k) for k in plan.batch_ids(i)])
        if layout is not None:
            yield replayed(store, layout, keys)
        else:
            batch = plain.batch(plan, srcs, i)
            keep(store, keys, batch)
            yield batch


if __name__ == "__main__":
    sluice_peer.main(
        "replay_by_row",
        plain.FRAMEWORK,
        make_batches,
        plain.SUPPORTED,
        arguments=lambda p: p.add_argument("--store"),
    )

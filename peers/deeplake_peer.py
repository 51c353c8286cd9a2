"""peer:deeplake: the scenario's pipeline written the way a Deep Lake (v4) user
writes it: the data set stored as a Deep Lake dataset (one typed column per
source field, on local disk: deeplake.create("file://..."), append, commit),
opened read-only, and each batch read by random access with the exported
order's element ids (dataset[field][ids]), then the plan's ops applied to the
batch's numpy arrays.

Writing the export's arrays into the Deep Lake dataset is setup, done before
the hello (in a temporary directory removed at exit); the measured batch is the
read through Deep Lake's reader plus the ops. pack_tokens' token stream is
stored as rows of seq_len tokens (its end padded with pad_id, which is what
pack_tokens pads with), so an element is one row. The ops are
peers/numpy_peer.py's (numpy, vectorized over the batch), so the arithmetic is
sluice's, bitwise. Deep Lake runs entirely on the local file system here: no
network, no credentials.
"""

import atexit
import os
import shutil
import sys
import tempfile

import deeplake
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sluice_peer
from numpy_peer import BatchOps

# What this script implements: its line in peers/ops.txt.
SUPPORTED = sluice_peer.implements(__file__)

TYPES = {
    np.dtype(np.uint8): deeplake.types.UInt8,
    np.dtype(np.int32): deeplake.types.Int32,
    np.dtype(np.int64): deeplake.types.Int64,
    np.dtype(np.float32): deeplake.types.Float32,
}


def column_type(data):
    """Deep Lake's type of a column whose rows are data's rows."""
    scalar = TYPES[data.dtype]()
    if data.ndim == 1:
        return scalar
    return deeplake.types.Array(scalar, shape=list(data.shape[1:]))


def write_dataset(plan, path):
    """The export's source fields as a Deep Lake dataset at path; returns the
    ops left to apply (pack_tokens is done by the storage layout)."""
    ops = list(plan.ops)
    columns = {}
    for f in plan.source_fields:
        columns[f["name"]] = plan.load_source(f["name"])
    if ops and ops[0]["kind"] == "pack_tokens":
        op = ops.pop(0)
        p = op["params"]
        stream = columns[op["field"]]
        rows = -(-stream.shape[0] // p["seq_len"])
        packed = np.full(rows * p["seq_len"], p["pad_id"], dtype=stream.dtype)
        packed[: stream.shape[0]] = stream
        columns[op["field"]] = packed.reshape(rows, p["seq_len"])
    ds = deeplake.create("file://" + path)
    for name, data in columns.items():
        ds.add_column(name, column_type(data))
    ds.append(dict(columns.items()))
    ds.commit()
    return ops


def make_batches(plan, options):
    work = tempfile.mkdtemp(prefix="sluice-deeplake-")
    atexit.register(shutil.rmtree, work, True)
    path = os.path.join(work, "dataset")
    ops = write_dataset(plan, path)
    ds = deeplake.open_read_only("file://" + path)
    names = [f["name"] for f in plan.source_fields]

    run_ops = BatchOps(plan, ops)

    def batches():
        for i in range(len(plan.batches)):
            epoch = plan.batches[i]["epoch"]
            ids = plan.batch_ids(i)
            rows = ids.tolist()
            fields = {name: np.asarray(ds[name][rows]) for name in names}
            yield run_ops(fields, epoch, ids)

    return batches()


if __name__ == "__main__":
    sluice_peer.main("deeplake", "deeplake " + deeplake.__version__, make_batches, SUPPORTED)

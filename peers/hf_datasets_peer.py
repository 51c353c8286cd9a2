"""peer:hf-datasets: the scenario's pipeline written the way a Hugging Face
Datasets user writes it: the data set converted once to Datasets' own format
(a `datasets.Dataset` with typed features, `save_to_disk`: Arrow files), then
in the loop `load_from_disk(...)` with `.with_format("numpy", dtype=None)`
(the stored dtypes, not the formatter's default int64), each epoch's
exported order applied with `.select(order)`, and the batches read with
`Dataset.iter(batch_size=...)`; the ops run on each numpy batch with
peers/numpy_peer.py's functions (sluice's arithmetic, bitwise).

Setup, once the plan comes (in batch 0's time, a warmup batch, never ranked):
the conversion to Arrow
(written once per export into EXPORT_DIR/hf-datasets and reused by later
runs on the same export), load_from_disk (which memory-maps the Arrow
files) and each epoch's select (an indices mapping kept in memory). A
leading pack_tokens is done the Datasets way, in the conversion: the token
stream grouped into seq_len rows (run_clm's group_texts, the last row padded
with pad_id), so a batch reads packed rows. In a batch's time: Datasets'
gather of the batch's rows through the indices mapping, the Arrow-to-numpy
conversion of every column, and the ops.
"""

import os
import sys

# Nothing here may reach the network (the Hub); the data set is local.
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import datasets
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sluice_peer
from numpy_peer import BatchOps

# What this script implements: its line in peers/ops.txt.
SUPPORTED = sluice_peer.implements(__file__)

VALUE = {"u8": "uint8", "i32": "int32", "i64": "int64", "f32": "float32"}
ARRAYS = {2: datasets.Array2D, 3: datasets.Array3D, 4: datasets.Array4D, 5: datasets.Array5D}


def feature(dtype, shape):
    """The Datasets feature of one element of a field: a scalar Value, a
    fixed-length List for a vector, an ArrayND for a tensor."""
    if not shape:
        return datasets.Value(dtype)
    if len(shape) == 1:
        return datasets.List(datasets.Value(dtype), length=shape[0])
    return ARRAYS[len(shape)](shape=tuple(shape), dtype=dtype)


def grouped_tokens(stream, rows, p):
    """The token stream cut into rows of seq_len, the last padded with pad_id."""
    seq = p["seq_len"]
    out = np.full(rows * seq, p["pad_id"], dtype=stream.dtype)
    n = min(stream.shape[0], rows * seq)
    out[:n] = stream[:n]
    return out.reshape(rows, seq)


def convert(plan, pack):
    """The export's source fields as a Datasets data set on disk (once per
    export: later runs reuse it); returns its directory."""
    path = os.path.join(plan.dir, "hf-datasets")
    if os.path.isdir(path):
        return path
    columns, features = {}, {}
    for f in plan.source_fields:
        name, dtype, shape = f["name"], VALUE[f["dtype"]], list(f["shape"])
        data = plan.load_source(name)
        if pack is not None and name == pack["field"]:
            data = grouped_tokens(data, plan.raw["dataset_size"], pack["params"])
            shape = [pack["params"]["seq_len"]]
        columns[name] = data
        features[name] = feature(dtype, shape)
    ds = datasets.Dataset.from_dict(columns, features=datasets.Features(features))
    with sluice_peer.written_aside(path) as tmp:
        ds.save_to_disk(tmp)
    return path


def make_batches(plan, options):
    ops = list(plan.ops)
    pack = ops.pop(0) if ops and ops[0]["kind"] == "pack_tokens" else None
    # The numpy formatter widens integers to int64 unless told a dtype (its
    # kwargs go to np.asarray): dtype=None keeps each column's stored dtype
    # (u8 images, i32 labels and tokens), rather than a cast back per batch.
    ds = datasets.load_from_disk(convert(plan, pack)).with_format("numpy", dtype=None)
    epochs = []
    for epoch, batches in sorted(sluice_peer.epoch_batches(plan).items()):
        start = batches[0]["offset"]
        end = batches[-1]["offset"] + batches[-1]["rows"]
        order = plan.order(epoch)[start:end]
        # keep_in_memory: the indices mapping stays in memory rather than in
        # a cache file beside the (shared) Arrow files.
        epochs.append((epoch, start, order, ds.select(order, keep_in_memory=True)))
    return batches_of(plan, ops, epochs)


def batches_of(plan, ops, epochs):
    run_ops = BatchOps(plan, ops)
    for epoch, _start, order, selected in epochs:
        for k, batch in enumerate(selected.iter(batch_size=plan.batch_size)):
            ids = order[k * plan.batch_size : (k + 1) * plan.batch_size]
            yield run_ops(dict(batch), epoch, ids)


if __name__ == "__main__":
    datasets.disable_progress_bars()
    sluice_peer.main(
        "hf-datasets",
        "datasets " + datasets.__version__ + " (pyarrow " + __import__("pyarrow").__version__ + ")",
        make_batches,
        SUPPORTED,
    )

"""peer:webdataset: the scenario's pipeline written the way a WebDataset user
writes it: the data set written once to POSIX tar shards with
`wds.ShardWriter` (one sample per element, each field an `.npy` member),
then read back as a stream, `wds.WebDataset(shards, shardshuffle=False)
.decode().batched(batch_size, partial=True)`, the ops running on each numpy
batch with peers/numpy_peer.py's functions (sluice's arithmetic, bitwise).

WebDataset reads its shards front to back and has no random access, so the
exported order is enforced where WebDataset users put their shuffle: in the
writing. Each epoch's elements are written in that epoch's exported order
to shards of their own (EXPORT_DIR/webdataset/e<E>-<n>.tar, SHARD_COUNT
samples a shard), and read back with shard and sample shuffling off. Its
cost: the shards hold the data once per epoch of the plan (disk and the
write time), and a different order needs new shards. Each sample carries
its element id (`id.cls`), from which the batch's exported decisions are
looked up, as numpy_peer does.

Setup, once the plan comes (in batch 0's time, a warmup batch, never ranked):
writing the shards (once
per export, into EXPORT_DIR/webdataset, reused by later runs on the same
export) and building each epoch's pipeline (no file is opened yet). A
leading pack_tokens is done in the writing: each sample holds its seq_len
tokens (the stream's last sequence padded with pad_id), as text data sets
are sharded. In a batch's time: reading the tar members (from the page
cache, the shards having just been written), decoding each `.npy`, the
collation (np.stack of the samples' arrays), and the ops.
"""

import glob
import os
import sys

import numpy as np
import webdataset as wds

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy_idiomatic_peer as numpy_peer
import sluice_peer
from numpy_peer import BatchOps

# What this script implements: its line in peers/ops.txt.
SUPPORTED = sluice_peer.implements(__file__)
# Samples per shard: several shards per epoch at ci size, as a sharded data
# set has; WebDataset streams across shard boundaries.
SHARD_COUNT = 1000


def sample_fields(plan, pack):
    """The source fields, one row per element (a leading pack_tokens' stream
    cut into its sequences)."""
    fields = {}
    for f in plan.source_fields:
        data = plan.load_source(f["name"])
        if pack is not None and f["name"] == pack["field"]:
            p = pack["params"]
            ids = np.arange(plan.raw["dataset_size"], dtype=np.int64)
            data = numpy_peer.gather_tokens(data, ids, p["seq_len"], p["pad_id"])
        fields[f["name"]] = data
    return fields


def write_shards(plan, pack, epochs, name="webdataset", finish=None):
    """Each epoch's elements, in its exported order, as tar shards in
    EXPORT_DIR/<name> (once per export: later runs reuse them); returns their
    directory. finish(directory), if given, runs on the written shards before
    they are renamed into place (peers/energon_peer.py indexes them there),
    so that a run cut short leaves nothing a later run would take as whole."""
    path = os.path.join(plan.dir, name)
    if os.path.isdir(path):
        return path
    fields = sample_fields(plan, pack)
    with sluice_peer.written_aside(path) as tmp:
        for epoch, order in epochs:
            with wds.ShardWriter(os.path.join(tmp, "e%d-%%06d.tar" % epoch), maxcount=SHARD_COUNT, verbose=0) as sink:
                for pos, i in enumerate(order):
                    # The key holds the epoch as well as the position: a
                    # data set whose keys repeat is refused by Energon's
                    # index, which covers every epoch's shards at once.
                    sample = {"__key__": "e%d-%09d" % (epoch, pos), "id.cls": int(i)}
                    for field, data in fields.items():
                        sample[field + ".npy"] = np.asarray(data[i])
                    sink.write(sample)
        if finish is not None:
            finish(tmp)
    return path


def exported_epochs(plan):
    """Each epoch of the plan with the part of its exported order that its
    batches cover, [(epoch, ids), ...]: what the shards hold, in order."""
    epochs = []
    for epoch, batches in sorted(sluice_peer.epoch_batches(plan).items()):
        start = batches[0]["offset"]
        end = batches[-1]["offset"] + batches[-1]["rows"]
        epochs.append((epoch, plan.order(epoch)[start:end]))
    return epochs


def leading_pack(ops):
    """A leading pack_tokens, which the shard writing does, and the ops left
    for each batch."""
    ops = list(ops)
    pack = ops.pop(0) if ops and ops[0]["kind"] == "pack_tokens" else None
    return pack, ops


def make_batches(plan, options):
    pack, ops = leading_pack(plan.ops)
    epochs = exported_epochs(plan)
    path = write_shards(plan, pack, epochs)
    pipelines = []
    for epoch, _ in epochs:
        shards = sorted(glob.glob(os.path.join(path, "e%d-*.tar" % epoch)))
        pipelines.append(
            (epoch, wds.WebDataset(shards, shardshuffle=False).decode().batched(plan.batch_size, partial=True))
        )
    names = [f["name"] for f in plan.source_fields]
    return batches_of(plan, ops, names, pipelines)


def batches_of(plan, ops, names, pipelines):
    run_ops = BatchOps(plan, ops)
    for epoch, pipeline in pipelines:
        for batch in pipeline:
            fields = {name: batch[name + ".npy"] for name in names}
            yield run_ops(fields, epoch, batch["id.cls"])


if __name__ == "__main__":
    from importlib.metadata import version

    sluice_peer.main("webdataset", "webdataset " + version("webdataset"), make_batches, SUPPORTED)

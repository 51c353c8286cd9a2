"""peer:mosaicml-streaming: the scenario's pipeline written the way a MosaicML
Streaming user writes it: the data set converted once to MDS shards with
streaming.MDSWriter (one sample per element, one column per source field),
then read back through streaming.StreamingDataset(local=..., shuffle=False),
a sample at a time by index, collated into a batch with np.stack, and the
batch transformed.

Streaming is meant for shards on a remote object store cached to a local
directory; here the shards are written to a local directory and read from
there (no remote, no network). The conversion is the user's one-off
preparation of a data set, so it happens in the peer's startup, before the
hello; each measured batch is: the StreamingDataset's __getitem__ for each of
the batch's element ids in the exported order (Streaming finds the sample's
shard and decodes its columns from the shard file), the stack, and the ops.

StreamingDataset's own iteration order (its partitioning over canonical
nodes, ranks and workers, even with shuffle=False) is not the exported one,
so the peer indexes the dataset with the exported order, as a user with a
sampler of their own does. The ops are peers/numpy_peer.py's, on the batch,
so the arithmetic is sluice's bit for bit (docs/peers.md). pack_tokens is
part of the conversion: each sample is its element's packed sequence, as
Streaming users store tokenized sequences.
"""

import atexit
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy_idiomatic_peer as numpy_peer
import sluice_peer
from numpy_peer import BatchOps

# What this script implements: its line in peers/ops.txt.
SUPPORTED = sluice_peer.implements(__file__)


def encoding(dtype, shape):
    """MDS's encoding of a column: a numpy scalar encoding for a scalar, a
    fixed-shape ndarray otherwise (no shape header in each sample)."""
    name = np.dtype(dtype).name
    return name if not shape else "ndarray:%s:%s" % (name, ",".join(str(d) for d in shape))


def write_shards(plan, out):
    """The export's elements as MDS shards in out: sample i is element i.
    Returns the ops left to run per batch (pack_tokens is done here)."""
    from streaming import MDSWriter

    elements, ops = numpy_peer.stored_elements(plan)
    count = plan.raw["dataset_size"]
    columns = {name: encoding(a.dtype, a.shape[1:]) for name, a in elements.items()}
    with MDSWriter(out=out, columns=columns, compression=None, progress_bar=False) as writer:
        for i in range(count):
            writer.write({name: a[i] for name, a in elements.items()})
    return ops, list(elements)


def make_batches(plan, options):
    from streaming import StreamingDataset
    from streaming.base.util import clean_stale_shared_memory

    # A peer killed earlier leaves Streaming's shared memory behind.
    clean_stale_shared_memory()
    shards = os.path.join(plan.dir, "mds-%d" % os.getpid())
    atexit.register(shutil.rmtree, shards, True)
    ops, names = write_shards(plan, shards)
    dataset = StreamingDataset(local=shards, shuffle=False, batch_size=plan.batch_size)
    if len(dataset) != plan.raw["dataset_size"]:
        raise SystemExit("the MDS data set has %d samples, the plan %d" % (len(dataset), plan.raw["dataset_size"]))

    run_ops = BatchOps(plan, ops)

    def batches():
        for i in range(len(plan.batches)):
            epoch = plan.batches[i]["epoch"]
            ids = plan.batch_ids(i)
            samples = [dataset[int(k)] for k in ids]
            fields = {name: np.stack([s[name] for s in samples]) for name in names}
            yield run_ops(fields, epoch, ids)

    return batches()


if __name__ == "__main__":
    from importlib.metadata import version

    sluice_peer.main(
        "mosaicml-streaming", "mosaicml-streaming " + version("mosaicml-streaming"), make_batches, SUPPORTED
    )

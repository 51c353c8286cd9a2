"""peer:ffcv: the scenario's pipeline as an FFCV user writes a loader over a
data set of their own:

- setup, once the plan comes (in batch 0's time, a warmup batch, never
  ranked): the export's elements written to an
  FFCV `.beton` file with `ffcv.writer.DatasetWriter`, one `NDArrayField` per
  source field (sample i is element i; pack_tokens done here, as users store
  tokenized text), in a file inside the export (removed at exit);
- per epoch, `ffcv.loader.Loader(path, batch_size, order=OrderOption.SEQUENTIAL,
  indices=the epoch's exported order, drop_last=False)`, which reads the
  samples in that order on FFCV's own threads (numba-compiled decoding,
  batches ahead: it prefetches, and sluice times it so);
- the plan's ops on each numpy batch (numpy_idiomatic_peer's functions, as
  the other storage peers).

It runs on PyTorch 2 in its own venv (ci/install-peers.sh: FFCV's C
extension builds against Debian's OpenCV and libjpeg-turbo).
"""

import atexit
import os
import sys

_protocol_fd = os.dup(1)
os.dup2(2, 1)
sys.stdout = os.fdopen(_protocol_fd, "w")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy_idiomatic_peer as numpy_peer  # noqa: E402
import sluice_peer  # noqa: E402
from numpy_peer import BatchOps  # noqa: E402

# What this script implements: its line in peers/ops.txt.
SUPPORTED = sluice_peer.implements(__file__)


class Elements:
    """FFCV's indexed data set protocol over the stored elements."""

    def __init__(self, elements, names):
        self.elements, self.names = elements, names

    def __len__(self):
        return len(self.elements[self.names[0]])

    def __getitem__(self, i):
        return tuple(np.asarray(self.elements[n][i]).reshape(self.elements[n].shape[1:] or (1,)) for n in self.names)


def make_batches(plan, options):
    from ffcv.fields import NDArrayField
    from ffcv.fields.decoders import NDArrayDecoder
    from ffcv.loader import Loader, OrderOption
    from ffcv.writer import DatasetWriter

    elements, ops = numpy_peer.stored_elements(plan)
    names = list(elements)
    path = os.path.join(plan.dir, "ffcv-%d.beton" % os.getpid())
    atexit.register(lambda: os.path.exists(path) and os.remove(path))
    fields = {n: NDArrayField(shape=elements[n].shape[1:] or (1,), dtype=elements[n].dtype) for n in names}
    DatasetWriter(path, fields, num_workers=1).from_indexed_dataset(Elements(elements, names))
    pipelines = {n: [NDArrayDecoder()] for n in names}

    run_ops = BatchOps(plan, ops)

    def batches():
        for epoch, epoch_batches in sorted(sluice_peer.epoch_batches(plan).items()):
            start = epoch_batches[0]["offset"]
            order = plan.order(epoch)[start : start + sum(b["rows"] for b in epoch_batches)]
            loader = Loader(
                path,
                batch_size=plan.batch_size,
                num_workers=1,
                order=OrderOption.SEQUENTIAL,
                indices=np.asarray(order),
                drop_last=False,
                pipelines=pipelines,
            )
            for k, batch in enumerate(loader):
                i = plan.batches.index(epoch_batches[k])
                ids = plan.batch_ids(i)
                fields = {n: np.asarray(a).reshape((len(ids),) + elements[n].shape[1:]) for n, a in zip(names, batch)}
                yield run_ops(fields, epoch, ids, batch=i)

    return batches()


if __name__ == "__main__":
    from importlib.metadata import version

    sluice_peer.main(
        "ffcv", "ffcv %s (torch %s)" % (version("ffcv"), version("torch")), make_batches, SUPPORTED, kind="prefetching"
    )

"""peer:litdata: the scenario's pipeline as a LitData (Lightning) user writes a
loader over a data set of their own:

- setup, once the plan comes (in batch 0's time, a warmup batch, never
  ranked): the export's elements are written as
  LitData chunks with litdata.optimize(fn=..., inputs=range(n), ...), one
  sample per element (sample i is element i, checked on a few), one key per
  source field, in a directory inside the export (removed at exit);
  pack_tokens is done here (each sample is its element's packed sequence, as
  LitData users store tokenized text);
- a batch: litdata.StreamingDataset's __getitem__ of each of the batch's
  elements in the plan's order (LitData finds the sample's chunk and decodes
  it), np.stack into the batch's fields, and the plan's ops on the batch
  (numpy_idiomatic_peer's vectorized functions, as the other storage peers).

It runs on PyTorch 2 (its venv, ci/install-peers.sh). LitData prints its
progress (and an advertisement) on stdout, also from optimize's worker
processes, and the protocol owns stdout: the peer points stdout at stderr
for the setup and speaks the protocol on a duplicate of the original after
it.
"""

import atexit
import os
import shutil
import sys

_protocol_fd = os.dup(1)
os.dup2(2, 1)
_protocol = os.fdopen(_protocol_fd, "w")
sys.stdout = _protocol  # for the hello; stderr during setup: optimize's workers print too

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy_idiomatic_peer as numpy_peer  # noqa: E402
import sluice_peer  # noqa: E402
from numpy_peer import BatchOps  # noqa: E402

# What this script implements: its line in peers/ops.txt.
SUPPORTED = sluice_peer.implements(__file__)


class Element:
    """Sample i of the LitData set: element i's fields (litdata.optimize's
    fn). An object that carries the arrays, since optimize's worker process
    may start afresh and see no global this process filled."""

    def __init__(self, elements):
        self.elements = elements

    def __call__(self, i):
        return {name: a[i] for name, a in self.elements.items()}


def write_chunks(plan, out):
    """The export's elements as LitData chunks in out; returns the ops left to
    run per batch (pack_tokens is done here) and the elements."""
    from litdata import optimize

    elements, ops = numpy_peer.stored_elements(plan)
    count = plan.raw["dataset_size"]
    optimize(fn=Element(elements), inputs=list(range(count)), output_dir=out, chunk_bytes="64MB", num_workers=1)
    return ops, elements


def make_batches(plan, options):
    sys.stdout = sys.stderr
    from litdata import StreamingDataset

    chunks = os.path.join(plan.dir, "litdata-%d" % os.getpid())
    atexit.register(shutil.rmtree, chunks, True)
    ops, elements = write_chunks(plan, chunks)
    names = list(elements)
    # Setup is done, its worker processes gone: the protocol gets stdout back.
    sys.stdout = _protocol
    dataset = StreamingDataset(chunks)
    count = plan.raw["dataset_size"]
    if len(dataset) != count:
        raise SystemExit("the LitData set has %d samples, the plan %d" % (len(dataset), count))
    for i in sorted({0, count // 2, count - 1}):
        if not all(np.array_equal(np.asarray(dataset[i][n]), elements[n][i]) for n in names):
            raise SystemExit("LitData's sample %d is not element %d" % (i, i))

    run_ops = BatchOps(plan, ops)

    def batches():
        for i in range(len(plan.batches)):
            epoch = plan.batches[i]["epoch"]
            ids = plan.batch_ids(i)
            samples = [dataset[int(k)] for k in ids]
            fields = {name: np.stack([np.asarray(s[name]) for s in samples]) for name in names}
            yield run_ops(fields, epoch, ids, batch=i)

    return batches()


if __name__ == "__main__":
    from importlib.metadata import version

    sluice_peer.main(
        "litdata", "litdata %s (torch %s)" % (version("litdata"), version("torch")), make_batches, SUPPORTED
    )

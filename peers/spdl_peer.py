"""peer:spdl: the scenario's pipeline written the way an SPDL user writes it
(Meta's Scalable and Performant Data Loading, spdl.pipeline): a
PipelineBuilder whose source is an epoch's exported element order,
.aggregate(batch_size) to cut it into batches of ids, one .pipe stage that
loads a batch (gathers its rows from the in-memory source fields) and one
that applies the plan's ops to it, each run by SPDL's thread pool with
--workers concurrent tasks (output_order="input", so batches come out in the
exported order), then .add_sink(); iterated with `for batch in pipeline`
inside pipeline.auto_stop().

The ops are peers/numpy_peer.py's (numpy, vectorized over the batch), so
the arithmetic is sluice's, bitwise. One pipeline per epoch, as an SPDL user
builds one per epoch of a shuffled order: aggregate would otherwise join an
epoch's short last batch with the next epoch's first elements. Each epoch's
pipeline is built once the plan comes (batch 0's time) and started when its first batch is
asked for, so SPDL's thread start-up counts in that batch, as a user pays it.
"""

import os
import sys

import numpy as np
from spdl.pipeline import PipelineBuilder

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy_idiomatic_peer as numpy_peer
import sluice_peer
from numpy_peer import BatchOps

# What this script implements: its line in peers/ops.txt.
SUPPORTED = sluice_peer.implements(__file__)


def build_epoch(plan, sources, epoch, batches, workers):
    """SPDL's pipeline over epoch's batches (consecutive cuts of its order)."""
    start = batches[0]["offset"]
    stop = batches[-1]["offset"] + batches[-1]["rows"]
    order = plan.order(epoch)[start:stop]
    concurrency = max(1, workers)

    def load(ids):
        ids = np.asarray(ids, dtype=np.int64)
        fields, ops = numpy_peer.gather(plan, sources, ids)
        return ids, fields, ops

    def transform(loaded):
        ids, fields, ops = loaded
        # Two threads run this stage ahead of the sink: buffers of its own.
        return BatchOps(plan, ops, writable=True)(fields, epoch, ids)

    return (
        PipelineBuilder()
        .add_source(order.tolist())
        .aggregate(plan.batch_size, drop_last=False)
        .pipe(load, concurrency=concurrency, output_order="input", name="load")
        .pipe(transform, concurrency=concurrency, output_order="input", name="transform")
        .add_sink(2)
        .build(num_threads=concurrency)
    )


def make_batches(plan, options):
    sources = {f["name"]: plan.load_source(f["name"]) for f in plan.source_fields}
    pipelines = [
        build_epoch(plan, sources, epoch, batches, options.workers)
        for epoch, batches in sorted(sluice_peer.epoch_batches(plan).items())
    ]

    def batches():
        for pipeline in pipelines:
            with pipeline.auto_stop():
                yield from pipeline

    return batches()


if __name__ == "__main__":
    from importlib.metadata import version

    sluice_peer.main("spdl", "spdl " + version("spdl"), make_batches, SUPPORTED)

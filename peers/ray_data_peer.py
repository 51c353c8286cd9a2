"""peer:ray-data: the scenario's pipeline written the way a Ray Data user
writes it: a local Ray cluster limited to this machine's CPUs, the source
fields put in Ray's object store, each epoch's exported element order made a
dataset with ray.data.from_numpy, .map_batches(fn, batch_size=,
batch_format="numpy") whose fn gathers the batch's rows from the object
store and applies the plan's ops, and .iter_batches(batch_size=,
batch_format="numpy") in order (DataContext.execution_options.preserve_order).

The ops are peers/numpy_peer.py's (numpy, vectorized over the batch), so the
arithmetic is sluice's, bitwise. Ray and its worker processes start before the
hello (ray.init, then one task on each worker); each epoch's dataset is
executed when its first batch is asked for, so Ray Data's planning and task
launches count in that batch, as a user pays them. One dataset per epoch: a
dataset over every epoch's order would cut an epoch's short last batch
together with the next epoch's first elements.

Ray's blocks are Arrow tables with one tensor column per field, and
iter_batches joins map_batches' outputs into blocks before it cuts them
again: a field's width must be the same in every batch, so the ops that make
a batch's width depend on its data (pad_to_multiple, attention_mask) are not
declared.
"""

import os
import sys

# Ray's processes inherit the peer's stdout; the protocol owns it. Everything
# but the protocol goes to stderr.
_protocol_fd = os.dup(1)
os.dup2(2, 1)
sys.stdout = os.fdopen(_protocol_fd, "w")

import numpy as np  # noqa: E402
import ray  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy_idiomatic_peer as numpy_peer  # noqa: E402
import sluice_peer  # noqa: E402
from numpy_peer import BatchOps  # noqa: E402

# What this script implements: its line in peers/ops.txt.
SUPPORTED = sluice_peer.implements(__file__)


def start_ray(cpus):
    ray.init(
        num_cpus=cpus,
        include_dashboard=False,
        log_to_driver=False,
        configure_logging=False,
        object_store_memory=512 * 1024 * 1024,
    )
    ctx = ray.data.DataContext.get_current()
    ctx.execution_options.preserve_order = True
    ctx.enable_progress_bars = False
    ctx.print_on_execution_start = False

    @ray.remote
    def ready():
        return os.getpid()

    # Starts the worker processes in batch 0's time (a warmup batch).
    ray.get([ready.remote() for _ in range(cpus)])


def make_batches(plan, options):
    cpus = options.workers or os.cpu_count() or 1
    start_ray(cpus)
    refs = {f["name"]: ray.put(plan.load_source(f["name"])) for f in plan.source_fields}
    epochs = sorted(sluice_peer.epoch_batches(plan).items())

    def transform(batch, epoch):
        ids = batch["data"].astype(np.int64)
        sources = {name: ray.get(ref) for name, ref in refs.items()}
        fields, ops = numpy_peer.gather(plan, sources, ids)
        # A Ray task's batch leaves with its result: buffers of its own.
        return BatchOps(plan, ops, writable=True)(fields, epoch, ids)

    def batches():
        for epoch, batches in epochs:
            start = batches[0]["offset"]
            stop = batches[-1]["offset"] + batches[-1]["rows"]
            ds = ray.data.from_numpy(plan.order(epoch)[start:stop])
            ds = ds.map_batches(transform, fn_kwargs={"epoch": epoch}, batch_size=plan.batch_size, batch_format="numpy")
            yield from ds.iter_batches(batch_size=plan.batch_size, batch_format="numpy")

    return batches()


if __name__ == "__main__":
    from importlib.metadata import version

    sluice_peer.main("ray-data", "ray " + version("ray"), make_batches, SUPPORTED)

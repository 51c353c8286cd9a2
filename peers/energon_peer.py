"""peer:energon: the scenario's pipeline as a Megatron Energon user writes a
loader over a data set of their own:

- setup, once the plan comes (in batch 0's time, a warmup batch, never
  ranked): the export written as a WebDataset
  (tar shards, one sample per element, each source field an `.npy` member;
  peers/webdataset_peer.py's writing, pack_tokens done there), then made an
  Energon data set as `energon prepare` makes one, with its programmatic
  equivalent (`BaseWebdatasetFactory.prepare_dataset`, Energon's "Programmatic
  Data Preparation"): the `.nv-meta` folder with its index, and a
  `dataset.yaml` naming `CrudeWebdataset` (the "Crude sample" choice of
  `energon prepare`), whose samples a cooker in the task encoder turns into
  a Sample of the user's own type;
- per epoch, `get_val_dataset(path, split_part=..., batch_size=...,
  worker_config=WorkerConfig(rank=0, world_size=1, num_workers=0),
  task_encoder=...)` and `get_loader`: Energon's validation recipe, which
  reads its split's shards front to back with no shuffling and batches with
  the task encoder's default `batch` (Energon's `generic_batch`, tensors
  stacked);
- the plan's ops on each batch (numpy_idiomatic_peer's functions, as the
  other storage peers: the stacked tensors are viewed as numpy arrays).

Energon reads in an order of its own choosing: its training loader shuffles
shards and samples with its own seeded generators, and no part of it takes
a sampler or a list of indices. Its validation loader is the one that keeps
the order on disk. So, as for WebDataset, the exported order is enforced in
the writing: each epoch's elements are written in that epoch's order to
shards of their own (e<E>-<n>.tar), and each epoch is a split part of the
data set ("e<E>"), read by get_val_dataset. Each sample carries its element
id (`id.cls`), from which the batch's exported decisions are looked up.

It runs on PyTorch 2 (Energon needs torch 2), in .venv-torch. Energon's
preparation prints on stdout, which the protocol owns: the peer points
stdout at stderr for the setup and speaks the protocol on a duplicate of the
original after it.
"""

import os
import sys

_protocol_fd = os.dup(1)
os.dup2(2, 1)
_protocol = os.fdopen(_protocol_fd, "w")
sys.stdout = _protocol  # for the hello; stderr during setup: Energon's preparation prints

import numpy as np  # noqa: E402
import torch  # noqa: E402
from megatron.energon import (  # noqa: E402
    Cooker,
    DefaultTaskEncoder,
    Sample,
    WorkerConfig,
    basic_sample_keys,
    edataclass,
    get_loader,
    get_val_dataset,
    stateless,
)
from megatron.energon.flavors import BaseWebdatasetFactory  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sluice_peer  # noqa: E402
import webdataset_peer  # noqa: E402
from numpy_peer import BatchOps  # noqa: E402

# What this script implements: its line in peers/ops.txt.
SUPPORTED = sluice_peer.implements(__file__)
# What dataset.yaml says: Energon's crude sample type, cooked in the task
# encoder (the data set's fields are the scenario's, not one of Energon's
# predefined sample types with a field map).
DATASET_YAML = "__module__: megatron.energon\n__class__: CrudeWebdataset\n"


@edataclass
class ExportSample(Sample):
    """One element: its id and its source fields as tensors. Energon's
    default batching stacks each tensor of the `fields` dict across the
    batch and lists the ids."""

    id: int
    fields: dict


@stateless
def cook(crude):
    """A crude sample (the decoded tar members of one element) as an
    ExportSample. `torch.from_numpy` shares the decoded array's memory."""
    fields = {key[: -len(".npy")]: torch.from_numpy(a) for key, a in crude.items() if key.endswith(".npy")}
    return ExportSample(**basic_sample_keys(crude), id=crude["id.cls"], fields=fields)


class ExportTaskEncoder(DefaultTaskEncoder):
    """The task encoder: the cooker, and Energon's defaults for the rest."""

    cookers = [Cooker(cook)]


def prepare(directory, epochs):
    """What `energon prepare` does to the shards in directory, without its
    questions: the index and split parts (one per epoch, its shards in
    order, no shuffling), then dataset.yaml."""
    tars = sorted(f for f in os.listdir(directory) if f.endswith(".tar"))
    # Energon brace-expands each pattern before it compiles it as a regular
    # expression, and brace expansion takes a backslash as an escape, so
    # the patterns use character classes.
    BaseWebdatasetFactory.prepare_dataset(
        directory,
        tars,
        split_parts_patterns=[("e%d" % epoch, "e%d-[0-9]+[.]tar$" % epoch) for epoch, _ in epochs],
        shuffle_seed=None,
        workers=1,
    )
    with open(os.path.join(directory, ".nv-meta", "dataset.yaml"), "w") as f:
        f.write(DATASET_YAML)


def make_batches(plan, options):
    sys.stdout = sys.stderr
    pack, ops = webdataset_peer.leading_pack(plan.ops)
    epochs = webdataset_peer.exported_epochs(plan)
    path = webdataset_peer.write_shards(
        plan, pack, epochs, name="energon", finish=lambda directory: prepare(directory, epochs)
    )
    worker_config = WorkerConfig(rank=0, world_size=1, num_workers=0)
    loaders = []
    for epoch, order in epochs:
        dataset = get_val_dataset(
            path,
            split_part="e%d" % epoch,
            worker_config=worker_config,
            batch_size=plan.batch_size,
            task_encoder=ExportTaskEncoder(),
        )
        # A split that Energon reads whole is the epoch's batches, and no
        # more: a stale or partial data set is refused here, not found out
        # as a mismatch.
        want = -(-len(order) // plan.batch_size)
        if len(dataset) != want:
            raise SystemExit("Energon's split e%d has %d batches, the plan's epoch %d" % (epoch, len(dataset), want))
        loaders.append((epoch, get_loader(dataset)))
    # Setup is done: the protocol gets stdout back.
    sys.stdout = _protocol
    return batches_of(plan, ops, loaders)


def batches_of(plan, ops, loaders):
    run_ops = BatchOps(plan, ops)
    for epoch, loader in loaders:
        for batch in loader:
            fields = {name: t.numpy() for name, t in batch.fields.items()}
            yield run_ops(fields, epoch, np.asarray(batch.id, dtype=np.int64))


if __name__ == "__main__":
    from importlib.metadata import version

    sluice_peer.main(
        "energon",
        "megatron-energon %s (torch %s)" % (version("megatron-energon"), version("torch")),
        make_batches,
        SUPPORTED,
    )

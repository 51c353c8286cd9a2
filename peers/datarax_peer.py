"""peer:datarax and peer:datarax-scan: the scenario's pipeline written the way
a Datarax user writes it: a random-access DataSourceModule (here, over the
exported element order, with each element's exported decisions riding along
as fields), one ElementOperator per op (a per-element function that Datarax
vmaps over the batch), and a datarax.Pipeline(source, stages, batch_size)
that runs them.

peer:datarax iterates the pipeline (`for batch in pipeline`, Datarax's
compiled iteration session: one jitted step per batch). peer:datarax-scan runs
all the plan's batches in one `Pipeline.scan` call (one XLA graph, compiled by
a first identical call before the hello, as Datarax's own benchmark warms it
up); scan cannot hand out a batch before the whole call returns, so its
first batch's latency is the whole call and the others are slices of its
output: sluice compares it by throughput, with that first-batch time, in a
table of its own, never per batch.

A Datarax pipeline's batches all have batch_size rows: its sources wrap
around at their end. The plan's short last batch of an epoch is therefore
computed as a full batch whose tail wraps around to the start of the epoch's
order, as Datarax's MemorySource would, and the peer keeps its first rows.

The ops are peers/jax_ops.py's (computed as sluice computes them, each
result fenced with lax.optimization_barrier so that XLA cannot contract a
multiply and an add into one fused multiply-add); x64 is on so that i64
fields stay i64.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sluice_peer  # noqa: E402
import xla_cap  # noqa: E402

os.environ.setdefault("JAX_PLATFORMS", "cpu")
OPTIONS = sluice_peer.parser("datarax")
OPTIONS.add_argument("--scan", action="store_true", help="every batch of the plan in one Pipeline.scan call")
options = OPTIONS.parse_args()
# XLA may contract a multiply and an add into one fused multiply-add (which
# rounds once where sluice rounds twice) even across
# lax.optimization_barrier; for plans where it can, the peer caps XLA's code
# at AVX, the level before FMA instructions (peers/xla_cap.py).
CAP = xla_cap.apply(options.export_dir) if options.export_dir else ""

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from flax import nnx  # noqa: E402
from jax import lax  # noqa: E402

jax.config.update("jax_enable_x64", True)

from datarax import Pipeline  # noqa: E402
from datarax.core.config import ElementOperatorConfig, StructuralConfig  # noqa: E402
from datarax.core.data_source import DataSourceModule  # noqa: E402
from datarax.operators.element_operator import ElementOperator  # noqa: E402

import jax_ops  # noqa: E402

SUPPORTED = {"pack_tokens", "bag_offsets", "rebatch"} | jax_ops.MOVEMENT | jax_ops.ARITHMETIC
RANDOM = jax_ops.RANDOM
ID = "_id"


def decision_field(op):
    return "_decisions_op%d" % op["index"]


def slots(plan):
    """Each plan batch as batch_size (epoch, element id) slots: its rows, then,
    for an epoch's short last batch, the epoch's order again from its start
    (Datarax's sources wrap around)."""
    ids, epochs = [], []
    for b in plan.batches:
        order = plan.order(b["epoch"])
        ids.append(order[(b["offset"] + np.arange(plan.batch_size)) % len(order)])
        epochs.append(np.full(plan.batch_size, b["epoch"]))
    return np.concatenate(ids).astype(np.int64), np.concatenate(epochs)


class ExportedOrderSource(DataSourceModule):
    """A random-access Datarax source: slot k of the plan is element ids[k] of
    epoch epochs[k], read from the in-memory source fields, with its exported
    decisions for each random op (a table per op: the plan's epochs by
    element id)."""

    def __init__(self, plan, pack, *, rngs=None):
        super().__init__(StructuralConfig(), rngs=rngs, name="ExportedOrderSource")
        ids, epochs = slots(plan)
        present = sorted(set(epochs.tolist()))
        row = {e: r for r, e in enumerate(present)}
        self.length = len(ids)
        self.pack = pack
        self.fields = nnx.data({f["name"]: jnp.asarray(plan.load_source(f["name"])) for f in plan.source_fields})
        self.slot_ids = nnx.data(jnp.asarray(ids))
        self.slot_rows = nnx.data(jnp.asarray(np.array([row[e] for e in epochs.tolist()], dtype=np.int32)))
        self.decisions = nnx.data({decision_field(op): jnp.asarray(np.stack([plan.decisions(op, e) for e in present]))
                                   for op in plan.ops if op["kind"] in RANDOM})

    def __len__(self):
        return self.length

    def supports_indexed_access(self):
        return True

    def get_batch_at(self, start, size, key=None):
        pos = jnp.asarray(start, jnp.int64) + jnp.arange(size, dtype=jnp.int64)
        ids = jnp.take(self.slot_ids, pos, mode="wrap")
        rows = jnp.take(self.slot_rows, pos, mode="wrap")
        out = {ID: ids}
        for name, data in self.fields.items():
            if self.pack is not None and name == self.pack["field"]:
                p = self.pack["params"]
                idx = ids[:, None] * p["seq_len"] + jnp.arange(p["seq_len"], dtype=ids.dtype)[None, :]
                n = data.shape[0]
                out[name] = jnp.where(idx < n, jnp.take(data, jnp.minimum(idx, n - 1)),
                                      jnp.asarray(p["pad_id"], data.dtype))
            else:
                out[name] = jnp.take(data, ids, axis=0)
        for name, table in self.decisions.items():
            out[name] = table[rows, ids]
        return out


def element_fn(op):
    """The op as a Datarax element function fn(element, key) -> element; the
    key is unused: the decisions are the exported ones, in the element."""
    apply = jax_ops.element_op(op)
    name, decisions = op["field"], decision_field(op) if op["kind"] in RANDOM else None

    def fn(element, key):
        del key
        data = dict(element.data)
        data[name] = lax.optimization_barrier(apply(data[name], data[decisions] if decisions else None))
        return element.replace(data=data)

    return fn


class BagOffsets(nnx.Module):
    """bag_offsets, a batch stage: each column's running count of present ids
    down the batch, as a new field."""

    def __init__(self, op):
        self.field, self.out = op["field"], op["params"]["out"]

    def __call__(self, batch):
        batch = dict(batch)
        batch[self.out] = jax_ops.bag_offsets(batch[self.field])
        return batch


class DropBookkeeping(nnx.Module):
    """The last stage: the batch without the element ids and decisions."""

    def __call__(self, batch):
        return {k: v for k, v in batch.items() if not k.startswith("_")}


def build(plan):
    ops = list(plan.ops)
    pack = ops.pop(0) if ops and ops[0]["kind"] == "pack_tokens" else None
    rngs = nnx.Rngs(int(plan.raw["seed"]) & 0x7FFFFFFF)  # the ops draw nothing: the decisions are exported
    stages = []
    for op in ops:
        if op["kind"] == "rebatch":
            continue  # splits a batch into micro-batches and joins them back: the same bytes
        if op["kind"] == "bag_offsets":
            stages.append(BagOffsets(op))
        else:
            stages.append(ElementOperator(ElementOperatorConfig(stochastic=False), fn=element_fn(op), rngs=rngs))
    stages.append(DropBookkeeping())
    return Pipeline(source=ExportedOrderSource(plan, pack, rngs=rngs), stages=stages, batch_size=plan.batch_size,
                    rngs=rngs)


def host(plan, i, batch):
    rows = plan.batches[i]["rows"]
    return {k: np.asarray(v)[:rows] for k, v in batch.items()}


def iterate(plan, pipeline):
    for i, batch in enumerate(pipeline):
        yield host(plan, i, batch)


def _keep_batch(batch):
    return batch


class ScanBatches:
    """Datarax's scan mode: one Pipeline.scan over every batch of the plan.
    The call is made once before the hello to compile it (Datarax's own
    warmup), then again at the first batch, whose latency is therefore the
    whole call (no batch is out before it returns); the others are slices of
    its output. sluice compares it by throughput, with its first-batch time,
    never per batch."""

    def __init__(self, plan, pipeline):
        self.plan, self.pipeline, self.n = plan, pipeline, len(plan.batches)
        jax.block_until_ready(pipeline.scan(_keep_batch, length=self.n))
        pipeline._position[...] = jnp.int32(0)
        self.stacked = None
        self.i = 0

    def __iter__(self):
        return self

    def __next__(self):
        if self.stacked is None:
            out = self.pipeline.scan(_keep_batch, length=self.n)
            self.stacked = {k: np.asarray(v) for k, v in out.items()}
        i = self.i
        self.i += 1
        rows = self.plan.batches[i]["rows"]
        return {k: v[i, :rows] for k, v in self.stacked.items()}


def make_batches(plan, options):
    pipeline = build(plan)
    if options.scan:
        return ScanBatches(plan, pipeline)
    return iterate(plan, pipeline)


def main():
    from importlib.metadata import version

    name = "datarax-scan" if options.scan else "datarax"
    if options.describe:
        sluice_peer.describe(name, SUPPORTED, "all-at-once" if options.scan else "per-batch")
        return
    plan = sluice_peer.Plan(options.export_dir)
    plan.require(SUPPORTED)
    framework = "datarax %s (jax %s, %s)" % (version("datarax"), jax.__version__, CAP)
    sluice_peer.serve(name, framework, plan, make_batches(plan, options), options)


if __name__ == "__main__":
    main()

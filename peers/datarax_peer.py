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
up); scan cannot hand out a batch before the whole call returns, so each
batch's latency is the call's time divided by the number of batches, as
Datarax's own benchmark attributes it.

A Datarax pipeline's batches all have batch_size rows: its sources wrap
around at their end. The plan's short last batch of an epoch is therefore
computed as a full batch whose tail wraps around to the start of the epoch's
order, as Datarax's MemorySource would, and the peer keeps its first rows.

It computes what sluice computes, not the shortest idiom where the two round
differently: normalize is (x - mean) * inv_std with inv_std = float32(1 / std);
clip is two comparisons, so NaN passes through as in sluice; float32
throughout. Each op's result passes through lax.optimization_barrier so that
XLA cannot contract a multiply and a following add into one fused
multiply-add, which rounds once where sluice rounds twice; and x64 is on so
that i64 fields stay i64.
"""
import os
import sys

os.environ.setdefault("JAX_PLATFORMS", "cpu")

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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sluice_peer  # noqa: E402

SUPPORTED = {"pack_tokens", "normalize", "scale", "clip", "add", "multiply", "random_crop", "random_hflip",
             "random_crop3d", "random_flip3d", "one_hot", "pad_tokens", "hash_ids", "bag_offsets", "rebatch"}
RANDOM = ("random_crop", "random_hflip", "random_crop3d", "random_flip3d")
EPOCH, ID = "_epoch", "_id"


def decision_field(op):
    return "_decisions_op%d" % op["index"]


def slots(plan):
    """Each plan batch as batch_size (epoch, element id) slots: its rows, then,
    for an epoch's short last batch, the epoch's order again from its start
    (Datarax's sources wrap around)."""
    ids, epochs = [], []
    for i, b in enumerate(plan.batches):
        order = plan.order(b["epoch"])
        pos = (b["offset"] + np.arange(plan.batch_size)) % len(order)
        ids.append(order[pos])
        epochs.append(np.full(plan.batch_size, b["epoch"], dtype=np.int32))
    return np.concatenate(ids).astype(np.int64), np.concatenate(epochs)


class ExportedOrderSource(DataSourceModule):
    """A random-access Datarax source: slot k of the plan is element ids[k] of
    epoch epochs[k], read from the in-memory source fields, with its exported
    decisions for each random op."""

    def __init__(self, plan, pack, *, rngs=None):
        super().__init__(StructuralConfig(), rngs=rngs, name="ExportedOrderSource")
        ids, epochs = slots(plan)
        self.length = len(ids)
        self.pack = pack
        self.fields = nnx.data({f["name"]: jnp.asarray(plan.load_source(f["name"])) for f in plan.source_fields})
        self.slot_ids = nnx.data(jnp.asarray(ids))
        self.slot_epochs = nnx.data(jnp.asarray(epochs))
        n_epochs = int(epochs.max()) + 1
        self.decisions = nnx.data({
            decision_field(op): jnp.asarray(np.stack([plan.decisions(op, e) if e in set(epochs.tolist())
                                                      else np.zeros_like(plan.decisions(op, int(epochs[0])))
                                                      for e in range(n_epochs)]))
            for op in plan.ops if op["kind"] in RANDOM})

    def __len__(self):
        return self.length

    def supports_indexed_access(self):
        return True

    def get_batch_at(self, start, size, key=None):
        pos = jnp.asarray(start, jnp.int64) + jnp.arange(size, dtype=jnp.int64)
        ids = jnp.take(self.slot_ids, pos, mode="wrap")
        epochs = jnp.take(self.slot_epochs, pos, mode="wrap")
        out = {ID: ids, EPOCH: epochs}
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
            out[name] = table[epochs, ids]
        return out


def element_fn(op):
    """The op as a Datarax element function fn(element, key) -> element; the
    key is unused: the decisions are the exported ones, in the element."""
    kind, p, name = op["kind"], op["params"], op["field"]

    def apply(x, data):
        if kind == "normalize":
            mean = jnp.asarray(np.asarray(p["mean"], dtype=np.float32))
            inv_std = jnp.asarray(np.asarray(p["inv_std"], dtype=np.float32))
            if p["channels"] == 1:
                mean, inv_std = mean[0], inv_std[0]
            return lax.optimization_barrier(x.astype(jnp.float32) - mean) * inv_std
        if kind in ("scale", "multiply"):
            return x * jnp.float32(p["value"])
        if kind == "add":
            return x + jnp.float32(p["value"])
        if kind == "clip":
            lo, hi = jnp.float32(p["lo"]), jnp.float32(p["hi"])
            return jnp.where(x < lo, lo, jnp.where(x > hi, hi, x))
        if kind == "random_crop":
            d = data[decision_field(op)]
            ch, cw = p["crop_h"], p["crop_w"]
            h, w = x.shape[0], x.shape[1]
            top, left = (h - ch) // 2, (w - cw) // 2
            rest = x.shape[2:]
            start = (d[0], d[1]) + (jnp.zeros((), d.dtype),) * len(rest)
            crop = lax.dynamic_slice(x, start, (ch, cw) + rest)
            return jnp.pad(crop, [(top, h - ch - top), (left, w - cw - left)] + [(0, 0)] * len(rest))
        if kind == "random_hflip":
            return jnp.where(data[decision_field(op)][0] != 0, x[:, ::-1], x)
        if kind == "random_crop3d":
            d = data[decision_field(op)]
            return lax.dynamic_slice(x, (d[0], d[1], d[2]), (p["d"], p["h"], p["w"]))
        if kind == "random_flip3d":
            axes = data[decision_field(op)][0]
            for bit, axis in ((1, 0), (2, 1), (4, 2)):
                x = jnp.where((axes & bit) != 0, jnp.flip(x, axis=axis), x)
            return x
        if kind == "one_hot":
            return (x == jnp.arange(p["classes"], dtype=x.dtype)).astype(jnp.float32)
        if kind == "pad_tokens":
            length, end = p["length"], p["end_id"]
            capacity = x.shape[0]
            is_end = x == end
            content = jnp.where(is_end.any(), jnp.argmax(is_end), capacity)
            keep = jnp.minimum(content, length - 1)
            if capacity < length:
                x = jnp.pad(x, (0, length - capacity), constant_values=p["pad_id"])
            x = x[:length]
            pos = jnp.arange(length)
            return jnp.where(pos < keep, x, jnp.where(pos == keep, jnp.int32(end), jnp.int32(p["pad_id"])))
        if kind == "hash_ids":
            v = x.astype(jnp.uint64) + jnp.uint64(0x9E3779B97F4A7C15)
            v = (v ^ (v >> jnp.uint64(30))) * jnp.uint64(0xBF58476D1CE4E5B9)
            v = (v ^ (v >> jnp.uint64(27))) * jnp.uint64(0x94D049BB133111EB)
            v = (v ^ (v >> jnp.uint64(31))) >> jnp.uint64(32)
            sizes = jnp.asarray(np.asarray(p["sizes"], dtype=np.uint64))
            return jnp.where(x < 0, jnp.int64(-1), (v % sizes).astype(jnp.int64))
        raise ValueError("no element function for %s" % kind)

    def fn(element, key):
        del key
        data = dict(element.data)
        data[name] = lax.optimization_barrier(apply(data[name], data))
        return element.replace(data=data)

    return fn


class BagOffsets(nnx.Module):
    """bag_offsets, a batch stage: each column's running count of present ids
    down the batch, as a new field."""

    def __init__(self, op):
        self.field, self.out = op["field"], op["params"]["out"]

    def __call__(self, batch):
        batch = dict(batch)
        batch[self.out] = jnp.cumsum((batch[self.field] >= 0).astype(jnp.int64), axis=0)
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
    warmup), then again, timed, at the first batch; each batch is reported
    with an equal share of that call's time."""

    def __init__(self, plan, pipeline):
        self.plan, self.pipeline, self.n = plan, pipeline, len(plan.batches)
        jax.block_until_ready(pipeline.scan(_keep_batch, length=self.n))
        pipeline._position[...] = jnp.int32(0)
        self.stacked = None
        self.i = 0
        self.share_ns = 0

    def __iter__(self):
        return self

    def __next__(self):
        import time

        if self.stacked is None:
            t0 = time.perf_counter_ns()
            out = self.pipeline.scan(_keep_batch, length=self.n)
            self.stacked = {k: np.asarray(v) for k, v in out.items()}
            self.share_ns = (time.perf_counter_ns() - t0) // self.n
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
    import argparse
    from importlib.metadata import version

    parser = argparse.ArgumentParser(prog="datarax")
    parser.add_argument("export_dir")
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--scan", action="store_true")
    options = parser.parse_args()
    plan = sluice_peer.Plan(options.export_dir)
    plan.require(SUPPORTED)
    name = "datarax-scan" if options.scan else "datarax"
    framework = "datarax %s (jax %s)" % (version("datarax"), jax.__version__)
    batches = make_batches(plan, options)
    if options.scan:
        sluice_peer.serve(name, framework, plan, batches, latency=lambda i: batches.share_ns)
    else:
        sluice_peer.serve(name, framework, plan, batches)


if __name__ == "__main__":
    main()

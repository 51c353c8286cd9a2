"""peer:jax and peer:jax-idiomatic: the scenario's pipeline in JAX on the CPU.

The tuned form is what JAX's experts write: the source fields and the
epoch's decisions as device arrays, each op a function of one element
(peers/jax_ops.py) vmapped over the batch, and one jax.jit-compiled batch
function that gathers the batch's elements (jnp.take) and applies the ops;
every batch shape of the plan (an epoch's short last batch has its own) is
compiled ahead of time (jit(...).lower(...).compile()) in batch 0's time, so
no compilation happens among the batches. The idiomatic form is what JAX's
tutorials show first: the same jax.numpy functions called eagerly on the
batch, without jit, each operation dispatched on its own.

The batch is a numpy array (np.asarray after block_until_ready) before the
clock stops. The ops compute what sluice computes (peers/jax_ops.py); x64 is
on so i64 fields stay i64. XLA fuses the jitted function and may contract a
multiply and an add into one fused multiply-add, which rounds once where
sluice rounds twice: for plans where that can happen, and only for them, the
peer caps XLA's code at AVX (peers/xla_cap.py) and says so in its framework
string. Eager dispatch runs each operation alone, so the idiomatic form
needs no cap.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sluice_peer
import xla_cap

os.environ.setdefault("JAX_PLATFORMS", "cpu")
OPTIONS = sluice_peer.parser("jax")
OPTIONS.add_argument("--idiomatic", action="store_true", help="jax.numpy ops dispatched eagerly, no jit")
options = OPTIONS.parse_args()
CAP = "eager, no fusion" if options.idiomatic else xla_cap.POLICY

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

# sluice's i64 fields stay i64 (JAX would make them i32 otherwise).
jax.config.update("jax_enable_x64", True)

import jax_ops  # noqa: E402

# What this script implements: its line in peers/ops.txt. How, beyond
# jax_ops' element ops: PC-5's affine and dropout (its mask recomputed from
# the keying the plan documents, jax_ops.dropout_keep; the identity in eval
# mode), IO-4's trig_rounds and a cache of the peer's own (Cache, below),
# and PC-2's and PC-4's sub-op graphs from the exported picks.
SUPPORTED = sluice_peer.implements(__file__)


def noise(plan, op, x, ids, epoch):
    """Gaussian noise from JAX's own generator, keyed per element as a JAX
    user keys it (seed, op, epoch, element): not sluice's values, so sluice
    checks it statistically."""
    base = jax.random.fold_in(
        jax.random.fold_in(jax.random.PRNGKey(int(plan.raw["seed"]) & 0x7FFFFFFF), op["op_id"]), epoch
    )
    draws = jax.vmap(lambda i: jax.random.normal(jax.random.fold_in(base, i), x.shape[1:], jnp.float32))(ids)
    return x + lax.optimization_barrier(jnp.float32(op["params"]["sigma"]) * draws)


def width_of(plan, lengths, ids):
    """pad_to_multiple's width for a batch, on the host: the smallest multiple
    that holds its longest sequence, at most the capacity. A jitted
    function's shapes are static, so the batch function is compiled for
    each width the plan has (at most capacity / multiple of them)."""
    op = next((op for op in plan.ops if op["kind"] == "pad_to_multiple"), None)
    if op is None:
        return None
    capacity = next(f for f in plan.source_fields if f["name"] == op["field"])["shape"][0]
    longest = min(max(int(lengths[ids].max(initial=0)), 0), capacity)
    m = op["params"]["multiple"]
    return min((longest + m - 1) // m * m, capacity)


def build(plan, ops=None):
    """The batch function of ops (default: the plan's): (sources, decisions,
    ids, ...) -> dict of arrays, jitted by the tuned form and called as it is
    by the idiomatic one."""
    ops = list(plan.ops if ops is None else ops)
    pack = ops.pop(0) if ops and ops[0]["kind"] == "pack_tokens" else None
    # rebatch splits a batch into micro-batches and joins them back, and
    # bucket_by_length is in the exported order already: the same bytes.
    ops = [op for op in ops if op["kind"] not in ("rebatch", "bucket_by_length")]

    def batch_fn(sources, decisions, ids, epoch, mixing, width):
        out = {}
        for name, data in sources.items():
            if pack is not None and name == pack["field"]:
                p = pack["params"]
                idx = ids[:, None] * p["seq_len"] + jnp.arange(p["seq_len"], dtype=ids.dtype)[None, :]
                n = data.shape[0]
                out[name] = jnp.where(
                    idx < n, jnp.take(data, jnp.minimum(idx, n - 1)), jnp.asarray(p["pad_id"], data.dtype)
                )
            else:
                out[name] = jnp.take(data, ids, axis=0)
        return run(ops, out, decisions, ids, epoch, mixing, width)

    def run(ops, out, decisions, ids, epoch, mixing, width):
        k = 0
        while k < len(ops):
            op = ops[k]
            name = op["field"]
            k += 1
            if op["kind"] in jax_ops.GRAPHS:
                # Each chain on the whole batch (static shapes), then the
                # rows each pick names (jax_ops.graph_merge).
                a, b, k = jax_ops.sub_ops(ops, k - 1)
                x = out[name]
                ra = run(a, dict(out), decisions, ids, epoch, mixing, width)[name]
                rb = run(b, dict(out), decisions, ids, epoch, mixing, width)[name]
                pick = jnp.take(decisions[op["index"]], ids, axis=0)[:, 0] if op["kind"] in jax_ops.PICKS else None
                out[name] = lax.optimization_barrier(jax_ops.graph_merge(op["kind"], x, ra, rb, pick))
                continue
            if op["kind"] == "bag_offsets":
                out[op["params"]["out"]] = jax_ops.bag_offsets(out[name])
                continue
            if op["kind"] in jax_ops.MIXING:
                jax_ops.mix(op, out, *mixing[op["index"]])
                continue
            if op["kind"] == "gaussian_noise":
                out[name] = lax.optimization_barrier(noise(plan, op, out[name], ids, epoch))
                continue
            if op["kind"] == "dropout":
                if plan.raw.get("mode", "train") != "eval":
                    out[name] = lax.optimization_barrier(
                        jax_ops.dropout(out[name], ids, epoch, int(plan.raw["seed"]), op)
                    )
                continue
            if op["kind"] in ("pad_to_multiple", "attention_mask"):
                p = op["params"]
                x = out[name][:, :width] if op["kind"] == "pad_to_multiple" else out[name]
                w = x.shape[1]
                keep = jax_ops.length_mask(out[p["lengths"]], w)
                if op["kind"] == "pad_to_multiple":
                    out[name] = jnp.where(keep, x, jnp.asarray(p["pad_id"], x.dtype))
                else:
                    out[p["out"]] = keep.astype(jnp.uint8)
                continue
            f = jax_ops.element_op(op)
            if op["kind"] == "resize" and not options.idiomatic:
                # XLA's CPU back end drops optimization barriers before it
                # fuses, and fuses a resize's lerps into the next resize's
                # gathers, which then recompute each source value for each of
                # the four outputs that read it (CV-4's chains ran 5 to 10
                # times slower). A loop's body is a fusion boundary: lax.map
                # over chunks of 8 elements (vmapped within a chunk; 8 the
                # fastest of 1, 8 and the whole batch on CV-4) materializes
                # each resize's output.
                x = lax.map(lambda v, f=f: f(v, None), out[name], batch_size=8)
            elif op["kind"] in jax_ops.RANDOM:
                d = jax.tree.map(lambda a: jnp.take(a, ids, axis=0), decisions[op["index"]])
                x = jax.vmap(f)(out[name], d)
            else:
                x = jax.vmap(lambda x, f=f: f(x, None))(out[name])
            out[name] = lax.optimization_barrier(x)
        return out

    return batch_fn


def cache_index(plan):
    """The plan's cache op's index, or None (a pipeline has at most one)."""
    return next((op["index"] for op in plan.ops if op["kind"] == "cache"), None)


class Cache:
    """The cache op: each element's fields after the ops before it (which
    draw nothing, so they are the same in every epoch), held on the device
    in one array per field indexed by element id. A batch first computes the
    elements no earlier batch met (their ids padded to the batch's rows with
    the first of them, so every call has the batch's shape, and scattered
    into the store, which the call donates), then runs the ops after the
    cache on the store's rows, gathered like source rows. Both functions are
    jitted and compiled for each batch shape in batch 0's time (tuned), or
    called eagerly (idiomatic)."""

    def __init__(self, plan, sources, at, eager):
        self.plan = plan
        before = build(plan, [op for op in plan.ops if op["index"] < at])
        self.after = build(plan, [op for op in plan.ops if op["index"] > at])

        def fill(store, sources, ids):
            out = before(sources, {}, ids, jnp.int64(0), {}, None)
            return {name: store[name].at[ids].set(out[name]) for name in store}

        rows = sorted({b["rows"] for b in plan.batches})
        probe = jax.ShapeDtypeStruct((rows[0],), jnp.int64)
        shapes = jax.eval_shape(lambda s, i: before(s, {}, i, jnp.int64(0), {}, None), sources, probe)
        n = plan.raw["dataset_size"]
        self.store = {name: jnp.zeros((n,) + v.shape[1:], v.dtype) for name, v in shapes.items()}
        self.filled = np.zeros(n, dtype=bool)
        self.sources = sources
        self.eager = eager
        if eager:
            self.fill, self.read = (
                fill,
                lambda store, decisions, ids, epoch, mixing: self.after(store, decisions, ids, epoch, mixing, None),
            )
            return
        first = epoch_decisions(plan, plan.batches[0]["epoch"])
        self.fills, self.reads = {}, {}
        for r in rows:
            ids = jax.ShapeDtypeStruct((r,), jnp.int64)
            k = next(k for k, b in enumerate(plan.batches) if b["rows"] == r)
            self.fills[r] = jax.jit(fill, donate_argnums=0).lower(self.store, sources, ids).compile()
            self.reads[r] = (
                jax.jit(self.after, static_argnums=5)
                .lower(self.store, first, ids, jnp.int64(0), mixing_of(plan, k), None)
                .compile()
            )
        self.fill = lambda store, sources, ids: self.fills[int(ids.shape[0])](store, sources, ids)
        self.read = lambda store, decisions, ids, epoch, mixing: self.reads[int(ids.shape[0])](
            store, decisions, ids, epoch, mixing
        )

    def batch(self, host_ids, decisions, epoch, mixing):
        # The compiled functions take numpy values along (no eager dispatch
        # a batch, as make_batches says); the eager form dispatches as JAX's
        # tutorials do.
        device = jnp.asarray if self.eager else np.asarray
        missing = host_ids[~self.filled[host_ids]]
        if len(missing):
            padded = np.full(len(host_ids), missing[0], dtype=np.int64)
            padded[: len(missing)] = missing
            self.store = self.fill(self.store, self.sources, device(padded))
            self.filled[missing] = True
        epoch = jnp.int64(epoch) if self.eager else np.int64(epoch)
        return self.read(self.store, decisions, device(host_ids), epoch, mixing)


def epoch_decisions(plan, epoch):
    """The epoch's per-element decisions of each op that has them, on the
    device: random_resized_crop's as its plan (jax_ops.resized_crop_plan,
    made on the host once per epoch from the exported boxes)."""
    out = {}
    for op in plan.ops:
        if op["kind"] == "random_resized_crop":
            out[op["index"]] = tuple(
                jnp.asarray(a) for a in jax_ops.resized_crop_plan(plan.decisions(op, epoch), op["params"])
            )
        elif op["kind"] in jax_ops.RANDOM + jax_ops.PICKS:
            out[op["index"]] = jnp.asarray(plan.decisions(op, epoch))
    return out


def mixing_of(plan, i, host=False):
    """Batch i's per-batch decisions and partners for each mixing op: device
    arrays, or (host) numpy arrays for a compiled call to take along."""
    rows = plan.batches[i]["rows"]
    to = np.ascontiguousarray if host else jnp.asarray
    return {
        op["index"]: (to(plan.batch_decisions(op)[i]), to(plan.batch_partners(op)[i][:rows]))
        for op in plan.ops
        if op["kind"] in jax_ops.MIXING
    }


def host_lengths(plan):
    """The lengths field pad_to_multiple reads, on the host, or None."""
    op = next((op for op in plan.ops if op["kind"] == "pad_to_multiple"), None)
    return plan.load_source(op["params"]["lengths"]) if op else None


def make_batches(plan, sources, compiled, eager=None, cache=None):
    decisions = {}
    lengths = host_lengths(plan)
    for i, b in enumerate(plan.batches):
        epoch = b["epoch"]
        if epoch not in decisions:
            decisions = {epoch: epoch_decisions(plan, epoch)}
        host_ids = plan.batch_ids(i)
        width = width_of(plan, lengths, host_ids)
        if cache is not None:
            out = cache.batch(host_ids, decisions[epoch], epoch, mixing_of(plan, i))
        elif eager is not None:
            out = eager(sources, decisions[epoch], jnp.asarray(host_ids), jnp.int64(epoch), mixing_of(plan, i), width)
        else:
            # The ids, the epoch and a mixing op's batch decisions as numpy
            # values: the compiled function takes them to the device inside
            # its one call. jnp.asarray and jnp.int64 would each be an eager
            # dispatch of its own, about
            # 50 us a batch together here (NLP-1's batch: 165 to 178 us
            # against 65 to 101 us, jax 0.10.2).
            out = compiled[(len(host_ids), width)](
                sources, decisions[epoch], host_ids, np.int64(epoch), mixing_of(plan, i, host=True)
            )
        yield {k: np.asarray(v.block_until_ready()) for k, v in out.items()}


def tuned_batches(plan, sources, fn=None):
    """The tuned form's batches: every (batch rows, width) shape of the plan
    compiled before the first batch is made (in batch 0's time, when
    served: the plan comes after the hello), then one compiled call a batch."""
    fn = fn or build(plan)
    first = epoch_decisions(plan, plan.batches[0]["epoch"])
    lengths = host_lengths(plan)
    shapes = {}
    for k, b in enumerate(plan.batches):
        shapes.setdefault((b["rows"], width_of(plan, lengths, plan.batch_ids(k))), k)
    compiled = {}
    for (rows, width), k in sorted(shapes.items(), key=lambda item: (item[0][0], item[0][1] or 0)):
        ids = jax.ShapeDtypeStruct((rows,), jnp.int64)
        compiled[(rows, width)] = (
            jax.jit(fn, static_argnums=5).lower(sources, first, ids, jnp.int64(0), mixing_of(plan, k), width).compile()
        )
    return make_batches(plan, sources, compiled)


def main():
    if options.describe:
        sluice_peer.describe("jax", SUPPORTED, "per-batch")
        return
    framework = "jax %s (%s)" % (jax.__version__, CAP)
    # Everything below depends on the plan, which sluice writes after the
    # hello: it is in batch 0's time (a warmup batch), as start-up.
    plan = sluice_peer.start("jax-idiomatic" if options.idiomatic else "jax", framework, options)
    plan.require(SUPPORTED)
    if not options.idiomatic:
        sluice_peer.log(xla_cap.apply(plan.raw))
    sources = {f["name"]: jnp.asarray(plan.load_source(f["name"])) for f in plan.source_fields}
    fn = build(plan)
    at = cache_index(plan)
    if at is not None:
        # pad_to_multiple's widths and a cache do not meet in any scenario:
        # the cache's functions are compiled for the batches' rows alone.
        batches = make_batches(plan, sources, None, cache=Cache(plan, sources, at, options.idiomatic))
    elif options.idiomatic:
        batches = make_batches(plan, sources, None, eager=fn)
    else:
        # Every (batch rows, width) shape of the plan, compiled before batch
        # 0's arrays (start-up, in its time).
        batches = tuned_batches(plan, sources, fn)
    sluice_peer.serve(plan, batches, options)


if __name__ == "__main__":
    main()

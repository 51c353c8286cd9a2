"""peer:jax and peer:jax-idiomatic: the scenario's pipeline in JAX on the CPU.

The tuned form is what JAX's experts write: the source fields and the
epoch's decisions as device arrays, each op a function of one element
(peers/jax_ops.py) vmapped over the batch, and one jax.jit-compiled batch
function that gathers the batch's elements (jnp.take) and applies the ops;
every batch shape of the plan (an epoch's short last batch has its own) is
compiled ahead of time (jit(...).lower(...).compile()) before the hello, so
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
import sluice_peer  # noqa: E402
import xla_cap  # noqa: E402

os.environ.setdefault("JAX_PLATFORMS", "cpu")
OPTIONS = sluice_peer.parser("jax")
OPTIONS.add_argument("--idiomatic", action="store_true", help="jax.numpy ops dispatched eagerly, no jit")
options = OPTIONS.parse_args()
CAP = xla_cap.apply(options.export_dir) if options.export_dir and not options.idiomatic else "eager, no fusion"

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

# sluice's i64 fields stay i64 (JAX would make them i32 otherwise).
jax.config.update("jax_enable_x64", True)

import jax_ops  # noqa: E402

SUPPORTED = {"pack_tokens", "bag_offsets", "rebatch"} | jax_ops.MOVEMENT | jax_ops.ARITHMETIC


def build(plan):
    """The batch function: (sources, decisions, ids) -> dict of arrays,
    jitted by the tuned form and called as it is by the idiomatic one."""
    ops = list(plan.ops)
    pack = ops.pop(0) if ops and ops[0]["kind"] == "pack_tokens" else None
    # rebatch splits a batch into micro-batches and joins them back: the same bytes.
    ops = [op for op in ops if op["kind"] != "rebatch"]

    def batch_fn(sources, decisions, ids):
        out = {}
        for name, data in sources.items():
            if pack is not None and name == pack["field"]:
                p = pack["params"]
                idx = ids[:, None] * p["seq_len"] + jnp.arange(p["seq_len"], dtype=ids.dtype)[None, :]
                n = data.shape[0]
                out[name] = jnp.where(idx < n, jnp.take(data, jnp.minimum(idx, n - 1)), jnp.asarray(p["pad_id"],
                                                                                                    data.dtype))
            else:
                out[name] = jnp.take(data, ids, axis=0)
        for op in ops:
            name = op["field"]
            if op["kind"] == "bag_offsets":
                out[op["params"]["out"]] = jax_ops.bag_offsets(out[name])
                continue
            f = jax_ops.element_op(op)
            if op["kind"] in jax_ops.RANDOM:
                d = jnp.take(decisions[op["index"]], ids, axis=0)
                x = jax.vmap(f)(out[name], d)
            else:
                x = jax.vmap(lambda x, f=f: f(x, None))(out[name])
            out[name] = lax.optimization_barrier(x)
        return out

    return batch_fn


def epoch_decisions(plan, epoch):
    return {op["index"]: jnp.asarray(plan.decisions(op, epoch)) for op in plan.ops if op["kind"] in jax_ops.RANDOM}


def make_batches(plan, sources, compiled, eager=None):
    decisions = {}
    for i, b in enumerate(plan.batches):
        epoch = b["epoch"]
        if epoch not in decisions:
            decisions = {epoch: epoch_decisions(plan, epoch)}
        ids = jnp.asarray(plan.batch_ids(i))
        fn = eager if eager is not None else compiled[int(ids.shape[0])]
        out = fn(sources, decisions[epoch], ids)
        yield {k: np.asarray(v.block_until_ready()) for k, v in out.items()}


def main():
    if options.describe:
        sluice_peer.describe("jax", SUPPORTED, "per-batch")
        return
    plan = sluice_peer.Plan(options.export_dir)
    plan.require(SUPPORTED)
    sources = {f["name"]: jnp.asarray(plan.load_source(f["name"])) for f in plan.source_fields}
    fn = build(plan)
    framework = "jax %s (%s)" % (jax.__version__, CAP)
    if options.idiomatic:
        batches = make_batches(plan, sources, None, eager=fn)
    else:
        # Every batch shape of the plan, compiled before the hello (start-up).
        first = epoch_decisions(plan, plan.batches[0]["epoch"])
        compiled = {}
        for rows in sorted({b["rows"] for b in plan.batches}):
            ids = jax.ShapeDtypeStruct((rows,), jnp.int64)
            compiled[rows] = jax.jit(fn).lower(sources, first, ids).compile()
        batches = make_batches(plan, sources, compiled)
    sluice_peer.serve("jax-idiomatic" if options.idiomatic else "jax", framework, plan, batches, options)


if __name__ == "__main__":
    main()

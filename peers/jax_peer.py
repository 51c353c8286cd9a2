"""peer:jax: the scenario's pipeline written the way a JAX user writes it on
the CPU: the source fields and the epoch's decisions as device arrays, each op
a function of one element (peers/jax_ops.py) vmapped over the batch, and one
jax.jit-compiled batch function that gathers the batch's elements (jnp.take)
and applies the ops; the batch is a numpy array (np.asarray after
block_until_ready) before the clock stops.

An epoch's short last batch has a shape of its own, so it needs a compilation
of its own. As JAX users do for a fixed set of shapes, the peer compiles every
batch shape the plan contains ahead of time (jit(...).lower(...).compile())
before it says hello, so no compilation happens among the batches.

The ops compute what sluice computes (see peers/jax_ops.py: each result
fenced with lax.optimization_barrier so that XLA cannot contract a multiply
and an add into one fused multiply-add); x64 is on so i64 fields stay i64.
"""
import os
import sys

os.environ.setdefault("JAX_PLATFORMS", "cpu")
# XLA contracts a multiply and an add into one fused multiply-add (which rounds
# once where sluice rounds twice) even across lax.optimization_barrier, which
# its CPU pipeline removes before fusion; capping its x86 code at AVX, the
# level before FMA instructions, keeps every operation rounded on its own.
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_max_isa=AVX").strip()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

# sluice's i64 fields stay i64 (JAX would make them i32 otherwise).
jax.config.update("jax_enable_x64", True)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jax_ops  # noqa: E402
import sluice_peer  # noqa: E402

SUPPORTED = {"pack_tokens", "bag_offsets", "rebatch"} | jax_ops.MOVEMENT | jax_ops.ARITHMETIC


def build(plan):
    """The batch function: (sources, decisions, ids) -> dict of arrays."""
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

    return jax.jit(batch_fn)


def epoch_decisions(plan, epoch):
    return {op["index"]: jnp.asarray(plan.decisions(op, epoch)) for op in plan.ops if op["kind"] in jax_ops.RANDOM}


def make_batches(plan, sources, compiled):
    decisions = {}
    for i, b in enumerate(plan.batches):
        epoch = b["epoch"]
        if epoch not in decisions:
            decisions = {epoch: epoch_decisions(plan, epoch)}
        ids = jnp.asarray(plan.batch_ids(i))
        out = compiled[int(ids.shape[0])](sources, decisions[epoch], ids)
        yield {k: np.asarray(v.block_until_ready()) for k, v in out.items()}


def main():
    import argparse

    parser = argparse.ArgumentParser(prog="jax")
    parser.add_argument("export_dir")
    parser.add_argument("--workers", type=int, default=0)
    options = parser.parse_args()
    plan = sluice_peer.Plan(options.export_dir)
    plan.require(SUPPORTED)
    sources = {f["name"]: jnp.asarray(plan.load_source(f["name"])) for f in plan.source_fields}
    fn = build(plan)
    # Every batch shape of the plan, compiled before the hello (start-up).
    first = epoch_decisions(plan, plan.batches[0]["epoch"])
    compiled = {}
    for rows in sorted({b["rows"] for b in plan.batches}):
        ids = jax.ShapeDtypeStruct((rows,), jnp.int64)
        compiled[rows] = fn.lower(sources, first, ids).compile()
    sluice_peer.serve("jax", "jax " + jax.__version__, plan, make_batches(plan, sources, compiled))


if __name__ == "__main__":
    main()

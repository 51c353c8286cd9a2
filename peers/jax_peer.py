"""peer:jax: the scenario's pipeline written the way a JAX user writes it on
the CPU: the source fields and the epoch's decisions as device arrays, and one
jax.jit-compiled function per batch shape that gathers the batch's elements
(jnp.take), applies the ops as jnp array code (crops with vmap'd
lax.dynamic_slice, flips with jnp.where) and returns the batch; the batch is
a numpy array (np.asarray after block_until_ready) before the clock stops.
Compilation happens at the first batch of each shape (the warmup).

It computes what sluice computes, not the shortest idiom where the two round
differently: normalize is (x - mean) * inv_std with inv_std = float32(1 / std);
clip is two comparisons, so NaN passes through as in sluice; float32
throughout. Each op's result passes through lax.optimization_barrier so that
XLA cannot contract a multiply and a following add into one fused
multiply-add, which rounds once where sluice rounds twice.
"""
import os
import sys

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

# sluice's i64 fields stay i64 (JAX would make them i32 otherwise).
jax.config.update("jax_enable_x64", True)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sluice_peer  # noqa: E402

SUPPORTED = {"pack_tokens", "normalize", "scale", "clip", "add", "multiply", "random_crop", "random_hflip"}
RANDOM = ("random_crop", "random_hflip")


def build(plan):
    """The jitted batch function: (sources, decisions, ids) -> dict of arrays."""
    ops = list(plan.ops)
    pack = ops.pop(0) if ops and ops[0]["kind"] == "pack_tokens" else None

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
            kind, p, name = op["kind"], op["params"], op["field"]
            x = out[name]
            if kind == "normalize":
                mean = jnp.asarray(np.asarray(p["mean"], dtype=np.float32))
                inv_std = jnp.asarray(np.asarray(p["inv_std"], dtype=np.float32))
                if p["channels"] == 1:
                    mean, inv_std = mean[0], inv_std[0]
                x = lax.optimization_barrier(x.astype(jnp.float32) - mean) * inv_std
            elif kind in ("scale", "multiply"):
                x = x * jnp.float32(p["value"])
            elif kind == "add":
                x = x + jnp.float32(p["value"])
            elif kind == "clip":
                lo, hi = jnp.float32(p["lo"]), jnp.float32(p["hi"])
                x = jnp.where(x < lo, lo, jnp.where(x > hi, hi, x))
            elif kind == "random_crop":
                d = jnp.take(decisions[op["index"]], ids, axis=0)
                ch, cw = p["crop_h"], p["crop_w"]
                h, w = x.shape[1], x.shape[2]
                top, left = (h - ch) // 2, (w - cw) // 2
                rest = x.shape[3:]

                def crop(img, off):
                    start = (off[0], off[1]) + (jnp.zeros((), off.dtype),) * len(rest)
                    return lax.dynamic_slice(img, start, (ch, cw) + rest)

                cropped = jax.vmap(crop)(x, d)
                pads = [(0, 0), (top, h - ch - top), (left, w - cw - left)] + [(0, 0)] * len(rest)
                x = jnp.pad(cropped, pads)
            elif kind == "random_hflip":
                flip = jnp.take(decisions[op["index"]], ids, axis=0)[:, 0] != 0
                x = jnp.where(flip.reshape((-1,) + (1,) * (x.ndim - 1)), x[:, :, ::-1], x)
            out[name] = lax.optimization_barrier(x)
        return out

    return jax.jit(batch_fn)


def make_batches(plan, options):
    sources = {f["name"]: jnp.asarray(plan.load_source(f["name"])) for f in plan.source_fields}
    fn = build(plan)
    decisions = {}
    for i, b in enumerate(plan.batches):
        epoch = b["epoch"]
        if epoch not in decisions:
            decisions = {epoch: {op["index"]: jnp.asarray(plan.decisions(op, epoch))
                                 for op in plan.ops if op["kind"] in RANDOM}}
        ids = jnp.asarray(plan.batch_ids(i))
        out = fn(sources, decisions[epoch], ids)
        yield {k: np.asarray(v.block_until_ready()) for k, v in out.items()}


if __name__ == "__main__":
    sluice_peer.main("jax", "jax " + jax.__version__, make_batches, SUPPORTED)

"""sluice's ops as JAX functions on one element, shared by peer:jax (which
vmaps them over a batch) and peer:datarax (whose ElementOperator vmaps them).

They compute what sluice computes, not the shortest idiom where the two round
differently: normalize is (x - mean) * inv_std with inv_std = float32(1 / std);
clip is two comparisons, so NaN passes through as in sluice; float32
throughout. Every float operation whose result feeds another passes through
lax.optimization_barrier, so that XLA cannot contract a multiply and an add
into one fused multiply-add (which rounds once where sluice rounds twice) or
reassociate; the caller's process must enable x64 so i64 fields stay i64.
"""
import jax.numpy as jnp
import numpy as np
from jax import lax

# Ops that only move, select or count values, or compute in integers:
# bitwise in any framework that keeps the dtypes.
MOVEMENT = {"random_crop", "random_hflip", "random_crop3d", "random_flip3d", "one_hot", "pad_tokens", "hash_ids"}
ARITHMETIC = {"normalize", "scale", "multiply", "add", "clip", "log1p"}
RANDOM = ("random_crop", "random_hflip", "random_crop3d", "random_flip3d")

B = lax.optimization_barrier


def f32(text):
    """A float32 constant from C's hex notation (each is exact in float32)."""
    return jnp.float32(float.fromhex(text))


def log1p(x):
    """sluice's libm-free log1p (sl__log1p_f32 in kernels/ref/ref.h), operation
    for operation in float32, each result fenced from the next."""
    one = jnp.float32(1)
    u = B(one + x)
    bits = lax.bitcast_convert_type(u, jnp.uint32)
    k = (bits >> 23).astype(jnp.int32) - 127
    mant = bits & jnp.uint32(0x7FFFFF)
    halve = mant >= jnp.uint32(0x3504F4)
    m = lax.bitcast_convert_type(mant | jnp.where(halve, jnp.uint32(0x3F000000), jnp.uint32(0x3F800000)),
                                 jnp.float32)
    k = k + halve.astype(jnp.int32)
    x_part = B(u - one)
    c_far = B(B(B(one - B(u - x_part)) + B(x - x_part)) / u)
    near = (x < f32("0x1.a827a0p-2")) & (x >= -f32("0x1.2bec32p-2"))
    dk = jnp.where(near, 0, k).astype(jnp.float32)
    f = jnp.where(near, x, B(m - one))
    c = jnp.where(near, jnp.float32(0), c_far)
    hfsq = B(B(jnp.float32(0.5) * f) * f)
    s = B(f / B(jnp.float32(2) + f))
    z = B(s * s)
    w = B(z * z)
    t1 = B(w * B(f32("0x1.99c26ep-2") + B(w * f32("0x1.f13c4cp-3"))))
    t2 = B(z * B(f32("0x1.555554p-1") + B(w * f32("0x1.23d3dcp-2"))))
    inner = B(s * B(hfsq + B(t2 + t1)))
    tail = B(B(dk * f32("0x1.2fefa2p-17")) + c)
    r = B(B(dk * f32("0x1.62e300p-1")) - B(B(hfsq - B(inner + tail)) - f))
    r = jnp.where(x == 0, x, r)
    r = jnp.where(x == jnp.inf, x, r)
    r = jnp.where(x == -1, -jnp.inf, r)
    r = jnp.where(x < -1, jnp.nan, r)
    return jnp.where(x != x, x, r)


def hash_ids(x, sizes):
    """Each id of column j to (SplitMix64's finalizer >> 32) mod sizes[j];
    negative (missing) ids stay -1."""
    v = x.astype(jnp.uint64) + jnp.uint64(0x9E3779B97F4A7C15)
    v = (v ^ (v >> jnp.uint64(30))) * jnp.uint64(0xBF58476D1CE4E5B9)
    v = (v ^ (v >> jnp.uint64(27))) * jnp.uint64(0x94D049BB133111EB)
    v = (v ^ (v >> jnp.uint64(31))) >> jnp.uint64(32)
    sizes = jnp.asarray(np.asarray(sizes, dtype=np.uint64))
    return jnp.where(x < 0, jnp.int64(-1), (v % sizes).astype(jnp.int64))


def element_op(op):
    """The op on one element: f(x, d) -> x, d its exported decisions row (or
    None for an op without)."""
    kind, p = op["kind"], op["params"]

    if kind == "normalize":
        mean = jnp.asarray(np.asarray(p["mean"], dtype=np.float32))
        inv_std = jnp.asarray(np.asarray(p["inv_std"], dtype=np.float32))
        if p["channels"] == 1:
            mean, inv_std = mean[0], inv_std[0]
        return lambda x, d: B(x.astype(jnp.float32) - mean) * inv_std
    if kind in ("scale", "multiply"):
        return lambda x, d: x * jnp.float32(p["value"])
    if kind == "add":
        return lambda x, d: x + jnp.float32(p["value"])
    if kind == "clip":
        lo, hi = jnp.float32(p["lo"]), jnp.float32(p["hi"])
        return lambda x, d: jnp.where(x < lo, lo, jnp.where(x > hi, hi, x))
    if kind == "log1p":
        return lambda x, d: log1p(x)
    if kind == "hash_ids":
        return lambda x, d: hash_ids(x, p["sizes"])
    if kind == "one_hot":
        return lambda x, d: (x == jnp.arange(p["classes"], dtype=x.dtype)).astype(jnp.float32)
    if kind == "random_crop":
        def crop(x, d):
            ch, cw = p["crop_h"], p["crop_w"]
            h, w = x.shape[0], x.shape[1]
            top, left = (h - ch) // 2, (w - cw) // 2
            rest = x.shape[2:]
            start = (d[0], d[1]) + (jnp.zeros((), d.dtype),) * len(rest)
            cut = lax.dynamic_slice(x, start, (ch, cw) + rest)
            return jnp.pad(cut, [(top, h - ch - top), (left, w - cw - left)] + [(0, 0)] * len(rest))
        return crop
    if kind == "random_hflip":
        return lambda x, d: jnp.where(d[0] != 0, x[:, ::-1], x)
    if kind == "random_crop3d":
        return lambda x, d: lax.dynamic_slice(x, (d[0], d[1], d[2]), (p["d"], p["h"], p["w"]))
    if kind == "random_flip3d":
        def flip(x, d):
            for bit, axis in ((1, 0), (2, 1), (4, 2)):
                x = jnp.where((d[0] & bit) != 0, jnp.flip(x, axis=axis), x)
            return x
        return flip
    if kind == "pad_tokens":
        def pad(x, d):
            length, end, pad_id = p["length"], p["end_id"], p["pad_id"]
            capacity = x.shape[0]
            is_end = x == end
            keep = jnp.minimum(jnp.where(is_end.any(), jnp.argmax(is_end), capacity), length - 1)
            if capacity < length:
                x = jnp.pad(x, (0, length - capacity), constant_values=pad_id)
            pos = jnp.arange(length)
            return jnp.where(pos < keep, x[:length], jnp.where(pos == keep, jnp.int32(end), jnp.int32(pad_id)))
        return pad
    raise ValueError("no JAX function for op %s" % kind)


def bag_offsets(ids):
    """bag_offsets on a batch: each column's running count of present ids."""
    return jnp.cumsum((ids >= 0).astype(jnp.int64), axis=0)

"""sluice's ops as JAX functions on one element, shared by peer:jax (which
vmaps them over a batch) and peer:datarax (whose ElementOperator vmaps them),
and the batch ops both apply to a whole batch (mix, length_mask,
bag_offsets).

They compute what sluice computes, not the shortest idiom where the two round
differently: normalize is (x - mean) * inv_std with inv_std = float32(1 / std);
clip is two comparisons, so NaN passes through as in sluice; float32
throughout; log1p and the id hash are sluice's own definitions
(peers/sluice_ops.py). Every op's result passes through
lax.optimization_barrier; that does not stop XLA's CPU back end from
contracting a multiply and an add into one fused multiply-add (which rounds
once where sluice rounds twice), so the peers also cap its code at AVX
(XLA_FLAGS=--xla_cpu_max_isa=AVX, set before jax is imported). The caller's
process must enable x64 so i64 fields stay i64.

Bilinear resampling (resize, random_resized_crop) takes its plan, source
indices and float32 weights, from numpy on the host (sluice_ops.resize_axis):
XLA divides an array by a scalar as a product with its reciprocal, which
rounds differently from sluice's one float32 division for most output sizes
(for 125 of the 224 fractions k / 224 of a resize to 112, jax 0.10.2),
eagerly as in a jitted function. The plan is static per shape for resize and a function of
the exported boxes for random_resized_crop; the lerps themselves are XLA's.
"""

import functools

import jax.numpy as jnp
import numpy as np
from jax import lax

import sluice_ops
from numpy_idiomatic_peer import GRAPHS, NumpyArrays, sub_ops  # noqa: F401 (GRAPHS and sub_ops: for the peers)

# How the JAX and Datarax peers compute the element ops peers/ops.txt lists
# for them: the ops that only move, select or count values, or compute in
# integers, bitwise in any framework that keeps the dtypes; PC-5's affine (a
# fenced product, then the bias: XLA capped at AVX, since affine multiplies
# then adds), IO-4's trig_rounds (sluice's float64 sine and cosine, x64 on)
# and MM-2's log_mel (jnp.fft.rfft and a matmul, held to MM-2's stated
# tolerance). PC-5's dropout needs the elements' ids and epoch, so peer:jax's
# batch function applies it to the batch, and peer:datarax to each element,
# its id and epoch riding along (dropout, below). CV-4's resize and MM-1's
# random_resized_crop by sluice's plan and lerps (XLA capped at AVX: the
# lerps multiply then add), the latter's row its plan (resized_crop_plan).

# Ops with per-element exported decisions: the decision row rides along
# (random_resized_crop's: its plan, made from its box by resized_crop_plan).
RANDOM = (
    "random_crop",
    "random_hflip",
    "random_crop3d",
    "random_flip3d",
    "rot90",
    "random_brightness",
    "random_scale",
    "random_resized_crop",
)
# Graph ops whose exported decision is a pick per element (column 0).
PICKS = ("random_apply", "random_choice")

B = lax.optimization_barrier


class JaxArrays:
    """sluice_ops' array interface in jax.numpy, each float result fenced."""

    f32 = staticmethod(jnp.float32)
    where = staticmethod(jnp.where)
    rint = staticmethod(jnp.rint)  # half to even, as C's rint
    floor = staticmethod(jnp.floor)
    to_f32 = staticmethod(lambda i: i.astype(jnp.float32))
    fence = staticmethod(B)
    shr = staticmethod(lambda i, n: i >> n)
    band = staticmethod(lambda i, m: i & m)

    @staticmethod
    def bits(x):
        return lax.bitcast_convert_type(x.astype(jnp.float32), jnp.int32)

    @staticmethod
    def from_bits(i):
        return lax.bitcast_convert_type(i.astype(jnp.int32), jnp.float32)


def log1p(x):
    return sluice_ops.log1p(x, JaxArrays)


def hash_ids(x, sizes):
    """Each id of column j to its hash mod sizes[j]; missing (negative) ids stay -1."""
    high = sluice_ops.id_hash_high32(x.astype(jnp.uint64), lambda v, n: v >> jnp.uint64(n), jnp.uint64)
    sizes = jnp.asarray(np.asarray(sizes, dtype=np.uint64))
    return jnp.where(x < 0, jnp.int64(-1), (high % sizes).astype(jnp.int64))


def trig_rounds(x, rounds):
    """rounds of y = sin y + cos y on each value in float64, back to float32
    (sluice_ops; every step one float64 operation, so XLA must not contract
    its products and sums: the caller caps it at AVX)."""
    return sluice_ops.trig_rounds(x.astype(jnp.float64), rounds, JaxArrays).astype(jnp.float32)


def log_mel(p):
    """One waveform's log-mel spectrogram on sluice's definition
    (sluice_ops: framing, periodic Hann window, filter bank, Whisper's log)
    with XLA's FFT and product in float32: within MM-2's tolerance, not
    bitwise. The frames are a gather by a static index (a view has no
    counterpart in XLA), the window and filter bank constants of the
    compiled function."""
    window = jnp.asarray(np.array(sluice_ops.hann_window(p["frame"]), dtype=np.float32))
    filters = jnp.asarray(
        np.array(sluice_ops.mel_filter_bank(p["sample_rate"], p["n_fft"], p["mels"]), dtype=np.float32)
    )

    def f(x, d):
        frames = sluice_ops.log_mel_frames(x.shape[0], p)
        index = np.arange(p["frame"])[None, :] + p["hop"] * np.arange(frames)[:, None]
        spectrum = jnp.fft.rfft(x[index] * window, n=p["n_fft"])
        mel = (spectrum.real * spectrum.real + spectrum.imag * spectrum.imag) @ filters
        # fmax: a NaN goes to the floor, as sluice's comparison sends it.
        log_spec = jnp.log10(jnp.fmax(mel, jnp.float32(sluice_ops.LOG_MEL_FLOOR)))
        log_spec = jnp.maximum(log_spec, log_spec.max() - jnp.float32(sluice_ops.LOG_MEL_DECADES))
        return (log_spec + jnp.float32(sluice_ops.LOG_MEL_SHIFT)) * jnp.float32(sluice_ops.LOG_MEL_SCALE)

    return f


def dropout_keep(ids, epoch, seed, op, values):
    """Whether each of the values of elements ids is kept, [len(ids), values]:
    sluice's keyed mask, Philox4x32-10 (sluice_ops) keyed by the plan's seed
    and the op id, counter (element, epoch, value / 4), in uint64 (x64 on),
    as peers/numpy_idiomatic_peer.py's dropout_keep computes it."""
    ids = ids.astype(jnp.uint64)
    blocks = -(-values // 4)
    shape = (ids.shape[0], blocks)
    counter = (
        jnp.broadcast_to((ids & jnp.uint64(sluice_ops.M32))[:, None], shape),
        jnp.broadcast_to((ids >> jnp.uint64(32))[:, None], shape),
        jnp.full(shape, epoch, dtype=jnp.uint64),
        jnp.broadcast_to(jnp.arange(blocks, dtype=jnp.uint64)[None, :], shape),
    )
    k0, k1 = sluice_ops.philox_key(seed, op["op_id"])
    words = jnp.stack(sluice_ops.philox4x32_10(counter, (k0, k1)), axis=-1).reshape(ids.shape[0], blocks * 4)
    threshold = sluice_ops.dropout_threshold(np.float32(op["params"]["p"]))
    return words[:, :values] >= jnp.uint64(threshold)


def dropout(x, ids, epoch, seed, op):
    """Train-mode dropout on a batch: kept values times float32(1 / (1 - p)),
    each step in float32 as sluice computes it, dropped ones 0."""
    p = np.float32(op["params"]["p"])
    scale = jnp.float32(np.float32(1.0) / (np.float32(1.0) - p))
    keep = dropout_keep(ids, epoch, seed, op, int(np.prod(x.shape[1:]))).reshape(x.shape)
    return jnp.where(keep, B(x * scale), jnp.float32(0.0))


@functools.cache
def resize_plan(size_in, out):
    """One axis of sluice's bilinear plan for a static shape, in numpy on
    the host (the module's docstring says why): source indices i0, i1 and
    i1's float32 weight for each of out outputs."""
    return sluice_ops.resize_axis(np.arange(out, dtype=np.int64), size_in, out, NumpyArrays)


def resized_crop_plan(boxes, p):
    """random_resized_crop's plan for each element of boxes (its exported
    decisions, [n, 4]: y, x, h, w), in numpy on the host: (indices, weights),
    int64 [n, 2 out_h + 2 out_w] (the top and bottom source rows, the left
    and right source columns, the box's offset added) and float32
    [n, out_h + out_w] (the rows' weights, then the columns')."""
    out_h, out_w = p["out_h"], p["out_w"]
    y, left, h, w = (boxes[:, j : j + 1].astype(np.int64) for j in range(4))
    y0, y1, wy = sluice_ops.resize_axis(np.arange(out_h, dtype=np.int64)[None, :], h, out_h, NumpyArrays)
    x0, x1, wx = sluice_ops.resize_axis(np.arange(out_w, dtype=np.int64)[None, :], w, out_w, NumpyArrays)
    return np.concatenate([y0 + y, y1 + y, x0 + left, x1 + left], axis=1), np.concatenate([wy, wx], axis=1)


def bilinear_at(x, y0, y1, x0, x1, wy, wx):
    """One image [h, w(, c)] (u8 or float32) resampled at rows y0, y1 and
    columns x0, x1 with weights wy, wx, in float32: its four source values
    for every output gathered, then sluice's lerps (sluice_ops.bilinear),
    each one float32 operation (the jitted caller caps XLA at AVX, so no
    product and sum fuse)."""
    rows0, rows1 = x[y0], x[y1]
    trailing = (1,) * (x.ndim - 2)
    wx, wy = wx.reshape((1, -1) + trailing), wy.reshape((-1, 1) + trailing)

    def at(rows, cols):
        return rows[:, cols].astype(jnp.float32)

    return sluice_ops.bilinear(at(rows0, x0), at(rows0, x1), at(rows1, x0), at(rows1, x1), wx, wy)


def graph_merge(kind, x, a, b, pick):
    """A sub-op graph's result from the field's values x and its chains'
    results a and b (b is x for random_apply, which owns one chain):
    branch_mean's a * 0.5 + b * 0.5 as sluice's blend computes it (two
    fenced float32 products, then their sum; capped, as a blend multiplies
    then adds), random_apply's a where the pick is 1, random_choice's a where
    the branch is 0 and b elsewhere. pick: the exported picks (column 0) of
    the rows, or of the one element, of x (None for branch_mean)."""
    if kind == "branch_mean":
        half = jnp.float32(0.5)
        return B(a * half) + B(b * half)
    pick = pick.reshape(pick.shape + (1,) * (x.ndim - pick.ndim))
    if kind == "random_apply":
        return jnp.where(pick != 0, a, x)
    return jnp.where(pick == 0, a, b)


# Batch ops that mix each row with a partner row of the batch, from their
# exported per-batch decisions and partners (peer:jax's batch function and
# peer:datarax's batch stage both apply them with mix, below).
MIXING = ("mixup", "cutmix")


def blend(x, partner, w_own, w_partner):
    """x[i] * w_own + x[partner[i]] * w_partner: two f32 products, then their sum."""
    return B(x * w_own) + B(jnp.take(x, partner, axis=0) * w_partner)


def mix(op, out, row, partner):
    """MixUp and CutMix from the exported per-batch decisions (row) and
    partners of the batch; CutMix's box is a mask, so shapes stay static."""
    name, label = op["field"], op["params"]["label"]
    x = out[name]
    if op["kind"] == "mixup":
        w_own, w_partner = row[1], row[2]
        out[name] = blend(x, partner, w_own, w_partner)
    else:
        yy = jnp.arange(x.shape[1], dtype=jnp.float32)[:, None]
        xx = jnp.arange(x.shape[2], dtype=jnp.float32)[None, :]
        box = (yy >= row[1]) & (yy < row[2]) & (xx >= row[3]) & (xx < row[4])
        box = box.reshape((1,) + box.shape + (1,) * (x.ndim - 3))
        out[name] = jnp.where(box, jnp.take(x, partner, axis=0), x)
        w_own, w_partner = row[5], row[6]
    out[label] = blend(out[label], partner, w_own, w_partner)


def length_mask(lengths, width):
    """[rows, width]: whether position j of row i is within its length (the
    length clamped to [0, width]): pad_to_multiple keeps those values and
    attention_mask marks them."""
    return jnp.arange(width)[None, :] < jnp.clip(lengths, 0, width)[:, None]


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
    if kind == "affine":
        # x * scale[c] + bias[c] over the last axis (or one channel): the
        # product fenced, then the sum, two roundings as sluice.
        c = p["channels"]
        scale = jnp.asarray(np.asarray(p["scale"][:c], dtype=np.float32))
        bias = jnp.asarray(np.asarray(p["bias"][:c], dtype=np.float32))
        if c == 1:
            scale, bias = scale[0], bias[0]
        return lambda x, d: B(x * scale) + bias
    if kind == "add":
        return lambda x, d: x + jnp.float32(p["value"])
    if kind == "clip":
        lo, hi = jnp.float32(p["lo"]), jnp.float32(p["hi"])
        return lambda x, d: jnp.where(x < lo, lo, jnp.where(x > hi, hi, x))
    if kind == "log1p":
        return lambda x, d: log1p(x)
    if kind == "trig_rounds":
        return lambda x, d: trig_rounds(x, p["rounds"])
    if kind == "log_mel":
        return log_mel(p)
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
    if kind == "rot90":
        # k quarter turns counter-clockwise over (h, w), as np.rot90; a
        # switch keeps k a value of the element (square images only).
        turns = [lambda x, j=j: jnp.rot90(x, j, axes=(0, 1)) for j in range(4)]
        return lambda x, d: lax.switch(d[0], turns, x)
    if kind == "random_brightness":
        # d = f32(delta) * f32((u24 - 2^23) / 2^23); the second factor is
        # exact in f32, so one rounding, as sluice.
        delta = jnp.float32(p["delta"])
        return lambda x, d: x + B(delta * ((d[0] - (1 << 23)).astype(jnp.float32) * jnp.float32(2.0**-23)))
    if kind == "random_scale":
        lo, hi = jnp.float32(p["lo"]), jnp.float32(p["hi"])

        def scale(x, d):
            u = d[0].astype(jnp.float32) * jnp.float32(2.0**-24)  # exact
            f = B(lo + B(B(hi - lo) * u))
            return x * jnp.minimum(f, hi)

        return scale
    if kind == "resize":

        def resize(x, d):
            y0, y1, wy = resize_plan(x.shape[0], p["out_h"])
            x0, x1, wx = resize_plan(x.shape[1], p["out_w"])
            return bilinear_at(x, y0, y1, x0, x1, jnp.asarray(wy), jnp.asarray(wx))

        return resize
    if kind == "random_resized_crop":

        def crop(x, d):
            (index, weight), h, w = d, p["out_h"], p["out_w"]
            return bilinear_at(
                x, index[:h], index[h : 2 * h], index[2 * h : 2 * h + w], index[2 * h + w :], weight[:h], weight[h:]
            )

        return crop
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

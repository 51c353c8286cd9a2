"""peer:tfdata and peer:tfdata-idiomatic: tf.data.Dataset.from_tensor_slices
over the exported order (element ids), a map whose function gathers from the
source tensors and applies the ops with TensorFlow ops, .prefetch(AUTOTUNE),
iterated eagerly; each batch's tensors become numpy arrays (.numpy()) before
the clock stops. The tuned form follows tf.data's performance guide: .batch()
first, then one .map over the batch with the element function vectorized
(tf.vectorized_map). The idiomatic form maps each element
(num_parallel_calls=AUTOTUNE) and batches after, as tutorials write it. Both
prefetch, so sluice times them with a consumer that does nothing between
batches and reports a second figure with a digest between batches. For
plans with per-element crops and flips the tuned form maps per element too
(tf.vectorized_map makes them a while loop, 8x slower on PR-2), and so it
does for log_mel (vectorized, MM-2 ran 2.46x slower than mapped per
element): on those plans it is the idiomatic form.

It computes what sluice computes, not the shortest idiom where the two round
differently: normalize is (x - mean) * inv_std with inv_std = float32(1 / std);
clip is two comparisons (tf.where), so NaN passes through as in sluice;
float32 throughout. tf.data keeps the order (deterministic=True, its default).
log1p and the id hash are sluice's own definitions (peers/sluice_ops.py) in
TensorFlow ops; the batch ops are a map after .batch().

Beyond the gate: rot90 (tf.image.rot90), brightness and scale from their
exported per-element decisions, affine, and PC-5's dropout with its mask
recomputed from the keying the plan documents (sluice_ops' Philox4x32-10 on
tf.uint64 tensors) are element ops; MixUp and CutMix are batch ops from the
exported per-batch decisions and partners (the batch's index in the plan
from Dataset.enumerate); gaussian noise is TensorFlow's own,
tf.random.stateless_normal keyed per element by (seed, op id) and (epoch,
element id), as tf.data's guide keys random ops in a map, so sluice checks
those plans statistically.

CV-4's resize and MM-1's random_resized_crop (its boxes from the exported
decisions) are sluice's bilinear plan and lerps (sluice_ops) in tf ops:
tf.image.resize weighs in floating point and rounds otherwise. PC-2's and
PC-4's sub-op graphs run per element from the exported picks (tf.cond on
the pick). MM-2's log_mel is sluice's framing, window and filter bank with
tf.signal.rfft and tf.matmul in float32, held to MM-2's tolerance. IO-4's
trig_rounds is sluice's libm-free sine and cosine in float64 tf ops, and
its cache a tf.Variable per field indexed by element id (ElementStore says
why not Dataset.cache()).
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# Plain Eigen kernels: oneDNN's may reorder float arithmetic ("slightly
# different numerical results", in TensorFlow's own words).
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import numpy as np
import tensorflow as tf

# Grappler's arithmetic optimizer rewrites a chain of multiplies by constants
# (x * a * b into x * (a * b)), which rounds once where sluice rounds twice:
# PC-1's deeper chains differed by an ulp with it on.
tf.config.optimizer.set_experimental_options({"arithmetic_optimization": False})

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sluice_ops  # noqa: E402
import sluice_peer  # noqa: E402
from numpy_idiomatic_peer import GRAPHS, sub_ops  # noqa: E402

# What this script implements: its line in peers/ops.txt. How, beyond the
# gate: CV-4's and MM-1's bilinear resampling by sluice's plan and lerps in
# tf ops; PC-2's and PC-4's sub-op graphs from their exported picks; MM-2's
# log_mel (tf.signal.rfft and tf.matmul on sluice's window and filter
# bank); IO-4's trig_rounds (sluice's libm-free sine and cosine, float64 tf
# ops) and its cache (ElementStore).
SUPPORTED = sluice_peer.implements(__file__)
# Ops with per-element decisions (their rows are gathered by element id).
DECIDED = (
    "random_crop",
    "random_hflip",
    "random_crop3d",
    "random_flip3d",
    "rot90",
    "random_brightness",
    "random_scale",
    "random_resized_crop",
    "random_apply",
    "random_choice",
)
# Ops that tf.vectorized_map turns into a while loop (a slice at a
# data-dependent offset, a tf.cond, a switch over turns, a per-element seed):
# the tuned form maps them per element (make_batches).
RANDOM = (
    "random_crop",
    "random_hflip",
    "random_crop3d",
    "random_flip3d",
    "rot90",
    "gaussian_noise",
    "dropout",
    "random_resized_crop",
    "random_apply",
    "random_choice",
)
BATCH = ("bag_offsets", "pad_to_multiple", "attention_mask", "mixup", "cutmix")
# Ops that tf.vectorized_map vectorizes but runs slower than a per-element
# map in parallel, measured: MM-2's log_mel, 2.46x (2.62k against 1.06k
# elements/s, `sluice bench --scenarios MM-2 --rounds 3`, 27 November 2026,
# load 3 to 4 on 2 CPUs). resize was even (CV-4 scales 1.03x, odd 1.19x the
# other way, neither beyond the noise), so it stays vectorized.
FASTER_PER_ELEMENT = ("log_mel",)


class U64:
    """A tf.uint64 tensor with the operators sluice_ops.philox4x32_10 uses
    (TensorFlow's tensors have no >> and a logical &)."""

    def __init__(self, t):
        self.t = t

    @staticmethod
    def _v(o):
        return o.t if isinstance(o, U64) else tf.constant(o, tf.uint64)

    def __mul__(self, o):
        return U64(tf.math.multiply(self.t, self._v(o)))

    def __rshift__(self, n):
        return U64(tf.bitwise.right_shift(self.t, self._v(n)))

    def __and__(self, o):
        return U64(tf.bitwise.bitwise_and(self.t, self._v(o)))

    def __xor__(self, o):
        return U64(tf.bitwise.bitwise_xor(self.t, self._v(o)))

    __rxor__ = __xor__


def dropout(plan, op, x, i, epoch):
    """Train-mode dropout on element i: Philox4x32-10 keyed by the plan's
    seed and the op id, counter (element, epoch, value / 4), as
    numpy_idiomatic_peer's dropout_keep computes it; kept values times
    float32(1 / (1 - p)), dropped ones 0."""
    if plan.raw.get("mode", "train") == "eval":
        return x
    values = int(np.prod(x.shape))
    blocks = -(-values // 4)
    i = tf.cast(i, tf.uint64)
    ones = tf.ones([blocks], tf.uint64)
    counter = (
        U64(ones * tf.bitwise.bitwise_and(i, tf.constant(sluice_ops.M32, tf.uint64))),
        U64(ones * tf.bitwise.right_shift(i, tf.constant(32, tf.uint64))),
        U64(ones * tf.constant(epoch, tf.uint64)),
        U64(tf.cast(tf.range(blocks, dtype=tf.int64), tf.uint64)),
    )
    key = sluice_ops.philox_key(int(plan.raw["seed"]), op["op_id"])
    words = tf.reshape(tf.stack([w.t for w in sluice_ops.philox4x32_10(counter, key)], axis=-1), [-1])[:values]
    keep = tf.reshape(
        words >= tf.constant(sluice_ops.dropout_threshold(np.float32(op["params"]["p"])), tf.uint64), tf.shape(x)
    )
    p = np.float32(op["params"]["p"])
    scale = tf.constant(np.float32(1.0) / (np.float32(1.0) - p), tf.float32)
    return tf.where(keep, x * scale, tf.constant(0.0, tf.float32))


def per_row(values, x):
    """values[i] broadcast over row i of x."""
    return tf.reshape(values, [-1] + [1] * (len(x.shape) - 1))


def blend(x, partner, w_own, w_partner):
    """x[i] * w_own + x[partner[i]] * w_partner: two f32 products, then their sum."""
    return x * w_own + tf.gather(x, partner) * w_partner


class TfArrays:
    """sluice_ops' array interface in TensorFlow (float32 arithmetic; float64
    where the values are float64, as in trig_rounds)."""

    f32 = staticmethod(lambda v: tf.constant(v, tf.float32))
    # tf.math.rint rounds ties to even, as sluice's rint does; both are exact.
    rint = staticmethod(tf.math.rint)
    floor = staticmethod(tf.math.floor)
    to_f32 = staticmethod(lambda i: tf.cast(i, tf.float32))
    fence = staticmethod(lambda x: x)
    shr = staticmethod(lambda i, n: tf.bitwise.right_shift(i, n))
    band = staticmethod(lambda i, m: tf.bitwise.bitwise_and(i, m))

    @staticmethod
    def where(cond, a, b):
        # A Python number takes the other branch's dtype (resize_axis picks
        # between 0 and an int64 tensor; tf.where would make the 0 int32).
        if isinstance(a, (int, float)) and tf.is_tensor(b):
            a = tf.constant(a, b.dtype)
        if isinstance(b, (int, float)) and tf.is_tensor(a):
            b = tf.constant(b, a.dtype)
        return tf.where(cond, a, b)

    @staticmethod
    def bits(x):
        return tf.bitcast(tf.cast(x, tf.float32), tf.int32)

    @staticmethod
    def from_bits(i):
        return tf.bitcast(tf.cast(i, tf.int32), tf.float32)


def hash_ids(x, sizes):
    """Each id of column j to its hash mod sizes[j]; missing (negative) ids stay -1."""
    high = sluice_ops.id_hash_high32(
        tf.bitcast(x, tf.uint64),
        lambda v, n: tf.bitwise.right_shift(v, tf.constant(n, tf.uint64)),
        lambda c: tf.constant(c, tf.uint64),
    )
    hashed = tf.math.floormod(tf.bitcast(high, tf.int64), tf.constant(sizes, tf.int64))
    return tf.where(x < 0, tf.constant(-1, tf.int64), hashed)


def resize(x, out_h, out_w):
    """Image x [h, w(, c)] (u8 or float32; h and w may be tensors) resized
    bilinearly to out_h x out_w in float32 by sluice's plan
    (sluice_ops.resize_axis in int64 tf ops, a float32 weight by one
    division): the source rows and then columns gathered (tf.gather), and
    sluice's lerps along the width then the height (sluice_ops.bilinear),
    each a separate float32 Sub, Mul and AddV2 kernel that rounds once.
    Eigen evaluates each op's kernel on its own, so nothing fuses a multiply
    into the add, and Grappler's arithmetic optimizer, which could reorder,
    is off (above); tf.image.resize weighs in floating point and rounds
    differently."""
    h, w = tf.shape(x, out_type=tf.int64)[0], tf.shape(x, out_type=tf.int64)[1]
    y0, y1, wy = sluice_ops.resize_axis(tf.range(out_h, dtype=tf.int64), h, out_h, TfArrays)
    x0, x1, wx = sluice_ops.resize_axis(tf.range(out_w, dtype=tf.int64), w, out_w, TfArrays)
    x = tf.cast(x, tf.float32)
    rows0, rows1 = tf.gather(x, y0), tf.gather(x, y1)
    channels = [1] * (len(x.shape) - 2)
    wx, wy = tf.reshape(wx, [1, out_w] + channels), tf.reshape(wy, [out_h, 1] + channels)
    return sluice_ops.bilinear(
        tf.gather(rows0, x0, axis=1),
        tf.gather(rows0, x1, axis=1),
        tf.gather(rows1, x0, axis=1),
        tf.gather(rows1, x1, axis=1),
        wx,
        wy,
    )


def log_mel(x, p):
    """One waveform's log-mel spectrogram on sluice's definition (sluice_ops:
    frames of p["frame"] samples p["hop"] apart with no centring, the
    periodic Hann window, sluice's filter bank, Whisper's log) with
    tf.signal.rfft to n_fft and tf.matmul, float32 throughout: within MM-2's
    tolerance, not bitwise (the FFT and the product sum in their own order).
    tf.signal.stft would apply its own window, so the frames are a gather."""
    window = tf.constant(np.array(sluice_ops.hann_window(p["frame"]), dtype=np.float32))
    filters = tf.constant(
        np.array(sluice_ops.mel_filter_bank(p["sample_rate"], p["n_fft"], p["mels"]), dtype=np.float32)
    )
    frames = sluice_ops.log_mel_frames(x.shape[0], p)
    index = np.arange(p["frame"])[None, :] + p["hop"] * np.arange(frames)[:, None]
    spectrum = tf.signal.rfft(tf.gather(x, index) * window, fft_length=[p["n_fft"]])
    re, im = tf.math.real(spectrum), tf.math.imag(spectrum)
    mel = tf.matmul(re * re + im * im, filters)
    # A comparison, not tf.maximum: a NaN goes to the floor, as sluice's
    # comparison sends it. TensorFlow has no log10: log(x) / log(10).
    floor = tf.constant(sluice_ops.LOG_MEL_FLOOR, tf.float32)
    log_spec = tf.math.log(tf.where(mel > floor, mel, floor)) / tf.math.log(tf.constant(10.0, tf.float32))
    log_spec = tf.maximum(log_spec, tf.reduce_max(log_spec) - sluice_ops.LOG_MEL_DECADES)
    return (log_spec + sluice_ops.LOG_MEL_SHIFT) * sluice_ops.LOG_MEL_SCALE


def batch_fn(plan, ops):
    """The plan's batch ops on batch j of the plan: each column's running
    count of present ids, the batch cut to the smallest multiple that holds
    its longest sequence with pads after each row's length, the mask of its
    tokens, and MixUp and CutMix from their exported decisions."""

    def fn(j, batch):
        batch = dict(batch)
        for op in ops:
            kind, p, x = op["kind"], op["params"], batch[op["field"]]
            if kind in ("mixup", "cutmix"):
                row = tf.gather(tf.constant(plan.batch_decisions(op)), j)
                partner = tf.gather(tf.constant(plan.batch_partners(op)), j)[: tf.shape(x)[0]]
                if kind == "mixup":
                    w_own, w_partner = row[1], row[2]
                    batch[op["field"]] = blend(x, partner, w_own, w_partner)
                else:
                    # CutMix's box (rows y0..y1, columns x0..x1) taken from
                    # the partner: a selection, no arithmetic.
                    y0, y1, x0, x1 = (tf.cast(row[k], tf.int32) for k in range(1, 5))
                    w_own, w_partner = row[5], row[6]
                    ys, xs = tf.range(tf.shape(x)[1]), tf.range(tf.shape(x)[2])
                    box = ((ys >= y0) & (ys < y1))[:, None] & ((xs >= x0) & (xs < x1))[None, :]
                    box = tf.reshape(box, [1, tf.shape(x)[1], tf.shape(x)[2]] + [1] * (len(x.shape) - 3))
                    batch[op["field"]] = tf.where(box, tf.gather(x, partner), x)
                label = p["label"]
                batch[label] = blend(batch[label], partner, w_own, w_partner)
                continue
            if kind == "bag_offsets":
                batch[p["out"]] = tf.cumsum(tf.cast(x >= 0, tf.int64), axis=0)
                continue
            capacity = tf.shape(x, out_type=tf.int32)[1]
            lengths = batch[p["lengths"]]
            if kind == "pad_to_multiple":
                longest = tf.minimum(tf.maximum(tf.reduce_max(lengths), 0), capacity)
                m = p["multiple"]
                width = tf.minimum((longest + m - 1) // m * m, capacity)
                keep = tf.range(width)[None, :] < tf.clip_by_value(lengths, 0, width)[:, None]
                batch[op["field"]] = tf.where(keep, x[:, :width], tf.constant(p["pad_id"], x.dtype))
            else:
                keep = tf.range(capacity)[None, :] < tf.clip_by_value(lengths, 0, capacity)[:, None]
                batch[p["out"]] = tf.cast(keep, tf.uint8)
        return batch

    return fn


def element_fn(plan, sources, ops, pack, decisions, epoch):
    """The map function: element id -> dict of transformed tensors."""

    def apply(op, x, i):
        """One op that is neither a graph nor a batch op on field values x
        of element i."""
        kind, p = op["kind"], op["params"]
        if kind == "normalize":
            mean = tf.constant(np.asarray(p["mean"], dtype=np.float32))
            inv_std = tf.constant(np.asarray(p["inv_std"], dtype=np.float32))
            if p["channels"] == 1:
                mean, inv_std = mean[0], inv_std[0]
            x = (tf.cast(x, tf.float32) - mean) * inv_std
        elif kind in ("scale", "multiply"):
            x = x * tf.constant(p["value"], dtype=tf.float32)
        elif kind == "add":
            x = x + tf.constant(p["value"], dtype=tf.float32)
        elif kind == "clip":
            lo, hi = tf.constant(p["lo"], tf.float32), tf.constant(p["hi"], tf.float32)
            x = tf.where(x < lo, lo, tf.where(x > hi, hi, x))
        elif kind == "random_crop":
            d = tf.gather(decisions[op["index"]], i)
            ch, cw = p["crop_h"], p["crop_w"]
            h, w = x.shape[0], x.shape[1]
            top, left = (h - ch) // 2, (w - cw) // 2
            begin = tf.concat([d[:2], tf.zeros([len(x.shape) - 2], tf.int32)], 0)
            size = tf.constant([ch, cw] + [-1] * (len(x.shape) - 2), tf.int32)
            crop = tf.slice(x, begin, size)
            pads = [[top, h - ch - top], [left, w - cw - left]] + [[0, 0]] * (len(x.shape) - 2)
            x = tf.pad(crop, pads)
        elif kind == "random_hflip":
            flip = tf.gather(decisions[op["index"]], i)[0] != 0
            x = tf.cond(flip, lambda x=x: tf.reverse(x, axis=[1]), lambda x=x: x)
        elif kind == "random_crop3d":
            d = tf.gather(decisions[op["index"]], i)
            x = tf.slice(x, d[:3], [p["d"], p["h"], p["w"]])
        elif kind == "random_flip3d":
            axes = tf.gather(decisions[op["index"]], i)[0]
            for bit, axis in ((1, 0), (2, 1), (4, 2)):
                x = tf.cond(
                    tf.bitwise.bitwise_and(axes, bit) != 0, lambda x=x, a=axis: tf.reverse(x, axis=[a]), lambda x=x: x
                )
        elif kind == "one_hot":
            x = tf.one_hot(x, p["classes"], dtype=tf.float32)
        elif kind == "pad_tokens":
            capacity = x.shape[0]
            is_end = tf.cast(x == p["end_id"], tf.int32)
            content = tf.where(tf.reduce_any(is_end != 0), tf.argmax(is_end, output_type=tf.int32), capacity)
            keep = tf.minimum(content, p["length"] - 1)
            if capacity < p["length"]:
                x = tf.pad(x, [[0, p["length"] - capacity]], constant_values=p["pad_id"])
            pos = tf.range(p["length"])
            x = tf.where(pos < keep, x[: p["length"]], tf.where(pos == keep, p["end_id"], p["pad_id"]))
        elif kind == "log1p":
            x = sluice_ops.log1p(x, TfArrays)
        elif kind == "hash_ids":
            x = hash_ids(x, p["sizes"])
        elif kind == "rot90":
            turns = tf.gather(decisions[op["index"]], i)[0]
            x = tf.image.rot90(x, turns) if len(x.shape) == 3 else tf.image.rot90(x[..., None], turns)[..., 0]
        elif kind == "random_brightness":
            # d = f32(delta) * f32((u24 - 2^23) / 2^23): the second factor is exact.
            u24 = tf.cast(tf.gather(decisions[op["index"]], i)[0], tf.float64)
            x = x + tf.constant(p["delta"], tf.float32) * tf.cast((u24 - 2.0**23) / 2.0**23, tf.float32)
        elif kind == "random_scale":
            u24 = tf.cast(tf.gather(decisions[op["index"]], i)[0], tf.float64)
            lo, hi = tf.constant(p["lo"], tf.float32), tf.constant(p["hi"], tf.float32)
            x = x * tf.minimum(lo + (hi - lo) * tf.cast(u24 / 2.0**24, tf.float32), hi)
        elif kind == "affine":
            c = p["channels"]
            x = x * tf.constant(np.asarray(p["scale"][:c], dtype=np.float32)) + tf.constant(
                np.asarray(p["bias"][:c], dtype=np.float32)
            )
        elif kind == "dropout":
            x = dropout(plan, op, x, i, epoch)
        elif kind == "resize":
            x = resize(x, p["out_h"], p["out_w"])
        elif kind == "random_resized_crop":
            # The element's box (y, x, h, w) from the exported decisions.
            box = tf.gather(decisions[op["index"]], i)
            begin = tf.concat([box[:2], tf.zeros([len(x.shape) - 2], tf.int32)], 0)
            size = tf.concat([box[2:4], -tf.ones([len(x.shape) - 2], tf.int32)], 0)
            x = resize(tf.slice(x, begin, size), p["out_h"], p["out_w"])
        elif kind == "log_mel":
            x = log_mel(x, p)
        elif kind == "trig_rounds":
            # Each step one float64 Eigen kernel, rounded once (tf.sin would
            # be Eigen's own polynomial, not sluice's).
            x = tf.cast(sluice_ops.trig_rounds(tf.cast(x, tf.float64), p["rounds"], TfArrays), tf.float32)
        elif kind == "gaussian_noise":
            # A stateless draw keyed by (seed, op id) in one word and
            # (epoch, element id) in the other: the same noise whichever
            # of tf.data's threads maps the element, and in both forms.
            key = (int(plan.raw["seed"]) * 1000003 + op["op_id"]) % 2**63
            seed = tf.stack([tf.constant(key, tf.int64), tf.cast(epoch, tf.int64) * 2**32 + tf.cast(i, tf.int64)])
            noise = tf.random.stateless_normal(tf.shape(x), seed, dtype=tf.float32)
            x = x + tf.constant(p["sigma"], tf.float32) * noise
        return x

    def chain(chain_ops, x, i):
        """A graph op's chain of ops, in order, on field values x of element i."""
        for op in chain_ops:
            x = apply(op, x, i)
        return x

    def graph(op, chains, x, i):
        """branch_mean's (a + b) / 2 as sluice's blend computes it (a * 0.5 +
        b * 0.5, two float32 products then their sum); random_apply's chain
        when the element's exported pick is 1; random_choice's chain a when
        its exported branch is 0 and chain b when it is 1 (tf.cond: only the
        chain taken runs)."""
        if op["kind"] == "branch_mean":
            half = tf.constant(0.5, tf.float32)
            return chain(chains[0], x, i) * half + chain(chains[1], x, i) * half
        pick = tf.gather(decisions[op["index"]], i)[0]
        if op["kind"] == "random_apply":
            return tf.cond(pick != 0, lambda: chain(chains[0], x, i), lambda: x)
        return tf.cond(
            pick == 0,
            lambda: chain(chains[0], x, i),
            lambda: tf.cond(pick == 1, lambda: chain(chains[1], x, i), lambda: x),
        )

    def fn(i, fields=None):
        """Element i's fields after the ops, from the sources (or from
        fields, its values so far, where a cache gave them)."""
        if fields is not None:
            out = dict(fields)
            sources_left = {}
        else:
            out = {}
            sources_left = sources
        for name, data in sources_left.items():
            if pack is not None and name == pack["field"]:
                p = pack["params"]
                idx = i * p["seq_len"] + tf.range(p["seq_len"], dtype=tf.int64)
                n = tf.shape(data, out_type=tf.int64)[0]
                seq = tf.gather(data, tf.minimum(idx, n - 1))
                out[name] = tf.where(idx < n, seq, tf.constant(p["pad_id"], dtype=data.dtype))
            else:
                out[name] = tf.gather(data, i)
        k = 0
        while k < len(ops):
            op = ops[k]
            if op["kind"] in GRAPHS:
                a, b, k = sub_ops(ops, k)
                out[op["field"]] = graph(op, (a, b), out[op["field"]], i)
                continue
            k += 1
            if op["kind"] not in BATCH and op["kind"] != "cache":
                out[op["field"]] = apply(op, out[op["field"]], i)
        return out

    return fn


class ElementStore:
    """IO-4's cache: every field of an element after the ops before the
    cache op, in one tf.Variable per field indexed by element id, written by
    the map call that first meets the element and gathered by every later
    one. Dataset.cache() does not fit the protocol: it replays its first
    pass in that pass's order, and each epoch's order is the exported one
    (tf.data.experimental.at on a cached dataset, inside a map, ran the
    maps before the cache again). The ops before a cache draw nothing, so
    an element's cached fields are the same in every epoch. Which elements
    an epoch meets first follows from the exported orders, so each epoch's
    dataset carries, per element, whether to compute it or read it back;
    tf.data's concatenate starts an epoch's dataset only once the one
    before it is exhausted, so every write precedes the reads of it."""

    def __init__(self, plan, before):
        self.before, self.met = before, set()
        probe = before(tf.constant(0, tf.int64))
        size = plan.raw["dataset_size"]
        self.store = {
            name: tf.Variable(tf.zeros([size] + v.shape.as_list(), v.dtype), trainable=False)
            for name, v in probe.items()
        }

    def fresh(self, ids):
        """Per id of an epoch (in order), whether no earlier epoch met it."""
        out = [int(e) not in self.met for e in ids]
        self.met.update(int(e) for e in ids)
        return tf.constant(out, tf.bool)

    def element(self, i, fresh):
        """Element i's cached fields: computed and stored, or read back."""

        def compute():
            out = self.before(i)
            writes = [self.store[name].scatter_nd_update([[i]], v[None]) for name, v in out.items()]
            with tf.control_dependencies(writes):
                return {name: tf.identity(v) for name, v in out.items()}

        return tf.cond(fresh, compute, lambda: {name: tf.gather(s, i) for name, s in self.store.items()})

    def batch(self, ids, fresh):
        """A batch's cached fields: the rows no earlier epoch met computed
        together (vectorized) and scattered in, then all rows gathered."""
        new = tf.boolean_mask(ids, fresh)

        def compute():
            out = tf.vectorized_map(self.before, new)
            return [self.store[name].scatter_nd_update(new[:, None], v) for name, v in out.items()]

        writes = tf.cond(tf.size(new) > 0, compute, lambda: [s.read_value() for s in self.store.values()])
        with tf.control_dependencies(tf.nest.flatten(writes)):
            return {name: tf.gather(s, ids) for name, s in self.store.items()}


def make_batches(plan, options):
    sources = {f["name"]: tf.constant(plan.load_source(f["name"])) for f in plan.source_fields}
    ops = list(plan.ops)
    pack = ops.pop(0) if ops and ops[0]["kind"] == "pack_tokens" else None
    # IO-4's cache: the ops before it run once per element, into the store;
    # the ops after it, per epoch, on what the store gives.
    at = next((op["index"] for op in ops if op["kind"] == "cache"), None)
    cache = None
    if at is not None:
        cache = ElementStore(plan, element_fn(plan, sources, [op for op in ops if op["index"] < at], pack, {}, 0))
        ops, pack = [op for op in ops if op["index"] > at], None
    dataset = None
    for epoch, batches in sorted(sluice_peer.epoch_batches(plan).items()):
        decisions = {op["index"]: tf.constant(plan.decisions(op, epoch)) for op in ops if op["kind"] in DECIDED}
        start = batches[0]["offset"]
        ids = plan.order(epoch)[start : start + sum(b["rows"] for b in batches)]
        fn = element_fn(plan, sources, ops, pack, decisions, epoch)
        # tf.vectorized_map turns a per-element crop or flip (a slice at a
        # data-dependent offset, a tf.cond) into a while loop: PR-2's batch
        # took 26 ms that way against 3.4 ms mapped per element, so a tf.data
        # expert maps those per element in parallel, as below.
        per_element = options.idiomatic or any(op["kind"] in RANDOM + FASTER_PER_ELEMENT for op in ops)
        if cache is not None:
            fresh = cache.fresh(ids)
            if per_element:
                ds = (
                    tf.data.Dataset.from_tensor_slices((ids, fresh))
                    .map(lambda i, f, fn=fn: fn(i, cache.element(i, f)), num_parallel_calls=tf.data.AUTOTUNE)
                    .batch(plan.batch_size)
                )
            else:
                ds = (
                    tf.data.Dataset.from_tensor_slices((ids, fresh))
                    .batch(plan.batch_size)
                    .map(
                        lambda b, f, fn=fn: tf.vectorized_map(lambda a: fn(a[0], a[1]), (b, cache.batch(b, f))),
                        num_parallel_calls=tf.data.AUTOTUNE,
                    )
                )
        elif per_element:
            ds = (
                tf.data.Dataset.from_tensor_slices(ids)
                .map(fn, num_parallel_calls=tf.data.AUTOTUNE)
                .batch(plan.batch_size)
            )
        else:
            # tf.data's performance guide: batch before map, and vectorize
            # the function over the batch (one call per batch, batched ops).
            ds = (
                tf.data.Dataset.from_tensor_slices(ids)
                .batch(plan.batch_size)
                .map(lambda batch_ids, fn=fn: tf.vectorized_map(fn, batch_ids), num_parallel_calls=tf.data.AUTOTUNE)
            )
        # bucket_by_length is in the exported order already; rebatch splits a
        # batch into micro-batches and joins them back, the same bytes.
        batch_ops = [op for op in ops if op["kind"] in BATCH]
        if batch_ops:
            # The index in plan.batches of the epoch's first batch: the
            # per-batch decisions are rows of the whole plan.
            first = next(n for n, b in enumerate(plan.batches) if b is batches[0])
            ds = ds.enumerate(start=first).map(batch_fn(plan, batch_ops))
        dataset = ds if dataset is None else dataset.concatenate(ds)
    for batch in dataset.prefetch(tf.data.AUTOTUNE):
        yield {k: v.numpy() for k, v in batch.items()}


if __name__ == "__main__":
    p = sluice_peer.parser("tfdata")
    p.add_argument("--idiomatic", action="store_true", help="map per element, then batch")
    options = p.parse_args()
    if options.describe:
        sluice_peer.describe("tfdata", SUPPORTED, "prefetching")
    else:
        plan = sluice_peer.start("tfdata", "tensorflow " + tf.__version__, options)
        plan.require(SUPPORTED)
        sluice_peer.serve(plan, make_batches(plan, options), options)

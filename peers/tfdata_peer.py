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
(tf.vectorized_map makes them a while loop, 8x slower on PR-2), and is then
the idiomatic form.

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
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# Plain Eigen kernels: oneDNN's may reorder float arithmetic ("slightly
# different numerical results", in TensorFlow's own words).
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

# Grappler's arithmetic optimizer rewrites a chain of multiplies by constants
# (x * a * b into x * (a * b)), which rounds once where sluice rounds twice:
# PC-1's deeper chains differed by an ulp with it on.
tf.config.optimizer.set_experimental_options({"arithmetic_optimization": False})

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sluice_ops  # noqa: E402
import sluice_peer  # noqa: E402

SUPPORTED = {"pack_tokens", "normalize", "scale", "clip", "add", "multiply", "random_crop", "random_hflip",
             "random_crop3d", "random_flip3d", "one_hot", "pad_tokens", "log1p", "hash_ids", "bag_offsets",
             "bucket_by_length", "pad_to_multiple", "attention_mask", "rebatch", "rot90", "random_brightness",
             "random_scale", "affine", "dropout", "gaussian_noise", "mixup", "cutmix"}
# Ops with per-element decisions (their rows are gathered by element id).
DECIDED = ("random_crop", "random_hflip", "random_crop3d", "random_flip3d", "rot90", "random_brightness",
           "random_scale")
# Ops that tf.vectorized_map turns into a while loop (a slice at a
# data-dependent offset, a tf.cond, a switch over turns, a per-element seed):
# the tuned form maps them per element (make_batches).
RANDOM = ("random_crop", "random_hflip", "random_crop3d", "random_flip3d", "rot90", "gaussian_noise", "dropout")
BATCH = ("bag_offsets", "pad_to_multiple", "attention_mask", "mixup", "cutmix")


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
    counter = (U64(ones * tf.bitwise.bitwise_and(i, tf.constant(sluice_ops.M32, tf.uint64))),
               U64(ones * tf.bitwise.right_shift(i, tf.constant(32, tf.uint64))),
               U64(ones * tf.constant(epoch, tf.uint64)), U64(tf.cast(tf.range(blocks, dtype=tf.int64), tf.uint64)))
    key = sluice_ops.philox_key(int(plan.raw["seed"]), op["op_id"])
    words = tf.reshape(tf.stack([w.t for w in sluice_ops.philox4x32_10(counter, key)], axis=-1), [-1])[:values]
    keep = tf.reshape(words >= tf.constant(sluice_ops.dropout_threshold(np.float32(op["params"]["p"])), tf.uint64),
                      tf.shape(x))
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
    """sluice_ops' array interface in TensorFlow (float32 arithmetic)."""

    f32 = staticmethod(lambda v: tf.constant(v, tf.float32))
    to_f32 = staticmethod(lambda i: tf.cast(i, tf.float32))
    fence = staticmethod(lambda x: x)
    shr = staticmethod(lambda i, n: tf.bitwise.right_shift(i, n))
    band = staticmethod(lambda i, m: tf.bitwise.bitwise_and(i, m))

    @staticmethod
    def where(cond, a, b):
        return tf.where(cond, a, b)

    @staticmethod
    def bits(x):
        return tf.bitcast(tf.cast(x, tf.float32), tf.int32)

    @staticmethod
    def from_bits(i):
        return tf.bitcast(tf.cast(i, tf.int32), tf.float32)


def hash_ids(x, sizes):
    """Each id of column j to its hash mod sizes[j]; missing (negative) ids stay -1."""
    high = sluice_ops.id_hash_high32(tf.bitcast(x, tf.uint64), lambda v, n: tf.bitwise.right_shift(v, tf.constant(
        n, tf.uint64)), lambda c: tf.constant(c, tf.uint64))
    hashed = tf.math.floormod(tf.bitcast(high, tf.int64), tf.constant(sizes, tf.int64))
    return tf.where(x < 0, tf.constant(-1, tf.int64), hashed)


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
                partner = tf.gather(tf.constant(plan.batch_partners(op)), j)[:tf.shape(x)[0]]
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

    def fn(i):
        out = {}
        for name, data in sources.items():
            if pack is not None and name == pack["field"]:
                p = pack["params"]
                idx = i * p["seq_len"] + tf.range(p["seq_len"], dtype=tf.int64)
                n = tf.shape(data, out_type=tf.int64)[0]
                seq = tf.gather(data, tf.minimum(idx, n - 1))
                out[name] = tf.where(idx < n, seq, tf.constant(p["pad_id"], dtype=data.dtype))
            else:
                out[name] = tf.gather(data, i)
        for op in ops:
            kind, p, name = op["kind"], op["params"], op["field"]
            if kind in BATCH:
                continue
            x = out[name]
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
                    x = tf.cond(tf.bitwise.bitwise_and(axes, bit) != 0, lambda x=x, a=axis: tf.reverse(x, axis=[a]),
                                lambda x=x: x)
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
                x = tf.where(pos < keep, x[:p["length"]], tf.where(pos == keep, p["end_id"], p["pad_id"]))
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
                x = (x * tf.constant(np.asarray(p["scale"][:c], dtype=np.float32))
                     + tf.constant(np.asarray(p["bias"][:c], dtype=np.float32)))
            elif kind == "dropout":
                x = dropout(plan, op, x, i, epoch)
            elif kind == "gaussian_noise":
                # A stateless draw keyed by (seed, op id) in one word and
                # (epoch, element id) in the other: the same noise whichever
                # of tf.data's threads maps the element, and in both forms.
                key = (int(plan.raw["seed"]) * 1000003 + op["op_id"]) % 2**63
                seed = tf.stack([tf.constant(key, tf.int64), tf.cast(epoch, tf.int64) * 2**32 + tf.cast(i, tf.int64)])
                noise = tf.random.stateless_normal(tf.shape(x), seed, dtype=tf.float32)
                x = x + tf.constant(p["sigma"], tf.float32) * noise
            out[name] = x
        return out

    return fn


def make_batches(plan, options):
    sources = {f["name"]: tf.constant(plan.load_source(f["name"])) for f in plan.source_fields}
    ops = list(plan.ops)
    pack = ops.pop(0) if ops and ops[0]["kind"] == "pack_tokens" else None
    dataset = None
    for epoch, batches in sorted(sluice_peer.epoch_batches(plan).items()):
        decisions = {op["index"]: tf.constant(plan.decisions(op, epoch))
                     for op in ops if op["kind"] in DECIDED}
        start = batches[0]["offset"]
        ids = plan.order(epoch)[start:start + sum(b["rows"] for b in batches)]
        fn = element_fn(plan, sources, ops, pack, decisions, epoch)
        # tf.vectorized_map turns a per-element crop or flip (a slice at a
        # data-dependent offset, a tf.cond) into a while loop: PR-2's batch
        # took 26 ms that way against 3.4 ms mapped per element, so a tf.data
        # expert maps those per element in parallel, as below.
        per_element = options.idiomatic or any(op["kind"] in RANDOM for op in ops)
        if per_element:
            ds = (tf.data.Dataset.from_tensor_slices(ids)
                  .map(fn, num_parallel_calls=tf.data.AUTOTUNE)
                  .batch(plan.batch_size))
        else:
            # tf.data's performance guide: batch before map, and vectorize
            # the function over the batch (one call per batch, batched ops).
            ds = (tf.data.Dataset.from_tensor_slices(ids)
                  .batch(plan.batch_size)
                  .map(lambda batch_ids, fn=fn: tf.vectorized_map(fn, batch_ids),
                       num_parallel_calls=tf.data.AUTOTUNE))
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
        plan = sluice_peer.Plan(options.export_dir)
        plan.require(SUPPORTED)
        sluice_peer.serve("tfdata", "tensorflow " + tf.__version__, plan, make_batches(plan, options), options)

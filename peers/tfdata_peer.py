"""peer:tfdata: the scenario's pipeline written the way a tf.data user writes
it: tf.data.Dataset.from_tensor_slices over the exported order (element ids),
.map(parse_and_transform, num_parallel_calls=AUTOTUNE) gathering each element
from the source tensors and applying the ops with TensorFlow ops, .batch(),
.prefetch(AUTOTUNE), iterated eagerly; each batch's tensors become numpy
arrays (.numpy()) before the clock stops.

It computes what sluice computes, not the shortest idiom where the two round
differently: normalize is (x - mean) * inv_std with inv_std = float32(1 / std);
clip is two comparisons (tf.where), so NaN passes through as in sluice;
float32 throughout. tf.data keeps the order (deterministic=True, its default).
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# Plain Eigen kernels: oneDNN's may reorder float arithmetic ("slightly
# different numerical results", in TensorFlow's own words).
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sluice_peer  # noqa: E402

SUPPORTED = {"pack_tokens", "normalize", "scale", "clip", "add", "multiply", "random_crop", "random_hflip"}


def element_fn(plan, sources, ops, pack, decisions):
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
                     for op in ops if op["kind"] in ("random_crop", "random_hflip")}
        start = batches[0]["offset"]
        ids = plan.order(epoch)[start:start + sum(b["rows"] for b in batches)]
        ds = (tf.data.Dataset.from_tensor_slices(ids)
              .map(element_fn(plan, sources, ops, pack, decisions), num_parallel_calls=tf.data.AUTOTUNE)
              .batch(plan.batch_size))
        dataset = ds if dataset is None else dataset.concatenate(ds)
    for batch in dataset.prefetch(tf.data.AUTOTUNE):
        yield {k: v.numpy() for k, v in batch.items()}


if __name__ == "__main__":
    sluice_peer.main("tfdata", "tensorflow " + tf.__version__, make_batches, SUPPORTED)

"""peer:numpy: the scenario's pipeline written the way a numpy user writes it,
vectorized over one batch at a time: fancy-index gather, broadcast arithmetic,
advanced-index crops and masked flips.

It computes what sluice computes, not numpy's shortest idiom: normalize is
(x - mean) * inv_std with inv_std = float32(1 / std), as sluice's kernels do,
rather than (x - mean) / std, which rounds differently; clip is two
comparisons, so NaN passes through as in sluice. Everything stays float32.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sluice_peer  # noqa: E402

SUPPORTED = {"pack_tokens", "normalize", "scale", "clip", "add", "multiply", "random_crop", "random_hflip"}


def gather_tokens(stream, ids, seq_len, pad):
    """Sequences ids of a token stream cut every seq_len tokens, padded past its end."""
    idx = ids[:, None] * seq_len + np.arange(seq_len, dtype=np.int64)[None, :]
    inside = idx < stream.shape[0]
    out = stream.take(np.minimum(idx, stream.shape[0] - 1))
    out[~inside] = pad
    return out


def normalize(x, p):
    mean = np.asarray(p["mean"], dtype=np.float32)
    inv_std = np.asarray(p["inv_std"], dtype=np.float32)
    if p["channels"] == 1:
        mean, inv_std = mean[0], inv_std[0]
    return (x.astype(np.float32) - mean) * inv_std


def clip(x, p):
    lo, hi = np.float32(p["lo"]), np.float32(p["hi"])
    return np.where(x < lo, lo, np.where(x > hi, hi, x)).astype(np.float32)


def random_crop(x, p, dec):
    """Crops each image at its offset and pads it back, centred, with zeros."""
    n, h, w = x.shape[0], x.shape[1], x.shape[2]
    ch, cw = p["crop_h"], p["crop_w"]
    top, left = (h - ch) // 2, (w - cw) // 2
    rows = dec[:, 0:1] + np.arange(ch)[None, :]
    cols = dec[:, 1:2] + np.arange(cw)[None, :]
    out = np.zeros_like(x)
    out[:, top:top + ch, left:left + cw] = x[np.arange(n)[:, None, None], rows[:, :, None], cols[:, None, :]]
    return out


def random_hflip(x, dec):
    flip = dec[:, 0] != 0
    x = x.copy() if not x.flags.writeable else x
    x[flip] = x[flip][:, :, ::-1]
    return x


def make_batches(plan, options):
    sources = {f["name"]: plan.load_source(f["name"]) for f in plan.source_fields}
    for i in range(len(plan.batches)):
        epoch = plan.batches[i]["epoch"]
        ids = plan.batch_ids(i)
        fields = {}
        ops = plan.ops
        if ops and ops[0]["kind"] == "pack_tokens":
            p = ops[0]["params"]
            fields[ops[0]["field"]] = gather_tokens(sources[ops[0]["field"]], ids, p["seq_len"], p["pad_id"])
            ops = ops[1:]
        for name, data in sources.items():
            if name not in fields:
                fields[name] = data[ids]
        for op in ops:
            kind, p, name = op["kind"], op["params"], op["field"]
            x = fields[name]
            if kind == "normalize":
                x = normalize(x, p)
            elif kind in ("scale", "multiply"):
                x = x * np.float32(p["value"])
            elif kind == "add":
                x = x + np.float32(p["value"])
            elif kind == "clip":
                x = clip(x, p)
            elif kind == "random_crop":
                x = random_crop(x, p, plan.decisions(op, epoch)[ids])
            elif kind == "random_hflip":
                x = random_hflip(x, plan.decisions(op, epoch)[ids])
            fields[name] = x
        yield fields


if __name__ == "__main__":
    sluice_peer.main("numpy", "numpy " + np.__version__, make_batches, SUPPORTED)

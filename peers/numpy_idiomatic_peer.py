"""peer:numpy-idiomatic: the scenario's pipeline written the way numpy's
tutorials and most of its users write it, vectorized over one batch at a
time: fancy-index gather (source[ids]), broadcast arithmetic that makes a new
array per op ((x - mean) * inv_std with mean of shape (channels,)),
advanced-index crops and boolean-mask flips. peers/numpy_peer.py is the
same work as numpy's experts write it.

It computes what sluice computes, not numpy's shortest idiom: normalize is
(x - mean) * inv_std with inv_std = float32(1 / std), as sluice's kernels do,
rather than (x - mean) / std, which rounds differently; clip is two
comparisons, so NaN passes through as in sluice. Everything stays float32.
zscore's moments are summed in float64 in sluice's fixed order (value i into
partial sum i mod 8, the partials added pairwise); log1p is sluice's own
libm-free definition and hash_ids SplitMix64 seeded with the id (gamma,
then finalizer), from
peers/sluice_ops.py in numpy arithmetic (numpy's np.log1p rounds
differently, and the protocol compares bits).
"""

import functools
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sluice_ops
import sluice_peer

# What this script implements: its line in peers/ops.txt (the storage peers,
# which reuse apply_ops without a batch index, declare less). How, beyond
# the gate: the ops with exported per-element and per-batch decisions, and
# gaussian noise drawn by numpy's own generator, keyed by (seed, op id,
# epoch, batch) as a numpy user keys it: its batches cannot equal sluice's,
# so sluice checks them statistically (docs/peers.md). IO-4's: sluice's
# libm-free trig_rounds in float64 (sluice_ops), and a cache of each
# element's fields after the ops before it, which make_batches keeps across
# the plan's epochs (apply_ops alone passes a cache through). PC-5's: affine
# from the plan's scale and bias, and dropout's mask recomputed from its
# documented keying (Philox, sluice_ops) in train mode. PC-2's and PC-4's
# sub-op graphs: branch_mean, random_apply and random_choice run the ops
# they own (listed after them) on copies or on the rows their exported
# picks name. CV-4's and MM-1's bilinear resampling: sluice's plan and lerps
# (sluice_ops) in numpy's float32, random_resized_crop's box from its
# exported decisions (y, x, h, w per element). MM-2's log_mel: numpy's own
# FFT and matrix product on sluice's window and filter bank (sluice_ops),
# held to MM-2's stated tolerance.
SUPPORTED = sluice_peer.implements(__file__)
GRAPHS = ("branch_mean", "random_apply", "random_choice")


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
    out[:, top : top + ch, left : left + cw] = x[np.arange(n)[:, None, None], rows[:, :, None], cols[:, None, :]]
    return out


def random_hflip(x, dec):
    flip = dec[:, 0] != 0
    x = x.copy() if not x.flags.writeable else x
    x[flip] = x[flip][:, :, ::-1]
    return x


def resize_plan(size_in, out):
    """One axis of sluice's bilinear plan: source indices i0, i1 and i1's
    float32 weight for each of out outputs."""
    return sluice_ops.resize_axis(np.arange(out, dtype=np.int64), size_in, out, NumpyArrays)


def resize(x, out_h, out_w):
    """Images [n, h, w(, c)] (u8 or float32) resized bilinearly to out_h x
    out_w, in float32: the four source values of every output gathered with
    fancy indexing, then sluice's lerps (sluice_ops.bilinear)."""
    y0, y1, wy = resize_plan(x.shape[1], out_h)
    x0, x1, wx = resize_plan(x.shape[2], out_w)
    x = x.astype(np.float32)
    rows0, rows1 = x[:, y0], x[:, y1]
    shape = (1, 1, out_w) + (1,) * (x.ndim - 3)
    wx, wy = wx.reshape(shape), wy.reshape((1, out_h, 1) + (1,) * (x.ndim - 3))
    return sluice_ops.bilinear(rows0[:, :, x0], rows0[:, :, x1], rows1[:, :, x0], rows1[:, :, x1], wx, wy)


def random_resized_crop(x, p, dec):
    """Each image's exported box (y, x, h, w) cut out and resized to out_h x
    out_w, one image at a time, as torchvision's RandomResizedCrop is used."""
    return np.stack(
        [
            resize(x[i : i + 1, y : y + h, left : left + w], p["out_h"], p["out_w"])[0]
            for i, (y, left, h, w) in enumerate(dec.tolist())
        ]
    )


def zscore(x):
    """Per element (x - mean) * (1 / std), the moments in sluice's order."""
    n = x.shape[0]
    v = x.reshape(n, -1).astype(np.float64)
    lanes = -v.shape[1] % 8
    if lanes:
        v = np.concatenate([v, np.zeros((n, lanes))], axis=1)
    v = v.reshape(n, -1, 8)

    def lane_sum(parts):
        # parts [n, rows, 8]: each lane summed down its rows in order (numpy
        # reduces a non-contiguous axis row by row), then pairwise.
        p = np.add.reduce(parts, axis=1)
        return ((p[:, 0] + p[:, 1]) + (p[:, 2] + p[:, 3])) + ((p[:, 4] + p[:, 5]) + (p[:, 6] + p[:, 7]))

    count = x[0].size
    mean = lane_sum(v) / count
    centred = v - mean[:, None, None]
    if lanes:
        centred[:, -1, 8 - lanes :] = 0.0
    var = lane_sum(centred * centred) / count
    sd = np.sqrt(var)
    with np.errstate(divide="ignore"):
        inv = np.where(sd > 0.0, (1.0 / sd).astype(np.float32), np.float32(1.0))
    shape = (n,) + (1,) * (x.ndim - 1)
    return (x - mean.astype(np.float32).reshape(shape)) * inv.astype(np.float32).reshape(shape)


def random_crop3d(x, p, dec):
    """Each volume's d x h x w patch at its exported offset."""
    n = x.shape[0]
    z = dec[:, 0:1] + np.arange(p["d"])[None, :]
    y = dec[:, 1:2] + np.arange(p["h"])[None, :]
    w = dec[:, 2:3] + np.arange(p["w"])[None, :]
    return x[np.arange(n)[:, None, None, None], z[:, :, None, None], y[:, None, :, None], w[:, None, None, :]]


def random_flip3d(x, dec):
    """Mirrors each volume's axes named by its exported bits (D=1, H=2, W=4)."""
    x = x.copy()
    for bit, axis in ((1, 1), (2, 2), (4, 3)):
        sel = (dec[:, 0] & bit) != 0
        x[sel] = np.flip(x[sel], axis=axis)
    return x


def pad_tokens(x, p):
    """Each row's tokens before its first end id (at most length - 1), the end
    id, then pads."""
    length, end = p["length"], p["end_id"]
    is_end = x == end
    content = np.where(is_end.any(axis=1), is_end.argmax(axis=1), x.shape[1])
    keep = np.minimum(content, length - 1)
    width = min(length, x.shape[1])
    out = np.full((x.shape[0], length), p["pad_id"], dtype=np.int32)
    out[:, :width] = x[:, :width]
    pos = np.arange(length)[None, :]
    out[pos >= keep[:, None]] = p["pad_id"]
    out[pos == keep[:, None]] = end
    return out


class NumpyArrays:
    """sluice_ops' array interface in numpy (float32 arithmetic; float64
    where the values are float64, as in trig_rounds)."""

    f32 = staticmethod(np.float32)
    where = staticmethod(np.where)
    rint = staticmethod(np.rint)
    floor = staticmethod(np.floor)
    to_f32 = staticmethod(lambda i: i.astype(np.float32))
    fence = staticmethod(lambda x: x)
    shr = staticmethod(lambda i, n: i >> n)
    band = staticmethod(lambda i, m: i & m)

    @staticmethod
    def bits(x):
        return np.ascontiguousarray(x, dtype=np.float32).view(np.int32)

    @staticmethod
    def from_bits(i):
        return np.ascontiguousarray(i, dtype=np.int32).view(np.float32)


def log1p(x):
    with np.errstate(all="ignore"):
        return sluice_ops.log1p(x.astype(np.float32), NumpyArrays).astype(np.float32)


def trig_rounds(x, p):
    """rounds of y = sin y + cos y on each value, in float64, back to float32."""
    return sluice_ops.trig_rounds(x.astype(np.float64), p["rounds"], NumpyArrays).astype(np.float32)


def dropout_keep(plan, op, ids, epoch, values):
    """Whether each of the values of elements ids is kept, [len(ids), values]:
    Philox4x32-10 keyed by the plan's seed and the op id, counter (element,
    epoch, value / 4), word value mod 4 kept when not below ceil(p 2^32)."""
    ids = np.asarray(ids, dtype=np.uint64)
    blocks = -(-values // 4)
    shape = (len(ids), blocks)
    counter = (
        np.broadcast_to((ids & np.uint64(sluice_ops.M32))[:, None], shape),
        np.broadcast_to((ids >> np.uint64(32))[:, None], shape),
        np.full(shape, epoch, dtype=np.uint64),
        np.broadcast_to(np.arange(blocks, dtype=np.uint64)[None, :], shape),
    )
    key = sluice_ops.philox_key(int(plan.raw["seed"]), op["op_id"])
    words = np.stack(sluice_ops.philox4x32_10(counter, key), axis=-1).reshape(len(ids), blocks * 4)[:, :values]
    return words >= np.uint64(sluice_ops.dropout_threshold(np.float32(op["params"]["p"])))


def dropout_scale(p):
    """float32(1 / (1 - p)), each step in float32 as sluice computes it."""
    return np.float32(1.0) / (np.float32(1.0) - np.float32(p))


def dropout(plan, op, x, ids, epoch):
    if plan.raw.get("mode", "train") == "eval":
        return x
    keep = dropout_keep(plan, op, ids, epoch, x[0].size).reshape(x.shape)
    return np.where(keep, x * dropout_scale(op["params"]["p"]), np.float32(0.0))


@functools.cache
def mel_constants(frame, sample_rate, n_fft, mels):
    """The Hann window (float64) and the mel filter bank (float32, as sluice
    rounds it), made once per geometry as Whisper's lru_cached mel_filters."""
    return (
        np.array(sluice_ops.hann_window(frame)),
        np.array(sluice_ops.mel_filter_bank(sample_rate, n_fft, mels), dtype=np.float32),
    )


def log_mel(x, p):
    """Each waveform's log-mel spectrogram as numpy's tutorials compute one:
    frames by fancy indexing, the window, np.fft.rfft (float64), |X|^2, a
    product with the filter bank, then Whisper's log. Not bitwise: the FFT
    and the product sum in their own order (docs/peers.md)."""
    frame, hop = p["frame"], p["hop"]
    window, filters = mel_constants(frame, p["sample_rate"], p["n_fft"], p["mels"])
    frames = sluice_ops.log_mel_frames(x.shape[1], p)
    index = np.arange(frame)[None, :] + hop * np.arange(frames)[:, None]
    spectrum = np.fft.rfft(x[:, index] * window, n=p["n_fft"])
    mel = (np.abs(spectrum) ** 2) @ filters
    # fmax, not maximum: a NaN goes to the floor, as sluice's comparison sends it.
    log_spec = np.log10(np.fmax(mel, sluice_ops.LOG_MEL_FLOOR))
    log_spec = np.maximum(log_spec, log_spec.max(axis=(1, 2), keepdims=True) - sluice_ops.LOG_MEL_DECADES)
    return ((log_spec + sluice_ops.LOG_MEL_SHIFT) * sluice_ops.LOG_MEL_SCALE).astype(np.float32)


def affine(x, p):
    """x * scale[c] + bias[c] over the channels (last axis), in float32."""
    c = p["channels"]
    return x * np.asarray(p["scale"][:c], dtype=np.float32) + np.asarray(p["bias"][:c], dtype=np.float32)


def hash_ids(x, p):
    """Each id of column j to its hash mod size[j]; missing (negative) ids stay -1."""
    high = sluice_ops.id_hash_high32(x.astype(np.uint64), lambda v, n: v >> np.uint64(n), np.uint64)
    sizes = np.asarray(p["sizes"], dtype=np.uint64)
    return np.where(x < 0, np.int64(-1), (high % sizes).astype(np.int64))


def pad_to_multiple(x, lengths, p):
    """The batch's rows cut to the smallest multiple that holds its longest
    sequence (at most the capacity), pads after each row's length."""
    capacity = x.shape[1]
    longest = min(max(int(lengths.max(initial=0)), 0), capacity)
    m = p["multiple"]
    width = min((longest + m - 1) // m * m, capacity)
    out = x[:, :width].copy()
    out[np.arange(width)[None, :] >= np.clip(lengths, 0, width)[:, None]] = p["pad_id"]
    return out


def attention_mask(x, lengths):
    width = x.shape[1]
    return (np.arange(width)[None, :] < np.clip(lengths, 0, width)[:, None]).astype(np.uint8)


def rot90(x, k):
    """Each image turned k[i] quarter turns counter-clockwise over (h, w)."""
    out = np.empty_like(x)
    for turns in range(4):
        rows = k == turns
        if rows.any():
            out[rows] = np.rot90(x[rows], turns, axes=(1, 2))
    return out


def per_row(values, x):
    """values[i] broadcast over row i of x."""
    return values.reshape((-1,) + (1,) * (x.ndim - 1))


def random_brightness(x, p, u24):
    # d = f32(delta) * f32((u24 - 2^23) / 2^23): the second factor is exact.
    d = np.float32(p["delta"]) * ((u24.astype(np.float64) - 2**23) / 2**23).astype(np.float32)
    return x + per_row(d.astype(np.float32), x)


def random_scale(x, p, u24):
    lo, hi = np.float32(p["lo"]), np.float32(p["hi"])
    f = (lo + (hi - lo) * (u24.astype(np.float64) / 2**24).astype(np.float32)).astype(np.float32)
    return x * per_row(np.minimum(f, hi), x)


def blend(x, partner, w_own, w_partner):
    """x[i] * w_own + x[partner[i]] * w_partner: two f32 products, then their sum."""
    return (x * np.float32(w_own)).astype(np.float32) + (x[partner] * np.float32(w_partner)).astype(np.float32)


def mix(plan, op, fields, batch):
    """MixUp and CutMix from the exported per-batch decisions of batch `batch`."""
    d = op["decisions"]
    row = plan.batch_decisions(op)[batch]
    rows = fields[op["field"]].shape[0]
    partner = plan.batch_partners(op)[batch][:rows]
    label = op["params"]["label"]
    if op["kind"] == "mixup":
        w_own, w_partner = row[1], row[2]
        fields[op["field"]] = blend(fields[op["field"]], partner, w_own, w_partner)
    else:
        y0, y1, x0, x1 = (int(v) for v in row[1:5])
        w_own, w_partner = row[5], row[6]
        x = fields[op["field"]]
        out = x.copy()
        out[:, y0:y1, x0:x1] = x[partner][:, y0:y1, x0:x1]
        fields[op["field"]] = out
    fields[label] = blend(fields[label], partner, w_own, w_partner)
    assert d["exported"]


def stored_elements(plan):
    """Every element's fields as a storage peer writes them (sample i is
    element i): the source fields, with pack_tokens' sequences cut from its
    stream (as users store tokenized text). Returns the fields and the ops
    left to run per batch."""
    sources = {f["name"]: plan.load_source(f["name"]) for f in plan.source_fields}
    ops = list(plan.ops)
    count = plan.raw["dataset_size"]
    elements = {}
    if ops and ops[0]["kind"] == "pack_tokens":
        pack = ops.pop(0)
        p = pack["params"]
        elements[pack["field"]] = gather_tokens(sources[pack["field"]], np.arange(count), p["seq_len"], p["pad_id"])
    for name, data in sources.items():
        elements.setdefault(name, data)
    return elements, ops


def gather(plan, sources, ids):
    """A batch's fields: the source rows of ids (pack_tokens' sequences cut from
    its token stream). Returns the fields and the ops left to apply."""
    fields = {}
    ops = plan.ops
    if ops and ops[0]["kind"] == "pack_tokens":
        p = ops[0]["params"]
        fields[ops[0]["field"]] = gather_tokens(sources[ops[0]["field"]], ids, p["seq_len"], p["pad_id"])
        ops = ops[1:]
    for name, data in sources.items():
        if name not in fields:
            fields[name] = data[ids]
    return fields, ops


def sub_ops(ops, k):
    """The two sub-chains a graph op ops[k] owns (its ops_a ops after it and
    the ops_b after those), and the index of the op after them."""
    p = ops[k]["params"]
    a = ops[k + 1 : k + 1 + p["ops_a"]]
    b = ops[k + 1 + p["ops_a"] : k + 1 + p["ops_a"] + p["ops_b"]]
    if any(op["kind"] in GRAPHS for op in a + b):
        raise SystemExit("op %d (%s) owns another graph op, which this peer does not nest" % (k, ops[k]["kind"]))
    return a, b, k + 1 + p["ops_a"] + p["ops_b"]


def run_graph(plan, op, chains, x, epoch, ids, batch):
    """A graph op on field values x: branch_mean's (a + b) / 2 as sluice's
    blend computes it (a * 0.5 + b * 0.5, two f32 products then their sum);
    random_apply's chain on the rows whose pick is 1; random_choice's chain a
    on the rows whose branch is 0 and chain b on the others."""
    name = op["field"]

    def run(chain, rows):
        return apply_ops(plan, {name: x[rows]}, chain, epoch, ids[rows], batch=batch)[name]

    every = np.arange(len(ids))
    if op["kind"] == "branch_mean":
        half = np.float32(0.5)
        return run(chains[0], every) * half + run(chains[1], every) * half
    pick = plan.decisions(op, epoch)[ids][:, 0]
    out = x.copy()
    if op["kind"] == "random_apply":
        rows = np.flatnonzero(pick != 0)
        out[rows] = run(chains[0], rows)
    else:
        for branch, chain in enumerate(chains):
            rows = np.flatnonzero(pick == branch)
            out[rows] = run(chain, rows)
    return out


def apply_ops(plan, fields, ops, epoch, ids, batch=None):
    """The plan's ops, in order, on a batch's fields (elements ids of epoch;
    batch, the index in plan.batches, for the ops with per-batch decisions)."""
    k = 0
    while k < len(ops):
        op = ops[k]
        kind, p, name = op["kind"], op["params"], op["field"]
        x = fields[name]
        k += 1
        if kind in GRAPHS:
            a, b, k = sub_ops(ops, k - 1)
            fields[name] = run_graph(plan, op, (a, b), x, epoch, ids, batch)
            continue
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
        elif kind == "zscore":
            x = zscore(x)
        elif kind == "resize":
            x = resize(x, p["out_h"], p["out_w"])
        elif kind == "random_resized_crop":
            x = random_resized_crop(x, p, plan.decisions(op, epoch)[ids])
        elif kind == "random_crop3d":
            x = random_crop3d(x, p, plan.decisions(op, epoch)[ids])
        elif kind == "random_flip3d":
            x = random_flip3d(x, plan.decisions(op, epoch)[ids])
        elif kind == "one_hot":
            x = (x[:, None] == np.arange(p["classes"])[None, :]).astype(np.float32)
        elif kind == "pad_tokens":
            x = pad_tokens(x, p)
        elif kind == "log1p":
            x = log1p(x)
        elif kind == "hash_ids":
            x = hash_ids(x, p)
        elif kind == "trig_rounds":
            x = trig_rounds(x, p)
        elif kind == "log_mel":
            x = log_mel(x, p)
        elif kind == "affine":
            x = affine(x, p)
        elif kind == "dropout":
            x = dropout(plan, op, x, ids, epoch)
        elif kind == "bag_offsets":
            # Each column's running count of present ids down the batch.
            fields[p["out"]] = np.cumsum(x >= 0, axis=0, dtype=np.int64)
        elif kind == "pad_to_multiple":
            x = pad_to_multiple(x, fields[p["lengths"]], p)
        elif kind == "attention_mask":
            fields[p["out"]] = attention_mask(x, fields[p["lengths"]])
        elif kind == "rot90":
            x = rot90(x, plan.decisions(op, epoch)[ids][:, 0])
        elif kind == "random_brightness":
            x = random_brightness(x, p, plan.decisions(op, epoch)[ids][:, 0])
        elif kind == "random_scale":
            x = random_scale(x, p, plan.decisions(op, epoch)[ids][:, 0])
        elif kind == "gaussian_noise":
            rng = np.random.default_rng([int(plan.raw["seed"]), op["op_id"], int(epoch), int(batch)])
            x = x + np.float32(p["sigma"]) * rng.standard_normal(x.shape, dtype=np.float32)
        elif kind in ("mixup", "cutmix"):
            mix(plan, op, fields, batch)
            continue
        # cache leaves the bytes of the ops before it as they are (the
        # caching itself is ElementCache's); bucket_by_length is in the
        # exported order already; rebatch
        # splits a batch into micro-batches and joins them back, which
        # leaves its bytes as they were.
        fields[name] = x
    return fields


def cache_index(plan):
    """The plan's cache op's index, or None (a pipeline has at most one)."""
    return next((op["index"] for op in plan.ops if op["kind"] == "cache"), None)


class ElementCache:
    """A cache as numpy users write one: a dict from element id to its fields
    after the ops before the cache op (those ops draw nothing, so an
    element's fields are the same in every epoch), filled by the batches
    that first meet the element and read back by every later one."""

    def __init__(self, plan, sources):
        self.plan, self.sources = plan, sources
        self.at = cache_index(plan)
        self.rows = {}

    def fields(self, ids, epoch, batch):
        """The batch's fields after the cache op, and the ops left to apply."""
        missing = [e for e in ids.tolist() if e not in self.rows]
        fields, ops = gather(self.plan, self.sources, np.asarray(missing, dtype=np.int64))
        before = [op for op in ops if op["index"] < self.at]
        after = [op for op in ops if op["index"] > self.at]
        if missing:
            done = apply_ops(self.plan, fields, before, epoch, np.asarray(missing), batch=batch)
            for k, e in enumerate(missing):
                self.rows[e] = {name: values[k] for name, values in done.items()}
        names = list(self.rows[int(ids[0])]) if len(ids) else []
        return {name: np.stack([self.rows[e][name] for e in ids.tolist()]) for name in names}, after


def make_batches(plan, options):
    sources = {f["name"]: plan.load_source(f["name"]) for f in plan.source_fields}
    cache = ElementCache(plan, sources) if cache_index(plan) is not None else None
    for i in range(len(plan.batches)):
        epoch = plan.batches[i]["epoch"]
        ids = plan.batch_ids(i)
        if cache is not None:
            fields, ops = cache.fields(ids, epoch, i)
        else:
            fields, ops = gather(plan, sources, ids)
        yield apply_ops(plan, fields, ops, epoch, ids, batch=i)


if __name__ == "__main__":
    sluice_peer.main("numpy-idiomatic", "numpy " + np.__version__, make_batches, SUPPORTED)

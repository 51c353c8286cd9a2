"""peer:torch-idiomatic and peer:torch-idiomatic-w2: the scenario's pipeline
written the way PyTorch's tutorials and most of its users write it: a
map-style Dataset whose __getitem__ returns one transformed element as
tensors, a batch sampler that yields the exported order, the default collate,
and DataLoader(num_workers=0 or 2). peers/torch_peer.py is the same work as
PyTorch's experts write it.

It computes what sluice computes, not torchvision's idiom: Normalize would be
(x - mean) / std, which rounds differently from sluice's (x - mean) * inv_std
with inv_std = float32(1 / std), so the Dataset multiplies by inv_std. clip is
two comparisons (torch.where), so NaN passes through as in sluice. log1p
and the id hash are sluice's own definitions (peers/sluice_ops.py) in torch
arithmetic: torch.log1p rounds differently. The batch ops (bag offsets,
dynamic padding to a multiple and the attention mask) are a collate_fn over
the default collate, the way PyTorch users pad per batch.
"""

import os
import sys

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, Sampler
from torch.utils.data.dataloader import default_collate

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sluice_ops
import sluice_peer
from numpy_idiomatic_peer import GRAPHS, sub_ops

# What this script implements: its line in peers/ops.txt. How, beyond the
# gate: IO-4's trig_rounds (sluice's float64 sine and cosine, sluice_ops)
# with a cache of elements in the Dataset; PC-5's affine and dropout (its
# mask recomputed from the keying the plan documents, in int64 arithmetic);
# PC-2's and PC-4's sub-op graphs per element: branch_mean runs both chains
# it owns and blends them as sluice does, random_apply and random_choice run
# the chain the element's exported pick names (their noise is torch's own,
# so those scenarios are checked statistically); CV-4's resize and MM-1's
# random_resized_crop by sluice's bilinear plan and lerps (sluice_ops) in
# torch's float32, one element at a time, the crop's box from its exported
# decisions: torchvision's resize weighs and rounds otherwise (and rounds u8
# output), so it cannot be bitwise; MM-2's log_mel with torch's FFT and
# matmul on sluice's window and filter bank (sluice_ops), held to MM-2's
# stated tolerance, not bitwise.
SUPPORTED = sluice_peer.implements(__file__)
# Ops whose per-element decisions the export writes, and the batch ops (the
# collate_fn's). Beyond the gate: rot90's turns, brightness offsets and scale
# factors, MixUp's and CutMix's per-batch draws and partners; and gaussian
# noise drawn by torch's own generator (checked statistically).
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
BATCH = ("bag_offsets", "pad_to_multiple", "attention_mask", "mixup", "cutmix")


class TorchArrays:
    """sluice_ops' array interface in torch (float32 arithmetic)."""

    f32 = staticmethod(lambda v: torch.tensor(v, dtype=torch.float32))
    to_f32 = staticmethod(lambda i: i.to(torch.float32))
    rint = staticmethod(torch.round)  # half to even, as rint
    floor = staticmethod(torch.floor)
    fence = staticmethod(lambda x: x)
    shr = staticmethod(lambda i, n: i >> n)
    band = staticmethod(lambda i, m: i & m)

    @staticmethod
    def where(cond, a, b):
        def t(v):
            return v if torch.is_tensor(v) else torch.tensor(v, dtype=torch.int32)

        return torch.where(cond, t(a), t(b))

    @staticmethod
    def bits(x):
        return x.to(torch.float32).contiguous().view(torch.int32)

    @staticmethod
    def from_bits(i):
        return i.to(torch.int32).contiguous().view(torch.float32)


def resize(x, out_h, out_w):
    """One image [h, w(, c)] (u8 or float32) resized bilinearly to out_h x
    out_w in float32: its four source values per output by indexing, then
    sluice's lerps (sluice_ops.bilinear)."""
    y0, y1, wy = sluice_ops.resize_axis(torch.arange(out_h), x.shape[0], out_h, TorchArrays)
    x0, x1, wx = sluice_ops.resize_axis(torch.arange(out_w), x.shape[1], out_w, TorchArrays)
    x = x.to(torch.float32)
    rows0, rows1 = x[y0], x[y1]
    channel = (1,) * (x.dim() - 2)
    wx, wy = wx.view((1, out_w) + channel), wy.view((out_h, 1) + channel)
    return sluice_ops.bilinear(rows0[:, x0], rows0[:, x1], rows1[:, x0], rows1[:, x1], wx, wy)


def zscore(x):
    """(x - mean) * (1 / std) over the element's values, the moments summed in
    float64 in sluice's order: value i into partial sum i mod 8 (a column of
    a [-1, 8] view, summed down its rows), the partials added pairwise."""
    d = x.reshape(-1).to(torch.float64)
    n = d.shape[0]
    pad = -n % 8
    lanes = torch.nn.functional.pad(d, (0, pad)).view(-1, 8)

    def lane_sum(t):
        p = t.sum(0)
        return ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]))

    mean = lane_sum(lanes) / n
    centred = lanes - mean
    if pad:
        centred[-1, 8 - pad :] = 0
    sd = torch.sqrt(lane_sum(centred * centred) / n)
    inv = (1.0 / sd).to(torch.float32) if sd > 0 else torch.tensor(1.0, dtype=torch.float32)
    return (x - mean.to(torch.float32)) * inv


def hash_ids(x, sizes):
    """Each id of column j to its hash mod sizes[j]; missing (negative) ids stay
    -1. torch has no uint64: int64 arithmetic wraps alike, and a logical shift
    is an arithmetic one masked to the bits it keeps."""

    def shr(v, n):
        return (v >> n) & ((1 << (64 - n)) - 1)

    high = sluice_ops.id_hash_high32(
        x.to(torch.int64), shr, lambda c: torch.tensor(sluice_ops.signed64(c), dtype=torch.int64)
    )
    return torch.where(x < 0, torch.tensor(-1, dtype=torch.int64), high % sizes)


class ExportedDataset(Dataset):
    """Element (epoch, id) of the exported data set, with its transforms."""

    def __init__(self, plan):
        self.plan = plan
        self.sources = {f["name"]: torch.from_numpy(plan.load_source(f["name"])) for f in plan.source_fields}
        self.ops = plan.ops
        self.decisions = {}
        self.sizes = {
            op["index"]: torch.tensor(op["params"]["sizes"], dtype=torch.int64)
            for op in self.ops
            if op["kind"] == "hash_ids"
        }
        for op in self.ops:
            if op["kind"] in RANDOM or op["kind"] in ("random_apply", "random_choice"):
                for e in range(plan.raw["epochs"]):
                    self.decisions[(op["index"], e)] = torch.from_numpy(plan.decisions(op, e))
        # The cache op: each element's fields after the ops before it (which
        # draw nothing), kept by element id in this process (each worker
        # keeps its own).
        self.cache_at = next((op["index"] for op in self.ops if op["kind"] == "cache"), None)
        self.cached = {}
        # log_mel's window and mel filter bank, made once, as a torchaudio
        # transform holds its own.
        self.mel = {
            op["index"]: (
                torch.tensor(sluice_ops.hann_window(op["params"]["frame"]), dtype=torch.float32),
                torch.tensor(
                    sluice_ops.mel_filter_bank(
                        op["params"]["sample_rate"], op["params"]["n_fft"], op["params"]["mels"]
                    ),
                    dtype=torch.float32,
                ),
            )
            for op in self.ops
            if op["kind"] == "log_mel"
        }

    def __len__(self):
        return self.plan.raw["dataset_size"]

    def __getitem__(self, key):
        epoch, i, _ = key
        out = {}
        ops = self.ops
        if ops and ops[0]["kind"] == "pack_tokens":
            p, name = ops[0]["params"], ops[0]["field"]
            stream = self.sources[name]
            seq = stream[i * p["seq_len"] : (i + 1) * p["seq_len"]]
            if seq.shape[0] < p["seq_len"]:
                seq = torch.cat([seq, torch.full((p["seq_len"] - seq.shape[0],), p["pad_id"], dtype=torch.int32)])
            out[name] = seq
            ops = ops[1:]
        for name, data in self.sources.items():
            if name not in out:
                out[name] = data[i]
        out[BATCH_KEY] = torch.tensor(key[2])
        if i in self.cached:
            out.update(self.cached[i])
            ops = [op for op in ops if op["index"] > self.cache_at]
        k = 0
        while k < len(ops):
            op = ops[k]
            kind, name = op["kind"], op["field"]
            k += 1
            if kind in BATCH:
                continue  # in the collate_fn
            if kind == "cache":
                self.cached[i] = {key: v for key, v in out.items() if key != BATCH_KEY}
                continue
            if kind in GRAPHS:
                a, b, k = sub_ops(ops, k - 1)
                out[name] = self.graph(op, (a, b), out[name], epoch, i)
                continue
            out[name] = self.apply(op, out[name], epoch, i)
        return out

    def chain(self, ops, x, epoch, i):
        """A graph op's chain of ops on one field's values x of element i."""
        for op in ops:
            x = self.apply(op, x, epoch, i)
        return x

    def graph(self, op, chains, x, epoch, i):
        """branch_mean's (a + b) / 2 as sluice's blend computes it (a * 0.5 +
        b * 0.5, two f32 products then their sum); random_apply's chain when
        the element's pick is 1; random_choice's chain a when its branch is 0
        and chain b when it is 1."""
        if op["kind"] == "branch_mean":
            half = torch.tensor(0.5, dtype=torch.float32)
            return self.chain(chains[0], x, epoch, i) * half + self.chain(chains[1], x, epoch, i) * half
        pick = int(self.decisions[(op["index"], epoch)][i][0])
        if op["kind"] == "random_apply":
            return self.chain(chains[0], x, epoch, i) if pick != 0 else x
        return self.chain(chains[pick], x, epoch, i) if pick in (0, 1) else x

    def apply(self, op, x, epoch, i):
        """One op that is neither a graph, a cache nor a batch op on field
        values x of element i of epoch; each returns a new tensor, so the
        sources and a graph's other chain see the values unchanged."""
        kind, p = op["kind"], op["params"]
        if kind == "normalize":
            mean = torch.tensor(p["mean"], dtype=torch.float32)
            inv_std = torch.tensor(p["inv_std"], dtype=torch.float32)
            x = (x.to(torch.float32) - mean) * inv_std
        elif kind in ("scale", "multiply"):
            x = x * torch.tensor(p["value"], dtype=torch.float32)
        elif kind == "add":
            x = x + torch.tensor(p["value"], dtype=torch.float32)
        elif kind == "clip":
            lo = torch.tensor(p["lo"], dtype=torch.float32)
            hi = torch.tensor(p["hi"], dtype=torch.float32)
            x = torch.where(x < lo, lo, torch.where(x > hi, hi, x))
        elif kind == "random_crop":
            oy, ox = (int(v) for v in self.decisions[(op["index"], epoch)][i])
            h, w, ch, cw = x.shape[0], x.shape[1], p["crop_h"], p["crop_w"]
            top, left = (h - ch) // 2, (w - cw) // 2
            y = torch.zeros_like(x)
            y[top : top + ch, left : left + cw] = x[oy : oy + ch, ox : ox + cw]
            x = y
        elif kind == "random_hflip":
            if int(self.decisions[(op["index"], epoch)][i][0]):
                x = torch.flip(x, dims=[1])
        elif kind == "zscore":
            x = zscore(x)
        elif kind == "resize":
            x = resize(x, p["out_h"], p["out_w"])
        elif kind == "random_resized_crop":
            y, left, h, w = (int(v) for v in self.decisions[(op["index"], epoch)][i])
            x = resize(x[y : y + h, left : left + w], p["out_h"], p["out_w"])
        elif kind == "random_crop3d":
            z, y, w = (int(v) for v in self.decisions[(op["index"], epoch)][i])
            x = x[z : z + p["d"], y : y + p["h"], w : w + p["w"]].clone()
        elif kind == "random_flip3d":
            axes = int(self.decisions[(op["index"], epoch)][i][0])
            dims = [d for bit, d in ((1, 0), (2, 1), (4, 2)) if axes & bit]
            if dims:
                x = torch.flip(x, dims=dims)
        elif kind == "one_hot":
            x = torch.nn.functional.one_hot(x.to(torch.int64), p["classes"]).to(torch.float32)
        elif kind == "pad_tokens":
            ends = (x == p["end_id"]).nonzero()
            keep = min(int(ends[0]) if len(ends) else x.shape[0], p["length"] - 1)
            y = torch.full((p["length"],), p["pad_id"], dtype=torch.int32)
            y[:keep] = x[:keep]
            y[keep] = p["end_id"]
            x = y
        elif kind == "log1p":
            x = sluice_ops.log1p(x, TorchArrays)
        elif kind == "rot90":
            x = torch.rot90(x, int(self.decisions[(op["index"], epoch)][i][0]), dims=(0, 1))
        elif kind == "random_brightness":
            # d = f32(delta) * f32((u24 - 2^23) / 2^23): the second factor is exact.
            u24 = float(self.decisions[(op["index"], epoch)][i][0])
            d = np.float32(p["delta"]) * np.float32((u24 - 2**23) / 2**23)
            x = x + torch.tensor(d, dtype=torch.float32)
        elif kind == "random_scale":
            u24 = float(self.decisions[(op["index"], epoch)][i][0])
            lo, hi = np.float32(p["lo"]), np.float32(p["hi"])
            f = np.float32(lo + np.float32(np.float32(hi - lo) * np.float32(u24 / 2**24)))
            x = x * torch.tensor(min(f, hi), dtype=torch.float32)
        elif kind == "gaussian_noise":
            # torch's own generator, keyed as a user keys it: the values
            # cannot be sluice's, so sluice checks them statistically.
            g = torch.Generator().manual_seed(
                hash((int(self.plan.raw["seed"]), op["op_id"], epoch, i)) & 0x7FFFFFFFFFFFFFFF
            )
            x = x + torch.tensor(p["sigma"], dtype=torch.float32) * torch.randn(x.shape, generator=g)
        elif kind == "hash_ids":
            x = hash_ids(x, self.sizes[op["index"]])
        elif kind == "trig_rounds":
            x = sluice_ops.trig_rounds(x.to(torch.float64), p["rounds"], TorchArrays).to(torch.float32)
        elif kind == "log_mel":
            x = log_mel(x, p, *self.mel[op["index"]])
        elif kind == "affine":
            c = p["channels"]
            x = x * torch.tensor(p["scale"][:c], dtype=torch.float32) + torch.tensor(p["bias"][:c], dtype=torch.float32)
        elif kind == "dropout" and self.plan.raw.get("mode", "train") != "eval":
            x = dropout(self.plan, op, x, i, epoch)
        return x


def log_mel(x, p, window, filters):
    """One waveform's log-mel spectrogram as Whisper's log_mel_spectrogram
    computes one, on sluice's framing: frames of p["frame"] samples p["hop"]
    apart with no centring or padding (x.unfold; torch.stft would centre a
    window shorter than n_fft inside it), torch.fft.rfft to n_fft, |X|^2, the
    filter bank's product, then Whisper's log. Float32 throughout; its FFT
    and product sum in their own order, so it is held to MM-2's tolerance."""
    frames = x.unfold(0, p["frame"], p["hop"]) * window
    power = torch.fft.rfft(frames, n=p["n_fft"]).abs() ** 2
    mel = power @ filters
    # fmax, not clamp: a NaN goes to the floor, as sluice's comparison sends it.
    log_spec = torch.fmax(mel, torch.tensor(sluice_ops.LOG_MEL_FLOOR, dtype=torch.float32)).log10()
    log_spec = torch.maximum(log_spec, log_spec.max() - sluice_ops.LOG_MEL_DECADES)
    return (log_spec + sluice_ops.LOG_MEL_SHIFT) * sluice_ops.LOG_MEL_SCALE


def dropout(plan, op, x, element, epoch):
    """Element `element`'s values kept or dropped by sluice's keyed mask
    (Philox4x32-10 on int64 words, counter (element, epoch, value / 4)),
    the kept ones times float32(1 / (1 - p))."""
    values = x.numel()
    blocks = -(-values // 4)
    draw = torch.arange(blocks, dtype=torch.int64)
    counter = (
        torch.full_like(draw, element & sluice_ops.M32),
        torch.full_like(draw, element >> 32),
        torch.full_like(draw, epoch),
        draw,
    )
    words = torch.stack(
        sluice_ops.philox4x32_10(counter, sluice_ops.philox_key(int(plan.raw["seed"]), op["op_id"])), dim=1
    ).reshape(-1)[:values]
    drop_p = np.float32(op["params"]["p"])
    keep = (words >= sluice_ops.dropout_threshold(drop_p)).reshape(x.shape)
    scale = torch.tensor(np.float32(1.0) / (np.float32(1.0) - drop_p), dtype=torch.float32)
    return torch.where(keep, x * scale, torch.tensor(0.0, dtype=torch.float32))


BATCH_KEY = "_sluice_batch"


def blend(x, partner, w_own, w_partner):
    """x[i] * w_own + x[partner[i]] * w_partner: two f32 products, then their sum."""
    return x * torch.tensor(w_own, dtype=torch.float32) + x[partner] * torch.tensor(w_partner, dtype=torch.float32)


def mix(plan, op, batch, k):
    """MixUp and CutMix on a collated batch from the exported per-batch
    decisions and partners of plan batch k (docs/peers.md, The export)."""
    row = plan.batch_decisions(op)[k]
    field, label = op["field"], op["params"]["label"]
    rows = batch[field].shape[0]
    partner = torch.from_numpy(plan.batch_partners(op)[k][:rows].astype(np.int64))
    if op["kind"] == "mixup":
        w_own, w_partner = row[1], row[2]
        batch[field] = blend(batch[field], partner, w_own, w_partner)
    else:
        y0, y1, x0, x1 = (int(v) for v in row[1:5])
        w_own, w_partner = row[5], row[6]
        x = batch[field]
        out = x.clone()
        out[:, y0:y1, x0:x1] = x[partner][:, y0:y1, x0:x1]
        batch[field] = out
    batch[label] = blend(batch[label], partner, w_own, w_partner)


class ExportedOrder(Sampler):
    """The exported batches: each a list of (epoch, element id)."""

    def __init__(self, plan):
        self.plan = plan

    def __iter__(self):
        for i, b in enumerate(self.plan.batches):
            yield [(b["epoch"], int(e), i) for e in self.plan.batch_ids(i)]

    def __len__(self):
        return len(self.plan.batches)


class Collate:
    """The default collate, then the plan's batch ops: each column's running
    count of present ids (bag_offsets), the batch cut to the smallest multiple
    that holds its longest sequence with pads after each row's length
    (pad_to_multiple), and the mask of each row's tokens (attention_mask)."""

    def __init__(self, plan):
        self.plan = plan
        self.ops = [op for op in plan.ops if op["kind"] in BATCH]

    def __call__(self, elements):
        batch = default_collate(elements)
        k = int(batch.pop(BATCH_KEY)[0])
        for op in self.ops:
            kind, p, x = op["kind"], op["params"], batch[op["field"]]
            if kind in ("mixup", "cutmix"):
                mix(self.plan, op, batch, k)
                continue
            if kind == "bag_offsets":
                batch[p["out"]] = torch.cumsum((x >= 0).to(torch.int64), dim=0)
                continue
            capacity = x.shape[1]
            lengths = batch[p["lengths"]]
            if kind == "pad_to_multiple":
                longest = min(max(int(lengths.max()), 0), capacity)
                m = p["multiple"]
                width = min((longest + m - 1) // m * m, capacity)
                keep = torch.arange(width)[None, :] < lengths.clamp(0, width)[:, None]
                batch[op["field"]] = torch.where(keep, x[:, :width], torch.tensor(p["pad_id"], dtype=x.dtype))
            else:
                width = x.shape[1]
                batch[p["out"]] = (torch.arange(width)[None, :] < lengths.clamp(0, width)[:, None]).to(torch.uint8)
        return batch


def make_batches(plan, options):
    # bucket_by_length is in the exported order already; rebatch splits a
    # batch into micro-batches and joins them back, the same bytes.
    loader = DataLoader(
        ExportedDataset(plan), batch_sampler=ExportedOrder(plan), num_workers=options.workers, collate_fn=Collate(plan)
    )
    for batch in loader:
        # Tensors on the CPU share their memory with numpy: no copy.
        yield {k: v.numpy() for k, v in batch.items()}


if __name__ == "__main__":
    torch.set_num_threads(1)
    sluice_peer.main(
        "torch-idiomatic",
        "torch " + torch.__version__,
        make_batches,
        SUPPORTED,
        kind="prefetching" if "--workers=2" in sys.argv else "per-batch",
    )

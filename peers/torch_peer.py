"""peer:torch: the scenario's pipeline as PyTorch's experts write a loader for
data that fits in memory (PyTorch's data-loading and performance tuning
guides): the Dataset fetches a whole batch at once (DataLoader with
batch_size=None over a batch sampler, so no per-element __getitem__ and no
collate), gathers it with torch.index_select into a tensor made once, and
applies the ops in place (copy_, sub_, mul_, masked_fill_), with constants
tiled over an element so each op is one contiguous pass; crops are one
index_select of every crop's rows (overlapping windows of the images'
pixels) into a zeroed tensor made once, the flipped ones reversed by one
index_select along the width. resize (CV-4) gathers, with
index_select into tensors made once, only the source rows the plan reads
and their left and right neighbours of every output value, then lerps in
place along the width and along the height in sluice's order
(sluice_ops.bilinear: b - a, times the weight, plus a);
random_resized_crop (MM-1) does the same for the whole batch at once, each
image's plan from its exported box (sluice_ops.resize_axis over tensors of
box sides), its rows by one index_select and its neighbours by
torch.gather; pad_tokens is a few whole-batch ops. It runs with one intra-op
thread, as DataLoader's own workers do: on this shared 2-vCPU machine (load
about 7) torch's default 2 threads made CV-1's median batch 68.8 ms against
0.10 ms on one (a thread pool waiting on a busy CPU), and gained at most
0.1 ms elsewhere.

The arithmetic is sluice's, in float32 and in the same order ((x - mean) *
inv_std with inv_std = float32(1 / std); clip is two comparisons, so NaN
passes through), so the output is bitwise the reference's.
peers/torch_idiomatic_peer.py is the same work as tutorials write it.

Beyond the gate it runs MM-2: pad_tokens as masked fills of a tensor made
once, and log_mel on sluice's definition (peers/sluice_ops.py) over the
whole batch: the frames an unfold view, the window multiplied into a
tensor made once, one torch.fft.rfft(out=), the power squared in place on
the spectrum's real view and summed into a tensor made once, one
torch.matmul(out=) with the filter bank and Whisper's log in place. Its FFT
and product sum in their own order, so MM-2 holds it to its stated
tolerance, not to the bit.
"""

import math
import os
import sys

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, Sampler

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sluice_ops
import sluice_peer
from torch_idiomatic_peer import TorchArrays

# What this script implements: its line in peers/ops.txt (MM-2's log_mel
# within its stated tolerance).
SUPPORTED = sluice_peer.implements(__file__)


def sequences(stream, p):
    """The token stream as rows of seq_len, its last row padded with pad_id."""
    seq = p["seq_len"]
    rows = -(-stream.shape[0] // seq)
    table = torch.full((rows * seq,), p["pad_id"], dtype=stream.dtype)
    table[: stream.shape[0]] = stream
    return table.view(rows, seq)


def tiled(values, channels, element_shape):
    """A per-channel constant repeated over one element (channels last),
    flat; one channel's is a 0-dim float32 tensor instead, which torch's
    kernels apply as a scalar (one stream read, not two)."""
    if channels == 1:
        return torch.tensor(values[0], dtype=torch.float32)
    count = int(np.prod(element_shape)) if element_shape else 1
    return torch.from_numpy(np.tile(np.asarray(values[:channels], dtype=np.float32), count // channels))


def lerp(a, b, w):
    """b = a + w * (b - a) in place, in float32: sluice_ops.bilinear's steps."""
    return b.sub_(a).mul_(w).add_(a)


def value_plan(x0, x1, wx, channels):
    """An axis plan over columns widened to the values of a row (channels
    last): source value indices and weights, one per output value."""
    c = torch.arange(channels)
    return (
        (x0.unsqueeze(-1) * channels + c).flatten(-2),
        (x1.unsqueeze(-1) * channels + c).flatten(-2),
        wx.repeat_interleave(channels, dim=-1),
    )


class Resize:
    """A resize op's plan, made once: the source rows it reads, the flat
    indices of their left and right neighbours, the weights tiled over the
    rows' values."""

    def __init__(self, in_shape, out_h, out_w):
        h, w = in_shape[0], in_shape[1]
        channels = in_shape[2] if len(in_shape) == 3 else 1
        self.out_shape = (out_h, out_w) + tuple(in_shape[2:])
        y0, y1, wy = sluice_ops.resize_axis(torch.arange(out_h), h, out_h, TorchArrays)
        x0, x1, wx = sluice_ops.resize_axis(torch.arange(out_w), w, out_w, TorchArrays)
        v0, v1, wv = value_plan(x0, x1, wx, channels)
        rows = torch.unique(torch.cat([y0, y1]))  # sorted, so a row's place is its searchsorted
        self.left = (rows[:, None] * (w * channels) + v0[None, :]).flatten()
        self.right = (rows[:, None] * (w * channels) + v1[None, :]).flatten()
        self.wv = wv.repeat(len(rows))
        self.top, self.bottom = torch.searchsorted(rows, y0), torch.searchsorted(rows, y1)
        self.wy = wy.repeat_interleave(out_w * channels).view(out_h, -1)
        self.rows = len(rows)

    def __call__(self, x, buffer, key):
        n = x.shape[0]
        flat = x.reshape(n, -1)
        a = torch.index_select(flat, 1, self.left, out=buffer((key, "a"), (n, self.left.shape[0]), torch.float32))
        b = torch.index_select(flat, 1, self.right, out=buffer((key, "b"), (n, self.left.shape[0]), torch.float32))
        across = lerp(a, b, self.wv).view(n, self.rows, -1)
        top = buffer((key, "top"), (n, self.top.shape[0], across.shape[2]), torch.float32)
        out = buffer((key, "out"), (n,) + self.out_shape, torch.float32)
        torch.index_select(across, 1, self.top, out=top)
        torch.index_select(across, 1, self.bottom, out=out.view(top.shape))
        lerp(top, out.view(top.shape), self.wy)
        return out


def resized_crop(x, ids, p, boxes):
    """random_resized_crop of rows ids of x (u8 or float32 images) for the
    whole batch: each image's plan from its box, its source rows in one
    index_select (then as float32), the neighbours with torch.gather, the
    two lerps in place."""
    n, channels = len(ids), x.shape[3] if x.dim() == 4 else 1
    out_h, out_w = p["out_h"], p["out_w"]
    y, left, h, w = (boxes[:, j : j + 1].to(torch.int64) for j in range(4))
    y0, y1, wy = sluice_ops.resize_axis(torch.arange(out_h)[None, :], h, out_h, TorchArrays)
    x0, x1, wx = sluice_ops.resize_axis(torch.arange(out_w)[None, :], w, out_w, TorchArrays)
    v0, v1, wv = value_plan(x0 + left, x1 + left, wx, channels)
    # The rows each image reads, top rows then bottom rows, as rows of x.
    rows = torch.cat([y0, y1], dim=1) + y + (ids * x.shape[1])[:, None]
    src = torch.index_select(x.reshape(x.shape[0] * x.shape[1], -1), 0, rows.flatten())
    src = src.to(torch.float32).view(n, 2 * out_h, -1)
    shape = (n, 2 * out_h, v0.shape[1])
    across = lerp(
        torch.gather(src, 2, v0[:, None, :].expand(shape)),
        torch.gather(src, 2, v1[:, None, :].expand(shape)),
        wv[:, None, :],
    )
    out = lerp(across[:, :out_h], across[:, out_h:], wy[:, :, None])
    return out.reshape((n, out_h, out_w) + tuple(x.shape[3:]))


def pad_tokens(x, p):
    """Each row's tokens before its first end id (at most length - 1), the
    end id, then pads, for the whole batch."""
    length, end, pad = p["length"], p["end_id"], p["pad_id"]
    is_end = x == end
    first = torch.where(is_end.any(dim=1), is_end.to(torch.int8).argmax(dim=1), x.shape[1])
    keep = first.clamp(max=length - 1)[:, None]
    out = torch.full((x.shape[0], length), pad, dtype=torch.int32)
    width = min(length, x.shape[1])
    out[:, :width] = x[:, :width]
    out.masked_fill_(torch.arange(length)[None, :] >= keep, pad)
    return out.scatter_(1, keep, end)


class BatchedExport(Dataset):
    """Batch k of the plan, fetched whole: dataset[k] is a dict of tensors."""

    def __init__(self, plan):
        self.plan = plan
        ops = list(plan.ops)
        self.pack = ops.pop(0) if ops and ops[0]["kind"] == "pack_tokens" else None
        self.ops = ops
        self.sources = {}
        for f in plan.source_fields:
            data = torch.from_numpy(plan.load_source(f["name"]))
            if self.pack is not None and f["name"] == self.pack["field"]:
                data = sequences(data, self.pack["params"])
            self.sources[f["name"]] = data
        self.buffers = {}
        self.tiles = {}
        self.resizes = {}
        self.decisions = {}
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
            for op in ops
            if op["kind"] == "log_mel"
        }

    def __len__(self):
        return len(self.plan.batches)

    def buffer(self, key, shape, dtype, zero=False):
        k = (key, shape, dtype)
        if k not in self.buffers:
            self.buffers[k] = torch.zeros(shape, dtype=dtype) if zero else torch.empty(shape, dtype=dtype)
        return self.buffers[k]

    def tile(self, op, element_shape):
        """normalize's mean and 1/std tiled over an element of element_shape
        (made once per op and shape: a resize before it changes the shape
        its source had)."""
        key = (op["index"], element_shape)
        if key not in self.tiles:
            p = op["params"]
            self.tiles[key] = (
                tiled(p["mean"], p["channels"], element_shape),
                tiled(p["inv_std"], p["channels"], element_shape),
            )
        return self.tiles[key]

    def decision(self, op, epoch):
        key = (op["index"], epoch)
        if key not in self.decisions:
            self.decisions[key] = self.plan.decisions(op, epoch)
        return self.decisions[key]

    def gather(self, name, ids):
        data = self.sources[name]
        out = self.buffer(("gather", name), (len(ids),) + tuple(data.shape[1:]), data.dtype)
        return torch.index_select(data, 0, ids, out=out)

    def crop(self, name, x, op, flip_op, ids, epoch, from_source):
        """random_crop (and a random_hflip right after it) over the whole
        batch in a few torch calls, none per image. Each crop's rows are
        cw-pixel windows of the images' row-major pixels starting at its
        offset: x seen as overlapping windows (an as_strided view) gives an
        index_select every crop's rows at once, the unflipped images' then
        the flipped ones', whose pixels one index_select along the width
        reverses; one index_select over the batch puts them back in order
        and one copy places them in the zeroed tensor. The per-image form
        (a slice, a flip and a copy for each image, as peer:numpy does it)
        spent about 7 us of torch 1.13's dispatch an image, and torch.flip
        allocates and reverses elementwise at about twice index_select's
        time: PR-2's batch took 1.1 to 1.2 ms that way against numpy's 0.63
        (docs/peers.md)."""
        p = op["params"]
        n = len(ids)
        h, w = x.shape[1], x.shape[2]
        ch, cw = p["crop_h"], p["crop_w"]
        top, left = (h - ch) // 2, (w - cw) // 2
        mirrored = w - left - cw  # the content's first column once mirrored
        out = self.buffer(("crop", op["index"]), (n,) + tuple(x.shape[1:]), x.dtype, zero=True)
        x = x.contiguous()
        pixel = math.prod(x.shape[3:])  # values a pixel
        windows = x.view(-1).as_strided((x.shape[0] * h * w - cw + 1, cw * pixel), (pixel, 1))
        # The indices in numpy, where the plan's decisions are: a few small
        # torch ops cost about 3 us each in dispatch, numpy's a fraction.
        ids_np = ids.numpy()
        rows = ids_np.astype(np.int64) if from_source else np.arange(n)
        offsets = self.decision(op, epoch)[ids_np].astype(np.int64)
        starts = (rows * h + offsets[:, 0]) * w + offsets[:, 1]  # each crop's first pixel
        row_steps = np.arange(ch) * w
        flips = np.zeros(n, dtype=bool)
        if flip_op is not None:
            flips = self.decision(flip_op, epoch)[ids_np, 0] != 0
        # The unflipped crops first, then the flipped ones reversed, in one
        # buffer; one index_select puts them back in the batch's order.
        order = np.concatenate([np.flatnonzero(~flips), np.flatnonzero(flips)])
        kept = n - int(flips.sum())
        pixel_shape = tuple(x.shape[3:])
        staged = self.buffer(("crop-rows", op["index"]), (n * ch, cw * pixel), x.dtype)
        if kept:
            rows_kept = torch.from_numpy((starts[order[:kept], None] + row_steps).ravel())
            torch.index_select(windows, 0, rows_kept, out=staged[: kept * ch])
        if kept < n:
            flipped = order[kept:]
            mirror = self.buffer(("crop-flip-rows", op["index"]), (n * ch, cw * pixel), x.dtype)[: len(flipped) * ch]
            torch.index_select(windows, 0, torch.from_numpy((starts[flipped, None] + row_steps).ravel()), out=mirror)
            torch.index_select(
                mirror.view((len(flipped), ch, cw) + pixel_shape),
                2,
                self.reversed_columns(cw),
                out=staged[kept * ch :].view((len(flipped), ch, cw) + pixel_shape),
            )
        staged = staged.view((n, ch, cw) + pixel_shape)
        if kept not in (0, n):
            position = np.empty(n, dtype=np.int64)
            position[order] = np.arange(n)
            in_order = self.buffer(("crop-in-order", op["index"]), tuple(staged.shape), x.dtype)
            staged = torch.index_select(staged, 0, torch.from_numpy(position), out=in_order)
        if mirrored == left or flip_op is None:
            out[:, top : top + ch, left : left + cw].copy_(staged)
        else:
            # The padding's columns differ for the two directions: the band
            # is zeroed, each image's content written where it goes.
            out[:, top : top + ch].zero_()
            for k, flip in enumerate(flips.tolist()):
                at = mirrored if flip else left
                out[k, top : top + ch, at : at + cw].copy_(staged[k])
        return out

    def reversed_columns(self, width):
        """The column indices width - 1 down to 0, made once per width."""
        key = ("reversed", width)
        if key not in self.tiles:
            self.tiles[key] = torch.arange(width - 1, -1, -1)
        return self.tiles[key]

    def pad_tokens(self, x, op):
        """Each row's tokens before its first end id (at most length - 1),
        the end id, then pads, into a tensor made once."""
        p = op["params"]
        length, end, pad = p["length"], p["end_id"], p["pad_id"]
        n, width = x.shape[0], min(p["length"], x.shape[1])
        is_end = x == end
        # argmax returns the first maximum: the first end id.
        content = torch.where(is_end.any(1), is_end.to(torch.uint8).argmax(1), x.shape[1])
        keep = content.clamp(max=length - 1)[:, None]
        out = self.buffer(("pad_tokens", op["index"]), (n, length), torch.int32)
        out.fill_(pad)
        out[:, :width].copy_(x[:, :width])
        pos = torch.arange(length)[None, :]
        out.masked_fill_(pos >= keep, pad)
        out.masked_fill_(pos == keep, end)
        return out

    def log_mel(self, x, op):
        """log_mel over the batch in tensors made once (module docstring)."""
        p = op["params"]
        window, filters = self.mel[op["index"]]
        n, key = x.shape[0], op["index"]
        frames = x.unfold(1, p["frame"], p["hop"])
        windowed = self.buffer(("window", key), tuple(frames.shape), torch.float32)
        torch.mul(frames, window, out=windowed)
        bins = p["n_fft"] // 2 + 1
        spectrum = self.buffer(("spectrum", key), (n, frames.shape[1], bins), torch.complex64)
        torch.fft.rfft(windowed, n=p["n_fft"], out=spectrum)
        pairs = torch.view_as_real(spectrum)
        pairs.mul_(pairs)
        power = self.buffer(("power", key), (n, frames.shape[1], bins), torch.float32)
        torch.sum(pairs, dim=-1, out=power)
        out = self.buffer(("mel", key), (n, frames.shape[1], p["mels"]), torch.float32)
        torch.matmul(power, filters, out=out)
        # fmax: a NaN goes to the floor, as sluice's comparison sends it.
        torch.fmax(out, torch.tensor(sluice_ops.LOG_MEL_FLOOR, dtype=torch.float32), out=out)
        out.log10_()
        loudest = out.amax(dim=(1, 2), keepdim=True).sub_(sluice_ops.LOG_MEL_DECADES)
        torch.maximum(out, loudest, out=out)
        return out.add_(sluice_ops.LOG_MEL_SHIFT).mul_(sluice_ops.LOG_MEL_SCALE)

    def __getitem__(self, k):
        plan = self.plan
        epoch = plan.batches[k]["epoch"]
        ids = torch.from_numpy(np.ascontiguousarray(plan.batch_ids(k)))
        fields, fresh = {}, set(self.sources)
        i = 0
        while i < len(self.ops):
            op = self.ops[i]
            name, kind, p = op["field"], op["kind"], op["params"]
            x = self.sources[name] if name in fresh else fields[name]
            if kind == "random_crop":
                follow = self.ops[i + 1] if i + 1 < len(self.ops) else None
                flip = follow if follow and follow["kind"] == "random_hflip" and follow["field"] == name else None
                x = self.crop(name, x, op, flip, ids, epoch, name in fresh)
                i += 1 if flip is not None else 0
            elif kind == "random_resized_crop":
                rows = ids if name in fresh else torch.arange(len(ids))  # x's rows: the source's or the batch's
                boxes = torch.from_numpy(self.decision(op, epoch)[ids.numpy()])
                x = resized_crop(x, rows, p, boxes)
            else:
                if name in fresh:
                    x = self.gather(name, ids)
                if kind == "resize":
                    if x.dtype != torch.float32:
                        # One casting copy into a tensor made once: index_select keeps its input's dtype.
                        x = self.buffer(("resize", op["index"]), tuple(x.shape), torch.float32).copy_(x)
                    if op["index"] not in self.resizes:
                        self.resizes[op["index"]] = Resize(tuple(x.shape[1:]), p["out_h"], p["out_w"])
                    x = self.resizes[op["index"]](x, self.buffer, op["index"])
                elif kind == "pad_tokens":
                    x = pad_tokens(x, p)
                elif kind == "normalize":
                    mean, inv = self.tile(op, tuple(x.shape[1:]))
                    if x.dtype != torch.float32:
                        out = self.buffer(("normalize", op["index"]), tuple(x.shape), torch.float32)
                        out.copy_(x)
                        x = out
                    flat = x.view(x.shape[0], -1)
                    flat.sub_(mean).mul_(inv)
                elif kind in ("scale", "multiply"):
                    x.mul_(torch.tensor(p["value"], dtype=torch.float32))
                elif kind == "add":
                    x.add_(torch.tensor(p["value"], dtype=torch.float32))
                elif kind == "clip":
                    lo = torch.tensor(p["lo"], dtype=torch.float32)
                    hi = torch.tensor(p["hi"], dtype=torch.float32)
                    x.masked_fill_(x < lo, lo)
                    x.masked_fill_(x > hi, hi)
                elif kind == "pad_tokens":
                    x = self.pad_tokens(x, op)
                elif kind == "log_mel":
                    x = self.log_mel(x, op)
                elif kind == "random_hflip":
                    for r in np.flatnonzero(self.decision(op, epoch)[ids.numpy(), 0]).tolist():
                        x[r] = x[r].flip(1)
            fields[name] = x
            fresh.discard(name)
            i += 1
        for name in fresh:
            fields[name] = self.gather(name, ids)
        return fields


class PlanOrder(Sampler):
    def __init__(self, plan):
        self.n = len(plan.batches)

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


def numpy_views(batch, dataset, views):
    """The batch's tensors as numpy arrays, a view made once for each of the
    Dataset's buffers (Tensor.numpy() took several us a call in torch 1.13).
    A tensor made for one batch gets a view of its own, not kept: a kept view
    would keep its tensor alive."""
    out = {}
    for k, v in batch.items():
        view = views.get(id(v))
        if view is None:
            view = v.numpy()
            if any(v is b for b in dataset.buffers.values()):
                views[id(v)] = view
        out[k] = view
    return out


def make_batches(plan, options):
    dataset = BatchedExport(plan)
    views = {}
    if options.workers == 0:
        # In the main process, DataLoader(batch_size=None) does no more than
        # dataset[k] for each index its sampler gives (and default_convert,
        # which leaves tensors as they are), through its fetcher: about
        # 10 us a batch of Python on CV-1 (a seventh of it), so the expert
        # form indexes the Dataset itself, in the plan's order.
        for k in range(len(dataset)):
            yield numpy_views(dataset[k], dataset, views)
        return
    # With workers: batch_size=None, the Dataset returns batches and the
    # loader adds no collation (PyTorch's documented way to load
    # pre-batched data).
    loader = DataLoader(dataset, batch_size=None, sampler=PlanOrder(plan), num_workers=options.workers)
    for batch in loader:
        yield {k: v.numpy() for k, v in batch.items()}


if __name__ == "__main__":
    torch.set_num_threads(1)
    sluice_peer.main("torch", "torch " + torch.__version__, make_batches, SUPPORTED)

"""peer:numpy: the scenario's pipeline as numpy's experts write it, following
numpy's own performance guidance (in-place ufuncs with out=, no temporaries,
views instead of copies, preallocated outputs, contiguous inner loops, basic
slicing instead of advanced indexing):

- each source field is gathered with np.take(..., out=, mode="clip") over
  (rows, values) views into a buffer made once; pack_tokens' stream is held as a (sequences, seq_len) view (its tail
  padded once, when it is loaded), so a batch is one take of rows;
- normalize is np.subtract and np.multiply in place (from u8, after one
  casting copy into a float32 buffer), with mean and 1/std tiled over the
  element so that numpy's inner loop runs over a whole element, not over 3
  channels (a lookup table per channel, tried, was 10x slower: np.take into
  a strided output);
- scale, add and multiply are in-place ufuncs; clip is two masked copies in
  place (sluice's two comparisons, so NaN passes through);
- random_crop is one slice copy per image straight from the source into a
  zeroed output made once (its padding never changes); with a random_hflip
  right after it, the flipped images' crops are copied into a buffer of
  their own and one np.take along the width reverses them all; a flip
  alone reverses each flipped image in place;
- trig_rounds (IO-4) runs sluice's float64 sine and cosine with in-place
  ufuncs on blocks of 32k values in buffers made once (each block's ten
  buffers fit in L2), the quadrant's pick and signs as masked copies and
  negations; a cache op keeps, in one array per field made when it is first
  filled, each element's fields after the ops before it, so a batch
  computes only the elements no earlier batch met and reads the rest back
  with one take;
- resize (CV-4) takes, with two np.take calls over each image's flat
  values into buffers made once, only the source rows the plan reads and
  only their left and right neighbours of every output column and channel;
  the lerp along the width runs in place over those rows (its weights tiled
  over the row's values), then the lerp along the height over the output
  rows, both in sluice's order (sluice_ops.bilinear: b - a, times the
  weight, plus a); the plan is computed once per op;
- random_resized_crop (MM-1) does the same over the whole batch at once:
  every image's plan from its exported box (sluice_ops.resize_axis over
  arrays of box sides), one np.take per neighbour straight from the
  field's flat data;
- log_mel (MM-2) frames each waveform as a strided view (no copy), windows
  the frames in float64 into a buffer made once, runs np.fft.rfft over the
  whole batch in one call, squares the spectrum's real and imaginary parts
  in place and adds them into a float32 buffer, multiplies by the mel filter
  bank (made once) in one matmul with out=, and takes Whisper's log in
  place; a direct DFT as one sgemm, tried, was 4.7x slower than the FFT.
  Held to MM-2's stated tolerance, not bitwise;
- affine is np.multiply and np.add in place with scale and bias tiled over
  the element, as normalize; dropout (train mode) recomputes its keyed
  mask (numpy_idiomatic_peer.dropout_keep), multiplies in place and zeroes
  the dropped values with one masked copy.

Every other op is numpy_idiomatic_peer's function (already vectorized; they
are not where the time goes in the scenarios that use them). The output is
bitwise the reference's: each value goes through the same float32
operations in the same order.
"""

import os
import sys

# One BLAS thread, as sluice's own log_mel runs OpenBLAS: with more, its idle
# threads spin after each product (MM-2's mel matmul), CPU time outside the
# peer's clock, and sluice rightly timed the run a hand-over. Set before
# numpy loads OpenBLAS; a user's own setting wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
from numpy.lib.stride_tricks import as_strided

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy_idiomatic_peer as idiomatic
import sluice_ops
import sluice_peer

# What this script implements: its line in peers/ops.txt.
SUPPORTED = sluice_peer.implements(__file__)
# The ops the tuned loop applies itself: in place, or (crops, resizes) into
# buffers made once per op.
IN_PLACE = {
    "normalize",
    "scale",
    "multiply",
    "add",
    "clip",
    "random_crop",
    "random_hflip",
    "affine",
    "dropout",
    "resize",
    "random_resized_crop",
}
# Ops the tuned loop also runs that change a field's shape, into a buffer of
# their own made once.
IN_PLACE |= {"log_mel"}


def tiled(values, channels, element_shape):
    """A per-channel constant repeated over one element (channels last),
    flat; one channel's is a float32 scalar instead: a ufunc with a scalar
    reads one stream where a tiled array makes it read two (PC-1's
    normalize took 3x as long with a tile as with the scalar), and rounds
    each value the same."""
    if channels == 1:
        return np.float32(values[0])
    values = np.asarray(values[:channels], dtype=np.float32)
    count = int(np.prod(element_shape)) if element_shape else 1
    return np.ascontiguousarray(np.tile(values, count // channels))


class Buffers:
    """Buffers made once per key, shape and dtype (a short batch has its own)."""

    def __init__(self):
        self.made = {}

    def __call__(self, key, shape, dtype, zero=False):
        k = (key, shape, np.dtype(dtype).str)
        if k not in self.made:
            self.made[k] = np.zeros(shape, dtype=dtype) if zero else np.empty(shape, dtype=dtype)
        return self.made[k]


class Field:
    """A field's data (a source, whose rows a batch names, or a batch a
    storage framework delivered) and the batch buffers made for it."""

    def __init__(self, data, buffers=None):
        self.data = data
        self.buffer = buffers if buffers is not None else Buffers()

    @property
    def flat(self):
        """The data as (rows, values), a view made when a gather needs it
        (a Field is made for each op of a batch, most of which never do)."""
        return self.data.reshape(self.data.shape[0], -1)


class TrigRounds:
    """sluice_ops.trig_rounds operation for operation, each step an in-place
    float64 ufunc on a block of values (buffers made once, so no temporary
    is allocated per step)."""

    BLOCK = 32768

    def __init__(self):
        b = self.BLOCK
        self.y, self.t, self.q, self.x, self.x2, self.p, self.tmp = (np.empty(b) for _ in range(7))
        self.m1, self.m2 = np.empty(b, dtype=bool), np.empty(b, dtype=bool)

    def __call__(self, x, rounds, out):
        """out (float32, x's shape) = rounds of sin + cos of float32 x."""
        src, dst = x.reshape(-1), out.reshape(-1)
        for start in range(0, src.shape[0], self.BLOCK):
            n = min(self.BLOCK, src.shape[0] - start)
            y = self.y[:n]
            y[...] = src[start : start + n]
            for _ in range(rounds):
                self.round(n)
            dst[start : start + n] = y
        return out

    def round(self, n):
        y, t, q, x, x2, p, tmp = (b[:n] for b in (self.y, self.t, self.q, self.x, self.x2, self.p, self.tmp))
        m1, m2 = self.m1[:n], self.m2[:n]
        np.multiply(y, sluice_ops.INV_TWO_PI, out=t)  # turns
        np.multiply(t, 4.0, out=q)
        np.rint(q, out=q)  # q, the nearest quarter turn
        np.multiply(q, 0.25, out=tmp)
        np.subtract(t, tmp, out=t)  # r = turns - q / 4
        np.floor(tmp, out=tmp)
        np.multiply(tmp, 4.0, out=tmp)
        np.subtract(q, tmp, out=q)  # the quadrant, q mod 4
        np.multiply(t, sluice_ops.TWO_PI, out=x)
        np.multiply(x, x, out=x2)
        self.horner(sluice_ops.SIN_COEFFS, x2, p)
        np.multiply(x, x2, out=tmp)
        np.multiply(tmp, p, out=tmp)
        np.add(x, tmp, out=t)  # t = s = x + x x2 ps
        self.horner(sluice_ops.COS_COEFFS, x2, p)
        np.multiply(p, x2, out=p)
        np.add(p, 1.0, out=p)  # p = c = 1 + x2 pc
        # odd_s into x, odd_c into x2: c and s swap in quadrants 1 and 3.
        np.equal(q, 1.0, out=m1)
        np.equal(q, 3.0, out=m2)
        np.logical_or(m1, m2, out=m1)
        np.copyto(x, t)
        np.copyto(x, p, where=m1)
        np.copyto(x2, p)
        np.copyto(x2, t, where=m1)
        # The sine is negated in quadrants 2 and 3, the cosine in 1 and 2
        # (negations, not subtractions, so zeros keep sluice's signs).
        np.greater_equal(q, 2.0, out=m2)
        np.negative(x, out=x, where=m2)
        np.equal(q, 1.0, out=m1)
        np.equal(q, 2.0, out=m2)
        np.logical_or(m1, m2, out=m1)
        np.negative(x2, out=x2, where=m1)
        np.add(x, x2, out=y)

    @staticmethod
    def horner(coeffs, x2, p):
        """p = the polynomial in x2 with coeffs, highest first: c + x2 * p per step."""
        np.multiply(x2, coeffs[0], out=p)
        np.add(p, coeffs[1], out=p)
        for c in coeffs[2:]:
            np.multiply(p, x2, out=p)
            np.add(p, c, out=p)


class DropMask:
    """dropout's keyed mask as numpy_idiomatic_peer.dropout_keep computes it
    (Philox4x32-10, sluice_ops), each round's products, shifts and xors as
    in-place ufuncs on uint64 buffers made once per batch shape; returns
    which values are dropped."""

    def __init__(self):
        self.buffers = {}

    def __call__(self, plan, op, ids, epoch, values):
        n, blocks = len(ids), -(-values // 4)
        key = (n, blocks)
        if key not in self.buffers:
            self.buffers[key] = (
                [np.empty((n, blocks), dtype=np.uint64) for _ in range(6)],
                np.empty((n, blocks, 4), dtype=bool),
                np.arange(blocks, dtype=np.uint64),
            )
        (c0, c1, c2, c3, p0, p1), drop, draw = self.buffers[key]
        u = np.asarray(ids, dtype=np.uint64)[:, None]
        m32 = np.uint64(sluice_ops.M32)
        np.bitwise_and(u, m32, out=c0)
        np.right_shift(u, np.uint64(32), out=c1)
        c2.fill(epoch)
        c3[...] = draw
        k0, k1 = sluice_ops.philox_key(int(plan.raw["seed"]), op["op_id"])
        m0, m1, shift = np.uint64(sluice_ops.PHILOX_M0), np.uint64(sluice_ops.PHILOX_M1), np.uint64(32)
        for r in range(10):
            if r:
                k0, k1 = (k0 + sluice_ops.PHILOX_W0) & sluice_ops.M32, (k1 + sluice_ops.PHILOX_W1) & sluice_ops.M32
            np.multiply(c0, m0, out=p0)
            np.multiply(c2, m1, out=p1)
            np.right_shift(p1, shift, out=c0)
            np.bitwise_xor(c0, c1, out=c0)
            np.bitwise_xor(c0, np.uint64(k0), out=c0)
            np.bitwise_and(p1, m32, out=c1)
            np.right_shift(p0, shift, out=c2)
            np.bitwise_xor(c2, c3, out=c2)
            np.bitwise_xor(c2, np.uint64(k1), out=c2)
            np.bitwise_and(p0, m32, out=c3)
        threshold = np.uint64(sluice_ops.dropout_threshold(np.float32(op["params"]["p"])))
        for j, word in enumerate((c0, c1, c2, c3)):
            np.less(word, threshold, out=drop[:, :, j])
        return drop.reshape(n, blocks * 4)[:, :values]


class LogMel:
    """log_mel over a whole batch in buffers made once per batch size: the
    frames a strided view of the waveforms, the window applied in float64
    (np.fft.rfft computes in float64 whatever it is given, so float32 frames
    would only add a conversion), the power summed from the spectrum viewed
    as (re, im) pairs, the mel product one matmul over every frame of the
    batch, and Whisper's log in place."""

    def __init__(self, p, samples):
        self.p = p
        self.frames = sluice_ops.log_mel_frames(samples, p)
        self.bins = p["n_fft"] // 2 + 1
        self.window = np.array(sluice_ops.hann_window(p["frame"]))
        self.filters = np.array(sluice_ops.mel_filter_bank(p["sample_rate"], p["n_fft"], p["mels"]), dtype=np.float32)
        self.buffers = {}

    def __call__(self, x):
        n, p = x.shape[0], self.p
        frames, bins, mels, frame = self.frames, self.bins, p["mels"], p["frame"]
        if n not in self.buffers:
            self.buffers[n] = (
                np.empty((n, frames, frame)),
                np.empty((n * frames, bins), dtype=np.float32),
                np.empty((n, frames, mels), dtype=np.float32),
                np.empty((n, 1, 1), dtype=np.float32),
            )
        windowed, power, out, loudest = self.buffers[n]
        x = np.ascontiguousarray(x)
        view = as_strided(x, (n, frames, frame), (x.strides[0], p["hop"] * x.strides[1], x.strides[1]), writeable=False)
        np.multiply(view, self.window, out=windowed)
        spectrum = np.fft.rfft(windowed, n=p["n_fft"], axis=-1).reshape(n * frames, bins)
        pairs = spectrum.view(np.float64).reshape(n * frames, bins, 2)
        np.multiply(pairs, pairs, out=pairs)
        np.add(pairs[:, :, 0], pairs[:, :, 1], out=power)
        np.matmul(power, self.filters, out=out.reshape(n * frames, mels))
        # fmax sends a NaN to the floor, as sluice's comparison does.
        np.fmax(out, np.float32(sluice_ops.LOG_MEL_FLOOR), out=out)
        np.log10(out, out=out)
        np.max(out, axis=(1, 2), keepdims=True, out=loudest)
        np.subtract(loudest, np.float32(sluice_ops.LOG_MEL_DECADES), out=loudest)
        np.maximum(out, loudest, out=out)
        np.add(out, np.float32(sluice_ops.LOG_MEL_SHIFT), out=out)
        np.multiply(out, np.float32(sluice_ops.LOG_MEL_SCALE), out=out)
        return out


class Cache:
    """The cache op: each element's fields after the ops before it (which
    draw nothing, so they are the same in every epoch), in one array per
    field indexed by element id, made when first filled; a batch computes
    the elements no earlier batch met and reads all its rows back."""

    def __init__(self, tuned, at):
        self.tuned = tuned
        self.before = [op for op in tuned.ops if op["index"] < at]
        self.filled = np.zeros(tuned.plan.raw["dataset_size"], dtype=bool)
        self.store = {}
        self.trig = TrigRounds()

    def fill(self, ids, epoch, batch):
        missing = ids[~self.filled[ids]]
        if not len(missing):
            return
        tuned = self.tuned
        fields = {name: tuned.gather(name, missing) for name in tuned.fields}
        for _k, op in enumerate(self.before):
            x = fields[op["field"]]
            if op["kind"] == "trig_rounds" and x.dtype == np.float32:
                fields[op["field"]] = self.trig(x, op["params"]["rounds"], x)  # x is a gather buffer
            else:
                fields = idiomatic.apply_ops(tuned.plan, fields, [op], epoch, missing, batch=batch)
        for name, x in fields.items():
            if name not in self.store:
                self.store[name] = Field(np.empty((len(self.filled),) + x.shape[1:], dtype=x.dtype))
            self.store[name].data[missing] = x
        self.filled[missing] = True

    def read(self, ids):
        """The batch's cached rows, one take per field into a buffer made once."""
        out = {}
        for name, f in self.store.items():
            buf = f.buffer("read", (len(ids),) + f.data.shape[1:], f.data.dtype)
            np.take(f.flat, ids, axis=0, out=buf.reshape(len(ids), -1), mode="clip")
            out[name] = buf
        return out


def lerp(a, b, w, out):
    """out = a + w * (b - a) in float32, in place: sluice_ops.bilinear's
    steps (a and b may be u8; the subtraction is then asked for in float32,
    where u8's own would wrap)."""
    np.subtract(b, a, out=out, dtype=np.float32)
    np.multiply(out, w, out=out)
    np.add(out, a, out=out, dtype=np.float32)
    return out


def value_plan(x0, x1, wx, channels):
    """An axis plan over columns widened to the values of a row (channels
    last): source value indices and weights, one per output value."""
    c = np.arange(channels, dtype=np.int64)
    return (
        (x0[..., None] * channels + c).reshape(x0.shape[:-1] + (-1,)),
        (x1[..., None] * channels + c).reshape(x1.shape[:-1] + (-1,)),
        np.repeat(wx, channels, axis=-1),
    )


class Resize:
    """A resize op's plan, made once: the source rows it reads, the flat
    indices of their left and right neighbours, and the weights tiled over
    the rows' values."""

    def __init__(self, in_shape, out_h, out_w):
        h, w = in_shape[0], in_shape[1]
        self.channels = in_shape[2] if len(in_shape) == 3 else 1
        self.out_shape = (out_h, out_w) + tuple(in_shape[2:])
        y0, y1, wy = idiomatic.resize_plan(h, out_h)
        x0, x1, wx = idiomatic.resize_plan(w, out_w)
        v0, v1, wv = value_plan(x0, x1, wx, self.channels)
        rows = np.unique(np.concatenate([y0, y1]))  # sorted, so a row's place is its searchsorted
        row_values = w * self.channels
        self.left = (rows[:, None] * row_values + v0[None, :]).reshape(-1)
        self.right = (rows[:, None] * row_values + v1[None, :]).reshape(-1)
        self.wv = np.tile(wv, len(rows))
        self.top, self.bottom = np.searchsorted(rows, y0), np.searchsorted(rows, y1)
        self.wy = np.ascontiguousarray(np.repeat(wy, out_w * self.channels))
        self.rows = len(rows)

    def __call__(self, x, field, key):
        n = x.shape[0]
        flat = x.reshape(n, -1)
        a = field.buffer((key, "a"), (n, self.left.shape[0]), x.dtype)
        b = field.buffer((key, "b"), (n, self.left.shape[0]), x.dtype)
        np.take(flat, self.left, axis=1, out=a, mode="clip")
        np.take(flat, self.right, axis=1, out=b, mode="clip")
        across = lerp(a, b, self.wv, field.buffer((key, "across"), a.shape, np.float32))
        across = across.reshape(n, self.rows, -1)
        top = field.buffer((key, "top"), (n, self.top.shape[0], across.shape[2]), np.float32)
        out = field.buffer((key, "out"), (n,) + self.out_shape, np.float32)
        np.take(across, self.top, axis=1, out=top, mode="clip")
        np.take(across, self.bottom, axis=1, out=out.reshape(top.shape), mode="clip")
        lerp(top, out.reshape(top.shape), self.wy.reshape(top.shape[1:]), out.reshape(top.shape))
        return out


def resized_crop(x, ids, p, boxes, field, key):
    """random_resized_crop of rows ids of x (the source field) for the whole
    batch: each image's plan from its box, the left and right neighbours of
    its rows straight from x by flat index, then the two lerps in place."""
    n, channels = len(ids), x.shape[3] if x.ndim == 4 else 1
    out_h, out_w = p["out_h"], p["out_w"]
    y, left, h, w = (boxes[:, j : j + 1].astype(np.int64) for j in range(4))
    y0, y1, wy = sluice_ops.resize_axis(np.arange(out_h, dtype=np.int64)[None, :], h, out_h, idiomatic.NumpyArrays)
    x0, x1, wx = sluice_ops.resize_axis(np.arange(out_w, dtype=np.int64)[None, :], w, out_w, idiomatic.NumpyArrays)
    v0, v1, wv = value_plan(x0 + left, x1 + left, wx, channels)
    # Each image reads its top rows and its bottom rows ([2, n, out_h]:
    # the bottom rows' lerp is then a contiguous output); every value's flat
    # index into the field's data is its row's start plus its column's
    # value index (one np.take on the flat data: take_along_axis over a
    # gather of the rows was 3x slower).
    rows = np.stack([y0, y1]) + y + (np.asarray(ids, dtype=np.int64) * x.shape[1])[:, None]
    starts = (rows * (x.shape[2] * channels))[..., None]
    flat = x.reshape(-1)
    a = np.take(flat, np.add(starts, v0[:, None, :]))
    b = np.take(flat, np.add(starts, v1[:, None, :]))
    top, out = lerp(a, b, wv[:, None, :], field.buffer((key, "across"), a.shape, np.float32))
    lerp(top, out, wy[:, :, None], out)
    return out.reshape((n, out_h, out_w) + x.shape[3:])


class Ops:
    """A plan's ops on batches, the tuned ones in place (IN_PLACE) and the
    rest by numpy_idiomatic_peer, with the buffers, tiles and resize and
    log_mel plans they make once. A batch's fields come either from sources
    whose rows the batch names (the loaded fixture: peer:numpy) or as a
    storage framework delivered them (BatchOps)."""

    def __init__(self, plan, ops):
        self.plan = plan
        self.ops = ops
        self.buffers = {}
        self.drop_mask = DropMask()
        self.resizes = {}
        self.log_mels = {}
        self.tiles = {}
        self.made_columns = {}

    def field(self, name, data):
        """data as field name, with the buffers made for that name."""
        return Field(data, self.buffers.setdefault(name, Buffers()))

    def tile(self, op, element_shape):
        """normalize's (subtrahend, factor) or affine's (factor, addend),
        tiled over an element of element_shape (made once per op and shape:
        a resize before the op changes the shape its source had)."""
        key = (op["index"], element_shape)
        if key not in self.tiles:
            first, second = ("mean", "inv_std") if op["kind"] == "normalize" else ("scale", "bias")
            self.tiles[key] = (
                tiled(op["params"][first], op["params"]["channels"], element_shape),
                tiled(op["params"][second], op["params"]["channels"], element_shape),
            )
        return self.tiles[key]

    @staticmethod
    def gather(f, rows):
        """Rows of f, one np.take over (rows, values) views into a buffer
        made once. mode="clip" (the rows are always in range) spares the
        temporary copy that mode="raise" makes when out= is given: 3x faster
        on PC-1's rows."""
        out = f.buffer("gather", (len(rows),) + f.data.shape[1:], f.data.dtype)
        np.take(f.flat, rows, axis=0, out=out.reshape(len(rows), -1), mode="clip")
        return out

    def crop(self, f, x, op, flip_op, ids, rows, epoch):
        """random_crop (and a random_hflip right after it): one slice copy per
        image (rows of x) into a zeroed buffer made once; the flipped ones'
        crops go to a buffer of their own, whose pixels one np.take along
        the width reverses for all of them. A reversed slice copy per image
        (src[:, ::-1]) moves a u8 image's 3-byte pixels a byte at a time:
        PR-2's batch took 470 to 530 us that way against 380 to 390 us
        (a 64-image batch with half flipped, load 6)."""
        p = op["params"]
        n = len(ids)
        h, w = x.shape[1], x.shape[2]
        ch, cw = p["crop_h"], p["crop_w"]
        top, left = (h - ch) // 2, (w - cw) // 2
        mirrored = w - left - cw  # the content's first column once mirrored
        out = f.buffer(("crop", op["index"]), (n,) + x.shape[1:], x.dtype, zero=True)
        dec = self.plan.decisions(op, epoch)
        offsets = dec[ids]
        flips = self.plan.decisions(flip_op, epoch)[ids, 0].tolist() if flip_op is not None else [0] * n
        flipped = [k for k, flip in enumerate(flips) if flip]
        crop_shape = (ch, cw) + x.shape[3:]
        unflipped = f.buffer(("crop-flipped", op["index"]), (n,) + crop_shape, x.dtype)
        j = 0
        # Python ints: numpy scalars would make each slice slower to build.
        for k, (i, oy, ox, flip) in enumerate(
            zip(rows.tolist(), offsets[:, 0].tolist(), offsets[:, 1].tolist(), flips)
        ):
            src = x[i, oy : oy + ch, ox : ox + cw]
            if mirrored != left and flip_op is not None:
                out[k, top : top + ch] = 0  # the padding's columns differ for the two directions
            if flip:
                unflipped[j] = src
                j += 1
            else:
                out[k, top : top + ch, left : left + cw] = src
        if flipped:
            g = len(flipped)
            reversed_ = f.buffer(("crop-reversed", op["index"]), (n,) + crop_shape, x.dtype)[:g]
            np.take(unflipped[:g], self.reversed_columns(cw), axis=2, out=reversed_, mode="clip")
            out[flipped, top : top + ch, mirrored : mirrored + cw] = reversed_
        return out

    def reversed_columns(self, width):
        """The column indices width - 1 down to 0, made once per width."""
        key = ("reversed", width)
        if key not in self.made_columns:
            self.made_columns[key] = np.arange(width - 1, -1, -1)
        return self.made_columns[key]

    @staticmethod
    def hflip(x, op_decisions):
        """Reverses each flipped image's width in place."""
        for k in np.flatnonzero(op_decisions[:, 0]):
            x[k] = x[k, :, ::-1].copy()
        return x

    def normalize(self, f, x, op):
        """(x - mean) * inv_std in place over each element's values, the
        constants tiled over the element; from u8, one casting copy into a
        float32 buffer first (numpy's fastest way to the two roundings)."""
        n = x.shape[0]
        mean, inv = self.tile(op, x.shape[1:])
        if x.dtype == np.float32:
            out = x
            flat = out.reshape(n, -1)
        else:
            out = f.buffer(("normalize", op["index"]), x.shape, np.float32)
            flat = out.reshape(n, -1)
            flat[...] = x.reshape(n, -1)
        np.subtract(flat, mean, out=flat)
        np.multiply(flat, inv, out=flat)
        return out

    def run(self, sources, rows, fields, ids, epoch, i):
        """The ops on batch i (elements ids of epoch). fields holds the
        fields already read (a cache's rows); sources the others, whose rows
        `rows` are the batch's elements (None: sources hold the batch
        itself, in order, and are never written). The tuned ops run in
        order on each field they reach first; a field not yet read is read
        by its first op: crops and resizes straight from its source, an op
        that works in place on a copy (a gather of its rows); the first op
        the tuned code lacks hands the rest to numpy_idiomatic_peer."""
        plan = self.plan
        ops = self.ops
        sources = {name: self.field(name, data) for name, data in sources.items() if name not in fields}
        k = 0
        while k < len(ops) and ops[k]["kind"] in IN_PLACE:
            op = ops[k]
            name, kind = op["field"], op["kind"]
            unread = name in sources
            f = sources.pop(name) if unread else self.field(name, fields[name])
            x = f.data
            # The batch's rows of x: a source's rows, or all of a batch in order.
            here = rows if unread and rows is not None else np.arange(len(ids))
            if kind == "random_crop":
                follow = ops[k + 1] if k + 1 < len(ops) else None
                flip = follow if follow and follow["kind"] == "random_hflip" and follow["field"] == name else None
                x = self.crop(f, x, op, flip, ids, here, epoch)
                k += 1 if flip is not None else 0
            elif kind == "random_resized_crop":
                x = resized_crop(x, here, op["params"], plan.decisions(op, epoch)[ids], f, op["index"])
            else:
                # The rest read the batch's rows (resize and log_mel into
                # buffers of their own) or work in place on a copy of them.
                reads_only = kind in ("resize", "log_mel") or (kind == "normalize" and x.dtype != np.float32)
                if unread and (rows is not None or not reads_only):
                    x = self.gather(f, here)
                if kind == "normalize":
                    x = self.normalize(f, x, op)
                elif kind == "resize":
                    if op["index"] not in self.resizes:
                        self.resizes[op["index"]] = Resize(x.shape[1:], op["params"]["out_h"], op["params"]["out_w"])
                    x = self.resizes[op["index"]](x, f, op["index"])
                elif kind == "log_mel":
                    if op["index"] not in self.log_mels:
                        self.log_mels[op["index"]] = LogMel(op["params"], x.shape[1])
                    x = self.log_mels[op["index"]](x)
                elif kind == "random_hflip":
                    x = self.hflip(x, plan.decisions(op, epoch)[ids])
                elif x.dtype != np.float32:
                    fields[name] = x
                    break  # integer arithmetic: numpy_idiomatic_peer's
                elif kind in ("scale", "multiply"):
                    np.multiply(x, np.float32(op["params"]["value"]), out=x)
                elif kind == "add":
                    np.add(x, np.float32(op["params"]["value"]), out=x)
                elif kind == "affine":
                    scale, bias = self.tile(op, x.shape[1:])
                    flat = x.reshape(x.shape[0], -1)
                    np.multiply(flat, scale, out=flat)
                    np.add(flat, bias, out=flat)
                elif kind == "dropout":
                    if plan.raw.get("mode", "train") != "eval":
                        drop = self.drop_mask(plan, op, ids, epoch, x[0].size)
                        flat = x.reshape(x.shape[0], -1)
                        np.multiply(flat, idiomatic.dropout_scale(op["params"]["p"]), out=flat)
                        np.copyto(flat, np.float32(0.0), where=drop)
                elif kind == "clip":
                    lo, hi = np.float32(op["params"]["lo"]), np.float32(op["params"]["hi"])
                    np.copyto(x, lo, where=x < lo)
                    np.copyto(x, hi, where=x > hi)
            fields[name] = x
            k += 1
        for name, f in sources.items():
            fields[name] = self.gather(f, rows) if rows is not None else f.data
        if k < len(ops):
            fields = idiomatic.apply_ops(plan, fields, ops[k:], epoch, ids, batch=i)
        return fields


class Tuned:
    """peer:numpy's loader: the fixture's fields loaded once, each batch
    their rows gathered by the ops (after the cache's, when there is one)."""

    def __init__(self, plan):
        self.plan = plan
        self.fields = {}
        ops = list(plan.ops)
        self.pack = ops.pop(0) if ops and ops[0]["kind"] == "pack_tokens" else None
        for f in plan.source_fields:
            data = plan.load_source(f["name"])
            if self.pack is not None and f["name"] == self.pack["field"]:
                data = self.sequences(data, self.pack["params"])
            self.fields[f["name"]] = Field(data)
        self.ops = ops
        at = idiomatic.cache_index(plan)
        self.cache = Cache(self, at) if at is not None else None
        if self.cache is not None:
            ops = [op for op in ops if op["index"] > at]
        self.runner = Ops(plan, ops)
        # A plan that only gathers (NLP-1: pack_tokens alone) takes each
        # field's rows straight into a buffer made once per batch length:
        # Ops.run's per-batch Python (a Field per source, its buffer's key,
        # the op loop) was more than half of NLP-1's batch time.
        self.gather_only = not ops and self.cache is None
        self.flats = {name: f.flat for name, f in self.fields.items()}
        self.outputs = {}

    @staticmethod
    def sequences(stream, p):
        """The token stream as rows of seq_len, its last row padded with pad_id."""
        seq = p["seq_len"]
        rows = -(-stream.shape[0] // seq)
        table = np.full(rows * seq, p["pad_id"], dtype=stream.dtype)
        table[: stream.shape[0]] = stream
        return table.reshape(rows, seq)

    def gather(self, name, ids):
        """Rows ids of source field name, into a buffer made once."""
        return Ops.gather(self.fields[name], ids)

    def take(self, ids):
        """Every field's rows ids, one np.take each into buffers made once
        per batch length (the gather-only plans)."""
        n = len(ids)
        made = self.outputs.get(n)
        if made is None:
            batch = {name: np.empty((n,) + f.data.shape[1:], dtype=f.data.dtype) for name, f in self.fields.items()}
            made = self.outputs[n] = (batch, [(self.flats[name], out.reshape(n, -1)) for name, out in batch.items()])
        batch, takes = made
        for flat, out in takes:
            np.take(flat, ids, axis=0, out=out, mode="clip")
        return batch

    def batch(self, i):
        if self.gather_only:
            return self.take(self.plan.batch_ids(i))
        b = self.plan.batches[i]
        ids = self.plan.batch_ids(i)
        if self.cache is not None:
            self.cache.fill(ids, b["epoch"], i)
            return self.runner.run({}, ids, self.cache.read(ids), ids, b["epoch"], i)
        return self.runner.run({name: f.data for name, f in self.fields.items()}, ids, {}, ids, b["epoch"], i)


class BatchOps:
    """The plan's ops (those after what a storage peer stored) on batches a
    storage framework delivers, as peer:numpy runs them: what a numpy expert
    writes for that framework's batches, so that a storage peer's time is
    its framework's and numpy's best, not numpy's slow idioms. A batch's
    arrays are only read (a framework may keep them) unless writable says
    the caller made them for this call; the ops write into buffers made
    once, so a batch must be consumed before the next is made (a
    generator's, as sluice_peer consumes it): a pipeline stage that runs
    ahead of its consumer makes a BatchOps per call."""

    def __init__(self, plan, ops, writable=False):
        self.writable = writable
        self.runner = Ops(plan, ops)

    def __call__(self, fields, epoch, ids, batch=None):
        ids = np.asarray(ids, dtype=np.int64)
        fields = {name: np.asarray(x) for name, x in fields.items()}
        if self.writable:
            return self.runner.run({}, None, fields, ids, epoch, batch)
        return self.runner.run(fields, None, {}, ids, epoch, batch)


def make_batches(plan, options):
    tuned = Tuned(plan)
    if tuned.gather_only:
        # One call a batch, not two: NLP-1's batch is 2 to 3 us.
        for i in range(len(plan.batches)):
            yield tuned.take(plan.batch_ids(i))
        return
    for i in range(len(plan.batches)):
        yield tuned.batch(i)


if __name__ == "__main__":
    sluice_peer.main("numpy", "numpy " + np.__version__, make_batches, SUPPORTED)

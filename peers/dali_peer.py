"""peer:dali: the scenario's pipeline as NVIDIA DALI's users write one over
data of their own, on DALI's CPU backend (device_id=None, no GPU needed):

- a DALI pipeline (@pipeline_def) whose input is fn.external_source fed by
  an iterable that yields whole batches (batch=True, one output per source
  field, plus the per-element decisions of the random ops), DALI's
  documented way to read data it has no reader for; each batch is the
  plan's exported order cut batch by batch, gathered from the source
  fields in memory with np.take (pack_tokens' stream held as rows of
  seq_len, its tail padded once, as peer:numpy holds it);
- the ops as DALI graph nodes, in the plan's order: normalize, scale, add
  and multiply as DALI's arithmetic expressions on DataNodes with float32
  constants ((x - mean) * inv_std with inv_std = float32(1 / std), sluice's
  two roundings; the mean and 1/std broadcast over the channels, the last
  axis); clip as nvidia.dali.math.clamp; random_crop as fn.slice at each
  element's exported offset, then a second fn.slice with a negative anchor and
  out_of_bounds_policy="pad" that pads the crop back, centred, with zeros;
  random_hflip as fn.flip with each element's exported flag as its
  per-sample `horizontal` argument; rebatch, which leaves a batch's bytes as
  they are, as nothing;
- beyond the gate: rot90 as fn.rotate by each element's exported quarter
  turns (nearest neighbour: exact on a square image); random_brightness and
  random_scale as arithmetic on their exported 24-bit draws, sluice's
  float32 roundings in sluice's order; gaussian_noise from DALI's own
  generator (fn.random.normal, the pipeline's fixed seed), which sluice
  compares statistically; one_hot as fn.one_hot; MixUp and CutMix from the
  exported per-batch decisions and partners (fn.permute_batch for the
  partners, fn.multi_paste for CutMix's box); NLP-2's pad_to_multiple and
  attention_mask as fn.slice to each row's length and fn.pad aligned to
  the multiple (bucket_by_length is in the exported order already);
  PC-5's affine as arithmetic, and dropout's mask recomputed from its keying
  by Philox4x32-10 (sluice_ops.philox4x32_10) as arithmetic on uint64
  DataNodes, from each element's id and the epoch fed beside the data;
- DALI's defaults for everything else: its executor runs
  prefetch_queue_depth = 2 iterations ahead of the consumer on its own
  thread (num_threads=1, sluice's --threads 1), so the peer is prefetching.

DALI's API is batch-first (a pipeline processes whole batches of samples,
each operator per sample inside its C++ kernels), so there is no
per-element form that differs the way a torch Dataset's __getitem__ or a
Grain Map per element does: one form.

fn.crop_mirror_normalize and fn.normalize (with mean and stddev) also gave
sluice's bytes on every u8 value with ImageNet's statistics (x 255), but
the first needs an image layout and the second computes the statistics
itself unless given both; the arithmetic expression is the one that
applies to every gate scenario's normalize (images, TAB-1's 100 features,
PC-1's tensors) with the same two roundings.
"""

import os
import sys

import numpy as np
from nvidia.dali import fn, pipeline_def, types
from nvidia.dali import math as dmath

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy_idiomatic_peer
import numpy_peer
import sluice_ops
import sluice_peer

# What this script implements: its line in peers/ops.txt. How: rebatch
# splits a batch into micro-batches and joins them back, which leaves its
# bytes as they were, and bucket_by_length is in the exported order already:
# nothing to run for either. rot90, brightness and scale from their exported
# decisions, and gaussian noise drawn by DALI's own generator (compared
# statistically; the pipeline's fixed seed makes a second session draw the
# first's noise again, which sluice requires of a prefetching peer). CV-3's
# one-hot labels (fn.one_hot) and MixUp and CutMix from the exported
# per-batch decisions and partners: the partner's sample by
# fn.permute_batch, CutMix's box by fn.multi_paste. NLP-2's dynamic padding
# as DALI pads a batch of variable-length samples: each row cut to its
# length (fn.slice), then fn.pad to the batch's longest row aligned to the
# multiple; its attention mask the same way from ones. PC-5's affine as
# arithmetic, and dropout with its mask recomputed from its keying by
# Philox4x32-10 as arithmetic on uint64 DataNodes (the element ids and the
# epoch fed beside the data).
SUPPORTED = sluice_peer.implements(__file__)

# Ops whose decisions (per element, or per batch for the mixing ops) or
# keying (dropout's) are fed beside the data.
DECIDED = ("random_crop", "random_hflip", "rot90", "random_brightness", "random_scale", "mixup", "cutmix", "dropout")
# How many inputs each decided op's decisions take (one otherwise): a
# mixing op's partners and weights, CutMix's paste lists, and dropout's
# element ids and epoch.
DECISION_INPUTS = {"mixup": 3, "cutmix": 6, "dropout": 2}

# DALI's random operators draw from the pipeline's seed: a fixed one, so
# that each session of the peer draws the same noise.
SEED = 2024


def f32(value):
    return types.Constant(np.float32(value), dtype=types.FLOAT)


def normalize(x, p):
    """(x - mean) * inv_std in float32, the constants broadcast over the
    last axis (channels last), or scalars for one channel."""
    channels = p["channels"]
    if channels == 1:
        return (x - f32(p["mean"][0])) * f32(p["inv_std"][0])
    mean = types.Constant(np.asarray(p["mean"][:channels], dtype=np.float32))
    inv_std = types.Constant(np.asarray(p["inv_std"][:channels], dtype=np.float32))
    return (x - mean) * inv_std


def random_crop(x, p, offsets, shape):
    """Each image cropped at its exported (row, column) offset and padded
    back to its shape, centred, with zeros."""
    h, w = shape[0], shape[1]
    ch, cw = p["crop_h"], p["crop_w"]
    top, left = (h - ch) // 2, (w - cw) // 2
    crop = fn.slice(
        x,
        offsets,
        types.Constant(np.array([ch, cw], dtype=np.int32)),
        axes=[0, 1],
        normalized_anchor=False,
        normalized_shape=False,
    )
    return fn.slice(
        crop,
        types.Constant(np.array([-top, -left], dtype=np.int32)),
        types.Constant(np.array([h, w], dtype=np.int32)),
        axes=[0, 1],
        normalized_anchor=False,
        normalized_shape=False,
        out_of_bounds_policy="pad",
        fill_values=0,
    )


def apply_op(op, x, decision, shape):
    kind, p = op["kind"], op["params"]
    if kind == "normalize":
        return normalize(x, p)
    if kind in ("scale", "multiply"):
        return x * f32(p["value"])
    if kind == "add":
        return x + f32(p["value"])
    if kind == "clip":
        return dmath.clamp(x, f32(p["lo"]), f32(p["hi"]))
    if kind == "random_crop":
        return random_crop(x, p, decision, shape)
    if kind == "random_hflip":
        return fn.flip(x, horizontal=decision, vertical=0)
    if kind == "rot90":
        # fn.rotate turns counter-clockwise, as sluice's k quarter turns do;
        # with nearest-neighbour sampling a square image's quarter turns
        # land every source pixel's centre on an output pixel's centre, so
        # the values move unchanged (checked bitwise on 31 to 512 pixels a
        # side, -0.0 and NaN included). sluice's rot90 refuses a non-square
        # image, so keep_size never cuts anything. The layout names the
        # height and width for fn.rotate (a relabelling, no copy).
        image = fn.reshape(x, layout="HWC" if len(shape) == 3 else "HW")
        return fn.rotate(
            image, angle=fn.cast(decision, dtype=types.FLOAT) * f32(90.0), interp_type=types.INTERP_NN, keep_size=True
        )
    if kind == "random_brightness":
        # d = f32(delta) * ((u24 - 2^23) * 2^-23): the u24 draw is exact in
        # float32 and so are the subtraction and the power of two, leaving
        # sluice's one rounding, in the product; d, one scalar per sample,
        # broadcasts over the sample's values.
        v = (fn.cast(decision, dtype=types.FLOAT) - f32(2.0**23)) * f32(2.0**-23)
        return x + f32(p["delta"]) * v
    if kind == "random_scale":
        # f = min(lo + (hi - lo) * (u24 * 2^-24), hi), hi - lo rounded to
        # float32 as sluice rounds it, then the sum's and product's roundings.
        lo, hi = np.float32(p["lo"]), np.float32(p["hi"])
        u = fn.cast(decision, dtype=types.FLOAT) * f32(2.0**-24)
        return x * dmath.min(f32(lo) + f32(hi - lo) * u, f32(hi))
    if kind == "gaussian_noise":
        # DALI's own standard normal variates, one per value (the shape of
        # x), drawn from the pipeline's seed.
        return x + f32(p["sigma"]) * fn.random.normal(x, dtype=types.FLOAT)
    if kind == "affine":
        # x * scale + bias, the constants broadcast over the channels (the
        # last axis): the product rounded, then the sum (DALI's CPU
        # arithmetic does not contract them into a fused multiply-add).
        c = p["channels"]
        scale = types.Constant(np.asarray(p["scale"][:c], dtype=np.float32))
        bias = types.Constant(np.asarray(p["bias"][:c], dtype=np.float32))
        return x * scale + bias
    if kind == "one_hot":
        # A label, one integer per sample, to `classes` float32 values: 1 at
        # the label, 0 elsewhere (and everywhere for a label out of range).
        return fn.one_hot(x, num_classes=p["classes"], dtype=types.FLOAT)
    if kind in ("rebatch", "bucket_by_length"):
        return x
    raise SystemExit("peer:dali lacks %s" % kind)


def u64(value):
    return types.Constant(np.uint64(value), dtype=types.UINT64)


class Words:
    """uint64 DataNodes holding 32-bit words, with the operators
    sluice_ops.philox4x32_10 applies to them: the product, xor and mask as
    DALI's arithmetic, and the shift as the floor division by 2^n that it
    is for unsigned integers (DALI's arithmetic has no shift)."""

    def __init__(self, node):
        self.node = node

    @staticmethod
    def _operand(other):
        return other.node if isinstance(other, Words) else u64(other)

    def __mul__(self, other):
        return Words(self.node * self._operand(other))

    def __xor__(self, other):
        return Words(self.node ^ self._operand(other))

    def __and__(self, other):
        return Words(self.node & self._operand(other))

    def __rshift__(self, n):
        return Words(self.node // u64(1 << n))


def dropout(op, x, decision, shape, seed):
    """Dropout as sluice keys it: Philox4x32-10 with the key of (seed, op
    id) on the counter (element id mod 2^32, element id >> 32, epoch, value
    index / 4), as DALI arithmetic on uint64 words, each sample's counter
    one row of blocks of four values; value i kept when word i mod 4 is not
    below ceil(p 2^32). The kept values are x * float32(1 / (1 - p)); the
    dropped ones +0.0, by clearing the product's bits (DALI has no select,
    and a product with 0 would keep a -0.0 or NaN)."""
    ids, epoch = decision
    values = int(np.prod(shape))
    blocks = -(-values // 4)
    block = types.Constant(np.arange(blocks, dtype=np.uint64))
    zeros = types.Constant(np.zeros(blocks, dtype=np.uint64))
    counter = (
        Words(ids % u64(1 << 32) + zeros),
        Words(ids // u64(1 << 32) + zeros),
        Words(epoch + zeros),
        Words(block),
    )
    words = sluice_ops.philox4x32_10(counter, sluice_ops.philox_key(seed, op["op_id"]))
    threshold = u64(sluice_ops.dropout_threshold(np.float32(op["params"]["p"])))
    # Each word's keep as an all-ones (-1) or all-zeros int32 mask, the
    # four words of a block interleaved as value indices run.
    masks = [fn.cast(w.node >= threshold, dtype=types.INT32) * types.Constant(np.int32(-1)) for w in words]
    mask = fn.reshape(fn.stack(*masks, axis=1), shape=[blocks * 4])
    if blocks * 4 != values:
        mask = fn.slice(
            mask,
            types.Constant(np.array([0], dtype=np.int32)),
            types.Constant(np.array([values], dtype=np.int32)),
            axes=[0],
            normalized_anchor=False,
            normalized_shape=False,
        )
    mask = fn.reshape(mask, shape=list(shape))
    scaled = x * f32(numpy_idiomatic_peer.dropout_scale(op["params"]["p"]))
    return fn.reinterpret(fn.reinterpret(scaled, dtype=types.INT32) & mask, dtype=types.FLOAT)


def blend(x, partner, w_own, w_partner):
    """x[i] * w_own + x[partner[i]] * w_partner, sluice's two float32
    products then their sum: the partners' samples gathered by
    fn.permute_batch, the batch's weights one scalar per sample."""
    return x * w_own + fn.permute_batch(x, indices=partner) * w_partner


def mix(op, fields, decision):
    """MixUp or CutMix of op's field and its label from the batch's exported
    decisions: MixUp blends both; CutMix pastes the partner's box into each
    image (fn.multi_paste: the image itself over the whole canvas, then the
    partner's box over it, the later paste on top) and blends the labels
    by the box's area."""
    name, label = op["field"], op["params"]["label"]
    if op["kind"] == "mixup":
        partner, w_own, w_partner = decision
        fields[name] = blend(fields[name], partner, w_own, w_partner)
    else:
        partner, ids, anchors, shapes, w_own, w_partner = decision
        fields[name] = fn.multi_paste(
            fn.reshape(fields[name], layout="HWC"), in_ids=ids, in_anchors=anchors, shapes=shapes, out_anchors=anchors
        )
    fields[label] = blend(fields[label], partner, w_own, w_partner)


def row_prefix(x, lengths, capacity):
    """Each row's first `length` values (the length clamped to [0,
    capacity], as sluice clamps it): samples of varying length."""
    length = fn.reshape(dmath.clamp(lengths, 0, capacity), shape=[1])
    return fn.slice(
        x,
        types.Constant(np.array([0], dtype=np.int32)),
        length,
        axes=[0],
        normalized_anchor=False,
        normalized_shape=False,
    )


def pad_to_multiple(x, lengths, p, capacity):
    """The batch's rows cut to their lengths and padded with pad_id to the
    longest, rounded up to the multiple (fn.pad's align), never past the
    capacity."""
    out = fn.pad(row_prefix(x, lengths, capacity), axes=[0], fill_value=p["pad_id"], align=p["multiple"])
    if capacity % p["multiple"]:
        out = fn.slice(
            out,
            types.Constant(np.array([0], dtype=np.int32)),
            types.Constant(np.array([capacity], dtype=np.int32)),
            axes=[0],
            normalized_anchor=False,
            normalized_shape=False,
            out_of_bounds_policy="trim_to_shape",
        )
    return out


def attention_mask(x, lengths, capacity):
    """u8 1 for each row's first `length` positions, 0 after, as wide as x:
    ones cut to the lengths, padded with zeros to x's width."""
    ones = types.Constant(np.ones(capacity, dtype=np.uint8))
    return fn.pad(row_prefix(ones, lengths, capacity), axes=[0], fill_value=0, shape=x.shape(dtype=types.INT32))


class Feed:
    """The pipeline's external source: the plan's batches in order, each
    the source fields' rows of its ids (np.take into fresh arrays: DALI
    copies what it is given, but holds a batch while later ones are made)
    and the decisions of the random ops for those ids."""

    def __init__(self, plan, sources, decided):
        self.plan, self.sources, self.decided = plan, sources, decided

    def __iter__(self):
        plan = self.plan
        for i, b in enumerate(plan.batches):
            ids = plan.batch_ids(i)
            out = [np.take(data, ids, axis=0) for data in self.sources.values()]
            for op in self.decided:
                if op["kind"] in ("mixup", "cutmix"):
                    out.extend(self.batch_decisions(op, i, len(ids)))
                    continue
                if op["kind"] == "dropout":
                    # Its keying: each element's id and the batch's epoch.
                    out.append(np.asarray(ids, dtype=np.uint64))
                    out.append(np.full(len(ids), b["epoch"], dtype=np.uint64))
                    continue
                dec = plan.decisions(op, b["epoch"])
                if op["kind"] == "random_crop":
                    out.append(np.ascontiguousarray(dec[ids, 0:2], dtype=np.int32))
                elif op["kind"] == "random_hflip":
                    out.append(np.ascontiguousarray(dec[ids, 0] != 0, dtype=np.int32))
                else:
                    # rot90's quarter turns, or the 24-bit uniform draw of
                    # brightness and scale: one scalar per sample.
                    out.append(np.ascontiguousarray(dec[ids, 0], dtype=np.int32))
            yield out

    def batch_decisions(self, op, i, rows):
        """A mixing op's inputs for batch i of `rows` elements: its partners
        (a short batch's first rows), then for CutMix each sample's paste
        list (its own index and its partner's) with the two regions'
        anchors and shapes (the whole image, then the box), then the two
        weights, repeated per sample."""
        row = self.plan.batch_decisions(op)[i]
        partner = np.ascontiguousarray(self.plan.batch_partners(op)[i][:rows], dtype=np.int32)
        if op["kind"] == "mixup":
            w_own, w_partner = row[1], row[2]
            out = [partner]
        else:
            y0, y1, x0, x1 = (int(v) for v in row[1:5])
            w_own, w_partner = row[5], row[6]
            h, w = self.sources[op["field"]].shape[1:3]
            ids = np.stack([np.arange(rows, dtype=np.int32), partner], axis=1)
            anchors = np.broadcast_to(np.array([[0, 0], [y0, x0]], dtype=np.int32), (rows, 2, 2))
            shapes = np.broadcast_to(np.array([[h, w], [y1 - y0, x1 - x0]], dtype=np.int32), (rows, 2, 2))
            out = [partner, ids, np.ascontiguousarray(anchors), np.ascontiguousarray(shapes)]
        return out + [np.full(rows, w_own, dtype=np.float32), np.full(rows, w_partner, dtype=np.float32)]


def make_batches(plan, options):
    sources = {f["name"]: plan.load_source(f["name"]) for f in plan.source_fields}
    ops = list(plan.ops)
    if ops and ops[0]["kind"] == "pack_tokens":
        pack = ops.pop(0)
        sources[pack["field"]] = numpy_peer.Tuned.sequences(sources[pack["field"]], pack["params"])
    decided = [op for op in ops if op["kind"] in DECIDED]
    names = list(sources)
    feed = Feed(plan, sources, decided)

    @pipeline_def(batch_size=plan.batch_size, num_threads=1, device_id=None, seed=SEED)
    def pipeline():
        counts = [DECISION_INPUTS.get(op["kind"], 1) for op in decided]
        inputs = fn.external_source(source=feed, num_outputs=len(names) + sum(counts), batch=True)
        inputs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        fields = dict(zip(names, inputs[: len(names)]))
        decisions, at = {}, len(names)
        for op, count in zip(decided, counts):
            decisions[op["index"]] = inputs[at] if count == 1 else inputs[at : at + count]
            at += count
        for op in ops:
            name = op["field"]
            if op["kind"] in ("mixup", "cutmix"):
                mix(op, fields, decisions[op["index"]])
                continue
            if op["kind"] == "dropout":
                if plan.raw.get("mode", "train") != "eval":
                    fields[name] = dropout(
                        op, fields[name], decisions[op["index"]], sources[name].shape[1:], int(plan.raw["seed"])
                    )
                continue
            if op["kind"] == "pad_to_multiple":
                fields[name] = pad_to_multiple(
                    fields[name], fields[op["params"]["lengths"]], op["params"], sources[name].shape[1]
                )
                continue
            if op["kind"] == "attention_mask":
                fields[op["params"]["out"]] = attention_mask(
                    fields[name], fields[op["params"]["lengths"]], sources[name].shape[1]
                )
                continue
            fields[name] = apply_op(op, fields[name], decisions.get(op["index"]), sources[name].shape[1:])
        return tuple(fields[spec["name"]] for spec in plan.output)

    pipe = pipeline()
    pipe.build()
    for _ in plan.batches:
        outputs = pipe.run()
        yield {spec["name"]: np.asarray(out.as_tensor()) for spec, out in zip(plan.output, outputs)}


if __name__ == "__main__":
    from importlib.metadata import version

    sluice_peer.main(
        "dali",
        "nvidia-dali %s (CPU backend)" % version("nvidia-dali-cuda120"),
        make_batches,
        SUPPORTED,
        kind="prefetching",
    )

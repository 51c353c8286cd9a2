"""peer:grain (tuned) and peer:grain-idiomatic, peer:grain-idiomatic-t2.

The tuned form is a Grain MapDataset over the plan's batch indices whose one
Map makes a whole batch with peer:numpy's vectorized code, read by index
(see tuned_batches). The idiomatic form is the scenario's pipeline written the way
Grain's tutorials teach it: a random-access data source (here, the exported element order
of each epoch), grain.MapDataset.source(...).map(Transform()).batch(...), with
one grain.transforms.Map per op, each working on one element as numpy arrays.
peer:grain-idiomatic iterates the MapDataset in the main thread; -t2 turns it
into an IterDataset whose iterator prefetches with 2 threads
(grain.ReadOptions(num_threads=2)), Grain's own worker knob short of
processes.

It computes what sluice computes, not the shortest idiom where the two round
differently: normalize is (x - mean) * inv_std with inv_std = float32(1 / std);
clip is two comparisons, so NaN passes through as in sluice; float32 throughout.
Beyond the gate ops, each Map calls peers/numpy_idiomatic_peer.py's function
for the op on its one element (zscore, volume crops and flips, token padding,
sluice's log1p and id hash; rot90, brightness, scale, resize,
random_resized_crop, log_mel, affine, dropout, trig_rounds and the sub-op
graphs through its apply_ops on a batch of one), and the ops that need the
whole batch (bag offsets, padding to a multiple, the attention mask, MixUp,
CutMix, and gaussian noise drawn per batch by numpy's generator as
peer:numpy draws it) are one Map each after .batch(), from the first such op
on. IO-4's cache is a dict from element id to its fields after the ops
before the cache op, kept across the plan's epochs, as a Grain user keeps
one in a Map.
"""

import os
import sys

import grain
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy_idiomatic_peer as numpy_peer
import numpy_peer as numpy_tuned
import sluice_peer

# What this script implements: its line in peers/ops.txt, the same as
# peer:numpy's: the tuned form with numpy_peer's code, the idiomatic one with
# numpy_idiomatic_peer's functions.
SUPPORTED = sluice_peer.implements(__file__)
# Ops on a whole batch: these and every op after the first of them run as
# Maps after .batch(). Gaussian noise is one because numpy's generator is
# keyed per batch (seed, op id, epoch, batch), as peer:numpy keys it; drawn
# per element from that key, every element of a batch would get one draw.
BATCH = {"bag_offsets", "pad_to_multiple", "attention_mask", "mixup", "cutmix", "gaussian_noise"}

KEY = "_sluice_key"


class ExportedEpoch:
    """Grain's data source protocol (__len__, __getitem__): element k of an
    epoch's exported order, read from the in-memory source fields."""

    def __init__(self, plan, sources, epoch, shift, pack):
        self.order = plan.order(epoch)
        self.sources = sources
        self.epoch = epoch
        self.shift = shift
        self.batch_size = plan.batch_size
        self.pack = pack

    def __len__(self):
        return len(self.order)

    def __getitem__(self, k):
        i = int(self.order[k])
        # The key the ops' decisions are read by: epoch, element id, and the
        # index in plan.batches of the element's batch (the epoch's batch
        # k // batch_size, shifted), which the per-batch ops need.
        out = {KEY: np.array([self.epoch, i, k // self.batch_size + self.shift], dtype=np.int64)}
        for name, data in self.sources.items():
            if self.pack is not None and name == self.pack["field"]:
                p = self.pack["params"]
                seq = np.full(p["seq_len"], p["pad_id"], dtype=data.dtype)
                part = data[i * p["seq_len"] : (i + 1) * p["seq_len"]]
                seq[: part.shape[0]] = part
                out[name] = seq
            else:
                out[name] = data[i]
        return out


class OpTransform(grain.transforms.Map):
    """One sluice op on one element's field."""

    def __init__(self, plan, op):
        self.plan, self.op, self.p, self.field = plan, op, op["params"], op["field"]

    def map(self, element):
        key = element[KEY]
        element[self.field] = self.apply(element[self.field], (int(key[0]), int(key[1])))
        return element


class Normalize(OpTransform):
    def apply(self, x, key):
        mean = np.asarray(self.p["mean"], dtype=np.float32)
        inv_std = np.asarray(self.p["inv_std"], dtype=np.float32)
        if self.p["channels"] == 1:
            mean, inv_std = mean[0], inv_std[0]
        return (x.astype(np.float32) - mean) * inv_std


class Multiply(OpTransform):
    def apply(self, x, key):
        return x * np.float32(self.p["value"])


class Add(OpTransform):
    def apply(self, x, key):
        return x + np.float32(self.p["value"])


class Clip(OpTransform):
    def apply(self, x, key):
        lo, hi = np.float32(self.p["lo"]), np.float32(self.p["hi"])
        return np.where(x < lo, lo, np.where(x > hi, hi, x)).astype(np.float32)


class RandomCrop(OpTransform):
    """Crops at the exported offset and pads back, centred, with zeros."""

    def apply(self, x, key):
        epoch, i = key
        oy, ox = (int(v) for v in self.plan.decisions(self.op, epoch)[i][:2])
        h, w, ch, cw = x.shape[0], x.shape[1], self.p["crop_h"], self.p["crop_w"]
        top, left = (h - ch) // 2, (w - cw) // 2
        out = np.zeros_like(x)
        out[top : top + ch, left : left + cw] = x[oy : oy + ch, ox : ox + cw]
        return out


class RandomHFlip(OpTransform):
    def apply(self, x, key):
        epoch, i = key
        return x[:, ::-1].copy() if self.plan.decisions(self.op, epoch)[i][0] else x


class ZScore(OpTransform):
    def apply(self, x, key):
        return numpy_peer.zscore(x[None])[0]


class RandomCrop3d(OpTransform):
    def apply(self, x, key):
        epoch, i = key
        z, y, w = (int(v) for v in self.plan.decisions(self.op, epoch)[i][:3])
        return x[z : z + self.p["d"], y : y + self.p["h"], w : w + self.p["w"]].copy()


class RandomFlip3d(OpTransform):
    def apply(self, x, key):
        epoch, i = key
        axes = int(self.plan.decisions(self.op, epoch)[i][0])
        dims = tuple(d for bit, d in ((1, 0), (2, 1), (4, 2)) if axes & bit)
        return np.flip(x, axis=dims).copy() if dims else x


class OneHot(OpTransform):
    def apply(self, x, key):
        return (np.arange(self.p["classes"]) == x).astype(np.float32)


class PadTokens(OpTransform):
    def apply(self, x, key):
        return numpy_peer.pad_tokens(x[None], self.p)[0]


class Log1p(OpTransform):
    def apply(self, x, key):
        return numpy_peer.log1p(x)


class HashIds(OpTransform):
    def apply(self, x, key):
        return numpy_peer.hash_ids(x, self.p)


class ElementOps(grain.transforms.Map):
    """Ops without a Map of their own above (one op, or a sub-op graph with
    the ops it owns) on one element, by numpy_idiomatic_peer's apply_ops on
    a batch of one."""

    def __init__(self, plan, ops):
        self.plan, self.ops = plan, ops

    def map(self, element):
        key = element.pop(KEY)
        one = {name: values[None] for name, values in element.items()}
        done = numpy_peer.apply_ops(self.plan, one, self.ops, int(key[0]), key[1:2], batch=int(key[2]))
        element = {name: values[0] for name, values in done.items()}
        element[KEY] = key
        return element


class CachedOps(grain.transforms.Map):
    """IO-4's cache: the ops before the cache op on an element the first
    time it is met, their fields read back from a dict (element id to
    fields) every later time. The ops before a cache draw nothing, so an
    element's fields are the same in every epoch; the dict outlives each
    epoch's MapDataset."""

    def __init__(self, plan, ops):
        self.compute = ElementOps(plan, ops)
        self.rows = {}

    def map(self, element):
        key = element[KEY]
        i = int(key[1])
        if i not in self.rows:
            done = self.compute.map(element)
            self.rows[i] = {name: values for name, values in done.items() if name != KEY}
        out = dict(self.rows[i])
        out[KEY] = key
        return out


class BatchOps(grain.transforms.Map):
    """Ops on a whole batch of numpy arrays (one op, or a sub-op graph with
    the ops it owns), by numpy_idiomatic_peer's apply_ops with the batch's
    element ids and plan batch index."""

    def __init__(self, plan, ops):
        self.plan, self.ops = plan, ops

    def map(self, batch):
        key = batch[KEY]
        return numpy_peer.apply_ops(self.plan, batch, self.ops, int(key[0, 0]), key[:, 1], batch=int(key[0, 2]))


def units(ops):
    """The ops as Grain Maps take them: each op alone, but a graph op with
    the sub-ops it owns."""
    k = 0
    while k < len(ops):
        if ops[k]["kind"] in numpy_peer.GRAPHS:
            _, _, end = numpy_peer.sub_ops(ops, k)
        else:
            end = k + 1
        yield ops[k:end]
        k = end


def per_batch(unit):
    return any(op["kind"] in BATCH for op in unit)


class DropKey(grain.transforms.Map):
    def map(self, batch):
        del batch[KEY]
        return batch


TRANSFORMS = {
    "normalize": Normalize,
    "scale": Multiply,
    "multiply": Multiply,
    "add": Add,
    "clip": Clip,
    "random_crop": RandomCrop,
    "random_hflip": RandomHFlip,
    "zscore": ZScore,
    "random_crop3d": RandomCrop3d,
    "random_flip3d": RandomFlip3d,
    "one_hot": OneHot,
    "pad_tokens": PadTokens,
    "log1p": Log1p,
    "hash_ids": HashIds,
}


def idiomatic_batches(plan, options, threads):
    sources = {f["name"]: plan.load_source(f["name"]) for f in plan.source_fields}
    ops = list(plan.ops)
    pack = ops.pop(0) if ops and ops[0]["kind"] == "pack_tokens" else None
    # bucket_by_length is in the exported order already; rebatch splits a
    # batch into micro-batches and joins them back, the same bytes; cache's
    # bytes are those of the ops before it.
    ops = [op for op in ops if op["kind"] not in ("bucket_by_length", "rebatch")]
    at = numpy_peer.cache_index(plan)
    cached = None
    if at is not None:
        cached = CachedOps(plan, [op for op in ops if op["index"] < at])
        ops = [op for op in ops if op["index"] > at]
    groups = list(units(ops))
    split = next((k for k, unit in enumerate(groups) if per_batch(unit)), len(groups))
    index = {id(b): n for n, b in enumerate(plan.batches)}
    for epoch, batches in sorted(sluice_peer.epoch_batches(plan).items()):
        first = batches[0]["offset"] // plan.batch_size
        shift = index[id(batches[0])] - first
        ds = grain.MapDataset.source(ExportedEpoch(plan, sources, epoch, shift, pack))
        if cached is not None:
            ds = ds.map(cached)
        for unit in groups[:split]:
            if len(unit) == 1 and unit[0]["kind"] in TRANSFORMS:
                ds = ds.map(TRANSFORMS[unit[0]["kind"]](plan, unit[0]))
            else:
                ds = ds.map(ElementOps(plan, unit))
        ds = ds.batch(plan.batch_size, drop_remainder=False)
        for unit in groups[split:]:
            ds = ds.map(BatchOps(plan, unit))
        ds = ds.map(DropKey())[first : first + len(batches)]
        # iter(ds) alone would prefetch with Grain's default 16 threads; the
        # worker knob is ReadOptions, 0 threads reads in the caller's thread.
        read = grain.ReadOptions(num_threads=threads, prefetch_buffer_size=2 if threads else 0)
        it = iter(ds.to_iter_dataset(read))
        yield from it


class TunedBatch(grain.transforms.Map):
    """Batch k of the plan, made whole by peer:numpy's tuned code."""

    def __init__(self, plan):
        self.tuned = numpy_tuned.Tuned(plan)

    def map(self, k):
        return self.tuned.batch(k)


def tuned_batches(plan, options):
    """As a Grain expert loads data that is in memory already: a MapDataset
    over the plan's batch indices whose one Map makes a whole batch with
    vectorized numpy (no per-element records, no collation), read by index
    (MapDataset's random access, ds[k]) in the main thread. Iterating it
    instead goes through an IterDataset's iterator: with
    ReadOptions(num_threads=0, prefetch_buffer_size=0), this form's earlier
    way, about 4 us a batch more on NLP-1 (8.5 to 10.0 us against 5.4 to
    6.0, grain 0.2.18); plain iter(ds) prefetches with 16 threads
    (ReadOptions' defaults), which the buffers TunedBatch reuses across
    batches do not allow."""
    ds = grain.MapDataset.range(len(plan.batches)).map(TunedBatch(plan))
    for k in range(len(ds)):
        yield ds[k]


def make_batches(plan, options):
    if options.idiomatic or options.idiomatic_t2:
        return idiomatic_batches(plan, options, 2 if options.idiomatic_t2 else 0)
    return tuned_batches(plan, options)


if __name__ == "__main__":
    from importlib.metadata import version

    p = sluice_peer.parser("grain")
    p.add_argument("--idiomatic", action="store_true", help="one Map per op on each element, then batch")
    p.add_argument("--idiomatic-t2", action="store_true", help="the same with 2 prefetch threads")
    options = p.parse_args()
    kind = "prefetching" if options.idiomatic_t2 else "per-batch"
    if options.describe:
        sluice_peer.describe("grain", SUPPORTED, kind)
    else:
        plan = sluice_peer.start("grain", "grain " + version("grain"), options)
        plan.require(SUPPORTED)
        sluice_peer.serve(plan, make_batches(plan, options), options)

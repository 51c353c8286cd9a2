"""peer:grain (tuned) and peer:grain-idiomatic, peer:grain-idiomatic-t2.

The tuned form is a Grain MapDataset over the plan's batch indices whose one
Map makes a whole batch with peer:numpy's vectorized code (see
tuned_batches). The idiomatic form is the scenario's pipeline written the way
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
Beyond the gate ops, each Map calls peers/numpy_peer.py's function for the op
on its one element (zscore, volume crops and flips, token padding, sluice's
log1p and id hash), and the batch ops are a Map after .batch().
"""
import os
import sys

import grain
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy_idiomatic_peer as numpy_peer  # noqa: E402
import numpy_peer as numpy_tuned  # noqa: E402
import sluice_peer  # noqa: E402

SUPPORTED = {"pack_tokens", "normalize", "scale", "clip", "add", "multiply", "random_crop", "random_hflip", "zscore",
             "random_crop3d", "random_flip3d", "one_hot", "pad_tokens", "log1p", "hash_ids", "bag_offsets",
             "bucket_by_length", "pad_to_multiple", "attention_mask", "rebatch"}
# Ops on a whole batch: a Map after .batch().
BATCH = ("bag_offsets", "pad_to_multiple", "attention_mask")

KEY = "_sluice_key"


class ExportedEpoch:
    """Grain's data source protocol (__len__, __getitem__): element k of an
    epoch's exported order, read from the in-memory source fields."""

    def __init__(self, plan, sources, epoch, pack):
        self.order = plan.order(epoch)
        self.sources = sources
        self.epoch = epoch
        self.pack = pack

    def __len__(self):
        return len(self.order)

    def __getitem__(self, k):
        i = int(self.order[k])
        out = {KEY: (self.epoch, i)}
        for name, data in self.sources.items():
            if self.pack is not None and name == self.pack["field"]:
                p = self.pack["params"]
                seq = np.full(p["seq_len"], p["pad_id"], dtype=data.dtype)
                part = data[i * p["seq_len"]:(i + 1) * p["seq_len"]]
                seq[:part.shape[0]] = part
                out[name] = seq
            else:
                out[name] = data[i]
        return out


class OpTransform(grain.transforms.Map):
    """One sluice op on one element's field."""

    def __init__(self, plan, op):
        self.plan, self.op, self.p, self.field = plan, op, op["params"], op["field"]

    def map(self, element):
        element[self.field] = self.apply(element[self.field], element[KEY])
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
        out[top:top + ch, left:left + cw] = x[oy:oy + ch, ox:ox + cw]
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
        return x[z:z + self.p["d"], y:y + self.p["h"], w:w + self.p["w"]].copy()


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


class BatchOps(grain.transforms.Map):
    """The plan's batch ops on a batch of numpy arrays: bag offsets, dynamic
    padding to a multiple and the attention mask (numpy_peer's)."""

    def __init__(self, ops):
        self.ops = ops

    def map(self, batch):
        for op in self.ops:
            kind, p, name = op["kind"], op["params"], op["field"]
            if kind == "bag_offsets":
                batch[p["out"]] = np.cumsum(batch[name] >= 0, axis=0, dtype=np.int64)
            elif kind == "pad_to_multiple":
                batch[name] = numpy_peer.pad_to_multiple(batch[name], batch[p["lengths"]], p)
            else:
                batch[p["out"]] = numpy_peer.attention_mask(batch[name], batch[p["lengths"]])
        return batch


class DropKey(grain.transforms.Map):
    def map(self, element):
        del element[KEY]
        return element


TRANSFORMS = {"normalize": Normalize, "scale": Multiply, "multiply": Multiply, "add": Add, "clip": Clip,
              "random_crop": RandomCrop, "random_hflip": RandomHFlip, "zscore": ZScore, "random_crop3d": RandomCrop3d,
              "random_flip3d": RandomFlip3d, "one_hot": OneHot, "pad_tokens": PadTokens, "log1p": Log1p,
              "hash_ids": HashIds}


def idiomatic_batches(plan, options, threads):
    sources = {f["name"]: plan.load_source(f["name"]) for f in plan.source_fields}
    ops = list(plan.ops)
    pack = ops.pop(0) if ops and ops[0]["kind"] == "pack_tokens" else None
    for epoch, batches in sorted(sluice_peer.epoch_batches(plan).items()):
        first = batches[0]["offset"] // plan.batch_size
        ds = grain.MapDataset.source(ExportedEpoch(plan, sources, epoch, pack))
        for op in ops:
            if op["kind"] in TRANSFORMS:
                ds = ds.map(TRANSFORMS[op["kind"]](plan, op))
        ds = ds.map(DropKey()).batch(plan.batch_size, drop_remainder=False)
        # bucket_by_length is in the exported order already; rebatch splits a
        # batch into micro-batches and joins them back, the same bytes.
        batch_ops = [op for op in ops if op["kind"] in BATCH]
        if batch_ops:
            ds = ds.map(BatchOps(batch_ops))
        ds = ds[first:first + len(batches)]
        # iter(ds) alone would prefetch with Grain's default 16 threads; the
        # worker knob is ReadOptions, 0 threads reads in the caller's thread.
        read = grain.ReadOptions(num_threads=threads, prefetch_buffer_size=2 if threads else 0)
        it = iter(ds.to_iter_dataset(read))
        for batch in it:
            yield batch


class TunedBatch(grain.transforms.Map):
    """Batch k of the plan, made whole by peer:numpy's tuned code."""

    def __init__(self, plan):
        self.tuned = numpy_tuned.Tuned(plan)

    def map(self, k):
        return self.tuned.batch(k)


def tuned_batches(plan, options):
    """As a Grain expert loads data that is in memory already: a MapDataset
    over the plan's batch indices whose one Map makes a whole batch with
    vectorized numpy (no per-element records, no collation), iterated in the
    main thread."""
    ds = grain.MapDataset.range(len(plan.batches)).map(TunedBatch(plan))
    read = grain.ReadOptions(num_threads=0, prefetch_buffer_size=0)
    for batch in ds.to_iter_dataset(read):
        yield batch


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
        plan = sluice_peer.Plan(options.export_dir)
        plan.require(SUPPORTED)
        sluice_peer.serve("grain", "grain " + version("grain"), plan, make_batches(plan, options), options)

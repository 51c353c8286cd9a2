"""The peer side of sluice's peer protocol (docs/peers.md).

A peer is run as `python3 <peer>.py EXPORT_DIR [options]`, where EXPORT_DIR was
written by `sluice export` (or by the peer adapter). It prints to stdout one JSON
line to say hello, then one per batch, in order:

    {"hello": "<name>", "framework": "<framework and version>", "protocol": 1}
    {"batch": i, "latency_ns": n, "digest": "<16 hex digits>"}

latency_ns is the time from asking the loader for batch i until its arrays are
in host memory as numpy arrays; the digest is XXH3-64 of the batch's canonical
bytes, exactly those sluice digests (include/sluice/digest.h). Anything
for people goes to stderr.

This module needs only the standard library, numpy and xxhash.
"""
import contextlib
import json
import os
import shutil
import struct
import sys
import tempfile
import time

import numpy as np
import xxhash

PROTOCOL = 1
PLAN_VERSION = 1

DTYPES = {"u8": np.uint8, "i32": np.int32, "i64": np.int64, "f32": np.float32}


def check_manifest(directory):
    """Refuses an export folder that is not whole: its MANIFEST.json
    (include/sluice/folder.h) must be complete and of kind "export", and
    every file it lists must be there with the size it lists."""
    path = os.path.join(directory, "MANIFEST.json")
    try:
        with open(path) as f:
            manifest = json.load(f)
    except (OSError, ValueError) as e:
        raise SystemExit("%s: not a whole export (%s); export it again" % (directory, e))
    files = manifest.get("files")
    if (manifest.get("format") != "sluice-folder" or manifest.get("kind") != "export"
            or not isinstance(files, list) or manifest.get("count") != len(files)):
        raise SystemExit("%s: MANIFEST.json is not a whole export manifest" % directory)
    # Peers may keep what they derive beside the export (a converted data
    # set), so files the manifest does not list are not refused here.
    listed = {entry["name"]: entry["bytes"] for entry in files}
    for name, size in listed.items():
        try:
            actual = os.stat(os.path.join(directory, name)).st_size
        except OSError:
            raise SystemExit("%s: its manifest lists %s, which is missing" % (directory, name))
        if actual != size:
            raise SystemExit("%s: %s has %d bytes, its manifest says %d" % (directory, name, actual, size))


class Plan:
    """An exported plan: its JSON, with lazy access to the arrays beside it."""

    def __init__(self, directory):
        self.dir = directory
        check_manifest(directory)
        with open(os.path.join(directory, "plan.json")) as f:
            self.raw = json.load(f)
        if self.raw.get("format") != "sluice-peer-plan" or self.raw.get("version") != PLAN_VERSION:
            raise SystemExit("not a sluice peer plan of version %d: %s" % (PLAN_VERSION, directory))
        self.batch_size = self.raw["batch_size"]
        self.batches = self.raw["batches"]
        self.ops = self.raw["ops"]
        self.output = self.raw["output"]
        self.source_fields = self.raw["source"]["fields"]
        self._orders = {}
        self._decisions = {}
        # Where to write each batch (sluice's --batches-dir): for a plan whose
        # draws are not all exported, sluice checks the batches themselves.
        self.batches_dir = None

    def keep(self, i, arrays):
        """Writes batch i's output fields as batch<i>_<field>.npy into
        batches_dir, when sluice asked for them (after the clock stopped)."""
        if self.batches_dir:
            for spec in self.output:
                np.save(os.path.join(self.batches_dir, "batch%d_%s.npy" % (i, spec["name"])),
                        np.ascontiguousarray(arrays[spec["name"]]))

    def source(self, name):
        """A source field, memory-mapped: read as a loader reads a data set file."""
        return np.load(os.path.join(self.dir, name + ".npy"), mmap_mode="r")

    def load_source(self, name):
        """A source field, in memory (what sluice's memory sources hold)."""
        return np.load(os.path.join(self.dir, name + ".npy"))

    def order(self, epoch):
        if epoch not in self._orders:
            name = self.raw["order_file"].replace("{epoch}", str(epoch))
            self._orders[epoch] = np.load(os.path.join(self.dir, name))
        return self._orders[epoch]

    def batch_ids(self, i):
        b = self.batches[i]
        return self.order(b["epoch"])[b["offset"]:b["offset"] + b["rows"]]

    def decisions(self, op, epoch):
        """op's per-element decisions in epoch, i32 [dataset size, columns], by element id."""
        key = (op["index"], epoch)
        if key not in self._decisions:
            d = op.get("decisions")
            if not d or not d.get("exported"):
                raise SystemExit("op %d (%s) has no exported decisions" % (op["index"], op["kind"]))
            name = d["file"].replace("{epoch}", str(epoch))
            self._decisions[key] = np.load(os.path.join(self.dir, name))
        return self._decisions[key]

    def batch_decisions(self, op):
        """A batch op's per-batch decisions, f32 [nbatches, columns], row k for batches[k]."""
        return self._batch_file(op, "file")

    def batch_partners(self, op):
        """A mixing op's partners, i32 [nbatches, batch_size], -1 past a short batch."""
        return self._batch_file(op, "partners_file")

    def _batch_file(self, op, key):
        d = op.get("decisions") or {}
        if not d.get("exported") or key not in d:
            raise SystemExit("op %d (%s) has no exported %s" % (op["index"], op["kind"], key))
        cache = (op["index"], key)
        if cache not in self._decisions:
            self._decisions[cache] = np.load(os.path.join(self.dir, d[key]))
        return self._decisions[cache]

    def kinds(self):
        return [op["kind"] for op in self.ops]

    def require(self, supported):
        """Refuses a plan with an op this peer does not implement (sluice's
        adapter excludes such scenarios before it starts a peer)."""
        missing = [k for k in self.kinds() if k not in supported]
        if missing:
            raise SystemExit("this peer lacks transform(s): %s" % ", ".join(missing))


@contextlib.contextmanager
def written_aside(path):
    """Yields a fresh directory beside `path` to write into, and renames it to
    `path` when the block ends, so that a run cut short leaves no half-written
    data set for a later run to take as whole; on an error it is removed."""
    parent, name = os.path.split(path)
    tmp = tempfile.mkdtemp(prefix="." + name + "-", dir=parent)
    try:
        yield tmp
        os.rename(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def epoch_batches(plan):
    """The plan's batches grouped by epoch, {epoch: [batch, ...]}. Each epoch's
    must be its order cut every batch_size elements (from some batch on), which
    is what the frameworks' batch() does; anything else is refused."""
    epochs = {}
    for b in plan.batches:
        epochs.setdefault(b["epoch"], []).append(b)
    for epoch, batches in epochs.items():
        for k, b in enumerate(batches):
            if b["offset"] != batches[0]["offset"] + k * plan.batch_size:
                raise SystemExit("epoch %d's batches are not its order cut every %d" % (epoch, plan.batch_size))
    return epochs


def f32(value):
    return np.float32(value)


def digest(plan, arrays):
    """XXH3-64, as 16 hex digits, of a batch's canonical bytes: for each output
    field in order, its name and dtype name each ending with a NUL, its rank and
    dims (the batch's row count first) as little-endian i64, then its data."""
    h = xxhash.xxh3_64()
    for spec in plan.output:
        a = np.ascontiguousarray(arrays[spec["name"]])
        want = DTYPES[spec["dtype"]]
        if a.dtype != want:
            raise SystemExit("field %s is %s, the plan says %s" % (spec["name"], a.dtype, spec["dtype"]))
        h.update(spec["name"].encode() + b"\0")
        h.update(spec["dtype"].encode() + b"\0")
        h.update(struct.pack("<q", a.ndim))
        h.update(struct.pack("<%dq" % a.ndim, *a.shape))
        h.update(memoryview(a).cast("B"))
    return "%016x" % h.intdigest()


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def serve(name, framework, plan, batches, latency=None):
    """Runs the protocol: says hello, then times each next(batches) (which must
    return a dict of numpy arrays in host memory) and reports it with its digest.
    The digest is computed after the clock stops, as sluice's sink is.
    latency(i), when given, is batch i's latency instead of the time next()
    took: for a loader that computes many batches in one call (Datarax's scan
    mode), its share of that call."""
    out = sys.stdout
    out.write(json.dumps({"hello": name, "framework": framework, "protocol": PROTOCOL}) + "\n")
    out.flush()
    it = iter(batches)
    for i in range(len(plan.batches)):
        t0 = time.perf_counter_ns()
        arrays = next(it)
        t1 = time.perf_counter_ns()
        rows = plan.batches[i]["rows"]
        first = arrays[plan.output[0]["name"]]
        if first.shape[0] != rows:
            raise SystemExit("batch %d has %d rows, the plan says %d" % (i, first.shape[0], rows))
        ns = t1 - t0 if latency is None else latency(i)
        out.write(json.dumps({"batch": i, "latency_ns": ns, "digest": digest(plan, arrays)}) + "\n")
        out.flush()
        plan.keep(i, arrays)


def main(name, framework, make_batches, supported, argv=None):
    """The usual peer entry point: reads the plan named on the command line,
    checks the transforms, and serves make_batches(plan, options)."""
    import argparse

    parser = argparse.ArgumentParser(prog=name)
    parser.add_argument("export_dir")
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--batches-dir")
    options = parser.parse_args(argv)
    plan = Plan(options.export_dir)
    plan.batches_dir = options.batches_dir
    plan.require(supported)
    serve(name, framework, plan, make_batches(plan, options))

"""The peer side of sluice's peer protocol (docs/peers.md), and a small API
for writing a loader that sluice ranks: a generator of batches over a plan.

A loader is a function make_batches(plan, options) that yields, for each of
the plan's batches in order, a dict {output field name: array}; an array is a
numpy array (or anything with the buffer protocol, .shape and .dtype, such as
a CPU torch tensor's .numpy()), or a (shape, bytes-like) pair for a loader
written without numpy. The script ends with

    if __name__ == "__main__":
        sluice_peer.main("my-loader", "myframework 1.2", make_batches, SUPPORTED)

where SUPPORTED is the set of sluice op names it implements (sluice excludes
it, naming the op, from a scenario with another). peers/template_peer.py is
one to copy; `sluice bench --adapters peer:./my_loader.py` ranks it and
`sluice peer-check ./my_loader.py --scenario ID` says where it differs.

The protocol (version 3), which main() speaks through start() and serve():
sluice runs `python3 SCRIPT EXPORT_DIR --ring-fd=N --ring-slots=K
--ring-slot-bytes=S [--workers=W]`, where EXPORT_DIR holds the data set's
arrays (<field>.npy) and file descriptor N a shared-memory ring of K slots of
S bytes. The peer prints one JSON line to say hello:

    {"hello": "<name>", "framework": "<framework and version>", "protocol": 3}

Only then does sluice write the plan beside the arrays (plan.json, each
epoch's order, the random ops' decisions, all keyed by a seed fresh for the
run; never the expected output) and write the line "plan" on the peer's
stdin: nothing a loader does before its hello can depend on which elements
or draws a batch holds, and everything it does with the plan is in the CPU
time sluice counts. Then, for each request line "<batch> <slot>" (the first
follows "plan" at once), the peer makes the batch, writes each output
field's bytes at the field's offset in that slot (fields in the plan's
output order, each at a multiple of 64 bytes with room for batch_size rows)
and answers

    {"batch": <batch>, "latency_ns": <n>, "shapes": [[rows, ...], ...]}

latency_ns is an integer: the time from asking the loader for the batch
until its arrays were in host memory, measured by the peer; batch 0's runs
from the line "plan", so it holds the loader's setup over the plan (reading
it, building its data set or pipeline). sluice bounds each latency by the
time it saw between its request (for batch 0, "plan") and the answer, reads
the batch from the ring itself to check it, and holds the CPU time of the
peer's processes from its hello on to its clocks. "end" (or the end of
stdin) asks the peer to exit. Anything for people goes to stderr.

This module needs only the standard library; numpy where a loader uses it.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import json
import mmap
import os
import shutil
import struct
import sys
import tempfile
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from typing import Any, Literal, TypedDict

try:
    import numpy as np
except ImportError:  # a loader written with the standard library alone
    np = None

PROTOCOL = 3
PLAN_VERSION = 2

# sluice's dtype names: (numpy dtype string, bytes per value).
DTYPES: dict[str, tuple[str, int]] = {"u8": ("|u1", 1), "i32": ("<i4", 4), "i64": ("<i8", 8), "f32": ("<f4", 4)}

# The protocol's types. A numpy array: numpy is optional here (a loader may
# be written with the standard library alone), so it is not named.
Array = Any
# An op of the plan, as plan.json writes it ("kind",
# "index", "field", "params", "decisions", ...): JSON, so a plain mapping.
Op = dict[str, Any]
# One output field of a batch: a numpy array (or anything with the buffer
# protocol, .shape and .dtype), or a (shape, bytes-like) pair for a loader
# written without numpy.
Field = Any
# A batch: each of the plan's output fields by name.
Batch = Mapping[str, Field]
# How a loader computes its batches (docs/peers.md, "Like with like").
Kind = Literal["per-batch", "prefetching", "all-at-once"]
# A loader: the plan and the parsed command line in, the plan's batches out,
# in order.
MakeBatches = Callable[["Plan", argparse.Namespace], Iterable[Batch]]


class Hello(TypedDict):
    """The peer's first line on stdout."""

    hello: str
    framework: str
    protocol: int


class Description(TypedDict):
    """What `--describe` prints: the ops a loader implements and its kind."""

    name: str
    supports: list[str]
    kind: Kind


def read_npy(path: str) -> tuple[str, tuple[int, ...], memoryview]:
    """A .npy file's dtype string, shape and data bytes, with the standard
    library alone (version 1 to 3 headers, C order)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:6] != b"\x93NUMPY":
        raise SystemExit("%s is not a .npy file" % path)
    major = data[6]
    if major == 1:
        (length,), start = struct.unpack("<H", data[8:10]), 10
    else:
        (length,), start = struct.unpack("<I", data[8:12]), 12
    header = ast.literal_eval(data[start : start + length].decode("latin1"))
    if header.get("fortran_order"):
        raise SystemExit("%s is in Fortran order" % path)
    return header["descr"], tuple(header["shape"]), memoryview(data)[start + length :]


def _unique_keys(pairs: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """An object whose keys are each given once: Python's json keeps the
    last of two equal keys where sluice's reader refuses the file, so one
    file would read two ways."""
    obj = {}
    for key, value in pairs:
        if key in obj:
            raise ValueError("key %r appears twice in one object" % key)
        obj[key] = value
    return obj


def load_json(path: str) -> Any:  # noqa: ANN401 (whatever the JSON holds)
    """A JSON file as sluice's readers read it: repeated keys refused."""
    with open(path) as f:
        return json.load(f, object_pairs_hook=_unique_keys)


def check_manifest(directory: str) -> None:
    """Refuses an export folder that is not whole: its MANIFEST.json
    (include/sluice/core/folder.h) must be complete and of kind "export", and
    every file it lists must be there with the size it lists."""
    path = os.path.join(directory, "MANIFEST.json")
    try:
        manifest = load_json(path)
    except (OSError, ValueError) as e:
        raise SystemExit("%s: not a whole export (%s); export it again" % (directory, e)) from None
    files = manifest.get("files")
    if (
        manifest.get("format") != "sluice-folder"
        or manifest.get("kind") != "export"
        or not isinstance(files, list)
        or manifest.get("count") != len(files)
    ):
        raise SystemExit("%s: MANIFEST.json is not a whole export manifest" % directory)
    # Peers may keep what they derive beside the export (a converted data
    # set), so files the manifest does not list are not refused here.
    listed = {entry["name"]: entry["bytes"] for entry in files}
    for name, size in listed.items():
        try:
            actual = os.stat(os.path.join(directory, name)).st_size
        except OSError:
            raise SystemExit("%s: its manifest lists %s, which is missing" % (directory, name)) from None
        if actual != size:
            raise SystemExit("%s: %s has %d bytes, its manifest says %d" % (directory, name, actual, size))


class Plan:
    """An exported plan: its JSON, with lazy access to the arrays beside it."""

    def __init__(self, directory: str) -> None:
        self.dir = directory
        # When the line "plan" came (time.perf_counter_ns()): batch 0's
        # clock starts there (serve). None for a plan read outside a session.
        self.revealed_ns: int | None = None
        if not os.path.exists(os.path.join(directory, "MANIFEST.json")) and not os.path.exists(
            os.path.join(directory, "plan.json")
        ):
            raise SystemExit(
                "%s holds no plan yet: sluice writes it after the loader's hello (protocol %d); read it with "
                "sluice_peer.start() or in make_batches, never before the hello" % (directory, PROTOCOL)
            )
        check_manifest(directory)
        try:
            self.raw: dict[str, Any] = load_json(os.path.join(directory, "plan.json"))
        except ValueError as e:
            raise SystemExit("%s/plan.json: %s" % (directory, e)) from None
        if self.raw.get("format") != "sluice-peer-plan" or self.raw.get("version") != PLAN_VERSION:
            raise SystemExit("not a sluice peer plan of version %d: %s" % (PLAN_VERSION, directory))
        self.batch_size: int = self.raw["batch_size"]
        # Each batch's {"epoch", "offset", "rows"}, in the order sluice asks.
        self.batches: list[dict[str, int]] = self.raw["batches"]
        self.ops: list[Op] = self.raw["ops"]
        # Each output field's {"name", "dtype", "shape"}, in the ring's order.
        self.output: list[dict[str, Any]] = self.raw["output"]
        self.source_fields: list[dict[str, Any]] = self.raw["source"]["fields"]
        self._orders: dict[int, Any] = {}
        self._decisions: dict[tuple[int, Any], Any] = {}

    def path(self, name: str) -> str:
        return os.path.join(self.dir, name)

    def source(self, name: str) -> Array:
        """A source field, memory-mapped: read as a loader reads a data set file."""
        return np.load(self.path(name + ".npy"), mmap_mode="r")

    def load_source(self, name: str) -> Array:
        """A source field, in memory (what sluice's memory sources hold)."""
        return np.load(self.path(name + ".npy"))

    def raw_source(self, name: str) -> tuple[str, tuple[int, ...], memoryview]:
        """A source field without numpy: (dtype string, shape, bytes)."""
        return read_npy(self.path(name + ".npy"))

    def order(self, epoch: int) -> Array:
        """Epoch's element ids in batch order (a numpy array, or a list of
        ints without numpy)."""
        if epoch not in self._orders:
            path = self.path(self.raw["order_file"].replace("{epoch}", str(epoch)))
            if np is not None:
                self._orders[epoch] = np.load(path)
            else:
                _, shape, data = read_npy(path)
                self._orders[epoch] = list(struct.unpack("<%dq" % shape[0], data))
        return self._orders[epoch]

    def batch_ids(self, i: int) -> Array:
        b = self.batches[i]
        return self.order(b["epoch"])[b["offset"] : b["offset"] + b["rows"]]

    def decisions(self, op: Op, epoch: int) -> Array:
        """op's per-element decisions in epoch, i32 [dataset size, columns], by element id."""
        key = (op["index"], epoch)
        if key not in self._decisions:
            d = op.get("decisions")
            if not d or not d.get("exported"):
                raise SystemExit("op %d (%s) has no exported decisions" % (op["index"], op["kind"]))
            self._decisions[key] = np.load(self.path(d["file"].replace("{epoch}", str(epoch))))
        return self._decisions[key]

    def batch_decisions(self, op: Op) -> Array:
        """A batch op's per-batch decisions, f32 [nbatches, columns], row k for batches[k]."""
        return self._batch_file(op, "file")

    def batch_partners(self, op: Op) -> Array:
        """A mixing op's partners, i32 [nbatches, batch_size], -1 past a short batch."""
        return self._batch_file(op, "partners_file")

    def _batch_file(self, op: Op, key: str) -> Array:
        d = op.get("decisions") or {}
        if not d.get("exported") or key not in d:
            raise SystemExit("op %d (%s) has no exported %s" % (op["index"], op["kind"], key))
        cache = (op["index"], key)
        if cache not in self._decisions:
            self._decisions[cache] = np.load(self.path(d[key]))
        return self._decisions[cache]

    def kinds(self) -> list[str]:
        return [op["kind"] for op in self.ops]

    def require(self, supported: Collection[str]) -> None:
        """Refuses a plan with an op this peer does not implement (sluice's
        adapter excludes such scenarios before it starts a peer)."""
        missing = [k for k in self.kinds() if k not in supported]
        if missing:
            raise SystemExit("this peer lacks transform(s): %s" % ", ".join(missing))

    def field_layout(self) -> list[tuple[str, str, int, int]]:
        """Each output field's (name, dtype name, offset in a ring slot, room in bytes)."""
        layout, at = [], 0
        for spec in self.output:
            size = DTYPES[spec["dtype"]][1]
            for d in spec["shape"]:
                size *= d
            room = size * self.batch_size
            layout.append((spec["name"], spec["dtype"], at, room))
            at = (at + room + 63) // 64 * 64
        return layout


class Ring:
    """The shared-memory ring sluice passed: where each batch is handed over."""

    def __init__(self, plan: Plan, fd: int, slots: int, slot_bytes: int) -> None:
        self.layout = plan.field_layout()
        need = self.layout[-1][2] + self.layout[-1][3] if self.layout else 0
        if need > slot_bytes:
            raise SystemExit("the ring's slots (%d bytes) are smaller than the plan's batch (%d)" % (slot_bytes, need))
        self.slot_bytes = slot_bytes
        self.map = mmap.mmap(fd, slots * slot_bytes)
        self.view = memoryview(self.map)
        # Where the ring is in this process, to tell an array a loader made
        # in place (Ring.arrays) from one that must be copied in.
        self.address = np.frombuffer(self.map, dtype=np.uint8).ctypes.data if np is not None else None

    def arrays(self, slot: int, rows: int) -> dict[str, Any]:
        """The slot as numpy arrays of rows rows, for a loader that writes
        its output in place (no copy at hand-over)."""
        out = {}
        for name, dtype, offset, room in self.layout:
            out[name] = np.frombuffer(
                self.map, dtype=DTYPES[dtype][0], count=room // DTYPES[dtype][1], offset=slot * self.slot_bytes + offset
            )
        return out

    def write(self, slot: int, plan: Plan, arrays: Batch) -> list[list[int]]:
        """Writes a batch's arrays into slot; returns their shapes."""
        shapes = []
        base = slot * self.slot_bytes
        for name, dtype, offset, room in self.layout:
            a = arrays[name]
            if isinstance(a, tuple):
                shape, data = a
                data = memoryview(data).cast("B")
            else:
                if np is not None:
                    want = np.dtype(DTYPES[dtype][0])
                    if a.dtype != want:
                        raise SystemExit("field %s is %s, the plan says %s" % (name, a.dtype, dtype))
                    a = np.ascontiguousarray(a)
                shape, data = a.shape, memoryview(a).cast("B")
            n = data.nbytes
            if n > room:
                raise SystemExit("field %s of shape %s is larger than the plan's batch" % (name, list(shape)))
            start = base + offset
            in_place = (
                self.address is not None
                and hasattr(a, "__array_interface__")
                and a.__array_interface__["data"][0] == self.address + start
            )
            if not in_place:
                self.view[start : start + n] = data
            shapes.append([int(d) for d in shape])
        return shapes


@contextlib.contextmanager
def written_aside(path: str) -> Iterator[str]:
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


def epoch_batches(plan: Plan) -> dict[int, list[dict[str, int]]]:
    """The plan's batches grouped by epoch, {epoch: [batch, ...]}. Each epoch's
    must be its order cut every batch_size elements (from some batch on), which
    is what the frameworks' batch() does; anything else is refused."""
    epochs: dict[int, list[dict[str, int]]] = {}
    for b in plan.batches:
        epochs.setdefault(b["epoch"], []).append(b)
    for epoch, batches in epochs.items():
        for k, b in enumerate(batches):
            if b["offset"] != batches[0]["offset"] + k * plan.batch_size:
                raise SystemExit("epoch %d's batches are not its order cut every %d" % (epoch, plan.batch_size))
    return epochs


# What each built-in peer script implements (read by the build too).
OPS_TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ops.txt")


def read_ops_table(path: str = OPS_TABLE) -> dict[str, frozenset[str]]:
    """peers/ops.txt: each built-in peer script's ops, {"numpy_peer.py":
    {"normalize", ...}}, its groups ("@name = ...") expanded. The one reader
    of it: the build's adapters/peer_ops_header.py calls it too."""
    entries: list[tuple[int, str, list[str]]] = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            text = line.split("#", 1)[0]
            if not text.strip():
                continue
            if text[0].isspace():
                if not entries:
                    raise SystemExit("%s:%d: a continued line with no declaration before it" % (path, number))
                entries[-1][2].extend(text.split())
                continue
            head, equals, items = text.partition("=")
            name = head.strip()
            if not equals or not (name.startswith("@") or name.endswith(".py")):
                raise SystemExit("%s:%d: expected '@group = op ...' or 'script.py = op ...'" % (path, number))
            entries.append((number, name, items.split()))
    groups: dict[str, frozenset[str]] = {}
    scripts: dict[str, frozenset[str]] = {}
    for number, name, listed in entries:
        ops: set[str] = set()
        for item in listed:
            if item.startswith("@") and item not in groups:
                raise SystemExit("%s:%d: %s is no group declared above" % (path, number, item))
            ops |= groups[item] if item.startswith("@") else {item}
        declared = groups if name.startswith("@") else scripts
        if name in declared:
            raise SystemExit("%s:%d: %s is declared twice" % (path, number, name))
        declared[name] = frozenset(ops)
    return scripts


def implements(script: str) -> frozenset[str]:
    """The ops that the built-in peer script at path `script` (its __file__)
    implements, as peers/ops.txt declares them."""
    name = os.path.basename(script)
    table = read_ops_table()
    if name not in table:
        raise SystemExit("%s is not declared in %s" % (name, OPS_TABLE))
    return table[name]


def f32(value: float) -> Array:
    return np.float32(value)


def log(*args: object) -> None:
    print(*args, file=sys.stderr, flush=True)


def parser(prog: str) -> argparse.ArgumentParser:
    """The arguments sluice passes every peer; a loader may add its own."""
    p = argparse.ArgumentParser(prog=prog)
    p.add_argument("export_dir", nargs="?")
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--ring-fd", type=int)
    p.add_argument("--ring-slots", type=int, default=2)
    p.add_argument("--ring-slot-bytes", type=int)
    p.add_argument(
        "--describe",
        action="store_true",
        help="print what the loader implements, as JSON, and exit (sluice asks a loader of the user's)",
    )
    return p


def open_ring(plan: Plan, options: argparse.Namespace) -> Ring:
    if options.ring_fd is None or options.ring_slot_bytes is None:
        raise SystemExit(
            "no --ring-fd/--ring-slot-bytes: a peer is started by sluice (sluice bench or sluice "
            "peer-check), which passes its shared-memory ring"
        )
    return Ring(plan, options.ring_fd, options.ring_slots, options.ring_slot_bytes)


def die_with_sluice() -> None:
    """Asks Linux to kill this process when sluice, its parent, dies: a peer
    must not outlive the run that measures it (best effort elsewhere)."""
    try:
        import ctypes
        import signal

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() == 1:  # sluice died before the request took effect
            os._exit(1)
    except (OSError, AttributeError):
        pass


def hello(name: str, framework: str) -> None:
    """Says hello: the protocol's first line on stdout."""
    line: Hello = {"hello": name, "framework": framework, "protocol": PROTOCOL}
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


def receive_plan(options: argparse.Namespace) -> Plan:
    """Waits for sluice's line "plan", which comes after the hello once the
    plan is in the export, and reads the plan; its arrival starts batch 0's
    clock. "end" or the end of stdin (sluice is gone) ends the process."""
    line = sys.stdin.buffer.readline()
    arrived = time.perf_counter_ns()
    word = line.strip()
    if not line:
        os._exit(1)
    if word == b"end":
        sys.exit(0)
    if word != b"plan":
        raise SystemExit(
            "sluice sent %r where the line 'plan' was due: this loader speaks protocol %d" % (line[:40], PROTOCOL)
        )
    plan = Plan(options.export_dir)
    plan.revealed_ns = arrived
    return plan


def start(name: str, framework: str, options: argparse.Namespace) -> Plan:
    """A peer's start: dies with sluice, says hello, then waits for the plan
    and returns it. Whatever a loader computes from the plan comes after
    this call, where sluice counts it."""
    die_with_sluice()
    hello(name, framework)
    return receive_plan(options)


def requests() -> Iterator[tuple[int, int]]:
    """sluice's requests on stdin, (batch, slot), until "end"; at the end of
    stdin without "end" sluice is gone: nothing will read what this process
    does, and its threads must not hold it up, so it exits at once."""
    stdin = sys.stdin.buffer
    while True:
        request = stdin.readline().split()
        if not request:
            os._exit(1)
        if request[0] == b"end":
            return
        yield int(request[0]), int(request[1])


def contiguous(batch: Batch) -> Batch:
    """The batch with each numpy field in one contiguous block, as a
    training step (or a copy to a device) needs it: a loader whose last op
    leaves a strided view (a transpose, a slice) pays for the copy in its
    own clock, not in the ring's write, outside it (CV-4's idiomatic numpy
    batch took 10 ms a batch so, unclocked). A field already contiguous, or
    written in place in the ring, is passed as it is."""
    if np is None:
        return batch
    return {name: np.ascontiguousarray(a) if isinstance(a, np.ndarray) else a for name, a in batch.items()}


def serve(plan: Plan, batches: Iterable[Batch], options: argparse.Namespace, setup_in_first_batch: bool = True) -> None:
    """Runs the protocol after start(): for each request times
    next(batches), writes the batch into the ring slot and answers with its
    latency and shapes. Batch 0's latency runs from the plan's arrival, so
    it holds the loader's setup (whatever it did with the plan before its
    first batch): sluice holds the CPU time from the hello on to the
    clocks. setup_in_first_batch=False starts batch 0's clock at its
    request instead, for a batch-all-at-once loader compared by throughput
    after a warmup of its own (whose CPU sluice does not hold to its
    clocks)."""
    ring = open_ring(plan, options)
    out = sys.stdout
    it = iter(batches)
    first = True
    for i, slot in requests():
        t0 = time.perf_counter_ns()
        if first and setup_in_first_batch and plan.revealed_ns is not None:
            t0 = plan.revealed_ns
        first = False
        arrays = contiguous(next(it))
        t1 = time.perf_counter_ns()
        shapes = ring.write(slot, plan, arrays)
        out.write('{"batch": %d, "latency_ns": %d, "shapes": %s}\n' % (i, t1 - t0, json.dumps(shapes)))
        out.flush()


def describe(name: str, supported: Collection[str], kind: Kind) -> None:
    description: Description = {"name": name, "supports": sorted(supported), "kind": kind}
    print(json.dumps(description), flush=True)


def main(
    name: str,
    framework: str,
    make_batches: MakeBatches,
    supported: Collection[str],
    argv: Sequence[str] | None = None,
    kind: Kind = "per-batch",
    arguments: Callable[[argparse.ArgumentParser], object] | None = None,
) -> None:
    """The usual peer entry point: says hello, reads the plan sluice writes
    after it, checks the transforms, and serves make_batches(plan, options)
    (whose setup, before its first batch, is in batch 0's time). kind says
    how it computes: "per-batch" (when asked), "prefetching" (ahead, on its
    own threads or processes) or "all-at-once" (every batch in one call).
    arguments, when given, adds the loader's own arguments to the parser
    (they reach make_batches in options)."""
    p = parser(name)
    if arguments is not None:
        arguments(p)
    options = p.parse_args(argv)
    if options.describe:
        describe(name, supported, kind)
        return
    plan = start(name, framework, options)
    plan.require(supported)
    serve(plan, make_batches(plan, options), options)

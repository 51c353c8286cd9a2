"""A loader written with the standard library alone, for the protocol's own
tests (they must not need numpy): it gathers each batch's rows from the
exported .npy files and applies normalize, the one op it implements, in
float32 as sluice does: each value's difference and product are computed in
double, which holds them exactly or rounds them once more harmlessly (53
bits are at least 2 x 24 + 2), and rounded to float32 by array('f').
The testing peers import it to do honest work and then misbehave."""

import array
import hashlib
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import sluice_peer

SUPPORTED = {"normalize"}
FRAMEWORK = "python %d.%d (standard library)" % sys.version_info[:2]
ITEM = {"|u1": 1, "<i4": 4, "<i8": 8, "<f4": 4}


def sources(plan):
    return {f["name"]: plan.raw_source(f["name"]) for f in plan.source_fields}


def normalize(descr, data, p):
    """(x - mean[c]) * inv_std[c] in float32, c the value's channel."""
    values = data if descr == "|u1" else array.array("f", bytes(data))
    channels = p["channels"]
    mean = array.array("f", p["mean"][:channels])
    inv = array.array("f", p["inv_std"][:channels])
    if channels == 1:
        m, s = mean[0], inv[0]
        diff = array.array("f", [v - m for v in values])
        return array.array("f", [v * s for v in diff])
    diff = array.array("f", [v - mean[j % channels] for j, v in enumerate(values)])
    return array.array("f", [v * inv[j % channels] for j, v in enumerate(diff)])


def batch(plan, srcs, i):
    """Batch i of the plan: {field: (shape, bytes-like)}."""
    ids = plan.batch_ids(i)
    fields = {}
    for name, (descr, shape, data) in srcs.items():
        row = ITEM[descr]
        for d in shape[1:]:
            row *= d
        rows = b"".join(bytes(data[k * row : (k + 1) * row]) for k in ids)
        fields[name] = [descr, (len(ids),) + tuple(shape[1:]), rows]
    for op in plan.ops:
        f = fields[op["field"]]
        if op["kind"] == "normalize":
            f[2] = normalize(f[0], f[2], op["params"])
            f[0] = "<f4"
    return {name: (shape, data) for name, (descr, shape, data) in fields.items()}


def spin(ns):
    """Uses ns of CPU time: work a hostile test peer adds to each batch, so
    that what it hides is well past sluice's margins on a small plan."""
    until = time.process_time_ns() + ns
    while time.process_time_ns() < until:
        pass


def hash_for(ns):
    """Uses ns of this thread's CPU time hashing a megabyte at a time, which
    releases the interpreter's lock: threads that call it at once run on
    as many CPUs as they get."""
    block = bytes(1 << 20)
    until = time.thread_time_ns() + ns
    while time.thread_time_ns() < until:
        hashlib.sha256(block).digest()


def make_batches(plan, options=None):
    srcs = sources(plan)
    for i in range(len(plan.batches)):
        yield batch(plan, srcs, i)


if __name__ == "__main__":
    sluice_peer.main("plain", FRAMEWORK, make_batches, SUPPORTED)

"""plain's batches with the first byte of every field's data flipped: it runs
to the end and hands over wrong data, so sluice must record a mismatch and
name where the first batch differs."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plain

import sluice_peer


def make_batches(plan, options):
    for fields in plain.make_batches(plan):
        out = {}
        for name, (shape, data) in fields.items():
            data = bytearray(bytes(data))
            data[0] ^= 0xFF
            out[name] = (shape, data)
        yield out


if __name__ == "__main__":
    sluice_peer.main("wrong", plain.FRAMEWORK, make_batches, plain.SUPPORTED)

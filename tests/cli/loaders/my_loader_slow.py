"""Version 2 of the peer gate's test loader (my_loader.py): the same
batches, and real extra work on each, as a careless change might add: the
batch's bytes hashed 300 times over (SHA-256 of the standard library),
several times the batch's own cost, so that few processes a side see it."""

import hashlib
import os
import sys

# ci/gate-peer.sh puts a loader's own folder on PYTHONPATH.
sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
import my_loader
from my_loader import sluice_peer


def make_batches(plan, options=None):
    for batch in my_loader.make_batches(plan, options):
        digest = b""
        for _ in range(300):
            for _shape, data in batch.values():
                digest = hashlib.sha256(digest + bytes(data)).digest()
        yield batch


if __name__ == "__main__":
    sluice_peer.main("my-loader", my_loader.FRAMEWORK, make_batches, my_loader.SUPPORTED)

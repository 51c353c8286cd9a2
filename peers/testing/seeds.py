"""An honest loader (plain's work) that appends the seed of each plan it is
given, one a line, to the file SLUICE_TEST_SEEDS names: a built-in peer runs
the bench's own plan, a loader of the user's a fresh seed's in every session
(docs/peers.md, "What is verified")."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plain

import sluice_peer


def make_batches(plan, options):
    with open(os.environ["SLUICE_TEST_SEEDS"], "a") as f:
        f.write("%s\n" % plan.raw["seed"])
    return plain.make_batches(plan, options)


if __name__ == "__main__":
    sluice_peer.main("seeds", plain.FRAMEWORK, make_batches, plain.SUPPORTED)

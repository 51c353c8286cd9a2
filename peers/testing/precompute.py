"""A peer that computes every batch before its hello and then hands them over:
its bytes are right, but its latencies are only the hand-over, so sluice
must flag the run `hand-over` and never rank it."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plain

import sluice_peer


def make_batches(plan, options):
    done = list(plain.make_batches(plan))
    return iter(done)


if __name__ == "__main__":
    sluice_peer.main("precompute", plain.FRAMEWORK, make_batches, plain.SUPPORTED)

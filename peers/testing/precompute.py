"""A peer that computes every batch as soon as it has the plan (before its
hello, until protocol 3 wrote the plan after it) and then hands them over:
its bytes are right, but its later latencies are only the hand-over, so
sluice must flag the run `hand-over` and never rank it."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plain

import sluice_peer


def make_batches(plan, options):
    done = []
    for batch in plain.make_batches(plan):
        plain.spin(60000000)  # 60 ms of CPU a batch: more work to hide
        done.append(batch)
    return iter(done)


if __name__ == "__main__":
    sluice_peer.main("precompute", plain.FRAMEWORK, make_batches, plain.SUPPORTED)

"""A loader of one's own for the peer gate's test (ci/gate-peer.sh), of the
standard library alone so that it runs on a fresh machine: peers/testing's
plain loader (each batch's rows gathered from the exported .npy files, and
normalize, the one op it implements, in float32 as sluice computes it), so
it runs TAB-1 (a per-feature z-score) and is excluded from scenarios with
other ops. This is version 1."""

import os
import sys

# sluice runs a loader with its peers folder first on PYTHONPATH; the plain
# loader is in its testing folder.
import sluice_peer

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(sluice_peer.__file__)), "testing"))
import plain

SUPPORTED = plain.SUPPORTED
FRAMEWORK = plain.FRAMEWORK


def make_batches(plan, options=None):
    return plain.make_batches(plan, options)


if __name__ == "__main__":
    sluice_peer.main("my-loader", FRAMEWORK, make_batches, SUPPORTED)

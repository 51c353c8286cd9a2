"""peer:numpy's batches with every label off by one: it runs to the end and
reports honest digests of wrong data, so sluice must record a mismatch."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import numpy_peer  # noqa: E402
import sluice_peer  # noqa: E402


def make_batches(plan, options):
    for fields in numpy_peer.make_batches(plan, options):
        last = plan.output[-1]["name"]
        fields[last] = fields[last] + np.ones_like(fields[last])
        yield fields


if __name__ == "__main__":
    sluice_peer.main("wrong", "numpy " + np.__version__, make_batches, numpy_peer.SUPPORTED)

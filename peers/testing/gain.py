"""peer:numpy's batches with every value of each log_mel output shifted by
--shift (output units). A gain error g in both of log_mel's products moves
every output by log10((1 + g)^3) / 4 (docs/determinism.md): 3.26e-4 for
g = 0.1 %, beyond MM-2's stated tolerance of 2.5e-4, which sluice must then
record as a mismatch; a shift well inside it must still pass, so that the
check is seen to be a bound on values, not on bits."""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import numpy_peer
import sluice_peer


def make_batches(plan, options):
    shifted = {op["field"] for op in plan.ops if op["kind"] == "log_mel"}
    shift = np.float32(options.shift)
    for fields in numpy_peer.make_batches(plan, options):
        for name in shifted:
            fields[name] = fields[name] + shift
        yield fields


def main():
    parser = sluice_peer.parser("gain")
    parser.add_argument("--shift", type=float, required=True)
    options = parser.parse_args()
    plan = sluice_peer.start("gain", "numpy " + np.__version__, options)
    plan.require(numpy_peer.SUPPORTED)
    sluice_peer.serve(plan, make_batches(plan, options), options)


if __name__ == "__main__":
    main()

"""A peer that draws its own Gaussian noise: normalize, gaussian_noise and
random_brightness (AUG-1's chain) in numpy, with numpy's generator for the
noise and sluice's exported brightness decisions. Its batches cannot equal
sluice's bit for bit, so sluice checks them statistically (docs/peers.md,
Equivalence). --sigma-factor=F scales the noise: 1 is honest work, 0 leaves
it out and 2 doubles it, both of which sluice must record as a mismatch.
--fresh-draws seeds the generator from the process id, so that a second
session (a prefetching peer's, with a digest between batches) draws other
noise than the first: sluice must refuse that replay as a mismatch."""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import sluice_peer

SUPPORTED = {"normalize", "gaussian_noise", "random_brightness"}


def make_batches(plan, factor, seed):
    sources = {f["name"]: plan.load_source(f["name"]) for f in plan.source_fields}
    rng = np.random.default_rng(seed)
    for i, b in enumerate(plan.batches):
        ids = plan.batch_ids(i)
        fields = {name: data[ids] for name, data in sources.items()}
        for op in plan.ops:
            kind, p, name = op["kind"], op["params"], op["field"]
            x = fields[name]
            if kind == "normalize":
                mean = np.asarray(p["mean"], dtype=np.float32)
                inv_std = np.asarray(p["inv_std"], dtype=np.float32)
                x = (x.astype(np.float32) - mean) * inv_std
            elif kind == "gaussian_noise":
                sigma = np.float32(p["sigma"] * factor)
                x = x + sigma * rng.standard_normal(x.shape, dtype=np.float32)
            elif kind == "random_brightness":
                # d = float32(delta) * float32((u24 - 2^23) / 2^23), per element.
                u24 = plan.decisions(op, b["epoch"])[ids, 0].astype(np.int64)
                v = (u24 - (1 << 23)).astype(np.float32) * np.float32(2.0**-23)
                d = np.float32(p["delta"]) * v
                x = x + d.reshape((-1,) + (1,) * (x.ndim - 1))
            fields[name] = x.astype(np.float32)
        yield fields


def main():
    parser = sluice_peer.parser("noise")
    parser.add_argument("--sigma-factor", type=float, default=1.0)
    parser.add_argument("--fresh-draws", action="store_true")
    options = parser.parse_args()
    seed = os.getpid() if options.fresh_draws else 2024
    plan = sluice_peer.start("noise", "numpy " + np.__version__, options)
    plan.require(SUPPORTED)
    sluice_peer.serve(plan, make_batches(plan, options.sigma_factor, seed), options)


if __name__ == "__main__":
    main()

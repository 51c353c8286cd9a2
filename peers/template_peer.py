"""A template for a loader of your own that sluice ranks beside its peers
(docs/peers.md, "Bring your own loader"). Copy it, put your loader in
make_batches, then:

    sluice peer-check ./my_loader.py --scenario CV-1        # bitwise? where not?
    sluice bench --scenarios CV-1 --adapters fused,peer:numpy,peer:./my_loader.py

sluice puts peers/ on PYTHONPATH, so `import sluice_peer` works wherever the
file is; SLUICE_PYTHON names the Python that runs it (a virtual environment
with your framework), else /usr/bin/python3.

The plan (sluice_peer.Plan) gives what the scenario's pipeline needs and
nothing of its output: plan.load_source(name) (a field of the data set, as a
numpy array), plan.batch_ids(i) (batch i's element ids, in sluice's order),
plan.ops (each op's kind, field and params: normalize's mean and inv_std,
...), plan.decisions(op, epoch) (a random op's per-element decisions, row e
for element e), plan.batches[i]["epoch"]. docs/peers.md says what each op
computes, bit for bit.

sluice_peer.main() says hello before sluice writes the plan, then calls
make_batches: whatever it does before its first batch (loading the data,
building a pipeline) is in batch 0's time, a warmup batch; a setup that
grows with the number of batches (computing them ahead) is a hand-over.
"""

import numpy as np

import sluice_peer

# The sluice ops this loader implements: a scenario with another is
# excluded, with the op named, rather than run.
SUPPORTED = {"normalize"}


def make_batches(plan, options):
    """Yields batch i of the plan, for i = 0, 1, ...: a dict {output field:
    array}. sluice times each next() of this generator."""
    sources = {f["name"]: plan.load_source(f["name"]) for f in plan.source_fields}
    for i in range(len(plan.batches)):
        ids = plan.batch_ids(i)
        batch = {name: data[ids] for name, data in sources.items()}
        for op in plan.ops:
            p, x = op["params"], batch[op["field"]]
            if op["kind"] == "normalize":
                mean = np.asarray(p["mean"][: p["channels"]], dtype=np.float32)
                inv_std = np.asarray(p["inv_std"][: p["channels"]], dtype=np.float32)
                batch[op["field"]] = (x.astype(np.float32) - mean) * inv_std
        yield batch


if __name__ == "__main__":
    sluice_peer.main("my-loader", "numpy " + np.__version__, make_batches, SUPPORTED)

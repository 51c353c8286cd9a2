"""A storage peer's stand-in for the tests: each batch's fields are the
stored elements' rows (numpy_idiomatic_peer.stored_elements, as every
storage peer writes them), handed to numpy_peer.BatchOps as a framework
hands its batches over. Without --writable the arrays are marked read-only,
as a framework's own buffers may be, so an op that wrote into them would
raise; the batch is also compared with a copy taken before the ops, so a
write that numpy allowed is refused too. With --writable they are the
caller's to write (SPDL's and Ray Data's stages)."""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import numpy_idiomatic_peer
import sluice_peer
from numpy_peer import BatchOps


def make_batches(plan, options):
    elements, ops = numpy_idiomatic_peer.stored_elements(plan)
    run_ops = BatchOps(plan, ops, writable=options.writable)
    for i in range(len(plan.batches)):
        ids = plan.batch_ids(i)
        fields = {name: data[ids] for name, data in elements.items()}
        before = {name: x.copy() for name, x in fields.items()}
        if not options.writable:
            for x in fields.values():
                x.flags.writeable = False
        out = run_ops(fields, plan.batches[i]["epoch"], ids, batch=i)
        if not options.writable:
            for name, x in fields.items():
                if not np.array_equal(x, before[name]):
                    raise SystemExit("BatchOps wrote into the framework's field '%s' of batch %d" % (name, i))
        yield out


def main():
    parser = sluice_peer.parser("storage")
    parser.add_argument("--writable", action="store_true")
    options = parser.parse_args()
    plan = sluice_peer.start("storage", "numpy " + np.__version__, options)
    # The ops every storage peer implements (each one's line in
    # peers/ops.txt; WebDataset's stands for them).
    plan.require(sluice_peer.implements("webdataset_peer.py"))
    sluice_peer.serve(plan, make_batches(plan, options), options)


if __name__ == "__main__":
    main()

"""An honest loader (plain's work) that first looks into its export folder
before its hello and writes what it found there, one name a line, to the
file SLUICE_TEST_PEEK names: the data set's arrays and nothing of the plan
(protocol 3), so that nothing can be computed from the plan before sluice
counts the loader's CPU."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plain

import sluice_peer

if __name__ == "__main__":
    options = sluice_peer.parser("peek").parse_args()
    if options.export_dir and os.environ.get("SLUICE_TEST_PEEK"):
        with open(os.environ["SLUICE_TEST_PEEK"], "w") as f:
            f.write("".join(name + "\n" for name in sorted(os.listdir(options.export_dir))))
    sluice_peer.main("peek", plain.FRAMEWORK, plain.make_batches, plain.SUPPORTED)

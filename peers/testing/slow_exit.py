"""A peer that delivers every batch correctly and then takes a long time to
exit (a framework's shutdown): sluice kills it after its exit grace and
records it `ok`, with a note that says so."""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plain

import sluice_peer

if __name__ == "__main__":
    sluice_peer.main("slow-exit", plain.FRAMEWORK, plain.make_batches, plain.SUPPORTED)
    print("shutting down slowly on purpose", file=sys.stderr, flush=True)
    time.sleep(600)

"""An honest user loader with threads: each batch is computed on the main
thread (plain's work) and then split over k worker threads (--threads,
default 2) that each hash for 100 ms / k of CPU at once (hashing releases
the interpreter's lock, so they run in parallel where there are CPUs).
Its latency is the batch's true wall time. Every thread's CPU in a batch's
window is within that batch's latency, so it must stay `per-batch` and
ranked: the other side of rotate.py."""

import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plain

import sluice_peer


def make_batches(plan, options):
    srcs = plain.sources(plan)
    k = options.threads
    for i in range(len(plan.batches)):
        batch = plain.batch(plan, srcs, i)
        threads = [threading.Thread(target=plain.hash_for, args=(100000000 // k,)) for _ in range(k)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        yield batch


if __name__ == "__main__":
    sluice_peer.main(
        "parallel",
        plain.FRAMEWORK,
        make_batches,
        plain.SUPPORTED,
        arguments=lambda p: p.add_argument("--threads", type=int, default=2),
    )

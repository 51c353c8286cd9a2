"""An expert numpy loader for PC-1 depth 1, written as numpy's performance
guide describes (preallocated output, ufuncs in place, no temporaries):

    np.take(x, ids, axis=0, out=buf, mode="clip")
    buf -= mean
    buf *= inv

on PC-1's full size (50000 elements of 64x64 f32, batches of 64) and a
shuffled order, one batch a time on one thread. The source is an ordinary
numpy array (numpy advises huge pages for its large arrays), filled before
the clock starts; ids are computed before each batch's clock starts, which
favours numpy (sluice's batch time includes its shuffle).

Prints one line: the median batch time in microseconds over the measured
batches, with the warm-up left out. ci/cpu-vs-numpy.sh runs it interleaved
with sluice's own runs.

    python numpy_expert.py [ELEMENTS] [BATCHES]
"""

import sys
import time

import numpy as np


def main():
    elements = int(sys.argv[1]) if len(sys.argv) > 1 else 50000
    batches = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    warmup = 5
    batch_size = 64
    rng = np.random.default_rng(42)
    x = rng.random((elements, 64, 64), dtype=np.float32)
    order = rng.permutation(elements)
    mean = np.float32(0.09)
    inv = np.float32(1.0 / 1.8)
    buf = np.empty((batch_size, 64, 64), dtype=np.float32)
    times = []
    for b in range(warmup + batches):
        first = (b * batch_size) % (elements - batch_size)
        ids = order[first : first + batch_size]
        start = time.perf_counter_ns()
        np.take(x, ids, axis=0, out=buf, mode="clip")
        buf -= mean
        buf *= inv
        took = time.perf_counter_ns() - start
        if b >= warmup:
            times.append(took)
    times.sort()
    print("%.1f" % (times[len(times) // 2] / 1000.0))


if __name__ == "__main__":
    main()

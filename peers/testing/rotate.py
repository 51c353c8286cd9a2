"""A hostile user loader (the review's D21, attack 4, rotating threads): k
worker threads (--threads, default 2) take the batches in turn, thread
i mod k computing batch i alone, inside batch i's window, with 100 ms more
of CPU a batch (hashing). Its latencies are under-reported so that every
bound over the whole session holds: each is the CPU time the batch took its
thread times (ceil(n/k) + 0.5) / n, n the plan's batches (CPU time, not
wall time, so that what it hides does not shrink on a loaded machine): no
thread's CPU over the session (ceil(n/k) batches) is more than the
latencies' sum, and the tree's CPU is within the CPUs times the latencies
for k up to the CPUs. Batch by batch, though, the thread that computed
batch i ran all of it in batch i's window, more than its latency: sluice
must flag it `hand-over` and not rank it."""

import json
import os
import queue
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plain

import sluice_peer

p = sluice_peer.parser("rotate")
p.add_argument("--threads", type=int, default=2)
options = p.parse_args()
if options.describe:
    sluice_peer.describe("rotate", plain.SUPPORTED, "per-batch")
    sys.exit(0)
plan = sluice_peer.start("rotate", plain.FRAMEWORK, options)
ring = sluice_peer.open_ring(plan, options)
srcs = plain.sources(plan)
k = options.threads
n = len(plan.batches)
share = (-(-n // k) + 0.5) / n


def worker(jobs, answers):
    while True:
        i = jobs.get()
        cpu0 = time.thread_time_ns()
        batch = plain.batch(plan, srcs, i)
        plain.hash_for(100000000)
        answers.put((batch, time.thread_time_ns() - cpu0))


answers = queue.Queue()
workers = []
for _ in range(k):
    jobs = queue.Queue()
    threading.Thread(target=worker, args=(jobs, answers), daemon=True).start()
    workers.append(jobs)
for i, slot in sluice_peer.requests():
    workers[i % k].put(i)
    batch, cpu = answers.get()
    latency = int(cpu * share)
    shapes = ring.write(slot, plan, batch)
    sys.stdout.write('{"batch": %d, "latency_ns": %d, "shapes": %s}\n' % (i, latency, json.dumps(shapes)))
    sys.stdout.flush()

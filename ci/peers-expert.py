"""The expert forms the tuned peers are held to (docs/peers.md, "Each tuned
peer against its framework's expert form"): for one gate scenario, the few
lines an expert of the framework writes, timed per batch over an export's
batches outside sluice's protocol, and, with --peer, the tuned peer's own
make_batches timed the same way in the same process (its code without the
protocol). ci/peers-expert.sh runs this, then both through the protocol in
interleaved rounds, and prints the tables (--summary).

    python3 ci/peers-expert.py FORM EXPORT_DIR [--peer] [--passes N]
    sluice bench --adapters peer:numpy,peer:ci/peers-expert.py ...

Run by sluice (as `peer:ci/peers-expert.py`, a loader of one's own), it
serves the plan's expert form through the protocol, the form chosen by the
plan's ops and source (a loader's plan does not name its scenario: CV-1's
PyTorch form, PC-1's and NLP-1's numpy forms), or by EXPERT_FORM where a
scenario has forms in several frameworks (ci/peers-expert.sh sets it), so
that the peer and its expert form meet the same protocol, checks and
timing. tf.data's form prefetches, and says so (sluice then times it as it
times peer:tfdata).

FORM is one of:
  torch-cv1   CV-1 (normalize u8 images): torch.index_select, .float(),
              in-place sub_ and mul_ with mean and 1/std tiled over an
              element, one intra-op thread;
  numpy-pc1   PC-1 depth1 (normalize f32 tensors): np.take(x, ids, axis=0,
              out=buf, mode="clip"), buf -= mean, buf *= inv;
  numpy-nlp1  NLP-1 (pack_tokens): the token stream as rows of seq_len made
              once, np.take of the batch's rows into a buffer made once;
  jax-cv1     CV-1 in JAX: one jax.jit function of (images, labels, ids),
              jnp.take, .astype(float32), (x - mean) * inv_std per channel,
              called with the batch's ids as a numpy array (no eager
              dispatch a batch), the result read back with np.asarray;
  tfdata-cv1  CV-1 in tf.data as its performance guide has it: each epoch's
              order, .batch() first, then one .map of a function written on
              the batch (tf.gather, cast, (x - mean) * inv_std) with
              num_parallel_calls=AUTOTUNE, the epochs concatenated,
              .prefetch(AUTOTUNE), each batch read back with .numpy();
  grain-nlp1  NLP-1 in Grain: grain.MapDataset.range(batches).map(the numpy
              expert's batch), read by index (ds[k]) in the main thread.

Each batch's time is from its ids to its output in memory, as a peer's
latency is (for a prefetching form, the hand-over of the next batch);
the first WARMUP batches of each pass are left out, then the median over
every pass's batches is printed as one JSON line, with the batches' bytes
checked equal to the peer's (--peer) so both do the same work. An export
is made by `sluice export --profile full --scenario ID --variant V
--output DIR`.
"""

import argparse
import json
import os
import statistics
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "peers"))
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import sluice_peer  # noqa: E402

WARMUP = 5


def per_batch(plan, batch):
    """The plan's batches from a function of a batch's ids: each batch's ids
    are sliced from its epoch's order inside its time, as a peer's are."""

    def batches():
        for i in range(len(plan.batches)):
            yield batch(plan.batch_ids(i))

    return batches


def torch_cv1(plan):
    """CV-1 as a PyTorch expert writes it, on one thread."""
    import torch

    torch.set_num_threads(1)
    images = torch.from_numpy(plan.load_source("image"))
    labels = torch.from_numpy(plan.load_source("label"))
    p = plan.ops[0]["params"]
    element = images.shape[1] * images.shape[2] * images.shape[3]
    mean = torch.tensor(p["mean"][: p["channels"]], dtype=torch.float32).repeat(element // p["channels"])
    inv = torch.tensor(p["inv_std"][: p["channels"]], dtype=torch.float32).repeat(element // p["channels"])

    def batch(ids):
        ids = torch.from_numpy(np.ascontiguousarray(ids))
        x = torch.index_select(images, 0, ids).float()
        x.view(x.shape[0], -1).sub_(mean).mul_(inv)
        return {"image": x.numpy(), "label": torch.index_select(labels, 0, ids).numpy()}

    return per_batch(plan, batch), "torch " + torch.__version__


def numpy_pc1(plan):
    """PC-1 depth1 as a numpy expert writes it: three lines a batch."""
    x = plan.load_source("x")
    p = plan.ops[0]["params"]
    mean, inv = np.float32(p["mean"][0]), np.float32(p["inv_std"][0])
    buffers = {}

    def batch(ids):
        buf = buffers.get(len(ids))
        if buf is None:
            buf = buffers[len(ids)] = np.empty((len(ids),) + x.shape[1:], dtype=np.float32)
        np.take(x, ids, axis=0, out=buf, mode="clip")
        buf -= mean
        buf *= inv
        return {"x": buf}

    return per_batch(plan, batch), "numpy " + np.__version__


def nlp1_batch(plan):
    """NLP-1's batch as a numpy expert writes it (numpy_nlp1, grain_nlp1)."""
    p = plan.ops[0]["params"]
    stream = plan.load_source("tokens")
    rows = -(-stream.shape[0] // p["seq_len"])
    table = np.full(rows * p["seq_len"], p["pad_id"], dtype=stream.dtype)
    table[: stream.shape[0]] = stream
    table = table.reshape(rows, p["seq_len"])
    buffers = {}

    def batch(ids):
        buf = buffers.get(len(ids))
        if buf is None:
            buf = buffers[len(ids)] = np.empty((len(ids), p["seq_len"]), dtype=table.dtype)
        np.take(table, ids, axis=0, out=buf, mode="clip")
        return {"tokens": buf}

    return batch


def numpy_nlp1(plan):
    """NLP-1 as a numpy expert writes it: rows of seq_len made once, a take a batch."""
    return per_batch(plan, nlp1_batch(plan)), "numpy " + np.__version__


def grain_nlp1(plan):
    """NLP-1 in Grain: a MapDataset over the batch indices, the numpy
    expert's batch as its Map, read by index."""
    from importlib.metadata import version

    import grain

    make = nlp1_batch(plan)

    class Batch(grain.transforms.Map):
        def map(self, k):
            return make(plan.batch_ids(k))

    ds = grain.MapDataset.range(len(plan.batches)).map(Batch())

    def batches():
        for k in range(len(ds)):
            yield ds[k]

    return batches, "grain " + version("grain")


def jax_cv1(plan):
    """CV-1 as a JAX expert writes it: one jitted function, numpy ids in."""
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)  # the plan's ids are int64
    images = jnp.asarray(plan.load_source("image"))
    labels = jnp.asarray(plan.load_source("label"))
    p = plan.ops[0]["params"]
    mean = jnp.asarray(np.asarray(p["mean"][: p["channels"]], dtype=np.float32))
    inv = jnp.asarray(np.asarray(p["inv_std"][: p["channels"]], dtype=np.float32))

    @jax.jit
    def step(images, labels, ids):
        x = jnp.take(images, ids, axis=0).astype(jnp.float32)
        return (x - mean) * inv, jnp.take(labels, ids, axis=0)

    def batch(ids):
        x, y = step(images, labels, ids)
        return {"image": np.asarray(x), "label": np.asarray(y)}

    for i in {0, len(plan.batches) - 1}:  # each batch shape compiled before the first batch
        batch(plan.batch_ids(i))
    return per_batch(plan, batch), "jax " + jax.__version__


def tfdata_cv1(plan):
    """CV-1 in tf.data as its performance guide has it (module docstring)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    # peers/tfdata_peer.py's settings: plain Eigen kernels, no Grappler
    # rewriting of the arithmetic (sluice's two roundings).
    os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
    import tensorflow as tf

    tf.config.optimizer.set_experimental_options({"arithmetic_optimization": False})
    images = tf.constant(plan.load_source("image"))
    labels = tf.constant(plan.load_source("label"))
    p = plan.ops[0]["params"]
    mean = tf.constant(np.asarray(p["mean"][: p["channels"]], dtype=np.float32))
    inv = tf.constant(np.asarray(p["inv_std"][: p["channels"]], dtype=np.float32))

    def batch(ids):
        x = tf.cast(tf.gather(images, ids), tf.float32)
        return {"image": (x - mean) * inv, "label": tf.gather(labels, ids)}

    def batches():
        ds = None
        for epoch, epoch_batches in sorted(sluice_peer.epoch_batches(plan).items()):
            start = epoch_batches[0]["offset"]
            ids = plan.order(epoch)[start : start + sum(b["rows"] for b in epoch_batches)]
            d = tf.data.Dataset.from_tensor_slices(ids).batch(plan.batch_size)
            d = d.map(batch, num_parallel_calls=tf.data.AUTOTUNE)
            ds = d if ds is None else ds.concatenate(d)
        for b in ds.prefetch(tf.data.AUTOTUNE):
            yield {k: v.numpy() for k, v in b.items()}

    return batches, "tensorflow " + tf.__version__


FORMS = {
    "torch-cv1": (torch_cv1, "torch_peer"),
    "numpy-pc1": (numpy_pc1, "numpy_peer"),
    "numpy-nlp1": (numpy_nlp1, "numpy_peer"),
    "jax-cv1": (jax_cv1, "jax_peer"),
    "tfdata-cv1": (tfdata_cv1, "tfdata_peer"),
    "grain-nlp1": (grain_nlp1, "grain_peer"),
}
# Forms that compute ahead of the consumer (sluice times them as prefetching).
PREFETCHING = {"tfdata-cv1"}


def time_batches(plan, make, passes):
    """Each batch's time, next() of make()'s batches, over passes; and the
    first pass's batches, copied."""
    times, outputs = [], None
    for _ in range(passes):
        it = iter(make())
        got = []
        for i in range(len(plan.batches)):
            t0 = time.perf_counter_ns()
            out = next(it)
            t1 = time.perf_counter_ns()
            if i >= WARMUP:
                times.append(t1 - t0)
            if outputs is None:
                got.append({k: np.array(v, copy=True) for k, v in out.items()})
        outputs = outputs or got
    return times, outputs


def peer_batches(plan, module, export_dir):
    """The tuned peer's own batches (its make_batches, without the protocol)."""
    if module == "jax_peer":
        sys.argv = ["jax_peer.py", export_dir]  # jax_peer reads its arguments when imported
    peer = __import__(module)
    if module == "torch_peer":
        peer.torch.set_num_threads(1)
    options = sluice_peer.parser(module).parse_args(["--workers=0"])
    # The tuned form: the flags the peers add for their other forms, off.
    options.idiomatic = options.idiomatic_t2 = False
    if module == "jax_peer":
        sources = {f["name"]: peer.jnp.asarray(plan.load_source(f["name"])) for f in plan.source_fields}
        return lambda: peer.tuned_batches(plan, sources)
    return lambda: peer.make_batches(plan, options)


def plan_form(plan):
    """The form for a plan: EXPERT_FORM where set, else by its ops and
    source (a loader's plan does not name its scenario): pack_tokens is
    NLP-1's, normalize of u8 images CV-1's, normalize of float32 tensors
    PC-1's."""
    if os.environ.get("EXPERT_FORM"):
        return os.environ["EXPERT_FORM"]
    kinds = [op["kind"] for op in plan.ops]
    dtypes = {f["name"]: f["dtype"] for f in plan.source_fields}
    if kinds == ["pack_tokens"]:
        return "numpy-nlp1"
    if kinds == ["normalize"] and dtypes.get(plan.ops[0]["field"]) == "u8":
        return "torch-cv1"
    if kinds == ["normalize"] and dtypes.get(plan.ops[0]["field"]) == "f32":
        return "numpy-pc1"
    raise SystemExit("peers-expert.py: no expert form for a plan of %s" % ", ".join(kinds))


def expert_batches(plan, options):
    """The plan's scenario's expert form as a loader sluice runs."""
    make, _ = FORMS[plan_form(plan)][0](plan)
    return make()


def summary(out, forms):
    """ci/peers-expert.sh's tables, from its out folder: outside.jsonl and
    the records of each form's `sluice bench --rounds`."""
    import glob

    print("Outside the protocol (ci/peers-expert.py --peer, one process, median over 3 passes):\n")
    print("| form | framework | expert (µs) | the peer's code (µs) | code ÷ expert | load |")
    print("|---|---|---:|---:|---:|---|")
    for line in open(os.path.join(out, "outside.jsonl")):
        r = json.loads(line)
        ratio = r["peer_code_p50_us"] / r["expert_p50_us"]
        print(
            "| %s | %s | %.1f | %.1f | %.2fx | %s |"
            % (r["form"], r["framework"], r["expert_p50_us"], r["peer_code_p50_us"], ratio, " ".join(r["load"]))
        )
    print("\nThrough the protocol (sluice bench --rounds: the peer and peer:ci/peers-expert.py interleaved):\n")
    print(
        "| form | peer | peer p50 (µs) | expert p50 (µs) | peer ÷ expert, median [min, max] | load | "
        "CPU wait (peer, expert) | verified |"
    )
    print("|---|---|---:|---:|---|---|---|---|")
    for spec in forms:
        form, scenario, variant, p1, p2, _ = spec.split(":", 5)
        folder = os.path.join(out, form, "full")
        peer = json.load(open(os.path.join(folder, "%s__%s__%s:%s.json" % (scenario, variant, p1, p2))))
        expert = json.load(
            open(glob.glob(os.path.join(folder, "%s__%s__peer:*peers-expert.py.json" % (scenario, variant)))[0])
        )
        # Per round: the expert's rate over the peer's, the peer's time over the expert's.
        ratios = sorted(e / p for p, e in zip(peer["repetition_elements_per_s"], expert["repetition_elements_per_s"]))
        print(
            "| %s | %s (%s) | %.1f | %.1f | %.2fx [%.2f, %.2f] over %d rounds | %.1f to %.1f | %.2f, %.2f | %s, %s |"
            % (
                form,
                peer["adapter"],
                peer["framework"],
                peer["p50_ns"] / 1000,
                expert["p50_ns"] / 1000,
                statistics.median(ratios),
                ratios[0],
                ratios[-1],
                len(ratios),
                peer["environment"]["load_start"],
                expert["environment"]["load_end"],
                peer["environment"]["cpu_wait_fraction"],
                expert["environment"]["cpu_wait_fraction"],
                peer["equivalence"],
                expert["equivalence"],
            )
        )


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--summary":
        summary(sys.argv[2], sys.argv[3:])
        return
    if any(arg.startswith("--ring-fd") or arg == "--describe" for arg in sys.argv[1:]):
        # Run by sluice: the ops the three forms implement.
        form = os.environ.get("EXPERT_FORM", "")
        sluice_peer.main(
            "expert",
            "the expert form %s" % (form or "of numpy " + np.__version__ + " or torch"),
            expert_batches,
            {"normalize", "pack_tokens"},
            kind="prefetching" if form in PREFETCHING else "per-batch",
        )
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("form", choices=sorted(FORMS))
    ap.add_argument("export_dir")
    ap.add_argument("--peer", action="store_true", help="also time the tuned peer's make_batches, interleaved")
    ap.add_argument("--passes", type=int, default=3, help="passes over the export's batches (default 3)")
    a = ap.parse_args()
    plan = sluice_peer.Plan(a.export_dir)
    make, module = FORMS[a.form]
    batches, framework = make(plan)
    result = {"form": a.form, "framework": framework, "load": open("/proc/loadavg").read().split()[:3]}
    times, expert_out = time_batches(plan, batches, a.passes)
    result["expert_p50_us"] = statistics.median(times) / 1000
    if a.peer:
        peer_times, peer_out = time_batches(plan, peer_batches(plan, module, a.export_dir), a.passes)
        result["peer_code_p50_us"] = statistics.median(peer_times) / 1000
        for i, (e, p) in enumerate(zip(expert_out, peer_out)):
            for name in e:
                if e[name].tobytes() != np.ascontiguousarray(p[name]).tobytes():
                    raise SystemExit("batch %d field %s: the expert form and the peer differ" % (i, name))
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()

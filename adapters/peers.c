/* The peer loaders sluice knows (peers/ holds their scripts; docs/peers.md).
 * Each is available when its Python has the modules it imports: numpy in
 * the system's Python (Debian's packages), PyTorch in .venv-torch (PyPI's
 * torch 2, with LitData and Megatron Energon) or else in the system's Python
 * (Debian's CPU-only torch 1.13), grain, tf.data and JAX in the peers' virtual
 * environment (PyPI, ci/install-peers.sh); Datarax, MosaicML Streaming,
 * Hugging Face Datasets, WebDataset, SPDL, Ray Data, Deep Lake, FFCV and
 * NVIDIA DALI (its CPU backend) in virtual environments of their own. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "adapters.h"
#include "peer.h"
#include "sluice_config.h"

/* What every Python peer implements: the ops of the gate scenarios. */
#define PEER_GATE_TRANSFORMS                                                                                           \
    (SL_TRANSFORM(SL_OP_PACK_TOKENS) | SL_TRANSFORM(SL_OP_NORMALIZE) | SL_TRANSFORM(SL_OP_SCALE) |                     \
     SL_TRANSFORM(SL_OP_CLIP) | SL_TRANSFORM(SL_OP_ADD) | SL_TRANSFORM(SL_OP_MULTIPLY) |                               \
     SL_TRANSFORM(SL_OP_RANDOM_CROP) | SL_TRANSFORM(SL_OP_RANDOM_HFLIP))

/* Ops that move data or count, with their decisions exported and no float
 * rounding of their own: volumes' crops and flips, token padding, dynamic
 * padding and masks, id hashing and bag offsets, one-hot labels; plus the
 * ops that leave a batch's bytes as they are for a peer (bucket_by_length
 * is in the exported order already; rebatch splits and rejoins a batch). */
#define PEER_MOVEMENT_TRANSFORMS                                                                                       \
    (SL_TRANSFORM(SL_OP_RANDOM_CROP3D) | SL_TRANSFORM(SL_OP_RANDOM_FLIP3D) | SL_TRANSFORM(SL_OP_ONE_HOT) |             \
     SL_TRANSFORM(SL_OP_PAD_TOKENS) | SL_TRANSFORM(SL_OP_HASH_IDS) | SL_TRANSFORM(SL_OP_BAG_OFFSETS) |                 \
     SL_TRANSFORM(SL_OP_BUCKET_BY_LENGTH) | SL_TRANSFORM(SL_OP_PAD_TO_MULTIPLE) | SL_TRANSFORM(SL_OP_ATTENTION_MASK) | \
     SL_TRANSFORM(SL_OP_REBATCH))

/* The JAX peers (jax, datarax) compute the gate ops, the data movement with
 * static shapes, rot90, brightness and scale from the exported decisions,
 * and sluice's libm-free log1p operation for operation (peers/jax_ops.py);
 * XLA capped at AVX where a plan could contract a multiply and an add
 * (peers/xla_cap.py). Not zscore (XLA's reductions sum in their own order). */
#define PEER_JAX_TRANSFORMS                                                                                            \
    (PEER_GATE_TRANSFORMS | SL_TRANSFORM(SL_OP_RANDOM_CROP3D) | SL_TRANSFORM(SL_OP_RANDOM_FLIP3D) |                    \
     SL_TRANSFORM(SL_OP_ONE_HOT) | SL_TRANSFORM(SL_OP_PAD_TOKENS) | SL_TRANSFORM(SL_OP_HASH_IDS) |                     \
     SL_TRANSFORM(SL_OP_BAG_OFFSETS) | SL_TRANSFORM(SL_OP_REBATCH) | SL_TRANSFORM(SL_OP_LOG1P) |                       \
     SL_TRANSFORM(SL_OP_ROT90) | SL_TRANSFORM(SL_OP_RANDOM_BRIGHTNESS) | SL_TRANSFORM(SL_OP_RANDOM_SCALE))
/* PC-5, IO-4 and MM-2 on both JAX forms: affine and dropout, its mask
 * recomputed from the keying the plan documents (Philox in uint64);
 * sluice's float64 trig_rounds with a cache of the peer's own; log_mel
 * (PEER_LOG_MEL, below) within MM-2's stated tolerance (peers/jax_ops.py,
 * peers/jax_peer.py; jitted, XLA is capped at AVX for all three). */
#define PEER_JAX_PC5_IO4_MM2                                                                                           \
    (SL_TRANSFORM(SL_OP_AFFINE) | SL_TRANSFORM(SL_OP_DROPOUT) | SL_TRANSFORM(SL_OP_TRIG_ROUNDS) |                      \
     SL_TRANSFORM(SL_OP_CACHE) | PEER_LOG_MEL)
/* CV-4, MM-1, PC-2 and PC-4 on both JAX forms: resize and
 * random_resized_crop by sluice's plan (made in numpy on the host, from the
 * exported boxes for the latter) and lerps, and the sub-op graphs from their
 * exported picks (statistical: their noise is JAX's); jitted, XLA is capped
 * at AVX for all four (peers/jax_ops.py, peers/xla_cap.py). */
#define PEER_JAX_CV4_MM1_GRAPHS                                                                                        \
    (PEER_RESAMPLE_TRANSFORMS | SL_TRANSFORM(SL_OP_BRANCH_MEAN) | SL_TRANSFORM(SL_OP_RANDOM_APPLY) |                   \
     SL_TRANSFORM(SL_OP_RANDOM_CHOICE))
/* peer:jax also mixes batches from the exported MixUp and CutMix decisions,
 * draws gaussian noise of its own (checked statistically), and pads to a
 * multiple with a width it computes on the host (a function compiled per
 * width the plan has). */
#define PEER_JAX_OWN_TRANSFORMS                                                                                        \
    (PEER_JAX_TRANSFORMS | SL_TRANSFORM(SL_OP_MIXUP) | SL_TRANSFORM(SL_OP_CUTMIX) |                                    \
     SL_TRANSFORM(SL_OP_GAUSSIAN_NOISE) | SL_TRANSFORM(SL_OP_BUCKET_BY_LENGTH) | SL_TRANSFORM(SL_OP_PAD_TO_MULTIPLE) | \
     SL_TRANSFORM(SL_OP_ATTENTION_MASK) | PEER_JAX_PC5_IO4_MM2 | PEER_JAX_CV4_MM1_GRAPHS)

/* Both Datarax forms run what peer:jax runs, with jax_ops' functions in
 * Datarax operators and stages (peers/datarax_peer.py): MixUp and CutMix
 * from the exported per-batch decisions and partners, which the source hands
 * each step by its position (so Pipeline.scan's one call has them too);
 * gaussian noise from Datarax's per-record keys (statistical); NLP-2's
 * padding at the field's capacity, the host slicing to the batch's width
 * computed in the step; PC-5's affine and dropout; IO-4's trig_rounds with a
 * cache stage whose store is pipeline state; MM-2's log_mel; CV-4's resize
 * in an ElementOperator and MM-1's random_resized_crop, each element's plan
 * riding along from the source; PC-2's and PC-4's sub-op graphs as a DAG
 * (Pipeline.from_dag), the picks riding along (statistical). */
#define PEER_DATARAX_TRANSFORMS PEER_JAX_OWN_TRANSFORMS

/* numpy, torch and Grain (whose element Maps call numpy) also compute
 * zscore's float64 moments in sluice's order and sluice's libm-free log1p
 * operation for operation (docs/peers.md). */
#define PEER_NUMPY_TRANSFORMS                                                                                          \
    (PEER_GATE_TRANSFORMS | PEER_MOVEMENT_TRANSFORMS | SL_TRANSFORM(SL_OP_ZSCORE) | SL_TRANSFORM(SL_OP_LOG1P))
/* The numpy and idiomatic PyTorch peers also apply the ops whose decisions
 * the export writes beyond the gate's: rot90's turns, brightness offsets
 * and scale factors, and MixUp's and CutMix's per-batch draws and partners;
 * gaussian noise of their own, checked statistically; IO-4's sluice's
 * libm-free trig_rounds in float64 (peers/sluice_ops.py) and a cache of
 * their own; PC-5's affine and dropout, its mask recomputed from the keying
 * the plan documents. */
#define PEER_NUMPY_OWN_TRANSFORMS                                                                                      \
    (PEER_NUMPY_TRANSFORMS | SL_TRANSFORM(SL_OP_ROT90) | SL_TRANSFORM(SL_OP_RANDOM_BRIGHTNESS) |                       \
     SL_TRANSFORM(SL_OP_RANDOM_SCALE) | SL_TRANSFORM(SL_OP_MIXUP) | SL_TRANSFORM(SL_OP_CUTMIX) |                       \
     SL_TRANSFORM(SL_OP_GAUSSIAN_NOISE) | SL_TRANSFORM(SL_OP_TRIG_ROUNDS) | SL_TRANSFORM(SL_OP_CACHE) |                \
     SL_TRANSFORM(SL_OP_AFFINE) | SL_TRANSFORM(SL_OP_DROPOUT))
/* Both numpy forms and both PyTorch forms also resample bilinearly by
 * sluice's plan and lerps (peers/sluice_ops.py; CV-4, MM-1), with
 * random_resized_crop's boxes from its exported decisions. */
#define PEER_RESAMPLE_TRANSFORMS (SL_TRANSFORM(SL_OP_RESIZE) | SL_TRANSFORM(SL_OP_RANDOM_RESIZED_CROP))
/* Both numpy forms, both PyTorch forms and both JAX forms run MM-2's
 * log_mel with their framework's FFT and matrix product on sluice's window
 * and filter bank: within MM-2's stated tolerance, not bitwise
 * (docs/peers.md). */
#define PEER_LOG_MEL             SL_TRANSFORM(SL_OP_LOG_MEL)
/* Both numpy forms and the idiomatic PyTorch form also run the sub-op
 * graphs (PC-2, PC-4) from their exported picks; their noise makes those
 * plans statistical. */
#define PEER_NUMPY_GRAPH_TRANSFORMS                                                                                    \
    (PEER_NUMPY_OWN_TRANSFORMS | SL_TRANSFORM(SL_OP_BRANCH_MEAN) | SL_TRANSFORM(SL_OP_RANDOM_APPLY) |                  \
     SL_TRANSFORM(SL_OP_RANDOM_CHOICE) | PEER_RESAMPLE_TRANSFORMS | PEER_LOG_MEL)
#define PEER_TORCH_TRANSFORMS PEER_NUMPY_GRAPH_TRANSFORMS
/* Grain's three forms compute what peer:numpy computes: the tuned form with
 * its batch code in one Map, the idiomatic forms with numpy_idiomatic_peer's
 * functions in one Map per op (per element, or per batch for the ops that
 * need the batch), and a cache dict of their own (peers/grain_peer.py). */
#define PEER_GRAIN_TRANSFORMS PEER_NUMPY_GRAPH_TRANSFORMS
/* PyTorch's tuned form: the gate ops, the resampling ops batched, and
 * MM-1's and MM-2's pad_tokens and log_mel. */
#define PEER_TORCH_TUNED_TRANSFORMS                                                                                    \
    (PEER_GATE_TRANSFORMS | PEER_RESAMPLE_TRANSFORMS | SL_TRANSFORM(SL_OP_PAD_TOKENS) | PEER_LOG_MEL)
/* tf.data: all but zscore (its reductions sum in their own order); rot90,
 * brightness and scale from their exported decisions; affine; dropout, its
 * mask by Philox on tf.uint64 tensors; MixUp and CutMix from their exported
 * per-batch decisions and partners; gaussian noise of its own
 * (tf.random.stateless_normal, checked statistically); resize and
 * random_resized_crop by sluice's plan and lerps in tf ops; the sub-op
 * graphs from their exported picks; log_mel with tf.signal.rfft and
 * tf.matmul (within MM-2's tolerance); IO-4's trig_rounds in float64 tf ops
 * and a cache of its own (tf.Variables by element id). */
#define PEER_TFDATA_TRANSFORMS                                                                                         \
    (PEER_GATE_TRANSFORMS | PEER_MOVEMENT_TRANSFORMS | SL_TRANSFORM(SL_OP_LOG1P) | SL_TRANSFORM(SL_OP_ROT90) |         \
     SL_TRANSFORM(SL_OP_RANDOM_BRIGHTNESS) | SL_TRANSFORM(SL_OP_RANDOM_SCALE) | SL_TRANSFORM(SL_OP_AFFINE) |           \
     SL_TRANSFORM(SL_OP_DROPOUT) | SL_TRANSFORM(SL_OP_MIXUP) | SL_TRANSFORM(SL_OP_CUTMIX) |                            \
     SL_TRANSFORM(SL_OP_GAUSSIAN_NOISE) | PEER_RESAMPLE_TRANSFORMS | SL_TRANSFORM(SL_OP_BRANCH_MEAN) |                 \
     SL_TRANSFORM(SL_OP_RANDOM_APPLY) | SL_TRANSFORM(SL_OP_RANDOM_CHOICE) | PEER_LOG_MEL |                             \
     SL_TRANSFORM(SL_OP_TRIG_ROUNDS) | SL_TRANSFORM(SL_OP_CACHE))

static bool numpy_available(char *reason, size_t size)
{
    return sl__peer_python_has("numpy", reason, size);
}

/* PyTorch: SLUICE_TORCH_PYTHON; else PyTorch 2 in a virtual environment of
 * its own (`ci/install-peers.sh torch2`, PyPI's wheels: LitData and Energon
 * need torch 2) where it was made; else the system's Python, with Debian's
 * CPU-only torch 1.13 (`ci/install-peers.sh torch`, what the README's main
 * job installs), so that the main job and the tests use the Python the
 * numpy peers use. */
const char *sl__peer_torch_python(void)
{
    const char *python = getenv("SLUICE_TORCH_PYTHON");
    if (python && *python)
        return python;
    static const char venv[] = SLUICE_SOURCE_ROOT "/.venv-torch/bin/python";
    return access(venv, X_OK) == 0 ? venv : sl__peer_python();
}

static bool torch_available(char *reason, size_t size)
{
    return sl__peer_python_has_in(sl__peer_torch_python(), "numpy,torch", reason, size);
}

static bool grain_available(char *reason, size_t size)
{
    return sl__peer_python_has_in(sl__peer_venv_python(), "numpy,grain", reason, size);
}

static bool tfdata_available(char *reason, size_t size)
{
    return sl__peer_python_has_in(sl__peer_venv_python(), "numpy,tensorflow", reason, size);
}

static bool jax_available(char *reason, size_t size)
{
    return sl__peer_python_has_in(sl__peer_venv_python(), "numpy,jax", reason, size);
}

/* The adapter part every peer entry shares: a CPU adapter on the reference
 * kernels, run and described by the peer protocol (peer.c). */
#define PEER_ADAPTER(NAME, SUMMARY, AVAILABLE, TRANSFORMS)                                                             \
    .adapter = {.name = NAME,                                                                                          \
                .summary = SUMMARY,                                                                                    \
                .backend = "cpu",                                                                                      \
                .kernels = SL_KERNELS_REFERENCE,                                                                       \
                .transforms = TRANSFORMS,                                                                              \
                .available = AVAILABLE,                                                                                \
                .run = sl__peer_run,                                                                                   \
                .framework = sl__peer_framework,                                                                       \
                .annotate = sl__peer_annotate}

/* A peer run by the Python that PYTHON returns (NULL: the system's). */
#define PEER(NAME, SUMMARY, AVAILABLE, SCRIPT, ARGS, TRANSFORMS, PYTHON, KIND)                                         \
    {                                                                                                                  \
        PEER_ADAPTER(NAME, SUMMARY, AVAILABLE, TRANSFORMS), .script = SCRIPT, .args = ARGS, .python = PYTHON,          \
                                                            .kind = KIND,                                              \
    }

/* The forms of each framework (docs/peers.md, "Two forms"): the plain name
 * is the form its experts write (batched, in place, preallocated, the
 * framework's fastest legitimate path), "-idiomatic" the form its tutorials
 * teach and most users write; "-w2"/"-t2" the same with 2 worker processes
 * or threads. */
const sl__peer sl__peer_numpy =
    PEER("peer:numpy",
         "numpy as its experts write it: gathers with take into preallocated buffers, constants tiled "
         "over each element, in-place ufuncs, slice copies (peers/numpy_peer.py)",
         numpy_available, "numpy_peer.py", "--workers=0", PEER_NUMPY_GRAPH_TRANSFORMS, NULL, SL__PEER_PER_BATCH);
const sl__peer sl__peer_numpy_idiomatic = PEER("peer:numpy-idiomatic",
                                               "numpy as tutorials write it: fancy-index gather, broadcast arithmetic, "
                                               "advanced-index crops, masked flips (peers/numpy_idiomatic_peer.py)",
                                               numpy_available, "numpy_idiomatic_peer.py", "--workers=0",
                                               PEER_NUMPY_GRAPH_TRANSFORMS, NULL, SL__PEER_PER_BATCH);
static const sl__peer peer_torch =
    PEER("peer:torch",
         "PyTorch as its experts write it: a Dataset that returns whole batches (index_select into "
         "preallocated tensors, in-place ops), indexed in the plan's order (peers/torch_peer.py)",
         torch_available, "torch_peer.py", "--workers=0", PEER_TORCH_TUNED_TRANSFORMS, sl__peer_torch_python,
         SL__PEER_PER_BATCH);
static const sl__peer peer_torch_idiomatic =
    PEER("peer:torch-idiomatic",
         "PyTorch DataLoader as tutorials write it: map-style Dataset, one element per "
         "__getitem__, default collate, 0 workers (peers/torch_idiomatic_peer.py)",
         torch_available, "torch_idiomatic_peer.py", "--workers=0", PEER_TORCH_TRANSFORMS, sl__peer_torch_python,
         SL__PEER_PER_BATCH);
static const sl__peer peer_torch_idiomatic_w2 =
    PEER("peer:torch-idiomatic-w2", "the same DataLoader with 2 worker processes (peers/torch_idiomatic_peer.py)",
         torch_available, "torch_idiomatic_peer.py", "--workers=2", PEER_TORCH_TRANSFORMS, sl__peer_torch_python,
         SL__PEER_PREFETCHING);
static const sl__peer peer_grain = PEER(
    "peer:grain",
    "Grain MapDataset over batch indices, one vectorized numpy Map per batch, iterated in the main "
    "thread (peers/grain_peer.py)",
    grain_available, "grain_peer.py", "--workers=0", PEER_GRAIN_TRANSFORMS, sl__peer_venv_python, SL__PEER_PER_BATCH);
static const sl__peer peer_grain_idiomatic = PEER(
    "peer:grain-idiomatic",
    "Grain MapDataset over the exported order, one Map per op on each element, batch, "
    "iterated in the main thread (peers/grain_peer.py --idiomatic)",
    grain_available, "grain_peer.py", "--idiomatic", PEER_GRAIN_TRANSFORMS, sl__peer_venv_python, SL__PEER_PER_BATCH);
static const sl__peer peer_grain_idiomatic_t2 =
    PEER("peer:grain-idiomatic-t2",
         "the same, iterated with 2 prefetch threads (ReadOptions num_threads=2) "
         "(peers/grain_peer.py --idiomatic --workers=2)",
         grain_available, "grain_peer.py", "--idiomatic-t2", PEER_GRAIN_TRANSFORMS, sl__peer_venv_python,
         SL__PEER_PREFETCHING);
static const sl__peer peer_tfdata =
    PEER("peer:tfdata",
         "tf.data as its performance guide says: batch, then one vectorized map over the batch, "
         "prefetch (peers/tfdata_peer.py)",
         tfdata_available, "tfdata_peer.py", "--workers=0", PEER_TFDATA_TRANSFORMS, sl__peer_venv_python,
         SL__PEER_PREFETCHING);
static const sl__peer peer_tfdata_idiomatic =
    PEER("peer:tfdata-idiomatic",
         "tf.data as tutorials write it: map per element (AUTOTUNE), batch, prefetch "
         "(peers/tfdata_peer.py --idiomatic)",
         tfdata_available, "tfdata_peer.py", "--idiomatic", PEER_TFDATA_TRANSFORMS, sl__peer_venv_python,
         SL__PEER_PREFETCHING);
static const sl__peer peer_jax = PEER(
    "peer:jax",
    "JAX as its experts write it: one jit-compiled batch function (gather and ops), every batch "
    "shape compiled before the hello (peers/jax_peer.py)",
    jax_available, "jax_peer.py", "--workers=0", PEER_JAX_OWN_TRANSFORMS, sl__peer_venv_python, SL__PEER_PER_BATCH);
static const sl__peer peer_jax_idiomatic = PEER(
    "peer:jax-idiomatic",
    "JAX as tutorials write it: jax.numpy ops dispatched one by one on the batch, no jit "
    "(peers/jax_peer.py --idiomatic)",
    jax_available, "jax_peer.py", "--idiomatic", PEER_JAX_OWN_TRANSFORMS, sl__peer_venv_python, SL__PEER_PER_BATCH);

/* Datarax pins its own jax, grain and tensorflow, so it has a virtual
 * environment of its own. */
const char *sl__peer_datarax_python(void)
{
    const char *python = getenv("SLUICE_DATARAX_PYTHON");
    return python && *python ? python : SLUICE_SOURCE_ROOT "/.venv-datarax/bin/python";
}

static bool datarax_available(char *reason, size_t size)
{
    return sl__peer_python_has_in(sl__peer_datarax_python(), "numpy,jax,flax,datarax", reason, size);
}

static const sl__peer peer_datarax =
    PEER("peer:datarax",
         "Datarax Pipeline over a random-access source of the exported order, one ElementOperator "
         "per op, iterated (peers/datarax_peer.py)",
         datarax_available, "datarax_peer.py", "--workers=0", PEER_DATARAX_TRANSFORMS, sl__peer_datarax_python,
         SL__PEER_PER_BATCH);
static const sl__peer peer_datarax_scan =
    PEER("peer:datarax-scan",
         "Datarax Pipeline.scan: every batch of the plan in one XLA call, compared by "
         "throughput (peers/datarax_peer.py --scan)",
         datarax_available, "datarax_peer.py", "--scan", PEER_DATARAX_TRANSFORMS, sl__peer_datarax_python,
         SL__PEER_ALL_AT_ONCE);

/* Peers with a virtual environment of their own, <source>/.venv-<name>
 * (ci/install-peers.sh), or the Python that ENV names. */
#define OWN_VENV_PYTHON(STORAGE, FN, ENV, DIR)                                                                         \
    STORAGE const char *FN(void)                                                                                       \
    {                                                                                                                  \
        const char *python = getenv(ENV);                                                                              \
        return python && *python ? python : SLUICE_SOURCE_ROOT "/" DIR "/bin/python";                                  \
    }

/* MosaicML Streaming (mosaicml-streaming 0.13.0, ci/peers-streaming.txt): MDS
 * shards written before the hello, read back through StreamingDataset by
 * index, numpy_peer's ops on the stacked batch. Its venv sees Debian's torch
 * and torchvision (system site packages). */
OWN_VENV_PYTHON(static, streaming_python, "SLUICE_STREAMING_PYTHON", ".venv-streaming")

static bool streaming_available(char *reason, size_t size)
{
    return sl__peer_python_has_in(streaming_python(), "numpy,streaming", reason, size);
}

/* Hugging Face Datasets and WebDataset each have a pinned virtual
 * environment of their own (ci/peers-hf-datasets.txt,
 * ci/peers-webdataset.txt); both hand numpy batches to numpy_peer's ops, so
 * they compute what peer:numpy computes. */
OWN_VENV_PYTHON(, sl__peer_hf_python, "SLUICE_HF_PYTHON", ".venv-hf")
OWN_VENV_PYTHON(, sl__peer_wds_python, "SLUICE_WDS_PYTHON", ".venv-wds")

static bool hf_datasets_available(char *reason, size_t size)
{
    return sl__peer_python_has_in(sl__peer_hf_python(), "numpy,pyarrow,datasets", reason, size);
}

static bool webdataset_available(char *reason, size_t size)
{
    return sl__peer_python_has_in(sl__peer_wds_python(), "numpy,webdataset", reason, size);
}

static const sl__peer peer_hf_datasets =
    PEER("peer:hf-datasets",
         "Hugging Face Datasets: Arrow on disk, load_from_disk, numpy format, select(order), "
         "iter(batch_size) (peers/hf_datasets_peer.py)",
         hf_datasets_available, "hf_datasets_peer.py", "--workers=0", PEER_NUMPY_TRANSFORMS, sl__peer_hf_python,
         SL__PEER_PER_BATCH);
static const sl__peer peer_webdataset =
    PEER("peer:webdataset",
         "WebDataset: tar shards in the exported order, WebDataset(...).decode().batched() "
         "(peers/webdataset_peer.py)",
         webdataset_available, "webdataset_peer.py", "--workers=0", PEER_NUMPY_TRANSFORMS, sl__peer_wds_python,
         SL__PEER_PER_BATCH);

/* SPDL (spdl 0.8.0, ci/peers-spdl.txt): its stages call numpy_peer's ops on
 * 2 threads, and its sink buffers 2 batches: it prefetches. */
OWN_VENV_PYTHON(static, spdl_python, "SLUICE_SPDL_PYTHON", ".venv-spdl")

static bool spdl_available(char *reason, size_t size)
{
    return sl__peer_python_has_in(spdl_python(), "numpy,spdl", reason, size);
}

/* Ray Data (ray 2.60.0, ci/peers-ray.txt): numpy_peer's ops in map_batches,
 * but not the ops whose batch width depends on the data (pad_to_multiple,
 * attention_mask): Ray's blocks join batches into tensor columns of one
 * width. Its local cluster starts before the hello, in up to 300 s; its
 * streaming executor runs ahead of the consumer. */
#define PEER_RAY_TRANSFORMS                                                                                            \
    (PEER_NUMPY_TRANSFORMS & ~(SL_TRANSFORM(SL_OP_PAD_TO_MULTIPLE) | SL_TRANSFORM(SL_OP_ATTENTION_MASK)))
OWN_VENV_PYTHON(static, ray_python, "SLUICE_RAY_PYTHON", ".venv-ray")

static bool ray_available(char *reason, size_t size)
{
    return sl__peer_python_has_in(ray_python(), "numpy,ray,pyarrow,pandas", reason, size);
}

/* Deep Lake (deeplake 4.7.4, ci/peers-deeplake.txt): the export written to a
 * local Deep Lake dataset before the hello, batches read by id. */
OWN_VENV_PYTHON(static, deeplake_python, "SLUICE_DEEPLAKE_PYTHON", ".venv-deeplake")

static bool deeplake_available(char *reason, size_t size)
{
    return sl__peer_python_has_in(deeplake_python(), "numpy,deeplake", reason, size);
}

/* LitData and Megatron Energon run on PyTorch 2, in its environment. */
static bool litdata_available(char *reason, size_t size)
{
    return sl__peer_python_has_in(sl__peer_torch_python(), "numpy,torch,litdata", reason, size);
}

/* Energon reads WebDataset shards, and its peer writes them with
 * WebDataset's ShardWriter (peers/webdataset_peer.py). */
static bool energon_available(char *reason, size_t size)
{
    return sl__peer_python_has_in(sl__peer_torch_python(), "numpy,torch,webdataset,megatron.energon", reason, size);
}

static const sl__peer peer_spdl =
    PEER("peer:spdl",
         "SPDL PipelineBuilder over the exported order: aggregate, load and transform stages on 2 "
         "threads, sink (peers/spdl_peer.py)",
         spdl_available, "spdl_peer.py", "--workers=2", PEER_NUMPY_TRANSFORMS, spdl_python, SL__PEER_PREFETCHING);
static const sl__peer peer_ray_data = {
    PEER_ADAPTER("peer:ray-data",
                 "Ray Data from_numpy over the exported order, map_batches, iter_batches in order, "
                 "a local cluster of 2 CPUs (peers/ray_data_peer.py)",
                 ray_available, PEER_RAY_TRANSFORMS),
    .script = "ray_data_peer.py",
    .args = "--workers=2",
    .python = ray_python,
    .startup_s = 300,
    .kind = SL__PEER_PREFETCHING,
};
/* LitData's optimize starts a worker process and writes the chunks in
 * setup: about 75 elements/s here, so its start-up limit is long. */
static const sl__peer peer_litdata = {
    PEER_ADAPTER("peer:litdata",
                 "LitData: the export written with litdata.optimize before the hello, "
                 "StreamingDataset read by index in the exported order (peers/litdata_peer.py)",
                 litdata_available, PEER_NUMPY_TRANSFORMS),
    .script = "litdata_peer.py",
    .args = "--workers=0",
    .python = sl__peer_torch_python,
    .startup_s = 1800,
};
static const sl__peer peer_streaming = PEER("peer:mosaicml-streaming",
                                            "MosaicML Streaming: MDS shards written in setup, StreamingDataset read by "
                                            "index in the exported order, batches stacked (peers/streaming_peer.py)",
                                            streaming_available, "streaming_peer.py", "--workers=0",
                                            PEER_NUMPY_TRANSFORMS, streaming_python, SL__PEER_PER_BATCH);
/* FFCV (ffcv 1.0.2 on PyTorch 2, ci/peers-ffcv.txt): its C extension builds
 * against Debian's OpenCV and libjpeg-turbo; its Loader reads ahead on
 * threads of its own. */
OWN_VENV_PYTHON(static, ffcv_python, "SLUICE_FFCV_PYTHON", ".venv-ffcv")

static bool ffcv_available(char *reason, size_t size)
{
    return sl__peer_python_has_in(ffcv_python(), "numpy,torch,ffcv", reason, size);
}

static const sl__peer peer_ffcv =
    PEER("peer:ffcv",
         "FFCV: the export written as a .beton with DatasetWriter before the hello, each epoch read by "
         "Loader(order=SEQUENTIAL, indices=the exported order) (peers/ffcv_peer.py)",
         ffcv_available, "ffcv_peer.py", "--workers=0", PEER_NUMPY_TRANSFORMS, ffcv_python, SL__PEER_PREFETCHING);
/* Megatron Energon (megatron-energon 7.4.1 on PyTorch 2): each epoch's
 * elements written in its exported order as WebDataset shards and prepared
 * as an Energon data set before the hello, then read front to back by its
 * validation loader, which keeps the order on disk (its training loader
 * shuffles with generators of its own). The writing and indexing take
 * about 6k elements a second on a quiet machine, so the start-up limit is
 * long enough for the full profile's largest export on a busy one. */
static const sl__peer peer_energon = {
    PEER_ADAPTER("peer:energon",
                 "Megatron Energon: each epoch as WebDataset shards in the exported order, prepared as energon "
                 "prepare does before the hello, read by get_val_dataset/get_loader (peers/energon_peer.py)",
                 energon_available, PEER_NUMPY_TRANSFORMS),
    .script = "energon_peer.py",
    .args = "--workers=0",
    .python = sl__peer_torch_python,
    .startup_s = 600,
    .kind = SL__PEER_PER_BATCH,
};
static const sl__peer peer_deeplake = PEER(
    "peer:deeplake",
    "Deep Lake: the data as a local Deep Lake dataset, each batch read by its ids "
    "(dataset[field][ids]) (peers/deeplake_peer.py)",
    deeplake_available, "deeplake_peer.py", "--workers=0", PEER_NUMPY_TRANSFORMS, deeplake_python, SL__PEER_PER_BATCH);
/* NVIDIA DALI (nvidia-dali-cuda120 2.4.0, ci/peers-dali.txt) on its CPU
 * backend (device_id=None): the gate ops as DALI operators and arithmetic
 * expressions, fed by fn.external_source in the exported order, and
 * rebatch (which leaves a batch's bytes as they are); rot90 (fn.rotate by
 * quarter turns, nearest neighbour), brightness and scale as arithmetic on
 * their exported draws, and gaussian noise from DALI's own generator
 * (fn.random.normal, the pipeline's fixed seed, so that a second session
 * replays the first's draws; compared statistically); one_hot (fn.one_hot)
 * and MixUp and CutMix from the exported per-batch decisions and partners
 * (fn.permute_batch, fn.multi_paste); NLP-2's dynamic padding and mask
 * (fn.slice to each row's length, fn.pad aligned to the multiple) and its
 * buckets (in the exported order already); PC-5's affine, and dropout's
 * mask recomputed from its keying by Philox4x32-10 as arithmetic on uint64
 * DataNodes. Its executor runs ahead of the consumer. Its GPU backend needs a CUDA device, which
 * sluice's peers do not use. */
#define PEER_DALI_TRANSFORMS                                                                                           \
    (PEER_GATE_TRANSFORMS | SL_TRANSFORM(SL_OP_REBATCH) | SL_TRANSFORM(SL_OP_ROT90) |                                  \
     SL_TRANSFORM(SL_OP_RANDOM_BRIGHTNESS) | SL_TRANSFORM(SL_OP_RANDOM_SCALE) | SL_TRANSFORM(SL_OP_GAUSSIAN_NOISE) |   \
     SL_TRANSFORM(SL_OP_ONE_HOT) | SL_TRANSFORM(SL_OP_MIXUP) | SL_TRANSFORM(SL_OP_CUTMIX) |                            \
     SL_TRANSFORM(SL_OP_BUCKET_BY_LENGTH) | SL_TRANSFORM(SL_OP_PAD_TO_MULTIPLE) | SL_TRANSFORM(SL_OP_ATTENTION_MASK) | \
     SL_TRANSFORM(SL_OP_AFFINE) | SL_TRANSFORM(SL_OP_DROPOUT))
OWN_VENV_PYTHON(static, dali_python, "SLUICE_DALI_PYTHON", ".venv-dali")

static bool dali_available(char *reason, size_t size)
{
    return sl__peer_python_has_in(dali_python(), "numpy,nvidia.dali", reason, size);
}

static const sl__peer peer_dali =
    PEER("peer:dali",
         "NVIDIA DALI on its CPU backend: a pipeline fed whole batches in the exported order by "
         "fn.external_source, the ops as DALI operators and arithmetic on DataNodes (peers/dali_peer.py)",
         dali_available, "dali_peer.py", "--workers=0", PEER_DALI_TRANSFORMS, dali_python, SL__PEER_PREFETCHING);

const sl__peer *const sl__peers[] = {
    &sl__peer_numpy,
    &sl__peer_numpy_idiomatic,
    &peer_torch,
    &peer_torch_idiomatic,
    &peer_torch_idiomatic_w2,
    &peer_grain,
    &peer_grain_idiomatic,
    &peer_grain_idiomatic_t2,
    &peer_tfdata,
    &peer_tfdata_idiomatic,
    &peer_jax,
    &peer_jax_idiomatic,
    &peer_datarax,
    &peer_datarax_scan,
    &peer_hf_datasets,
    &peer_webdataset,
    &peer_spdl,
    &peer_ray_data,
    &peer_litdata,
    &peer_streaming,
    &peer_ffcv,
    &peer_energon,
    &peer_deeplake,
    &peer_dali,
};
const int sl__peer_count = (int)(sizeof sl__peers / sizeof sl__peers[0]);

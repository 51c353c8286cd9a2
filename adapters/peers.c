/* The peer loaders sluice knows (peers/ holds their scripts; docs/peers.md).
 * Each is available when its Python has the modules it imports. */
#include "adapters.h"
#include "peer.h"

/* What the Python peers implement: the ops of the gate scenarios. */
#define PEER_GATE_TRANSFORMS                                                                                          \
    (SL_TRANSFORM(SL_OP_PACK_TOKENS) | SL_TRANSFORM(SL_OP_NORMALIZE) | SL_TRANSFORM(SL_OP_SCALE) |                   \
     SL_TRANSFORM(SL_OP_CLIP) | SL_TRANSFORM(SL_OP_ADD) | SL_TRANSFORM(SL_OP_MULTIPLY) |                             \
     SL_TRANSFORM(SL_OP_RANDOM_CROP) | SL_TRANSFORM(SL_OP_RANDOM_HFLIP))

static bool numpy_available(char *reason, size_t size)
{
    return sl__peer_python_has("numpy,xxhash", reason, size);
}

static bool torch_available(char *reason, size_t size)
{
    return sl__peer_python_has("numpy,xxhash,torch", reason, size);
}

const sl__peer sl__peer_numpy = {
    .adapter = {.name = "peer:numpy",
                .summary = "numpy, vectorized one batch at a time (peers/numpy_peer.py)",
                .backend = "cpu",
                .kernels = SL_KERNELS_REFERENCE,
                .transforms = PEER_GATE_TRANSFORMS,
                .available = numpy_available,
                .run = sl__peer_run},
    .script = "numpy_peer.py",
    .args = "--workers=0",
};

const sl__peer sl__peer_torch = {
    .adapter = {.name = "peer:torch",
                .summary = "PyTorch DataLoader, map-style Dataset, 0 workers (peers/torch_peer.py)",
                .backend = "cpu",
                .kernels = SL_KERNELS_REFERENCE,
                .transforms = PEER_GATE_TRANSFORMS,
                .available = torch_available,
                .run = sl__peer_run},
    .script = "torch_peer.py",
    .args = "--workers=0",
};

const sl__peer sl__peer_torch_w2 = {
    .adapter = {.name = "peer:torch-w2",
                .summary = "PyTorch DataLoader, map-style Dataset, 2 worker processes (peers/torch_peer.py)",
                .backend = "cpu",
                .kernels = SL_KERNELS_REFERENCE,
                .transforms = PEER_GATE_TRANSFORMS,
                .available = torch_available,
                .run = sl__peer_run},
    .script = "torch_peer.py",
    .args = "--workers=2",
};

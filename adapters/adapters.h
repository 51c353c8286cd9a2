/* The CPU adapters and the run loops they share: one loop per calling
 * convention, so every adapter takes its timestamps at the same points. */
#ifndef SLUICE_ADAPTERS_H
#define SLUICE_ADAPTERS_H

#include "sluice/adapter.h"

extern const sl_adapter sl__adapter_reference;
extern const sl_adapter sl__adapter_iter;
extern const sl_adapter sl__adapter_fused;
extern const sl_adapter sl__adapter_per_element;
/* The CUDA back end's (cuda.c), unavailable with the reason where no device
 * can run them. */
extern const sl_adapter sl__adapter_cuda;
extern const sl_adapter sl__adapter_cuda_graph;
/* What the cuda adapters' device runtime runs (cuda_run.c, cuda_plan.c):
 * element-wise ops with device kernels, the random ones among them drawn
 * per element on the host. */
#define SL__CUDA_TRANSFORMS                                                                                           \
    (SL_TRANSFORM(SL_OP_NORMALIZE) | SL_TRANSFORM(SL_OP_SCALE) | SL_TRANSFORM(SL_OP_CLIP) | SL_TRANSFORM(SL_OP_ADD) | \
     SL_TRANSFORM(SL_OP_MULTIPLY) | SL_TRANSFORM(SL_OP_GAUSSIAN_NOISE) | SL_TRANSFORM(SL_OP_RANDOM_BRIGHTNESS) |      \
     SL_TRANSFORM(SL_OP_RANDOM_SCALE))
/* The device runtime of both cuda adapters, and the most device memory its
 * runs in this process had in use (-1 before any). */
sl_status sl__cuda_run(const sl_adapter *adapter, const sl_pipeline *pipeline, const sl_run_request *request,
                       sl_batch_sink sink, void *user, int64_t *latency_ns, sl_err *err);
int64_t sl__cuda_peak_device_bytes(void);

/* Every transform the CPU kernel tables implement. */
#define SL__CPU_TRANSFORMS                                                                                            \
    (SL_TRANSFORM(SL_OP_PACK_TOKENS) | SL_TRANSFORM(SL_OP_NORMALIZE) | SL_TRANSFORM(SL_OP_SCALE) |                   \
     SL_TRANSFORM(SL_OP_CLIP) | SL_TRANSFORM(SL_OP_ADD) | SL_TRANSFORM(SL_OP_MULTIPLY) |                             \
     SL_TRANSFORM(SL_OP_RANDOM_CROP) | SL_TRANSFORM(SL_OP_RANDOM_HFLIP) | SL_TRANSFORM(SL_OP_ZSCORE) |                \
     SL_TRANSFORM(SL_OP_RANDOM_CROP3D) | SL_TRANSFORM(SL_OP_RANDOM_FLIP3D) | SL_TRANSFORM(SL_OP_ONE_HOT) |           \
     SL_TRANSFORM(SL_OP_MIXUP) | SL_TRANSFORM(SL_OP_CUTMIX) | SL_TRANSFORM(SL_OP_CACHE) |                            \
     SL_TRANSFORM(SL_OP_RESIZE) | SL_TRANSFORM(SL_OP_RANDOM_RESIZED_CROP) | SL_TRANSFORM(SL_OP_PAD_TOKENS) |         \
     SL_TRANSFORM(SL_OP_LOG_MEL) | SL_TRANSFORM(SL_OP_TRIG_ROUNDS) | SL_TRANSFORM(SL_OP_LOG1P) |                     \
     SL_TRANSFORM(SL_OP_HASH_IDS) | SL_TRANSFORM(SL_OP_BAG_OFFSETS) | SL_TRANSFORM(SL_OP_BUCKET_BY_LENGTH) |         \
     SL_TRANSFORM(SL_OP_PAD_TO_MULTIPLE) | SL_TRANSFORM(SL_OP_ATTENTION_MASK) | SL_TRANSFORM(SL_OP_AFFINE) |          \
     SL_TRANSFORM(SL_OP_DROPOUT) | SL_TRANSFORM(SL_OP_REBATCH) | SL_TRANSFORM(SL_OP_ROT90) |                         \
     SL_TRANSFORM(SL_OP_GAUSSIAN_NOISE) | SL_TRANSFORM(SL_OP_RANDOM_BRIGHTNESS) | SL_TRANSFORM(SL_OP_RANDOM_SCALE) |  \
     SL_TRANSFORM(SL_OP_BRANCH_MEAN) | SL_TRANSFORM(SL_OP_RANDOM_APPLY) | SL_TRANSFORM(SL_OP_RANDOM_CHOICE))

/* One batch per call through sl_iter in the given mode, with the adapter's
 * kernels and the request's workers (workers forced to 0 when
 * single_thread). */
sl_status sl__run_iter_loop(const sl_adapter *adapter, const sl_pipeline *pipeline, const sl_run_request *request,
                            sl_iter_mode mode, bool single_thread, sl_batch_sink sink, void *user,
                            int64_t *latency_ns, sl_err *err);

/* The gate's test-only slowdown (adapters/slowdown.c): with -Dgate_knob=true
 * and SLUICE_TEST_SLOWDOWN_PCT set, stretches a batch that started at
 * started_ns by that percentage of its time so far; otherwise nothing. */
void sl__test_slowdown(int64_t started_ns);

#endif

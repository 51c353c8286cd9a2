/* The constants an op prepares once, when a pipeline is built, for the
 * kernels it calls: their types are the kernel table's (sluice/kernels/kernels.h),
 * their builders the pipeline layer's (engine/ops/). */
#ifndef SLUICE_OP_CONSTS_H
#define SLUICE_OP_CONSTS_H

#include <stddef.h>
#include <stdint.h>

#include "sluice/core/status.h"
#include "sluice/kernels/kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The per-channel constants of a normalize op. */
sl_status sl_normalize_consts_init(sl_normalize_consts *consts, int channels, const float *mean, const float *std,
                                   sl_err *err);
void sl_normalize_consts_release(sl_normalize_consts *consts);

/* The per-channel constants of an affine op. */
sl_status sl_affine_consts_init(sl_affine_consts *consts, int channels, const float *scale, const float *bias,
                                sl_err *err);
void sl_affine_consts_release(sl_affine_consts *consts);

/* Bytes of storage a plan for this output size needs (its arrays). */
size_t sl_resize_plan_bytes(int out_h, int out_w, int channels);
/* Fills plan with arrays carved from storage (sl_resize_plan_bytes bytes,
 * SL_ALIGN-aligned). Sizes must be in [1, SL_RESIZE_MAX_SIDE] and channels
 * positive; callers validate them. No allocation: the random resized crop
 * builds one plan per element in its scratch. */
void sl_resize_plan_init(sl_resize_plan *plan, void *storage, int in_h, int in_w, int out_h, int out_w, int channels);
/* Floats of scratch a resize kernel call needs for this plan. */
size_t sl_resize_scratch_values(const sl_resize_plan *plan);

/* Validates the geometry (errors name the parameter) and computes the
 * matrices. */
sl_status sl_melspec_consts_init(sl_melspec_consts *k, int samples, int sample_rate, int frame, int hop, int n_fft,
                                 int mels, sl_err *err);
void sl_melspec_consts_release(sl_melspec_consts *k);
/* Floats of scratch one call needs: the frames, the spectrum, the power. */
size_t sl_melspec_scratch_values(const sl_melspec_consts *k);
/* Floating-point operations of one element's two matrix products. */
double sl_melspec_gemm_flops(const sl_melspec_consts *k);

/* Fills consts for sizes[0..columns), each in [1, 2^31]; errors say which. */
sl_status sl_hash_consts_init(sl_hash_consts *consts, int columns, const int64_t *sizes, sl_err *err);

#ifdef __cplusplus
}
#endif

#endif

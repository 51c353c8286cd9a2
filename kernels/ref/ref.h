/* The reference back end's entry points and the one definition of each
 * element-wise step, shared by every CPU back end so that none can drift. */
#ifndef SLUICE_KERNELS_REF_H
#define SLUICE_KERNELS_REF_H

#include "sluice/kernels.h"

void sl__ref_normalize_u8(const uint8_t *src, float *dst, int64_t pixels, const sl_normalize_consts *k);
void sl__ref_normalize_f32(const float *src, float *dst, int64_t pixels, const sl_normalize_consts *k);
void sl__ref_ew_chain(float *x, int64_t n, const sl_ew_step *steps, int nsteps);
void sl__ref_crop_pad(const void *src, void *dst, int h, int w, size_t pixel_bytes, int crop_h, int crop_w,
                      int off_y, int off_x);
void sl__ref_hflip(void *image, int h, int w, size_t pixel_bytes);
void sl__ref_pack(int32_t *dst, const int32_t *src, int64_t available, int64_t seq_len, int32_t pad);
void sl__ref_resize_u8(const uint8_t *src, int64_t stride, float *dst, const sl_resize_plan *plan, float *scratch);
void sl__ref_resize_f32(const float *src, int64_t stride, float *dst, const sl_resize_plan *plan, float *scratch);

/* One step applied to one value. Clip is written as comparisons rather than
 * fminf/fmaxf so that NaN handling is the same in every back end. */
static inline float sl__ew_apply(const sl_ew_step *step, float v)
{
    switch (step->kind) {
    case SL_OP_NORMALIZE: return (v - step->a) * step->b;
    case SL_OP_SCALE:
    case SL_OP_MULTIPLY: return v * step->a;
    case SL_OP_ADD: return v + step->a;
    case SL_OP_CLIP: return v < step->a ? step->a : (v > step->b ? step->b : v);
    default: return v;
    }
}

#endif

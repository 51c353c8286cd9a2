/* The reference back end's entry points and the one definition of each
 * element-wise step, shared by every CPU back end so that none can drift. */
#ifndef SLUICE_KERNELS_REF_H
#define SLUICE_KERNELS_REF_H

#include "engine/src/normal.h"
#include "sluice/kernels.h"

void sl__ref_normalize_u8(const uint8_t *src, float *dst, int64_t pixels, const sl_normalize_consts *k);
void sl__ref_normalize_f32(const float *src, float *dst, int64_t pixels, const sl_normalize_consts *k);
void sl__ref_ew_chain(float *x, int64_t n, const sl_ew_step *steps, int nsteps);
void sl__ref_crop_pad(const void *src, void *dst, int h, int w, size_t pixel_bytes, int crop_h, int crop_w,
                      int off_y, int off_x);
void sl__ref_hflip(void *image, int h, int w, size_t pixel_bytes);
void sl__ref_pack(int32_t *dst, const int32_t *src, int64_t available, int64_t seq_len, int32_t pad);
void sl__ref_moments(const float *x, int64_t n, double *mean, double *var);
void sl__ref_crop3d(const void *src, void *dst, int d, int h, int w, size_t voxel_bytes, int pd, int ph, int pw, int oz,
                    int oy, int ox);
void sl__ref_flip3d(void *volume, int d, int h, int w, size_t voxel_bytes, unsigned axes);
void sl__ref_one_hot(const int32_t *labels, float *out, int64_t count, int32_t classes);
void sl__ref_blend(float *dst, const float *a, const float *b, int64_t n, float wa, float wb);
void sl__ref_paste_box(void *dst, const void *src, int h, int w, size_t pixel_bytes, int y0, int y1, int x0, int x1);

/* The number of partial sums of sl_moments_fn, and the one order in which
 * they are combined: a balanced tree, the same for every back end. */
#define SL_MOMENT_LANES 8
static inline double sl__moment_lanes_sum(const double p[SL_MOMENT_LANES])
{
    return ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]));
}

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

/* gaussian_noise on one value: v + sigma z, z the normal variate of the
 * value's word rounded to float, then one product and one sum in float. */
static inline float sl__noise_apply(float v, float sigma, uint32_t word)
{
    return v + sigma * sl__normal_f32(word);
}

/* Where gaussian_noise's values find their words: in groups of 64, value
 * i = 64 g + 16 k + j (k < 4, j < 16) takes word k of Philox block
 * 16 g + j of its element. Sixteen blocks side by side then give their
 * words in value order, word by word, which is how a vector unit computes
 * them (kernels/cpu/noise.h): no transposition. */
#define SL_NOISE_BLOCKS 16
#define SL_NOISE_GROUP (4 * SL_NOISE_BLOCKS)

/* Block `draw` (counted from the element's first) of a gaussian_noise
 * step. */
static inline sl_philox_ctr sl__noise_block(const sl_ew_step *step, uint32_t draw)
{
    sl_philox_ctr c = step->ctr;
    c.v[3] += draw;
    return sl_philox4x32_10(c, step->key);
}

#endif

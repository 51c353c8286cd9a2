/* What one CUDA thread computes: output value (or byte) i of each kernel.
 *
 * A __global__ kernel of kernels/cuda is a grid-stride loop around
 * one of these functions and nothing else, so running the function over
 * every i on the CPU (tests/unit/test_cuda_bodies.c) runs exactly the
 * device's per-thread code, and comparing that with the reference kernels
 * checks the GPU's arithmetic and index mappings on a machine without a
 * GPU. The arithmetic itself is the bodies of bodies.h, which the
 * reference kernels call too.
 *
 * Where the reference works in place (hflip, flip3d, pad_rows), the device
 * version gathers from src into a distinct dst: each output is then one
 * independent read, with no pair of threads racing on a swap. */
#ifndef SLUICE_KERNELS_CUDA_AT_H
#define SLUICE_KERNELS_CUDA_AT_H

#include "kernels/bodies.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Element-wise (i is a value index) -------------------------------- */

SL_HD void sl__at_normalize_u8(const uint8_t *src, float *dst, int64_t i, int channels, const float *mean,
                               const float *inv_std)
{
    int c = (int)(i % channels);
    dst[i] = sl__body_normalize((float)src[i], mean[c], inv_std[c]);
}

SL_HD void sl__at_normalize_f32(const float *src, float *dst, int64_t i, int channels, const float *mean,
                                const float *inv_std)
{
    int c = (int)(i % channels);
    dst[i] = sl__body_normalize(src[i], mean[c], inv_std[c]);
}

SL_HD void sl__at_affine(const float *src, float *dst, int64_t i, int channels, const float *scale, const float *bias)
{
    int c = (int)(i % channels);
    dst[i] = sl__body_affine(src[i], scale[c], bias[c]);
}

SL_HD void sl__at_mul_channels(const float *src, float *dst, int64_t i, int channels, const float *s)
{
    dst[i] = sl__body_multiply(src[i], s[i % channels]);
}

/* One step on value i: gaussian_noise draws by the value's index within
 * the element, every other step is its body. */
SL_HD float sl__at_step(const sl_ew_step *step, float v, int64_t i)
{
    return step->kind == SL_EW_GAUSSIAN_NOISE ? sl__noise_value(step, v, i) : sl__ew_apply(step, v);
}

/* Every step of a chain on value i, in order: the fusion that `fused` does
 * per tile on the CPU, done per value (each value sees the same operations
 * in the same order as in the reference's step-after-step loops). With a
 * gaussian_noise step, x is one element and i counts from its first value,
 * as for sl_ew_chain_fn. */
SL_HD void sl__at_ew_chain(float *x, int64_t i, const sl_ew_step *steps, int nsteps)
{
    float v = x[i];
    for (int s = 0; s < nsteps; s++)
        v = sl__at_step(&steps[s], v, i);
    x[i] = v;
}

/* normalize from u8 and then a chain, in one pass: each value read as a
 * byte once and stored as a float once. The same operations in the same
 * order as normalize_u8 followed by the chain. */
SL_HD void sl__at_normalize_u8_chain(const uint8_t *src, float *dst, int64_t i, int channels, const float *mean,
                                     const float *inv_std, const sl_ew_step *steps, int nsteps)
{
    int c = (int)(i % channels);
    float v = sl__body_normalize((float)src[i], mean[c], inv_std[c]);
    for (int s = 0; s < nsteps; s++)
        v = sl__at_step(&steps[s], v, i);
    dst[i] = v;
}

/* A chain whose steps differ per element (a random op resolved for each
 * row): value i is value i mod `values` of row i / values, and its steps
 * are [first, first + nsteps) of that row's row_steps steps in table. */
SL_HD void sl__at_ew_chain_rows(float *x, int64_t i, int64_t values, const sl_ew_step *table, int row_steps, int first,
                                int nsteps)
{
    const sl_ew_step *steps = table + i / values * row_steps + first;
    int64_t j = i % values;
    float v = x[i];
    for (int s = 0; s < nsteps; s++)
        v = sl__at_step(&steps[s], v, j);
    x[i] = v;
}

/* The same after a u8 normalize, in one pass. */
SL_HD void sl__at_normalize_u8_chain_rows(const uint8_t *src, float *dst, int64_t i, int channels, const float *mean,
                                          const float *inv_std, int64_t values, const sl_ew_step *table, int row_steps,
                                          int first, int nsteps)
{
    const sl_ew_step *steps = table + i / values * row_steps + first;
    int64_t j = i % values;
    int c = (int)(i % channels);
    float v = sl__body_normalize((float)src[i], mean[c], inv_std[c]);
    for (int s = 0; s < nsteps; s++)
        v = sl__at_step(&steps[s], v, j);
    dst[i] = v;
}

SL_HD void sl__at_blend(float *dst, const float *a, const float *b, int64_t i, float wa, float wb)
{
    dst[i] = sl__body_blend(a[i], b[i], wa, wb);
}

SL_HD void sl__at_dropout(const float *src, float *dst, int64_t i, const sl_dropout_key *d)
{
    dst[i] = sl__body_dropout(src[i], sl__dropout_word(d, i), d->threshold, d->scale);
}

SL_HD void sl__at_log1p(const float *src, float *dst, int64_t i)
{
    dst[i] = sl__log1p_f32(src[i]);
}

/* i runs over rows x columns ids, row-major. */
SL_HD void sl__at_hash_id(const int64_t *src, int64_t *dst, int64_t i, int columns, const uint32_t *size)
{
    dst[i] = sl__body_hash_id(src[i], size[i % columns]);
}

/* i runs over count x classes outputs. */
SL_HD void sl__at_one_hot(const int32_t *labels, float *out, int64_t i, int32_t classes)
{
    out[i] = sl__body_one_hot(labels[i / classes], (int32_t)(i % classes));
}

/* ---- Sequences (i is a token index) ----------------------------------- */

SL_HD void sl__at_pack(int32_t *dst, const int32_t *src, int64_t available, int64_t i, int32_t pad)
{
    dst[i] = sl__body_pack_token(src, available, i, pad);
}

/* pad_rows from src (rows of `stride` tokens) into a distinct dst (rows of
 * `width`); i runs over rows x width. */
SL_HD void sl__at_pad_rows(int32_t *dst, const int32_t *src, const int32_t *lengths, int64_t i, int64_t stride,
                           int64_t width, int32_t pad)
{
    int64_t r = i / width, t = i % width;
    dst[i] = t < sl__body_clamped_length(lengths[r], width) ? src[r * stride + t] : pad;
}

SL_HD void sl__at_length_mask(uint8_t *mask, const int32_t *lengths, int64_t i, int64_t width)
{
    mask[i] = (uint8_t)(i % width < sl__body_clamped_length(lengths[i / width], width));
}

/* ---- Data movement (i is a byte index of the output) ------------------ */

SL_HD void sl__at_crop_pad(const uint8_t *src, uint8_t *dst, int64_t i, int h, int w, size_t pixel_bytes, int crop_h,
                           int crop_w, int off_y, int off_x)
{
    int64_t p = i / (int64_t)pixel_bytes, b = i % (int64_t)pixel_bytes;
    int64_t from = sl__body_crop_pad_src((int)(p / w), (int)(p % w), h, w, crop_h, crop_w, off_y, off_x);
    dst[i] = from < 0 ? 0 : src[from * (int64_t)pixel_bytes + b];
}

SL_HD void sl__at_hflip(const uint8_t *src, uint8_t *dst, int64_t i, int w, size_t pixel_bytes)
{
    int64_t p = i / (int64_t)pixel_bytes, b = i % (int64_t)pixel_bytes;
    int64_t y = p / w, x = p % w;
    dst[i] = src[(y * w + sl__body_mirror((int)x, w)) * (int64_t)pixel_bytes + b];
}

SL_HD void sl__at_rot90(const uint8_t *src, uint8_t *dst, int64_t i, int side, size_t pixel_bytes, int k)
{
    int64_t p = i / (int64_t)pixel_bytes, b = i % (int64_t)pixel_bytes;
    dst[i] = src[sl__body_rot90_src((int)(p / side), (int)(p % side), side, k) * (int64_t)pixel_bytes + b];
}

/* i runs over the pd x ph x pw patch's bytes. */
SL_HD void sl__at_crop3d(const uint8_t *src, uint8_t *dst, int64_t i, int h, int w, size_t voxel_bytes, int ph,
                         int pw, int oz, int oy, int ox)
{
    int64_t v = i / (int64_t)voxel_bytes, b = i % (int64_t)voxel_bytes;
    int x = (int)(v % pw), y = (int)(v / pw % ph), z = (int)(v / pw / ph);
    dst[i] = src[sl__body_crop3d_src(z, y, x, h, w, oz, oy, ox) * (int64_t)voxel_bytes + b];
}

SL_HD void sl__at_flip3d(const uint8_t *src, uint8_t *dst, int64_t i, int d, int h, int w, size_t voxel_bytes,
                         unsigned axes)
{
    int64_t v = i / (int64_t)voxel_bytes, b = i % (int64_t)voxel_bytes;
    int x = (int)(v % w), y = (int)(v / w % h), z = (int)(v / w / h);
    dst[i] = src[sl__body_flip3d_src(z, y, x, d, h, w, axes) * (int64_t)voxel_bytes + b];
}

/* ---- Resampling (i is an output value index) -------------------------- */

/* Output value i of a bilinear resize per the plan's arrays (which, on the
 * device, are copies of the host plan's). */
#define SL__DEFINE_AT_RESIZE(NAME, T)                                                                                 \
    SL_HD void NAME(const T *src, int64_t stride, float *dst, int64_t i, int out_w, int channels, const int32_t *y0,  \
                    const int32_t *y1, const float *wy, const int32_t *x0, const int32_t *x1, const float *wx)        \
    {                                                                                                                 \
        int c = (int)(i % channels);                                                                                  \
        int64_t p = i / channels;                                                                                     \
        int ox = (int)(p % out_w), oy = (int)(p / out_w);                                                             \
        const T *r0 = src + (int64_t)y0[oy] * stride, *r1 = src + (int64_t)y1[oy] * stride;                           \
        int64_t a = (int64_t)x0[ox] * channels + c, b = (int64_t)x1[ox] * channels + c;                               \
        dst[i] = sl__body_bilinear((float)r0[a], (float)r0[b], (float)r1[a], (float)r1[b], wx[ox], wy[oy]);           \
    }

SL__DEFINE_AT_RESIZE(sl__at_resize_u8, uint8_t)
SL__DEFINE_AT_RESIZE(sl__at_resize_f32, float)

#ifdef __cplusplus
}
#endif

#endif

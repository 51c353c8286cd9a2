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
#include "kernels/device.h"
#include "sluice/core/detmath.h"

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
SL_HD void sl__at_crop3d(const uint8_t *src, uint8_t *dst, int64_t i, int h, int w, size_t voxel_bytes, int ph, int pw,
                         int oz, int oy, int ox)
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
#define SL__DEFINE_AT_RESIZE(NAME, T)                                                                                  \
    SL_HD void NAME(const T *src, int64_t stride, float *dst, int64_t i, int out_w, int channels, const int32_t *y0,   \
                    const int32_t *y1, const float *wy, const int32_t *x0, const int32_t *x1, const float *wx)         \
    {                                                                                                                  \
        int c = (int)(i % channels);                                                                                   \
        int64_t p = i / channels;                                                                                      \
        int ox = (int)(p % out_w), oy = (int)(p / out_w);                                                              \
        const T *r0 = src + (int64_t)y0[oy] * stride, *r1 = src + (int64_t)y1[oy] * stride;                            \
        int64_t a = (int64_t)x0[ox] * channels + c, b = (int64_t)x1[ox] * channels + c;                                \
        dst[i] = sl__body_bilinear((float)r0[a], (float)r0[b], (float)r1[a], (float)r1[b], wx[ox], wy[oy]);            \
    }

SL__DEFINE_AT_RESIZE(sl__at_resize_u8, uint8_t)
SL__DEFINE_AT_RESIZE(sl__at_resize_f32, float)

/* ---- Batched rows (i runs over every row's outputs) --------------------
 *
 * The device executor runs each op over a whole batch in one launch: row r
 * of `rows` is element r of the batch, its decisions row r of the op's
 * decision table (kernels/device.h, sl_device_rows_i32). Each function is
 * the single-element one above applied at row r. */

SL_HD int32_t sl__at_decision(sl_device_rows_i32 d, int64_t row, int column)
{
    return d.table[row * d.stride + d.first + column];
}

/* Output byte i of a batch of cropped and padded images. */
SL_HD void sl__at_crop_pad_rows(const uint8_t *src, uint8_t *dst, int64_t i, int h, int w, size_t pixel_bytes,
                                int crop_h, int crop_w, sl_device_rows_i32 offsets)
{
    int64_t image = (int64_t)h * w * (int64_t)pixel_bytes, r = i / image;
    sl__at_crop_pad(src + r * image, dst + r * image, i - r * image, h, w, pixel_bytes, crop_h, crop_w,
                    sl__at_decision(offsets, r, 0), sl__at_decision(offsets, r, 1));
}

/* A row whose flip decision is 0 is copied as it is. */
SL_HD void sl__at_hflip_rows(const uint8_t *src, uint8_t *dst, int64_t i, int h, int w, size_t pixel_bytes,
                             sl_device_rows_i32 flip)
{
    int64_t image = (int64_t)h * w * (int64_t)pixel_bytes, r = i / image;
    if (sl__at_decision(flip, r, 0))
        sl__at_hflip(src + r * image, dst + r * image, i - r * image, w, pixel_bytes);
    else
        dst[i] = src[i];
}

SL_HD void sl__at_rot90_rows(const uint8_t *src, uint8_t *dst, int64_t i, int side, size_t pixel_bytes,
                             sl_device_rows_i32 k)
{
    int64_t image = (int64_t)side * side * (int64_t)pixel_bytes, r = i / image;
    sl__at_rot90(src + r * image, dst + r * image, i - r * image, side, pixel_bytes, sl__at_decision(k, r, 0));
}

/* Patch byte i of a batch of patches, from volumes of d x h x w voxels. */
SL_HD void sl__at_crop3d_rows(const uint8_t *src, uint8_t *dst, int64_t i, int d, int h, int w, size_t voxel_bytes,
                              int pd, int ph, int pw, sl_device_rows_i32 offsets)
{
    int64_t patch = (int64_t)pd * ph * pw * (int64_t)voxel_bytes, volume = (int64_t)d * h * w * (int64_t)voxel_bytes;
    int64_t r = i / patch;
    sl__at_crop3d(src + r * volume, dst + r * patch, i - r * patch, h, w, voxel_bytes, ph, pw,
                  sl__at_decision(offsets, r, 0), sl__at_decision(offsets, r, 1), sl__at_decision(offsets, r, 2));
}

SL_HD void sl__at_flip3d_rows(const uint8_t *src, uint8_t *dst, int64_t i, int d, int h, int w, size_t voxel_bytes,
                              sl_device_rows_i32 axes)
{
    int64_t volume = (int64_t)d * h * w * (int64_t)voxel_bytes, r = i / volume;
    sl__at_flip3d(src + r * volume, dst + r * volume, i - r * volume, d, h, w, voxel_bytes,
                  (unsigned)sl__at_decision(axes, r, 0));
}

/* Output value i of a batch of bilinear resizes. Each row resamples the
 * window [y, y + bh) x [x, x + bw) of its in_h x in_w image to out_h x
 * out_w, with the axes sl_resize_plan_init computes (a plain resize's
 * window is the whole image). */
SL_HD float sl__at_resample(const void *image, bool u8, int64_t stride, int channels, int y, int x, int bh, int bw,
                            int out_h, int out_w, int64_t v)
{
    int c = (int)(v % channels);
    int64_t p = v / channels;
    int ox = (int)(p % out_w), oy = (int)(p / out_w);
    int32_t y0, y1, x0, x1;
    float wy, wx;
    sl__body_resize_axis(oy, bh, out_h, &y0, &y1, &wy);
    sl__body_resize_axis(ox, bw, out_w, &x0, &x1, &wx);
    int64_t r0 = (int64_t)(y + y0) * stride, r1 = (int64_t)(y + y1) * stride;
    int64_t a = (int64_t)(x + x0) * channels + c, b = (int64_t)(x + x1) * channels + c;
    if (u8) {
        const uint8_t *s = (const uint8_t *)image;
        return sl__body_bilinear((float)s[r0 + a], (float)s[r0 + b], (float)s[r1 + a], (float)s[r1 + b], wx, wy);
    }
    const float *s = (const float *)image;
    return sl__body_bilinear(s[r0 + a], s[r0 + b], s[r1 + a], s[r1 + b], wx, wy);
}

SL_HD void sl__at_resize_rows(const void *src, bool u8, float *dst, int64_t i, int in_h, int in_w, int channels,
                              int out_h, int out_w)
{
    int64_t out_values = (int64_t)out_h * out_w * channels, r = i / out_values;
    int64_t in_values = (int64_t)in_h * in_w * channels;
    const void *image =
        u8 ? (const void *)((const uint8_t *)src + r * in_values) : (const void *)((const float *)src + r * in_values);
    dst[i] = sl__at_resample(image, u8, (int64_t)in_w * channels, channels, 0, 0, in_h, in_w, out_h, out_w,
                             i - r * out_values);
}

SL_HD void sl__at_resized_crop_rows(const void *src, bool u8, float *dst, int64_t i, int in_h, int in_w, int channels,
                                    int out_h, int out_w, sl_device_rows_i32 boxes)
{
    int64_t out_values = (int64_t)out_h * out_w * channels, r = i / out_values;
    int64_t in_values = (int64_t)in_h * in_w * channels;
    const void *image =
        u8 ? (const void *)((const uint8_t *)src + r * in_values) : (const void *)((const float *)src + r * in_values);
    dst[i] = sl__at_resample(image, u8, (int64_t)in_w * channels, channels, sl__at_decision(boxes, r, 0),
                             sl__at_decision(boxes, r, 1), sl__at_decision(boxes, r, 2), sl__at_decision(boxes, r, 3),
                             out_h, out_w, i - r * out_values);
}

/* Dropout of value i of a batch of rows of `values`, keyed by the row's
 * element and the batch's epoch. */
SL_HD void sl__at_dropout_rows(const float *src, float *dst, int64_t i, int64_t values, const int64_t *ids,
                               const sl_device_batch *batch, sl_philox_key key, uint32_t threshold, float scale)
{
    int64_t r = i / values;
    sl_dropout_key d = {key, (uint64_t)ids[r], (uint32_t)batch->epoch, threshold, scale};
    sl__at_dropout(src + r * values, dst + r * values, i - r * values, &d);
}

/* Decision i of a batch: row i / nrules by rule i % nrules. */
SL_HD void sl__at_decide_rows(const int64_t *ids, const sl_device_batch *batch, const sl_device_rules *rules,
                              int32_t *table, int stride, int64_t i)
{
    int64_t r = i / rules->nrules;
    const sl_decide_rule *rule = &rules->rules[i - r * rules->nrules];
    sl__decide(rule, ids[r], batch->epoch, table + r * stride + rule->first);
}

/* Step i of a batch's row table: row i / row_steps by rule i % row_steps. */
SL_HD void sl__at_step_rows(const int64_t *ids, const sl_device_batch *batch, const sl_step_rule *rules,
                            sl_ew_step *table, int row_steps, int64_t i)
{
    int64_t r = i / row_steps;
    sl__step_for(&rules[i - r * row_steps], ids[r], batch->epoch, &table[i]);
}

SL_HD void sl__at_trig_rounds(const float *src, float *dst, int64_t i, int rounds)
{
    double y = src[i];
    for (int k = 0; k < rounds; k++) {
        double s, c;
        sl_det_sincos_turns(y * (1.0 / SL_DET_TWO_PI), &s, &c);
        y = s + c;
    }
    dst[i] = (float)y;
}

/* Partial sum `lane` of row r's values in the moments' order: the first
 * pass sums x, the second (centre given) the squared deviations. */
SL_HD double sl__at_moment_lane(const float *x, int64_t values, int lane, bool squares, double centre)
{
    double sum = 0.0;
    for (int64_t j = lane; j < values; j += SL_MOMENT_LANES) {
        double v = (double)x[j];
        if (squares) {
            double centred = v - centre;
            sum += centred * centred;
        } else {
            sum += v;
        }
    }
    return sum;
}

/* Row r's mean and variance, one thread: what sl_moments_fn computes. */
SL_HD void sl__at_moments_row(const float *src, int64_t r, int64_t values, double *mean, double *var)
{
    const float *x = src + r * values;
    double lanes[SL_MOMENT_LANES];
    for (int l = 0; l < SL_MOMENT_LANES; l++)
        lanes[l] = sl__at_moment_lane(x, values, l, false, 0.0);
    double m = sl__moment_lanes_sum(lanes) / (double)values;
    for (int l = 0; l < SL_MOMENT_LANES; l++)
        lanes[l] = sl__at_moment_lane(x, values, l, true, m);
    mean[r] = m;
    var[r] = sl__moment_lanes_sum(lanes) / (double)values;
}

/* Value i of a batch of zscored rows, from each row's moments. */
SL_HD void sl__at_zscore_apply(const float *src, float *dst, int64_t i, int64_t values, const double *mean,
                               const double *var)
{
    int64_t r = i / values;
    float a, b;
    sl__body_zscore_constants(mean[r], var[r], &a, &b);
    dst[i] = sl__body_normalize(src[i], a, b);
}

/* pad_tokens of row r: the tokens before the first end token (all when it
 * has none), at most length - 1, then the end token, then pads. */
SL_HD void sl__at_pad_tokens_row(const int32_t *src, int32_t *dst, int64_t r, int64_t capacity, int64_t length,
                                 int32_t end_id, int32_t pad_id)
{
    const int32_t *in = src + r * capacity;
    int32_t *out = dst + r * length;
    int64_t content = 0;
    while (content < capacity && in[content] != end_id)
        content++;
    int64_t keep = content < length - 1 ? content : length - 1;
    for (int64_t t = 0; t < length; t++)
        out[t] = sl__body_pack_token(in, keep, t, pad_id);
    out[keep] = end_id;
}

/* Column j of bag_offsets: the running count down the rows, one thread. */
SL_HD void sl__at_bag_offsets_column(const int64_t *ids, int64_t *ends, int64_t rows, int columns, int j)
{
    int64_t count = 0;
    for (int64_t r = 0; r < rows; r++) {
        count += ids[r * columns + j] >= 0;
        ends[r * columns + j] = count;
    }
}

SL_HD void sl__at_pad_rows_dyn(int32_t *dst, const int32_t *src, const int32_t *lengths, int64_t i, int64_t stride,
                               const int64_t *width, int32_t pad)
{
    sl__at_pad_rows(dst, src, lengths, i, stride, *width, pad);
}

SL_HD void sl__at_length_mask_dyn(uint8_t *mask, const int32_t *lengths, int64_t i, const int64_t *width)
{
    sl__at_length_mask(mask, lengths, i, *width);
}

/* Byte i of rows of row_bytes: gathered, scattered, or selected per row. */
SL_HD void sl__at_gather_rows(uint8_t *dst, const uint8_t *src, int64_t i, size_t row_bytes, const int64_t *index)
{
    int64_t r = i / (int64_t)row_bytes, b = i % (int64_t)row_bytes;
    dst[i] = src[index[r] * (int64_t)row_bytes + b];
}

SL_HD void sl__at_pack_rows(int32_t *dst, const int32_t *tokens, int64_t i, int64_t seq_len, int64_t stream_tokens,
                            const int64_t *ids, int32_t pad)
{
    int64_t r = i / seq_len, first = ids[r] * seq_len;
    int64_t available = stream_tokens - first < seq_len ? stream_tokens - first : seq_len;
    dst[i] = sl__body_pack_token(tokens + first, available, i - r * seq_len, pad);
}

SL_HD void sl__at_scatter_rows(uint8_t *dst, const uint8_t *src, int64_t i, size_t row_bytes, const int64_t *index)
{
    int64_t r = i / (int64_t)row_bytes, b = i % (int64_t)row_bytes;
    dst[index[r] * (int64_t)row_bytes + b] = src[i];
}

SL_HD void sl__at_select_rows(uint8_t *dst, const uint8_t *a, const uint8_t *b, int64_t i, size_t row_bytes,
                              sl_device_rows_i32 take_a)
{
    dst[i] = sl__at_decision(take_a, i / (int64_t)row_bytes, 0) ? a[i] : b[i];
}

/* MixUp's value i: the row's own value and its partner's, weighted by
 * w[0] and w[1] (the blend body: two products, one sum). */
SL_HD void sl__at_mix_rows(float *dst, const float *src, int64_t i, int64_t values, const int64_t *partner,
                           const float *w)
{
    int64_t r = i / values;
    dst[i] = sl__body_blend(src[i], src[partner[r] * values + (i - r * values)], w[0], w[1]);
}

/* CutMix's byte i: inside the box [box[0], box[1]) x [box[2], box[3]) from
 * the partner's row, else the row's own (the box is one per batch). */
SL_HD void sl__at_paste_rows(uint8_t *dst, const uint8_t *src, int64_t i, int h, int w, size_t pixel_bytes,
                             const int64_t *partner, const float *box)
{
    int64_t image = (int64_t)h * w * (int64_t)pixel_bytes, r = i / image, j = i - r * image;
    int64_t p = j / (int64_t)pixel_bytes;
    int y = (int)(p / w), x = (int)(p % w);
    bool inside = y >= (int)box[0] && y < (int)box[1] && x >= (int)box[2] && x < (int)box[3];
    dst[i] = inside ? src[partner[r] * image + j] : src[i];
}

/* ---- Log-mel (around the device's two matrix products) ----------------- */

/* Value i of the framed waveforms: frame t of row r is its samples from
 * t * hop, frame long (the rows' frames stacked, rows * frames of them). */
SL_HD void sl__at_frame(const float *wave, float *framed, int64_t i, int64_t samples, int frames, int frame, int hop)
{
    int64_t f = i / frame, s = i % frame;
    int64_t r = f / frames, t = f % frames;
    framed[i] = wave[r * samples + t * hop + s];
}

/* Power of bin j of spectrum row f (its bins real parts, then imaginary). */
SL_HD void sl__at_power(const float *spectrum, float *power, int64_t i, int bins)
{
    int64_t f = i / bins, j = i % bins;
    const float *re = spectrum + f * 2 * bins;
    power[i] = re[j] * re[j] + re[bins + j] * re[bins + j];
}

/* Whisper's log of value i, before the loudness floor. */
SL_HD void sl__at_log10_floor(float *x, int64_t i)
{
    float v = x[i] > 1e-10f ? x[i] : 1e-10f;
    x[i] = sl_det_log10f(v);
}

/* Row r's loudest value (one thread: a maximum is the same in any order). */
SL_HD void sl__at_loudest_row(const float *x, float *loudest, int64_t r, int64_t values)
{
    float m = -100.0f;
    for (int64_t j = 0; j < values; j++)
        m = x[r * values + j] > m ? x[r * values + j] : m;
    loudest[r] = m;
}

SL_HD void sl__at_log_mel_scale(float *x, int64_t i, int64_t values, const float *loudest)
{
    float floor = loudest[i / values] - 8.0f;
    x[i] = ((x[i] > floor ? x[i] : floor) + 4.0f) * 0.25f;
}

#ifdef __cplusplus
}
#endif

#endif

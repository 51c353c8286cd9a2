/* The reference back end's entry points and the one definition of each
 * element-wise step, shared by every CPU back end so that none can drift. */
#ifndef SLUICE_KERNELS_REF_H
#define SLUICE_KERNELS_REF_H

#include <string.h>

#include "kernels/bodies.h"
#include "kernels/normal.h"
#include "sluice/core/detmath.h"
#include "sluice/core/philox.h"
#include "sluice/kernels/kernels.h"

void sl__ref_normalize_u8(const uint8_t *src, float *dst, int64_t pixels, const sl_normalize_consts *k);
void sl__ref_normalize_f32(const float *src, float *dst, int64_t pixels, const sl_normalize_consts *k);
void sl__ref_ew_chain(float *x, int64_t n, const sl_ew_step *steps, int nsteps);
void sl__ref_crop_pad(const void *src, void *dst, int h, int w, size_t pixel_bytes, int crop_h, int crop_w, int off_y,
                      int off_x);
void sl__ref_hflip(void *image, int h, int w, size_t pixel_bytes);
void sl__ref_pack(int32_t *dst, const int32_t *src, int64_t available, int64_t seq_len, int32_t pad);
void sl__ref_moments(const float *x, int64_t n, double *mean, double *var);
void sl__ref_channel_moments(const float *x, int64_t pixels, int channels, double *mean, double *m2);
void sl__ref_crop3d(const void *src, void *dst, int d, int h, int w, size_t voxel_bytes, int pd, int ph, int pw, int oz,
                    int oy, int ox);
void sl__ref_flip3d(void *volume, int d, int h, int w, size_t voxel_bytes, unsigned axes);
void sl__ref_one_hot(const int32_t *labels, float *out, int64_t count, int32_t classes);
void sl__ref_blend(float *dst, const float *a, const float *b, int64_t n, float wa, float wb);
void sl__ref_rot90(const void *src, void *dst, int side, size_t pixel_bytes, int k);
void sl__ref_permute_strided(const sl_permutation *perm, uint64_t first, uint64_t stride, int64_t count, int64_t *out);
void sl__ref_paste_box(void *dst, const void *src, int h, int w, size_t pixel_bytes, int y0, int y1, int x0, int x1);
void sl__ref_affine_f32(const float *src, float *dst, int64_t pixels, const sl_affine_consts *k);
void sl__ref_dropout(const float *src, float *dst, int64_t n, const sl_dropout_key *d);
/* Values [first, n) of sl_dropout_fn: the tail an optimized kernel leaves. */
void sl__ref_dropout_from(const float *src, float *dst, int64_t first, int64_t n, const sl_dropout_key *d);
void sl__ref_mul_channels(const float *src, float *dst, int64_t pixels, int channels, const float *s);
void sl__ref_affine_grads(const float *x, const float *dy, int64_t pixels, int channels, double *dscale, double *dbias);

/* The number of partial sums of sl_moments_fn, and the one order in which
 * they are combined: a balanced tree, the same for every back end. */
/* SL_MOMENT_LANES and sl__moment_lanes_sum are in kernels/bodies.h. */
void sl__ref_resize_u8(const uint8_t *src, int64_t stride, float *dst, const sl_resize_plan *plan, float *scratch);
void sl__ref_resize_f32(const float *src, int64_t stride, float *dst, const sl_resize_plan *plan, float *scratch);
void sl__ref_log_mel(const float *wave, float *out, const sl_melspec_consts *k, float *scratch);
void sl__ref_trig_rounds(const float *in, float *out, int64_t n, int rounds);
void sl__ref_log1p(const float *src, float *dst, int64_t n);
void sl__ref_hash_ids(const int64_t *src, int64_t *dst, int64_t rows, const sl_hash_consts *k);
void sl__ref_bag_offsets(const int64_t *ids, int64_t *ends, int64_t rows, int columns);
void sl__ref_pad_rows(int32_t *tokens, const int32_t *lengths, int64_t rows, int64_t stride, int64_t width,
                      int32_t pad);
void sl__ref_length_mask(uint8_t *mask, const int32_t *lengths, int64_t rows, int64_t width);

/* The log-mel steps every back end shares; only the two matrix products
 * differ between back ends. A product is row-major and dense:
 * c (m x n) = a (m x kk) times b (kk x n). */
typedef void (*sl__sgemm_fn)(int m, int n, int kk, const float *a, const float *b, float *c);

static inline void sl__log_mel_with(const float *wave, float *out, const sl_melspec_consts *k, float *scratch,
                                    sl__sgemm_fn gemm)
{
    const int frames = k->frames, bins = k->bins;
    float *framed = scratch;
    float *spectrum = framed + (size_t)frames * (size_t)k->frame;
    float *power = spectrum + (size_t)frames * 2 * (size_t)bins;
    /* Overlapping frames cannot be one strided operand (a BLAS wants a
     * leading dimension of at least the frame), so they are copied out. */
    for (int t = 0; t < frames; t++)
        memcpy(framed + (size_t)t * (size_t)k->frame, wave + (size_t)t * (size_t)k->hop,
               (size_t)k->frame * sizeof(float));
    gemm(frames, 2 * bins, k->frame, framed, k->dft, spectrum);
    for (int t = 0; t < frames; t++) {
        const float *re = spectrum + (size_t)t * 2 * (size_t)bins, *im = re + bins;
        float *p = power + (size_t)t * (size_t)bins;
        for (int j = 0; j < bins; j++)
            p[j] = re[j] * re[j] + im[j] * im[j];
    }
    gemm(frames, k->mels, bins, power, k->filters, out);
    /* Whisper's log: log10 of the energy floored at 1e-10, at most 8 decades
     * below the element's loudest value, scaled to about [-1, 1]. The
     * comparisons send a NaN to the floor, the same way everywhere. */
    const size_t n = (size_t)frames * (size_t)k->mels;
    float loudest = -100.0f;
    for (size_t i = 0; i < n; i++) {
        float v = out[i] > 1e-10f ? out[i] : 1e-10f;
        out[i] = sl_det_log10f(v);
        loudest = out[i] > loudest ? out[i] : loudest;
    }
    const float floor = loudest - 8.0f;
    for (size_t i = 0; i < n; i++)
        out[i] = ((out[i] > floor ? out[i] : floor) + 4.0f) * 0.25f;
}

/* sl__log1p_f32, sl__id_hash, sl__ew_apply and the other per-value bodies
 * are in kernels/include/kernels/bodies.h, shared with the CUDA kernels. */

/* gaussian_noise's per-value helpers (sl__noise_apply, sl__noise_block,
 * SL_NOISE_BLOCKS, SL_NOISE_GROUP) are in kernels/include/kernels/bodies.h. */

#endif

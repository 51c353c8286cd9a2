/* The per-value and per-index bodies of the kernels, written once for every
 * back end.
 *
 * Each function here is one op's arithmetic on one value (or one index
 * mapping of a data-movement op). Under nvcc SL_HD makes it a
 * __host__ __device__ function, so a CUDA kernel calls exactly the code the
 * reference kernels (kernels/ref) and the optimized CPU kernels call; in a C
 * compiler it is a plain static inline function, so the CPU kernels compile
 * to what they did before. With no contraction anywhere (-ffp-contract=off
 * for C, -fmad=false for nvcc) and correctly rounded + - * / and sqrt on both
 * sides, one body gives the same bits on the CPU and on the GPU
 * (docs/determinism.md). tests/unit/test_cuda_bodies.c runs these bodies
 * against the reference kernels on every machine, GPU or not.
 *
 * Plain C11 and C++ (nvcc) alike: no designated initializers, no libm. */
#ifndef SLUICE_KERNELS_CUDA_BODIES_H
#define SLUICE_KERNELS_CUDA_BODIES_H

#include <stdint.h>
#include <string.h>

#include "kernels/normal.h"
#include "sluice/core/philox.h"
#include "sluice/kernels/kernels.h"

/* Host-and-device inline: philox.h's macro, so there is one definition. */
#define SL_HD SL_HOSTDEV

#ifdef __cplusplus
extern "C" {
#endif

/* A float's bits and back. Device code has intrinsics for it; host code a
 * memcpy, which compilers turn into a register move. */
SL_HD uint32_t sl__f32_bits(float f)
{
#if defined(__CUDA_ARCH__)
    return __float_as_uint(f);
#else
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
#endif
}

SL_HD float sl__f32_from_bits(uint32_t u)
{
#if defined(__CUDA_ARCH__)
    return __uint_as_float(u);
#else
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
#endif
}

#define SL__F32_INF_BITS 0x7f800000u
#define SL__F32_NAN_BITS 0x7fc00000u

/* ---- Element-wise arithmetic ------------------------------------------ */

/* normalize: (x - mean) * (1 / std), a difference and a product, each
 * rounded. u8 input converts exactly to float first. */
SL_HD float sl__body_normalize(float v, float mean, float inv_std)
{
    return (v - mean) * inv_std;
}

/* scale and multiply: one product. */
SL_HD float sl__body_multiply(float v, float a)
{
    return v * a;
}

SL_HD float sl__body_add(float v, float a)
{
    return v + a;
}

/* clip as comparisons rather than fminf/fmaxf, so that NaN handling is the
 * same in every back end: a NaN fails both comparisons and passes through. */
SL_HD float sl__body_clip(float v, float lo, float hi)
{
    return v < lo ? lo : (v > hi ? hi : v);
}

/* affine: a product and a sum, each rounded (never fused). */
SL_HD float sl__body_affine(float v, float scale, float bias)
{
    return v * scale + bias;
}

/* mixup's blend: two products and one sum, each rounded. */
SL_HD float sl__body_blend(float a, float b, float wa, float wb)
{
    return a * wa + b * wb;
}

/* dropout of one value given its Philox word: an integer comparison, then
 * zero or one product. */
SL_HD float sl__body_dropout(float v, uint32_t word, uint32_t threshold, float scale)
{
    return word < threshold ? 0.0f : v * scale;
}

/* The Philox word that decides value i of a dropout element: word i mod 4 of
 * the block with counter (element, epoch, i / 4). The reference computes a
 * block once per four values; a GPU thread computes its own. */
SL_HD uint32_t sl__dropout_word(const sl_dropout_key *d, int64_t i)
{
    sl_philox_ctr r = sl_philox4x32_10(sl_philox_ctr_for(d->element, d->epoch, (uint32_t)(i / 4)), d->key);
    return r.v[i % 4];
}

/* The chain's arithmetic steps (SL_EW_ARITHMETIC in sluice/kernels/kernels.h), each
 * one body on (v, a, b). */
SL_HD float sl__step_normalize(float v, float a, float b)
{
    return sl__body_normalize(v, a, b);
}

SL_HD float sl__step_multiply(float v, float a, float b)
{
    (void)b;
    return sl__body_multiply(v, a);
}

SL_HD float sl__step_add(float v, float a, float b)
{
    (void)b;
    return sl__body_add(v, a);
}

SL_HD float sl__step_clip(float v, float a, float b)
{
    return sl__body_clip(v, a, b);
}

/* One arithmetic step of an element-wise chain applied to one value
 * (gaussian_noise is the chain's own loop: it needs the value's index). */
SL_HD float sl__ew_apply(const sl_ew_step *step, float v)
{
    switch (step->kind) {
#define SL__EW_APPLY(NAME, name)                                                                                       \
    case SL_EW_##NAME: return sl__step_##name(v, step->a, step->b);
        SL_EW_ARITHMETIC(SL__EW_APPLY)
#undef SL__EW_APPLY
    default: return v;
    }
}

/* gaussian_noise on one value: v + sigma z, z the normal variate of the
 * value's word rounded to float (kernels/include/kernels/normal.h, libm-free), then one
 * product and one sum in float. */
SL_HD float sl__noise_apply(float v, float sigma, uint32_t word)
{
    return v + sigma * sl__normal_f32(word);
}

/* Where gaussian_noise's values find their words: in groups of 64, value
 * i = 64 g + 16 k + j (k < 4, j < 16) takes word k of Philox block
 * 16 g + j of its element. Sixteen blocks side by side then give their
 * words in value order, word by word, which is how a vector unit computes
 * them (kernels/cpu/noise.h): no transposition. */
#define SL_NOISE_BLOCKS 16
#define SL_NOISE_GROUP  (4 * SL_NOISE_BLOCKS)

/* Block `draw` (counted from the element's first) of a gaussian_noise
 * step. */
SL_HD sl_philox_ctr sl__noise_block(const sl_ew_step *step, uint32_t draw)
{
    sl_philox_ctr c = step->ctr;
    c.v[3] += draw;
    return sl_philox4x32_10(c, step->key);
}

/* gaussian_noise on value i of an element by itself: its block and word
 * found from i, as a GPU thread computes it (the CPU kernels compute each
 * block once for four values). */
SL_HD float sl__noise_value(const sl_ew_step *step, float v, int64_t i)
{
    uint32_t draw = (uint32_t)(i / SL_NOISE_GROUP * SL_NOISE_BLOCKS + i % SL_NOISE_BLOCKS);
    sl_philox_ctr block = sl__noise_block(step, draw);
    return sl__noise_apply(v, step->a, block.v[i % SL_NOISE_GROUP / SL_NOISE_BLOCKS]);
}

/* Bilinear interpolation of one output value from its four source values,
 * in the order sl_resize_plan fixes (kernels.h). */
SL_HD float sl__body_bilinear(float p00, float p01, float p10, float p11, float wx, float wy)
{
    float top = p00 + wx * (p01 - p00);
    float bot = p10 + wx * (p11 - p10);
    return top + wy * (bot - top);
}

/* ---- Reductions -------------------------------------------------------- */

/* The moments' fixed order (sl_moments_fn): value i into partial sum
 * i mod SL_MOMENT_LANES, each partial in index order, the partials added in
 * one fixed tree. */
#define SL_MOMENT_LANES 8
SL_HD double sl__moment_lanes_sum(const double p[SL_MOMENT_LANES])
{
    return ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]));
}

/* zscore's normalize constants from an element's mean and population
 * variance: (float)mean and (float)(1 / sd), or 1 for a constant element
 * (sd 0), which then becomes zeros rather than NaN, as MONAI does. sqrt
 * and the division are correctly rounded on every back end. */
SL_HD void sl__body_zscore_constants(double mean, double var, float *a, float *b)
{
#if defined(__CUDA_ARCH__)
    double sd = sqrt(var);
#else
    double sd = __builtin_sqrt(var);
#endif
    *a = (float)mean;
    *b = sd > 0.0 ? (float)(1.0 / sd) : 1.0f;
}

/* ---- Resampling --------------------------------------------------------- */

/* One axis of a bilinear resize (sl_resize_plan_init): for output index d
 * of `out`, the source position is the rational ((2d + 1) in - out) /
 * (2 out) in 64-bit integers, clamped to [0, in - 1]; its integer part is
 * i0 and its fraction, rounded to float by one correctly rounded division
 * of two integers exact in float, is the weight of i1. */
SL_HD void sl__body_resize_axis(int d, int in, int out, int32_t *i0, int32_t *i1, float *w)
{
    int64_t den = 2 * (int64_t)out;
    int64_t num = (2 * (int64_t)d + 1) * in - out;
    int64_t whole = num < 0 ? 0 : num / den;
    int64_t frac = num < 0 ? 0 : num % den;
    if (whole >= in - 1) {
        whole = in - 1;
        frac = 0;
    }
    *i0 = (int32_t)whole;
    *i1 = (int32_t)(whole + 1 < in ? whole + 1 : whole);
    *w = (float)frac / (float)den;
}

/* ---- log1p ------------------------------------------------------------- */

/* cond ? a : b, as a bit blend of two values both already computed. Written
 * with a ternary, GCC sinks each operand's arithmetic into its own branch
 * and then, since float operations may trap, will not vectorize the loop. */
SL_HD float sl__f32_blend(int32_t cond, float a, float b)
{
    uint32_t mask = (uint32_t)-cond;
    return sl__f32_from_bits((sl__f32_bits(a) & mask) | (sl__f32_bits(b) & ~mask));
}

/* log(1 + x) in binary32 with correctly rounded operations only, after
 * FreeBSD's e_logf.c and s_log1pf.c (fdlibm). 1 + x = 2^k m with m in
 * [sqrt(2)/2, sqrt(2)); f = m - 1, s = f / (2 + f), and
 * log(1 + f) = f - f^2/2 + s (f^2/2 + R(s^2)) with e_logf's minimax R.
 * The rounding error of 1 + x is recovered exactly (TwoSum) and added back
 * as c / (1 + x). Near zero (x in [sqrt(2)/2 - 1, sqrt(2) - 1)) f is x
 * itself. Every branch is a select, so a vectorizing compiler runs the same
 * operations in lanes, and no instance contracts them: every back end agrees
 * bit for bit. Measured over every float in (-1, inf) (ci/log1p-ulp.sh): at
 * most 0.835 ulp from the exact value (test_kernels_sparse_text holds a
 * sample and the worst cases to it).
 * On the GPU the division must be IEEE (nvcc's default -prec-div=true). */
SL_HD float sl__log1p_f32(float x)
{
    float u = 1.0f + x;
    uint32_t bits = sl__f32_bits(u);
    int32_t k = (int32_t)(bits >> 23) - 127;
    uint32_t mant = bits & 0x7fffffu;
    int32_t halve = mant >= 0x3504f4u; /* m >= sqrt(2): take m / 2 and k + 1 */
    float m = sl__f32_from_bits(mant | (halve ? 0x3f000000u : 0x3f800000u));
    k += halve;
    /* The rounding error of 1 + x, exactly, by Knuth's TwoSum (no ordering
     * of the operands needed, so no branch). */
    float x_part = u - 1.0f;
    float c_far = ((1.0f - (u - x_part)) + (x - x_part)) / u;
    int32_t near = (x < 0x1.a827a0p-2f) & (x >= -0x1.2bec32p-2f);
    float dk = (float)(k & (near - 1)); /* k, or 0 near zero */
    float f = sl__f32_blend(near, x, m - 1.0f);
    float c = sl__f32_blend(near, 0.0f, c_far);
    float hfsq = 0.5f * f * f;
    float s = f / (2.0f + f);
    float z = s * s, w = z * z;
    float t1 = w * (0x1.999c26p-2f + w * 0x1.f13c4cp-3f);
    float t2 = z * (0x1.555554p-1f + w * 0x1.23d3dcp-2f);
    float r = dk * 0x1.62e300p-1f - ((hfsq - (s * (hfsq + (t2 + t1)) + (dk * 0x1.2fefa2p-17f + c))) - f);
    /* Zeros keep their sign; then infinity, -1, the outside of the domain
     * and NaN. */
    const float inf = sl__f32_from_bits(SL__F32_INF_BITS);
    r = sl__f32_blend(x == 0.0f, x, r);
    r = sl__f32_blend(x == inf, x, r);
    r = sl__f32_blend(x == -1.0f, -inf, r);
    r = sl__f32_blend(x < -1.0f, sl__f32_from_bits(SL__F32_NAN_BITS), r);
    return sl__f32_blend(x != x, x, r);
}

/* ---- Integer ops ------------------------------------------------------- */

/* The 32-bit hash of a raw id that hash_ids reduces modulo a table size. */
SL_HD uint32_t sl__id_hash(int64_t id)
{
    return (uint32_t)(sl_mix64((uint64_t)id) >> 32);
}

/* hash_ids of one id: a missing (negative) id stays SL_ID_MISSING. */
SL_HD int64_t sl__body_hash_id(int64_t id, uint32_t size)
{
    return id < 0 ? SL_ID_MISSING : (int64_t)(sl__id_hash(id) % size);
}

/* one_hot: value k of a label's row. */
SL_HD float sl__body_one_hot(int32_t label, int32_t k)
{
    return label == k ? 1.0f : 0.0f;
}

/* A sequence's length clamped to [0, width]: the tokens pad_rows keeps and
 * the ones attention_mask marks. */
SL_HD int64_t sl__body_clamped_length(int32_t length, int64_t width)
{
    return length < 0 ? 0 : (length > width ? width : length);
}

/* ---- Index mappings of the data-movement ops --------------------------- */

/* Token packing: token i of a sequence, from the stream while it lasts,
 * then pad. */
SL_HD int32_t sl__body_pack_token(const int32_t *src, int64_t available, int64_t i, int32_t pad)
{
    return i < available ? src[i] : pad;
}

/* random_crop with zero padding back to h x w, centred: the source pixel of
 * output pixel (y, x), or -1 where the output is padding. */
SL_HD int64_t sl__body_crop_pad_src(int y, int x, int h, int w, int crop_h, int crop_w, int off_y, int off_x)
{
    int cy = y - (h - crop_h) / 2, cx = x - (w - crop_w) / 2;
    if (cy < 0 || cy >= crop_h || cx < 0 || cx >= crop_w)
        return -1;
    return (int64_t)(cy + off_y) * w + (cx + off_x);
}

/* The mirror of index i along an axis of n. */
SL_HD int sl__body_mirror(int i, int n)
{
    return n - 1 - i;
}

/* flip3d: the voxel that voxel (z, y, x) swaps with. */
SL_HD int64_t sl__body_flip3d_src(int z, int y, int x, int d, int h, int w, unsigned axes)
{
    int mz = axes & SL_AXIS_D ? sl__body_mirror(z, d) : z;
    int my = axes & SL_AXIS_H ? sl__body_mirror(y, h) : y;
    int mx = axes & SL_AXIS_W ? sl__body_mirror(x, w) : x;
    return ((int64_t)mz * h + my) * w + mx;
}

/* crop3d: the source voxel of patch voxel (z, y, x). */
SL_HD int64_t sl__body_crop3d_src(int z, int y, int x, int h, int w, int oz, int oy, int ox)
{
    return ((int64_t)(z + oz) * h + (y + oy)) * w + (x + ox);
}

/* rot90 by k quarter turns, as numpy.rot90: the source pixel of output
 * pixel (y, x) of a side x side image. */
SL_HD int64_t sl__body_rot90_src(int y, int x, int n, int k)
{
    int sy, sx;
    switch (k & 3) {
    case 0: sy = y, sx = x; break;
    case 1: sy = x, sx = n - 1 - y; break;
    case 2: sy = n - 1 - y, sx = n - 1 - x; break;
    default: sy = n - 1 - x, sx = y; break;
    }
    return (int64_t)sy * n + sx;
}

#ifdef __cplusplus
}
#endif

#endif

/* Optimized arithmetic kernels. Normalization reads the constants tiled to
 * their period (sl_normalize_consts), so the inner loop has no modulo and
 * vectorizes; the value computed for each element is the reference's
 * ((float)x - mean[c]) * inv_std[c]. */
#include "cpu.h"

SL_ALWAYS_INLINE void normalize_u8_body(const uint8_t *restrict src, float *restrict dst, int64_t pixels,
                                        const sl_normalize_consts *k)
{
    const float *restrict m = k->mean_tiled;
    const float *restrict s = k->inv_std_tiled;
    const int period = k->period;
    int64_t n = pixels * k->channels, i = 0;
    for (; i + period <= n; i += period)
        for (int j = 0; j < period; j++)
            dst[i + j] = ((float)src[i + j] - m[j]) * s[j];
    for (int j = 0; i + j < n; j++)
        dst[i + j] = ((float)src[i + j] - m[j]) * s[j];
}

/* src may equal dst, so no restrict on them: each element is read before it
 * is written at the same index, which aliasing cannot break. */
SL_ALWAYS_INLINE void normalize_f32_body(const float *src, float *dst, int64_t pixels, const sl_normalize_consts *k)
{
    const float *restrict m = k->mean_tiled;
    const float *restrict s = k->inv_std_tiled;
    const int period = k->period;
    int64_t n = pixels * k->channels, i = 0;
    for (; i + period <= n; i += period)
        for (int j = 0; j < period; j++)
            dst[i + j] = (src[i + j] - m[j]) * s[j];
    for (int j = 0; i + j < n; j++)
        dst[i + j] = (src[i + j] - m[j]) * s[j];
}

/* Tiles small enough that a tile and its steps stay in L1 while a long chain
 * runs over it. */
#define EW_TILE 2048

SL_ALWAYS_INLINE void ew_run_step(float *restrict x, int64_t n, const sl_ew_step *step)
{
    const float a = step->a, b = step->b;
    switch (step->kind) {
    case SL_OP_NORMALIZE:
        for (int64_t i = 0; i < n; i++)
            x[i] = (x[i] - a) * b;
        break;
    case SL_OP_SCALE:
    case SL_OP_MULTIPLY:
        for (int64_t i = 0; i < n; i++)
            x[i] = x[i] * a;
        break;
    case SL_OP_ADD:
        for (int64_t i = 0; i < n; i++)
            x[i] = x[i] + a;
        break;
    case SL_OP_CLIP:
        for (int64_t i = 0; i < n; i++)
            x[i] = x[i] < a ? a : (x[i] > b ? b : x[i]);
        break;
    default:
        break;
    }
}

SL_ALWAYS_INLINE void ew_chain_body(float *x, int64_t n, const sl_ew_step *steps, int nsteps)
{
    for (int64_t start = 0; start < n; start += EW_TILE) {
        int64_t len = n - start < EW_TILE ? n - start : EW_TILE;
        for (int s = 0; s < nsteps; s++)
            ew_run_step(x + start, len, &steps[s]);
    }
}

static void normalize_u8_generic(const uint8_t *src, float *dst, int64_t pixels, const sl_normalize_consts *k)
{
    normalize_u8_body(src, dst, pixels, k);
}

static void normalize_f32_generic(const float *src, float *dst, int64_t pixels, const sl_normalize_consts *k)
{
    normalize_f32_body(src, dst, pixels, k);
}

static void ew_chain_generic(float *x, int64_t n, const sl_ew_step *steps, int nsteps)
{
    ew_chain_body(x, n, steps, nsteps);
}

void sl__cpu_arith_generic(sl_cpu_variant *out)
{
    out->normalize_u8 = normalize_u8_generic;
    out->normalize_f32 = normalize_f32_generic;
    out->ew_chain = ew_chain_generic;
}

#if SL_HAVE_AVX2_CLONES
SL_TARGET_AVX2 static void normalize_u8_avx2(const uint8_t *src, float *dst, int64_t pixels, const sl_normalize_consts *k)
{
    normalize_u8_body(src, dst, pixels, k);
}

SL_TARGET_AVX2 static void normalize_f32_avx2(const float *src, float *dst, int64_t pixels, const sl_normalize_consts *k)
{
    normalize_f32_body(src, dst, pixels, k);
}

SL_TARGET_AVX2 static void ew_chain_avx2(float *x, int64_t n, const sl_ew_step *steps, int nsteps)
{
    ew_chain_body(x, n, steps, nsteps);
}

void sl__cpu_arith_avx2(sl_cpu_variant *out)
{
    out->normalize_u8 = normalize_u8_avx2;
    out->normalize_f32 = normalize_f32_avx2;
    out->ew_chain = ew_chain_avx2;
}
#else
void sl__cpu_arith_avx2(sl_cpu_variant *out)
{
    sl__cpu_arith_generic(out);
}
#endif

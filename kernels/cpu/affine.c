/* Optimized per-channel affine. Like normalize, it reads its constants
 * tiled to their period (sl_affine_consts), so the inner loop has no modulo
 * and vectorizes; each value is the reference's src * scale[c] + bias[c],
 * the product rounded before the sum (the build forbids contraction). */
#include "cpu/cpu.h"

/* src may equal dst: each value is read before it is written at the same
 * index, so no restrict on them. */
SL_ALWAYS_INLINE void affine_f32_body(const float *src, float *dst, int64_t pixels, const sl_affine_consts *k)
{
    const float *restrict s = k->scale_tiled;
    const float *restrict b = k->bias_tiled;
    const int period = k->period;
    int64_t n = pixels * k->channels, i = 0;
    for (; i + period <= n; i += period)
        for (int j = 0; j < period; j++)
            dst[i + j] = src[i + j] * s[j] + b[j];
    for (int j = 0; i + j < n; j++)
        dst[i + j] = src[i + j] * s[j] + b[j];
}

#if SL_CPU_FIRST_BUILD
static void affine_f32_generic(const float *src, float *dst, int64_t pixels, const sl_affine_consts *k)
{
    affine_f32_body(src, dst, pixels, k);
}

void sl__cpu_affine_generic(sl_cpu_variant *out)
{
    out->affine_f32 = affine_f32_generic;
}
#endif

#if SL_HAVE_AVX2_CLONES
#if SL_CPU_FIRST_BUILD
SL_TARGET_AVX2 static void affine_f32_avx2(const float *src, float *dst, int64_t pixels, const sl_affine_consts *k)
{
    affine_f32_body(src, dst, pixels, k);
}

void sl__cpu_affine_avx2(sl_cpu_variant *out)
{
    out->affine_f32 = affine_f32_avx2;
}
#endif

SL_TARGET_AVX512 static void affine_f32_avx512(const float *src, float *dst, int64_t pixels, const sl_affine_consts *k)
{
    affine_f32_body(src, dst, pixels, k);
}

void sl__cpu_affine_avx512(sl_cpu_variant *out)
{
    out->affine_f32 = affine_f32_avx512;
}
#else
void sl__cpu_affine_avx2(sl_cpu_variant *out)
{
    sl__cpu_affine_generic(out);
}

void sl__cpu_affine_avx512(sl_cpu_variant *out)
{
    sl__cpu_affine_generic(out);
}
#endif

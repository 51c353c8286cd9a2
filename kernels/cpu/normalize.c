/* Optimized normalization. It reads the constants tiled to
 * their period (sl_normalize_consts), so the inner loop has no modulo and
 * vectorizes; the value computed for each element is the reference's
 * ((float)x - mean[c]) * inv_std[c]. */
#include "cpu/cpu.h"

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

#if SL_CPU_FIRST_BUILD
static void normalize_u8_generic(const uint8_t *src, float *dst, int64_t pixels, const sl_normalize_consts *k)
{
    normalize_u8_body(src, dst, pixels, k);
}

static void normalize_f32_generic(const float *src, float *dst, int64_t pixels, const sl_normalize_consts *k)
{
    normalize_f32_body(src, dst, pixels, k);
}

void sl__cpu_normalize_generic(sl_cpu_variant *out)
{
    out->normalize_u8 = normalize_u8_generic;
    out->normalize_f32 = normalize_f32_generic;
}
#endif

#if SL_HAVE_AVX2_CLONES
#if SL_CPU_FIRST_BUILD
SL_TARGET_AVX2 static void normalize_u8_avx2(const uint8_t *src, float *dst, int64_t pixels,
                                             const sl_normalize_consts *k)
{
    normalize_u8_body(src, dst, pixels, k);
}

SL_TARGET_AVX2 static void normalize_f32_avx2(const float *src, float *dst, int64_t pixels,
                                              const sl_normalize_consts *k)
{
    normalize_f32_body(src, dst, pixels, k);
}

void sl__cpu_normalize_avx2(sl_cpu_variant *out)
{
    out->normalize_u8 = normalize_u8_avx2;
    out->normalize_f32 = normalize_f32_avx2;
}
#endif

SL_TARGET_AVX512 static void normalize_u8_avx512(const uint8_t *src, float *dst, int64_t pixels,
                                                 const sl_normalize_consts *k)
{
    normalize_u8_body(src, dst, pixels, k);
}

SL_TARGET_AVX512 static void normalize_f32_avx512(const float *src, float *dst, int64_t pixels,
                                                  const sl_normalize_consts *k)
{
    normalize_f32_body(src, dst, pixels, k);
}

void sl__cpu_normalize_avx512(sl_cpu_variant *out)
{
    out->normalize_u8 = normalize_u8_avx512;
    out->normalize_f32 = normalize_f32_avx512;
}
#else
void sl__cpu_normalize_avx2(sl_cpu_variant *out)
{
    sl__cpu_normalize_generic(out);
}

void sl__cpu_normalize_avx512(sl_cpu_variant *out)
{
    sl__cpu_normalize_generic(out);
}
#endif

/* Optimized normalization. It reads the constants tiled to
 * their period (sl_normalize_consts), so the inner loop has no modulo and
 * vectorizes; the value computed for each element is the reference's
 * ((float)x - mean[c]) * inv_std[c]. */
#include "cpu/cpu.h"

/* The tiled loop at a period the compiler knows. With `period` a variable
 * the inner loop runs one or two vectors and every pass of the outer loop
 * pays its setup and alias checks again; with a constant period the inner
 * loop unrolls and the outer one becomes one long vector loop. Where the
 * source misses the cache (PC-1 gathers 16 KiB rows from a fixture far
 * larger than it) the short loop also kept fewer loads in flight: the
 * core's window holds fewer rows' worth of a loop with more instructions
 * per byte. Each value is computed exactly as before. */
#define NORMALIZE_TILED(period_value, src_type)                                                                        \
    do {                                                                                                               \
        float mean_local[period_value], inv_std_local[period_value];                                                   \
        for (int j = 0; j < (period_value); j++) {                                                                     \
            mean_local[j] = m[j];                                                                                      \
            inv_std_local[j] = s[j];                                                                                   \
        }                                                                                                              \
        for (; i + (period_value) <= n; i += (period_value))                                                           \
            for (int j = 0; j < (period_value); j++)                                                                   \
                dst[i + j] = ((float)((const src_type *)src)[i + j] - mean_local[j]) * inv_std_local[j];               \
    } while (0)

SL_ALWAYS_INLINE void normalize_u8_body(const uint8_t *restrict src, float *restrict dst, int64_t pixels,
                                        const sl_normalize_consts *k)
{
    const float *restrict m = k->mean_tiled;
    const float *restrict s = k->inv_std_tiled;
    const int period = k->period;
    int64_t n = pixels * k->channels, i = 0;
    /* 16: one to sixteen channels dividing it; 48: RGB. */
    if (period == 16)
        NORMALIZE_TILED(16, uint8_t);
    else if (period == 48)
        NORMALIZE_TILED(48, uint8_t);
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
    if (period == 16)
        NORMALIZE_TILED(16, float);
    else if (period == 48)
        NORMALIZE_TILED(48, float);
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
#include <immintrin.h>

/* u8 input written out by hand. The auto-vectorizer widens bytes to floats
 * in two steps (bytes to 16-bit words, words to 32-bit integers, with
 * extracts between), about 60 instructions a 48-value period; one
 * zero-extending load per vector (vpmovzxbd from memory) takes half as
 * many, and the in-cache transform was most of CV-1's batch (21 of 34 µs).
 * The constants of one period stay in registers. Each value is computed by
 * the same three correctly rounded steps as the reference, convert,
 * subtract, multiply, so the bits are the reference's. Returns how many
 * values it wrote: whole periods of `vectors` vectors of eight. */
SL_TARGET_AVX2 SL_ALWAYS_INLINE int64_t normalize_u8_periods_256(const uint8_t *src, float *dst, int64_t n,
                                                                 const sl_normalize_consts *k, const int vectors)
{
    __m256 mean[6], inv_std[6];
    for (int v = 0; v < vectors; v++) {
        mean[v] = _mm256_loadu_ps(k->mean_tiled + 8 * v);
        inv_std[v] = _mm256_loadu_ps(k->inv_std_tiled + 8 * v);
    }
    const int64_t period = 8 * (int64_t)vectors;
    int64_t i = 0;
    for (; i + period <= n; i += period)
        for (int v = 0; v < vectors; v++) {
            __m128i bytes = _mm_loadl_epi64((const __m128i *)(src + i + 8 * v));
            __m256 x = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes));
            _mm256_storeu_ps(dst + i + 8 * v, _mm256_mul_ps(_mm256_sub_ps(x, mean[v]), inv_std[v]));
        }
    return i;
}

/* The hand-written periods where the period is 16 or 48 (one to sixteen
 * channels dividing 16, or RGB), then the portable body for what is left,
 * which starts on a period boundary. */
SL_TARGET_AVX2 SL_ALWAYS_INLINE void normalize_u8_256(const uint8_t *src, float *dst, int64_t pixels,
                                                      const sl_normalize_consts *k)
{
    int64_t n = pixels * k->channels, done = 0;
    if (k->period == 16)
        done = normalize_u8_periods_256(src, dst, n, k, 2);
    else if (k->period == 48)
        done = normalize_u8_periods_256(src, dst, n, k, 6);
    normalize_u8_body(src + done, dst + done, (n - done) / k->channels, k);
}

#if SL_CPU_FIRST_BUILD
SL_TARGET_AVX2 static void normalize_u8_avx2(const uint8_t *src, float *dst, int64_t pixels,
                                             const sl_normalize_consts *k)
{
    normalize_u8_256(src, dst, pixels, k);
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

#if !SL_CPU_AVX512_256
/* As normalize_u8_periods_256, sixteen values a vector. */
SL_TARGET_AVX512 SL_ALWAYS_INLINE int64_t normalize_u8_periods_512(const uint8_t *src, float *dst, int64_t n,
                                                                   const sl_normalize_consts *k, const int vectors)
{
    __m512 mean[3], inv_std[3];
    for (int v = 0; v < vectors; v++) {
        mean[v] = _mm512_loadu_ps(k->mean_tiled + 16 * v);
        inv_std[v] = _mm512_loadu_ps(k->inv_std_tiled + 16 * v);
    }
    const int64_t period = 16 * (int64_t)vectors;
    int64_t i = 0;
    for (; i + period <= n; i += period)
        for (int v = 0; v < vectors; v++) {
            __m128i bytes = _mm_loadu_si128((const __m128i *)(src + i + 16 * v));
            __m512 x = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(bytes));
            _mm512_storeu_ps(dst + i + 16 * v, _mm512_mul_ps(_mm512_sub_ps(x, mean[v]), inv_std[v]));
        }
    return i;
}
#endif

/* The cpu-avx512-256 table keeps to 256-bit registers, as its name says. */
SL_TARGET_AVX512 static void normalize_u8_avx512(const uint8_t *src, float *dst, int64_t pixels,
                                                 const sl_normalize_consts *k)
{
#if SL_CPU_AVX512_256
    normalize_u8_256(src, dst, pixels, k);
#else
    int64_t n = pixels * k->channels, done = 0;
    if (k->period == 16)
        done = normalize_u8_periods_512(src, dst, n, k, 1);
    else if (k->period == 48)
        done = normalize_u8_periods_512(src, dst, n, k, 3);
    normalize_u8_body(src + done, dst + done, (n - done) / k->channels, k);
#endif
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

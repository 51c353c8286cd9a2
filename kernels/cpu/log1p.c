/* Optimized log1p: the reference's sl__log1p_f32 in a loop the compiler
 * vectorizes, instantiated for the baseline ISA, AVX2 and AVX-512. Its
 * branches are selects and its operations are correctly rounded in every
 * lane, so each instance returns the reference's bits. */
#include "cpu/cpu.h"

SL_ALWAYS_INLINE void log1p_body(const float *src, float *dst, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        dst[i] = sl__log1p_f32(src[i]);
}

#if SL_CPU_FIRST_BUILD
static void log1p_generic(const float *src, float *dst, int64_t n)
{
    log1p_body(src, dst, n);
}

void sl__cpu_log1p_generic(sl_cpu_variant *out)
{
    out->log1p = log1p_generic;
}
#endif

#if SL_HAVE_AVX2_CLONES
#if SL_CPU_FIRST_BUILD
SL_TARGET_AVX2 static void log1p_avx2(const float *src, float *dst, int64_t n)
{
    log1p_body(src, dst, n);
}

void sl__cpu_log1p_avx2(sl_cpu_variant *out)
{
    out->log1p = log1p_avx2;
}
#endif

SL_TARGET_AVX512 static void log1p_avx512(const float *src, float *dst, int64_t n)
{
    log1p_body(src, dst, n);
}

void sl__cpu_log1p_avx512(sl_cpu_variant *out)
{
    out->log1p = log1p_avx512;
}
#else
void sl__cpu_log1p_avx2(sl_cpu_variant *out)
{
    sl__cpu_log1p_generic(out);
}

void sl__cpu_log1p_avx512(sl_cpu_variant *out)
{
    sl__cpu_log1p_generic(out);
}
#endif

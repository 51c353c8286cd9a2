/* Optimized kernels of the mixing ops. The blend computes the reference's
 * expression, a * wa + b * wb with each step rounded (no contraction), over
 * whole vectors; the box paste copies whole box rows. */
#include <string.h>

#include "cpu/cpu.h"

/* dst may equal a or b: each value is read before it is written at the same
 * index, so no restrict. */
SL_ALWAYS_INLINE void blend_body(float *dst, const float *a, const float *b, int64_t n, float wa, float wb)
{
    for (int64_t i = 0; i < n; i++)
        dst[i] = a[i] * wa + b[i] * wb;
}

#if SL_CPU_FIRST_BUILD
static void blend_generic(float *dst, const float *a, const float *b, int64_t n, float wa, float wb)
{
    blend_body(dst, a, b, n, wa, wb);
}

void sl__cpu_blend_generic(sl_cpu_variant *out)
{
    out->blend = blend_generic;
}
#endif

#if SL_HAVE_AVX2_CLONES
#if SL_CPU_FIRST_BUILD
SL_TARGET_AVX2 static void blend_avx2(float *dst, const float *a, const float *b, int64_t n, float wa, float wb)
{
    blend_body(dst, a, b, n, wa, wb);
}

void sl__cpu_blend_avx2(sl_cpu_variant *out)
{
    out->blend = blend_avx2;
}
#endif

SL_TARGET_AVX512 static void blend_avx512(float *dst, const float *a, const float *b, int64_t n, float wa, float wb)
{
    blend_body(dst, a, b, n, wa, wb);
}

void sl__cpu_blend_avx512(sl_cpu_variant *out)
{
    out->blend = blend_avx512;
}
#else
void sl__cpu_blend_avx2(sl_cpu_variant *out)
{
    sl__cpu_blend_generic(out);
}

void sl__cpu_blend_avx512(sl_cpu_variant *out)
{
    sl__cpu_blend_generic(out);
}
#endif

#if SL_CPU_FIRST_BUILD
void sl__cpu_paste_box(void *dst, const void *src, int h, int w, size_t pixel_bytes, int y0, int y1, int x0, int x1)
{
    (void)h;
    if (x1 <= x0)
        return;
    size_t row = (size_t)w * pixel_bytes;
    size_t offset = (size_t)x0 * pixel_bytes;
    size_t bytes = (size_t)(x1 - x0) * pixel_bytes;
    for (int y = y0; y < y1; y++)
        memcpy((char *)dst + (size_t)y * row + offset, (const char *)src + (size_t)y * row + offset, bytes);
}
#endif

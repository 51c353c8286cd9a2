/* Optimized bilinear resize, separable: each source row the output needs is
 * resampled along the width once (top = p0 + wx * (p1 - p0) for every output
 * value of the row), kept in a two-row cache, and each output row is then
 * one vectorizable pass out = top + wy * (bot - top) over the two cached
 * rows. Those are exactly the reference's three lerps in the reference's
 * order, so the results are bitwise the reference's; what changes is that a
 * source row's horizontal lerps are computed once instead of once per output
 * row that reads it, and the vertical pass runs along contiguous values. */
#include "cpu/cpu.h"

#define DEFINE_HORIZONTAL(NAME, T)                                                                                     \
    SL_ALWAYS_INLINE void NAME(const T *restrict row, float *restrict out, const sl_resize_plan *plan)                 \
    {                                                                                                                  \
        const int32_t *restrict v0 = plan->v0;                                                                         \
        const int32_t *restrict v1 = plan->v1;                                                                         \
        const float *restrict wv = plan->wv;                                                                           \
        const int64_t n = (int64_t)plan->out_w * plan->channels;                                                       \
        for (int64_t j = 0; j < n; j++) {                                                                              \
            float p0 = (float)row[v0[j]], p1 = (float)row[v1[j]];                                                      \
            out[j] = p0 + wv[j] * (p1 - p0);                                                                           \
        }                                                                                                              \
    }
DEFINE_HORIZONTAL(horizontal_u8, uint8_t)
DEFINE_HORIZONTAL(horizontal_f32, float)

SL_ALWAYS_INLINE void vertical(const float *restrict top, const float *restrict bot, float wy, float *restrict out,
                               int64_t n)
{
    for (int64_t j = 0; j < n; j++)
        out[j] = top[j] + wy * (bot[j] - top[j]);
}

/* The two-row cache: slot a holds the resampled row y0 of the current output
 * row and slot b its row y1. Moving down, the old y1 usually becomes the new
 * y0 (upsampling) or both rows are new (downsampling by 2 or more). */
#define DEFINE_RESIZE_BODY(NAME, T, HORIZONTAL)                                                                        \
    SL_ALWAYS_INLINE void NAME(const T *src, int64_t stride, float *dst, const sl_resize_plan *plan, float *scratch)   \
    {                                                                                                                  \
        const int64_t n = (int64_t)plan->out_w * plan->channels;                                                       \
        float *a = scratch, *b = scratch + n;                                                                          \
        int32_t tag_a = -1, tag_b = -1;                                                                                \
        for (int oy = 0; oy < plan->out_h; oy++) {                                                                     \
            const int32_t y0 = plan->y0[oy], y1 = plan->y1[oy];                                                        \
            if (tag_a != y0) {                                                                                         \
                if (tag_b == y0) {                                                                                     \
                    float *t = a;                                                                                      \
                    a = b;                                                                                             \
                    b = t;                                                                                             \
                    tag_b = tag_a;                                                                                     \
                    tag_a = y0;                                                                                        \
                } else {                                                                                               \
                    HORIZONTAL(src + (int64_t)y0 * stride, a, plan);                                                   \
                    tag_a = y0;                                                                                        \
                }                                                                                                      \
            }                                                                                                          \
            if (tag_b != y1) {                                                                                         \
                HORIZONTAL(src + (int64_t)y1 * stride, b, plan);                                                       \
                tag_b = y1;                                                                                            \
            }                                                                                                          \
            vertical(a, b, plan->wy[oy], dst + (int64_t)oy * n, n);                                                    \
        }                                                                                                              \
    }
DEFINE_RESIZE_BODY(resize_u8_body, uint8_t, horizontal_u8)
DEFINE_RESIZE_BODY(resize_f32_body, float, horizontal_f32)

#define DEFINE_RESIZE_INSTANCES(SUFFIX, ATTR)                                                                          \
    ATTR static void resize_u8_##SUFFIX(const uint8_t *src, int64_t stride, float *dst, const sl_resize_plan *plan,    \
                                        float *scratch)                                                                \
    {                                                                                                                  \
        resize_u8_body(src, stride, dst, plan, scratch);                                                               \
    }                                                                                                                  \
    ATTR static void resize_f32_##SUFFIX(const float *src, int64_t stride, float *dst, const sl_resize_plan *plan,     \
                                         float *scratch)                                                               \
    {                                                                                                                  \
        resize_f32_body(src, stride, dst, plan, scratch);                                                              \
    }                                                                                                                  \
    void sl__cpu_resize_##SUFFIX(sl_cpu_variant *out)                                                                  \
    {                                                                                                                  \
        out->resize_u8 = resize_u8_##SUFFIX;                                                                           \
        out->resize_f32 = resize_f32_##SUFFIX;                                                                         \
    }

#if SL_CPU_FIRST_BUILD
DEFINE_RESIZE_INSTANCES(generic, )
#endif

#if SL_HAVE_AVX2_CLONES
#if SL_CPU_FIRST_BUILD
DEFINE_RESIZE_INSTANCES(avx2, SL_TARGET_AVX2)
#endif
DEFINE_RESIZE_INSTANCES(avx512, SL_TARGET_AVX512)
#else
void sl__cpu_resize_avx2(sl_cpu_variant *out)
{
    sl__cpu_resize_generic(out);
}

void sl__cpu_resize_avx512(sl_cpu_variant *out)
{
    sl__cpu_resize_generic(out);
}
#endif

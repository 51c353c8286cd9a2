/* Reference bilinear resize: each output value from its four source values,
 * one at a time, in the expression order every back end reproduces
 * (sl_resize_plan in kernels.h). */
#include "ref/ref.h"

#define DEFINE_REF_RESIZE(NAME, T)                                                                                     \
    void NAME(const T *src, int64_t stride, float *dst, const sl_resize_plan *plan, float *scratch)                    \
    {                                                                                                                  \
        (void)scratch;                                                                                                 \
        const int C = plan->channels;                                                                                  \
        for (int oy = 0; oy < plan->out_h; oy++) {                                                                     \
            const T *r0 = src + (int64_t)plan->y0[oy] * stride;                                                        \
            const T *r1 = src + (int64_t)plan->y1[oy] * stride;                                                        \
            const float wy = plan->wy[oy];                                                                             \
            for (int ox = 0; ox < plan->out_w; ox++) {                                                                 \
                const int64_t a = (int64_t)plan->x0[ox] * C, b = (int64_t)plan->x1[ox] * C;                            \
                const float wx = plan->wx[ox];                                                                         \
                for (int c = 0; c < C; c++) {                                                                          \
                    float p00 = (float)r0[a + c], p01 = (float)r0[b + c];                                              \
                    float p10 = (float)r1[a + c], p11 = (float)r1[b + c];                                              \
                    dst[((int64_t)oy * plan->out_w + ox) * C + c] = sl__body_bilinear(p00, p01, p10, p11, wx, wy);     \
                }                                                                                                      \
            }                                                                                                          \
        }                                                                                                              \
    }

DEFINE_REF_RESIZE(sl__ref_resize_u8, uint8_t)
DEFINE_REF_RESIZE(sl__ref_resize_f32, float)

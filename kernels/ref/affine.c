/* Reference kernels of the learnable per-channel affine op and of the
 * backward passes of the per-channel ops: one value at a time, the
 * expressions every back end must reproduce. */
#include "ref/ref.h"

void sl__ref_affine_f32(const float *src, float *dst, int64_t pixels, const sl_affine_consts *k)
{
    for (int64_t p = 0; p < pixels; p++)
        for (int c = 0; c < k->channels; c++) {
            int64_t i = p * k->channels + c;
            dst[i] = sl__body_affine(src[i], k->scale[c], k->bias[c]);
        }
}

void sl__ref_mul_channels(const float *src, float *dst, int64_t pixels, int channels, const float *s)
{
    for (int64_t p = 0; p < pixels; p++)
        for (int c = 0; c < channels; c++) {
            int64_t i = p * channels + c;
            dst[i] = sl__body_multiply(src[i], s[c]);
        }
}

void sl__ref_affine_grads(const float *x, const float *dy, int64_t pixels, int channels, double *dscale, double *dbias)
{
    for (int64_t p = 0; p < pixels; p++)
        for (int c = 0; c < channels; c++) {
            int64_t i = p * channels + c;
            dscale[c] += (double)dy[i] * (double)x[i];
            dbias[c] += (double)dy[i];
        }
}

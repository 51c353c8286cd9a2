/* Reference normalization: one value at a time, the expression every back
 * end must reproduce exactly. */
#include "ref/ref.h"

void sl__ref_normalize_u8(const uint8_t *src, float *dst, int64_t pixels, const sl_normalize_consts *k)
{
    for (int64_t p = 0; p < pixels; p++)
        for (int c = 0; c < k->channels; c++) {
            int64_t i = p * k->channels + c;
            dst[i] = sl__body_normalize((float)src[i], k->mean[c], k->inv_std[c]);
        }
}

void sl__ref_normalize_f32(const float *src, float *dst, int64_t pixels, const sl_normalize_consts *k)
{
    for (int64_t p = 0; p < pixels; p++)
        for (int c = 0; c < k->channels; c++) {
            int64_t i = p * k->channels + c;
            dst[i] = sl__body_normalize(src[i], k->mean[c], k->inv_std[c]);
        }
}

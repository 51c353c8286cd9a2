/* Reference dropout: one Philox block per four values, each value's keep
 * decision an integer comparison, so no float rounding enters the mask. */
#include "ref/ref.h"

void sl__ref_dropout_from(const float *src, float *dst, int64_t first, int64_t n, const sl_dropout_key *d)
{
    sl_philox_ctr r = {{0, 0, 0, 0}};
    for (int64_t i = first; i < n; i++) {
        if (i == first || i % 4 == 0)
            r = sl_philox4x32_10(sl_philox_ctr_for(d->element, d->epoch, (uint32_t)(i / 4)), d->key);
        dst[i] = sl__body_dropout(src[i], r.v[i % 4], d->threshold, d->scale);
    }
}

void sl__ref_dropout(const float *src, float *dst, int64_t n, const sl_dropout_key *d)
{
    sl__ref_dropout_from(src, dst, 0, n, d);
}

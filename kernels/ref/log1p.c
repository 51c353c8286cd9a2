/* Reference log1p: the shared definition, one value at a time. */
#include "ref/ref.h"

void sl__ref_log1p(const float *src, float *dst, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        dst[i] = sl__log1p_f32(src[i]);
}

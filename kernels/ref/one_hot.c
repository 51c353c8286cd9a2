/* Reference one-hot encoding. */
#include "ref/ref.h"

void sl__ref_one_hot(const int32_t *labels, float *out, int64_t count, int32_t classes)
{
    for (int64_t i = 0; i < count; i++)
        for (int32_t k = 0; k < classes; k++)
            out[i * classes + k] = sl__body_one_hot(labels[i], k);
}

/* Reference id hashing: the remainder by a plain division. */
#include "ref/ref.h"

void sl__ref_hash_ids(const int64_t *src, int64_t *dst, int64_t rows, const sl_hash_consts *k)
{
    for (int64_t r = 0; r < rows; r++)
        for (int j = 0; j < k->columns; j++) {
            int64_t id = src[r * k->columns + j];
            dst[r * k->columns + j] = sl__body_hash_id(id, k->size[j]);
        }
}

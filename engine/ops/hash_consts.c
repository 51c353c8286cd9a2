/* Preparing hash_ids constants, shared by every back end. */
#include "sluice/kernels/kernels.h"

/* Table sizes stay at or below 2^31 so that a hashed id fits any signed
 * 32-bit index a consumer may use, and the 32-bit remainder identity of the
 * optimized kernel holds. */
#define MAX_TABLE_SIZE ((int64_t)1 << 31)

sl_status sl_hash_consts_init(sl_hash_consts *k, int columns, const int64_t *sizes, sl_err *err)
{
    if (columns < 1 || columns > SL_MAX_CHANNELS)
        return sl_fail(err, SL_EINVAL, "hash_ids needs 1 to %d columns, got %d", SL_MAX_CHANNELS, columns);
    for (int j = 0; j < columns; j++)
        if (sizes[j] < 1 || sizes[j] > MAX_TABLE_SIZE)
            return sl_fail(err, SL_EINVAL, "hash_ids table size of column %d must be in [1, 2^31], got %lld", j,
                           (long long)sizes[j]);
    k->columns = columns;
    for (int j = 0; j < columns; j++) {
        k->size[j] = (uint32_t)sizes[j];
        k->reciprocal[j] = UINT64_MAX / k->size[j] + 1;
    }
    return SL_OK;
}

/* The reference table's batch of shuffled ids: the scalar network. */
#include "kernels/feistel.h"
#include "ref/ref.h"

void sl__ref_permute_strided(const sl_permutation *perm, uint64_t first, uint64_t stride, int64_t count, int64_t *out)
{
    sl__feistel_apply_strided(perm, first, stride, count, out);
}

#include <math.h>
#include <stdint.h>

#include "kernels/feistel.h"
#include "sluice/core/philox.h"
#include "sluice/order/shuffle.h"

/* The smallest side with side * side >= n. The double square root is only a
 * first guess; the integer corrections make the result exact. */
static uint64_t grid_side(uint64_t n)
{
    uint64_t side = (uint64_t)sqrt((double)n);
    while (side * side < n)
        side++;
    while (side > 1 && (side - 1) * (side - 1) >= n)
        side--;
    return side;
}

void sl_permutation_init(sl_permutation *perm, uint64_t n, uint64_t seed, uint64_t epoch, bool shuffle)
{
    sl_permutation_init_keyed(perm, n, seed, SL_STREAM_SHUFFLE, epoch, 0, shuffle);
}

void sl_permutation_init_keyed(sl_permutation *perm, uint64_t n, uint64_t seed, uint64_t stream, uint64_t epoch,
                               uint32_t index, bool shuffle)
{
    perm->n = n;
    perm->identity = !shuffle || n < 2;
    perm->side = grid_side(n);
    /* One Philox block yields two 64-bit round keys. */
    sl_philox_key key = sl_philox_key_for(seed, stream);
    for (int round = 0; round < SL_FEISTEL_ROUNDS; round += 2) {
        sl_philox_ctr out = sl_philox4x32_10(sl_philox_ctr_for((uint64_t)round, (uint32_t)epoch, index), key);
        perm->round_keys[round] = ((uint64_t)out.v[1] << 32) | out.v[0];
        if (round + 1 < SL_FEISTEL_ROUNDS)
            perm->round_keys[round + 1] = ((uint64_t)out.v[3] << 32) | out.v[2];
    }
}

uint64_t sl_permutation_apply(const sl_permutation *perm, uint64_t position)
{
    if (perm->identity)
        return position;
    return sl__feistel_walk(perm, sl__feistel_forward(perm, position));
}

/* One pass of the network backwards: round i mapped (left, right) to
 * (right, left + F(right)), so (left', right') came from
 * (right' - F(left'), left'). */
static uint64_t feistel_inverse(const sl_permutation *perm, uint64_t x)
{
    const uint64_t side = perm->side;
    uint64_t left, right;
    sl__feistel_split(x, side, &left, &right);
    for (int round = SL_FEISTEL_ROUNDS - 1; round >= 0; round--) {
        uint64_t f = sl__feistel_round_value(perm, round, left);
        uint64_t previous_left = right >= f ? right - f : right + side - f;
        right = left;
        left = previous_left;
    }
    return left * side + right;
}

/* The forward walk from a position passes through grid points outside
 * [0, n) until it lands on the element; walking backwards from the element
 * passes through the same points to the position. */
uint64_t sl_permutation_invert(const sl_permutation *perm, uint64_t element)
{
    if (perm->identity)
        return element;
    uint64_t x = feistel_inverse(perm, element);
    while (x >= perm->n)
        x = feistel_inverse(perm, x);
    return x;
}

/* The portable path: a pipeline's batches take its kernel table's
 * permute_strided instead (the vector paths of kernels/cpu/). */
void sl_permutation_apply_strided(const sl_permutation *perm, uint64_t first, uint64_t stride, int64_t count,
                                  int64_t *out)
{
    sl__feistel_apply_strided(perm, first, stride, count, out);
}

uint64_t sl_shard_size(sl_shard shard, uint64_t n)
{
    uint64_t rank = (uint64_t)shard.rank;
    uint64_t world = (uint64_t)shard.world;
    return rank >= n ? 0 : (n - rank + world - 1) / world;
}

/* Stateless shuffling and sharding (DESIGN.md, invariant 2). */
#ifndef SLUICE_SHUFFLE_H
#define SLUICE_SHUFFLE_H

#include <stdbool.h>
#include <stdint.h>

#include "sluice/kernels/permutation.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The order of one epoch: keyed by (seed, epoch), identity when !shuffle. */
void sl_permutation_init(sl_permutation *perm, uint64_t n, uint64_t seed, uint64_t epoch, bool shuffle);
/* The same network under another key, for orders built from several
 * permutations: stream selects the Philox stream of the round keys and index
 * fills the last word of their counter (after the round and the epoch's low
 * 32 bits), so a block shuffle's windows or a mixture's parts and passes never
 * share keys. sl_permutation_init is stream SL_STREAM_SHUFFLE, index 0. */
void sl_permutation_init_keyed(sl_permutation *perm, uint64_t n, uint64_t seed, uint64_t stream, uint64_t epoch,
                               uint32_t index, bool shuffle);
/* The element at position (0 <= position < n). */
uint64_t sl_permutation_apply(const sl_permutation *perm, uint64_t position);
/* The position of element (0 <= element < n): the inverse of
 * sl_permutation_apply, by the rounds run backwards and cycle walking back. */
uint64_t sl_permutation_invert(const sl_permutation *perm, uint64_t element);

/* out[i] = the element at position first + i * stride, for i < count: the
 * same values as sl_permutation_apply, computed several at a time. A batch's
 * positions are such a run (stride = the shard's world size). */
void sl_permutation_apply_strided(const sl_permutation *perm, uint64_t first, uint64_t stride, int64_t count,
                                  int64_t *out);

/* Rank r of `world` takes global positions r, r + world, r + 2 world, ...:
 * shards are disjoint, cover the epoch, and the global order is the same for
 * every world size. */
typedef struct sl_shard {
    int rank;
    int world;
} sl_shard;

/* Number of positions rank owns in an epoch of n elements. */
uint64_t sl_shard_size(sl_shard shard, uint64_t n);
/* Global position of the rank's local position. */
static inline uint64_t sl_shard_global_position(sl_shard shard, uint64_t local)
{
    return (uint64_t)shard.rank + local * (uint64_t)shard.world;
}

#ifdef __cplusplus
}
#endif

#endif

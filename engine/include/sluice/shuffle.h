/* Stateless shuffling and sharding (DESIGN.md, invariant 2). */
#ifndef SLUICE_SHUFFLE_H
#define SLUICE_SHUFFLE_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Stream ids at or above 2^32 never collide with op ids, which are 32-bit. */
#define SL_STREAM_SHUFFLE (1ull << 40)
#define SL_STREAM_FIXTURE (2ull << 40)

#define SL_FEISTEL_ROUNDS 8

/* A keyed bijection on [0, n): a balanced Feistel network over the smallest
 * power of four >= n, with cycle walking to stay inside [0, n). O(1) memory
 * and random access: the element at any position of an epoch's order is
 * computed without materializing the rest, and the domain is below 4n, so a
 * lookup walks fewer than four cycles on average. */
typedef struct sl_permutation {
    uint64_t n;
    int half_bits;
    uint64_t half_mask;
    uint64_t round_keys[SL_FEISTEL_ROUNDS];
    bool identity;         /* unshuffled pipelines use the same code path */
} sl_permutation;

/* The order of one epoch: keyed by (seed, epoch), identity when !shuffle. */
void sl_permutation_init(sl_permutation *perm, uint64_t n, uint64_t seed, uint64_t epoch, bool shuffle);
/* The element at position (0 <= position < n). */
uint64_t sl_permutation_apply(const sl_permutation *perm, uint64_t position);

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

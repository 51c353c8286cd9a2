#include "sluice/philox.h"
#include "sluice/shuffle.h"

static int bits_needed(uint64_t n)
{
    int bits = 0;
    while (bits < 64 && (n >> bits) != 0)
        bits++;
    return bits;
}

void sl_permutation_init(sl_permutation *perm, uint64_t n, uint64_t seed, uint64_t epoch, bool shuffle)
{
    perm->n = n;
    perm->identity = !shuffle || n < 2;
    /* Both halves get the same width so the network is balanced; the domain
     * is then 4^half_bits, the smallest power of four above n - 1. */
    int bits = bits_needed(n > 0 ? n - 1 : 0);
    perm->half_bits = bits < 2 ? 1 : (bits + 1) / 2;
    perm->half_mask = (perm->half_bits >= 64) ? ~0ull : ((1ull << perm->half_bits) - 1);
    sl_philox_key key = sl_philox_key_for(seed, SL_STREAM_SHUFFLE);
    for (int round = 0; round < SL_FEISTEL_ROUNDS; round++) {
        sl_philox_ctr out = sl_philox4x32_10(sl_philox_ctr_for((uint64_t)round, (uint32_t)epoch, 0), key);
        perm->round_keys[round] = ((uint64_t)out.v[1] << 32) | out.v[0];
    }
}

static uint64_t feistel(const sl_permutation *perm, uint64_t x)
{
    uint64_t left = x >> perm->half_bits;
    uint64_t right = x & perm->half_mask;
    for (int round = 0; round < SL_FEISTEL_ROUNDS; round++) {
        uint64_t next = left ^ (sl_mix64(right ^ perm->round_keys[round]) & perm->half_mask);
        left = right;
        right = next;
    }
    return (left << perm->half_bits) | right;
}

uint64_t sl_permutation_apply(const sl_permutation *perm, uint64_t position)
{
    if (perm->identity)
        return position;
    /* Cycle walking: the network permutes the larger power-of-four domain,
     * so following it from a position inside [0, n) until it lands inside
     * again yields a bijection on [0, n) (Black and Rogaway, 2002). */
    uint64_t x = position;
    do {
        x = feistel(perm, x);
    } while (x >= perm->n);
    return x;
}

uint64_t sl_shard_size(sl_shard shard, uint64_t n)
{
    uint64_t rank = (uint64_t)shard.rank;
    uint64_t world = (uint64_t)shard.world;
    return rank >= n ? 0 : (n - rank + world - 1) / world;
}

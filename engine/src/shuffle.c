#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "shuffle_internal.h"
#include "sluice/kernels.h"
#include "sluice/philox.h"
#include "sluice/shuffle.h"

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

/* One pass of the network over a grid point. Each round maps (left, right)
 * to (right, (left + F(right)) mod side), which is invertible whatever F is;
 * F reduces a 64-bit mix to [0, side) by multiply-shift, which needs side
 * <= 2^32, true for every n below 2^62. */
static inline void split(uint64_t x, uint64_t side, uint64_t *left, uint64_t *right)
{
    /* A 32-bit division is several times cheaper than a 64-bit one, and
     * every data set below 2^32 elements takes this path. */
    if (x <= UINT32_MAX) {
        *left = (uint32_t)x / (uint32_t)side;
        *right = (uint32_t)x - (uint32_t)*left * (uint32_t)side;
    } else {
        *left = x / side;
        *right = x % side;
    }
}

static inline uint64_t round_value(const sl_permutation *perm, int round, uint64_t right)
{
    return ((sl_mix64(right ^ perm->round_keys[round]) >> 32) * perm->side) >> 32;
}

static uint64_t feistel(const sl_permutation *perm, uint64_t x)
{
    const uint64_t side = perm->side;
    uint64_t left, right;
    split(x, side, &left, &right);
    for (int round = 0; round < SL_FEISTEL_ROUNDS; round++) {
        uint64_t sum = left + round_value(perm, round, right);
        left = right;
        right = sum >= side ? sum - side : sum;
    }
    return left * side + right;
}

/* Cycle walking: following the grid's permutation from a position inside
 * [0, n) until it lands inside again is a bijection on [0, n). */
uint64_t sl__feistel_walk(const sl_permutation *perm, uint64_t x)
{
    while (x >= perm->n)
        x = feistel(perm, x);
    return x;
}

uint64_t sl_permutation_apply(const sl_permutation *perm, uint64_t position)
{
    if (perm->identity)
        return position;
    return sl__feistel_walk(perm, feistel(perm, position));
}

/* One pass of the network backwards: round i mapped (left, right) to
 * (right, left + F(right)), so (left', right') came from
 * (right' - F(left'), left'). */
static uint64_t feistel_inverse(const sl_permutation *perm, uint64_t x)
{
    const uint64_t side = perm->side;
    uint64_t left, right;
    split(x, side, &left, &right);
    for (int round = SL_FEISTEL_ROUNDS - 1; round >= 0; round--) {
        uint64_t f = round_value(perm, round, left);
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

/* Lanes evaluated side by side: the rounds of one position form a chain of
 * dependent multiplies, and interleaving independent positions lets the CPU
 * overlap those chains instead of waiting on each in turn. */
#define LANES 8

void sl__permutation_apply_strided_scalar(const sl_permutation *perm, uint64_t first, uint64_t stride, int64_t count,
                                          int64_t *out)
{
    const uint64_t side = perm->side;
    for (int64_t base = 0; base < count; base += LANES) {
        int lanes = count - base < LANES ? (int)(count - base) : LANES;
        if (perm->identity) {
            for (int l = 0; l < lanes; l++)
                out[base + l] = (int64_t)(first + (uint64_t)(base + l) * stride);
            continue;
        }
        uint64_t left[LANES] = {0}, right[LANES] = {0};
        for (int l = 0; l < lanes; l++)
            split(first + (uint64_t)(base + l) * stride, side, &left[l], &right[l]);
        for (int round = 0; round < SL_FEISTEL_ROUNDS; round++)
            for (int l = 0; l < LANES; l++) {
                uint64_t sum = left[l] + round_value(perm, round, right[l]);
                left[l] = right[l];
                right[l] = sum >= side ? sum - side : sum;
            }
        for (int l = 0; l < lanes; l++) {
            /* The rare lane that left [0, n) walks on alone. */
            out[base + l] = (int64_t)sl__feistel_walk(perm, left[l] * side + right[l]);
        }
    }
}

int sl__shuffle_path(void)
{
#if SL__SHUFFLE_HAVE_AVX2
    static _Atomic int cpu = -1; /* what the CPU runs: 0, 2 or 3 */
    int level = atomic_load_explicit(&cpu, memory_order_relaxed);
    if (level < 0) {
        __builtin_cpu_init();
        level = !__builtin_cpu_supports("avx2")       ? 0
                : __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") ? 3
                                                                                           : 2;
        atomic_store_explicit(&cpu, level, memory_order_relaxed);
    }
    /* AVX-512 only behind the AVX-512 table; AVX2 behind any other, as
     * before there were tables above it. */
    if (level == 3 && strcmp(sl_kernels_best()->name, "cpu-avx512") != 0)
        level = 2;
    return level;
#else
    return 0;
#endif
}

void sl_permutation_apply_strided(const sl_permutation *perm, uint64_t first, uint64_t stride, int64_t count,
                                  int64_t *out)
{
#if SL__SHUFFLE_HAVE_AVX2
    /* The vector paths need positions below 2^62 (exact enough in double)
     * and the grid side below 2^31 (32-bit products), true of every data
     * set the pipeline accepts. */
    uint64_t last = first + (uint64_t)(count > 0 ? count - 1 : 0) * stride;
    if (!perm->identity && perm->side < ((uint64_t)1 << 31) && last < ((uint64_t)1 << 62)) {
        switch (sl__shuffle_path()) {
        case 3:
            sl__permutation_apply_strided_avx512(perm, first, stride, count, out);
            return;
        case 2:
            sl__permutation_apply_strided_avx2(perm, first, stride, count, out);
            return;
        default:
            break;
        }
    }
#endif
    sl__permutation_apply_strided_scalar(perm, first, stride, count, out);
}

uint64_t sl_shard_size(sl_shard shard, uint64_t n)
{
    uint64_t rank = (uint64_t)shard.rank;
    uint64_t world = (uint64_t)shard.world;
    return rank >= n ? 0 : (n - rank + world - 1) / world;
}

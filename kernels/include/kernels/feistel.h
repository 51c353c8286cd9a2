/* The keyed Feistel network of the shuffle (sluice/order/shuffle.h), one
 * definition shared by the order layer's single-position functions and by
 * every kernel table's batch of positions (the scalar loop here, the AVX2
 * and AVX-512 versions in kernels/cpu/). Every path computes the same ids
 * bit for bit; test_shuffle compares them on many sizes, seeds and strides. */
#ifndef SLUICE_KERNELS_FEISTEL_H
#define SLUICE_KERNELS_FEISTEL_H

#include <stdint.h>

#include "sluice/core/philox.h"
#include "sluice/kernels/permutation.h"

/* (left, right) = (x / side, x % side). A 32-bit division is several times
 * cheaper than a 64-bit one, and every data set below 2^32 elements takes
 * that path. */
static inline void sl__feistel_split(uint64_t x, uint64_t side, uint64_t *left, uint64_t *right)
{
    if (x <= UINT32_MAX) {
        *left = (uint32_t)x / (uint32_t)side;
        *right = (uint32_t)x - (uint32_t)*left * (uint32_t)side;
    } else {
        *left = x / side;
        *right = x % side;
    }
}

/* F of one round: a 64-bit mix reduced to [0, side) by multiply-shift,
 * which needs side <= 2^32, true for every n below 2^62. */
static inline uint64_t sl__feistel_round_value(const sl_permutation *perm, int round, uint64_t right)
{
    return ((sl_mix64(right ^ perm->round_keys[round]) >> 32) * perm->side) >> 32;
}

/* One pass of the network over a grid point. Each round maps (left, right)
 * to (right, (left + F(right)) mod side), which is invertible whatever F is. */
static inline uint64_t sl__feistel_forward(const sl_permutation *perm, uint64_t x)
{
    const uint64_t side = perm->side;
    uint64_t left, right;
    sl__feistel_split(x, side, &left, &right);
    for (int round = 0; round < SL_FEISTEL_ROUNDS; round++) {
        uint64_t sum = left + sl__feistel_round_value(perm, round, right);
        left = right;
        right = sum >= side ? sum - side : sum;
    }
    return left * side + right;
}

/* Cycle walking: following the grid's permutation from a point at or above
 * n until it lands inside [0, n) is a bijection on [0, n). */
static inline uint64_t sl__feistel_walk(const sl_permutation *perm, uint64_t x)
{
    while (x >= perm->n)
        x = sl__feistel_forward(perm, x);
    return x;
}

/* out[i] = the element at position first + i * stride, for i < count, by
 * the scalar network. Lanes are evaluated side by side: the rounds of one
 * position form a chain of dependent multiplies, and interleaving
 * independent positions lets the CPU overlap those chains. */
#define SL__FEISTEL_LANES 8

static inline void sl__feistel_apply_strided(const sl_permutation *perm, uint64_t first, uint64_t stride, int64_t count,
                                             int64_t *out)
{
    const uint64_t side = perm->side;
    for (int64_t base = 0; base < count; base += SL__FEISTEL_LANES) {
        int lanes = count - base < SL__FEISTEL_LANES ? (int)(count - base) : SL__FEISTEL_LANES;
        if (perm->identity) {
            for (int l = 0; l < lanes; l++)
                out[base + l] = (int64_t)(first + (uint64_t)(base + l) * stride);
            continue;
        }
        uint64_t left[SL__FEISTEL_LANES] = {0}, right[SL__FEISTEL_LANES] = {0};
        for (int l = 0; l < lanes; l++)
            sl__feistel_split(first + (uint64_t)(base + l) * stride, side, &left[l], &right[l]);
        for (int round = 0; round < SL_FEISTEL_ROUNDS; round++)
            for (int l = 0; l < SL__FEISTEL_LANES; l++) {
                uint64_t sum = left[l] + sl__feistel_round_value(perm, round, right[l]);
                left[l] = right[l];
                right[l] = sum >= side ? sum - side : sum;
            }
        /* The rare lane that left [0, n) walks on alone. */
        for (int l = 0; l < lanes; l++)
            out[base + l] = (int64_t)sl__feistel_walk(perm, left[l] * side + right[l]);
    }
}

/* Whether the vector paths take a run of positions: they need positions
 * below 2^62 (exact enough in double) and the grid side below 2^31 (32-bit
 * products), true of every data set the pipeline accepts. */
static inline int sl__feistel_vector_ok(const sl_permutation *perm, uint64_t first, uint64_t stride, int64_t count)
{
    uint64_t last = first + (uint64_t)(count > 0 ? count - 1 : 0) * stride;
    return !perm->identity && perm->side < ((uint64_t)1 << 31) && last < ((uint64_t)1 << 62);
}

#endif

/* The keyed permutation as a value, and the streams that key sluice's own
 * orders and fixtures: the kernel table's permute_strided walks one, the order
 * layer builds it (sluice/order/shuffle.h), the fixtures draw from their stream. */
#ifndef SLUICE_PERMUTATION_H
#define SLUICE_PERMUTATION_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Stream ids at or above 2^32 never collide with op ids, which are 32-bit. */
#define SL_STREAM_SHUFFLE      (1ull << 40)
#define SL_STREAM_FIXTURE      (2ull << 40)
/* The orders that are not one Feistel permutation of the whole data set: a
 * block shuffle's permutation inside each window, a mixture's choice of part
 * at each position, and each part's own order (stream + part index). */
#define SL_STREAM_BLOCK_WINDOW (3ull << 40)
#define SL_STREAM_MIX_CHOICE   (4ull << 40)
#define SL_STREAM_MIX_PART     (5ull << 40)

#define SL_FEISTEL_ROUNDS 6

/* A keyed bijection on [0, n): a Feistel network on the grid [0, side)^2,
 * side = ceil(sqrt(n)), whose rounds add modulo side instead of XORing bits
 * (Black and Rogaway, "Ciphers with arbitrary finite domains", 2002), with
 * cycle walking for the few grid points at or above n. The grid exceeds n by
 * fewer than 2 side points, so a lookup almost never walks, where a
 * power-of-two domain would walk on up to three quarters of them. O(1) memory
 * and random access: the element at any position of an epoch's order is
 * computed without materializing the rest. n must be below 2^62. */
typedef struct sl_permutation {
    uint64_t n;
    uint64_t side;
    uint64_t round_keys[SL_FEISTEL_ROUNDS];
    bool identity; /* unshuffled pipelines use the same code path */
} sl_permutation;

#ifdef __cplusplus
}
#endif

#endif

/* What the shuffle's scalar and vector paths share (shuffle.c,
 * shuffle_avx2.c). */
#ifndef SLUICE_SHUFFLE_INTERNAL_H
#define SLUICE_SHUFFLE_INTERNAL_H

#include "sluice/shuffle.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define SL__SHUFFLE_HAVE_AVX2 1
#define SL__SHUFFLE_HAVE_AVX512 1
#else
#define SL__SHUFFLE_HAVE_AVX2 0
#define SL__SHUFFLE_HAVE_AVX512 0
#endif

/* Follows the grid permutation from x (at or above n) until it lands inside
 * [0, n): cycle walking. */
uint64_t sl__feistel_walk(const sl_permutation *perm, uint64_t x);
void sl__permutation_apply_strided_scalar(const sl_permutation *perm, uint64_t first, uint64_t stride, int64_t count,
                                          int64_t *out);
#if SL__SHUFFLE_HAVE_AVX2
void sl__permutation_apply_strided_avx2(const sl_permutation *perm, uint64_t first, uint64_t stride, int64_t count,
                                        int64_t *out);
#endif
#if SL__SHUFFLE_HAVE_AVX512
/* Needs AVX-512 F and DQ; its tail (fewer than 32 positions) runs the AVX2
 * path, which every AVX-512 CPU also has. */
void sl__permutation_apply_strided_avx512(const sl_permutation *perm, uint64_t first, uint64_t stride, int64_t count,
                                          int64_t *out);
#endif
/* Which vector path the keyed shuffle takes, from the kernel table selected
 * behind SL_KERNELS_BEST (0 scalar, 2 AVX2, 3 AVX-512): the ids are the same
 * on every path, but a run limited to a table (valgrind cannot execute
 * AVX-512, SLUICE_KERNELS=cpu-avx2) must not execute a wider ISA. */
int sl__shuffle_path(void);

#endif

/* The grid Feistel of shuffle.c, four positions per AVX2 vector and four
 * vectors interleaved. Every step is the scalar one on integers, so the
 * result is the same bit for bit (test_shuffle compares them on many sizes,
 * seeds and strides); only the arithmetic is spread across lanes. A batch's
 * element ids were a large part of a small row's cost: 20 ns an id in
 * scalar code, 5 of TAB-1's 14 µs batch.
 *
 * AVX2 has no 64-bit multiply, so the two constant multiplies of
 * SplitMix64's finalizer are built from three 32 x 32 -> 64 products each;
 * the split of a position into its grid coordinates divides in double and
 * corrects the quotient by one either way, which is exact for positions
 * below 2^62. */
#include "cpu/cpu.h"
#include "kernels/feistel.h"

#if SL_HAVE_AVX2_CLONES
#include <immintrin.h>

#define TARGET __attribute__((target("avx2")))

/* a * b mod 2^64, b a constant split into its halves. */
TARGET static inline __m256i mul64(__m256i a, __m256i b_lo, __m256i b_hi)
{
    __m256i a_hi = _mm256_srli_epi64(a, 32);
    __m256i lo = _mm256_mul_epu32(a, b_lo);
    __m256i cross = _mm256_add_epi64(_mm256_mul_epu32(a_hi, b_lo), _mm256_mul_epu32(a, b_hi));
    return _mm256_add_epi64(lo, _mm256_slli_epi64(cross, 32));
}

TARGET static inline __m256i mix64(__m256i x)
{
    const __m256i c1_lo = _mm256_set1_epi64x(0x1CE4E5B9ll), c1_hi = _mm256_set1_epi64x(0xBF58476Dll);
    const __m256i c2_lo = _mm256_set1_epi64x(0x133111EBll), c2_hi = _mm256_set1_epi64x(0x94D049BBll);
    x = _mm256_add_epi64(x, _mm256_set1_epi64x((long long)0x9E3779B97F4A7C15ull));
    x = mul64(_mm256_xor_si256(x, _mm256_srli_epi64(x, 30)), c1_lo, c1_hi);
    x = mul64(_mm256_xor_si256(x, _mm256_srli_epi64(x, 27)), c2_lo, c2_hi);
    return _mm256_xor_si256(x, _mm256_srli_epi64(x, 31));
}

/* (left, right) of four positions: left = x / side, right = x % side. */
TARGET static inline void split4(__m256i x, __m256d side_pd, __m256i side, __m256i *left, __m256i *right)
{
    /* Positions below 2^62 convert exactly enough that the double quotient
     * is off by at most one; the integer remainder then corrects it. */
    int64_t lanes[4];
    _mm256_storeu_si256((__m256i *)lanes, x);
    __m256d xd = _mm256_set_pd((double)lanes[3], (double)lanes[2], (double)lanes[1], (double)lanes[0]);
    __m256d q = _mm256_floor_pd(_mm256_div_pd(xd, side_pd));
    __m128i q32 = _mm256_cvttpd_epi32(q);
    __m256i l = _mm256_cvtepu32_epi64(q32);
    __m256i r = _mm256_sub_epi64(x, _mm256_mul_epu32(l, side));
    /* r < 0: the quotient was one too large. */
    __m256i negative = _mm256_cmpgt_epi64(_mm256_setzero_si256(), r);
    l = _mm256_add_epi64(l, negative);
    r = _mm256_add_epi64(r, _mm256_and_si256(negative, side));
    /* r >= side: one too small. */
    __m256i over = _mm256_cmpgt_epi64(r, _mm256_sub_epi64(side, _mm256_set1_epi64x(1)));
    l = _mm256_sub_epi64(l, over);
    r = _mm256_sub_epi64(r, _mm256_and_si256(over, side));
    *left = l;
    *right = r;
}

/* Four vectors in flight: a round is a chain of dependent multiplies, and
 * four independent chains keep the multiplier busy while each waits. */
#define VECTORS 4

TARGET static void strided_avx2(const sl_permutation *perm, uint64_t first, uint64_t stride, int64_t count,
                                int64_t *out)
{
    const __m256i side = _mm256_set1_epi64x((long long)perm->side);
    const __m256d side_pd = _mm256_set1_pd((double)perm->side);
    const __m256i step = _mm256_set1_epi64x((long long)stride);
    const __m256i step_hi = _mm256_srli_epi64(step, 32);
    const __m256i lane_offsets = mul64(_mm256_setr_epi64x(0, 1, 2, 3), step, step_hi);
    const __m256i vector_step = mul64(_mm256_set1_epi64x(4), step, step_hi);
    const __m256i side_minus_one = _mm256_sub_epi64(side, _mm256_set1_epi64x(1));
    int64_t base = 0;
    for (; base + 4 * VECTORS <= count; base += 4 * VECTORS) {
        __m256i l[VECTORS], r[VECTORS];
        __m256i pos = _mm256_add_epi64(_mm256_set1_epi64x((long long)(first + (uint64_t)base * stride)), lane_offsets);
        for (int v = 0; v < VECTORS; v++) {
            split4(pos, side_pd, side, &l[v], &r[v]);
            pos = _mm256_add_epi64(pos, vector_step);
        }
        for (int round = 0; round < SL_FEISTEL_ROUNDS; round++) {
            __m256i key = _mm256_set1_epi64x((long long)perm->round_keys[round]);
            for (int v = 0; v < VECTORS; v++) {
                /* ((mix64(right ^ key) >> 32) * side) >> 32 */
                __m256i f = _mm256_srli_epi64(mix64(_mm256_xor_si256(r[v], key)), 32);
                f = _mm256_srli_epi64(_mm256_mul_epu32(f, side), 32);
                __m256i sum = _mm256_add_epi64(l[v], f);
                __m256i over = _mm256_cmpgt_epi64(sum, side_minus_one);
                l[v] = r[v];
                r[v] = _mm256_sub_epi64(sum, _mm256_and_si256(over, side));
            }
        }
        for (int v = 0; v < VECTORS; v++)
            _mm256_storeu_si256((__m256i *)(out + base + 4 * v), _mm256_add_epi64(_mm256_mul_epu32(l[v], side), r[v]));
        /* The rare lane that left [0, n) walks on alone. */
        for (int k = 0; k < 4 * VECTORS; k++)
            if ((uint64_t)out[base + k] >= perm->n)
                out[base + k] = (int64_t)sl__feistel_walk(perm, (uint64_t)out[base + k]);
    }
    if (base < count)
        sl__feistel_apply_strided(perm, first + (uint64_t)base * stride, stride, count - base, out + base);
}

/* The table's entry: the vector path where it applies, else the scalar one. */
void sl__cpu_permute_strided_avx2(const sl_permutation *perm, uint64_t first, uint64_t stride, int64_t count,
                                  int64_t *out)
{
    if (sl__feistel_vector_ok(perm, first, stride, count))
        strided_avx2(perm, first, stride, count, out);
    else
        sl__feistel_apply_strided(perm, first, stride, count, out);
}
#endif
#if !SL_HAVE_AVX2_CLONES
void sl__cpu_permute_strided_avx2(const sl_permutation *perm, uint64_t first, uint64_t stride, int64_t count,
                                  int64_t *out)
{
    sl__feistel_apply_strided(perm, first, stride, count, out);
}
#endif

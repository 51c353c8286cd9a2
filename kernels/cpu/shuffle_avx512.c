/* The grid Feistel of shuffle.c, eight positions per AVX-512 vector and
 * four vectors interleaved. As in the AVX2 path every step is the scalar
 * one on integers, so the ids are the same bit for bit (test_shuffle
 * compares all three paths on many sizes, seeds and strides).
 *
 * What AVX-512 buys over AVX2 here is more than the doubled width: DQ has a
 * native 64-bit multiply (vpmullq) where AVX2 builds each of SplitMix64's
 * two multiplies from three 32 x 32 -> 64 products, an unsigned 64-bit
 * compare into a mask where AVX2 needs a signed compare and an and-not, and
 * exact conversions between u64 and double, so the split of a position
 * into grid coordinates needs no trip through scalar registers. A batch's
 * ids are what separates a small row's `fused` time from its roofline probe
 * (docs/cli.md, fraction_of_roofline). */
#include "cpu/cpu.h"
#include "kernels/feistel.h"

#if SL_HAVE_AVX2_CLONES
#include <immintrin.h>

#define TARGET __attribute__((target("avx512f,avx512dq")))

TARGET static inline __m512i mix64(__m512i x)
{
    const __m512i c1 = _mm512_set1_epi64((long long)0xBF58476D1CE4E5B9ull);
    const __m512i c2 = _mm512_set1_epi64((long long)0x94D049BB133111EBull);
    x = _mm512_add_epi64(x, _mm512_set1_epi64((long long)0x9E3779B97F4A7C15ull));
    x = _mm512_mullo_epi64(_mm512_xor_si512(x, _mm512_srli_epi64(x, 30)), c1);
    x = _mm512_mullo_epi64(_mm512_xor_si512(x, _mm512_srli_epi64(x, 27)), c2);
    return _mm512_xor_si512(x, _mm512_srli_epi64(x, 31));
}

/* (left, right) of eight positions: left = x / side, right = x % side.
 * Positions below 2^62 convert exactly enough that the double quotient is
 * off by at most one either way; the integer remainder corrects it. */
TARGET static inline void split8(__m512i x, __m512d side_pd, __m512i side, __m512i *left, __m512i *right)
{
    __m512d q =
        _mm512_roundscale_pd(_mm512_div_pd(_mm512_cvtepu64_pd(x), side_pd), _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    __m512i l = _mm512_cvttpd_epu64(q);
    __m512i r = _mm512_sub_epi64(x, _mm512_mul_epu32(l, side));
    /* r < 0: the quotient was one too large. */
    __mmask8 negative = _mm512_cmplt_epi64_mask(r, _mm512_setzero_si512());
    l = _mm512_mask_sub_epi64(l, negative, l, _mm512_set1_epi64(1));
    r = _mm512_mask_add_epi64(r, negative, r, side);
    /* r >= side: one too small. */
    __mmask8 over = _mm512_cmpge_epu64_mask(r, side);
    l = _mm512_mask_add_epi64(l, over, l, _mm512_set1_epi64(1));
    r = _mm512_mask_sub_epi64(r, over, r, side);
    *left = l;
    *right = r;
}

/* Four vectors in flight, as in the AVX2 path: a round is a chain of
 * dependent multiplies, and independent chains keep the multiplier busy. */
#define VECTORS 4
#define WIDTH   8

TARGET static void strided_avx512(const sl_permutation *perm, uint64_t first, uint64_t stride, int64_t count,
                                  int64_t *out)
{
    const __m512i side = _mm512_set1_epi64((long long)perm->side);
    const __m512d side_pd = _mm512_set1_pd((double)perm->side);
    const __m512i step = _mm512_set1_epi64((long long)stride);
    const __m512i lane_offsets = _mm512_mullo_epi64(_mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7), step);
    const __m512i vector_step = _mm512_mullo_epi64(_mm512_set1_epi64(WIDTH), step);
    const __m512i n = _mm512_set1_epi64((long long)perm->n);
    int64_t base = 0;
    for (; base + WIDTH * VECTORS <= count; base += WIDTH * VECTORS) {
        __m512i l[VECTORS], r[VECTORS];
        __m512i pos = _mm512_add_epi64(_mm512_set1_epi64((long long)(first + (uint64_t)base * stride)), lane_offsets);
        for (int v = 0; v < VECTORS; v++) {
            split8(pos, side_pd, side, &l[v], &r[v]);
            pos = _mm512_add_epi64(pos, vector_step);
        }
        for (int round = 0; round < SL_FEISTEL_ROUNDS; round++) {
            __m512i key = _mm512_set1_epi64((long long)perm->round_keys[round]);
            for (int v = 0; v < VECTORS; v++) {
                /* ((mix64(right ^ key) >> 32) * side) >> 32 */
                __m512i f = _mm512_srli_epi64(mix64(_mm512_xor_si512(r[v], key)), 32);
                f = _mm512_srli_epi64(_mm512_mul_epu32(f, side), 32);
                __m512i sum = _mm512_add_epi64(l[v], f);
                l[v] = r[v];
                r[v] = _mm512_mask_sub_epi64(sum, _mm512_cmpge_epu64_mask(sum, side), sum, side);
            }
        }
        for (int v = 0; v < VECTORS; v++) {
            __m512i x = _mm512_add_epi64(_mm512_mul_epu32(l[v], side), r[v]);
            _mm512_storeu_si512(out + base + WIDTH * v, x);
            /* The rare lane that left [0, n) walks on alone. */
            __mmask8 outside = _mm512_cmpge_epu64_mask(x, n);
            while (outside) {
                int k = __builtin_ctz(outside);
                outside &= (__mmask8)(outside - 1);
                int64_t *id = out + base + WIDTH * v + k;
                *id = (int64_t)sl__feistel_walk(perm, (uint64_t)*id);
            }
        }
    }
    if (base < count)
        sl__cpu_permute_strided_avx2(perm, first + (uint64_t)base * stride, stride, count - base, out + base);
}

/* The table's entry: the vector path where it applies, else the scalar one. */
void sl__cpu_permute_strided_avx512(const sl_permutation *perm, uint64_t first, uint64_t stride, int64_t count,
                                    int64_t *out)
{
    if (sl__feistel_vector_ok(perm, first, stride, count))
        strided_avx512(perm, first, stride, count, out);
    else
        sl__feistel_apply_strided(perm, first, stride, count, out);
}
#endif
#if !SL_HAVE_AVX2_CLONES
void sl__cpu_permute_strided_avx512(const sl_permutation *perm, uint64_t first, uint64_t stride, int64_t count,
                                    int64_t *out)
{
    sl__feistel_apply_strided(perm, first, stride, count, out);
}
#endif

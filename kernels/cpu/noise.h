/* The optimized gaussian_noise step, instantiated per instruction set by
 * the element-wise chain that includes it (elementwise.c).
 *
 * The reference draws sixteen Philox blocks per group of 64 values and
 * inverts each word with a branch between the central region and the tails
 * (kernels/ref/elementwise.c). Here:
 *  - the sixteen blocks of a group run their ten rounds side by side, one
 *    vector lane per block, with intrinsics for AVX2 and AVX-512 (the
 *    auto-vectorizer leaves Philox's 32 x 32 -> 64-bit products scalar); the
 *    words come out in value order (ref.h's layout), so nothing is
 *    transposed;
 *  - the central region is evaluated for every value of a chunk in one
 *    vectorized loop; the values in the tails (4.85%) are gathered into a
 *    short list and inverted by a second vectorized loop, so the tails' log,
 *    sqrt and division are paid for them alone.
 * Each value sees the reference's operations in the reference's order, and
 * + - * / and sqrt are correctly rounded in every lane, so the output is the
 * reference's bit for bit (test_kernels checks every table). */
#ifndef SLUICE_KERNELS_CPU_NOISE_H
#define SLUICE_KERNELS_CPU_NOISE_H

#include <string.h>

#include "cpu/cpu.h"

#if SL_HAVE_AVX2_CLONES
#include <immintrin.h>
#endif

/* Words of one group: words[16 k + j] is word k of block
 * first_draw + j. One function per instruction set. */
typedef void (*noise_words_fn)(const sl_ew_step *step, uint32_t first_draw, uint32_t *restrict words);

static inline void noise_words_scalar(const sl_ew_step *step, uint32_t first_draw, uint32_t *restrict words)
{
    for (int j = 0; j < SL_NOISE_BLOCKS; j++) {
        sl_philox_ctr r = sl__noise_block(step, first_draw + (uint32_t)j);
        for (int k = 0; k < 4; k++)
            words[k * SL_NOISE_BLOCKS + j] = r.v[k];
    }
}

#if SL_HAVE_AVX2_CLONES
/* The high and low 32 bits of a x m per 32-bit lane (m the same in every
 * lane): even lanes' products directly, odd lanes' after a shift. */
SL_TARGET_AVX2 static inline void mulhilo_avx2(__m256i a, __m256i m, __m256i *hi, __m256i *lo)
{
    __m256i even = _mm256_mul_epu32(a, m);
    __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), m);
    *hi = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
    *lo = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
}

SL_TARGET_AVX2 static inline void noise_words_avx2(const sl_ew_step *step, uint32_t first_draw,
                                                   uint32_t *restrict words)
{
    const __m256i m0 = _mm256_set1_epi32((int)SL_PHILOX_M0), m1 = _mm256_set1_epi32((int)SL_PHILOX_M1);
    for (int half = 0; half < SL_NOISE_BLOCKS / 8; half++) {
        __m256i c0 = _mm256_set1_epi32((int)step->ctr.v[0]);
        __m256i c1 = _mm256_set1_epi32((int)step->ctr.v[1]);
        __m256i c2 = _mm256_set1_epi32((int)step->ctr.v[2]);
        __m256i c3 = _mm256_add_epi32(_mm256_set1_epi32((int)(step->ctr.v[3] + first_draw + 8u * (uint32_t)half)),
                                      _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        uint32_t k0 = step->key.v[0], k1 = step->key.v[1];
        for (int round = 0; round < 10; round++) {
            __m256i hi0, lo0, hi1, lo1;
            mulhilo_avx2(c0, m0, &hi0, &lo0);
            mulhilo_avx2(c2, m1, &hi1, &lo1);
            c0 = _mm256_xor_si256(_mm256_xor_si256(hi1, c1), _mm256_set1_epi32((int)k0));
            c2 = _mm256_xor_si256(_mm256_xor_si256(hi0, c3), _mm256_set1_epi32((int)k1));
            c1 = lo1;
            c3 = lo0;
            k0 += SL_PHILOX_W0;
            k1 += SL_PHILOX_W1;
        }
        _mm256_storeu_si256((__m256i *)(words + 0 * SL_NOISE_BLOCKS + 8 * half), c0);
        _mm256_storeu_si256((__m256i *)(words + 1 * SL_NOISE_BLOCKS + 8 * half), c1);
        _mm256_storeu_si256((__m256i *)(words + 2 * SL_NOISE_BLOCKS + 8 * half), c2);
        _mm256_storeu_si256((__m256i *)(words + 3 * SL_NOISE_BLOCKS + 8 * half), c3);
    }
}

SL_TARGET_AVX512 static inline void mulhilo_avx512(__m512i a, __m512i m, __m512i *hi, __m512i *lo)
{
    __m512i even = _mm512_mul_epu32(a, m);
    __m512i odd = _mm512_mul_epu32(_mm512_srli_epi64(a, 32), m);
    *hi = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(even, 32), odd);
    *lo = _mm512_mask_blend_epi32(0xAAAA, even, _mm512_slli_epi64(odd, 32));
}

SL_TARGET_AVX512 static inline void noise_words_avx512(const sl_ew_step *step, uint32_t first_draw,
                                                       uint32_t *restrict words)
{
    const __m512i m0 = _mm512_set1_epi32((int)SL_PHILOX_M0), m1 = _mm512_set1_epi32((int)SL_PHILOX_M1);
    __m512i c0 = _mm512_set1_epi32((int)step->ctr.v[0]);
    __m512i c1 = _mm512_set1_epi32((int)step->ctr.v[1]);
    __m512i c2 = _mm512_set1_epi32((int)step->ctr.v[2]);
    __m512i c3 = _mm512_add_epi32(_mm512_set1_epi32((int)(step->ctr.v[3] + first_draw)),
                                  _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
    uint32_t k0 = step->key.v[0], k1 = step->key.v[1];
    for (int round = 0; round < 10; round++) {
        __m512i hi0, lo0, hi1, lo1;
        mulhilo_avx512(c0, m0, &hi0, &lo0);
        mulhilo_avx512(c2, m1, &hi1, &lo1);
        c0 = _mm512_xor_si512(_mm512_xor_si512(hi1, c1), _mm512_set1_epi32((int)k0));
        c2 = _mm512_xor_si512(_mm512_xor_si512(hi0, c3), _mm512_set1_epi32((int)k1));
        c1 = lo1;
        c3 = lo0;
        k0 += SL_PHILOX_W0;
        k1 += SL_PHILOX_W1;
    }
    _mm512_storeu_si512(words + 0 * SL_NOISE_BLOCKS, c0);
    _mm512_storeu_si512(words + 1 * SL_NOISE_BLOCKS, c1);
    _mm512_storeu_si512(words + 2 * SL_NOISE_BLOCKS, c2);
    _mm512_storeu_si512(words + 3 * SL_NOISE_BLOCKS, c3);
}
#endif

/* Values per chunk: enough that a chunk's tail values (about 25) fill a
 * few vectors, few enough that the chunk's arrays stay in L1. */
#define NOISE_CHUNK (8 * SL_NOISE_GROUP)

/* Values [first, first + len) of one element, first a multiple of
 * SL_NOISE_GROUP (the chain's tiles are). */
SL_ALWAYS_INLINE void noise_run(float *restrict x, int64_t first, int64_t len, const sl_ew_step *step,
                                noise_words_fn words_of)
{
    const float sigma = step->a;
    uint32_t words[NOISE_CHUNK];
    double t[NOISE_CHUNK], magnitude[NOISE_CHUNK], tail_t[NOISE_CHUNK];
    int tail_at[NOISE_CHUNK];
    uint8_t in_tail[NOISE_CHUNK + 8];
    for (int64_t start = 0; start < len; start += NOISE_CHUNK) {
        int count = len - start < NOISE_CHUNK ? (int)(len - start) : NOISE_CHUNK;
        int groups = (count + SL_NOISE_GROUP - 1) / SL_NOISE_GROUP;
        for (int g = 0; g < groups; g++)
            words_of(step, (uint32_t)((first + start) / SL_NOISE_GROUP + g) * SL_NOISE_BLOCKS,
                     words + g * SL_NOISE_GROUP);
        for (int i = 0; i < count; i++) {
            t[i] = sl__normal_t(sl__normal_half_word(words[i]));
            magnitude[i] = sl__normal_central(t[i]);
            in_tail[i] = t[i] < SL_NORMAL_P_LOW;
        }
        /* The tail values' places, eight flags at a time: two thirds of
         * the eights hold no tail value and cost one test. */
        int tails = 0;
        memset(in_tail + count, 0, (size_t)(-count & 7));
        for (int i = 0; i < count; i += 8) {
            uint64_t flags;
            memcpy(&flags, in_tail + i, sizeof flags);
            for (; flags; flags &= flags - 1) {
                int at = i + __builtin_ctzll(flags) / 8;
                tail_at[tails] = at;
                tail_t[tails++] = t[at];
            }
        }
        for (int k = 0; k < tails; k++)
            tail_t[k] = sl__normal_tail(tail_t[k]);
        for (int k = 0; k < tails; k++)
            magnitude[tail_at[k]] = tail_t[k];
        for (int i = 0; i < count; i++) {
            double z = (words[i] >> 31) ? -magnitude[i] : magnitude[i];
            x[start + i] = x[start + i] + sigma * (float)z;
        }
    }
}

#endif

/* Philox4x32-10, the counter-based generator behind every random decision.
 *
 * Header-only and free of host-only calls so the same function compiles for
 * CPU and for CUDA device code: both back ends then draw identical numbers
 * for the same (key, counter), which is what lets a GPU run match the CPU
 * reference bit for bit (DESIGN.md, invariant 1). */
#ifndef SLUICE_PHILOX_H
#define SLUICE_PHILOX_H

#include <stdint.h>

#if defined(__CUDACC__)
#define SL_HOSTDEV __host__ __device__ __forceinline__
#else
#define SL_HOSTDEV static inline
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sl_philox_ctr {
    uint32_t v[4];
} sl_philox_ctr;
typedef struct sl_philox_key {
    uint32_t v[2];
} sl_philox_key;

/* Constants from Salmon et al., "Parallel random numbers: as easy as 1, 2, 3"
 * (SC'11), as used by Random123. */
#define SL_PHILOX_M0 0xD2511F53u
#define SL_PHILOX_M1 0xCD9E8D57u
#define SL_PHILOX_W0 0x9E3779B9u
#define SL_PHILOX_W1 0xBB67AE85u

SL_HOSTDEV sl_philox_ctr sl_philox_round(sl_philox_ctr c, sl_philox_key k)
{
    uint64_t p0 = (uint64_t)SL_PHILOX_M0 * c.v[0];
    uint64_t p1 = (uint64_t)SL_PHILOX_M1 * c.v[2];
    sl_philox_ctr r;
    r.v[0] = (uint32_t)(p1 >> 32) ^ c.v[1] ^ k.v[0];
    r.v[1] = (uint32_t)p1;
    r.v[2] = (uint32_t)(p0 >> 32) ^ c.v[3] ^ k.v[1];
    r.v[3] = (uint32_t)p0;
    return r;
}

/* Ten rounds with the key bumped between rounds, exactly Random123's
 * philox4x32_R(10, ...). */
SL_HOSTDEV sl_philox_ctr sl_philox4x32_10(sl_philox_ctr c, sl_philox_key k)
{
    for (int round = 0; round < 10; round++) {
        if (round > 0) {
            k.v[0] += SL_PHILOX_W0;
            k.v[1] += SL_PHILOX_W1;
        }
        c = sl_philox_round(c, k);
    }
    return c;
}

/* SplitMix64's output for state x: the golden gamma 0x9E3779B97F4A7C15
 * added, then SplitMix64's finalizer (so sl_mix64(s) is the first value
 * SplitMix64 seeded with s returns). A bijective 64-bit mixer: it turns
 * (seed, stream id) pairs into well-spread Philox keys, is the Feistel
 * shuffle's round function and hash_ids' hash. */
SL_HOSTDEV uint64_t sl_mix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* The key of one random stream: (seed, stream). Ops use their op id as the
 * stream; the shuffle and fixtures use reserved tags (see rng.h). */
SL_HOSTDEV sl_philox_key sl_philox_key_for(uint64_t seed, uint64_t stream)
{
    uint64_t mixed = sl_mix64(seed ^ sl_mix64(stream));
    sl_philox_key k;
    k.v[0] = (uint32_t)mixed;
    k.v[1] = (uint32_t)(mixed >> 32);
    return k;
}

/* The counter of one draw: (element, epoch, draw index). Element indices are
 * data set indices, never batch positions, so a draw does not depend on the
 * batch size, the worker count or where a run was resumed. */
SL_HOSTDEV sl_philox_ctr sl_philox_ctr_for(uint64_t element, uint32_t epoch, uint32_t draw)
{
    sl_philox_ctr c;
    c.v[0] = (uint32_t)element;
    c.v[1] = (uint32_t)(element >> 32);
    c.v[2] = epoch;
    c.v[3] = draw;
    return c;
}

/* Uniform float in [0, 1) from the top 24 bits: every value is exactly
 * representable, so host and device agree bit for bit. */
SL_HOSTDEV float sl_u32_to_unit_float(uint32_t x)
{
    return (float)(x >> 8) * (1.0f / 16777216.0f);
}

/* Uniform integer in [0, n) by Lemire's multiply-shift, for n <= 2^32. The
 * bias is at most n / 2^32, negligible for the ranges sluice draws. */
SL_HOSTDEV uint32_t sl_u32_below(uint32_t x, uint32_t n)
{
    return (uint32_t)(((uint64_t)x * n) >> 32);
}

#ifdef __cplusplus
}
#endif

#endif

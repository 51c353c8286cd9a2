/* A standard normal variate from one 32-bit random word, without libm.
 *
 * gaussian_noise must give the same bits on every machine and back end, so
 * its normal variate uses only integer operations and correctly rounded
 * double + - * / and sqrt (IEEE 754 requires all five to be exact-rounded;
 * log, exp, sin and cos have no such guarantee and differ between C
 * libraries). The method is inversion: z = Phi^-1(p) for p = (w + 1/2) /
 * 2^32, by Acklam's rational approximation (relative error below 1.15e-9
 * over the whole range), whose tails need one log, computed here from the
 * exponent bits and an atanh series. The result rounded to float is within
 * 0.52 ulp of the exact Phi^-1(p): docs/determinism.md states the bound,
 * tests/unit/test_normal.c holds it against a double recomputation.
 *
 * Every function is defined on a 32-bit word so that the reference kernel,
 * the vectorized ones and a test compute the same thing; the vectorized
 * kernels evaluate both branches and select, which gives the same bits as
 * the reference's branch. */
#ifndef SLUICE_NORMAL_H
#define SLUICE_NORMAL_H

#include <math.h>
#include <stdint.h>

/* SL_HOSTDEV: SL_HOSTDEV in C, __host__ __device__ under nvcc, so the
 * CUDA kernels (kernels/include/kernels/bodies.h) draw the same variate. */
#include "sluice/core/philox.h"

/* Acklam's coefficients ("An algorithm for computing the inverse normal
 * cumulative distribution function", 2003), as decimal literals that every
 * compiler rounds to the same double. Central region: x = q A(r) / B(r) with
 * q = p - 1/2, r = q^2; lower tail (p < SL_NORMAL_P_LOW): x = C(s) / D(s)
 * with s = sqrt(-2 log p); the upper tail by symmetry. */
#define SL_NORMAL_A1    (-3.969683028665376e+01)
#define SL_NORMAL_A2    2.209460984245205e+02
#define SL_NORMAL_A3    (-2.759285104469687e+02)
#define SL_NORMAL_A4    1.383577518672690e+02
#define SL_NORMAL_A5    (-3.066479806614716e+01)
#define SL_NORMAL_A6    2.506628277459239e+00
#define SL_NORMAL_B1    (-5.447609879822406e+01)
#define SL_NORMAL_B2    1.615858368580409e+02
#define SL_NORMAL_B3    (-1.556989798598866e+02)
#define SL_NORMAL_B4    6.680131188771972e+01
#define SL_NORMAL_B5    (-1.328068155288572e+01)
#define SL_NORMAL_C1    (-7.784894002430293e-03)
#define SL_NORMAL_C2    (-3.223964580411365e-01)
#define SL_NORMAL_C3    (-2.400758277161838e+00)
#define SL_NORMAL_C4    (-2.549732539343734e+00)
#define SL_NORMAL_C5    4.374664141464968e+00
#define SL_NORMAL_C6    2.938163982698783e+00
#define SL_NORMAL_D1    7.784695709041462e-03
#define SL_NORMAL_D2    3.224671290700398e-01
#define SL_NORMAL_D3    2.445134137142996e+00
#define SL_NORMAL_D4    3.754408661907416e+00
#define SL_NORMAL_P_LOW 0.02425

/* log of the mantissa m in [sqrt(1/2), sqrt(2)) as 2 atanh(s), s = (m - 1) /
 * (m + 1), |s| <= 0.1716: the series through s^15 / 15 leaves a truncation
 * below 2 |s|^17 / 17 < 1.2e-14, and the log of p < 0.02425 is at least 3.7
 * in magnitude, so the relative error stays near 3e-15. */
#define SL_NORMAL_LN2            0.6931471805599453
#define SL_NORMAL_SQRT2_MANTISSA 0x6A09E667F3BCDull /* mantissa bits of sqrt(2) */

/* p's word: the smaller of w and its complement, so that t = min(p, 1 - p)
 * is exact, and z(w) = -z(~w) bit for bit. */
SL_HOSTDEV uint32_t sl__normal_half_word(uint32_t w)
{
    return w ^ (uint32_t)(0u - (w >> 31));
}

/* t = (h + 1/2) / 2^32 for h < 2^31: 33 significant bits, exact in double. */
SL_HOSTDEV double sl__normal_t(uint32_t h)
{
    return ((double)h + 0.5) * 0x1p-32;
}

/* The central region's x for q = t - 1/2 (exact). */
SL_HOSTDEV double sl__normal_central(double t)
{
    double q = t - 0.5;
    double r = q * q;
    double num = (((((SL_NORMAL_A1 * r + SL_NORMAL_A2) * r + SL_NORMAL_A3) * r + SL_NORMAL_A4) * r + SL_NORMAL_A5) * r +
                  SL_NORMAL_A6) *
                 q;
    double den =
        ((((SL_NORMAL_B1 * r + SL_NORMAL_B2) * r + SL_NORMAL_B3) * r + SL_NORMAL_B4) * r + SL_NORMAL_B5) * r + 1.0;
    return num / den;
}

/* Doubles as their bits and back, through a union (defined in C11), which
 * the auto-vectorizer turns into plain register moves. */
typedef union sl__normal_bits {
    double d;
    uint64_t u;
} sl__normal_bits;

/* Splits t > 0 (normal, never subnormal here) into e and m with t = 2^e m,
 * m in [sqrt(1/2), sqrt(2)): integer operations on the bits, exact. The
 * biased exponent becomes a double by placing it in the mantissa of 2^52
 * and subtracting 2^52 (exact), which needs no int64 conversion, an
 * instruction AVX2 lacks. */
SL_HOSTDEV double sl__normal_split(double t, double *e)
{
#if defined(__CUDACC__)
    /* C++ before C++20 has no designated initializers: the same bits,
     * assigned. */
    sl__normal_bits bits, biased, m;
    bits.d = t;
    uint64_t mantissa = bits.u & 0x000FFFFFFFFFFFFFull;
    uint64_t above = mantissa > SL_NORMAL_SQRT2_MANTISSA;
    biased.u = 0x4330000000000000ull | ((bits.u >> 52) + above);
    *e = (biased.d - 0x1p52) - 1023.0;
    m.u = mantissa | ((0x3FFull - above) << 52);
    return m.d;
#else
    sl__normal_bits bits = {.d = t};
    uint64_t mantissa = bits.u & 0x000FFFFFFFFFFFFFull;
    uint64_t above = mantissa > SL_NORMAL_SQRT2_MANTISSA; /* m >= sqrt(2): halve it */
    sl__normal_bits biased = {.u = 0x4330000000000000ull | ((bits.u >> 52) + above)};
    *e = (biased.d - 0x1p52) - 1023.0;
    sl__normal_bits m = {.u = mantissa | ((0x3FFull - above) << 52)};
    return m.d;
#endif
}

/* log t, for t normal and positive. */
SL_HOSTDEV double sl__normal_log(double t)
{
    double e;
    double m = sl__normal_split(t, &e);
    double s = (m - 1.0) / (m + 1.0);
    double s2 = s * s;
    double series =
        ((((((2.0 / 15.0 * s2 + 2.0 / 13.0) * s2 + 2.0 / 11.0) * s2 + 2.0 / 9.0) * s2 + 2.0 / 7.0) * s2 + 2.0 / 5.0) *
             s2 +
         2.0 / 3.0) *
            s2 +
        2.0;
    return e * SL_NORMAL_LN2 + s * series;
}

/* The lower tail's x for t < SL_NORMAL_P_LOW. sqrt is correctly rounded. */
SL_HOSTDEV double sl__normal_tail(double t)
{
    double s = sqrt(-2.0 * sl__normal_log(t));
    double num = ((((SL_NORMAL_C1 * s + SL_NORMAL_C2) * s + SL_NORMAL_C3) * s + SL_NORMAL_C4) * s + SL_NORMAL_C5) * s +
                 SL_NORMAL_C6;
    double den = (((SL_NORMAL_D1 * s + SL_NORMAL_D2) * s + SL_NORMAL_D3) * s + SL_NORMAL_D4) * s + 1.0;
    return num / den;
}

/* Phi^-1((w + 1/2) / 2^32) in double, within 1.15e-9 relative. */
SL_HOSTDEV double sl__normal_from_word(uint32_t w)
{
    double t = sl__normal_t(sl__normal_half_word(w));
    double x = t < SL_NORMAL_P_LOW ? sl__normal_tail(t) : sl__normal_central(t);
    return (w >> 31) ? -x : x;
}

/* The variate gaussian_noise adds (times sigma): the double rounded once. */
SL_HOSTDEV float sl__normal_f32(uint32_t w)
{
    return (float)sl__normal_from_word(w);
}

#endif

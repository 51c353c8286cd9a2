/* Elementary functions built from + - * / and bit manipulation only, never
 * libm: transcendental functions differ between C libraries (and between
 * versions of one), and sluice promises the same bits on every machine for
 * fixtures and reference kernels. Each is evaluated in double in a fixed
 * order, so on any IEEE 754 machine built without contraction (sluice's
 * -ffp-contract=off) it gives the same bits; accuracy is a few ulp of double,
 * far below the float results they feed. Arguments must be finite (and
 * positive, normal for the logarithms); callers guarantee it. */
#ifndef SLUICE_DETMATH_H
#define SLUICE_DETMATH_H

#include <stdint.h>
#include <string.h>

#include "sluice/core/philox.h" /* SL_HOSTDEV: the same functions on the host and the device */

/* rint and floor are exact operations; on the device they are CUDA's own,
 * elsewhere the compiler's builtins, so no libm is needed either way. */
#if defined(__CUDA_ARCH__)
#define SL__DET_RINT(x)  rint(x)
#define SL__DET_FLOOR(x) floor(x)
#else
#define SL__DET_RINT(x)  __builtin_rint(x)
#define SL__DET_FLOOR(x) __builtin_floor(x)
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define SL_DET_TWO_PI 6.283185307179586476925286766559
#define SL_DET_LN2    0.693147180559945309417232121458
/* ln 2 split so that n * LN2_HI is exact for |n| < 2^20 (fdlibm's split). */
#define SL_DET_LN2_HI 6.93147180369123816490e-01
#define SL_DET_LN2_LO 1.90821492927058770002e-10

/* sin(2 pi turns). The reduction to a quarter turn is exact (turns minus
 * its integer part, then reflections by 1/2 and 1), so the error is that of
 * the polynomial, a Taylor series to x^23 on |x| <= pi / 2 (remainder below
 * 1e-19). */
SL_HOSTDEV double sl_det_sin_turns(double turns)
{
    double t = turns - (double)(int64_t)turns;
    if (t < 0.0)
        t += 1.0;
    if (t > 0.75)
        t -= 1.0;
    else if (t > 0.25)
        t = 0.5 - t;
    double x = SL_DET_TWO_PI * t, x2 = x * x;
    /* 1/3!, 1/5!, ... 1/23!, alternating, by Horner. */
    static const double c[] = {-1.0 / 6.0,
                               1.0 / 120.0,
                               -1.0 / 5040.0,
                               1.0 / 362880.0,
                               -1.0 / 39916800.0,
                               1.0 / 6227020800.0,
                               -1.0 / 1307674368000.0,
                               1.0 / 355687428096000.0,
                               -1.0 / 121645100408832000.0,
                               1.0 / 51090942171709440000.0,
                               -1.0 / 25852016738884976640000.0};
    double p = c[10];
    for (int i = 9; i >= 0; i--)
        p = c[i] + x2 * p;
    return x + x * x2 * p;
}

/* cos(2 pi turns) = sin(2 pi (turns + 1/4)). */
SL_HOSTDEV double sl_det_cos_turns(double turns)
{
    return sl_det_sin_turns(turns + 0.25);
}

/* sin and cos of 2 pi turns together, without branches (so a loop of them
 * vectorizes): the nearest quarter turn q (rint, ties to even, in the
 * default rounding mode) leaves r = turns - q / 4 in [-1/8, 1/8], whose sine
 * and cosine are Taylor polynomials on |x| <= pi / 4 (to x^19 and x^18:
 * remainders below 1e-19); the quadrant q mod 4 then picks and signs them.
 * Every step is + - * or an exact rint / floor, so the bits are the same on
 * every machine and in every vector width. */
SL_HOSTDEV void sl_det_sincos_turns(double turns, double *sin_out, double *cos_out)
{
    double q = SL__DET_RINT(turns * 4.0);
    double r = turns - q * 0.25;
    double quadrant = q - 4.0 * SL__DET_FLOOR(q * 0.25);
    double x = SL_DET_TWO_PI * r, x2 = x * x;
    /* 1/3!, 1/5!, ... 1/19! and 1/2!, 1/4!, ... 1/18!, alternating. */
    double ps = -1.0 / 121645100408832000.0;
    ps = 1.0 / 355687428096000.0 + x2 * ps;
    ps = -1.0 / 1307674368000.0 + x2 * ps;
    ps = 1.0 / 6227020800.0 + x2 * ps;
    ps = -1.0 / 39916800.0 + x2 * ps;
    ps = 1.0 / 362880.0 + x2 * ps;
    ps = -1.0 / 5040.0 + x2 * ps;
    ps = 1.0 / 120.0 + x2 * ps;
    ps = -1.0 / 6.0 + x2 * ps;
    double s = x + x * x2 * ps;
    double pc = -1.0 / 6402373705728000.0;
    pc = 1.0 / 20922789888000.0 + x2 * pc;
    pc = -1.0 / 87178291200.0 + x2 * pc;
    pc = 1.0 / 479001600.0 + x2 * pc;
    pc = -1.0 / 3628800.0 + x2 * pc;
    pc = 1.0 / 40320.0 + x2 * pc;
    pc = -1.0 / 720.0 + x2 * pc;
    pc = 1.0 / 24.0 + x2 * pc;
    pc = -0.5 + x2 * pc;
    double c = 1.0 + x2 * pc;
    /* Quadrant k rotates by k quarter turns: (s, c), (c, -s), (-s, -c), (-c, s). */
    double odd_s = quadrant == 1.0 || quadrant == 3.0 ? c : s;
    double odd_c = quadrant == 1.0 || quadrant == 3.0 ? s : c;
    *sin_out = quadrant >= 2.0 ? -odd_s : odd_s;
    *cos_out = quadrant == 1.0 || quadrant == 2.0 ? -odd_c : odd_c;
}

/* Natural logarithm of a positive normal double: x = 2^e m with m in
 * [sqrt(1/2), sqrt(2)), ln m = 2 atanh((m - 1) / (m + 1)) by its series to
 * z^29 (|z| <= 0.1716, remainder below 1e-23). */
SL_HOSTDEV double sl_det_log(double x)
{
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    int e = (int)((bits >> 52) & 0x7ff) - 1023;
    bits = (bits & 0x000fffffffffffffull) | 0x3ff0000000000000ull;
    double m;
    memcpy(&m, &bits, sizeof m);
    if (m > 1.4142135623730951) {
        m *= 0.5;
        e += 1;
    }
    double z = (m - 1.0) / (m + 1.0), z2 = z * z;
    double p = 1.0 / 29.0;
    for (int k = 27; k >= 1; k -= 2)
        p = 1.0 / k + z2 * p;
    return (double)e * SL_DET_LN2_HI + ((double)e * SL_DET_LN2_LO + 2.0 * z * p);
}

/* e^x for |x| < 700: x = n ln 2 + r with |r| <= ln(2) / 2, e^r by its Taylor
 * series to r^20 (remainder below 1e-25), scaled by 2^n through the
 * exponent bits. */
SL_HOSTDEV double sl_det_exp(double x)
{
    double q = x / SL_DET_LN2;
    int64_t n = (int64_t)(q < 0.0 ? q - 0.5 : q + 0.5);
    double r = (x - (double)n * SL_DET_LN2_HI) - (double)n * SL_DET_LN2_LO;
    double p = 1.0;
    for (int k = 20; k >= 1; k--)
        p = 1.0 + r * p / k;
    uint64_t bits = (uint64_t)(n + 1023) << 52;
    double scale;
    memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}

/* log10 of a positive normal float, computed in double and rounded once:
 * within an ulp of float of the true value. */
SL_HOSTDEV float sl_det_log10f(float x)
{
    return (float)(sl_det_log((double)x) * 0.434294481903251827651128918917);
}

#ifdef __cplusplus
}
#endif

#endif

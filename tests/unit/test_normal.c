/* gaussian_noise's normal variate (kernels/include/kernels/normal.h) against the exact
 * inverse normal CDF recomputed here with libm (Newton's method on erf and
 * erfc in long double), and its distribution against the normal's moments
 * and tails within stated sampling bounds. */
#include <math.h>
#include <stdlib.h>

#include <criterion/criterion.h>

#include "kernels/normal.h"
#include "sluice/core/philox.h"

/* Phi^-1(t) for t = (h + 1/2) / 2^32 in (0, 1/2), by Newton's method from
 * the variate under test. Near t = 1/2 the step uses erf (Phi(x) - 1/2 =
 * erf(x / sqrt 2) / 2 keeps its relative accuracy as x -> 0), elsewhere
 * erfc (which keeps it in the far tail). Three steps from a start within
 * 1e-9 leave the rounding of erf / erfc as the only error. */
static long double exact_lower(uint32_t h)
{
    long double t = ((long double)h + 0.5L) / 4294967296.0L;
    long double x = sl__normal_from_word(h);
    const long double rsqrt2 = 0.70710678118654752440084436210484903928L;
    const long double rsqrt2pi = 0.39894228040143267793994605993438186848L;
    for (int i = 0; i < 3; i++) {
        long double residual = t < 0.25L ? 0.5L * erfcl(-x * rsqrt2) - t : 0.5L * erfl(x * rsqrt2) - (t - 0.5L);
        x -= residual / (rsqrt2pi * expl(-0.5L * x * x));
    }
    return x;
}

/* Phi^-1((w + 1/2) / 2^32) for any word, by symmetry. */
static long double exact(uint32_t w)
{
    return (w >> 31) ? -exact_lower(~w) : exact_lower(w);
}

/* The spacing of floats at |x|: 2^(e - 23) for |x| in [2^e, 2^(e+1)). */
static long double float_ulp(long double x)
{
    int e;
    frexpl(x, &e);
    return ldexpl(1.0L, e - 24);
}

typedef struct error_stats {
    double max_relative;
    double max_ulps;
    uint32_t worst_relative, worst_ulps;
    long count;
} error_stats;

static void measure(uint32_t w, error_stats *s)
{
    long double x = exact(w);
    double z = sl__normal_from_word(w);
    float f = sl__normal_f32(w);
    double relative = (double)fabsl(((long double)z - x) / x);
    double ulps = (double)(fabsl((long double)f - x) / float_ulp(x));
    if (relative > s->max_relative) {
        s->max_relative = relative;
        s->worst_relative = w;
    }
    if (ulps > s->max_ulps) {
        s->max_ulps = ulps;
        s->worst_ulps = w;
    }
    s->count++;
}

static uint32_t random_word(uint64_t i)
{
    return sl_philox4x32_10(sl_philox_ctr_for(i / 4, 0, 0), sl_philox_key_for(7, 77)).v[i % 4];
}

/* docs/determinism.md: the double is within 1.15e-9 relative of Phi^-1(p)
 * (Acklam's bound, with our log's error far below it), so the float is
 * within 0.5 ulp + 1.15e-9 |x| <= 0.52 ulp. Checked on every word of both
 * deep tails (2^18 words each, |z| > 3.84), on the words around the
 * switches between the central region and the tails, and on 2^19 random
 * words. */
Test(normal, variate_is_within_the_stated_bound_of_the_exact_inverse)
{
    error_stats s = {0};
    for (uint32_t w = 0; w < (1u << 18); w++) {
        measure(w, &s);
        measure(~w, &s);
    }
    uint32_t at_switch = (uint32_t)(SL_NORMAL_P_LOW * 4294967296.0);
    for (uint32_t d = 0; d < (1u << 16); d++) {
        measure(at_switch - (1u << 15) + d, &s);
        measure(~(at_switch - (1u << 15) + d), &s);
    }
    for (uint64_t i = 0; i < (1u << 19); i++)
        measure(random_word(i), &s);
    cr_expect_leq(s.max_relative, 1.15e-9, "relative error %.4g at word %u", s.max_relative, s.worst_relative);
    cr_expect_leq(s.max_ulps, 0.52, "float error %.4f ulp at word %u", s.max_ulps, s.worst_ulps);
    /* The bound is not loose: Acklam's approximation does reach 1e-9. */
    cr_expect_geq(s.max_relative, 1e-9, "relative error only %.4g: is this the stated method?", s.max_relative);
}

Test(normal, variate_is_antisymmetric_and_its_sign_follows_the_top_bit)
{
    for (uint64_t i = 0; i < (1u << 16); i++) {
        uint32_t w = random_word(i);
        float z = sl__normal_f32(w), mirrored = sl__normal_f32(~w);
        cr_assert_eq(z, -mirrored, "z(%u) = %.9g but z(~w) = %.9g", w, z, mirrored);
        cr_assert_eq(z < 0.0f, w < 0x80000000u, "word %u gives %.9g", w, z);
    }
    /* The extremes: p = 2^-33 and 1 - 2^-33, where Phi^-1 is
     * -/+6.3379577545537892525 (computed with 30 digits). */
    cr_expect_float_eq(sl__normal_from_word(0), -6.3379577545537893, 1e-8);
    cr_expect_float_eq(sl__normal_from_word(0xFFFFFFFFu), 6.3379577545537893, 1e-8);
}

/* 2^22 variates of random words against N(0, 1), each figure within five
 * of its standard errors, computed from the normal's own moments: the mean
 * (se 1 / sqrt N), the variance (se sqrt(2 / N)), the fourth moment (3,
 * se sqrt((105 - 9) / N)) and the mass beyond 2, 3 and 4 standard
 * deviations (binomial se). */
Test(normal, moments_and_tails_match_the_standard_normal)
{
    const long n = 1L << 22;
    double sum = 0, sum2 = 0, sum4 = 0;
    long beyond[3] = {0, 0, 0};
    for (long i = 0; i < n; i++) {
        double z = sl__normal_f32(random_word((uint64_t)i + (1u << 20)));
        sum += z;
        sum2 += z * z;
        sum4 += z * z * z * z;
        for (int k = 0; k < 3; k++)
            beyond[k] += fabs(z) > k + 2;
    }
    double mean = sum / n, var = sum2 / n - mean * mean, m4 = sum4 / n;
    cr_expect_leq(fabs(mean), 5.0 / sqrt((double)n), "mean %.5f", mean);
    cr_expect_leq(fabs(var - 1.0), 5.0 * sqrt(2.0 / n), "variance %.5f", var);
    cr_expect_leq(fabs(m4 - 3.0), 5.0 * sqrt(96.0 / n), "fourth moment %.4f", m4);
    for (int k = 0; k < 3; k++) {
        double p = erfc((k + 2) / sqrt(2.0)); /* P(|z| > k + 2) */
        double observed = (double)beyond[k] / n;
        cr_expect_leq(fabs(observed - p), 5.0 * sqrt(p * (1 - p) / n), "P(|z| > %d): %.3g observed, %.3g expected",
                      k + 2, observed, p);
    }
}

/* The log the tails use, against libm's: the series' truncation is below
 * 2 |s|^17 / 17 < 1.2e-14 in absolute terms for any t, which is within
 * 4e-15 relative where the tails use it (t < 0.02425, |log t| > 3.7). */
Test(normal, log_is_accurate_without_libm)
{
    double worst_relative = 0, worst_absolute = 0;
    for (int i = 0; i < 200000; i++) {
        double t = ldexp(1.0 + (double)random_word((uint64_t)i) * 0x1p-32, -1 - (i % 40));
        double got = sl__normal_log(t), want = (double)logl((long double)t);
        if (t < SL_NORMAL_P_LOW)
            worst_relative = fmax(worst_relative, fabs((got - want) / want));
        worst_absolute = fmax(worst_absolute, fabs(got - want));
    }
    cr_expect_leq(worst_relative, 4e-15, "log's relative error reaches %.3g in the tails", worst_relative);
    cr_expect_leq(worst_absolute, 2e-14, "log's absolute error reaches %.3g", worst_absolute);
}

/* The libm-free functions (detmath.h) against the C library's, to a few ulp
 * of double, at awkward arguments; and the tolerant comparison that
 * scenarios with a stated tolerance use (compare.h). */
#include <math.h>
#include <string.h>

#include <criterion/criterion.h>

#include "sluice/core/compare.h"
#include "sluice/core/detmath.h"

Test(detmath, sine_and_cosine_of_turns_match_libm)
{
    double worst = 0;
    for (int i = -4000; i <= 4000; i++) {
        double turns = i / 997.0;
        worst = fmax(worst, fabs(sl_det_sin_turns(turns) - sin(2 * M_PI * turns)));
        worst = fmax(worst, fabs(sl_det_cos_turns(turns) - cos(2 * M_PI * turns)));
    }
    cr_expect_lt(worst, 1e-14, "largest difference %.3g", worst);
    /* Exact at the quarter turns, where the reduction is exact. */
    cr_expect_eq(sl_det_sin_turns(0.0), 0.0);
    cr_expect_eq(sl_det_sin_turns(0.25), 1.0);
    cr_expect_eq(sl_det_sin_turns(0.75), -1.0);
    cr_expect_eq(sl_det_cos_turns(0.5), -1.0);
}

Test(detmath, log_and_exp_match_libm)
{
    double worst_log = 0, worst_exp = 0;
    for (int i = -300; i <= 300; i++) {
        double x = pow(1.37, i);
        worst_log = fmax(worst_log, fabs(sl_det_log(x) - log(x)) / fmax(1.0, fabs(log(x))));
        double y = i / 7.3;
        worst_exp = fmax(worst_exp, fabs(sl_det_exp(y) - exp(y)) / exp(y));
    }
    cr_expect_lt(worst_log, 1e-15, "log: largest relative difference %.3g", worst_log);
    cr_expect_lt(worst_exp, 1e-14, "exp: largest relative difference %.3g", worst_exp);
    cr_expect_eq(sl_det_log(1.0), 0.0);
    cr_expect_eq(sl_det_exp(0.0), 1.0);
    /* log10f is rounded once from double: the float nearest the true value,
     * or its neighbour when the true value is within 1e-15 of a midpoint. */
    for (int i = 1; i < 5000; i++) {
        float x = (float)i * 0.37f;
        float got = sl_det_log10f(x), want = (float)log10((double)x);
        cr_expect(got == want || fabsf(got - want) <= nextafterf(fabsf(want), INFINITY) - fabsf(want),
                  "log10f(%g) = %.9g, libm %.9g", (double)x, (double)got, (double)want);
    }
}

Test(detmath, values_match_bitwise_or_within_a_tolerance)
{
    const float a[4] = {1.0f, 2.0f, NAN, -3.0f}, b[4] = {1.0f, 2.0005f, NAN, -3.0f};
    double worst;
    size_t first;
    cr_expect_not(sl_values_match(SL_F32, a, b, 4, 0.0, &worst, &first), "tolerance 0 is bitwise");
    cr_expect_eq(first, 1);
    cr_expect(sl_values_match(SL_F32, a, b, 4, 1e-3, &worst, &first));
    cr_expect(fabs(worst - 5e-4) < 1e-6, "worst %.3g", worst);
    cr_expect_not(sl_values_match(SL_F32, a, b, 4, 1e-4, NULL, &first));
    cr_expect_eq(first, 1);
    const float c[1] = {NAN}, d[1] = {0.0f};
    cr_expect_not(sl_values_match(SL_F32, c, d, 1, 1.0, &worst, NULL), "a NaN matches only a NaN");
    cr_expect(isinf(worst));
    const int32_t x[3] = {1, 2, 3}, y[3] = {1, 2, 4};
    cr_expect_not(sl_values_match(SL_I32, x, y, 3, 10.0, NULL, &first), "integers stay bitwise");
    cr_expect_eq(first, 2);
}

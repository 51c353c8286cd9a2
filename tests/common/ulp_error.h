/* The error of a float result in ulps of the exact value, as
 * docs/determinism.md states log1p's bound: |got - exact| over the spacing
 * of floats at the exact value (the subnormal spacing below the normal
 * range). One definition for the tests that hold log1p to its bound and for
 * ci/measure/log1p_ulp.c, which measures it. */
#ifndef SLUICE_TEST_ULP_ERROR_H
#define SLUICE_TEST_ULP_ERROR_H

#include <math.h>

static inline double ulp_error(float got, double exact)
{
    int exponent;
    frexp(fabs(exact), &exponent);
    double ulp = ldexp(1.0, exponent - 24);
    if (ulp < 0x1p-149)
        ulp = 0x1p-149;
    return fabs((double)got - exact) / ulp;
}

#endif

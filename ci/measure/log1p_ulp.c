/* log1p's error against glibc's double log1p, over every float in (-1, inf)
 * and over the values TAB-2 feeds it (its dense features: non-negative
 * quarter integers below 2^22). Built and run by ci/log1p-ulp.sh, which
 * says how; the figures go into docs/determinism.md.
 *
 * The error of a result is |result - exact| in ulps of the float nearest the
 * exact value (as test_kernels_sparse_text measures it); a result is
 * correctly rounded when it is the float nearest to glibc's double, which is
 * itself well under 1 ulp of double from the exact value. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/bodies.h"
#include "ulp_error.h"

typedef struct tally {
    double worst;
    float worst_x;
    uint64_t count, not_nearest;
} tally;

static void add(tally *t, float x)
{
    double exact = log1p((double)x);
    float got = sl__log1p_f32(x);
    double e = ulp_error(got, exact);
    if (e > t->worst) {
        t->worst = e;
        t->worst_x = x;
    }
    t->count++;
    t->not_nearest += got != (float)exact;
}

static void print(const char *what, const tally *t)
{
    printf("%-34s %12llu values  max %.4f ulp at x = %a  not the nearest float: %llu (%.3f %%)\n", what,
           (unsigned long long)t->count, t->worst, (double)t->worst_x, (unsigned long long)t->not_nearest,
           100.0 * (double)t->not_nearest / (double)t->count);
}

int main(int argc, char **argv)
{
    /* A stride above 1 samples every stride-th float, for a quick look. */
    uint32_t stride = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 1;
    if (stride == 0)
        stride = 1;
    tally tab2 = {0}, positive = {0}, negative = {0};
    for (uint32_t q = 0; q < (1u << 24); q++)
        add(&tab2, (float)q * 0.25f);
    for (uint64_t u = 0; u < 0x7f800000u; u += stride) {
        float x;
        uint32_t bits = (uint32_t)u;
        memcpy(&x, &bits, sizeof x);
        add(&positive, x);
    }
    for (uint64_t u = 0x80000001u; u < 0xbf800000u; u += stride) {
        float x;
        uint32_t bits = (uint32_t)u;
        memcpy(&x, &bits, sizeof x);
        add(&negative, x);
    }
    print("TAB-2's values (k/4, k < 2^24)", &tab2);
    print("[0, inf)", &positive);
    print("(-1, 0)", &negative);
    return 0;
}

/* trig_rounds (IO-4's expensive op): within 1 ulp of the same rounds
 * computed with libm's double sin and cos, and the same bits in every
 * kernel table, at sizes that leave a tail after the optimized kernels'
 * blocks of 16 values (and their vector lanes). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <criterion/criterion.h>

#include "sluice/kernels/kernels.h"

/* 4096 + 13: the optimized kernels run blocks of 16 values, then a tail of
 * 13, which a multiple of 16 would never reach. */
enum { N = 4109, ROUNDS = 8 };

static int32_t ulp_distance(float a, float b)
{
    int32_t ia, ib;
    memcpy(&ia, &a, 4);
    memcpy(&ib, &b, 4);
    if (ia < 0)
        ia = INT32_MIN - ia;
    if (ib < 0)
        ib = INT32_MIN - ib;
    return ia > ib ? ia - ib : ib - ia;
}

Test(trig_rounds, is_within_one_ulp_of_libm_in_double)
{
    static float in[N], out[N];
    /* Values across [-8, 8), with the exact zero and small magnitudes. */
    for (int i = 0; i < N; i++)
        in[i] = (float)(i - N / 2) / 256.0f;
    sl_kernels_reference()->trig_rounds(in, out, N, ROUNDS);
    int32_t worst = 0;
    for (int i = 0; i < N; i++) {
        double y = in[i];
        for (int r = 0; r < ROUNDS; r++)
            y = sin(y) + cos(y);
        int32_t d = ulp_distance(out[i], (float)y);
        if (d > worst)
            worst = d;
        cr_assert_leq(d, 1, "x = %a: %a against libm's %a (%d ulp)", (double)in[i], (double)out[i], y, d);
    }
    /* All outputs lie in [-sqrt 2, sqrt 2], where sin + cos maps. */
    for (int i = 0; i < N; i++)
        cr_assert(fabsf(out[i]) <= 1.4142136f, "x = %a gave %a", (double)in[i], (double)out[i]);
}

Test(trig_rounds, every_table_gives_the_same_bits)
{
    static float in[N], want[N], got[N];
    for (int i = 0; i < N; i++)
        in[i] = (float)(i * 7 % N - N / 2) / 100.0f;
    /* The whole array, and short ones that are all tail or one block and
     * a tail. */
    static const int sizes[] = {N, 17, 15, 1};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        int n = sizes[k];
        sl_kernels_reference()->trig_rounds(in, want, n, ROUNDS);
        for (int t = 0; t < sl_kernel_table_count(); t++) {
            const sl_kernel_table *table = sl_kernel_table_at(t);
            char reason[128];
            if (!sl_kernel_table_supported(table, reason, sizeof reason))
                continue;
            memset(got, 0, sizeof got);
            table->trig_rounds(in, got, n, ROUNDS);
            for (int i = 0; i < n; i++)
                cr_assert_eq(memcmp(&want[i], &got[i], sizeof got[i]), 0, "table %s, %d values: value %d is %a, not %a",
                             table->name, n, i, (double)got[i], (double)want[i]);
        }
    }
}

/* Subnormal numbers are computed, not flushed (issue 33: a build linked
 * with crtfastmath.o, which sets the CPU's flush-to-zero and
 * denormals-are-zero modes at start-up, passed every test). Every value
 * here is exact, so the expectations are bit patterns worked by hand: half
 * of the smallest normal float is the subnormal 0x00400000, twice the
 * subnormal 2^-140 (0x00000200) is 2^-139 (0x00000400). A process that
 * flushes gives 0 for the first and reads the second's input as 0. */
#include <float.h>
#include <stdint.h>
#include <string.h>

#include <criterion/criterion.h>

#include "kernels_under_test.h"
#include "sluice/kernels/kernels.h"
#include "sluice/pipeline/op_consts.h"

static float from_bits(uint32_t bits)
{
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static uint32_t bits_of(float f)
{
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    return bits;
}

/* This process's own arithmetic first: flush-to-zero would be set for
 * every thread of it. volatile keeps the compiler from folding them. */
Test(subnormals, the_process_does_not_flush_subnormals)
{
    volatile float smallest_normal = FLT_MIN, half = 0.5f, tiny = from_bits(0x00000200u), two = 2.0f;
    cr_expect_eq(bits_of(smallest_normal * half), 0x00400000u, "FLT_MIN / 2 flushed to %#x (FTZ)",
                 bits_of(smallest_normal * half));
    cr_expect_eq(bits_of(tiny * two), 0x00000400u, "2^-140 * 2 gave %#x (DAZ)", bits_of(tiny * two));
}

/* The same values through the affine kernel, long enough to run its vector
 * body and its tail, on the reference table and on the table under test. */
Test(subnormals, the_kernels_keep_subnormal_results_and_inputs)
{
    enum { N = 67 };
    const sl_kernel_table *tables[] = {sl_kernels_reference(), sl_test_kernels()};
    const float scale[1] = {0.5f}, bias[1] = {0.0f}, doubling[1] = {2.0f};
    sl_affine_consts halve, twice;
    sl_err err = {0};
    cr_assert_eq(sl_affine_consts_init(&halve, 1, scale, bias, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(sl_affine_consts_init(&twice, 1, doubling, bias, &err), SL_OK, "%s", err.msg);
    float src[N], dst[N];
    for (int t = 0; t < 2; t++) {
        for (int i = 0; i < N; i++)
            src[i] = FLT_MIN;
        tables[t]->affine_f32(src, dst, N, &halve);
        for (int i = 0; i < N; i++)
            cr_expect_eq(bits_of(dst[i]), 0x00400000u, "%s: FLT_MIN * 0.5 at %d gave %#x", tables[t]->name, i,
                         bits_of(dst[i]));
        for (int i = 0; i < N; i++)
            src[i] = from_bits(0x00000200u);
        tables[t]->affine_f32(src, dst, N, &twice);
        for (int i = 0; i < N; i++)
            cr_expect_eq(bits_of(dst[i]), 0x00000400u, "%s: 2^-140 * 2 at %d gave %#x", tables[t]->name, i,
                         bits_of(dst[i]));
    }
    sl_affine_consts_release(&halve);
    sl_affine_consts_release(&twice);
}

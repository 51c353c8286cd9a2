/* The configure-time probe of DESIGN.md invariant 3 (meson.build): built
 * with the final flags of every compile line (the user's c_args or CFLAGS,
 * then sluice's floating-point flags) and run, it prints one line per
 * behaviour that would make sluice's kernels compute something other than
 * the reference's expression, rounding for rounding, and exits 1 if any.
 * It judges what the compiler does, whatever the flag that asked for it is
 * spelled (-ffast-math, -Ofast, clang's -ffp-model=fast, -fno-honor-nans,
 * ...). Every input is volatile, so nothing is folded at compile time. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static volatile float one_plus = 0x1.001p+0f;      /* 1 + 2^-12 */
static volatile float minus_square = -0x1.002p+0f; /* -(1 + 2^-11), the rounded square */
static volatile float zero = 0.0f, minus_zero = -0.0f, unit = 1.0f, big = 1e8f, five = 5.0f;

/* (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24 rounds to 1 + 2^-11 (a tie, to even),
 * so a * b + c is 0 when the product rounds, and 2^-24 when a fused
 * multiply-add keeps it exact. */
static float multiply_add(float a, float b, float c)
{
    return a * b + c;
}

#if defined(__x86_64__) || defined(__i386__)
/* The same expression where the FMA instructions are allowed, as in the
 * AVX2 and AVX-512 kernel instances (SL_TARGET_... attributes). */
__attribute__((target("avx2,fma"))) static float multiply_add_fma(float a, float b, float c)
{
    return a * b + c;
}
#endif

static uint32_t bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

int main(void)
{
    int broken = 0;
    if (multiply_add(one_plus, one_plus, minus_square) != 0.0f) {
        puts("contracts a * b + c into a fused multiply-add");
        broken = 1;
    }
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("fma") && multiply_add_fma(one_plus, one_plus, minus_square) != 0.0f) {
        puts("contracts a * b + c into a fused multiply-add where FMA instructions are enabled");
        broken = 1;
    }
#endif
    float nan = zero / zero;
    if (!(nan != nan)) {
        puts("assumes no NaN (NaN != NaN is false)");
        broken = 1;
    }
    float inf = unit / zero;
    if (!(inf > big)) {
        puts("assumes no infinity");
        broken = 1;
    }
    /* The transformations below need a constant operand to apply, so the
     * constants are written in place and only the other operand is
     * volatile. */
    float z = minus_zero;
    if (bits(z + 0.0f) != 0u) {
        puts("ignores the sign of zero (-0 + 0 is not +0)");
        broken = 1;
    }
    /* 1e8 + 1 rounds back to 1e8 in float. */
    float x = unit;
    if ((x + 1e8f) - 1e8f != 0.0f) {
        puts("reassociates additions ((1 + 1e8) - 1e8 is not 0)");
        broken = 1;
    }
    /* 5 / 3 rounds to 0x1.aaaaaap+0; 5 times the rounded 1/3 to
     * 0x1.aaaaacp+0. */
    float y = five;
    if (y / 3.0f != 0x1.aaaaaap+0f) {
        puts("replaces a division by a multiplication by the reciprocal");
        broken = 1;
    }
    return broken;
}

/* Optimized element-wise chain: every step over one cache-sized tile before
 * the next tile, each value seeing the reference's operations in the
 * reference's order. */
#include "cpu/cpu.h"
#include "cpu/noise.h"

/* Tiles small enough that a tile and its steps stay in L1 while a long chain
 * runs over it; a multiple of SL_NOISE_GROUP, so a tile starts a group of
 * gaussian_noise's draws. */
#define EW_TILE 2048

/* x[0] is value `first` of its element (the index a per-value step draws
 * for). */
SL_ALWAYS_INLINE void ew_run_step(float *restrict x, int64_t first, int64_t n, const sl_ew_step *step,
                                  noise_words_fn noise_words)
{
    const float a = step->a, b = step->b;
    switch (step->kind) {
        /* One loop per arithmetic opcode, each the body the reference
         * calls, inlined so the compiler vectorizes it. */
#define EW_LOOP(NAME, name)                                                                                            \
    case SL_EW_##NAME:                                                                                                 \
        for (int64_t i = 0; i < n; i++)                                                                                \
            x[i] = sl__step_##name(x[i], a, b);                                                                        \
        break;
        SL_EW_ARITHMETIC(EW_LOOP)
#undef EW_LOOP
    case SL_EW_GAUSSIAN_NOISE: noise_run(x, first, n, step, noise_words); break;
    default: break;
    }
}

SL_ALWAYS_INLINE void ew_chain_body(float *x, int64_t n, const sl_ew_step *steps, int nsteps,
                                    noise_words_fn noise_words)
{
    for (int64_t start = 0; start < n; start += EW_TILE) {
        int64_t len = n - start < EW_TILE ? n - start : EW_TILE;
        for (int s = 0; s < nsteps; s++)
            ew_run_step(x + start, start, len, &steps[s], noise_words);
    }
}

#if SL_CPU_FIRST_BUILD
static void ew_chain_generic(float *x, int64_t n, const sl_ew_step *steps, int nsteps)
{
    ew_chain_body(x, n, steps, nsteps, noise_words_scalar);
}

void sl__cpu_elementwise_generic(sl_cpu_variant *out)
{
    out->ew_chain = ew_chain_generic;
}
#endif

#if SL_HAVE_AVX2_CLONES
#if SL_CPU_FIRST_BUILD
SL_TARGET_AVX2 static void ew_chain_avx2(float *x, int64_t n, const sl_ew_step *steps, int nsteps)
{
    ew_chain_body(x, n, steps, nsteps, noise_words_avx2);
}

void sl__cpu_elementwise_avx2(sl_cpu_variant *out)
{
    out->ew_chain = ew_chain_avx2;
}
#endif

SL_TARGET_AVX512 static void ew_chain_avx512(float *x, int64_t n, const sl_ew_step *steps, int nsteps)
{
    ew_chain_body(x, n, steps, nsteps, noise_words_avx512);
}

void sl__cpu_elementwise_avx512(sl_cpu_variant *out)
{
    out->ew_chain = ew_chain_avx512;
}
#else
void sl__cpu_elementwise_avx2(sl_cpu_variant *out)
{
    sl__cpu_elementwise_generic(out);
}

void sl__cpu_elementwise_avx512(sl_cpu_variant *out)
{
    sl__cpu_elementwise_generic(out);
}
#endif

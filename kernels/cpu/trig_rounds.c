/* Optimized trig_rounds: the reference's loop, compiled per instruction set
 * at -O3 so that it runs four (AVX2) or eight (AVX-512) values at a time.
 * sl_det_sincos_turns has no branches and only + - * and exact rint and
 * floor, so every lane computes exactly what the reference computes. */
#include "cpu/cpu.h"
#include "sluice/core/detmath.h"

/* Values a step: the rounds loop runs inside a block, so the vectorizer
 * sees a loop over independent values (it does not vectorize the outer
 * loop of a nest). */
#define TRIG_BLOCK 16

SL_ALWAYS_INLINE void trig_rounds_body(const float *restrict in, float *restrict out, int64_t n, int rounds)
{
    int64_t i = 0;
    for (; i + TRIG_BLOCK <= n; i += TRIG_BLOCK) {
        double y[TRIG_BLOCK];
        for (int j = 0; j < TRIG_BLOCK; j++)
            y[j] = in[i + j];
        for (int r = 0; r < rounds; r++) {
            for (int j = 0; j < TRIG_BLOCK; j++) {
                double s, c;
                sl_det_sincos_turns(y[j] * (1.0 / SL_DET_TWO_PI), &s, &c);
                y[j] = s + c;
            }
        }
        for (int j = 0; j < TRIG_BLOCK; j++)
            out[i + j] = (float)y[j];
    }
    for (; i < n; i++) {
        double y = in[i];
        for (int r = 0; r < rounds; r++) {
            double s, c;
            sl_det_sincos_turns(y * (1.0 / SL_DET_TWO_PI), &s, &c);
            y = s + c;
        }
        out[i] = (float)y;
    }
}

/* in may equal out (the op runs in place); restrict holds per value, since
 * value i is read before it is written and never read again. */
#if SL_CPU_FIRST_BUILD
static void trig_rounds_generic(const float *in, float *out, int64_t n, int rounds)
{
    trig_rounds_body(in, out, n, rounds);
}

void sl__cpu_trig_rounds_generic(sl_cpu_variant *out)
{
    out->trig_rounds = trig_rounds_generic;
}
#endif

#if SL_HAVE_AVX2_CLONES
#if SL_CPU_FIRST_BUILD
SL_TARGET_AVX2 static void trig_rounds_avx2(const float *in, float *out, int64_t n, int rounds)
{
    trig_rounds_body(in, out, n, rounds);
}

void sl__cpu_trig_rounds_avx2(sl_cpu_variant *out)
{
    out->trig_rounds = trig_rounds_avx2;
}
#endif

SL_TARGET_AVX512 static void trig_rounds_avx512(const float *in, float *out, int64_t n, int rounds)
{
    trig_rounds_body(in, out, n, rounds);
}

void sl__cpu_trig_rounds_avx512(sl_cpu_variant *out)
{
    out->trig_rounds = trig_rounds_avx512;
}
#else
void sl__cpu_trig_rounds_avx2(sl_cpu_variant *out)
{
    sl__cpu_trig_rounds_generic(out);
}

void sl__cpu_trig_rounds_avx512(sl_cpu_variant *out)
{
    sl__cpu_trig_rounds_generic(out);
}
#endif

/* Optimized moments: the reference's eight partial sums, each still taking
 * its values in index order, but eight values a step so that the partials
 * live in vector registers (two AVX2 registers of doubles, or one AVX-512
 * one). The partials are combined by the reference's own tree, so the
 * result is the reference's, bit for bit. */
#include "cpu.h"

SL_ALWAYS_INLINE void moments_body(const float *restrict x, int64_t n, double *mean, double *var)
{
    double sum[SL_MOMENT_LANES] = {0};
    int64_t i = 0;
    for (; i + SL_MOMENT_LANES <= n; i += SL_MOMENT_LANES)
        for (int j = 0; j < SL_MOMENT_LANES; j++)
            sum[j] += (double)x[i + j];
    for (int j = 0; i + j < n; j++)
        sum[j] += (double)x[i + j];
    const double m = sl__moment_lanes_sum(sum) / (double)n;
    double squares[SL_MOMENT_LANES] = {0};
    for (i = 0; i + SL_MOMENT_LANES <= n; i += SL_MOMENT_LANES)
        for (int j = 0; j < SL_MOMENT_LANES; j++) {
            double centred = (double)x[i + j] - m;
            squares[j] += centred * centred;
        }
    for (int j = 0; i + j < n; j++) {
        double centred = (double)x[i + j] - m;
        squares[j] += centred * centred;
    }
    *mean = m;
    *var = sl__moment_lanes_sum(squares) / (double)n;
}

static void moments_generic(const float *x, int64_t n, double *mean, double *var)
{
    moments_body(x, n, mean, var);
}

void sl__cpu_moments_generic(sl_cpu_variant *out)
{
    out->moments = moments_generic;
}

#if SL_HAVE_AVX2_CLONES
SL_TARGET_AVX2 static void moments_avx2(const float *x, int64_t n, double *mean, double *var)
{
    moments_body(x, n, mean, var);
}

void sl__cpu_moments_avx2(sl_cpu_variant *out)
{
    out->moments = moments_avx2;
}

SL_TARGET_AVX512 static void moments_avx512(const float *x, int64_t n, double *mean, double *var)
{
    moments_body(x, n, mean, var);
}

void sl__cpu_moments_avx512(sl_cpu_variant *out)
{
    out->moments = moments_avx512;
}
#else
void sl__cpu_moments_avx2(sl_cpu_variant *out)
{
    sl__cpu_moments_generic(out);
}

void sl__cpu_moments_avx512(sl_cpu_variant *out)
{
    sl__cpu_moments_generic(out);
}
#endif

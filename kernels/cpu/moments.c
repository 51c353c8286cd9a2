/* Optimized moments: the reference's eight partial sums, each still taking
 * its values in index order, but eight values a step so that the partials
 * live in vector registers (two AVX2 registers of doubles, or one AVX-512
 * one). The partials are combined by the reference's own tree, so the
 * result is the reference's, bit for bit. */
#include "cpu/cpu.h"

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

/* Per-channel moments: the 8 x channels partials laid out as one block of
 * 8 pixels (partial p mod 8 of channel c at (p mod 8) x channels + c), so a
 * step adds one block of consecutive values to consecutive accumulators,
 * which vectorizes for any channel count; each partial still takes its
 * values in pixel order, and is combined by the reference's tree. The
 * accumulators are the caller's: with 1, 3 or 4 channels they are a local
 * array of constant size, which the compiler keeps in vector registers, so
 * the 8 x channels chains of additions overlap instead of waiting on
 * memory (3 channels: 6 independent AVX2 chains instead of a store and a
 * load per step). */
SL_ALWAYS_INLINE void channel_moments_body(const float *restrict x, int64_t pixels, int channels, double *mean,
                                           double *m2, double *restrict acc, double *restrict centre)
{
    const int block = SL_MOMENT_LANES * channels;
    const int64_t full = pixels / SL_MOMENT_LANES * SL_MOMENT_LANES * channels;
    const int tail = (int)(pixels % SL_MOMENT_LANES) * channels;
    double partial[SL_MOMENT_LANES];
    for (int j = 0; j < block; j++)
        acc[j] = 0.0;
    int64_t i = 0;
    for (; i < full; i += block)
        for (int j = 0; j < block; j++)
            acc[j] += (double)x[i + j];
    for (int j = 0; j < tail; j++)
        acc[j] += (double)x[i + j];
    for (int c = 0; c < channels; c++) {
        for (int l = 0; l < SL_MOMENT_LANES; l++)
            partial[l] = acc[l * channels + c];
        mean[c] = sl__moment_lanes_sum(partial) / (double)pixels;
    }
    for (int j = 0; j < block; j++) {
        centre[j] = mean[j % channels];
        acc[j] = 0.0;
    }
    for (i = 0; i < full; i += block)
        for (int j = 0; j < block; j++) {
            double centred = (double)x[i + j] - centre[j];
            acc[j] += centred * centred;
        }
    for (int j = 0; j < tail; j++) {
        double centred = (double)x[i + j] - centre[j];
        acc[j] += centred * centred;
    }
    for (int c = 0; c < channels; c++) {
        for (int l = 0; l < SL_MOMENT_LANES; l++)
            partial[l] = acc[l * channels + c];
        m2[c] = sl__moment_lanes_sum(partial);
    }
}

/* One instance per channel count with registers to spare, then any count. */
SL_ALWAYS_INLINE void channel_moments_dispatch(const float *x, int64_t pixels, int channels, double *mean, double *m2)
{
    switch (channels) {
    case 1: {
        double acc[SL_MOMENT_LANES], centre[SL_MOMENT_LANES];
        channel_moments_body(x, pixels, 1, mean, m2, acc, centre);
        return;
    }
    case 3: {
        double acc[3 * SL_MOMENT_LANES], centre[3 * SL_MOMENT_LANES];
        channel_moments_body(x, pixels, 3, mean, m2, acc, centre);
        return;
    }
    case 4: {
        double acc[4 * SL_MOMENT_LANES], centre[4 * SL_MOMENT_LANES];
        channel_moments_body(x, pixels, 4, mean, m2, acc, centre);
        return;
    }
    default: {
        double acc[SL_MOMENT_LANES * SL_MAX_CHANNELS], centre[SL_MOMENT_LANES * SL_MAX_CHANNELS];
        channel_moments_body(x, pixels, channels, mean, m2, acc, centre);
        return;
    }
    }
}

#if SL_CPU_FIRST_BUILD
static void moments_generic(const float *x, int64_t n, double *mean, double *var)
{
    moments_body(x, n, mean, var);
}

static void channel_moments_generic(const float *x, int64_t pixels, int channels, double *mean, double *m2)
{
    channel_moments_dispatch(x, pixels, channels, mean, m2);
}

void sl__cpu_moments_generic(sl_cpu_variant *out)
{
    out->moments = moments_generic;
    out->channel_moments = channel_moments_generic;
}
#endif

#if SL_HAVE_AVX2_CLONES
#if SL_CPU_FIRST_BUILD
SL_TARGET_AVX2 static void moments_avx2(const float *x, int64_t n, double *mean, double *var)
{
    moments_body(x, n, mean, var);
}

SL_TARGET_AVX2 static void channel_moments_avx2(const float *x, int64_t pixels, int channels, double *mean, double *m2)
{
    channel_moments_dispatch(x, pixels, channels, mean, m2);
}

void sl__cpu_moments_avx2(sl_cpu_variant *out)
{
    out->moments = moments_avx2;
    out->channel_moments = channel_moments_avx2;
}
#endif

SL_TARGET_AVX512 static void moments_avx512(const float *x, int64_t n, double *mean, double *var)
{
    moments_body(x, n, mean, var);
}

SL_TARGET_AVX512 static void channel_moments_avx512(const float *x, int64_t pixels, int channels, double *mean,
                                                    double *m2)
{
    channel_moments_dispatch(x, pixels, channels, mean, m2);
}

void sl__cpu_moments_avx512(sl_cpu_variant *out)
{
    out->moments = moments_avx512;
    out->channel_moments = channel_moments_avx512;
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

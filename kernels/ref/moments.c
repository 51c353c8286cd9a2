/* Reference moments: value i into partial sum i mod 8, in index order; the
 * order sl_moments_fn defines and every back end reproduces. */
#include "ref/ref.h"

void sl__ref_moments(const float *x, int64_t n, double *mean, double *var)
{
    double sum[SL_MOMENT_LANES] = {0};
    for (int64_t i = 0; i < n; i++)
        sum[i % SL_MOMENT_LANES] += (double)x[i];
    double m = sl__moment_lanes_sum(sum) / (double)n;
    double squares[SL_MOMENT_LANES] = {0};
    for (int64_t i = 0; i < n; i++) {
        double centred = (double)x[i] - m;
        squares[i % SL_MOMENT_LANES] += centred * centred;
    }
    *mean = m;
    *var = sl__moment_lanes_sum(squares) / (double)n;
}

/* Per channel, the same order: pixel p of channel c into partial p mod 8 of
 * channel c. */
void sl__ref_channel_moments(const float *x, int64_t pixels, int channels, double *mean, double *m2)
{
    for (int c = 0; c < channels; c++) {
        double sum[SL_MOMENT_LANES] = {0};
        for (int64_t p = 0; p < pixels; p++)
            sum[p % SL_MOMENT_LANES] += (double)x[p * channels + c];
        double m = sl__moment_lanes_sum(sum) / (double)pixels;
        double squares[SL_MOMENT_LANES] = {0};
        for (int64_t p = 0; p < pixels; p++) {
            double centred = (double)x[p * channels + c] - m;
            squares[p % SL_MOMENT_LANES] += centred * centred;
        }
        mean[c] = m;
        m2[c] = sl__moment_lanes_sum(squares);
    }
}

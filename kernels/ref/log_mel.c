/* Reference log-mel: the shared steps (ref.h) with products summed in a
 * fixed order, so the output is the same bits on every machine. */
#include "ref/ref.h"

/* c[i][j] accumulates a[i][p] b[p][j] for p = 0, 1, ... in turn, starting
 * from 0: the order of a plain dot product, with the inner loop running
 * along a row of b and c, where it is contiguous. */
static void ordered_sgemm(int m, int n, int kk, const float *a, const float *b, float *c)
{
    for (int i = 0; i < m; i++) {
        float *row = c + (size_t)i * (size_t)n;
        for (int j = 0; j < n; j++)
            row[j] = 0.0f;
        for (int p = 0; p < kk; p++) {
            const float x = a[(size_t)i * (size_t)kk + (size_t)p];
            const float *brow = b + (size_t)p * (size_t)n;
            for (int j = 0; j < n; j++)
                row[j] = row[j] + x * brow[j];
        }
    }
}

void sl__ref_log_mel(const float *wave, float *out, const sl_melspec_consts *k, float *scratch)
{
    sl__log_mel_with(wave, out, k, scratch, ordered_sgemm);
}

/* Optimized log-mel: the shared steps (ref.h) with both products handed to
 * OpenBLAS's sgemm on one thread. Built without OpenBLAS, the table keeps
 * the reference. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "cpu/cpu.h"
#include "sluice/core/timing.h"
#include "sluice_config.h"

#if SLUICE_HAVE_OPENBLAS
#include <cblas.h>

/* One BLAS thread per call, set once before the first product: sluice's
 * own workers already keep the cores busy one element each, and OpenBLAS
 * threads spawned under every one of them would oversubscribe the machine
 * (and change nothing in the results, which depend only on the shape). */
static pthread_once_t threads_once = PTHREAD_ONCE_INIT;

static void set_threads(void)
{
    openblas_set_num_threads(1);
}

static void blas_sgemm(int m, int n, int kk, const float *a, const float *b, float *c)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, kk, 1.0f, a, kk, b, n, 0.0f, c, n);
}

static void log_mel_blas(const float *wave, float *out, const sl_melspec_consts *k, float *scratch)
{
    pthread_once(&threads_once, set_threads);
    sl__log_mel_with(wave, out, k, scratch, blas_sgemm);
}

void sl__cpu_log_mel(sl_log_mel_fn *out)
{
    *out = log_mel_blas;
}

void sl_blas_describe(char *buf, size_t size)
{
    pthread_once(&threads_once, set_threads);
    const char *config = openblas_get_config();
    snprintf(buf, size, "%s, %d thread%s", config ? config : "OpenBLAS (no config)", openblas_get_num_threads(),
             openblas_get_num_threads() == 1 ? "" : "s");
}

static int compare_ns(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

double sl_blas_sgemm_probe_ns(int m, int n, int kk, int repetitions)
{
    if (m < 1 || n < 1 || kk < 1 || repetitions < 1)
        return 0.0;
    pthread_once(&threads_once, set_threads);
    float *a = malloc((size_t)m * (size_t)kk * sizeof *a), *b = malloc((size_t)kk * (size_t)n * sizeof *b);
    float *c = malloc((size_t)m * (size_t)n * sizeof *c);
    int64_t *samples = malloc((size_t)repetitions * sizeof *samples);
    double median = 0.0;
    if (a && b && c && samples) {
        for (size_t i = 0; i < (size_t)m * (size_t)kk; i++)
            a[i] = (float)(i % 17) * 0.125f;
        for (size_t i = 0; i < (size_t)kk * (size_t)n; i++)
            b[i] = (float)(i % 13) * 0.25f;
        blas_sgemm(m, n, kk, a, b, c);
        for (int r = 0; r < repetitions; r++) {
            int64_t start = sl_now_ns();
            blas_sgemm(m, n, kk, a, b, c);
            samples[r] = sl_now_ns() - start;
        }
        qsort(samples, (size_t)repetitions, sizeof *samples, compare_ns);
        median = (double)samples[repetitions / 2];
    }
    free(a);
    free(b);
    free(c);
    free(samples);
    return median;
}
#else
void sl__cpu_log_mel(sl_log_mel_fn *out)
{
    *out = sl__ref_log_mel;
}

void sl_blas_describe(char *buf, size_t size)
{
    snprintf(buf, size, "no BLAS (built without OpenBLAS; log_mel runs the reference products)");
}

double sl_blas_sgemm_probe_ns(int m, int n, int kk, int repetitions)
{
    (void)m, (void)n, (void)kk, (void)repetitions;
    return 0.0;
}
#endif

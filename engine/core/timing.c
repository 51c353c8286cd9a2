#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "sluice/core/fileio.h"
#include "sluice/core/timing.h"

int64_t sl_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t sl_thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* NumPy's _lerp: the second form for t >= 0.5 keeps the result monotonic in
 * t and exact at t = 1, so our percentiles equal numpy.percentile's bit for
 * bit rather than merely to within rounding. */
static double lerp(double a, double b, double t)
{
    double diff = b - a;
    return t >= 0.5 ? b - diff * (1.0 - t) : a + diff * t;
}

static double percentile_sorted_i64(const int64_t *sorted, size_t n, double q)
{
    double h = (double)(n - 1) * (q / 100.0);
    if (h <= 0.0)
        return (double)sorted[0];
    if (h >= (double)(n - 1))
        return (double)sorted[n - 1];
    size_t lo = (size_t)h;
    return lerp((double)sorted[lo], (double)sorted[lo + 1], h - (double)lo);
}

static int compare_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int compare_f64(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Callers keep their samples in measurement order (records store them that
 * way), so the statistics sort a private copy. */
static int64_t *sorted_copy_i64(const int64_t *values, size_t n)
{
    int64_t *copy = malloc(n * sizeof *copy);
    if (!copy)
        return NULL;
    memcpy(copy, values, n * sizeof *copy);
    qsort(copy, n, sizeof *copy, compare_i64);
    return copy;
}

double sl_percentile_i64(const int64_t *values, size_t n, double q)
{
    if (n == 0)
        return NAN;
    int64_t *sorted = sorted_copy_i64(values, n);
    if (!sorted)
        return NAN;
    double p = percentile_sorted_i64(sorted, n, q);
    free(sorted);
    return p;
}

double sl_median_f64(const double *values, size_t n)
{
    if (n == 0)
        return NAN;
    double *sorted = malloc(n * sizeof *sorted);
    if (!sorted)
        return NAN;
    memcpy(sorted, values, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, compare_f64);
    double m = n % 2 ? sorted[n / 2] : lerp(sorted[n / 2 - 1], sorted[n / 2], 0.5);
    free(sorted);
    return m;
}

void sl_latency_summarize(const int64_t *latency_ns, size_t n, sl_latency_summary *out)
{
    memset(out, 0, sizeof *out);
    if (n == 0)
        return;
    int64_t *sorted = sorted_copy_i64(latency_ns, n);
    if (!sorted) {
        out->p50_ns = out->p95_ns = out->p99_ns = out->mean_ns = out->min_ns = out->max_ns = NAN;
        return;
    }
    for (size_t i = 0; i < n; i++)
        out->total_ns += sorted[i];
    out->p50_ns = percentile_sorted_i64(sorted, n, 50.0);
    out->p95_ns = percentile_sorted_i64(sorted, n, 95.0);
    out->p99_ns = percentile_sorted_i64(sorted, n, 99.0);
    out->mean_ns = (double)out->total_ns / (double)n;
    out->min_ns = (double)sorted[0];
    out->max_ns = (double)sorted[n - 1];
    free(sorted);
}

static int64_t read_status_kib_field(const char *field);

void sl_rss_reset(sl_rss_probe *probe)
{
    /* Free heap pages go back to the system first, so that pages a previous
     * run freed but glibc kept do not hide this run's growth by being reused
     * without ever counting as new resident memory. */
    malloc_trim(0);
    /* Writing 5 to clear_refs resets VmHWM to the current RSS (Linux >= 4.0).
     * Sandboxes and older kernels refuse it; then only the lifetime peak is
     * available, and sl_rss_peak_bytes says so. */
    FILE *f = fopen("/proc/self/clear_refs", "w");
    int ok = f != NULL && fputs("5", f) >= 0;
    if (f && fclose(f) != 0)
        ok = 0;
    probe->resettable = ok;
    probe->baseline_bytes = read_status_kib_field("VmRSS:");
}

/* A "Name: N kB" line of /proc/self/status, in bytes, or -1 when it cannot
 * be read. */
static int64_t read_status_kib_field(const char *field)
{
    char *status = NULL;
    size_t size = 0;
    if (sl_read_file("/proc/self/status", &status, &size, NULL) != SL_OK)
        return -1;
    int64_t bytes = -1;
    const char *line = strstr(status, field);
    long long kib;
    if (line && sscanf(line + strlen(field), " %lld kB", &kib) == 1)
        bytes = (int64_t)kib * 1024;
    free(status);
    return bytes;
}

static int64_t read_vmhwm_bytes(void)
{
    return read_status_kib_field("VmHWM:");
}

int64_t sl_rss_growth_bytes(const sl_rss_probe *probe)
{
    if (!probe->resettable || probe->baseline_bytes < 0)
        return -1;
    int64_t peak = read_vmhwm_bytes();
    if (peak < 0)
        return -1;
    return peak > probe->baseline_bytes ? peak - probe->baseline_bytes : 0;
}

int64_t sl_rss_peak_bytes(const sl_rss_probe *probe, const char **method)
{
    if (probe->resettable) {
        int64_t bytes = read_vmhwm_bytes();
        if (bytes >= 0) {
            if (method)
                *method = "vmhwm-reset";
            return bytes;
        }
    }
    struct rusage usage;
    if (method)
        *method = "lifetime-maxrss";
    if (getrusage(RUSAGE_SELF, &usage) != 0)
        return -1;
    /* Linux reports ru_maxrss in KiB. */
    return (int64_t)usage.ru_maxrss * 1024;
}

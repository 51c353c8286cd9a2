/* The clock and the statistics every adapter's timings go through. */
#ifndef SLUICE_TIMING_H
#define SLUICE_TIMING_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* CLOCK_MONOTONIC in nanoseconds: the one clock of DESIGN.md invariant 4. */
int64_t sl_now_ns(void);
/* The calling thread's CPU time in nanoseconds (CLOCK_THREAD_CPUTIME_ID):
 * what a computation cost while it ran, without the time the scheduler gave
 * other processes. Only for choosing between kernels on a shared machine
 * (sluice/bench/kernel_tune.h); a batch's time is always sl_now_ns's. */
int64_t sl_thread_cpu_ns(void);

/* Percentile by linear interpolation between closest ranks (NumPy's default),
 * q in [0, 100]. values need not be sorted; n must be > 0. */
double sl_percentile_i64(const int64_t *values, size_t n, double q);
double sl_median_f64(const double *values, size_t n);

typedef struct sl_latency_summary {
    double p50_ns, p95_ns, p99_ns, mean_ns, min_ns, max_ns;
    int64_t total_ns;
} sl_latency_summary;

void sl_latency_summarize(const int64_t *latency_ns, size_t n, sl_latency_summary *out);

/* Peak resident set size since the last reset, in bytes. Resetting writes 5
 * to /proc/self/clear_refs (Linux >= 4.0); when that is refused the value is
 * the process's lifetime peak, and method says which was measured. */
typedef struct sl_rss_probe {
    int resettable;
    int64_t baseline_bytes; /* VmRSS right after the reset, or -1 */
} sl_rss_probe;
void sl_rss_reset(sl_rss_probe *probe);
int64_t sl_rss_peak_bytes(const sl_rss_probe *probe, const char **method);
/* How far the peak rose above the resident size at the reset: the memory a
 * run touched beyond what was already resident (the fixture, the program),
 * which is what tells executors' own memory apart. -1 when the peak cannot
 * be reset (then only a lifetime peak exists, and no honest delta). */
int64_t sl_rss_growth_bytes(const sl_rss_probe *probe);

#ifdef __cplusplus
}
#endif

#endif

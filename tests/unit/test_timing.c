/* The clock, the statistics every record goes through, and the peak-memory
 * probe. Expected values are worked out by hand with NumPy's default
 * percentile method: h = (n - 1) q / 100, then linear interpolation between
 * the sorted values at floor(h) and floor(h) + 1. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "sluice/core/timing.h"

#define MIB (1024 * 1024)

Test(timing, clock_is_monotonic_and_in_nanoseconds)
{
    int64_t a = sl_now_ns();
    struct timespec pause = {0, 2 * 1000 * 1000};
    nanosleep(&pause, NULL);
    int64_t b = sl_now_ns();
    cr_assert_geq(b - a, 2 * 1000 * 1000, "2 ms of sleep measured as %lld ns", (long long)(b - a));
    cr_assert_lt(b - a, 2000LL * 1000 * 1000, "2 ms of sleep measured as %lld ns", (long long)(b - a));
    for (int i = 0; i < 1000; i++) {
        int64_t c = sl_now_ns();
        cr_assert_geq(c, b);
        b = c;
    }
}

/* The thread's CPU clock counts work and not sleep: 50 ms asleep cost far
 * less than 50 ms of CPU, and a busy loop costs some. */
Test(timing, the_thread_cpu_clock_counts_work_not_sleep)
{
    int64_t before = sl_thread_cpu_ns();
    struct timespec nap = {0, 50 * 1000 * 1000};
    nanosleep(&nap, NULL);
    int64_t slept = sl_thread_cpu_ns() - before;
    cr_expect_lt(slept, 25 * 1000 * 1000, "sleeping 50 ms cost %lld ns of CPU", (long long)slept);
    volatile uint64_t x = 1;
    before = sl_thread_cpu_ns();
    for (int i = 0; i < 10 * 1000 * 1000; i++)
        x = x * 6364136223846793005ull + 1;
    cr_expect_gt(sl_thread_cpu_ns() - before, 0, "ten million multiplies cost no CPU time");
}

Test(timing, percentiles_of_one_to_ten_follow_numpy)
{
    /* Deliberately out of order: the function sorts a copy. */
    int64_t values[10] = {7, 3, 10, 1, 5, 9, 2, 8, 6, 4};
    int64_t before[10];
    memcpy(before, values, sizeof values);
    /* numpy.percentile(range(1, 11), q): h = 9 q / 100. */
    cr_assert_float_eq(sl_percentile_i64(values, 10, 50), 5.5, 1e-12);  /* h = 4.5 */
    cr_assert_float_eq(sl_percentile_i64(values, 10, 95), 9.55, 1e-12); /* h = 8.55 */
    cr_assert_float_eq(sl_percentile_i64(values, 10, 99), 9.91, 1e-12); /* h = 8.91 */
    cr_assert_float_eq(sl_percentile_i64(values, 10, 25), 3.25, 1e-12); /* h = 2.25 */
    cr_assert_eq(sl_percentile_i64(values, 10, 0), 1.0);
    cr_assert_eq(sl_percentile_i64(values, 10, 100), 10.0);
    cr_assert_arr_eq(values, before, sizeof values, "the input must not be reordered");
}

Test(timing, percentile_of_uneven_gaps_and_of_one_value)
{
    int64_t values[4] = {40, 10, 30, 20};
    cr_assert_float_eq(sl_percentile_i64(values, 4, 25), 17.5, 1e-12); /* h = 0.75: 10 + 0.75 * 10 */
    cr_assert_float_eq(sl_percentile_i64(values, 4, 90), 37.0, 1e-12); /* h = 2.7: 30 + 0.7 * 10 */
    int64_t uneven[3] = {1000, 0, 100};
    cr_assert_float_eq(sl_percentile_i64(uneven, 3, 75), 550.0, 1e-9); /* h = 1.5: 100 + 0.5 * 900 */
    int64_t one = 123456789;
    cr_assert_eq(sl_percentile_i64(&one, 1, 50), 123456789.0);
    cr_assert_eq(sl_percentile_i64(&one, 1, 99), 123456789.0);
}

Test(timing, median_of_odd_and_even_counts)
{
    double odd[3] = {3.0, 1.0, 2.0};
    double even[4] = {4.0, 1.0, 3.0, 2.0};
    cr_assert_eq(sl_median_f64(odd, 3), 2.0);
    cr_assert_eq(sl_median_f64(even, 4), 2.5);
    cr_assert_eq(odd[0], 3.0, "the input must not be reordered");
    cr_assert_eq(even[0], 4.0, "the input must not be reordered");
}

Test(timing, summary_of_known_latencies)
{
    int64_t ns[10];
    for (int i = 0; i < 10; i++)
        ns[i] = (10 - i) * 1000; /* 10000, 9000, ..., 1000 */
    sl_latency_summary s;
    sl_latency_summarize(ns, 10, &s);
    cr_assert_float_eq(s.p50_ns, 5500.0, 1e-9);
    cr_assert_float_eq(s.p95_ns, 9550.0, 1e-9);
    cr_assert_float_eq(s.p99_ns, 9910.0, 1e-9);
    cr_assert_float_eq(s.mean_ns, 5500.0, 1e-9);
    cr_assert_eq(s.min_ns, 1000.0);
    cr_assert_eq(s.max_ns, 10000.0);
    cr_assert_eq(s.total_ns, 55000);
    cr_assert_eq(ns[0], 10000, "the input must not be reordered");
}

Test(timing, summary_of_nothing_is_zero)
{
    sl_latency_summary s;
    memset(&s, 0xff, sizeof s);
    sl_latency_summarize(NULL, 0, &s);
    cr_assert_eq(s.total_ns, 0);
    cr_assert_eq(s.p50_ns, 0.0);
    cr_assert_eq(s.max_ns, 0.0);
    cr_assert_eq(s.mean_ns, 0.0);
}

/* Touches `bytes` of fresh anonymous memory. mmap rather than malloc, so
 * that munmap really returns it even under a sanitizer's quarantine. */
static char *touch(size_t bytes)
{
    char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert_neq(p, MAP_FAILED);
    for (size_t i = 0; i < bytes; i += 4096)
        p[i] = (char)i | 1;
    return p;
}

Test(timing, peak_rss_sees_a_64_mib_allocation)
{
    sl_rss_probe probe;
    sl_rss_reset(&probe);
    const char *method = NULL;
    int64_t base = sl_rss_peak_bytes(&probe, &method);
    cr_assert_not_null(method);
    cr_assert(strcmp(method, "vmhwm-reset") == 0 || strcmp(method, "lifetime-maxrss") == 0, "method %s", method);
    cr_assert_eq(probe.resettable != 0, strcmp(method, "vmhwm-reset") == 0);
    char *p = touch(64 * MIB);
    int64_t peak = sl_rss_peak_bytes(&probe, &method);
    cr_assert_geq(peak, base + 60 * MIB, "peak %lld bytes after touching 64 MiB on top of %lld", (long long)peak,
                  (long long)base);
    munmap(p, 64 * MIB);
}

Test(timing, peak_rss_reset_forgets_an_earlier_peak)
{
    sl_rss_probe probe;
    sl_rss_reset(&probe);
    if (!probe.resettable)
        cr_skip_test("this kernel refuses /proc/self/clear_refs; only the lifetime peak exists");
    char *p = touch(96 * MIB);
    int64_t high = sl_rss_peak_bytes(&probe, NULL);
    munmap(p, 96 * MIB);
    sl_rss_reset(&probe);
    const char *method = NULL;
    int64_t after = sl_rss_peak_bytes(&probe, &method);
    cr_assert_str_eq(method, "vmhwm-reset");
    cr_assert_lt(after, high - 64 * MIB, "peak %lld after reset, %lld before", (long long)after, (long long)high);
}

/* Growth counts what a run touched on top of what was resident at the
 * reset: 48 MiB here, over a 32 MiB block that was resident before it and
 * must not count. */
Test(timing, rss_growth_counts_only_memory_touched_after_the_reset)
{
    char *resident = touch(32 * MIB);
    sl_rss_probe probe;
    sl_rss_reset(&probe);
    if (!probe.resettable)
        cr_skip_test("this kernel refuses /proc/self/clear_refs; no honest growth without a reset");
    char *p = touch(48 * MIB);
    int64_t growth = sl_rss_growth_bytes(&probe);
    cr_assert_geq(growth, 46 * MIB, "growth %lld after touching 48 MiB", (long long)growth);
    cr_assert_lt(growth, 48 * MIB + 24 * MIB, "growth %lld counts the 32 MiB resident before the reset",
                 (long long)growth);
    munmap(p, 48 * MIB);
    munmap(resident, 32 * MIB);
}

/* How busy the machine was around a run (engine/core/load.c): the share of
 * a process's runnable time its threads spent waiting for a CPU, from the
 * kernel's per-thread schedstat. The gate and the summary call a run too
 * busy to rank by it, so it must see competition that the load average
 * hides. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <criterion/criterion.h>

#include "core/internal.h"

Test(machine_load, the_wait_share_is_wait_over_run_and_wait)
{
    sl__machine_load start = {.has_schedstat = true, .task_run_ns = 1000, .task_wait_ns = 500};
    sl__machine_load end = {.has_schedstat = true, .task_run_ns = 4000, .task_wait_ns = 1500};
    /* 3000 ns ran and 1000 ns waited: a quarter of the runnable time. */
    cr_expect_float_eq(sl__process_wait_fraction(&start, &end), 0.25, 1e-15);
    /* Nothing passed, or a sample without schedstat: unknown. */
    cr_expect_eq(sl__process_wait_fraction(&start, &start), -1.0);
    end.has_schedstat = false;
    cr_expect_eq(sl__process_wait_fraction(&start, &end), -1.0);
    /* A sum that went down (threads that ended) is not a share. */
    end = (sl__machine_load){.has_schedstat = true, .task_run_ns = 900, .task_wait_ns = 1500};
    cr_expect_eq(sl__process_wait_fraction(&start, &end), -1.0);
}

Test(machine_load, a_run_shorter_than_a_tick_is_measured_by_its_clocks)
{
    /* schedstat did not move (a kernel that accounts at ticks, a run
     * shorter than one), but the thread's CPU clock and the wall clock
     * did: 600 ns of CPU in 1000 ns of wall time is 40% off the CPU, an
     * upper bound on the wait, never the unknown -1 that passed as none. */
    sl__machine_load start = {.has_schedstat = true,
                              .task_run_ns = 1000,
                              .task_wait_ns = 500,
                              .has_clocks = true,
                              .thread_cpu_ns = 5000,
                              .monotonic_ns = 90000};
    sl__machine_load end = start;
    end.thread_cpu_ns += 600;
    end.monotonic_ns += 1000;
    cr_expect_float_eq(sl__process_wait_fraction(&start, &end), 0.4, 1e-12);
    /* No schedstat at all: the clocks alone. */
    start.has_schedstat = end.has_schedstat = false;
    cr_expect_float_eq(sl__process_wait_fraction(&start, &end), 0.4, 1e-12);
    /* A thread clock ahead of the wall clock (rounding) is no wait. */
    end.thread_cpu_ns = start.thread_cpu_ns + 1200;
    cr_expect_eq(sl__process_wait_fraction(&start, &end), 0.0);
    /* No time passed: unknown. */
    cr_expect_eq(sl__process_wait_fraction(&start, &start), -1.0);
}

Test(machine_load, a_short_real_run_has_a_known_wait)
{
    /* A quarter of a millisecond of spinning, shorter than any scheduler
     * tick: the share is known, between 0 and 1. */
    sl__machine_load start, end;
    sl__machine_sample(&start);
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do
        clock_gettime(CLOCK_MONOTONIC, &t);
    while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 250000L);
    sl__machine_sample(&end);
    double share = sl__process_wait_fraction(&start, &end);
    cr_expect_geq(share, 0.0, "the wait of a run shorter than a tick is known: %g", share);
    cr_expect_leq(share, 1.0);
}

static atomic_bool stop_spinning;

static void *spin(void *unused)
{
    (void)unused;
    while (!atomic_load_explicit(&stop_spinning, memory_order_relaxed))
        ;
    return NULL;
}

static double thread_cpu_seconds(void)
{
    struct timespec now;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

Test(machine_load, two_threads_on_one_cpu_wait_about_half_their_time)
{
    /* Both threads of this process pinned to one CPU and spinning: each
     * runs while the other waits, so the process's threads wait about half
     * of their runnable time (more if other work shares that CPU), where a
     * lone thread waits close to none. A share below a fifth would mean
     * the wait is not seen. */
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu() >= 0 ? sched_getcpu() : 0, &one);
    cr_assert_eq(sched_setaffinity(0, sizeof one, &one), 0);
    sl__machine_load start, end;
    sl__machine_sample(&start);
    if (!start.has_schedstat)
        cr_skip_test("this kernel has no /proc/self/task/N/schedstat");
    atomic_store(&stop_spinning, false);
    pthread_t other;
    cr_assert_eq(pthread_create(&other, NULL, spin, NULL), 0);
    /* The new thread inherits the affinity. Run until this thread alone
     * has had 0.2 s of CPU, whatever the machine's speed. */
    double until = thread_cpu_seconds() + 0.2;
    while (thread_cpu_seconds() < until)
        ;
    sl__machine_sample(&end);
    atomic_store(&stop_spinning, true);
    pthread_join(other, NULL);
    double share = sl__process_wait_fraction(&start, &end);
    cr_expect_gt(share, 0.2, "the threads waited %.3f of their runnable time", share);
    cr_expect_leq(share, 1.0);
    cr_expect_gt(end.task_run_ns, start.task_run_ns + 150000000ull, "0.2 s of running is counted");
}

/* The allocator behind sources, fixtures and batches (engine/core/alloc.c)
 * starts a block of a huge page or more on a huge page, so that all of it
 * can be backed by huge ones, and SLUICE_HUGEPAGES=0 asks for nothing but
 * the alignment the caller gave. The bytes are the caller's either way. */
Test(machine_load, large_blocks_start_on_a_huge_page_unless_turned_off)
{
    unsetenv("SLUICE_HUGEPAGES");
    cr_expect(sl__huge_pages_on());
    size_t bytes = 3 * SL_HUGE_PAGE_BYTES + 100;
    unsigned char *block = sl__aligned_alloc(64, bytes);
    cr_assert_not_null(block);
    cr_expect_eq((uintptr_t)block % SL_HUGE_PAGE_BYTES, 0, "a %zu-byte block at %p", bytes, (void *)block);
    memset(block, 0x5a, bytes);
    cr_expect_eq(block[bytes - 1], 0x5a);
    free(block);
    /* A small block keeps its own alignment and costs no huge page. */
    void *small = sl__aligned_alloc(64, 4096);
    cr_assert_not_null(small);
    cr_expect_eq((uintptr_t)small % 64, 0);
    free(small);

    setenv("SLUICE_HUGEPAGES", "0", 1);
    cr_expect_not(sl__huge_pages_on());
    /* Many blocks: with the advice off, not every one lands on a 2 MiB
     * boundary (each follows malloc's own header). */
    int on_huge_boundary = 0;
    for (int i = 0; i < 8; i++) {
        void *plain = sl__aligned_alloc(64, bytes);
        cr_assert_not_null(plain);
        on_huge_boundary += (uintptr_t)plain % SL_HUGE_PAGE_BYTES == 0;
        free(plain);
    }
    cr_expect_lt(on_huge_boundary, 8);
    unsetenv("SLUICE_HUGEPAGES");
}

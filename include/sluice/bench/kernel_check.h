/* A checker and benchmark of single kernels, in the manner of dav1d's
 * checkasm and llm.c's dev/cuda: every entry of a kernel table runs beside
 * the reference table's on the same deterministic inputs, its output is
 * compared with the reference's, and only then is it timed.
 *
 * The registry holds cases: one per kernel entry (SL_KERNEL_ENTRIES, every
 * one) and shape, the shapes being the element sizes the scenarios run
 * (CV-1's 32x32x3 u8 images, TAB-1's rows of 100 f32, MM-2's one-second
 * waveforms, ...) and, for every entry, at least one size that is not a
 * multiple of any vector width (1, 17, 1001, ...), where vector loops and
 * their tails part ways. A case's inputs are drawn from sluice's Philox
 * generator under a seed, so they are the same on every machine. */
#ifndef SLUICE_KERNEL_CHECK_H
#define SLUICE_KERNEL_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice/core/status.h"
#include "sluice/kernels/kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sl_kernel_case {
    const char *entry; /* the kernel entry, as SL_KERNEL_ENTRIES names it: "normalize_u8" */
    sl_kernel_entry entry_id;
    const char *shape;  /* a short label of the sizes: "32x32x3" */
    const char *origin; /* the scenario whose element size this is ("CV-1"), or "odd" for an awkward size */
    int64_t bytes;      /* bytes one call reads plus bytes it writes, for a bandwidth */
    double tolerance;   /* 0: the output must be the reference's bits; otherwise the largest |difference|
                             * of an f32 output value (log_mel: MM-2's stated tolerance, docs/determinism.md) */
    int index;          /* the case's position in the registry */
} sl_kernel_case;

/* Every case, grouped by entry in SL_KERNEL_ENTRIES order. */
int sl_kernel_case_count(void);
const sl_kernel_case *sl_kernel_case_at(int index);
/* The case of `entry` with label `shape` (both case-insensitive), or the
 * entry's first case when shape is NULL; NULL when there is none. */
const sl_kernel_case *sl_kernel_case_find(const char *entry, const char *shape);

/* Every entry of SL_KERNEL_ENTRIES (sl_kernel_entry_name) has cases. */

/* The seeds a check draws its inputs from, 1 to SL_KERNEL_CHECK_SEEDS. */
#define SL_KERNEL_CHECK_SEEDS 3

/* Runs the reference table's entry and `table`'s on the same fresh inputs,
 * under each seed, and compares every output. SL_OK when they agree;
 * SL_EMISMATCH when they do not, with diff (and err) saying where first:
 * the seed, the output, the first differing index and both values.
 * SL_EUNSUPPORTED, with the reason, for a table this CPU cannot run;
 * SL_ENOMEM when the inputs cannot be allocated. */
sl_status sl_kernel_case_check(const sl_kernel_case *c, const sl_kernel_table *table, char *diff, size_t size,
                               sl_err *err);

/* The median nanoseconds of one call of `table`'s entry over `repetitions`
 * samples (at least 1), on inputs in cache, measured with sl_now_ns. A
 * sample times enough calls to last SL_KERNEL_SAMPLE_NS, rotating over a
 * few sets of inputs when one set is small, and the calibration that finds
 * that count is the warmup. A case stops sampling early once it has spent
 * SL_KERNEL_TIME_BUDGET_NS with at least 3 samples, so a slow reference
 * kernel costs a bounded time. Nothing outside the call changes: the inputs
 * are its own, allocated and freed here. Errors as for the check. */
#define SL_KERNEL_SAMPLE_NS      50000
#define SL_KERNEL_TIME_BUDGET_NS 250000000
sl_status sl_kernel_case_time(const sl_kernel_case *c, const sl_kernel_table *table, int repetitions, double *median_ns,
                              sl_err *err);

/* A case's inputs made once and timed on several tables in turn, so that a
 * caller can interleave the tables' samples (the tuner,
 * sluice/bench/kernel_tune.h) rather than time one table after another while the
 * machine drifts. sl_kernel_case_time is one table's use of it. */
typedef struct sl_kernel_timer sl_kernel_timer;

/* The clock a timer reads: the wall clock (sl_now_ns), or the thread's CPU
 * time (sl_thread_cpu_ns), which on a machine shared with other processes
 * leaves out the time the scheduler gave them. */
typedef enum sl_kernel_clock { SL_KERNEL_CLOCK_WALL = 0, SL_KERNEL_CLOCK_THREAD_CPU } sl_kernel_clock;

/* Makes the case's inputs (the sets sl_kernel_case_time rotates over). */
sl_status sl_kernel_timer_open(const sl_kernel_case *c, sl_kernel_clock clock, sl_kernel_timer **out, sl_err *err);
/* The calls of `table`'s entry that one sample takes so that it lasts at
 * least sample_ns (doubling from 1, capped at 2^22 calls): the warmup.
 * SL_EUNSUPPORTED, with the reason, for a table this CPU cannot run. */
sl_status sl_kernel_timer_calibrate(sl_kernel_timer *timer, const sl_kernel_table *table, int64_t sample_ns,
                                    int64_t *calls, sl_err *err);
/* One sample: the mean nanoseconds per call over `calls` calls, on the
 * timer's clock (the calibration reads it too). */
double sl_kernel_timer_sample(sl_kernel_timer *timer, const sl_kernel_table *table, int64_t calls);
void sl_kernel_timer_close(sl_kernel_timer *timer);

#ifdef __cplusplus
}
#endif

#endif

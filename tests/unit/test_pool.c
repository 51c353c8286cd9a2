/* The fused executor's thread pool (engine/exec/pool.h): every task runs
 * once, in chunks of the asked size within each thread's home share, and a
 * late thread's chunks go to the threads that are free. */
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include <criterion/criterion.h>

#include "pool.h"

#define MAX_TASKS   1000
#define MAX_THREADS 4

typedef struct tally {
    _Atomic int runs[MAX_TASKS]; /* times each task ran */
    int thread_of[MAX_TASKS];
    _Atomic bool wrong_size;
    int64_t chunk, ntasks;
    int threads;
    int slow_thread; /* sleeps in each of its chunks; -1 none */
} tally;

static void count_chunk(void *ctx, int thread, int64_t first, int64_t end)
{
    tally *t = ctx;
    /* A chunk is `chunk` tasks, or shorter where a home share ends. */
    bool share_end = false;
    for (int k = 1; k <= t->threads; k++)
        share_end |= end == t->ntasks * k / t->threads;
    bool whole = t->threads == 1 && first == 0 && end == t->ntasks; /* one thread: one call */
    if (end - first != t->chunk && !(share_end && end - first < t->chunk) && !whole)
        atomic_store(&t->wrong_size, true);
    for (int64_t i = first; i < end; i++) {
        atomic_fetch_add(&t->runs[i], 1);
        t->thread_of[i] = thread;
    }
    if (thread == t->slow_thread)
        nanosleep(&(struct timespec){0, 2000000}, NULL);
}

static void run_and_check(sl__pool *pool, int threads, int64_t ntasks, int64_t chunk)
{
    static tally t;
    memset(&t, 0, sizeof t);
    t.chunk = chunk;
    t.ntasks = ntasks;
    t.threads = threads;
    t.slow_thread = -1;
    sl__pool_run(pool, count_chunk, &t, ntasks, chunk);
    for (int64_t i = 0; i < ntasks; i++)
        cr_assert_eq(atomic_load(&t.runs[i]), 1, "task %lld of %lld, chunk %lld ran %d times", (long long)i,
                     (long long)ntasks, (long long)chunk, atomic_load(&t.runs[i]));
    for (int64_t i = ntasks; i < MAX_TASKS; i++)
        cr_assert_eq(atomic_load(&t.runs[i]), 0, "task %lld is past the loop", (long long)i);
    cr_assert_not(atomic_load(&t.wrong_size), "a chunk was neither %lld tasks nor a home share's last",
                  (long long)chunk);
}

Test(pool, every_task_runs_once_in_chunks_of_the_asked_size)
{
    for (int threads = 1; threads <= MAX_THREADS; threads++) {
        sl__pool *pool;
        sl_err err = {0};
        cr_assert_eq(sl__pool_create(threads, &pool, &err), SL_OK, "%s", err.msg);
        sl__pool_set_polling(pool, true);
        const int64_t sizes[] = {0, 1, 7, 64, 999, MAX_TASKS};
        const int64_t chunks[] = {1, 3, 8, 64, 5000};
        for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
            for (size_t c = 0; c < sizeof chunks / sizeof *chunks; c++)
                run_and_check(pool, threads, sizes[s], chunks[c]);
        sl__pool_free(pool);
    }
}

/* A chunk size of 0 or less is taken as 1 rather than looping forever. */
Test(pool, a_chunk_below_one_task_runs_one_task_a_chunk)
{
    sl__pool *pool;
    sl_err err = {0};
    cr_assert_eq(sl__pool_create(2, &pool, &err), SL_OK, "%s", err.msg);
    static tally t;
    t.ntasks = 10;
    t.chunk = 1;
    t.threads = 2;
    t.slow_thread = -1;
    sl__pool_run(pool, count_chunk, &t, 10, 0);
    for (int i = 0; i < 10; i++)
        cr_assert_eq(atomic_load(&t.runs[i]), 1);
    cr_assert_not(atomic_load(&t.wrong_size));
    sl__pool_free(pool);
}

/* The worker sleeps 2 ms in each chunk it runs and the caller does not, so
 * with fixed halves the worker would run its home share, 32 of 64 tasks;
 * the caller, done with its own share, claims the rest of the worker's. The bound is loose, a quarter of the tasks, so that a
 * loaded machine descheduling the caller for a while cannot fail it. */
Test(pool, a_slow_thread_leaves_its_share_to_the_free_ones)
{
    sl__pool *pool;
    sl_err err = {0};
    cr_assert_eq(sl__pool_create(2, &pool, &err), SL_OK, "%s", err.msg);
    sl__pool_set_polling(pool, true);
    static tally t;
    t.ntasks = 64;
    t.chunk = 1;
    t.threads = 2;
    t.slow_thread = 1;
    sl__pool_run(pool, count_chunk, &t, 64, 1);
    int worker_tasks = 0;
    for (int i = 0; i < 64; i++) {
        cr_assert_eq(atomic_load(&t.runs[i]), 1);
        worker_tasks += t.thread_of[i] == 1;
    }
    cr_assert_lt(worker_tasks, 16, "the slow worker ran %d of 64 tasks", worker_tasks);
    sl__pool_free(pool);
}

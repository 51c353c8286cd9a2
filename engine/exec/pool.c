/* The persistent parallel-loop pool (pool.h).
 *
 * A fused executor runs one loop per batch, often every few microseconds.
 * Waking a sleeping thread through a condition variable costs a system call
 * on the posting side and a scheduler wakeup (tens of microseconds on a
 * virtual machine) on the other, which is more than a small batch's rows
 * take. So both sides spin for a bounded time first: a worker that finished
 * its chunks keeps polling for the next loop before it sleeps, and the caller
 * polls for the workers' completion the same way. Past that bound
 * they block, so an idle pool costs nothing and an oversubscribed machine is
 * not starved by spinning. The spin has no PAUSE instruction: these
 * benchmarks run on virtual machines, where a run of PAUSEs can make the
 * hypervisor deschedule the spinning vCPU (KVM's pause-loop exiting), and
 * the machines have one thread per core, so there is no sibling to yield to. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "pool.h"
#include "sluice/core/timing.h"

/* A worker waits for the next loop while the caller hands the batch to its
 * consumer (in `sluice bench`, a digest of the whole batch), so it polls
 * longer than the caller, which only waits for chunks that started together
 * with its own. The poll must outlast the consumer: IO-1's digest of its
 * 3 MiB batch took longer than the 200 µs this was, so the worker slept
 * between batches, every split batch paid for waking it, and the split
 * chooser kept one thread (ci/split-consumer.sh: with the digest, IO-1 split
 * 8 to 17% of its batches and gained nothing; with 2 ms, 81 to 92% and
 * 1.38 to 1.41x; docs/adapters.md, "Two threads and the consumer"). OpenMP
 * runtimes poll for as long or longer (KMP_BLOCKTIME defaults to 200 ms), and
 * a pool polls only while its executor splits (sl__pool_set_polling), so an
 * executor that keeps to one thread has no worker spinning beside it. */
#define WORKER_SPIN_NS   2000000
#define CALLER_SPIN_NS   20000
/* Polls between clock reads while spinning. */
#define SPIN_CHECK_EVERY 64

/* A thread's home share of the current loop: tasks [first, end), of which
 * `next` is the first not yet claimed. On a line of its own, since its
 * owner claims from it while the others only look when they are done. */
typedef struct home {
    _Alignas(64) _Atomic int64_t next;
    int64_t end;
} home;

typedef struct worker {
    struct sl__pool *pool;
    int index;
    pthread_t thread;
} worker;

struct sl__pool {
    pthread_mutex_t lock;
    pthread_cond_t start; /* a new loop was posted */
    pthread_cond_t done;  /* the last worker of a loop finished */
    int threads;
    _Atomic uint64_t generation; /* incremented per loop; workers run each once */
    /* Workers not yet done with the current loop. On a line of its own:
     * every worker that finishes writes it, and on the generation's line
     * each write would take that line from the workers already polling
     * it for the next loop. */
    _Alignas(64) _Atomic int pending;
    _Alignas(64) home *homes; /* one per thread; a new line, away from pending */
    _Atomic bool stopping;
    _Atomic bool polling; /* workers poll before sleeping (sl__pool_set_polling) */
    int sleepers;         /* workers blocked on start (under lock) */
    bool caller_waiting;  /* the caller is blocked on done (under lock) */
    /* The current loop, written before generation is released. */
    sl__pool_fn fn;
    void *ctx;
    int64_t ntasks;
    int64_t chunk;
    worker *workers;
};

/* Runs chunks of the current loop on `thread` until none is left: its own
 * home share first, then what is left of the others'. A thread that works
 * on the same rows batch after batch finds their output lines in its own
 * cache, so chunks move only from a thread that is late. */
static void claim_chunks(sl__pool *pool, int thread)
{
    for (int k = 0; k < pool->threads; k++) {
        home *h = &pool->homes[(thread + k) % pool->threads];
        for (;;) {
            int64_t first = atomic_fetch_add_explicit(&h->next, pool->chunk, memory_order_relaxed);
            if (first >= h->end)
                break;
            pool->fn(pool->ctx, thread, first, h->end - first < pool->chunk ? h->end : first + pool->chunk);
        }
    }
}

/* Spins until generation moves past seen (or the pool stops), then blocks. */
static uint64_t wait_for_loop(sl__pool *pool, uint64_t seen)
{
    int64_t deadline = sl_now_ns() + WORKER_SPIN_NS;
    for (unsigned spins = 1;; spins++) {
        uint64_t g = atomic_load_explicit(&pool->generation, memory_order_acquire);
        if (g != seen || atomic_load_explicit(&pool->stopping, memory_order_acquire))
            return g;
        if (spins % SPIN_CHECK_EVERY == 0 &&
            (sl_now_ns() > deadline || !atomic_load_explicit(&pool->polling, memory_order_relaxed)))
            break;
    }
    pthread_mutex_lock(&pool->lock);
    pool->sleepers++;
    while (atomic_load(&pool->generation) == seen && !atomic_load(&pool->stopping))
        pthread_cond_wait(&pool->start, &pool->lock);
    pool->sleepers--;
    pthread_mutex_unlock(&pool->lock);
    return atomic_load_explicit(&pool->generation, memory_order_acquire);
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    sl__pool *pool = w->pool;
    uint64_t seen = 0;
    for (;;) {
        seen = wait_for_loop(pool, seen);
        if (atomic_load_explicit(&pool->stopping, memory_order_acquire))
            break;
        claim_chunks(pool, w->index);
        if (atomic_fetch_sub_explicit(&pool->pending, 1, memory_order_acq_rel) == 1) {
            pthread_mutex_lock(&pool->lock);
            if (pool->caller_waiting)
                pthread_cond_signal(&pool->done);
            pthread_mutex_unlock(&pool->lock);
        }
    }
    return NULL;
}

/* Where workers may run: every CPU the caller may use except the one it is
 * on, when there is another. Linux starts a thread on its creator's CPU and
 * wakes it near its waker, and a worker that sleeps between batches gives
 * the load balancer no reason to move it: on the 2-vCPU VMs this project
 * runs on, about half the executors started ran worker and caller on one
 * vCPU, and a split CV-1 batch then took 300 µs against 70 µs on one
 * thread. The caller's own affinity is never changed, so it stays free to
 * move; false when there is no other CPU, and the workers then run
 * wherever the system puts them. */
static bool worker_cpus(cpu_set_t *set)
{
    if (sched_getaffinity(0, sizeof *set, set) != 0)
        return false;
    int here = sched_getcpu();
    if (here < 0 || !CPU_ISSET(here, set) || CPU_COUNT(set) < 2)
        return false;
    CPU_CLR(here, set);
    return true;
}

sl_status sl__pool_create(int threads, sl__pool **out, sl_err *err)
{
    *out = NULL;
    if (threads < 1)
        return sl_fail(err, SL_EINVAL, "a pool needs at least 1 thread, got %d", threads);
    sl__pool *pool = aligned_alloc(_Alignof(sl__pool), sizeof *pool);
    if (pool)
        memset(pool, 0, sizeof *pool);
    if (!pool)
        return sl_fail(err, SL_ENOMEM, "cannot allocate a thread pool");
    pool->threads = threads;
    /* Off until the caller first hands out loops: an executor whose batches
     * are never split must not have a worker spinning beside it. */
    atomic_init(&pool->polling, false);
    pthread_mutex_init(&pool->lock, NULL);
    pthread_cond_init(&pool->start, NULL);
    pthread_cond_init(&pool->done, NULL);
    pool->workers = calloc((size_t)threads, sizeof *pool->workers);
    pool->homes = aligned_alloc(_Alignof(home), (size_t)threads * sizeof *pool->homes);
    if (!pool->workers || !pool->homes) {
        pool->threads = 1; /* no worker was started, so none is joined */
        sl__pool_free(pool);
        return sl_fail(err, SL_ENOMEM, "cannot allocate %d pool workers", threads);
    }
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    cpu_set_t cpus;
    if (worker_cpus(&cpus))
        pthread_attr_setaffinity_np(&attr, sizeof cpus, &cpus);
    for (int i = 1; i < threads; i++) {
        pool->workers[i] = (worker){pool, i, 0};
        if (pthread_create(&pool->workers[i].thread, &attr, worker_main, &pool->workers[i]) != 0) {
            pthread_attr_destroy(&attr);
            pool->threads = i; /* only the started ones are joined */
            sl__pool_free(pool);
            return sl_fail(err, SL_ENOMEM, "cannot start pool thread %d of %d", i, threads);
        }
    }
    pthread_attr_destroy(&attr);
    *out = pool;
    return SL_OK;
}

void sl__pool_set_polling(sl__pool *pool, bool polling)
{
    atomic_store_explicit(&pool->polling, polling, memory_order_relaxed);
}

void sl__pool_run(sl__pool *pool, sl__pool_fn fn, void *ctx, int64_t ntasks, int64_t chunk)
{
    if (pool->threads == 1) {
        if (ntasks > 0)
            fn(ctx, 0, 0, ntasks);
        return;
    }
    pool->fn = fn;
    pool->ctx = ctx;
    pool->ntasks = ntasks;
    pool->chunk = chunk > 0 ? chunk : 1;
    for (int t = 0; t < pool->threads; t++) {
        atomic_store_explicit(&pool->homes[t].next, ntasks * t / pool->threads, memory_order_relaxed);
        pool->homes[t].end = ntasks * (t + 1) / pool->threads;
    }
    atomic_store_explicit(&pool->pending, pool->threads - 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&pool->generation, 1, memory_order_release);
    /* A worker decides to sleep under the lock after re-reading generation,
     * so taking the lock here means none can miss this loop. */
    pthread_mutex_lock(&pool->lock);
    if (pool->sleepers > 0)
        pthread_cond_broadcast(&pool->start);
    pthread_mutex_unlock(&pool->lock);

    claim_chunks(pool, 0);

    int64_t deadline = sl_now_ns() + CALLER_SPIN_NS;
    for (unsigned spins = 1; atomic_load_explicit(&pool->pending, memory_order_acquire) > 0; spins++) {
        if (spins % SPIN_CHECK_EVERY == 0 && sl_now_ns() > deadline) {
            pthread_mutex_lock(&pool->lock);
            pool->caller_waiting = true;
            while (atomic_load_explicit(&pool->pending, memory_order_acquire) > 0)
                pthread_cond_wait(&pool->done, &pool->lock);
            pool->caller_waiting = false;
            pthread_mutex_unlock(&pool->lock);
            break;
        }
    }
}

void sl__pool_free(sl__pool *pool)
{
    if (!pool)
        return;
    pthread_mutex_lock(&pool->lock);
    atomic_store(&pool->stopping, true);
    pthread_cond_broadcast(&pool->start);
    pthread_mutex_unlock(&pool->lock);
    for (int i = 1; i < pool->threads && pool->workers; i++)
        pthread_join(pool->workers[i].thread, NULL);
    pthread_cond_destroy(&pool->start);
    pthread_cond_destroy(&pool->done);
    pthread_mutex_destroy(&pool->lock);
    free(pool->homes);
    free(pool->workers);
    free(pool);
}

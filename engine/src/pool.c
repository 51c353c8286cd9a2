/* The persistent parallel-loop pool (pool.h). Workers sleep on a condition
 * variable between loops: a fused executor runs one loop per batch, and a
 * spinning worker would steal the core that the caller's slice needs on a
 * busy or oversubscribed machine. */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "pool.h"

typedef struct worker {
    struct sl__pool *pool;
    int index;
    pthread_t thread;
} worker;

struct sl__pool {
    pthread_mutex_t lock;
    pthread_cond_t start;     /* a new loop was posted */
    pthread_cond_t done;      /* the last slice of a loop finished */
    int threads;
    uint64_t generation;      /* incremented per loop; workers run each once */
    int pending;              /* worker slices of the current loop not yet done */
    bool stopping;
    sl__pool_fn fn;
    void *ctx;
    int64_t ntasks;
    worker *workers;
};

static void slice_bounds(int64_t ntasks, int threads, int thread, int64_t *first, int64_t *end)
{
    *first = ntasks * thread / threads;
    *end = ntasks * (thread + 1) / threads;
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    sl__pool *pool = w->pool;
    uint64_t seen = 0;
    pthread_mutex_lock(&pool->lock);
    for (;;) {
        while (!pool->stopping && pool->generation == seen)
            pthread_cond_wait(&pool->start, &pool->lock);
        if (pool->stopping)
            break;
        seen = pool->generation;
        sl__pool_fn fn = pool->fn;
        void *ctx = pool->ctx;
        int64_t first, end;
        slice_bounds(pool->ntasks, pool->threads, w->index, &first, &end);
        pthread_mutex_unlock(&pool->lock);
        if (first < end)
            fn(ctx, w->index, first, end);
        pthread_mutex_lock(&pool->lock);
        if (--pool->pending == 0)
            pthread_cond_signal(&pool->done);
    }
    pthread_mutex_unlock(&pool->lock);
    return NULL;
}

sl_status sl__pool_create(int threads, sl__pool **out, sl_err *err)
{
    *out = NULL;
    if (threads < 1)
        return sl_fail(err, SL_EINVAL, "a pool needs at least 1 thread, got %d", threads);
    sl__pool *pool = calloc(1, sizeof *pool);
    if (!pool)
        return sl_fail(err, SL_ENOMEM, "cannot allocate a thread pool");
    pool->threads = threads;
    pthread_mutex_init(&pool->lock, NULL);
    pthread_cond_init(&pool->start, NULL);
    pthread_cond_init(&pool->done, NULL);
    pool->workers = calloc((size_t)threads, sizeof *pool->workers);
    if (!pool->workers) {
        sl__pool_free(pool);
        return sl_fail(err, SL_ENOMEM, "cannot allocate %d pool workers", threads);
    }
    for (int i = 1; i < threads; i++) {
        pool->workers[i] = (worker){pool, i, 0};
        if (pthread_create(&pool->workers[i].thread, NULL, worker_main, &pool->workers[i]) != 0) {
            pool->threads = i; /* only the started ones are joined */
            sl__pool_free(pool);
            return sl_fail(err, SL_ENOMEM, "cannot start pool thread %d of %d", i, threads);
        }
    }
    *out = pool;
    return SL_OK;
}

int sl__pool_threads(const sl__pool *pool)
{
    return pool->threads;
}

void sl__pool_run(sl__pool *pool, sl__pool_fn fn, void *ctx, int64_t ntasks)
{
    int64_t first, end;
    if (pool->threads == 1) {
        if (ntasks > 0)
            fn(ctx, 0, 0, ntasks);
        return;
    }
    pthread_mutex_lock(&pool->lock);
    pool->fn = fn;
    pool->ctx = ctx;
    pool->ntasks = ntasks;
    pool->pending = pool->threads - 1;
    pool->generation++;
    pthread_cond_broadcast(&pool->start);
    pthread_mutex_unlock(&pool->lock);

    slice_bounds(ntasks, pool->threads, 0, &first, &end);
    if (first < end)
        fn(ctx, 0, first, end);

    pthread_mutex_lock(&pool->lock);
    while (pool->pending > 0)
        pthread_cond_wait(&pool->done, &pool->lock);
    pthread_mutex_unlock(&pool->lock);
}

void sl__pool_free(sl__pool *pool)
{
    if (!pool)
        return;
    pthread_mutex_lock(&pool->lock);
    pool->stopping = true;
    pthread_cond_broadcast(&pool->start);
    pthread_mutex_unlock(&pool->lock);
    for (int i = 1; i < pool->threads && pool->workers; i++)
        pthread_join(pool->workers[i].thread, NULL);
    pthread_cond_destroy(&pool->start);
    pthread_cond_destroy(&pool->done);
    pthread_mutex_destroy(&pool->lock);
    free(pool->workers);
    free(pool);
}

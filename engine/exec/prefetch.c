#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "prefetch.h"
#include "sluice/core/resources.h"
#include "sluice/core/timing.h"
#include "sluice/pipeline/pipeline.h"

/* How long the consumer polls for its next item before it sleeps on the
 * condition variable. A worker that finishes a batch while the consumer
 * sleeps must wake it through the scheduler, which on a virtual machine
 * takes tens of microseconds: longer than a small batch (NLP-1's) takes to
 * compute. Polling a little first takes an item that is about to be ready
 * without that wakeup; past the bound the consumer blocks as before. */
#define CONSUMER_SPIN_NS 20000
#define SPIN_CHECK_EVERY 64

typedef struct slot {
    int64_t seq; /* which item the slot holds or awaits; -1 when free */
    bool ready;
    /* seq once the item is ready, published after the slot is filled, so the
     * consumer can poll it without the lock. */
    _Atomic int64_t ready_seq;
    sl_batch *batch;
    sl_status status;
    sl_err err;
} slot;

struct sl__prefetch {
    pthread_mutex_t lock;
    pthread_cond_t item_ready; /* a slot became ready: wakes the consumer */
    pthread_cond_t slot_free;  /* the consumer took an item: wakes workers */
    sl__produce_fn produce;
    void *ctx;
    int depth;
    slot *slots;
    int64_t next_to_claim; /* the next seq a worker will compute */
    int64_t next_to_take;  /* the next seq the consumer will return */
    bool stopping;
    bool consumer_waiting; /* the consumer sleeps on item_ready */
    int workers_waiting;   /* workers sleeping on slot_free */
    int nworkers;
    pthread_t *threads;
};

static void *worker_main(void *arg)
{
    sl__prefetch *pool = arg;
    pthread_mutex_lock(&pool->lock);
    for (;;) {
        /* Claim the next seq only when its slot is free: this is the bound
         * that keeps at most depth items computed ahead of the consumer. */
        while (!pool->stopping && pool->next_to_claim >= pool->next_to_take + pool->depth) {
            pool->workers_waiting++;
            pthread_cond_wait(&pool->slot_free, &pool->lock);
            pool->workers_waiting--;
        }
        if (pool->stopping)
            break;
        int64_t seq = pool->next_to_claim++;
        slot *s = &pool->slots[seq % pool->depth];
        s->seq = seq;
        s->ready = false;
        pthread_mutex_unlock(&pool->lock);

        sl_batch *batch = NULL;
        sl_err err = {0};
        sl_status status = pool->produce(pool->ctx, seq, &batch, &err);

        pthread_mutex_lock(&pool->lock);
        s->batch = batch;
        s->status = status;
        s->err = err;
        s->ready = true;
        atomic_store_explicit(&s->ready_seq, seq, memory_order_release);
        /* Only a sleeping consumer needs the system call of a wakeup. */
        if (pool->consumer_waiting)
            pthread_cond_signal(&pool->item_ready);
    }
    pthread_mutex_unlock(&pool->lock);
    return NULL;
}

sl_status sl__prefetch_check_bounds(int workers, int depth, size_t batch_bytes, sl_err *err)
{
    if (workers <= 0)
        return SL_OK;
    int cpus = sl_available_cpus();
    if (workers > SL__PREFETCH_WORKERS_PER_CPU * cpus)
        return sl_fail(err, SL_EINVAL, "%d prefetch workers is more than %d per CPU this process may use (%d CPUs)",
                       workers, SL__PREFETCH_WORKERS_PER_CPU, cpus);
    int effective = depth > 0 ? depth : 2 * workers;
    if (effective > SL__PREFETCH_DEPTH_PER_WORKER * workers)
        return sl_fail(err, SL_EINVAL, "prefetch depth %d is more than %d batches per worker", effective,
                       SL__PREFETCH_DEPTH_PER_WORKER);
    const char *limit = NULL;
    int64_t available = sl_memory_available(&limit);
    double queue = (double)effective * (double)batch_bytes;
    if (available > 0 && queue > (double)available / 2)
        return sl_fail(err, SL_ENOMEM,
                       "a prefetch queue of %d batches of %zu bytes (%.0f MB) would take more than half the %.0f MB "
                       "available (%s)",
                       effective, batch_bytes, queue / 1e6, (double)available / 1e6, limit);
    return SL_OK;
}

sl_status sl__prefetch_create(int workers, int depth, sl__produce_fn produce, void *ctx, sl__prefetch **out,
                              sl_err *err)
{
    *out = NULL;
    if (workers < 1)
        return sl_fail(err, SL_EINVAL, "a prefetch pool needs at least one worker, got %d", workers);
    if (depth <= 0)
        depth = 2 * workers;
    if (depth < workers)
        return sl_fail(err, SL_EINVAL, "prefetch depth %d is below the worker count %d", depth, workers);
    sl__prefetch *pool = calloc(1, sizeof *pool);
    if (!pool)
        return sl_fail(err, SL_ENOMEM, "cannot allocate a prefetch pool");
    pool->slots = calloc((size_t)depth, sizeof *pool->slots);
    pool->threads = calloc((size_t)workers, sizeof *pool->threads);
    if (!pool->slots || !pool->threads) {
        free(pool->slots);
        free(pool->threads);
        free(pool);
        return sl_fail(err, SL_ENOMEM, "cannot allocate a prefetch pool of depth %d", depth);
    }
    for (int i = 0; i < depth; i++) {
        pool->slots[i].seq = -1;
        atomic_init(&pool->slots[i].ready_seq, -1);
    }
    pool->produce = produce;
    pool->ctx = ctx;
    pool->depth = depth;
    pthread_mutex_init(&pool->lock, NULL);
    pthread_cond_init(&pool->item_ready, NULL);
    pthread_cond_init(&pool->slot_free, NULL);
    for (int i = 0; i < workers; i++) {
        if (pthread_create(&pool->threads[i], NULL, worker_main, pool) != 0) {
            sl__prefetch_free(pool);
            return sl_fail(err, SL_ETHREAD, "cannot start prefetch worker %d of %d", i + 1, workers);
        }
        pool->nworkers++;
    }
    *out = pool;
    return SL_OK;
}

sl_status sl__prefetch_next(sl__prefetch *pool, sl_batch **out, sl_err *err)
{
    *out = NULL;
    /* Only the consumer advances next_to_take, so it may read it unlocked. */
    int64_t seq = pool->next_to_take;
    slot *s = &pool->slots[seq % pool->depth];
    int64_t deadline = sl_now_ns() + CONSUMER_SPIN_NS;
    for (unsigned spins = 1; atomic_load_explicit(&s->ready_seq, memory_order_acquire) != seq; spins++)
        if (spins % SPIN_CHECK_EVERY == 0 && sl_now_ns() > deadline)
            break;
    pthread_mutex_lock(&pool->lock);
    while (!(s->seq == seq && s->ready)) {
        pool->consumer_waiting = true;
        pthread_cond_wait(&pool->item_ready, &pool->lock);
        pool->consumer_waiting = false;
    }
    sl_status status = s->status;
    if (status == SL_OK) {
        *out = s->batch;
        pool->next_to_take++;
        s->seq = -1;
        s->ready = false;
        atomic_store_explicit(&s->ready_seq, -1, memory_order_relaxed);
        s->batch = NULL;
        /* One slot freed: one sleeping worker can claim it. */
        if (pool->workers_waiting > 0)
            pthread_cond_signal(&pool->slot_free);
    } else if (err) {
        /* The failed item stays put, so asking again reports it again
         * instead of skipping a batch. */
        *err = s->err;
    }
    pthread_mutex_unlock(&pool->lock);
    return status;
}

void sl__prefetch_free(sl__prefetch *pool)
{
    if (!pool)
        return;
    pthread_mutex_lock(&pool->lock);
    pool->stopping = true;
    pthread_cond_broadcast(&pool->slot_free);
    pthread_mutex_unlock(&pool->lock);
    for (int i = 0; i < pool->nworkers; i++)
        pthread_join(pool->threads[i], NULL);
    for (int i = 0; i < pool->depth; i++)
        sl_batch_free(pool->slots[i].batch);
    pthread_cond_destroy(&pool->item_ready);
    pthread_cond_destroy(&pool->slot_free);
    pthread_mutex_destroy(&pool->lock);
    free(pool->slots);
    free(pool->threads);
    free(pool);
}

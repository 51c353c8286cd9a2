/* A persistent pool of threads that runs one parallel loop at a time: the
 * caller hands it `ntasks` tasks, every thread (the caller included) claims
 * contiguous chunks of them in order until none is left, and the call
 * returns when all are done.
 *
 * Chunks are claimed, not dealt out as one fixed slice per thread, because
 * the threads do not run at the same speed: on the virtual machines this
 * project runs on, a worker whose vCPU has been idle ran its half of a batch
 * at a fifth of the caller's speed for several batches, and with fixed
 * halves the batch waited for it. A fused batch's rows are independent, so
 * which thread runs a row never changes the row's bytes. */
#ifndef SLUICE_POOL_H
#define SLUICE_POOL_H

#include <stdbool.h>
#include <stdint.h>

#include "sluice/status.h"

/* Runs tasks [first, end), one claimed chunk, on thread `thread` (0 is the
 * caller). A thread's chunks come in increasing order. */
typedef void (*sl__pool_fn)(void *ctx, int thread, int64_t first, int64_t end);

typedef struct sl__pool sl__pool;

/* Starts threads - 1 workers; threads >= 1. */
sl_status sl__pool_create(int threads, sl__pool **out, sl_err *err);
int sl__pool_threads(const sl__pool *pool);
/* Runs [0, ntasks) in chunks of `chunk` tasks (the last may be shorter),
 * each claimed by whichever thread is free first, and returns when every
 * chunk is done. Not reentrant. */
void sl__pool_run(sl__pool *pool, sl__pool_fn fn, void *ctx, int64_t ntasks, int64_t chunk);
void sl__pool_free(sl__pool *pool);
/* Whether idle workers poll for the next loop before they sleep or sleep at
 * once (the default, until a caller turns polling on): a caller turns it on
 * while it hands out loops and off when it stops, so that polling workers
 * do not take CPU time from its own work. */
void sl__pool_set_polling(sl__pool *pool, bool polling);

#endif

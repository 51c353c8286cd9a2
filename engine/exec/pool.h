/* A persistent pool of threads that runs one parallel loop at a time: the
 * caller hands it `ntasks` tasks, each thread (the caller included) has a
 * contiguous home share of them, claims its share in chunks, then claims
 * the chunks left in the others' shares, and the call returns when all are
 * done.
 *
 * Chunks are claimed, not dealt out as one fixed slice per thread, because
 * the threads do not run at the same speed: on the virtual machines this
 * project runs on, a worker whose vCPU has been idle ran its half of a batch
 * at a fifth of the caller's speed for several batches, and with fixed
 * halves the batch waited for it. A home share keeps each thread on the
 * same rows batch after batch while no thread is late, so their output lines
 * stay in its cache. A fused batch's rows are independent, so which thread
 * runs a row never changes the row's bytes. */
#ifndef SLUICE_POOL_H
#define SLUICE_POOL_H

#include <stdbool.h>
#include <stdint.h>

#include "sluice/core/status.h"

/* Runs tasks [first, end), one claimed chunk, on thread `thread` (0 is the
 * caller). */
typedef void (*sl__pool_fn)(void *ctx, int thread, int64_t first, int64_t end);

typedef struct sl__pool sl__pool;

/* Starts threads - 1 workers; threads >= 1. */
sl_status sl__pool_create(int threads, sl__pool **out, sl_err *err);
/* Runs [0, ntasks) split into one home share per thread, each in chunks
 * of `chunk` tasks (a share's last may be shorter), and returns when every
 * chunk is done; a pool of one thread runs [0, ntasks) in one call. Not
 * reentrant. */
void sl__pool_run(sl__pool *pool, sl__pool_fn fn, void *ctx, int64_t ntasks, int64_t chunk);
void sl__pool_free(sl__pool *pool);
/* Whether idle workers poll for the next loop before they sleep or sleep at
 * once (the default, until a caller turns polling on): a caller turns it on
 * while it hands out loops and off when it stops, so that polling workers
 * do not take CPU time from its own work. */
void sl__pool_set_polling(sl__pool *pool, bool polling);

#endif

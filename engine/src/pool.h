/* A persistent pool of threads that runs one parallel loop at a time: the
 * caller hands it `ntasks` tasks, every thread (the caller included) runs a
 * fixed contiguous slice of them, and the call returns when all are done.
 *
 * Slices are fixed by the thread count, not claimed dynamically, because a
 * fused batch's rows are independent: which thread runs a row never changes
 * the row's bytes, and fixed slices need no shared counter per row. */
#ifndef SLUICE_POOL_H
#define SLUICE_POOL_H

#include <stdbool.h>
#include <stdint.h>

#include "sluice/status.h"

/* Runs tasks [first, end) on thread `thread` (0 is the caller). */
typedef void (*sl__pool_fn)(void *ctx, int thread, int64_t first, int64_t end);

typedef struct sl__pool sl__pool;

/* Starts threads - 1 workers; threads >= 1. */
sl_status sl__pool_create(int threads, sl__pool **out, sl_err *err);
int sl__pool_threads(const sl__pool *pool);
/* Splits [0, ntasks) into sl__pool_threads contiguous slices, runs them in
 * parallel and returns when every slice is done. Not reentrant. */
void sl__pool_run(sl__pool *pool, sl__pool_fn fn, void *ctx, int64_t ntasks);
void sl__pool_free(sl__pool *pool);
/* Whether idle workers poll for the next loop before they sleep (the
 * default) or sleep at once: a caller that stops handing out loops turns it
 * off, so that polling workers do not take CPU time from its own work. */
void sl__pool_set_polling(sl__pool *pool, bool polling);

#endif

/* An ordered prefetch pool: worker threads compute items ahead of a consumer
 * and hand them over strictly in sequence order, with at most `depth` items
 * in flight. Because each item is a pure function of its sequence number, the
 * output is the same for any number of workers. */
#ifndef SLUICE_PREFETCH_H
#define SLUICE_PREFETCH_H

#include <stdint.h>

#include "sluice/core/status.h"
#include "sluice/core/tensor.h"

/* Computes item `seq` into a newly allocated batch. Called from worker
 * threads, concurrently for different seq. */
typedef sl_status (*sl__produce_fn)(void *ctx, int64_t seq, sl_batch **out, sl_err *err);

typedef struct sl__prefetch sl__prefetch;

/* Refuses a pool that cannot help and can only hurt: more than
 * SL__PREFETCH_WORKERS_PER_CPU workers per CPU the process may use, a depth
 * beyond SL__PREFETCH_DEPTH_PER_WORKER per worker, or a queue (depth batches
 * of batch_bytes) larger than half the memory available. `--workers 1024`
 * once made a 41 MB run use 2.1 GB. depth 0 means 2 x workers. */
#define SL__PREFETCH_WORKERS_PER_CPU  4
#define SL__PREFETCH_DEPTH_PER_WORKER 8
sl_status sl__prefetch_check_bounds(int workers, int depth, size_t batch_bytes, sl_err *err);

sl_status sl__prefetch_create(int workers, int depth, sl__produce_fn produce, void *ctx, sl__prefetch **out,
                              sl_err *err);
/* The next item in sequence order, owned by the caller. A worker's failure is
 * returned when the consumer reaches that item, with the worker's message. */
sl_status sl__prefetch_next(sl__prefetch *pool, sl_batch **out, sl_err *err);
/* Stops the workers (each finishes the item in hand) and frees every item
 * not handed out. */
void sl__prefetch_free(sl__prefetch *pool);

#endif

/* An ordered prefetch pool: worker threads compute items ahead of a consumer
 * and hand them over strictly in sequence order, with at most `depth` items
 * in flight. Because each item is a pure function of its sequence number, the
 * output is the same for any number of workers. */
#ifndef SLUICE_PREFETCH_H
#define SLUICE_PREFETCH_H

#include <stdint.h>

#include "sluice/status.h"
#include "sluice/tensor.h"

/* Computes item `seq` into a newly allocated batch. Called from worker
 * threads, concurrently for different seq. */
typedef sl_status (*sl__produce_fn)(void *ctx, int64_t seq, sl_batch **out, sl_err *err);

typedef struct sl__prefetch sl__prefetch;

sl_status sl__prefetch_create(int workers, int depth, sl__produce_fn produce, void *ctx, sl__prefetch **out,
                              sl_err *err);
/* The next item in sequence order, owned by the caller. A worker's failure is
 * returned when the consumer reaches that item, with the worker's message. */
sl_status sl__prefetch_next(sl__prefetch *pool, sl_batch **out, sl_err *err);
/* Stops the workers (each finishes the item in hand) and frees every item
 * not handed out. */
void sl__prefetch_free(sl__prefetch *pool);

#endif

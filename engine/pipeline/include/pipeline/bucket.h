/* The length-bucketing sampler behind bucket_by_length. */
#ifndef SLUICE_BUCKET_H
#define SLUICE_BUCKET_H

#include <stdbool.h>
#include <stdint.h>

#include "pipeline/internal.h"

typedef struct sl__bucket_state {
    int32_t *lengths; /* every element's length, read when the pipeline was built */
    int32_t min_length, max_length;
    int64_t window_batches;
} sl__bucket_state;

/* A caller that computes consecutive batches on one thread (the fused
 * executor) may keep the last window it sorted here, so that a window is
 * sorted once rather than once per batch. Zero-initialized means empty. */
typedef struct sl__bucket_cache {
    bool filled;
    int64_t epoch, window;
    int64_t n;       /* elements of the window */
    int64_t *sorted; /* the window's ids sorted by length; window_batches x batch size */
} sl__bucket_cache;

void sl__bucket_cache_release(sl__bucket_cache *cache);

/* The element ids of the whole batch at position, in bucketed order; ids has
 * room for the batch's rows. cache may be NULL. */
sl_status sl__bucket_batch_ids(const sl_pipeline *pipeline, sl_position position, int64_t *ids, sl__bucket_cache *cache,
                               sl_err *err);

#endif

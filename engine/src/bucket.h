/* The length-bucketing sampler behind bucket_by_length. */
#ifndef SLUICE_BUCKET_H
#define SLUICE_BUCKET_H

#include <stdint.h>

#include "pipeline_internal.h"

typedef struct sl__bucket_state {
    int32_t *lengths;          /* every element's length, read when the pipeline was built */
    int32_t min_length, max_length;
    int64_t window_batches;
} sl__bucket_state;

/* The element ids of the whole batch at position, in bucketed order; ids has
 * room for the batch's rows. */
sl_status sl__bucket_batch_ids(const sl_pipeline *pipeline, sl_position position, int64_t *ids, sl_err *err);

#endif

/* The compiled form of a pipeline, shared by its executors. */
#ifndef SLUICE_PIPELINE_INTERNAL_H
#define SLUICE_PIPELINE_INTERNAL_H

#include <pthread.h>

#include <xxhash.h>

#include "order/order.h"
#include "sluice/pipeline/pipeline.h"

/* An op resolved against the schema it sees: which field it touches, the
 * element layout before and after it, and the geometry and constants its
 * kernels need, computed once at build time. */
typedef struct sl__compiled_op {
    const sl_op *op;
    const struct sl__op_desc *desc;
    int field;                /* index in the output schema */
    int other_field;          /* a second field the op reads or writes, or -1 */
    int out_field;            /* a field a batch op adds to the output schema, or -1 */
    int owner;                /* the op whose sub-chain this op is (it runs it), or -1 */
    sl_dtype in_dtype;        /* the field's dtype before this op */
    sl_dtype out_dtype;       /* and after it */
    int64_t values;           /* values per element of the field, before the op */
    size_t in_bytes;          /* bytes of one element of the field before the op */
    size_t out_bytes;         /* and after it */
    size_t scratch_bytes;     /* scratch the op needs per call of its rows function */
    int h, w;                 /* image geometry for ops on [h, w] or [h, w, c] fields */
    int d;                    /* and the depth of volumes, [d, h, w] or [d, h, w, c] */
    size_t pixel_bytes;       /* bytes per pixel or voxel (channels x dtype size) */
    sl_normalize_consts norm; /* normalize; released with the pipeline */
    void *state;              /* anything else an op prepares; freed by its release */
} sl__compiled_op;

struct sl_pipeline {
    sl_pipeline_spec spec;
    sl__order order;
    /* The spec's source, or NULL after a cache op: then executors read the
     * cache of their kernel table (sl__element_source, engine/exec). */
    const sl_source *source;
    sl_schema source_schema;
    sl_schema output_schema;
    int64_t dataset_size;
    int64_t epoch_size;
    int64_t batches_per_epoch;
    int pack_field; /* field cut into sequences, or -1 */
    /* The bucket_by_length op that orders batches, or NULL (bucket.c). */
    const sl__compiled_op *bucket;
    int64_t seq_len;
    int32_t pad_id;
    int64_t stream_tokens;
    /* A field is gathered into a staging buffer of its source layout when an
     * element op changes its layout (a u8 image normalized to f32, a volume
     * cropped to a patch), and straight into the batch otherwise. */
    bool needs_staging[SL_MAX_FIELDS];
    /* Largest element of each field at any stage of its ops. */
    size_t max_element_bytes[SL_MAX_FIELDS];
    int nbatch_ops; /* ops that run on the whole batch after the element phase */
    int ncompiled;
    sl__compiled_op compiled[SL_MAX_OPS];
    sl_transform_set transforms;
    uint64_t fingerprint;
    size_t batch_bytes;
    /* With a cache op at spec index cache_at: the ops before it form
     * `prefix` (unshuffled, batch size 1, over the spec's source), whose
     * output the cache sources keep, one per kernel table (indexed by its
     * id), so that the reference stays an independent oracle and a run on
     * one table never reads what another computed. Executors create each
     * on first use, under cache_lock, and read it in place of the spec's
     * source; this pipeline compiles only the ops after the cache. cache_at
     * is -1 without one. */
    int cache_at;
    sl_pipeline *prefix;
    pthread_mutex_t cache_lock;
    sl_source *caches[SL_TABLE_SLOTS];
};

/* Fills ids, epoch, index and count of a batch at position, and resets every
 * field's per-batch shape to its schema (a batch op may have narrowed it).
 * Fails only when a bucketed order cannot allocate its window. */
sl_status sl__batch_begin(const sl_pipeline *pipeline, const sl_kernel_table *kernels, sl_position position,
                          sl_batch *batch, sl_err *err);
/* The same without the element ids, for an executor that computes them in
 * slices on several threads (the keyed shuffle is a large part of a small
 * row's cost). */
void sl__batch_begin_without_ids(const sl_pipeline *pipeline, sl_position position, sl_batch *batch);
/* Element ids of rows [first_row, first_row + rows) of the batch at position
 * in the pipeline's order; a bucketed pipeline (pipeline->bucket) reorders
 * whole windows, so its ids come only from sl__batch_all_ids. */
void sl__batch_ids(const sl_pipeline *pipeline, const sl_kernel_table *kernels, sl_position position, int64_t first_row,
                   int64_t rows, int64_t *ids);
/* Every element id of the batch at position (`rows` of them), bucketed or
 * not. cache (bucket.h), when not NULL, keeps a bucketed order's last
 * window for the next call from the same thread. */
struct sl__bucket_cache;
sl_status sl__batch_all_ids(const sl_pipeline *pipeline, const sl_kernel_table *kernels, sl_position position,
                            int64_t rows, int64_t *ids, struct sl__bucket_cache *cache, sl_err *err);

/* Called before element op `index` runs with its input: the batch's rows
 * of its field, `bytes` in all, in the op's input layout. */
typedef sl_status (*sl__op_observer)(void *user, int index, const void *input, size_t bytes, sl_err *err);
/* sl_pipeline_produce, telling `observe` (when not NULL) each element op's
 * input: how the autodiff tape keeps what a backward pass needs without a
 * second copy of the unfused executor. */
sl_status sl__produce_observed(const sl_pipeline *pipeline, const sl_kernel_table *kernels, sl_position position,
                               sl_batch *dst, sl__op_observer observe, void *user, sl_err *err);

/* Refuses a batch that cannot hold a full batch and a position outside the
 * epochs and batches the pipeline runs; shared by the executors that fill
 * a caller's batch. */
sl_status sl__produce_check(const sl_pipeline *pipeline, sl_position position, const sl_batch *dst, sl_err *err);

/* Runs the pipeline's batch-phase ops, in order, on a batch whose element
 * phase is done. Shared by every executor so none can reorder them. */
sl_status sl__run_batch_ops(const sl_pipeline *pipeline, const sl_kernel_table *kernels, sl_batch *batch, sl_err *err);

#endif

/* The compiled form of a pipeline, shared by its executors. */
#ifndef SLUICE_PIPELINE_INTERNAL_H
#define SLUICE_PIPELINE_INTERNAL_H

#include <xxhash.h>

#include "sluice/pipeline.h"

/* An op resolved against the schema it sees: which field it touches, the
 * element layout before and after it, and the geometry and constants its
 * kernels need, computed once at build time. */
typedef struct sl__compiled_op {
    const sl_op *op;
    const struct sl__op_desc *desc;
    int field;                 /* index in the output schema */
    int other_field;           /* a second field the op reads or writes, or -1 */
    int out_field;             /* a field a batch op adds to the output schema, or -1 */
    int owner;                 /* the op whose sub-chain this op is (it runs it), or -1 */
    sl_dtype in_dtype;         /* the field's dtype before this op */
    sl_dtype out_dtype;        /* and after it */
    int64_t values;            /* values per element of the field, before the op */
    size_t in_bytes;           /* bytes of one element of the field before the op */
    size_t out_bytes;          /* and after it */
    size_t scratch_bytes;      /* scratch the op needs per call of its rows function */
    int h, w;                  /* image geometry for ops on [h, w] or [h, w, c] fields */
    int d;                     /* and the depth of volumes, [d, h, w] or [d, h, w, c] */
    size_t pixel_bytes;        /* bytes per pixel or voxel (channels x dtype size) */
    sl_normalize_consts norm;  /* normalize; released with the pipeline */
    void *state;               /* anything else an op prepares; freed by its release */
} sl__compiled_op;

/* The epoch's order, prepared once when the pipeline is built (order.c):
 * the whole-set shuffle, a block shuffle, or a mixture. */
typedef enum sl__order_kind { SL__ORDER_WHOLE = 0, SL__ORDER_BLOCKS, SL__ORDER_MIX } sl__order_kind;

typedef struct sl__order {
    sl__order_kind kind;
    /* Blocks: block_rows per block, window blocks per window; the last of
     * nblocks blocks has last_rows rows (block_rows when the rows divide). */
    int64_t block_rows;
    int64_t window;
    int64_t nblocks;
    int64_t last_rows;
    /* Mixture: part s holds part_rows[s] rows from first_row[s] of the
     * source, and a position takes it when its draw is below threshold[s]
     * and at or above threshold[s - 1]. per_epoch[s] positions of an epoch
     * take it, and prefix[b * nparts + s] of the positions before 64 b. */
    int nparts;
    int64_t part_rows[SL_MAX_PARTS];
    int64_t first_row[SL_MAX_PARTS];
    uint64_t threshold[SL_MAX_PARTS];
    int64_t per_epoch[SL_MAX_PARTS];
    uint32_t *prefix;
} sl__order;

struct sl_pipeline {
    sl_pipeline_spec spec;
    sl__order order;
    const sl_source *source;
    sl_schema source_schema;
    sl_schema output_schema;
    int64_t dataset_size;
    int64_t epoch_size;
    int64_t batches_per_epoch;
    int pack_field;            /* field cut into sequences, or -1 */
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
    int nbatch_ops;            /* ops that run on the whole batch after the element phase */
    int ncompiled;
    sl__compiled_op compiled[SL_MAX_OPS];
    sl_transform_set transforms;
    uint64_t fingerprint;
    size_t batch_bytes;
    /* With a cache op at spec index cache_at: the ops before it form
     * `prefix` (unshuffled, batch size 1, over the spec's source), whose
     * output the cache sources keep, one per kernel choice ([0] reference,
     * [1] the best table), so that the reference stays an independent
     * oracle. This pipeline reads them in place of the spec's source and
     * compiles only the ops after the cache. cache_at is -1 without one. */
    int cache_at;
    sl_pipeline *prefix;
    sl_source *caches[2];
};

/* Where element's bytes of a source field lie: a fixed-size row, or for
 * the packed field the element's window of the token stream (shorter at the
 * stream's end). */
void sl__element_span(const sl_pipeline *pipeline, int field, int64_t element, size_t *offset, size_t *nbytes);
/* The prefetch for row `row` of a loop over rows [first, end) whose element
 * ids are ids[row]. Shuffled elements sit at unrelated addresses, so each
 * one's first read would miss the cache and wait; asking for an element a
 * few rows ahead overlaps those misses with the work on the current row. At
 * the first row the loop's first few rows are asked for together (they have
 * no earlier rows to hide their misses behind), at every row the row that
 * distance ahead. Only the leading lines of each
 * source field are requested, where the source has a mapped view; the
 * hardware prefetcher follows a row once it is read in order. */
void sl__prefetch_ahead(const sl_pipeline *pipeline, const int64_t *ids, int64_t first, int64_t row, int64_t end);
/* Reads element's bytes of a source field into dst (packing token streams). */
sl_status sl__gather_element(const sl_pipeline *pipeline, const sl_kernel_table *kernels, int field,
                             int64_t element, void *dst, sl_err *err);

/* Fills ids, epoch, index and count of a batch at position, and resets every
 * field's per-batch shape to its schema (a batch op may have narrowed it).
 * Fails only when a bucketed order cannot allocate its window. */
sl_status sl__batch_begin(const sl_pipeline *pipeline, sl_position position, sl_batch *batch, sl_err *err);
/* The same without the element ids, for an executor that computes them in
 * slices on several threads (the keyed shuffle is a large part of a small
 * row's cost). */
void sl__batch_begin_without_ids(const sl_pipeline *pipeline, sl_position position, sl_batch *batch);
/* Validates the spec's order (block shuffle, mixture) against the source and
 * prepares it, setting dataset_size; errors name the spec field. */
sl_status sl__order_init(sl_pipeline *pipeline, sl_err *err);
void sl__order_release(sl_pipeline *pipeline);
/* ids[i] = the element at global position first + i * stride of epoch. */
void sl__order_ids(const sl_pipeline *pipeline, int64_t epoch, uint64_t first, uint64_t stride, int64_t count,
                   int64_t *ids);
/* Feeds the order's parameters into a fingerprint; nothing for the
 * whole-set shuffle, whose fingerprint predates the others. */
void sl__order_fingerprint(const sl_pipeline *pipeline, XXH3_state_t *state);

/* Element ids of rows [first_row, first_row + rows) of the batch at position
 * in the pipeline's order; a bucketed pipeline (pipeline->bucket) reorders
 * whole windows, so its ids come only from sl__batch_all_ids. */
void sl__batch_ids(const sl_pipeline *pipeline, sl_position position, int64_t first_row, int64_t rows,
                   int64_t *ids);
/* Every element id of the batch at position (`rows` of them), bucketed or
 * not. cache (bucket.h), when not NULL, keeps a bucketed order's last
 * window for the next call from the same thread. */
struct sl__bucket_cache;
sl_status sl__batch_all_ids(const sl_pipeline *pipeline, sl_position position, int64_t rows, int64_t *ids,
                            struct sl__bucket_cache *cache, sl_err *err);

/* Called before element op `index` runs with its input: the batch's rows
 * of its field, `bytes` in all, in the op's input layout. */
typedef sl_status (*sl__op_observer)(void *user, int index, const void *input, size_t bytes, sl_err *err);
/* sl_pipeline_produce, telling `observe` (when not NULL) each element op's
 * input: how the autodiff tape keeps what a backward pass needs without a
 * second copy of the unfused executor. */
sl_status sl__produce_observed(const sl_pipeline *pipeline, sl_kernel_choice kernels, sl_position position,
                               sl_batch *dst, sl__op_observer observe, void *user, sl_err *err);

/* Refuses a batch that cannot hold a full batch and a position outside the
 * epochs and batches the pipeline runs; shared by the executors that fill
 * a caller's batch. */
sl_status sl__produce_check(const sl_pipeline *pipeline, sl_position position, const sl_batch *dst, sl_err *err);

/* Runs the pipeline's batch-phase ops, in order, on a batch whose element
 * phase is done. Shared by every executor so none can reorder them. */
sl_status sl__run_batch_ops(const sl_pipeline *pipeline, const sl_kernel_table *kernels, sl_batch *batch,
                            sl_err *err);

#endif

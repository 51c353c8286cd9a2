/* Pipelines: a source, a keyed order, batching and an op chain, run by the
 * `iter` (one batch a call) or `fused` (many batches a call) executors. */
#ifndef SLUICE_PIPELINE_H
#define SLUICE_PIPELINE_H

#include <stdbool.h>
#include <stdint.h>

#include "sluice/core/status.h"
#include "sluice/core/tensor.h"
#include "sluice/kernels/kernels.h"
#include "sluice/order/shuffle.h"
#include "sluice/pipeline/ops.h"
#include "sluice/source/source.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SL_MAX_OPS 160

/* Training or inference: ops such as dropout act only in training. A
 * pipeline's mode is part of its spec (and fingerprint); switching modes is
 * building a second pipeline from the same spec with the other mode. */
typedef enum sl_mode { SL_MODE_TRAIN = 0, SL_MODE_EVAL } sl_mode;

const char *sl_mode_name(sl_mode mode); /* "train", "eval" */
/* A block shuffle: an epoch's order that visits the data set a window of
 * blocks at a time, so a streaming source reads each block once (IO-2).
 * Rows are cut into blocks of `rows` consecutive rows (the last may be
 * short); a keyed permutation orders the blocks; each run of `window`
 * consecutive blocks of that order is a window, and a second keyed
 * permutation orders the window's rows. Any position's element is computed
 * alone, as with the whole-set shuffle. Used only when the spec shuffles. */
typedef struct sl_block_shuffle {
    int64_t rows;   /* rows per block; 0: one permutation of the whole data set */
    int64_t window; /* blocks per window, >= 1 */
} sl_block_shuffle;

/* A weighted interleave of the parts of a concatenated source
 * (sl_source_concat_create) (IO-3). Position p of every epoch takes part s
 * with probability weights[s] / sum(weights), decided by a Philox draw keyed
 * by (seed, position) alone, so the choice depends on no batch size, worker
 * count or resume point. Each part is an endless stream of its own epochs
 * (its rows in its own keyed order, reshuffled every pass when the spec
 * shuffles): the k-th position that takes part s gets the k-th element of
 * that stream, counted from the first epoch. An epoch is epoch_length
 * positions, and a part that runs out within one simply starts its next
 * pass, so the proportions stay the weights and nothing is dropped. */
typedef struct sl_mixture {
    int nparts;                     /* 0: no mixture; else the source's part count */
    uint32_t weights[SL_MAX_PARTS]; /* each in [1, 2^24] */
    int64_t epoch_length;           /* positions per epoch; 0: the source's rows */
} sl_mixture;

typedef struct sl_pipeline_spec {
    const sl_source *source; /* borrowed; must outlive the pipeline */
    int64_t batch_size;
    bool drop_last; /* drop a final partial batch instead of returning it */
    bool shuffle;
    uint64_t seed;
    sl_shard shard;          /* {0, 1} when not sharded */
    sl_mode mode;            /* SL_MODE_TRAIN unless set */
    sl_block_shuffle blocks; /* {0, 0}: the whole-set shuffle */
    sl_mixture mix;          /* nparts 0: no mixture */
    int nops;
    sl_op ops[SL_MAX_OPS];
} sl_pipeline_spec;

/* A spec with no ops, shuffled, unsharded, keeping a partial last batch. */
void sl_pipeline_spec_init(sl_pipeline_spec *spec, const sl_source *source, int64_t batch_size, uint64_t seed);
sl_status sl_pipeline_spec_add(sl_pipeline_spec *spec, sl_op op, sl_err *err);

typedef struct sl_pipeline sl_pipeline;

/* Validates the spec (fields exist, dtypes and shapes fit each op, sizes are
 * sane) and infers the output schema. Errors name the op and field. */
sl_status sl_pipeline_create(const sl_pipeline_spec *spec, sl_pipeline **out, sl_err *err);
void sl_pipeline_free(sl_pipeline *pipeline);

const sl_pipeline_spec *sl_pipeline_get_spec(const sl_pipeline *pipeline);
const sl_schema *sl_pipeline_output_schema(const sl_pipeline *pipeline);
/* Positions of an epoch before sharding: the elements of the data set
 * (sequences after packing), or a mixture's epoch length. */
int64_t sl_pipeline_dataset_size(const sl_pipeline *pipeline);
/* Elements this rank sees per epoch, and the batches they make. */
int64_t sl_pipeline_epoch_size(const sl_pipeline *pipeline);
int64_t sl_pipeline_batches_per_epoch(const sl_pipeline *pipeline);
/* Rows in the given batch of an epoch (batch_size except maybe the last). */
int64_t sl_pipeline_batch_rows(const sl_pipeline *pipeline, int64_t batch);
/* Output bytes of a full batch, all fields. */
size_t sl_pipeline_batch_bytes(const sl_pipeline *pipeline);
sl_transform_set sl_pipeline_transforms(const sl_pipeline *pipeline);
/* XXH3-64 of the spec's canonical description (source schema and rows, batch
 * size, order, seed, shard, every op and parameter): checkpoints carry it so a
 * state is never restored into a different pipeline. */
uint64_t sl_pipeline_fingerprint(const sl_pipeline *pipeline);

/* The data set index at a rank-local position of an epoch. */
int64_t sl_pipeline_element_at(const sl_pipeline *pipeline, int64_t epoch, int64_t local_position);

/* Where an iterator stands: the next batch it will return. Iterators run on
 * across epochs; batch resets to 0 as epoch increments. */
typedef struct sl_position {
    int64_t epoch;
    int64_t batch;
} sl_position;

/* The last epoch: epochs enter the Philox counter as 32 bits, so epoch 2^32
 * would replay epoch 0. Checkpoints and iterators refuse positions past it. */
#define SL_MAX_EPOCH ((int64_t)UINT32_MAX)

/* The position `batches` (>= 0) batches after position, without overflow:
 * past SL_MAX_EPOCH it stays at the first batch of SL_MAX_EPOCH + 1, which
 * every executor refuses. */
sl_position sl_position_advance(const sl_pipeline *pipeline, sl_position position, int64_t batches);

/* Computes one batch into dst (capacity >= batch_size, schema = output
 * schema) the unfused way: gather every row, then each op over the whole
 * batch. The unit of work of `iter` and of its prefetch workers. */
sl_status sl_pipeline_produce(const sl_pipeline *pipeline, const sl_kernel_table *kernels, sl_position position,
                              sl_batch *dst, sl_err *err);

/* --- per-element: one element a call -------------------------------------- */

/* Computes one element through the pipeline's element-phase ops, as a Python
 * `map` over a data set does: the element is read from the source, each op
 * returns a newly allocated buffer, and each field's final bytes are copied
 * to out[f] (sl_field_element_bytes of the output schema, every source
 * field). Batch-phase ops do not run: they need the batch. The bytes are
 * those of the element's row in any batch of that epoch (every random draw
 * is keyed by the element). */
sl_status sl_pipeline_produce_element(const sl_pipeline *pipeline, const sl_kernel_table *kernels, int64_t epoch,
                                      int64_t element, void *const out[SL_MAX_FIELDS], sl_err *err);

/* One batch the per-element way: every row computed alone into a newly
 * allocated element by sl_pipeline_produce_element, then collated (copied)
 * into dst, then the batch-phase ops. The same bytes as
 * sl_pipeline_produce; what differs is the cost of calling per element. */
sl_status sl_pipeline_produce_per_element(const sl_pipeline *pipeline, const sl_kernel_table *kernels,
                                          sl_position position, sl_batch *dst, sl_err *err);

/* --- iter: one batch a call ------------------------------------------------ */

/* How an iterator computes each batch: each op over the whole batch
 * (sl_pipeline_produce), or each element alone through every op and then
 * collated (sl_pipeline_produce_per_element). */
typedef enum sl_iter_mode { SL_ITER_BATCHED = 0, SL_ITER_PER_ELEMENT } sl_iter_mode;

typedef struct sl_iter_options {
    const sl_kernel_table *kernels; /* the table every batch runs (sl_kernels_choose) */
    int workers;                    /* 0: batches are computed in sl_iter_next's caller */
    int prefetch_depth;             /* batches in flight with workers; 0 picks 2 x workers */
    sl_position start;
} sl_iter_options;

typedef struct sl_iter sl_iter;

sl_status sl_iter_create(const sl_pipeline *pipeline, const sl_iter_options *options, sl_iter **out, sl_err *err);
/* The same in a given mode; sl_iter_create is SL_ITER_BATCHED. (The mode is
 * an argument rather than a member of the options so that every positional
 * initializer of sl_iter_options stays complete.) */
sl_status sl_iter_create_mode(const sl_pipeline *pipeline, const sl_iter_options *options, sl_iter_mode mode,
                              sl_iter **out, sl_err *err);
/* Returns the next batch, newly allocated and owned by the caller
 * (sl_batch_free). Batches come in order whatever the worker count. */
sl_status sl_iter_next(sl_iter *iter, sl_batch **out, sl_err *err);
sl_position sl_iter_position(const sl_iter *iter);
void sl_iter_free(sl_iter *iter);

/* --- fused: many batches a call ------------------------------------------- */

/* Receives each batch; the batch is valid only during the call. Return
 * nonzero to stop early. */
typedef int (*sl_batch_sink)(const sl_batch *batch, void *user);

typedef struct sl_fused sl_fused;

/* Preallocates everything a run needs, so runs allocate nothing per batch. */
sl_status sl_fused_create(const sl_pipeline *pipeline, const sl_kernel_table *kernels, sl_fused **out, sl_err *err);

#define SL_FUSED_MAX_THREADS 256
/* The same with a persistent pool of `threads` threads (the caller's among
 * them) that split each batch's rows, each thread claiming contiguous chunks
 * of them as it is free, whenever splitting is faster on this machine (see
 * sl_fused_last_split). A batch's bytes do not depend on the thread count or
 * on which thread ran which rows: rows are independent, and the batch-phase
 * ops run once the rows are done, on the caller's thread. */
sl_status sl_fused_create_threads(const sl_pipeline *pipeline, const sl_kernel_table *kernels, int threads,
                                  sl_fused **out, sl_err *err);
int sl_fused_threads(const sl_fused *fused);
/* Whether the batch last computed was split across threads. An executor
 * with several threads chooses per batch, from the batches' own times,
 * whether splitting pays on this machine now (engine/exec/split_choice.h);
 * batches below 64 KiB are never split. */
bool sl_fused_last_split(const sl_fused *fused);

/* The gather probe, the memory side of the roofline: the median time per
 * batch, over `passes` timed passes (after one untimed pass) over `batches`
 * batches from global batch index `first_batch` (the batches a run
 * measures), of copying each batch's source bytes (every source field of
 * every element, in the batch's order, from the source's mapped view or
 * through its read path, with the fused executor's prefetch) into one
 * buffer. Element ids are computed before the clock starts and no op runs:
 * this is the least work any loader of this pipeline does per batch. It
 * changes no output. The ids come from the kernels' shuffle, and after a
 * cache op the bytes from the kernels' cache. */
sl_status sl_pipeline_gather_probe(const sl_pipeline *pipeline, const sl_kernel_table *kernels, int64_t first_batch,
                                   int64_t batches, int passes, double *ns_per_batch, sl_err *err);
/* The roofline probe: the median time of this executor's work on the first
 * batch of epoch 0, repeated `repetitions` times once it is in cache. It
 * runs the pipeline's own op chain through the executor's kernels and
 * threads, without the gather misses, the shuffle, any allocation or a sink,
 * so it is what a batch costs when only the arithmetic and the cache-resident
 * copies remain: the yardstick an adapter's time is a fraction of. */
sl_status sl_fused_probe(sl_fused *fused, int repetitions, double *ns_per_batch, sl_err *err);
/* The CPUs this process may use (affinity mask, cgroup quota): the default
 * thread count of `sluice bench --threads`. */
int sl_available_cpus(void);
/* The bytes this process may still allocate: the least of MemAvailable,
 * the cgroup memory limit less its usage, and RLIMIT_AS less the address
 * space already mapped. Names the binding limit in *limit_name (when not
 * NULL). -1 when none is known. */
int64_t sl_memory_available(const char **limit_name);

/* A pipeline with a cache op keeps each element's output of the ops before
 * it, one cache per kernel table (the reference adapter fills its own, so
 * it stays an independent oracle, and a run on one table never reads what
 * another computed). The bytes filled so far in the cache of the given
 * table (0 without a cache): */
size_t sl_pipeline_cache_bytes(const sl_pipeline *pipeline, const sl_kernel_table *kernels);
/* Empties every cache, so the next epoch computes every element again.
 * Between runs only, never while an executor reads the pipeline. */
void sl_pipeline_cache_reset(const sl_pipeline *pipeline);
/* Runs nbatches batches from start (crossing epochs as needed), each op chain
 * fused per row and per tile, calling sink after each batch. */
sl_status sl_fused_run(sl_fused *fused, sl_position start, int64_t nbatches, sl_batch_sink sink, void *user,
                       sl_err *err);
void sl_fused_free(sl_fused *fused);

/* --- checkpoints ------------------------------------------------------------ */

/* Because order and randomness are stateless, an iterator's whole state is its
 * position: saving writes it with the pipeline fingerprint and a checksum, as
 * JSON, atomically. Loading refuses a file that is malformed, truncated,
 * corrupted or written for another pipeline, naming the file and the field. */
sl_status sl_checkpoint_save(const sl_pipeline *pipeline, sl_position position, const char *path, sl_err *err);
sl_status sl_checkpoint_load(const sl_pipeline *pipeline, const char *path, sl_position *out, sl_err *err);

#ifdef __cplusplus
}
#endif

#endif

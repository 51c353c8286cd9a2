/* The executors that run a pipeline: produce (one batch), per-element,
 * `iter` (one batch a call) and `fused` (many batches a call), their probes
 * and the caches behind a cache op. */
#ifndef SLUICE_EXECUTORS_H
#define SLUICE_EXECUTORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice/core/status.h"
#include "sluice/core/tensor.h"
#include "sluice/kernels/kernels.h"
#include "sluice/pipeline/pipeline.h"

#ifdef __cplusplus
extern "C" {
#endif

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
 * buffer laid out as a batch of the source's fields is. Element ids are
 * computed before the clock starts and no op runs: this is the least work
 * of a loader that gathers a batch before it transforms it (a loader that
 * reads its source in place stores its output instead: the traffic probe
 * below). It changes no output. The ids come from the kernels' shuffle, and after a
 * cache op the bytes from the kernels' cache. */
sl_status sl_pipeline_gather_probe(const sl_pipeline *pipeline, const sl_kernel_table *kernels, int64_t first_batch,
                                   int64_t batches, int passes, double *ns_per_batch, sl_err *err);
/* The traffic probe: a batch's memory traffic on one core, with no op, as a
 * one-thread pipeline moves it: each row's source bytes of each field are
 * read (in the gather probe's order, through the same view or read path,
 * with the same prefetch) into that row's element of the same output field
 * (in a buffer laid out as the pipeline's output batch is), and the rest of
 * the element is filled, as are the elements of output fields that no
 * source field feeds; source bytes beyond an element go into a few KiB that
 * stay in L1. Every source byte is loaded once and every output byte stored
 * once. Whether a core overlaps its stores with its waiting loads or pays
 * for both is the machine's to say, and this probe asks it. SL_EINVAL for
 * the gather probe's bad windows. */
sl_status sl_pipeline_traffic_probe(const sl_pipeline *pipeline, const sl_kernel_table *kernels, int64_t first_batch,
                                    int64_t batches, int passes, double *ns_per_batch, sl_err *err);
/* The roofline probe: the median time of this executor's work on the first
 * batch of epoch 0, repeated `repetitions` times once it is in cache. It
 * runs the pipeline's own op chain through the executor's kernels and
 * threads, without the gather misses, the shuffle, any allocation or a sink,
 * so it is what a batch costs when only the arithmetic and the cache-resident
 * copies remain: the yardstick an adapter's time is a fraction of. */
sl_status sl_fused_probe(sl_fused *fused, int repetitions, double *ns_per_batch, sl_err *err);

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

#ifdef __cplusplus
}
#endif

#endif

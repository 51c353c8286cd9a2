/* Pipelines: a source, a keyed order, batching and an op chain, and the
 * positions and checkpoints of a run through them. The executors that run
 * one are the exec layer's (sluice/exec/executors.h). */
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

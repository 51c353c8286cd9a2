/* Stateful operator modules: a pipeline's ops (the module's parameters,
 * fixed when the pipeline is built and carried by its fingerprint) together
 * with running statistics of what they produce, carried across batches.
 *
 * The state is per-channel running statistics of one f32 output field: the
 * count of values per channel, their mean and their sum of squared
 * deviations (M2), in double, as a BatchNorm layer keeps of its input. The
 * output never depends on the state, so a module and the same ops as a plain
 * function produce identical batches; the state is folded from delivered
 * batches, in batch order, on the consumer's thread, whatever the worker
 * count (docs/design.md "Stateful modules"). It is saved in a checkpoint and
 * restored exactly (format version 2). */
#ifndef SLUICE_MODULE_H
#define SLUICE_MODULE_H

#include <stdint.h>

#include "sluice/core/status.h"
#include "sluice/core/tensor.h"
#include "sluice/kernels/kernels.h"
#include "sluice/pipeline/pipeline.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Per-channel statistics of some values: count per channel, mean, and M2,
 * the sum of squared deviations from the mean (variance = m2 / count). */
typedef struct sl_channel_stats {
    int32_t channels;
    int64_t count;
    double mean[SL_MAX_CHANNELS];
    double m2[SL_MAX_CHANNELS];
} sl_channel_stats;

/* What a module carries across batches. */
typedef struct sl_module_state {
    sl_position next; /* the batch it folds next */
    int64_t batches;  /* batches folded so far */
    sl_channel_stats stats;
} sl_module_state;

typedef struct sl_module sl_module;

/* A module over `field` of the pipeline's output, which must be f32; its
 * last dimension is its channels (an NHWC image's, a row's features), a
 * scalar field has one. Its statistics are computed with `kernels` (every
 * table gives the same bits). The state starts empty, expecting the batch
 * at start. */
sl_status sl_module_create(const sl_pipeline *pipeline, const sl_kernel_table *kernels, const char *field,
                           sl_position start, sl_module **out, sl_err *err);
void sl_module_free(sl_module *module);

const sl_pipeline *sl_module_pipeline(const sl_module *module);
const char *sl_module_field(const sl_module *module);
const sl_module_state *sl_module_state_of(const sl_module *module);
/* Population variance per channel: m2 / count (0 before any value). */
void sl_channel_stats_variance(const sl_channel_stats *stats, double *var);

/* Folds a delivered batch into the state: the batch's own statistics
 * (sl_batch_channel_stats) merged into the running ones
 * (sl_channel_stats_merge). The batch must be the one at state.next;
 * another is refused with SL_ESTATE and the state is left as it was, so the
 * state never depends on which worker computed a batch or when. */
sl_status sl_module_update(sl_module *module, const sl_batch *batch, sl_err *err);
/* Replaces the state (what a checkpoint restores); its channels must be the
 * module's and its figures sane. */
sl_status sl_module_set_state(sl_module *module, const sl_module_state *state, sl_err *err);

/* The plain functions the update is made of, for a caller that threads the
 * state itself. The statistics of one batch's field: the kernel table's
 * channel_moments over each row's pixels, the rows merged in order by
 * sl_channel_stats_merge (a fixed order: docs/determinism.md). */
sl_status sl_batch_channel_stats(const sl_batch *batch, int field, const sl_kernel_table *kernels,
                                 sl_channel_stats *out, sl_err *err);
/* Merges b into a (Chan, Golub and LeVeque's pairwise update), in double:
 * n = na + nb, d = mean_b - mean_a, mean = mean_a + d * (nb / n),
 * m2 = m2_a + m2_b + d * d * (na * nb / n); a empty takes b as it is. */
void sl_channel_stats_merge(sl_channel_stats *a, const sl_channel_stats *b);

/* Checkpoints with a module's state: the position as sl_checkpoint_save
 * writes it, plus the state (format version 2, the doubles as the hex of
 * their bits, so the state resumes exactly). The module must have folded
 * exactly the batches before position (state.next == position). Loading
 * refuses a file without module state, or with another field's or channel
 * count's, and sets the module's state only when everything checked;
 * sl_checkpoint_load refuses a file that carries module state, which a
 * resume without its module would silently lose. */
sl_status sl_checkpoint_save_module(const sl_pipeline *pipeline, sl_position position, const sl_module *module,
                                    const char *path, sl_err *err);
sl_status sl_checkpoint_load_module(const sl_pipeline *pipeline, const char *path, sl_position *out, sl_module *module,
                                    sl_err *err);

#ifdef __cplusplus
}
#endif

#endif

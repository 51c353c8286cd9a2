/* Stateful modules: running per-channel statistics of one output field,
 * folded from delivered batches in batch order. Workers never see the
 * state; the consumer folds each batch as it is delivered, and a batch out
 * of order is refused, so the state after any run is a function of the
 * pipeline and the batches folded, never of threads or timing. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "pipeline/internal.h"
#include "sluice/pipeline/module.h"

struct sl_module {
    const sl_pipeline *pipeline;
    const sl_kernel_table *kernels;
    int field;
    sl_module_state state;
};

/* The field's channels: its last dimension, or 1 for a scalar. */
static int64_t field_channels(const sl_field_spec *spec)
{
    return spec->shape.rank > 0 ? spec->shape.dims[spec->shape.rank - 1] : 1;
}

sl_status sl_module_create(const sl_pipeline *p, const sl_kernel_table *kernels, const char *field, sl_position start,
                           sl_module **out, sl_err *err)
{
    *out = NULL;
    if (!kernels)
        return sl_fail(err, SL_EINVAL, "module: no kernel table to compute its statistics with");
    int f = sl_schema_find(&p->output_schema, field);
    if (f < 0)
        return sl_fail(err, SL_EINVAL, "module: the pipeline's output has no field '%s'", field);
    const sl_field_spec *spec = &p->output_schema.fields[f];
    if (spec->dtype != SL_F32)
        return sl_fail(err, SL_EINVAL, "module: field '%s' is %s; running statistics need f32", field,
                       sl_dtype_name(spec->dtype));
    int64_t channels = field_channels(spec);
    if (channels < 1 || channels > SL_MAX_CHANNELS)
        return sl_fail(err, SL_EINVAL, "module: field '%s' has %lld channels (its last dimension); at most %d", field,
                       (long long)channels, SL_MAX_CHANNELS);
    if (start.epoch < 0 || start.epoch > SL_MAX_EPOCH || start.batch < 0 || start.batch >= p->batches_per_epoch)
        return sl_fail(err, SL_EINVAL, "module: start epoch %lld batch %lld is outside [0, %lld) batches",
                       (long long)start.epoch, (long long)start.batch, (long long)p->batches_per_epoch);
    sl_module *m = calloc(1, sizeof *m);
    if (!m)
        return sl_fail(err, SL_ENOMEM, "cannot allocate a module");
    m->pipeline = p;
    m->kernels = kernels;
    m->field = f;
    m->state.next = start;
    m->state.stats.channels = (int32_t)channels;
    *out = m;
    return SL_OK;
}

void sl_module_free(sl_module *m)
{
    free(m);
}

const sl_pipeline *sl_module_pipeline(const sl_module *m)
{
    return m->pipeline;
}
const char *sl_module_field(const sl_module *m)
{
    return m->pipeline->output_schema.fields[m->field].name;
}
const sl_module_state *sl_module_state_of(const sl_module *m)
{
    return &m->state;
}

void sl_channel_stats_variance(const sl_channel_stats *stats, double *var)
{
    for (int c = 0; c < stats->channels; c++)
        var[c] = stats->count > 0 ? stats->m2[c] / (double)stats->count : 0.0;
}

sl_status sl_batch_channel_stats(const sl_batch *batch, int field, const sl_kernel_table *kernels,
                                 sl_channel_stats *out, sl_err *err)
{
    if (field < 0 || field >= batch->schema.nfields)
        return sl_fail(err, SL_EINVAL, "batch has no field %d", field);
    const sl_tensor *t = &batch->fields[field];
    if (t->dtype != SL_F32)
        return sl_fail(err, SL_EINVAL, "field '%s' is %s; running statistics need f32",
                       batch->schema.fields[field].name, sl_dtype_name(t->dtype));
    int64_t channels = field_channels(&batch->schema.fields[field]);
    int64_t values = (int64_t)(sl_tensor_nbytes(t) / sizeof(float));
    if (channels < 1 || channels > SL_MAX_CHANNELS || values % channels != 0)
        return sl_fail(err, SL_EINVAL, "field '%s': %lld values do not split into %lld channels",
                       batch->schema.fields[field].name, (long long)values, (long long)channels);
    memset(out, 0, sizeof *out);
    out->channels = (int32_t)channels;
    if (batch->count <= 0 || values == 0)
        return SL_OK;
    /* Element by element, each merged in row order: an element is small
     * enough that the kernel's second pass reads it from cache, so the
     * batch is read from memory once, and each sum runs over one element's
     * pixels, which also tightens the bound (docs/determinism.md). */
    int64_t row_pixels = values / channels / batch->count;
    sl_channel_stats row = {.channels = (int32_t)channels, .count = row_pixels};
    for (int64_t r = 0; r < batch->count; r++) {
        kernels->channel_moments((const float *)t->data + r * row_pixels * channels, row_pixels, (int)channels,
                                 row.mean, row.m2);
        sl_channel_stats_merge(out, &row);
    }
    return SL_OK;
}

void sl_channel_stats_merge(sl_channel_stats *a, const sl_channel_stats *b)
{
    if (b->count == 0)
        return;
    if (a->count == 0) {
        *a = *b;
        return;
    }
    double na = (double)a->count, nb = (double)b->count, n = na + nb;
    for (int c = 0; c < a->channels; c++) {
        double d = b->mean[c] - a->mean[c];
        a->mean[c] = a->mean[c] + d * (nb / n);
        a->m2[c] = a->m2[c] + b->m2[c] + d * d * (na * nb / n);
    }
    a->count += b->count;
}

sl_status sl_module_update(sl_module *m, const sl_batch *batch, sl_err *err)
{
    if (batch->epoch != m->state.next.epoch || batch->index != m->state.next.batch)
        return sl_fail(err, SL_ESTATE,
                       "module on '%s' expects epoch %lld batch %lld next, not epoch %lld batch %lld: batches are "
                       "folded in order",
                       sl_module_field(m), (long long)m->state.next.epoch, (long long)m->state.next.batch,
                       (long long)batch->epoch, (long long)batch->index);
    if (m->field >= batch->schema.nfields || strcmp(batch->schema.fields[m->field].name, sl_module_field(m)) != 0)
        return sl_fail(err, SL_EINVAL, "module on '%s': the batch is not of its pipeline", sl_module_field(m));
    sl_channel_stats stats;
    sl_status st = sl_batch_channel_stats(batch, m->field, m->kernels, &stats, err);
    if (st)
        return st;
    if (stats.channels != m->state.stats.channels)
        return sl_fail(err, SL_EINVAL, "module on '%s' has %d channels, the batch %d", sl_module_field(m),
                       m->state.stats.channels, stats.channels);
    sl_channel_stats_merge(&m->state.stats, &stats);
    m->state.batches++;
    m->state.next = sl_position_advance(m->pipeline, m->state.next, 1);
    return SL_OK;
}

sl_status sl_module_set_state(sl_module *m, const sl_module_state *state, sl_err *err)
{
    if (state->stats.channels != m->state.stats.channels)
        return sl_fail(err, SL_ESTATE, "module on '%s' has %d channels; the state has %d", sl_module_field(m),
                       m->state.stats.channels, state->stats.channels);
    if (state->batches < 0 || state->stats.count < 0 || (state->stats.count > 0) != (state->batches > 0))
        return sl_fail(err, SL_EINVAL, "module state: %lld batches and %lld values per channel do not agree",
                       (long long)state->batches, (long long)state->stats.count);
    for (int c = 0; c < state->stats.channels; c++)
        if (!isfinite(state->stats.mean[c]) || !isfinite(state->stats.m2[c]) || state->stats.m2[c] < 0.0)
            return sl_fail(err, SL_EINVAL, "module state: channel %d has mean %g and m2 %g", c, state->stats.mean[c],
                           state->stats.m2[c]);
    if (state->next.epoch < 0 || state->next.epoch > SL_MAX_EPOCH || state->next.batch < 0 ||
        state->next.batch >= m->pipeline->batches_per_epoch)
        return sl_fail(err, SL_EINVAL, "module state: next epoch %lld batch %lld is outside the pipeline's batches",
                       (long long)state->next.epoch, (long long)state->next.batch);
    m->state = *state;
    return SL_OK;
}

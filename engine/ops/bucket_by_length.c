/* bucket_by_length: length bucketing for variable-length sequences. It
 * changes which elements share a batch, not any element's values, so it is
 * an ordering op: it runs in the sampler (bucket.c), never in an executor.
 * The shuffled epoch is cut into windows of `window_batches` batches; each
 * window's elements are sorted by length (ties in shuffled order) and cut
 * into batches, and the window's full batches are then put in a keyed
 * random order, so that a model does not see lengths rise through each
 * window. Compiling reads every element's length once, so the sampler does
 * no I/O and cannot fail on a read. */
#include <stdlib.h>

#include "pipeline/bucket.h"
#include "pipeline/op_desc.h"

/* Counting sort keeps bucketing cheap per batch; it needs the lengths to
 * span a bounded range. */
#define MAX_LENGTH_RANGE   ((int64_t)1 << 16)
/* A window is sorted for every batch it holds (the sampler keeps no state),
 * so its size is bounded too. */
#define MAX_WINDOW_BATCHES 1024

static void release(sl__compiled_op *c)
{
    sl__bucket_state *state = c->state;
    if (state)
        free(state->lengths);
    free(state);
    c->state = NULL;
}

static sl_status compile(sl_pipeline *p, int index, sl__compiled_op *c, sl_field_spec *field, sl_err *err)
{
    (void)field;
    const sl_op *op = c->op;
    if (p->bucket)
        return sl_fail(err, SL_EINVAL, "op %d: a pipeline has at most one bucket_by_length", index);
    if (p->pack_field >= 0)
        return sl_fail(err, SL_EINVAL, "op %d: bucket_by_length cannot order packed token sequences", index);
    if (op->u.bucket.window_batches < 1 || op->u.bucket.window_batches > MAX_WINDOW_BATCHES)
        return sl_fail(err, SL_EINVAL, "op %d: bucket_by_length window must be 1 to %d batches, got %d", index,
                       MAX_WINDOW_BATCHES, op->u.bucket.window_batches);
    int f;
    sl_status st = sl__length_field(p, index, "bucket_by_length", op->field, &f, err);
    if (st)
        return st;
    int64_t n = sl_source_rows(p->source);
    sl__bucket_state *state = calloc(1, sizeof *state);
    if (!state)
        return sl_fail(err, SL_ENOMEM, "op %d: cannot allocate bucket_by_length state", index);
    c->state = state;
    state->lengths = malloc((size_t)(n > 0 ? n : 1) * sizeof *state->lengths);
    if (!state->lengths)
        return sl_fail(err, SL_ENOMEM, "op %d: cannot allocate %lld lengths for bucket_by_length", index, (long long)n);
    st = sl_source_read(p->source, f, 0, (size_t)n * sizeof *state->lengths, state->lengths, err);
    if (st) {
        sl_fail_context(err, "op %d (bucket_by_length reading field '%s')", index, op->field);
        return st;
    }
    state->min_length = state->max_length = n > 0 ? state->lengths[0] : 0;
    for (int64_t i = 1; i < n; i++) {
        if (state->lengths[i] < state->min_length)
            state->min_length = state->lengths[i];
        if (state->lengths[i] > state->max_length)
            state->max_length = state->lengths[i];
    }
    if ((int64_t)state->max_length - state->min_length >= MAX_LENGTH_RANGE)
        return sl_fail(err, SL_EINVAL,
                       "op %d: bucket_by_length needs lengths within a range of %lld; field '%s' "
                       "spans [%d, %d]",
                       index, (long long)MAX_LENGTH_RANGE, op->field, state->min_length, state->max_length);
    state->window_batches = op->u.bucket.window_batches;
    p->bucket = c;
    return SL_OK;
}

static const sl__op_param params[] = {SL__PARAM_I32("window_batches", bucket.window_batches)};

const sl__op_desc sl__op_bucket_by_length_desc = {
    .phase = SL__PHASE_SOURCE,
    .compile = compile,
    .release = release,
    SL__PARAMS(params),
};

sl_op sl_op_bucket_by_length(const char *field, uint32_t op_id, int32_t window_batches)
{
    sl_op op = sl__op_on(SL_OP_BUCKET_BY_LENGTH, field, op_id);
    op.u.bucket.window_batches = window_batches;
    return op;
}

/* The unfused batch: gather every row, then run each op over the whole batch
 * before the next, then the batch-phase ops. This is what `iter` does per
 * call and what the reference adapter runs with reference kernels. */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "gather.h"
#include "pipeline/internal.h"
#include "pipeline/op_desc.h"
#include "source/check.h"

static void *field_row(void *base, int64_t row, size_t row_bytes)
{
    return (char *)base + (size_t)row * row_bytes;
}

/* Where each field's rows live between ops. A field whose layout no op
 * changes lives in the batch from the start; any other moves through
 * buffers allocated per batch, which is the cost the unfused path is meant
 * to show. */
typedef struct field_state {
    void *current;
    void *owned; /* current, when it is a buffer of ours */
} field_state;

/* Runs one element-phase op over the batch's rows of its field. */
static sl_status apply_element_op(const sl__op_ctx *ctx, const sl__compiled_op *c, sl_batch *b, field_state *fs,
                                  void *scratch, sl_err *err)
{
    field_state *state = &fs[c->field];
    void *out = state->current;
    void *fresh = NULL;
    if (!c->desc->in_place || c->out_bytes != c->in_bytes) {
        /* The last layout change of a field can write straight into the
         * batch, since the batch is laid out for the field's final form. */
        bool final_layout = c->out_bytes == sl_field_element_bytes(&b->schema.fields[c->field]) &&
                            state->current != b->fields[c->field].data;
        if (final_layout) {
            out = b->fields[c->field].data;
        } else {
            fresh = sl__aligned_alloc(SL_ALIGN, c->out_bytes * (size_t)b->count + 1);
            if (!fresh)
                return sl_fail(err, SL_ENOMEM, "cannot allocate %zu bytes for op %s", c->out_bytes * (size_t)b->count,
                               sl__op_name(c));
            out = fresh;
        }
    }
    c->desc->rows(ctx, c, b->element_ids, b->count, state->current, out, scratch);
    if (out != state->current) {
        free(state->owned);
        state->owned = fresh;
        state->current = out;
    }
    return SL_OK;
}

sl_status sl_pipeline_produce(const sl_pipeline *p, const sl_kernel_table *kernels, sl_position position, sl_batch *dst,
                              sl_err *err)
{
    return sl__produce_observed(p, kernels, position, dst, NULL, NULL, err);
}

sl_status sl__produce_check(const sl_pipeline *p, sl_position position, const sl_batch *dst, sl_err *err)
{
    if (dst->capacity < p->spec.batch_size)
        return sl_fail(err, SL_EINVAL, "batch capacity %lld is below the batch size %lld", (long long)dst->capacity,
                       (long long)p->spec.batch_size);
    if (position.batch < 0 || position.batch >= p->batches_per_epoch || position.epoch < 0 ||
        position.epoch > SL_MAX_EPOCH)
        return sl_fail(err, SL_EINVAL, "position epoch %lld batch %lld is outside [0, %lld) batches",
                       (long long)position.epoch, (long long)position.batch, (long long)p->batches_per_epoch);
    return SL_OK;
}

sl_status sl__produce_observed(const sl_pipeline *p, const sl_kernel_table *k, sl_position position, sl_batch *dst,
                               sl__op_observer observe, void *user, sl_err *err)
{
    sl_status st = sl__require_kernels(k, "producing a batch", err);
    if (st == SL_OK)
        st = sl__produce_check(p, position, dst, err);
    if (st)
        return st;
    const sl_source *source;
    st = sl__element_source(p, k, &source, err);
    if (st)
        return st;
    field_state fs[SL_MAX_FIELDS] = {{0}};
    void *scratch = NULL;
    st = sl__batch_begin(p, k, position, dst, err);
    if (st)
        return st;
    for (int f = 0; f < p->source_schema.nfields; f++) {
        size_t item = f == p->pack_field ? (size_t)p->seq_len * sizeof(int32_t)
                                         : sl_field_element_bytes(&p->source_schema.fields[f]);
        if (p->needs_staging[f]) {
            fs[f].owned = sl__aligned_alloc(SL_ALIGN, item * (size_t)dst->count + 1);
            if (!fs[f].owned) {
                st = sl_fail(err, SL_ENOMEM, "cannot allocate staging for field '%s'", p->source_schema.fields[f].name);
                goto done;
            }
        }
        fs[f].current = fs[f].owned ? fs[f].owned : dst->fields[f].data;
        for (int64_t r = 0; r < dst->count && !st; r++)
            st = sl__gather_element(p, source, k, f, dst->element_ids[r], field_row(fs[f].current, r, item), err);
        if (st)
            goto done;
    }
    size_t scratch_bytes = 1;
    for (int i = 0; i < p->ncompiled; i++)
        if (p->compiled[i].scratch_bytes > scratch_bytes)
            scratch_bytes = p->compiled[i].scratch_bytes;
    scratch = sl__aligned_alloc(SL_ALIGN, scratch_bytes);
    if (!scratch) {
        st = sl_fail(err, SL_ENOMEM, "cannot allocate %zu bytes of scratch", scratch_bytes);
        goto done;
    }
    sl__op_ctx ctx = {p, k, position.epoch};
    for (int i = 0; i < p->ncompiled && !st; i++) {
        const sl__compiled_op *c = &p->compiled[i];
        /* An op with an owner runs inside its owner's rows, not here. */
        if (c->desc->phase != SL__PHASE_ELEMENT || c->owner >= 0)
            continue;
        if (observe)
            st = observe(user, i, fs[c->field].current, c->in_bytes * (size_t)dst->count, err);
        if (!st)
            st = apply_element_op(&ctx, c, dst, fs, scratch, err);
    }
    if (!st)
        st = sl__source_check(source, err);
    if (st)
        goto done;
    /* Every field must end in the batch itself. */
    for (int f = 0; f < p->source_schema.nfields; f++)
        if (fs[f].current != dst->fields[f].data)
            memcpy(dst->fields[f].data, fs[f].current, sl_tensor_nbytes(&dst->fields[f]));
    st = sl__run_batch_ops(p, k, dst, err);
done:
    free(scratch);
    for (int f = 0; f < SL_MAX_FIELDS; f++)
        free(fs[f].owned);
    return st;
}

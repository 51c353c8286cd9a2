/* The unfused batch: gather every row, then run each op over the whole batch
 * before the next. This is what `iter` does per call and what the reference
 * adapter runs with reference kernels. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "pipeline_internal.h"

static void *field_row(void *base, int64_t row, size_t row_bytes)
{
    return (char *)base + (size_t)row * row_bytes;
}

/* Ops that move pixels run row by row with a keyed decision per element. */
static void apply_movement(const sl_pipeline *p, const sl_kernel_table *k, const sl__compiled_op *c, sl_batch *b,
                           void *data, void *scratch)
{
    size_t row_bytes = (size_t)c->h * (size_t)c->w * c->pixel_bytes;
    for (int64_t r = 0; r < b->count; r++) {
        void *row = field_row(data, r, row_bytes);
        int64_t element = b->element_ids[r];
        if (c->op->kind == SL_OP_RANDOM_CROP) {
            int oy, ox;
            sl__crop_offsets(p, c, b->epoch, element, &oy, &ox);
            k->crop_pad(row, scratch, c->h, c->w, c->pixel_bytes, c->op->u.crop.crop_h, c->op->u.crop.crop_w, oy,
                        ox);
            memcpy(row, scratch, row_bytes);
        } else if (sl__flip_decision(p, c, b->epoch, element)) {
            k->hflip(row, c->h, c->w, c->pixel_bytes);
        }
    }
}

static void apply_op(const sl_pipeline *p, const sl_kernel_table *k, const sl__compiled_op *c, sl_batch *b,
                     void **current, void *scratch)
{
    int f = c->field;
    int64_t values = c->values * b->count;
    switch (c->op->kind) {
    case SL_OP_PACK_TOKENS:
        break; /* done while gathering */
    case SL_OP_NORMALIZE: {
        float *out = b->fields[f].data;
        int64_t pixels = values / c->norm.channels;
        if (c->in_dtype == SL_U8)
            k->normalize_u8(current[f], out, pixels, &c->norm);
        else
            k->normalize_f32(current[f], out, pixels, &c->norm);
        current[f] = out;
        break;
    }
    case SL_OP_SCALE:
    case SL_OP_ADD:
    case SL_OP_MULTIPLY:
    case SL_OP_CLIP: {
        sl_ew_step step = sl__ew_step_of(c);
        k->ew_chain(current[f], values, &step, 1);
        break;
    }
    case SL_OP_RANDOM_CROP:
    case SL_OP_RANDOM_HFLIP:
        apply_movement(p, k, c, b, current[f], scratch);
        break;
    case SL_OP_KIND_COUNT:
        break;
    }
}

sl_status sl_pipeline_produce(const sl_pipeline *p, sl_kernel_choice kernels, sl_position position, sl_batch *dst,
                              sl_err *err)
{
    const sl_kernel_table *k = sl_kernel_table_for(kernels);
    if (dst->capacity < p->spec.batch_size)
        return sl_fail(err, SL_EINVAL, "batch capacity %lld is below the batch size %lld", (long long)dst->capacity,
                       (long long)p->spec.batch_size);
    if (position.batch < 0 || position.batch >= p->batches_per_epoch || position.epoch < 0)
        return sl_fail(err, SL_EINVAL, "position epoch %lld batch %lld is outside [0, %lld) batches",
                       (long long)position.epoch, (long long)position.batch, (long long)p->batches_per_epoch);
    sl__batch_begin(p, position, dst);

    /* Staging buffers for fields gathered in their source dtype, and one
     * scratch element for out-of-place movement: allocated per batch, which
     * is the cost the unfused path is meant to show. */
    void *current[SL_MAX_FIELDS] = {0};
    void *staging[SL_MAX_FIELDS] = {0};
    size_t scratch_bytes = 0;
    sl_status st = SL_OK;
    for (int f = 0; f < p->source_schema.nfields; f++) {
        size_t item = f == p->pack_field ? (size_t)p->seq_len * sizeof(int32_t)
                                         : sl_field_element_bytes(&p->source_schema.fields[f]);
        if (item > scratch_bytes)
            scratch_bytes = item;
        if (p->needs_staging[f]) {
            staging[f] = sl__aligned_alloc(SL_ALIGN, item * (size_t)dst->count);
            if (!staging[f]) {
                st = sl_fail(err, SL_ENOMEM, "cannot allocate staging for field '%s'", p->source_schema.fields[f].name);
                goto done;
            }
        }
        current[f] = staging[f] ? staging[f] : dst->fields[f].data;
        for (int64_t r = 0; r < dst->count && !st; r++)
            st = sl__gather_element(p, k, f, dst->element_ids[r], field_row(current[f], r, item), err);
        if (st)
            goto done;
    }
    for (int f = 0; f < p->output_schema.nfields; f++) {
        size_t item = sl_field_element_bytes(&p->output_schema.fields[f]);
        if (item > scratch_bytes)
            scratch_bytes = item;
    }
    void *scratch = sl__aligned_alloc(SL_ALIGN, scratch_bytes);
    if (!scratch) {
        st = sl_fail(err, SL_ENOMEM, "cannot allocate %zu bytes of scratch", scratch_bytes);
        goto done;
    }
    for (int i = 0; i < p->ncompiled; i++)
        apply_op(p, k, &p->compiled[i], dst, current, scratch);
    free(scratch);
    /* Every field must end in the batch itself; a field whose dtype no op
     * changed was gathered there directly and never needs this copy. */
    for (int f = 0; f < p->output_schema.nfields; f++)
        if (current[f] != dst->fields[f].data)
            memcpy(dst->fields[f].data, current[f], sl_tensor_nbytes(&dst->fields[f]));
done:
    for (int f = 0; f < SL_MAX_FIELDS; f++)
        free(staging[f]);
    return st;
}

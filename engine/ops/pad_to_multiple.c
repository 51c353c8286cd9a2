/* pad_to_multiple (batch phase): dynamic padding. The batch's rows of an i32
 * [capacity] sequence field are cut to the smallest multiple of `multiple`
 * that holds the batch's longest sequence (never past the capacity), each
 * row keeping its first `length` tokens and the pad id after them. The
 * field's per-batch shape narrows to that width and its rows are compacted
 * to it; the next batch starts at full capacity again (sl__batch_begin).
 * Lengths come from an i32 scalar field and are clamped to [0, capacity]. */
#include <string.h>

#include "core/internal.h"
#include "pipeline/op_desc.h"

static sl_status compile(sl_pipeline *p, int index, sl__compiled_op *c, sl_field_spec *field, sl_err *err)
{
    const sl_op *op = c->op;
    if (field->dtype != SL_I32 || field->shape.rank != 1)
        return sl_fail(err, SL_EINVAL, "op %d: pad_to_multiple needs an i32 [capacity] field, field '%s' is %s rank %d",
                       index, field->name, sl_dtype_name(field->dtype), field->shape.rank);
    if (op->u.pad_multiple.multiple < 1)
        return sl_fail(err, SL_EINVAL, "op %d: pad_to_multiple needs a positive multiple, got %d", index,
                       op->u.pad_multiple.multiple);
    return sl__length_field(p, index, "pad_to_multiple", op->u.pad_multiple.lengths, &c->other_field, err);
}

/* The batch's width: the smallest multiple that holds its longest row,
 * within the capacity. */
static int64_t width_of(const sl__compiled_op *c, const int32_t *lengths, int64_t count, int64_t capacity)
{
    int64_t longest = 0;
    for (int64_t r = 0; r < count; r++)
        if (lengths[r] > longest)
            longest = lengths[r];
    if (longest > capacity)
        longest = capacity;
    int64_t multiple = c->op->u.pad_multiple.multiple;
    int64_t width = (longest + multiple - 1) / multiple * multiple;
    return width > capacity ? capacity : width;
}

static sl_status batch(const sl__op_ctx *ctx, const sl__compiled_op *c, sl_batch *b, sl_err *err)
{
    (void)err;
    sl_tensor *tokens = &b->fields[c->field];
    const int32_t *lengths = b->fields[c->other_field].data;
    int64_t capacity = tokens->shape.dims[1];
    int64_t width = width_of(c, lengths, b->count, capacity);
    ctx->kernels->pad_rows(tokens->data, lengths, b->count, capacity, width, c->op->u.pad_multiple.pad_id);
    tokens->shape.dims[1] = width;
    return SL_OK;
}

/* On a device: the width is the host's (from the gathered lengths, which
 * no element op changes), in the op's per-batch block so that a graph
 * replays any batch; the rows are compacted out of place. */
static void device_params(const sl__op_ctx *ctx, const sl__compiled_op *c, const sl_batch *gathered, sl_batch *out,
                          void *params)
{
    (void)ctx;
    int64_t width = width_of(c, gathered->fields[c->other_field].data, gathered->count, c->values);
    memcpy(params, &width, sizeof width);
    out->fields[c->field].shape.dims[1] = width;
}

static int device_batch(const sl__device_ctx *ctx, const sl__compiled_op *c, sl__device_fields *fields)
{
    int e = ctx->device->pad_rows(fields->spare[c->field], fields->data[c->field], fields->data[c->other_field],
                                  ctx->rows, c->values, ctx->params, c->op->u.pad_multiple.pad_id, ctx->stream);
    if (!e)
        sl__device_swap(fields, c->field);
    return e;
}

static const sl__op_param params[] = {SL__PARAM_NAME("lengths", pad_multiple.lengths),
                                      SL__PARAM_I32("multiple", pad_multiple.multiple),
                                      SL__PARAM_I32("pad_id", pad_multiple.pad_id)};

const sl__op_desc sl__op_pad_to_multiple_desc = {
    .phase = SL__PHASE_BATCH,
    .compile = compile,
    .batch = batch,
    .device_batch = device_batch,
    .device_params = device_params,
    .device_params_bytes = sizeof(int64_t),
    SL__PARAMS(params),
};

sl_op sl_op_pad_to_multiple(const char *field, const char *lengths, int32_t multiple, int32_t pad_id)
{
    sl_op op = sl__op_on(SL_OP_PAD_TO_MULTIPLE, field, 0);
    sl__copy_string(op.u.pad_multiple.lengths, sizeof op.u.pad_multiple.lengths, lengths);
    op.u.pad_multiple.multiple = multiple;
    op.u.pad_multiple.pad_id = pad_id;
    return op;
}

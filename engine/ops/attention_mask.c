/* attention_mask (batch phase): a new u8 field as wide as a sequence field
 * is in this batch (after pad_to_multiple has narrowed it, when it runs
 * first): 1 at a row's first `length` positions, 0 at its pads. Lengths come
 * from an i32 scalar field and are clamped to [0, width]. */
#include <string.h>

#include "core/internal.h"
#include "pipeline/op_desc.h"

static sl_status compile(sl_pipeline *p, int index, sl__compiled_op *c, sl_field_spec *field, sl_err *err)
{
    const sl_op *op = c->op;
    if (field->shape.rank != 1)
        return sl_fail(err, SL_EINVAL,
                       "op %d: attention_mask needs a [capacity] sequence field, field '%s' has rank %d", index,
                       field->name, field->shape.rank);
    sl_shape shape = field->shape;
    sl_status st = sl__length_field(p, index, "attention_mask", op->u.mask.lengths, &c->other_field, err);
    if (st)
        return st;
    return sl__add_batch_field(p, index, "attention_mask", op->u.mask.out, SL_U8, &shape, &c->out_field, err);
}

static sl_status batch(const sl__op_ctx *ctx, const sl__compiled_op *c, sl_batch *b, sl_err *err)
{
    (void)err;
    sl_tensor *mask = &b->fields[c->out_field];
    int64_t width = b->fields[c->field].shape.dims[1];
    ctx->kernels->length_mask(mask->data, b->fields[c->other_field].data, b->count, width);
    mask->shape.dims[1] = width;
    return SL_OK;
}

/* On a device: the width the sequence field has in this batch (narrowed
 * on the host by an earlier pad_to_multiple's device_params), in the op's
 * per-batch block. */
static void device_params(const sl__op_ctx *ctx, const sl__compiled_op *c, const sl_batch *gathered, sl_batch *out,
                          void *params)
{
    (void)ctx;
    (void)gathered;
    int64_t width = out->fields[c->field].shape.dims[1];
    memcpy(params, &width, sizeof width);
    out->fields[c->out_field].shape.dims[1] = width;
}

static int device_batch(const sl__device_ctx *ctx, const sl__compiled_op *c, sl__device_fields *fields)
{
    return ctx->device->length_mask(
        fields->data[c->out_field], fields->data[c->other_field], ctx->rows,
        (int64_t)(sl_field_element_bytes(&ctx->pipeline->output_schema.fields[c->out_field])), ctx->params,
        ctx->stream);
}

static const sl__op_param params[] = {SL__PARAM_NAME("lengths", mask.lengths), SL__PARAM_NAME("out", mask.out)};

const sl__op_desc sl__op_attention_mask_desc = {
    .phase = SL__PHASE_BATCH,
    .compile = compile,
    .batch = batch,
    .device_batch = device_batch,
    .device_params = device_params,
    .device_params_bytes = sizeof(int64_t),
    SL__PARAMS(params),
};

sl_op sl_op_attention_mask(const char *field, const char *lengths, const char *out)
{
    sl_op op = sl__op_on(SL_OP_ATTENTION_MASK, field, 0);
    sl__copy_string(op.u.mask.lengths, sizeof op.u.mask.lengths, lengths);
    sl__copy_string(op.u.mask.out, sizeof op.u.mask.out, out);
    return op;
}

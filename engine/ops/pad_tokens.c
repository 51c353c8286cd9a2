/* pad_tokens: a fixed-capacity field of i32 token rows, each ended by end_id
 * (a tokenizer's output), cut or padded to `length`: the tokens before the
 * first end_id (all of the row when it has none), at most length - 1 of
 * them, then end_id, then pad_id. So every row keeps exactly one end token,
 * as open_clip's tokenizer truncates (the last kept position becomes the end
 * token). The copy and the padding are the pack kernel's. */
#include "pipeline/op_desc.h"

static sl_status compile(sl_pipeline *p, int index, sl__compiled_op *c, sl_field_spec *field, sl_err *err)
{
    (void)p;
    const sl_op *op = c->op;
    if (field->dtype != SL_I32 || field->shape.rank != 1)
        return sl_fail(err, SL_EINVAL,
                       "op %d: pad_tokens needs a field of i32 token rows [capacity], field '%s' is %s "
                       "rank %d",
                       index, field->name, sl_dtype_name(field->dtype), field->shape.rank);
    if (op->u.pad.length < 1)
        return sl_fail(err, SL_EINVAL, "op %d: pad_tokens length of field '%s' must be positive, got %d", index,
                       field->name, op->u.pad.length);
    field->shape.dims[0] = op->u.pad.length;
    c->out_bytes = (size_t)op->u.pad.length * sizeof(int32_t);
    return SL_OK;
}

static void rows(const sl__op_ctx *ctx, const sl__compiled_op *c, const int64_t *ids, int64_t count, const void *in,
                 void *out, void *scratch)
{
    (void)ids;
    (void)scratch;
    const int64_t capacity = c->values, length = c->op->u.pad.length;
    const int32_t end = c->op->u.pad.end_id;
    for (int64_t r = 0; r < count; r++) {
        const int32_t *src = (const int32_t *)in + r * capacity;
        int32_t *dst = (int32_t *)out + r * length;
        int64_t content = 0;
        while (content < capacity && src[content] != end)
            content++;
        int64_t keep = content < length - 1 ? content : length - 1;
        ctx->kernels->pack(dst, src, keep, length, c->op->u.pad.pad_id);
        dst[keep] = end;
    }
}

static int device_rows(const sl__device_ctx *ctx, const sl__compiled_op *c, void *in, void *out)
{
    return ctx->device->pad_tokens(in, out, ctx->rows, c->values, c->op->u.pad.length, c->op->u.pad.end_id,
                                   c->op->u.pad.pad_id, ctx->stream);
}

static const sl__op_param params[] = {SL__PARAM_I32("length", pad.length), SL__PARAM_I32("end_id", pad.end_id),
                                      SL__PARAM_I32("pad_id", pad.pad_id)};

const sl__op_desc sl__op_pad_tokens_desc = {
    .phase = SL__PHASE_ELEMENT,
    .in_place = false,
    .compile = compile,
    .rows = rows,
    .device_rows = device_rows,
    SL__PARAMS(params),
};

sl_op sl_op_pad_tokens(const char *field, int32_t length, int32_t end_id, int32_t pad_id)
{
    sl_op op = sl__op_on(SL_OP_PAD_TOKENS, field, 0);
    op.u.pad.length = length;
    op.u.pad.end_id = end_id;
    op.u.pad.pad_id = pad_id;
    return op;
}

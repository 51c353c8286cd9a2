/* bag_offsets (batch phase): the CSR offsets of an embedding bag per column
 * of an i64 [columns] id field, as a new i64 [columns] field. Row r, column
 * j holds the end of bag (r, j) in column j's list of present ids, which is
 * the count of non-negative ids in column j over rows 0..r. Column j's
 * offsets for torch.nn.EmbeddingBag (include_last_offset=True) are 0
 * followed by that column of the field; its last row is the column's total
 * id count. The ids a column's bags index are its non-negative entries in
 * row order; a missing id (negative) is an empty bag. The offsets depend on
 * which rows share the batch, which is why this is a batch op. */
#include "core/internal.h"
#include "pipeline/op_desc.h"

static sl_status compile(sl_pipeline *p, int index, sl__compiled_op *c, sl_field_spec *field, sl_err *err)
{
    if (field->dtype != SL_I64 || field->shape.rank != 1)
        return sl_fail(err, SL_EINVAL, "op %d: bag_offsets needs an i64 [columns] id field, field '%s' is %s rank %d",
                       index, field->name, sl_dtype_name(field->dtype), field->shape.rank);
    sl_shape shape = field->shape;
    return sl__add_batch_field(p, index, "bag_offsets", c->op->u.bag.out, SL_I64, &shape, &c->out_field, err);
}

static sl_status batch(const sl__op_ctx *ctx, const sl__compiled_op *c, sl_batch *b, sl_err *err)
{
    (void)err;
    const sl_tensor *ids = &b->fields[c->field];
    ctx->kernels->bag_offsets(ids->data, b->fields[c->out_field].data, b->count, (int)ids->shape.dims[1]);
    return SL_OK;
}

static int device_batch(const sl__device_ctx *ctx, const sl__compiled_op *c, sl__device_fields *fields)
{
    int columns = (int)ctx->pipeline->output_schema.fields[c->field].shape.dims[0];
    return ctx->device->bag_offsets(fields->data[c->field], fields->data[c->out_field], ctx->rows, columns,
                                    ctx->stream);
}

static const sl__op_param params[] = {SL__PARAM_NAME("out", bag.out)};

const sl__op_desc sl__op_bag_offsets_desc = {
    .phase = SL__PHASE_BATCH,
    .compile = compile,
    .batch = batch,
    .device_batch = device_batch,
    SL__PARAMS(params),
};

sl_op sl_op_bag_offsets(const char *field, const char *out)
{
    sl_op op = sl__op_on(SL_OP_BAG_OFFSETS, field, 0);
    sl__copy_string(op.u.bag.out, sizeof op.u.bag.out, out);
    return op;
}

/* one_hot: an i32 class label to an f32 [classes] vector with a 1 at the
 * label, the form of a label that MixUp and CutMix can mix. A label outside
 * [0, classes) becomes all zeros, which a label-sum check then catches. */
#include "pipeline/op_desc.h"

/* Far above any real label space, and it keeps a row's size far from any
 * overflow. */
#define MAX_CLASSES (1 << 20)

static sl_status compile(sl_pipeline *p, int index, sl__compiled_op *c, sl_field_spec *field, sl_err *err)
{
    (void)p;
    int32_t classes = c->op->u.one_hot.classes;
    if (field->dtype != SL_I32 || field->shape.rank != 0)
        return sl_fail(err, SL_EINVAL, "op %d: one_hot takes an i32 scalar label, field '%s' is %s rank %d", index,
                       field->name, sl_dtype_name(field->dtype), field->shape.rank);
    if (classes < 1 || classes > MAX_CLASSES)
        return sl_fail(err, SL_EINVAL, "op %d: one_hot classes must be in [1, %d], got %d", index, MAX_CLASSES,
                       classes);
    field->dtype = SL_F32;
    field->shape.rank = 1;
    field->shape.dims[0] = classes;
    c->out_dtype = SL_F32;
    c->out_bytes = (size_t)classes * sizeof(float);
    return SL_OK;
}

static void rows(const sl__op_ctx *ctx, const sl__compiled_op *c, const int64_t *ids, int64_t count, const void *in,
                 void *out, void *scratch)
{
    (void)ids;
    (void)scratch;
    ctx->kernels->one_hot(in, out, count, c->op->u.one_hot.classes);
}

static int device_rows(const sl__device_ctx *ctx, const sl__compiled_op *c, void *in, void *out)
{
    return ctx->device->one_hot(in, out, ctx->rows, c->op->u.one_hot.classes, ctx->stream);
}

static const sl__op_param params[] = {SL__PARAM_I32("classes", one_hot.classes)};

const sl__op_desc sl__op_one_hot_desc = {
    .phase = SL__PHASE_ELEMENT,
    .in_place = false,
    .compile = compile,
    .rows = rows,
    .device_rows = device_rows,
    SL__PARAMS(params),
};

sl_op sl_op_one_hot(const char *field, int32_t classes)
{
    sl_op op = sl__op_on(SL_OP_ONE_HOT, field, 0);
    op.u.one_hot.classes = classes;
    return op;
}

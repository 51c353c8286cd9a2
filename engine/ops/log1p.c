/* log1p: log(1 + x) of every value of an f32 field (heavy-tailed counts
 * brought to a trainable range, as DLRM does with Criteo's dense features).
 * Computed without libm, identically in every kernel table; its bound
 * against the exact value is in docs/determinism.md. */
#include "pipeline/op_desc.h"

static sl_status compile(sl_pipeline *p, int index, sl__compiled_op *c, sl_field_spec *field, sl_err *err)
{
    (void)p;
    (void)c;
    if (field->dtype != SL_F32)
        return sl_fail(err, SL_EINVAL, "op %d: log1p takes f32, field '%s' is %s", index, field->name,
                       sl_dtype_name(field->dtype));
    return SL_OK;
}

static void rows(const sl__op_ctx *ctx, const sl__compiled_op *c, const int64_t *ids, int64_t count, const void *in,
                 void *out, void *scratch)
{
    (void)ids;
    (void)scratch;
    ctx->kernels->log1p(in, out, c->values * count);
}

static int device_rows(const sl__device_ctx *ctx, const sl__compiled_op *c, void *in, void *out)
{
    return ctx->device->log1p(in, out, ctx->rows * c->values, ctx->stream);
}

const sl__op_desc sl__op_log1p_desc = {
    .phase = SL__PHASE_ELEMENT,
    .in_place = true,
    .compile = compile,
    .rows = rows,
    .device_rows = device_rows,
};

sl_op sl_op_log1p(const char *field)
{
    return sl__op_on(SL_OP_LOG1P, field, 0);
}

/* The scalar arithmetic ops on f32 fields: scale, add, multiply, clip. Each
 * is one step of the element-wise chain, so `rows` and the fused tile chain
 * run the very same step (sl__ew_apply in kernels/ref/ref.h). */
#include <string.h>

#include "pipeline/op_desc.h"

static sl_status compile(sl_pipeline *p, int index, sl__compiled_op *c, sl_field_spec *field, sl_err *err)
{
    (void)p;
    const char *name = sl_op_kind_name(c->op->kind);
    if (field->dtype != SL_F32)
        return sl_fail(err, SL_EINVAL, "op %d: %s takes f32, field '%s' is %s (normalize it first)", index, name,
                       field->name, sl_dtype_name(field->dtype));
    if (c->op->kind == SL_OP_CLIP && !(c->op->u.clip.lo <= c->op->u.clip.hi))
        return sl_fail(err, SL_EINVAL, "op %d: clip needs lo <= hi", index);
    return SL_OK;
}

static bool ew_step(const sl__op_ctx *ctx, const sl__compiled_op *c, int64_t element, sl_ew_step *step)
{
    (void)ctx;
    (void)element;
    if (c->op->kind == SL_OP_CLIP)
        *step = (sl_ew_step){.kind = SL_EW_CLIP, .a = c->op->u.clip.lo, .b = c->op->u.clip.hi};
    else if (c->op->kind == SL_OP_ADD)
        *step = (sl_ew_step){.kind = SL_EW_ADD, .a = c->op->u.scalar.value};
    else /* scale and multiply are both x * value */
        *step = (sl_ew_step){.kind = SL_EW_MULTIPLY, .a = c->op->u.scalar.value};
    return true;
}

static void rows(const sl__op_ctx *ctx, const sl__compiled_op *c, const int64_t *ids, int64_t count, const void *in,
                 void *out, void *scratch)
{
    (void)ids;
    (void)scratch;
    sl_ew_step step;
    ew_step(ctx, c, 0, &step);
    size_t bytes = c->in_bytes * (size_t)count;
    if (in != out)
        memcpy(out, in, bytes);
    ctx->kernels->ew_chain(out, (int64_t)(bytes / sizeof(float)), &step, 1);
}

static const sl__op_param scalar_params[] = {SL__PARAM_F32("value", scalar.value)};
static const sl__op_param clip_params[] = {SL__PARAM_F32("lo", clip.lo), SL__PARAM_F32("hi", clip.hi)};

#define ARITH_DESC(ident, param_list)                                                                                  \
    const sl__op_desc ident = {                                                                                        \
        .phase = SL__PHASE_ELEMENT,                                                                                    \
        .in_place = true,                                                                                              \
        .compile = compile,                                                                                            \
        .rows = rows,                                                                                                  \
        .ew_step = ew_step,                                                                                            \
        SL__PARAMS(param_list),                                                                                        \
    }

ARITH_DESC(sl__op_scale_desc, scalar_params);
ARITH_DESC(sl__op_add_desc, scalar_params);
ARITH_DESC(sl__op_multiply_desc, scalar_params);
ARITH_DESC(sl__op_clip_desc, clip_params);

static sl_op scalar_op(sl_op_kind kind, const char *field, float value)
{
    sl_op op = sl__op_on(kind, field, 0);
    op.u.scalar.value = value;
    return op;
}

sl_op sl_op_scale(const char *field, float value)
{
    return scalar_op(SL_OP_SCALE, field, value);
}

sl_op sl_op_add(const char *field, float value)
{
    return scalar_op(SL_OP_ADD, field, value);
}

sl_op sl_op_multiply(const char *field, float value)
{
    return scalar_op(SL_OP_MULTIPLY, field, value);
}

sl_op sl_op_clip(const char *field, float lo, float hi)
{
    sl_op op = sl__op_on(SL_OP_CLIP, field, 0);
    op.u.clip.lo = lo;
    op.u.clip.hi = hi;
    return op;
}

/* The scalar arithmetic ops on f32 fields: scale, add, multiply, clip. Each
 * is one step of the element-wise chain, so `rows` and the fused tile chain
 * run the very same step (sl__ew_apply in kernels/ref/ref.h). */
#include <string.h>

#include "../op_desc.h"

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
        *step = (sl_ew_step){.kind = SL_OP_CLIP, .a = c->op->u.clip.lo, .b = c->op->u.clip.hi};
    else
        *step = (sl_ew_step){.kind = c->op->kind, .a = c->op->u.scalar.value};
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

static void fingerprint_scalar(const sl_op *op, XXH3_state_t *state)
{
    sl__fingerprint_f32(state, op->u.scalar.value);
}

static void fingerprint_clip(const sl_op *op, XXH3_state_t *state)
{
    sl__fingerprint_f32(state, op->u.clip.lo);
    sl__fingerprint_f32(state, op->u.clip.hi);
}

#define ARITH_DESC(ident, op_name, fp)                                                                                \
    const sl__op_desc ident = {                                                                                       \
        .name = op_name,                                                                                              \
        .phase = SL__PHASE_ELEMENT,                                                                                   \
        .in_place = true,                                                                                             \
        .compile = compile,                                                                                           \
        .fingerprint = fp,                                                                                            \
        .rows = rows,                                                                                                 \
        .ew_step = ew_step,                                                                                           \
    }

ARITH_DESC(sl__op_scale_desc, "scale", fingerprint_scalar);
ARITH_DESC(sl__op_add_desc, "add", fingerprint_scalar);
ARITH_DESC(sl__op_multiply_desc, "multiply", fingerprint_scalar);
ARITH_DESC(sl__op_clip_desc, "clip", fingerprint_clip);

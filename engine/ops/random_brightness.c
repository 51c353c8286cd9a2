/* random_brightness: x + d with one offset d uniform in [-delta, delta] per
 * element. The draw is made once per element and becomes an ADD step of the
 * element-wise chain, so the fused tile chain, `iter` and `reference` apply
 * the very same float. */
#include <math.h>

#include "pipeline/op_desc.h"

static sl_status compile(sl_pipeline *p, int index, sl__compiled_op *c, sl_field_spec *field, sl_err *err)
{
    (void)p;
    sl_status st = sl__require_f32(field, "random_brightness", index, err);
    if (st)
        return st;
    float delta = c->op->u.brightness.delta;
    if (!(delta >= 0.0f && isfinite(delta)))
        return sl_fail(err, SL_EINVAL, "op %d: random_brightness on field '%s' needs a finite delta >= 0, got %g",
                       index, field->name, (double)delta);
    return SL_OK;
}

/* Word 0 of draw 0: its top 24 bits k give v = (k - 2^23) / 2^23, exact in
 * [-1, 1), and d = delta * v rounded once, so |d| <= delta. */
static int32_t top24(const sl__op_ctx *ctx, const sl__compiled_op *c, int64_t element)
{
    return (int32_t)(sl__op_draw(ctx, c, element, 0).v[0] >> 8);
}

static bool ew_step(const sl__op_ctx *ctx, const sl__compiled_op *c, int64_t element, sl_ew_step *step)
{
    float v = (float)(top24(ctx, c, element) - (1 << 23)) * 0x1p-23f;
    *step = (sl_ew_step){.kind = SL_EW_ADD, .a = c->op->u.brightness.delta * v};
    return true;
}

/* The decision as the integer it comes from, so a peer computes the same
 * float: d = float32(delta) * float32((u24 - 2^23) / 2^23). */
static void decisions(const sl__op_ctx *ctx, const sl__compiled_op *c, int64_t element, int32_t *out)
{
    out[0] = top24(ctx, c, element);
}

static const sl__op_param params[] = {SL__PARAM_F32("delta", brightness.delta)};

const sl__op_desc sl__op_random_brightness_desc = {
    .phase = SL__PHASE_ELEMENT,
    .random = true,
    .in_place = true,
    .compile = compile,
    .rows = sl__rows_by_ew_step,
    .ew_step = ew_step,
    .decision_columns = "u24",
    .decisions = decisions,
    SL__PARAMS(params),
};

sl_op sl_op_random_brightness(const char *field, uint32_t op_id, float delta)
{
    sl_op op = sl__op_on(SL_OP_RANDOM_BRIGHTNESS, field, op_id);
    op.u.brightness.delta = delta;
    return op;
}

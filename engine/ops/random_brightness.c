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
static void step_rule(const sl__op_ctx *ctx, const sl__compiled_op *c, sl_step_rule *rule)
{
    *rule = (sl_step_rule){.base = {.kind = SL_EW_ADD,
                                    .a = c->op->u.brightness.delta,
                                    .key = sl_philox_key_for(ctx->pipeline->spec.seed, c->op->op_id)},
                           .kind = SL_STEP_CENTRED};
}

/* The decision as the integer it comes from (the top 24 bits of word 0,
 * which is word 0 below 2^24), so a peer computes the same float:
 * d = float32(delta) * float32((u24 - 2^23) / 2^23). */
static void decide(const sl__op_ctx *ctx, const sl__compiled_op *c, sl_decide_rule *rule)
{
    *rule = sl__op_rule(ctx, c, SL_DECIDE_BELOW, 1);
    rule->bound[0] = 1u << 24;
}

static const sl__op_param params[] = {SL__PARAM_F32("delta", brightness.delta)};

const sl__op_desc sl__op_random_brightness_desc = {
    .phase = SL__PHASE_ELEMENT,
    .random = true,
    .in_place = true,
    .compile = compile,
    .rows = sl__rows_by_ew_step,
    .ew_step = sl__ew_step_by_rule,
    .step_rule = step_rule,
    .decision_columns = "u24",
    .decisions = sl__op_decide,
    .decide = decide,
    SL__PARAMS(params),
};

sl_op sl_op_random_brightness(const char *field, uint32_t op_id, float delta)
{
    sl_op op = sl__op_on(SL_OP_RANDOM_BRIGHTNESS, field, op_id);
    op.u.brightness.delta = delta;
    return op;
}

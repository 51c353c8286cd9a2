/* random_scale: x * f with one factor f uniform in [lo, hi] per element. The
 * draw is made once per element and becomes a MULTIPLY step of the
 * element-wise chain, so the fused tile chain, `iter` and `reference` apply
 * the very same float. */
#include <math.h>

#include "pipeline/op_desc.h"

static sl_status compile(sl_pipeline *p, int index, sl__compiled_op *c, sl_field_spec *field, sl_err *err)
{
    (void)p;
    sl_status st = sl__require_f32(field, "random_scale", index, err);
    if (st)
        return st;
    float lo = c->op->u.range.lo, hi = c->op->u.range.hi;
    if (!(isfinite(lo) && isfinite(hi) && lo <= hi && isfinite(hi - lo)))
        return sl_fail(err, SL_EINVAL, "op %d: random_scale on field '%s' needs finite lo <= hi, got [%g, %g]", index,
                       field->name, (double)lo, (double)hi);
    return SL_OK;
}

/* Word 0 of draw 0 as u = k / 2^24 in [0, 1) (its top 24 bits, exact), and
 * f = lo + (hi - lo) u with each operation rounded in float. f >= lo
 * because rounding is monotone; rounding (hi - lo) up could carry f just
 * past hi, so it is clamped there. */
static void step_rule(const sl__op_ctx *ctx, const sl__compiled_op *c, sl_step_rule *rule)
{
    *rule = (sl_step_rule){
        .base = {.kind = SL_EW_MULTIPLY, .key = sl_philox_key_for(ctx->pipeline->spec.seed, c->op->op_id)},
        .kind = SL_STEP_UNIFORM,
        .lo = c->op->u.range.lo,
        .hi = c->op->u.range.hi};
}

/* The decision as the integer sl_u32_to_unit_float scales (word 0 below
 * 2^24: its top 24 bits): a peer computes
 * f = min(hi, lo + (hi - lo) * float32(u24 / 2^24)), each step in float32. */
static void decide(const sl__op_ctx *ctx, const sl__compiled_op *c, sl_decide_rule *rule)
{
    *rule = sl__op_rule(ctx, c, SL_DECIDE_BELOW, 1);
    rule->bound[0] = 1u << 24;
}

static const sl__op_param params[] = {SL__PARAM_F32("lo", range.lo), SL__PARAM_F32("hi", range.hi)};

const sl__op_desc sl__op_random_scale_desc = {
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

sl_op sl_op_random_scale(const char *field, uint32_t op_id, float lo, float hi)
{
    sl_op op = sl__op_on(SL_OP_RANDOM_SCALE, field, op_id);
    op.u.range.lo = lo;
    op.u.range.hi = hi;
    return op;
}

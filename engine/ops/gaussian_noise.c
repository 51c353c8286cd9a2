/* gaussian_noise: x + sigma z per value, z a standard normal variate drawn
 * from Philox per (element, value) and made by inversion without libm
 * (kernels/include/kernels/normal.h). The op is one step of the element-wise chain that
 * carries its key and the element's counter, so the fused tile chain draws
 * each value's number where it is used, and `iter` and `reference` run the
 * same step over the element. */
#include <math.h>

#include "pipeline/op_desc.h"

static sl_status compile(sl_pipeline *p, int index, sl__compiled_op *c, sl_field_spec *field, sl_err *err)
{
    (void)p;
    sl_status st = sl__require_f32(field, "gaussian_noise", index, err);
    if (st)
        return st;
    float sigma = c->op->u.noise.sigma;
    if (!(sigma >= 0.0f && isfinite(sigma)))
        return sl_fail(err, SL_EINVAL, "op %d: gaussian_noise on field '%s' needs a finite sigma >= 0, got %g", index,
                       field->name, (double)sigma);
    /* Value i draws block 16 (i / 64) + i % 16, so an element's values must
     * number at most 2^34 for the draw index to stay within 32 bits. */
    if (c->values > ((int64_t)1 << 34))
        return sl_fail(err, SL_EINVAL, "op %d: gaussian_noise on field '%s': %lld values per element exceed 2^34",
                       index, field->name, (long long)c->values);
    return SL_OK;
}

/* The step carries the op's key and the element's counter (element, epoch,
 * draw 0). */
static void step_rule(const sl__op_ctx *ctx, const sl__compiled_op *c, sl_step_rule *rule)
{
    *rule = (sl_step_rule){.base = {.kind = SL_EW_GAUSSIAN_NOISE,
                                    .a = c->op->u.noise.sigma,
                                    .key = sl_philox_key_for(ctx->pipeline->spec.seed, c->op->op_id)},
                           .kind = SL_STEP_NOISE};
}

static const sl__op_param params[] = {SL__PARAM_F32("sigma", noise.sigma)};

const sl__op_desc sl__op_gaussian_noise_desc = {
    .phase = SL__PHASE_ELEMENT,
    .random = true,
    .in_place = true,
    .compile = compile,
    .rows = sl__rows_by_ew_step,
    .ew_step = sl__ew_step_by_rule,
    .step_rule = step_rule,
    .no_decisions_reason = "its draws are values, not decisions: one normal number per value of the element; a peer "
                           "draws its own noise and is compared statistically",
    SL__PARAMS(params),
};

sl_op sl_op_gaussian_noise(const char *field, uint32_t op_id, float sigma)
{
    sl_op op = sl__op_on(SL_OP_GAUSSIAN_NOISE, field, op_id);
    op.u.noise.sigma = sigma;
    return op;
}

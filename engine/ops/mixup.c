/* mixup (Zhang et al., 2018): each row becomes lam x + (1 - lam) x[partner],
 * its one-hot label likewise, with one lam ~ Beta(alpha, alpha) and one
 * partner permutation per batch (mix.h). */
#include "mix.h"

static sl_status batch(const sl__op_ctx *ctx, const sl__compiled_op *c, sl_batch *b, sl_err *err)
{
    sl__mix_work work;
    sl_status st = sl__mix_work_init(&work, b, c, err);
    if (st)
        return st;
    float lambda = sl__mix_lambda(ctx, c, b);
    sl__mix_partners(ctx, c, b, work.partner);
    /* lambda is on the 2^-24 grid, so 1 - lambda is exact. */
    sl__mixer blend = {.w_own = lambda, .w_partner = 1.0f - lambda};
    sl__mix_field(ctx->kernels, &work, b, c->field, &blend);
    sl__mix_field(ctx->kernels, &work, b, c->other_field, &blend);
    sl__mix_work_release(&work);
    return SL_OK;
}

/* What batch() draws, for a peer loader: the blend's weights and partners. */
static void batch_decisions(const sl__op_ctx *ctx, const sl__compiled_op *c, const sl_batch *b, float *values,
                            int64_t *partner)
{
    float lambda = sl__mix_lambda(ctx, c, b);
    values[0] = lambda;
    values[1] = lambda;
    values[2] = 1.0f - lambda;
    sl__mix_partners(ctx, c, b, partner);
}

const sl__op_desc sl__op_mixup_desc = {
    .phase = SL__PHASE_BATCH,
    .random = true,
    .compile = sl__mix_compile,
    SL__PARAMS(sl__mix_params),
    .batch = batch,
    .batch_decision_columns = "lambda,w_own,w_partner",
    .batch_partners = true,
    .batch_decisions = batch_decisions,
};

sl_op sl_op_mixup(const char *image_field, const char *label_field, uint32_t op_id, float alpha)
{
    return sl__mix_op(SL_OP_MIXUP, image_field, label_field, op_id, alpha);
}

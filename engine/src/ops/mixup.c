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

const sl__op_desc sl__op_mixup_desc = {
    .name = "mixup",
    .phase = SL__PHASE_BATCH,
    .compile = sl__mix_compile,
    .fingerprint = sl__mix_fingerprint,
    .batch = batch,
};

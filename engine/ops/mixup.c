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

/* On a device: the batch's decisions (lambda, the weights, the partners)
 * drawn on the host, and every row blended with its partner out of place,
 * which reads the same unmixed partner rows the cycle walk of batch()
 * reads. */
static int device_batch(const sl__device_ctx *ctx, const sl__compiled_op *c, sl__device_fields *fields)
{
    const float *weights = (const float *)ctx->params + 1;
    const int64_t *partner = (const int64_t *)((const char *)ctx->params + sl__device_partners_offset(c->desc));
    const int field[2] = {c->field, c->other_field};
    for (int k = 0; k < 2; k++) {
        size_t row = sl_field_element_bytes(&ctx->pipeline->output_schema.fields[field[k]]);
        int e = ctx->device->mix_rows(fields->spare[field[k]], fields->data[field[k]], ctx->rows,
                                      (int64_t)(row / sizeof(float)), partner, weights, ctx->stream);
        if (e)
            return e;
        sl__device_swap(fields, field[k]);
    }
    return 0;
}

const sl__op_desc sl__op_mixup_desc = {
    .phase = SL__PHASE_BATCH,
    .random = true,
    .compile = sl__mix_compile,
    .batch = batch,
    .batch_decision_columns = "lambda,w_own,w_partner",
    .batch_partners = true,
    .batch_decisions = batch_decisions,
    .device_batch = device_batch,
    SL__PARAMS(sl__mix_params),
};

sl_op sl_op_mixup(const char *image_field, const char *label_field, uint32_t op_id, float alpha)
{
    return sl__mix_op(SL_OP_MIXUP, image_field, label_field, op_id, alpha);
}

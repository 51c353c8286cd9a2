/* What MixUp and CutMix share: their compile checks, the per-batch lambda
 * and partner permutation, and mixing a field's rows with their partners in
 * place. Every decision is keyed by (seed, op id, epoch, batch index) through
 * sl__op_batch_draw, so a batch mixes the same way in every executor, with
 * any number of workers and after any resume. */
#ifndef SLUICE_OPS_MIX_H
#define SLUICE_OPS_MIX_H

#include "pipeline/op_desc.h"

/* Draw indices of a mixing op's Philox blocks for one batch. */
enum {
    SL__MIX_DRAW_LAMBDA = 0, /* 0..31: Johnk attempts, two per block */
    SL__MIX_DRAW_LAMBDA_BLOCKS = 32,
    SL__MIX_DRAW_BOX = 32,      /* CutMix's box centre */
    SL__MIX_DRAW_PARTNERS = 64, /* onward: the Fisher-Yates draws, four per block */
};

/* The m of alpha = 2 / m (an integer in [1, 64]), or 0 when alpha is not of
 * that form and the sampler would need libm's pow. */
int sl__mix_half_power(float alpha);

/* Validates a mixing op: an f32 image field and an f32 [classes] label field
 * (c->other_field), and a supported alpha. */
sl_status sl__mix_compile(sl_pipeline *p, int index, sl__compiled_op *c, sl_field_spec *field, sl_err *err);
/* mixup's and cutmix's parameters: the label field mixed with the image and
 * the Beta distribution's alpha. */
extern const sl__op_param sl__mix_params[2];
/* A mixup or cutmix op: the builders' shared part. */
sl_op sl__mix_op(sl_op_kind kind, const char *image_field, const char *label_field, uint32_t op_id, float alpha);

/* The batch's lambda ~ Beta(alpha, alpha), rounded to a multiple of 2^-24 so
 * that lambda and 1 - lambda are both exact floats and sum to exactly 1. */
float sl__mix_lambda(const sl__op_ctx *ctx, const sl__compiled_op *c, const sl_batch *batch);
/* partner[i] for the batch's rows: a uniform permutation (Fisher-Yates). */
void sl__mix_partners(const sl__op_ctx *ctx, const sl__compiled_op *c, const sl_batch *batch, int64_t *partner);

/* How a row is combined with its partner: blended with weights, or with a
 * box of the partner's pixels pasted in. */
typedef struct sl__mixer {
    bool box;
    float w_own, w_partner; /* blend */
    int h, w;               /* box: image geometry and the box, [y0, y1) x [x0, x1) */
    size_t pixel_bytes;
    int y0, y1, x0, x1;
} sl__mixer;

/* Per-batch working memory of a mixing op. */
typedef struct sl__mix_work {
    int64_t *partner;
    unsigned char *visited;
    void *saved; /* one row of the widest field */
} sl__mix_work;

sl_status sl__mix_work_init(sl__mix_work *work, const sl_batch *batch, const sl__compiled_op *c, sl_err *err);
void sl__mix_work_release(sl__mix_work *work);

/* Replaces every row i of `field` with mixer(row i, row partner[i]), in
 * place. Rows are visited along the permutation's cycles, so each partner is
 * still unmixed when it is read, except the cycle's first row, which is
 * saved before it is overwritten. */
void sl__mix_field(const sl_kernel_table *k, sl__mix_work *work, sl_batch *batch, int field, const sl__mixer *mixer);

#endif

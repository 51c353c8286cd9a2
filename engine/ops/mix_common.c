/* The parts of MixUp and CutMix they share (mix.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "mix.h"

int sl__mix_half_power(float alpha)
{
    if (!(alpha > 0.0f))
        return 0;
    double q = 2.0 / (double)alpha;
    if (!(q >= 0.5 && q <= 64.5))
        return 0;
    int m = (int)(q + 0.5);
    /* 2 / 0.4f is 4.99999993: accept float rounding of the parameter. */
    return m >= 1 && fabs(q - m) <= 1e-6 * m ? m : 0;
}

sl_status sl__mix_compile(sl_pipeline *p, int index, sl__compiled_op *c, sl_field_spec *field, sl_err *err)
{
    const sl_op *op = c->op;
    const char *name = sl__op_name(c);
    if (field->dtype != SL_F32)
        return sl_fail(err, SL_EINVAL, "op %d: %s mixes f32 images, field '%s' is %s (normalize it first)", index, name,
                       field->name, sl_dtype_name(field->dtype));
    int label = sl_schema_find(&p->output_schema, op->u.mix.label);
    if (label < 0)
        return sl_fail(err, SL_EINVAL, "op %d: %s names label field '%s', which the pipeline does not have", index,
                       name, op->u.mix.label);
    const sl_field_spec *lf = &p->output_schema.fields[label];
    if (label == c->field || lf->dtype != SL_F32 || lf->shape.rank != 1)
        return sl_fail(err, SL_EINVAL,
                       "op %d: %s label field '%s' must be f32 [classes] and not the image (one_hot it first), "
                       "it is %s rank %d",
                       index, name, lf->name, sl_dtype_name(lf->dtype), lf->shape.rank);
    if (!sl__mix_half_power(op->u.mix.alpha))
        return sl_fail(err, SL_EINVAL,
                       "op %d: %s alpha %g is not 2 / m for an integer m in [1, 64] (0.4, 0.5, 1, 2, ...), the "
                       "values the libm-free Beta sampler supports",
                       index, name, (double)op->u.mix.alpha);
    c->other_field = label;
    return SL_OK;
}

const sl__op_param sl__mix_params[2] = {SL__PARAM_NAME("label", mix.label), SL__PARAM_F32("alpha", mix.alpha)};

/* u^(m/2) for u in (0, 1]: a correctly rounded sqrt when m is odd, then
 * m/2 multiplications in a fixed order. No pow, so no libm difference. */
static double half_power(double u, int m)
{
    double r = (m & 1) ? sqrt(u) : 1.0;
    for (int k = 0; k < m / 2; k++)
        r *= u;
    return r;
}

/* A uniform in (0, 1] from 32 bits, exact in double. */
static double open_unit(uint32_t word)
{
    return ((double)word + 1.0) * (1.0 / 4294967296.0);
}

/* Johnk's method (1964): with x = U^(1/alpha) and y = V^(1/alpha), given
 * x + y <= 1, x / (x + y) ~ Beta(alpha, alpha). 1/alpha = m/2 keeps the
 * powers to sqrt and multiplications, which are correctly rounded
 * everywhere. An attempt is accepted with probability
 * Gamma(1 + alpha)^2 / Gamma(1 + 2 alpha): 0.845 for alpha = 0.4, and at
 * least 1/6 (alpha = 2) for every supported alpha. 64 attempts all fail
 * with probability 0.155^64 ~ 1e-52 for alpha = 0.4 (and below 1e-5 for
 * alpha = 2); if they do, lambda is 1/2. */
float sl__mix_lambda(const sl__op_ctx *ctx, const sl__compiled_op *c, const sl_batch *batch)
{
    int m = sl__mix_half_power(c->op->u.mix.alpha);
    double lambda = 0.5;
    for (uint32_t block = 0; block < SL__MIX_DRAW_LAMBDA_BLOCKS; block++) {
        sl_philox_ctr r = sl__op_batch_draw(ctx, c, batch, SL__MIX_DRAW_LAMBDA + block);
        bool accepted = false;
        for (int t = 0; t < 2 && !accepted; t++) {
            double x = half_power(open_unit(r.v[2 * t]), m);
            double y = half_power(open_unit(r.v[2 * t + 1]), m);
            double s = x + y;
            if (s <= 1.0 && s > 0.0) {
                lambda = x / s;
                accepted = true;
            }
        }
        if (accepted)
            break;
    }
    /* Round to the 2^-24 grid: k / 2^24 with k in [0, 2^24]. */
    uint32_t k = (uint32_t)(lambda * 16777216.0 + 0.5);
    return (float)k * (1.0f / 16777216.0f);
}

void sl__mix_partners(const sl__op_ctx *ctx, const sl__compiled_op *c, const sl_batch *batch, int64_t *partner)
{
    int64_t n = batch->count;
    for (int64_t i = 0; i < n; i++)
        partner[i] = i;
    sl_philox_ctr r = {{0, 0, 0, 0}};
    for (int64_t i = n - 1, t = 0; i > 0; i--, t++) {
        if (t % 4 == 0)
            r = sl__op_batch_draw(ctx, c, batch, SL__MIX_DRAW_PARTNERS + (uint32_t)(t / 4));
        int64_t j = (int64_t)sl_u32_below(r.v[t % 4], (uint32_t)(i + 1));
        int64_t swap = partner[i];
        partner[i] = partner[j];
        partner[j] = swap;
    }
}

sl_status sl__mix_work_init(sl__mix_work *work, const sl_batch *batch, const sl__compiled_op *c, sl_err *err)
{
    size_t row = sl_field_element_bytes(&batch->schema.fields[c->field]);
    size_t label_row = sl_field_element_bytes(&batch->schema.fields[c->other_field]);
    if (label_row > row)
        row = label_row;
    size_t n = (size_t)batch->count;
    work->partner = malloc(n * sizeof *work->partner);
    work->visited = malloc(n);
    work->saved = malloc(row);
    if (!work->partner || !work->visited || !work->saved) {
        sl__mix_work_release(work);
        return sl_fail(err, SL_ENOMEM, "cannot allocate %s's working memory for %zu rows", sl__op_name(c), n);
    }
    return SL_OK;
}

void sl__mix_work_release(sl__mix_work *work)
{
    free(work->partner);
    free(work->visited);
    free(work->saved);
    memset(work, 0, sizeof *work);
}

static void mix_row(const sl_kernel_table *k, const sl__mixer *mixer, void *own, const void *partner, size_t row_bytes)
{
    if (mixer->box)
        k->paste_box(own, partner, mixer->h, mixer->w, mixer->pixel_bytes, mixer->y0, mixer->y1, mixer->x0, mixer->x1);
    else
        k->blend(own, own, partner, (int64_t)(row_bytes / sizeof(float)), mixer->w_own, mixer->w_partner);
}

void sl__mix_field(const sl_kernel_table *k, sl__mix_work *work, sl_batch *batch, int field, const sl__mixer *mixer)
{
    size_t row = sl_field_element_bytes(&batch->schema.fields[field]);
    char *base = batch->fields[field].data;
    memset(work->visited, 0, (size_t)batch->count);
    for (int64_t start = 0; start < batch->count; start++) {
        if (work->visited[start])
            continue;
        memcpy(work->saved, base + (size_t)start * row, row);
        int64_t i = start;
        for (;;) {
            work->visited[i] = 1;
            int64_t j = work->partner[i];
            const void *partner = j == start ? work->saved : base + (size_t)j * row;
            mix_row(k, mixer, base + (size_t)i * row, partner, row);
            if (j == start)
                break;
            i = j;
        }
    }
}

sl_op sl__mix_op(sl_op_kind kind, const char *image_field, const char *label_field, uint32_t op_id, float alpha)
{
    sl_op op = sl__op_on(kind, image_field, op_id);
    sl__copy_string(op.u.mix.label, sizeof op.u.mix.label, label_field);
    op.u.mix.alpha = alpha;
    return op;
}

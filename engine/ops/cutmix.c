/* cutmix (Yun et al., 2019): one box per batch, of side sqrt(1 - lam) times
 * the image's and centred at a uniform pixel (clipped at the borders), is
 * pasted into every row from its partner; each label becomes the area-
 * weighted mix, with the partner's weight the box's exact share of the
 * pixels. The box follows timm's rand_bbox: cut = (int)(side * sqrt(1 - lam)),
 * [centre - cut / 2, centre + cut / 2) clipped to the image. */
#include <math.h>

#include "mix.h"

static sl_status compile(sl_pipeline *p, int index, sl__compiled_op *c, sl_field_spec *field, sl_err *err)
{
    sl_status st = sl__image_geometry(field, "cutmix", index, c, err);
    if (st)
        return st;
    return sl__mix_compile(p, index, c, field, err);
}

static int clamp(int v, int hi)
{
    return v < 0 ? 0 : (v > hi ? hi : v);
}

/* The batch's box and label weights for its lambda: one definition for
 * batch() and for the decisions handed to peer loaders. */
static void plan(const sl__op_ctx *ctx, const sl__compiled_op *c, const sl_batch *b, float lambda, sl__mixer *box,
                 sl__mixer *labels)
{
    sl_philox_ctr r = sl__op_batch_draw(ctx, c, b, SL__MIX_DRAW_BOX);
    int cy = (int)sl_u32_below(r.v[0], (uint32_t)c->h), cx = (int)sl_u32_below(r.v[1], (uint32_t)c->w);
    /* sqrt is correctly rounded and 1 - lambda exact, so the box is the
     * same on every machine. */
    double ratio = sqrt(1.0 - (double)lambda);
    int cut_h = (int)(c->h * ratio), cut_w = (int)(c->w * ratio);
    *box = (sl__mixer){.box = true, .h = c->h, .w = c->w, .pixel_bytes = c->pixel_bytes};
    box->y0 = clamp(cy - cut_h / 2, c->h);
    box->y1 = clamp(cy + cut_h / 2, c->h);
    box->x0 = clamp(cx - cut_w / 2, c->w);
    box->x1 = clamp(cx + cut_w / 2, c->w);
    int64_t pixels = (int64_t)c->h * c->w;
    int64_t area = (int64_t)(box->y1 - box->y0) * (box->x1 - box->x0);
    /* Each weight is its exact share of the pixels, correctly rounded. */
    *labels = (sl__mixer){.w_own = (float)((double)(pixels - area) / (double)pixels),
                          .w_partner = (float)((double)area / (double)pixels)};
}

static sl_status batch(const sl__op_ctx *ctx, const sl__compiled_op *c, sl_batch *b, sl_err *err)
{
    sl__mix_work work;
    sl_status st = sl__mix_work_init(&work, b, c, err);
    if (st)
        return st;
    float lambda = sl__mix_lambda(ctx, c, b);
    sl__mix_partners(ctx, c, b, work.partner);
    sl__mixer box, labels;
    plan(ctx, c, b, lambda, &box, &labels);
    sl__mix_field(ctx->kernels, &work, b, c->field, &box);
    sl__mix_field(ctx->kernels, &work, b, c->other_field, &labels);
    sl__mix_work_release(&work);
    return SL_OK;
}

/* What batch() draws, for a peer loader: lambda, the box (exact in f32:
 * image sides are far below 2^24) and the labels' weights, and partners. */
static void batch_decisions(const sl__op_ctx *ctx, const sl__compiled_op *c, const sl_batch *b, float *values,
                            int64_t *partner)
{
    float lambda = sl__mix_lambda(ctx, c, b);
    sl__mixer box, labels;
    plan(ctx, c, b, lambda, &box, &labels);
    const float v[] = {lambda,        (float)box.y0, (float)box.y1,   (float)box.x0,
                       (float)box.x1, labels.w_own,  labels.w_partner};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        values[i] = v[i];
    sl__mix_partners(ctx, c, b, partner);
}

/* On a device: the box and the label weights from the batch's decisions
 * (values 1..4 and 5..6), pasted and blended out of place from the
 * unmixed partner rows. */
static int device_batch(const sl__device_ctx *ctx, const sl__compiled_op *c, sl__device_fields *fields)
{
    const float *values = ctx->params;
    const int64_t *partner = (const int64_t *)((const char *)ctx->params + sl__device_partners_offset(c->desc));
    int e = ctx->device->paste_rows(fields->spare[c->field], fields->data[c->field], ctx->rows, c->h, c->w,
                                    c->pixel_bytes, partner, values + 1, ctx->stream);
    if (e)
        return e;
    sl__device_swap(fields, c->field);
    size_t row = sl_field_element_bytes(&ctx->pipeline->output_schema.fields[c->other_field]);
    e = ctx->device->mix_rows(fields->spare[c->other_field], fields->data[c->other_field], ctx->rows,
                              (int64_t)(row / sizeof(float)), partner, values + 5, ctx->stream);
    if (!e)
        sl__device_swap(fields, c->other_field);
    return e;
}

const sl__op_desc sl__op_cutmix_desc = {
    .phase = SL__PHASE_BATCH,
    .random = true,
    .compile = compile,
    .batch = batch,
    .batch_decision_columns = "lambda,y0,y1,x0,x1,w_own,w_partner",
    .batch_partners = true,
    .batch_decisions = batch_decisions,
    .device_batch = device_batch,
    SL__PARAMS(sl__mix_params),
};

sl_op sl_op_cutmix(const char *image_field, const char *label_field, uint32_t op_id, float alpha)
{
    return sl__mix_op(SL_OP_CUTMIX, image_field, label_field, op_id, alpha);
}

/* resize: bilinear resampling of an image field to out_h x out_w with
 * half-pixel centres (sl_resize_plan in kernels.h), u8 or f32 in, f32 out.
 * The plan is computed once here, at pipeline build time. */
#include <stdlib.h>

#include "core/internal.h"
#include "pipeline/op_desc.h"
#include "sluice/pipeline/op_consts.h"

typedef struct resize_state {
    sl_resize_plan plan;
    void *storage;
} resize_state;

/* Image geometry plus the checks every resampling op shares: u8 or f32, and
 * sides within the plan's exact range. Exposed for random_resized_crop. */
sl_status sl__resample_geometry(const sl_field_spec *field, const char *what, int index, int32_t out_h, int32_t out_w,
                                sl__compiled_op *c, int *channels, sl_err *err)
{
    sl_status st = sl__image_geometry(field, what, index, c, err);
    if (st)
        return st;
    if (field->dtype != SL_U8 && field->dtype != SL_F32)
        return sl_fail(err, SL_EINVAL, "op %d: %s takes u8 or f32, field '%s' is %s", index, what, field->name,
                       sl_dtype_name(field->dtype));
    if (c->h > SL_RESIZE_MAX_SIDE || c->w > SL_RESIZE_MAX_SIDE)
        return sl_fail(err, SL_EINVAL, "op %d: %s takes sides up to %d, field '%s' is %dx%d", index, what,
                       SL_RESIZE_MAX_SIDE, field->name, c->h, c->w);
    if (out_h < 1 || out_w < 1 || out_h > SL_RESIZE_MAX_SIDE || out_w > SL_RESIZE_MAX_SIDE)
        return sl_fail(err, SL_EINVAL, "op %d: %s output %dx%d of field '%s' is outside [1, %d]", index, what, out_h,
                       out_w, field->name, SL_RESIZE_MAX_SIDE);
    *channels = field->shape.rank == 3 ? (int)field->shape.dims[2] : 1;
    return SL_OK;
}

void sl__resample_output(sl_field_spec *field, int32_t out_h, int32_t out_w, int channels, sl__compiled_op *c)
{
    field->shape.dims[0] = out_h;
    field->shape.dims[1] = out_w;
    field->dtype = SL_F32;
    c->out_dtype = SL_F32;
    c->out_bytes = (size_t)out_h * (size_t)out_w * (size_t)channels * sizeof(float);
}

static sl_status compile(sl_pipeline *p, int index, sl__compiled_op *c, sl_field_spec *field, sl_err *err)
{
    (void)p;
    int32_t out_h = c->op->u.resize.out_h, out_w = c->op->u.resize.out_w;
    int channels;
    sl_status st = sl__resample_geometry(field, "resize", index, out_h, out_w, c, &channels, err);
    if (st)
        return st;
    resize_state *state = calloc(1, sizeof *state);
    size_t bytes = sl_resize_plan_bytes(out_h, out_w, channels);
    if (state)
        state->storage = sl__aligned_alloc(SL_ALIGN, bytes);
    if (!state || !state->storage) {
        free(state);
        return sl_fail(err, SL_ENOMEM, "op %d: cannot allocate a resize plan of %zu bytes for field '%s'", index, bytes,
                       field->name);
    }
    sl_resize_plan_init(&state->plan, state->storage, c->h, c->w, out_h, out_w, channels);
    c->state = state;
    c->scratch_bytes = sl_resize_scratch_values(&state->plan) * sizeof(float);
    sl__resample_output(field, out_h, out_w, channels, c);
    return SL_OK;
}

static void release(sl__compiled_op *c)
{
    resize_state *state = c->state;
    if (state)
        free(state->storage);
    free(state);
    c->state = NULL;
}

static void rows(const sl__op_ctx *ctx, const sl__compiled_op *c, const int64_t *ids, int64_t count, const void *in,
                 void *out, void *scratch)
{
    (void)ids;
    const resize_state *state = c->state;
    const int64_t stride = (int64_t)c->w * state->plan.channels;
    for (int64_t r = 0; r < count; r++) {
        const char *src = (const char *)in + (size_t)r * c->in_bytes;
        float *dst = (float *)((char *)out + (size_t)r * c->out_bytes);
        if (c->in_dtype == SL_U8)
            ctx->kernels->resize_u8((const uint8_t *)src, stride, dst, &state->plan, scratch);
        else
            ctx->kernels->resize_f32((const float *)src, stride, dst, &state->plan, scratch);
    }
}

/* On a device each output value computes its own coordinates and weights
 * with the plan's arithmetic (sl__body_resize_axis), so no plan travels. */
static int device_rows(const sl__device_ctx *ctx, const sl__compiled_op *c, void *in, void *out)
{
    const resize_state *state = c->state;
    return ctx->device->resize_rows(in, c->in_dtype == SL_U8, out, ctx->rows, c->h, c->w, state->plan.channels,
                                    c->op->u.resize.out_h, c->op->u.resize.out_w, ctx->stream);
}

static const sl__op_param params[] = {SL__PARAM_I32("out_h", resize.out_h), SL__PARAM_I32("out_w", resize.out_w)};

const sl__op_desc sl__op_resize_desc = {
    .phase = SL__PHASE_ELEMENT,
    .in_place = false,
    .compile = compile,
    .release = release,
    .rows = rows,
    .device_rows = device_rows,
    SL__PARAMS(params),
};

sl_op sl_op_resize(const char *field, int32_t out_h, int32_t out_w)
{
    sl_op op = sl__op_on(SL_OP_RESIZE, field, 0);
    op.u.resize.out_h = out_h;
    op.u.resize.out_w = out_w;
    return op;
}

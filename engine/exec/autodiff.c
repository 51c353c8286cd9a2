/* Reverse-mode differentiation of a pipeline batch (sluice/exec/autodiff.h): a
 * tape of the unfused forward pass, and each op's VJP from its descriptor
 * chained backwards. */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "pipeline/internal.h"
#include "pipeline/op_desc.h"
#include "sluice/exec/autodiff.h"

int64_t sl_op_param_count(const sl_op *op)
{
    const sl__op_desc *desc = sl__op_desc_of(op->kind);
    return desc && desc->param_count ? desc->param_count(op) : 0;
}

float *sl_op_param_at(sl_op *op, int64_t k)
{
    const sl__op_desc *desc = sl__op_desc_of(op->kind);
    return k >= 0 && k < sl_op_param_count(op) ? desc->param_at(op, k) : NULL;
}

/* Offsets of each op's parameters in a gradient vector. */
static void layout(const sl_pipeline_spec *spec, sl_grads *g)
{
    g->nops = spec->nops;
    g->offset[0] = 0;
    for (int i = 0; i < spec->nops; i++)
        g->offset[i + 1] = g->offset[i] + sl_op_param_count(&spec->ops[i]);
    g->count = g->offset[spec->nops];
}

sl_status sl_grads_create(const sl_pipeline *pipeline, sl_grads **out, sl_err *err)
{
    *out = NULL;
    sl_grads *g = calloc(1, sizeof *g);
    if (!g)
        return sl_fail(err, SL_ENOMEM, "cannot allocate gradients");
    layout(&pipeline->spec, g);
    g->values = calloc((size_t)g->count + 1, sizeof *g->values);
    if (!g->values) {
        int64_t count = g->count;
        free(g);
        return sl_fail(err, SL_ENOMEM, "cannot allocate %lld gradients", (long long)count);
    }
    *out = g;
    return SL_OK;
}

void sl_grads_zero(sl_grads *g)
{
    memset(g->values, 0, (size_t)g->count * sizeof *g->values);
}

void sl_grads_free(sl_grads *g)
{
    if (!g)
        return;
    free(g->values);
    free(g);
}

/* Whether grads were shaped for a pipeline of this spec. */
static bool shaped_for(const sl_grads *g, const sl_pipeline_spec *spec)
{
    if (g->nops != spec->nops)
        return false;
    sl_grads expected;
    layout(spec, &expected);
    return memcmp(expected.offset, g->offset, (size_t)(spec->nops + 1) * sizeof *g->offset) == 0;
}

sl_status sl_sgd_step(sl_pipeline_spec *spec, const sl_grads *grads, double lr, sl_err *err)
{
    if (!shaped_for(grads, spec))
        return sl_fail(err, SL_EINVAL, "gradients for %d ops do not fit this spec's %d ops and their parameters",
                       grads->nops, spec->nops);
    for (int i = 0; i < spec->nops; i++)
        for (int64_t k = 0; k < grads->offset[i + 1] - grads->offset[i]; k++) {
            float *theta = sl_op_param_at(&spec->ops[i], k);
            *theta = (float)((double)*theta - lr * grads->values[grads->offset[i] + k]);
        }
    return SL_OK;
}

struct sl_tape {
    const sl_pipeline *pipeline;
    const sl_kernel_table *kernels;
    int64_t epoch;
    /* The batch as its ops saw it, without its data: epoch, index, rows,
     * element ids (owned) and per-batch field shapes. */
    sl_batch meta;
    void *inputs[SL_MAX_OPS]; /* op i's input rows, when its VJP needs them */
};

static sl_status keep_input(void *user, int index, const void *input, size_t bytes, sl_err *err)
{
    sl_tape *tape = user;
    const sl__compiled_op *c = &tape->pipeline->compiled[index];
    if (!c->desc->vjp || !c->desc->vjp_needs_input)
        return SL_OK;
    tape->inputs[index] = sl__aligned_alloc(SL_ALIGN, bytes);
    if (!tape->inputs[index])
        return sl_fail(err, SL_ENOMEM, "cannot keep %zu bytes of op %d's input for the backward pass", bytes, index);
    memcpy(tape->inputs[index], input, bytes);
    return SL_OK;
}

sl_status sl_tape_forward(const sl_pipeline *pipeline, const sl_kernel_table *kernels, sl_position position,
                          sl_batch *dst, sl_tape **out, sl_err *err)
{
    *out = NULL;
    sl_tape *tape = calloc(1, sizeof *tape);
    if (!tape)
        return sl_fail(err, SL_ENOMEM, "cannot allocate a tape");
    tape->pipeline = pipeline;
    tape->kernels = kernels;
    tape->epoch = position.epoch;
    sl_status st = sl__produce_observed(pipeline, kernels, position, dst, keep_input, tape, err);
    if (!st) {
        tape->meta = *dst;
        tape->meta.storage = NULL;
        for (int f = 0; f < dst->schema.nfields; f++)
            tape->meta.fields[f].data = NULL;
        tape->meta.element_ids = malloc((size_t)dst->count * sizeof *dst->element_ids + 1);
        if (!tape->meta.element_ids)
            st = sl_fail(err, SL_ENOMEM, "cannot keep the batch's element ids");
        else
            memcpy(tape->meta.element_ids, dst->element_ids, (size_t)dst->count * sizeof *dst->element_ids);
    }
    if (st) {
        sl_tape_free(tape);
        return st;
    }
    *out = tape;
    return SL_OK;
}

void sl_tape_free(sl_tape *tape)
{
    if (!tape)
        return;
    for (int i = 0; i < SL_MAX_OPS; i++)
        free(tape->inputs[i]);
    free(tape->meta.element_ids);
    free(tape);
}

/* Checks that every op the backward pass of field f meets has a VJP, and
 * finds the largest cotangent it will hold (floats per element) and the
 * first element op of the field. */
static sl_status plan_backward(const sl_pipeline *p, int f, int64_t *widest, int *first_op, sl_err *err)
{
    const char *name = p->output_schema.fields[f].name;
    *first_op = -1;
    *widest = sl_shape_numel(&p->output_schema.fields[f].shape);
    for (int i = 0; i < p->ncompiled; i++) {
        const sl__compiled_op *c = &p->compiled[i];
        bool touches = c->field == f || c->other_field == f;
        if (c->desc->phase == SL__PHASE_BATCH) {
            if (touches && !c->desc->batch_vjp)
                return sl_fail(err, SL_EUNSUPPORTED, "op %d (%s) on field '%s' has no VJP", i, sl__op_name(c), name);
            continue;
        }
        if (!touches)
            continue;
        if (!c->desc->vjp)
            return sl_fail(err, SL_EUNSUPPORTED, "op %d (%s) on field '%s' has no VJP", i, sl__op_name(c), name);
        if (c->out_dtype != SL_F32)
            return sl_fail(err, SL_EUNSUPPORTED, "op %d (%s) makes field '%s' %s, which has no cotangent", i,
                           sl__op_name(c), name, sl_dtype_name(c->out_dtype));
        if (*first_op < 0)
            *first_op = i;
        if (c->values > *widest)
            *widest = c->values;
    }
    return SL_OK;
}

sl_status sl_tape_backward(const sl_tape *tape, const char *field, const float *cotangent, float *input_cotangent,
                           sl_grads *grads, sl_err *err)
{
    const sl_pipeline *p = tape->pipeline;
    int f = sl_schema_find(&p->output_schema, field);
    if (f < 0)
        return sl_fail(err, SL_EINVAL, "the pipeline has no field '%s' to differentiate", field);
    if (p->output_schema.fields[f].dtype != SL_F32)
        return sl_fail(err, SL_EUNSUPPORTED, "field '%s' is %s; only f32 fields have cotangents", field,
                       sl_dtype_name(p->output_schema.fields[f].dtype));
    if (grads && !shaped_for(grads, &p->spec))
        return sl_fail(err, SL_EINVAL, "gradients for %d ops do not fit this pipeline's %d ops and their parameters",
                       grads->nops, p->spec.nops);
    int64_t widest;
    int first_op;
    sl_status st = plan_backward(p, f, &widest, &first_op, err);
    if (st)
        return st;
    int64_t count = tape->meta.count;
    size_t bytes = (size_t)count * (size_t)widest * sizeof(float);
    float *buffers[2] = {sl__aligned_alloc(SL_ALIGN, bytes + 1), sl__aligned_alloc(SL_ALIGN, bytes + 1)};
    /* Without grads, parameter gradients go to a scratch sized for the op
     * with the most parameters, and are dropped. */
    int64_t most = 0;
    for (int i = 0; i < p->spec.nops; i++)
        if (sl_op_param_count(&p->spec.ops[i]) > most)
            most = sl_op_param_count(&p->spec.ops[i]);
    double *scratch_grads = grads ? NULL : calloc((size_t)most + 1, sizeof(double));
    if (!buffers[0] || !buffers[1] || (!grads && !scratch_grads)) {
        st = sl_fail(err, SL_ENOMEM, "cannot allocate %zu bytes of cotangents", 2 * bytes);
        goto done;
    }
    float *dy = buffers[0];
    sl_tensor t = tape->meta.fields[f];
    memcpy(dy, cotangent, sl_tensor_nbytes(&t));
    sl__op_ctx ctx = {p, tape->kernels, tape->epoch};
    for (int i = p->ncompiled - 1; i >= 0 && !st; i--) {
        const sl__compiled_op *c = &p->compiled[i];
        if (c->desc->phase == SL__PHASE_BATCH) {
            if (c->desc->batch_vjp) {
                t.data = dy;
                st = c->desc->batch_vjp(&ctx, c, &tape->meta, &t, err);
                if (st)
                    sl_fail_context(err, "the VJP of batch op %d (%s)", i, sl__op_name(c));
            }
            continue;
        }
        if (c->field != f)
            continue;
        float *dx = i == first_op && !input_cotangent ? NULL : (dy == buffers[0] ? buffers[1] : buffers[0]);
        double *dparams = grads ? grads->values + grads->offset[i] : scratch_grads;
        c->desc->vjp(&ctx, c, tape->meta.element_ids, count, tape->inputs[i], dy, dx, dparams);
        if (dx)
            dy = dx;
    }
    if (!st && input_cotangent) {
        size_t values = first_op >= 0 ? (size_t)count * (size_t)p->compiled[first_op].values
                                      : sl_tensor_nbytes(&tape->meta.fields[f]) / sizeof(float);
        memcpy(input_cotangent, dy, values * sizeof(float));
    }
done:
    free(buffers[0]);
    free(buffers[1]);
    free(scratch_grads);
    return st;
}

/* The sub-chains of branch_mean, random_apply and random_choice. */
#include <math.h>
#include <stdlib.h>

#include "subchain.h"

static size_t align_up(size_t bytes)
{
    return (bytes + SL_ALIGN - 1) / SL_ALIGN * SL_ALIGN;
}

sl_status sl__subchain_compile(sl_pipeline *p, int index, sl__compiled_op *c, sl_field_spec *field, int branches,
                               bool copy, sl_err *err)
{
    const sl_op *op = c->op;
    const char *what = sl__op_name(c);
    sl_status st = sl__require_f32(field, what, index, err);
    if (st)
        return st;
    int counts[2] = {op->u.sub.ops_a, op->u.sub.ops_b};
    if (counts[0] < 0 || counts[1] < 0 || (branches == 1 && counts[1] != 0))
        return sl_fail(err, SL_EINVAL, "op %d: %s on field '%s' owns %d and %d ops; counts must be >= 0%s", index, what,
                       field->name, counts[0], counts[1], branches == 1 ? " and the second 0" : "");
    int after = p->spec.nops - index - 1;
    if (counts[0] + counts[1] > after)
        return sl_fail(err, SL_EINVAL, "op %d: %s on field '%s' owns the next %d ops, but only %d follow it", index,
                       what, field->name, counts[0] + counts[1], after);
    if (!(op->u.sub.p >= 0.0f && op->u.sub.p <= 1.0f))
        return sl_fail(err, SL_EINVAL, "op %d: %s on field '%s' needs a probability in [0, 1], got %g", index, what,
                       field->name, (double)op->u.sub.p);
    sl__subchain *s = calloc(1, sizeof *s);
    if (!s)
        return sl_fail(err, SL_ENOMEM, "op %d: cannot allocate %s's state", index, what);
    c->state = s;
    int first = index + 1;
    for (int b = 0; b < 2; b++) {
        s->first[b] = first;
        s->count[b] = counts[b];
        first += counts[b];
    }
    st = sl__compile_nested(p, index, index + 1, counts[0] + counts[1], err);
    if (st)
        return st;
    /* Equal op ids would key two ops' draws alike: refuse them. */
    for (int i = index; i < first; i++)
        for (int j = i + 1; j < first; j++)
            if (p->spec.ops[i].op_id != 0 && p->spec.ops[i].op_id == p->spec.ops[j].op_id)
                return sl_fail(err, SL_EINVAL, "op %d (%s) and op %d (%s) inside op %d (%s) share op id %u", i,
                               sl_op_kind_name(p->spec.ops[i].kind), j, sl_op_kind_name(p->spec.ops[j].kind), index,
                               what, (unsigned)p->spec.ops[i].op_id);
    size_t sub_scratch = 0;
    for (int i = index + 1; i < first; i++)
        if (p->compiled[i].scratch_bytes > sub_scratch)
            sub_scratch = p->compiled[i].scratch_bytes;
    s->sub_scratch_offset = copy ? align_up(c->in_bytes) : 0;
    c->scratch_bytes = s->sub_scratch_offset + sub_scratch;
    return SL_OK;
}

void sl__subchain_release(sl__compiled_op *c)
{
    free(c->state);
    c->state = NULL;
}

const sl__op_param sl__subchain_params[3] = {SL__PARAM_I32("ops_a", sub.ops_a), SL__PARAM_I32("ops_b", sub.ops_b),
                                             SL__PARAM_F32("p", sub.p)};

int sl__subchain_nested(const sl_op *op)
{
    return op->u.sub.ops_a + op->u.sub.ops_b;
}

void sl__subchain_run(const sl__op_ctx *ctx, const sl__compiled_op *c, int branch, int64_t element, float *x,
                      void *scratch)
{
    const sl__subchain *s = c->state;
    const sl__compiled_op *ops = ctx->pipeline->compiled;
    void *sub_scratch = (char *)scratch + s->sub_scratch_offset;
    sl_ew_step steps[SL_MAX_OPS];
    int nsteps = 0;
    for (int j = s->first[branch]; j < s->first[branch] + s->count[branch]; j++) {
        const sl__compiled_op *sub = &ops[j];
        if (sub->desc->ew_step && sub->desc->ew_step(ctx, sub, element, &steps[nsteps])) {
            nsteps++;
            continue;
        }
        if (nsteps)
            ctx->kernels->ew_chain(x, c->values, steps, nsteps);
        nsteps = 0;
        sub->desc->rows(ctx, sub, &element, 1, x, x, sub_scratch);
    }
    if (nsteps)
        ctx->kernels->ew_chain(x, c->values, steps, nsteps);
}

void sl__subchain_rule(const sl__op_ctx *ctx, const sl__compiled_op *c, sl_decide_rule *rule)
{
    *rule = sl__op_rule(ctx, c, SL_DECIDE_BITS, 1);
    rule->bound[0] = 1;
    rule->p = c->op->u.sub.p;
}

bool sl__subchain_decision(const sl__op_ctx *ctx, const sl__compiled_op *c, int64_t element)
{
    sl_decide_rule rule;
    sl__subchain_rule(ctx, c, &rule);
    int32_t first[SL_DECIDE_MAX_COLUMNS] = {0};
    sl__decide(&rule, element, ctx->epoch, first);
    return first[0] != 0;
}

sl_op sl__subchain_op(sl_op_kind kind, const char *field, uint32_t op_id, float p, int32_t ops_a, int32_t ops_b)
{
    sl_op op = sl__op_on(kind, field, op_id);
    op.u.sub.ops_a = ops_a;
    op.u.sub.ops_b = ops_b;
    op.u.sub.p = p;
    return op;
}

int sl__subchain_device_both(const sl__device_ctx *ctx, const sl__compiled_op *c, void *in, void *out)
{
    const sl__subchain *s = c->state;
    int e = sl__device_copy_rows(ctx, c, in, out);
    if (!e)
        e = ctx->run_nested(ctx, s->first[0], s->count[0], out);
    if (!e)
        e = ctx->run_nested(ctx, s->first[1], s->count[1], in);
    return e;
}

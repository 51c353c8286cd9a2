/* The cuda adapters' launch plan (cuda_plan.h), and its CPU run. */
#include <string.h>

#include "cuda_plan.h"
#include "pipeline/op_desc.h"
#include "pipeline/internal.h"
#include "kernels/at.h"

/* The chain launch a step joins: the last launch when it is a chain with
 * room (a u8 normalize becomes one), else a new chain. */
static sl__cuda_launch *chain_for(sl__cuda_field_plan *fp)
{
    sl__cuda_launch *last = fp->nlaunches ? &fp->launches[fp->nlaunches - 1] : NULL;
    if (last && last->kind == SL__LAUNCH_NORMALIZE_U8) {
        last->kind = SL__LAUNCH_NORMALIZE_U8_CHAIN;
        last->chain.nsteps = 0;
        return last;
    }
    if (last && (last->kind == SL__LAUNCH_CHAIN || last->kind == SL__LAUNCH_NORMALIZE_U8_CHAIN) &&
        last->chain.nsteps < SL_CUDA_MAX_STEPS)
        return last;
    last = &fp->launches[fp->nlaunches++];
    last->kind = SL__LAUNCH_CHAIN;
    last->chain.nsteps = 0;
    return last;
}

/* Appends a step to the field's chain; op is the compiled op that gives it
 * per row, or -1 when it is the same for every row. */
static void append_step(sl__cuda_field_plan *fp, sl_ew_step step, int op)
{
    sl__cuda_launch *chain = chain_for(fp);
    chain->op[chain->chain.nsteps] = op;
    chain->chain.steps[chain->chain.nsteps++] = step;
    if (op >= 0)
        chain->per_row = true;
}

sl_status sl__cuda_plan_build(const char *who, const sl_pipeline *p, sl__cuda_plan *plan, sl_err *err)
{
    memset(plan, 0, sizeof *plan);
    /* An ew_step resolves the op's draws; it runs no kernel, so any table
     * serves as its context. */
    sl__op_ctx ctx = {p, sl_kernels_reference(), 0};
    plan->nfields = p->output_schema.nfields;
    for (int f = 0; f < plan->nfields; f++) {
        sl__cuda_field_plan *fp = &plan->fields[f];
        fp->source_field = sl_schema_find(&p->source_schema, p->output_schema.fields[f].name);
        if (fp->source_field < 0)
            return sl_fail(err, SL_EUNSUPPORTED, "adapter '%s': output field '%s' is not a source field", who,
                           p->output_schema.fields[f].name);
        fp->in_bytes = sl_field_element_bytes(&p->source_schema.fields[fp->source_field]);
        fp->out_bytes = sl_field_element_bytes(&p->output_schema.fields[f]);
        fp->out_values = (int64_t)(fp->out_bytes / sizeof(float));
    }
    for (int i = 0; i < p->ncompiled; i++) {
        const sl__compiled_op *c = &p->compiled[i];
        sl__cuda_field_plan *fp = &plan->fields[c->field];
        sl_ew_step step;
        switch (c->desc->device) {
        case SL__DEVICE_CHANNELS:
            if (c->in_dtype != SL_U8 && c->norm.channels == 1) {
                step = (sl_ew_step){.kind = SL_EW_NORMALIZE, .a = c->norm.mean[0], .b = c->norm.inv_std[0]};
                append_step(fp, step, -1);
            } else {
                sl__cuda_launch *l = &fp->launches[fp->nlaunches++];
                l->kind = c->in_dtype == SL_U8 ? SL__LAUNCH_NORMALIZE_U8 : SL__LAUNCH_NORMALIZE_F32;
                sl_cuda_channels_from_normalize(&c->norm, &l->channels);
            }
            break;
        case SL__DEVICE_EW_STEP:
            if (c->owner >= 0 || !c->desc->ew_step || !c->desc->ew_step(&ctx, c, 0, &step))
                return sl_fail(err, SL_EUNSUPPORTED, "adapter '%s': op %d (%s) has no element-wise step", who, i,
                               sl__op_name(c));
            append_step(fp, step, c->desc->random ? i : -1);
            break;
        case SL__DEVICE_NONE:
            return sl_fail(err, SL_EUNSUPPORTED, "adapter '%s': op %d (%s) has no device kernel yet", who, i,
                           sl__op_name(c));
        }
    }
    for (int f = 0; f < plan->nfields; f++)
        for (int l = 0; l < plan->fields[f].nlaunches; l++) {
            sl__cuda_launch *la = &plan->fields[f].launches[l];
            if (la->per_row) {
                la->row_first = plan->row_steps;
                plan->row_steps += la->chain.nsteps;
            }
        }
    return SL_OK;
}

void sl__cuda_plan_row_steps(const sl__cuda_plan *plan, const sl_pipeline *p, int64_t epoch, const int64_t *ids,
                             int64_t rows, sl_ew_step *table)
{
    sl__op_ctx ctx = {p, sl_kernels_reference(), epoch};
    for (int f = 0; f < plan->nfields; f++)
        for (int l = 0; l < plan->fields[f].nlaunches; l++) {
            const sl__cuda_launch *la = &plan->fields[f].launches[l];
            if (!la->per_row)
                continue;
            for (int64_t r = 0; r < rows; r++) {
                sl_ew_step *row = table + r * plan->row_steps + la->row_first;
                for (int s = 0; s < la->chain.nsteps; s++) {
                    if (la->op[s] < 0)
                        row[s] = la->chain.steps[s];
                    else
                        p->compiled[la->op[s]].desc->ew_step(&ctx, &p->compiled[la->op[s]], ids[r], &row[s]);
                }
            }
        }
}

bool sl__cuda_plan_reads_input(const sl__cuda_field_plan *field)
{
    return field->nlaunches > 0 && field->launches[0].kind != SL__LAUNCH_CHAIN;
}

void sl__cuda_plan_run_host(const sl__cuda_plan *plan, int f, const void *in, void *out, int64_t rows,
                            const sl_ew_step *table)
{
    const sl__cuda_field_plan *fp = &plan->fields[f];
    const int64_t n = rows * fp->out_values;
    bool from_input = sl__cuda_plan_reads_input(fp);
    if (!from_input)
        memcpy(out, in, (size_t)rows * fp->out_bytes);
    for (int l = 0; l < fp->nlaunches; l++) {
        const sl__cuda_launch *la = &fp->launches[l];
        const void *src = from_input ? in : out;
        if (la->per_row) {
            for (int64_t i = 0; i < n; i++) {
                if (la->kind == SL__LAUNCH_NORMALIZE_U8_CHAIN)
                    sl__at_normalize_u8_chain_rows(src, out, i, la->channels.channels, la->channels.a,
                                                   la->channels.b, fp->out_values, table, plan->row_steps,
                                                   la->row_first, la->chain.nsteps);
                else
                    sl__at_ew_chain_rows(out, i, fp->out_values, table, plan->row_steps, la->row_first,
                                         la->chain.nsteps);
            }
            from_input = false;
            continue;
        }
        for (int64_t i = 0; i < n; i++)
            switch (la->kind) {
            case SL__LAUNCH_NORMALIZE_U8:
                sl__at_normalize_u8(src, out, i, la->channels.channels, la->channels.a, la->channels.b);
                break;
            case SL__LAUNCH_NORMALIZE_U8_CHAIN:
                sl__at_normalize_u8_chain(src, out, i, la->channels.channels, la->channels.a, la->channels.b,
                                          la->chain.steps, la->chain.nsteps);
                break;
            case SL__LAUNCH_NORMALIZE_F32:
                sl__at_normalize_f32(src, out, i, la->channels.channels, la->channels.a, la->channels.b);
                break;
            case SL__LAUNCH_CHAIN: sl__at_ew_chain(out, i, la->chain.steps, la->chain.nsteps); break;
            }
        from_input = false;
    }
}

/* The fused executor: many batches a call, every buffer allocated up front,
 * and each element carried through its whole op chain while it is in cache.
 *
 * At creation each field's ops are compiled into a row program: runs of
 * element-wise f32 ops become one tiled chain call, and the first op reads
 * straight from the source's bytes (a mapped view when the source has one),
 * so an element is read once and written once. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "op_desc.h"
#include "pipeline_internal.h"

/* One step of a field's row program: a run of chainable ops applied per
 * tile by one ew_chain call, or one op's own rows function. */
typedef struct row_step {
    bool chain;
    int first_op, nops;         /* chain: indices into fused->chain_ops */
    const sl__compiled_op *op;  /* rows */
    /* The step writes into the output row: it produces the field's final
     * layout and every later step can work in place there. */
    bool to_out;
    size_t out_bytes;
} row_step;

typedef struct field_program {
    size_t item_bytes;          /* source bytes of one element */
    size_t out_bytes;           /* output bytes of one element */
    int nsteps;
    row_step steps[SL_MAX_OPS];
} field_program;

struct sl_fused {
    const sl_pipeline *pipeline;
    const sl_kernel_table *kernels;
    sl_batch *batch;
    void *read_scratch;         /* an element read from a source with no mapped view */
    void *op_scratch;           /* what an op's rows function asks for */
    void *stage_a, *stage_b;    /* an element between ops that change its layout */
    const sl__compiled_op *chain_ops[SL_MAX_OPS];
    sl_ew_step chain_steps[SL_MAX_OPS];
    int nfields;
    field_program programs[SL_MAX_FIELDS];
};

/* Whether an op can be a step of the tile chain: one f32 value in, one out,
 * in place. A chain never starts a program: the first op reads the source
 * view directly, which saves the copy a chain would need. */
static bool chainable(const sl_pipeline *p, const sl__compiled_op *c)
{
    sl_ew_step probe;
    sl__op_ctx ctx = {p, sl_kernels_reference(), 0};
    return c->desc->ew_step && c->desc->in_place && c->in_bytes == c->out_bytes && c->in_dtype == SL_F32 &&
           c->desc->ew_step(&ctx, c, 0, &probe);
}

static void compile_program(sl_fused *fz, int field, int *chain_used)
{
    const sl_pipeline *p = fz->pipeline;
    field_program *prog = &fz->programs[field];
    prog->item_bytes = sl_field_element_bytes(&p->source_schema.fields[field]);
    prog->out_bytes = sl_field_element_bytes(&p->output_schema.fields[field]);
    for (int i = 0; i < p->ncompiled; i++) {
        const sl__compiled_op *c = &p->compiled[i];
        if (c->field != field || c->desc->phase != SL__PHASE_ELEMENT)
            continue;
        row_step *last = prog->nsteps ? &prog->steps[prog->nsteps - 1] : NULL;
        if (last && chainable(p, c)) {
            if (!last->chain)
                prog->steps[prog->nsteps++] = (row_step){true, *chain_used, 0, NULL, false, c->out_bytes};
            fz->chain_ops[(*chain_used)++] = c;
            prog->steps[prog->nsteps - 1].nops++;
            continue;
        }
        prog->steps[prog->nsteps++] = (row_step){false, 0, 0, c, false, c->out_bytes};
    }
    /* Walking back from the end: a step may write into the output row when
     * it yields the final layout and all later steps work in place. */
    for (int s = prog->nsteps - 1; s >= 0; s--) {
        row_step *step = &prog->steps[s];
        step->to_out = step->out_bytes == prog->out_bytes;
        if (!step->to_out)
            break;
        bool in_place = step->chain || (step->op->desc->in_place && step->op->in_bytes == step->op->out_bytes);
        if (!in_place)
            break;
    }
}

sl_status sl_fused_create(const sl_pipeline *pipeline, sl_kernel_choice kernels, sl_fused **out, sl_err *err)
{
    *out = NULL;
    sl_fused *fz = calloc(1, sizeof *fz);
    if (!fz)
        return sl_fail(err, SL_ENOMEM, "cannot allocate the fused executor");
    fz->pipeline = pipeline;
    fz->kernels = sl_kernel_table_for(kernels);
    fz->nfields = pipeline->output_schema.nfields;
    int chain_used = 0;
    size_t read_bytes = 1, stage_bytes = 1, scratch_bytes = 1;
    for (int f = 0; f < fz->nfields; f++) {
        if (f >= pipeline->source_schema.nfields)
            continue; /* made by a batch op */
        compile_program(fz, f, &chain_used);
        if (fz->programs[f].item_bytes > read_bytes)
            read_bytes = fz->programs[f].item_bytes;
        if (pipeline->max_element_bytes[f] > stage_bytes)
            stage_bytes = pipeline->max_element_bytes[f];
    }
    for (int i = 0; i < pipeline->ncompiled; i++)
        if (pipeline->compiled[i].scratch_bytes > scratch_bytes)
            scratch_bytes = pipeline->compiled[i].scratch_bytes;
    sl_status st = sl_batch_create(&pipeline->output_schema, pipeline->spec.batch_size, &fz->batch, err);
    if (st) {
        free(fz);
        return st;
    }
    fz->read_scratch = sl__aligned_alloc(SL_ALIGN, read_bytes);
    fz->op_scratch = sl__aligned_alloc(SL_ALIGN, scratch_bytes);
    fz->stage_a = sl__aligned_alloc(SL_ALIGN, stage_bytes);
    fz->stage_b = sl__aligned_alloc(SL_ALIGN, stage_bytes);
    if (!fz->read_scratch || !fz->op_scratch || !fz->stage_a || !fz->stage_b) {
        sl_fused_free(fz);
        return sl_fail(err, SL_ENOMEM, "cannot allocate fused scratch of %zu bytes", stage_bytes);
    }
    *out = fz;
    return SL_OK;
}

void sl_fused_free(sl_fused *fz)
{
    if (!fz)
        return;
    sl_batch_free(fz->batch);
    free(fz->read_scratch);
    free(fz->op_scratch);
    free(fz->stage_a);
    free(fz->stage_b);
    free(fz);
}

/* Runs one element of one field from the source to its output row. */
static sl_status run_row(sl_fused *fz, int field, int64_t epoch, int64_t element, void *out, sl_err *err)
{
    const sl_pipeline *p = fz->pipeline;
    const sl_kernel_table *k = fz->kernels;
    const field_program *prog = &fz->programs[field];
    if (field == p->pack_field)
        return sl__gather_element(p, k, field, element, out, err);

    const void *in = sl_source_map(p->source, field, (size_t)element * prog->item_bytes, prog->item_bytes);
    if (!in) {
        sl_status st = sl__gather_element(p, k, field, element, fz->read_scratch, err);
        if (st)
            return st;
        in = fz->read_scratch;
    }
    /* cur is where the element's current value lives: the source view (read
     * only) at first, then a staging buffer or the output row. */
    const void *cur = in;
    size_t cur_bytes = prog->item_bytes;
    sl__op_ctx ctx = {p, k, epoch};
    for (int s = 0; s < prog->nsteps; s++) {
        const row_step *step = &prog->steps[s];
        void *other = cur == fz->stage_a ? fz->stage_b : fz->stage_a;
        bool writable = cur != in;
        void *target;
        if (step->chain) {
            target = step->to_out ? out : (writable ? (void *)cur : other);
            if (target != cur)
                memcpy(target, cur, cur_bytes);
            for (int j = 0; j < step->nops; j++) {
                const sl__compiled_op *c = fz->chain_ops[step->first_op + j];
                c->desc->ew_step(&ctx, c, element, &fz->chain_steps[step->first_op + j]);
            }
            k->ew_chain(target, (int64_t)(cur_bytes / sizeof(float)), &fz->chain_steps[step->first_op], step->nops);
        } else {
            const sl__compiled_op *c = step->op;
            bool in_place = c->desc->in_place && c->in_bytes == c->out_bytes && writable;
            target = step->to_out ? out : (in_place ? (void *)cur : other);
            if (target == cur && !c->desc->in_place)
                target = other;
            c->desc->rows(&ctx, c, &element, 1, cur, target, fz->op_scratch);
        }
        cur = target;
        cur_bytes = step->out_bytes;
    }
    if (cur != out)
        memcpy(out, cur, prog->out_bytes);
    return SL_OK;
}

/* Shuffled elements sit at unrelated addresses, so each one's first read
 * would miss the cache and wait. Asking for an element a few rows ahead
 * overlaps those misses with the work on the current row. Only the leading
 * lines are requested; the hardware prefetcher follows a row once it is read
 * in order. */
#define PREFETCH_DISTANCE 4
#define PREFETCH_MAX_BYTES 2048

static void prefetch_element(const sl_fused *fz, int64_t element)
{
    const sl_pipeline *p = fz->pipeline;
    for (int f = 0; f < p->source_schema.nfields; f++) {
        if (f == p->pack_field)
            continue;
        size_t bytes = fz->programs[f].item_bytes;
        const char *row = sl_source_map(p->source, f, (size_t)element * bytes, bytes);
        if (!row)
            continue;
        size_t span = bytes < PREFETCH_MAX_BYTES ? bytes : PREFETCH_MAX_BYTES;
        for (size_t offset = 0; offset < span; offset += 64)
            __builtin_prefetch(row + offset, 0, 3);
    }
}

sl_status sl_fused_run(sl_fused *fz, sl_position start, int64_t nbatches, sl_batch_sink sink, void *user,
                       sl_err *err)
{
    const sl_pipeline *p = fz->pipeline;
    if (start.epoch < 0 || start.batch < 0 || start.batch >= p->batches_per_epoch)
        return sl_fail(err, SL_EINVAL, "fused start epoch %lld batch %lld is outside [0, %lld) batches",
                       (long long)start.epoch, (long long)start.batch, (long long)p->batches_per_epoch);
    if (nbatches <= 0)
        nbatches = p->batches_per_epoch - start.batch;
    sl_batch *b = fz->batch;
    sl_position pos = start;
    for (int64_t i = 0; i < nbatches; i++) {
        sl__batch_begin(p, pos, b);
        for (int64_t r = 0; r < b->count; r++) {
            if (r + PREFETCH_DISTANCE < b->count)
                prefetch_element(fz, b->element_ids[r + PREFETCH_DISTANCE]);
            for (int f = 0; f < p->source_schema.nfields; f++) {
                void *out = (char *)b->fields[f].data + (size_t)r * fz->programs[f].out_bytes;
                sl_status st = run_row(fz, f, pos.epoch, b->element_ids[r], out, err);
                if (st)
                    return st;
            }
        }
        sl_status st = sl__run_batch_ops(p, fz->kernels, b, err);
        if (st)
            return st;
        if (sink && sink(b, user))
            break;
        pos = sl_position_advance(p, pos, 1);
    }
    return SL_OK;
}

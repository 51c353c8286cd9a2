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
#include "pipeline_internal.h"

typedef enum row_step_kind { STEP_NORMALIZE, STEP_CHAIN, STEP_CROP, STEP_FLIP } row_step_kind;

typedef struct row_step {
    row_step_kind kind;
    const sl__compiled_op *op;  /* NORMALIZE, CROP, FLIP */
    int first_ew, nsteps;       /* CHAIN: a slice of fused->ew_steps */
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
    void *move_scratch;         /* out-of-place target of crop */
    void *stage_a, *stage_b;    /* an element between movement ops, source dtype */
    sl_ew_step ew_steps[SL_MAX_OPS];
    int nfields;
    field_program programs[SL_MAX_FIELDS];
};

static void compile_program(sl_fused *fz, int field, int *ew_used)
{
    const sl_pipeline *p = fz->pipeline;
    field_program *prog = &fz->programs[field];
    prog->item_bytes = sl_field_element_bytes(&p->source_schema.fields[field]);
    prog->out_bytes = sl_field_element_bytes(&p->output_schema.fields[field]);
    for (int i = 0; i < p->ncompiled; i++) {
        const sl__compiled_op *c = &p->compiled[i];
        if (c->field != field || c->op->kind == SL_OP_PACK_TOKENS)
            continue;
        row_step *last = prog->nsteps ? &prog->steps[prog->nsteps - 1] : NULL;
        /* A normalize that reads the source keeps its own step: it is the
         * op that converts while copying, which is what saves a pass. */
        bool chainable = sl__op_fits_ew_chain(c) && !(c->op->kind == SL_OP_NORMALIZE && prog->nsteps == 0);
        if (chainable) {
            if (!last || last->kind != STEP_CHAIN)
                prog->steps[prog->nsteps++] = (row_step){STEP_CHAIN, NULL, *ew_used, 0};
            fz->ew_steps[(*ew_used)++] = sl__ew_step_of(c);
            prog->steps[prog->nsteps - 1].nsteps++;
            continue;
        }
        row_step_kind kind = c->op->kind == SL_OP_NORMALIZE     ? STEP_NORMALIZE
                             : c->op->kind == SL_OP_RANDOM_CROP ? STEP_CROP
                                                                : STEP_FLIP;
        prog->steps[prog->nsteps++] = (row_step){kind, c, 0, 0};
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
    int ew_used = 0;
    size_t scratch = 0;
    for (int f = 0; f < fz->nfields; f++) {
        compile_program(fz, f, &ew_used);
        if (fz->programs[f].item_bytes > scratch)
            scratch = fz->programs[f].item_bytes;
        if (fz->programs[f].out_bytes > scratch)
            scratch = fz->programs[f].out_bytes;
    }
    sl_status st = sl_batch_create(&pipeline->output_schema, pipeline->spec.batch_size, &fz->batch, err);
    if (st) {
        free(fz);
        return st;
    }
    fz->read_scratch = sl__aligned_alloc(SL_ALIGN, scratch);
    fz->move_scratch = sl__aligned_alloc(SL_ALIGN, scratch);
    fz->stage_a = sl__aligned_alloc(SL_ALIGN, scratch);
    fz->stage_b = sl__aligned_alloc(SL_ALIGN, scratch);
    if (!fz->read_scratch || !fz->move_scratch || !fz->stage_a || !fz->stage_b) {
        sl_fused_free(fz);
        return sl_fail(err, SL_ENOMEM, "cannot allocate fused scratch of %zu bytes", scratch);
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
    free(fz->move_scratch);
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
    /* cur is where the element's current value lives: the source view at
     * first, the output row once an op has written there. Movement ops on a
     * field that is still in its source dtype (a u8 image cropped before it
     * is normalized to f32) work in two staging buffers, because the output
     * row is laid out for the final dtype. */
    const void *cur = in;
    sl_dtype out_dtype = p->output_schema.fields[field].dtype;
    for (int s = 0; s < prog->nsteps; s++) {
        const row_step *step = &prog->steps[s];
        const sl__compiled_op *c = step->op;
        void *dst = out;
        if (step->kind == STEP_CROP || step->kind == STEP_FLIP)
            dst = c->in_dtype == out_dtype ? out : (cur == fz->stage_a ? fz->stage_b : fz->stage_a);
        switch (step->kind) {
        case STEP_NORMALIZE: {
            int64_t pixels = c->values / c->norm.channels;
            if (c->in_dtype == SL_U8)
                k->normalize_u8(cur, out, pixels, &c->norm);
            else
                k->normalize_f32(cur, out, pixels, &c->norm);
            break;
        }
        case STEP_CHAIN:
            if (cur != out)
                memcpy(out, cur, prog->out_bytes);
            k->ew_chain(out, (int64_t)(prog->out_bytes / sizeof(float)), &fz->ew_steps[step->first_ew],
                        step->nsteps);
            break;
        case STEP_CROP: {
            int oy, ox;
            sl__crop_offsets(p, c, epoch, element, &oy, &ox);
            size_t bytes = (size_t)c->h * (size_t)c->w * c->pixel_bytes;
            if (cur == dst) {
                k->crop_pad(cur, fz->move_scratch, c->h, c->w, c->pixel_bytes, c->op->u.crop.crop_h,
                            c->op->u.crop.crop_w, oy, ox);
                memcpy(dst, fz->move_scratch, bytes);
            } else {
                k->crop_pad(cur, dst, c->h, c->w, c->pixel_bytes, c->op->u.crop.crop_h, c->op->u.crop.crop_w, oy,
                            ox);
            }
            break;
        }
        case STEP_FLIP:
            if (cur != dst)
                memcpy(dst, cur, (size_t)c->h * (size_t)c->w * c->pixel_bytes);
            if (sl__flip_decision(p, c, epoch, element))
                k->hflip(dst, c->h, c->w, c->pixel_bytes);
            break;
        }
        cur = dst;
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
    for (int f = 0; f < fz->nfields; f++) {
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
            for (int f = 0; f < fz->nfields; f++) {
                void *out = (char *)b->fields[f].data + (size_t)r * fz->programs[f].out_bytes;
                sl_status st = run_row(fz, f, pos.epoch, b->element_ids[r], out, err);
                if (st)
                    return st;
            }
        }
        if (sink && sink(b, user))
            break;
        pos = sl_position_advance(p, pos, 1);
    }
    return SL_OK;
}

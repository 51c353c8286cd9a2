/* The fused executor: many batches a call, every buffer allocated up front,
 * and each element carried through its whole op chain while it is in cache.
 *
 * At creation each field's ops are compiled into a row program: runs of
 * element-wise f32 ops become one tiled chain call, and the first op reads
 * straight from the source's bytes (a mapped view when the source has one),
 * so an element is read once and written once. */
#include <stdlib.h>
#include <string.h>

#include "batch_ring.h"
#include "core/internal.h"
#include "gather.h"
#include "pipeline/bucket.h"
#include "pipeline/internal.h"
#include "pipeline/op_desc.h"
#include "pool.h"
#include "sluice/core/timing.h"
#include "sluice/exec/executors.h"
#include "source/check.h"
#include "split_choice.h"

/* One step of a field's row program: a run of chainable ops applied per
 * tile by one ew_chain call, or one op's own rows function. */
typedef struct row_step {
    bool chain;
    int first_op, nops;        /* chain: indices into fused->chain_ops */
    const sl__compiled_op *op; /* rows */
    /* The step writes into the output row: it produces the field's final
     * layout and every later step can work in place there. */
    bool to_out;
    size_t out_bytes;
} row_step;

typedef struct field_program {
    size_t item_bytes; /* source bytes of one element */
    size_t out_bytes;  /* output bytes of one element */
    int nsteps;
    row_step steps[SL_MAX_OPS];
} field_program;

/* A batch is split across threads only when each thread's share is worth
 * a wakeup: below this many output bytes (NLP-1's 16 KiB batch, say) the
 * handoff would cost more than the rows, so one thread runs it. */
#define SPLIT_MIN_BYTES ((size_t)64 * 1024)

/* What one thread needs to carry elements through their ops: every buffer
 * a row touches besides the source and the batch, so threads share nothing
 * they write. */
typedef struct lane {
    /* Each lane on lines of its own: a thread writes its lane's chain
     * steps for every row and its status at a failure, and lanes side by
     * side in one array would share the lines between them, each write
     * taking the line from the neighbouring thread (false sharing). */
    _Alignas(64) void *read_scratch; /* an element read from a source with no mapped view */
    void *op_scratch;                /* what an op's rows function asks for */
    void *stage_a, *stage_b;         /* an element between ops that change its layout */
    sl_ew_step chain_steps[SL_MAX_OPS];
    /* The lowest failing row among this lane's chunks of a batch. */
    int64_t failed_row;
    sl_status status;
    sl_err err;
} lane;

struct sl_fused {
    const sl_pipeline *pipeline;
    const sl_kernel_table *kernels;
    /* What rows are read from: the spec's source, or the kernels' cache. */
    const sl_source *source;
    /* The buffers batches are computed into, in turn (batch_ring.h): one
     * unless the executor splits batches. */
    sl_batch *ring[SL__BATCH_RING_MAX];
    int ring_size, ring_next;
    sl_batch *batch; /* the ring's buffer of the batch being computed */
    const sl__compiled_op *chain_ops[SL_MAX_OPS];
    int nfields;
    field_program programs[SL_MAX_FIELDS];
    sl__pool *pool; /* NULL with one thread */
    int threads;
    lane *lanes;          /* one per thread */
    int64_t epoch;        /* of the batch the lanes are computing */
    sl_position position; /* of that batch */
    bool ids_in_chunks;   /* each thread computes its own rows' ids */
    /* Whether splitting pays on this machine now, learned from the
     * batches' own times and revisited (split_choice.h). */
    sl__split_choice split_choice;
    bool last_split; /* how the batch last computed ran */
    /* A bucketed order's last sorted window: its next batches reuse it. */
    sl__bucket_cache bucket_cache;
};

/* Whether an op can be a step of the tile chain: one f32 value in, one out,
 * in place. A chain never starts a program: the first op reads the source
 * view directly, which saves the copy a chain would need. */
static bool chainable(const sl_fused *fz, const sl__compiled_op *c)
{
    sl_ew_step probe;
    sl__op_ctx ctx = {fz->pipeline, fz->kernels, 0};
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
        /* An op with an owner runs inside its owner's rows, not as a step. */
        if (c->field != field || c->desc->phase != SL__PHASE_ELEMENT || c->owner >= 0)
            continue;
        row_step *last = prog->nsteps ? &prog->steps[prog->nsteps - 1] : NULL;
        if (last && chainable(fz, c)) {
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

/* Touches every byte of a batch buffer, so that its pages are resident
 * before a batch is computed into it. A ring's buffers are first written by
 * its first batches, which are the split chooser's first trial
 * (split_choice.h), and its split block then paid their page faults where
 * the one-thread block after it reused them: on PR-2 the trial chose one
 * thread in every run, and of the 50 measured batches of a full-size
 * `sluice bench --threads auto` only 27 ran split (88 to 100 µs), the rest
 * on one thread (142 to 159 µs) until a re-trial switched. Resident, 43 of
 * 50 ran split (docs/adapters.md, "Two threads and the consumer"). */
static void make_resident(sl_batch *b)
{
    memset(b->element_ids, 0, (size_t)b->capacity * sizeof *b->element_ids);
    for (int f = 0; f < b->schema.nfields; f++)
        memset(b->fields[f].data, 0, sl_tensor_nbytes(&b->fields[f]));
}

static void free_lane(lane *l)
{
    free(l->read_scratch);
    free(l->op_scratch);
    free(l->stage_a);
    free(l->stage_b);
}

static bool alloc_lane(lane *l, size_t read_bytes, size_t scratch_bytes, size_t stage_bytes)
{
    l->read_scratch = sl__aligned_alloc(SL_ALIGN, read_bytes);
    l->op_scratch = sl__aligned_alloc(SL_ALIGN, scratch_bytes);
    l->stage_a = sl__aligned_alloc(SL_ALIGN, stage_bytes);
    l->stage_b = sl__aligned_alloc(SL_ALIGN, stage_bytes);
    return l->read_scratch && l->op_scratch && l->stage_a && l->stage_b;
}

sl_status sl_fused_create(const sl_pipeline *pipeline, const sl_kernel_table *kernels, sl_fused **out, sl_err *err)
{
    return sl_fused_create_threads(pipeline, kernels, 1, out, err);
}

sl_status sl_fused_create_threads(const sl_pipeline *pipeline, const sl_kernel_table *kernels, int threads,
                                  sl_fused **out, sl_err *err)
{
    *out = NULL;
    if (threads < 1 || threads > SL_FUSED_MAX_THREADS)
        return sl_fail(err, SL_EINVAL, "fused threads must be in [1, %d], got %d", SL_FUSED_MAX_THREADS, threads);
    const sl_source *source;
    sl_status source_status = sl__require_kernels(kernels, "the fused executor", err);
    if (source_status == SL_OK)
        source_status = sl__element_source(pipeline, kernels, &source, err);
    if (source_status)
        return source_status;
    sl_fused *fz = calloc(1, sizeof *fz);
    if (!fz)
        return sl_fail(err, SL_ENOMEM, "cannot allocate the fused executor");
    fz->pipeline = pipeline;
    fz->kernels = kernels;
    fz->source = source;
    fz->nfields = pipeline->output_schema.nfields;
    fz->threads = threads;
    sl__split_choice_init(&fz->split_choice);
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
    sl_status st = sl_batch_create(&pipeline->output_schema, pipeline->spec.batch_size, &fz->ring[0], err);
    if (st) {
        free(fz);
        return st;
    }
    fz->batch = fz->ring[0];
    fz->ring_size = 1;
    fz->lanes = sl__aligned_alloc(_Alignof(lane), (size_t)threads * sizeof *fz->lanes);
    if (fz->lanes)
        memset(fz->lanes, 0, (size_t)threads * sizeof *fz->lanes);
    if (!fz->lanes) {
        sl_fused_free(fz);
        return sl_fail(err, SL_ENOMEM, "cannot allocate %d fused lanes", threads);
    }
    for (int t = 0; t < threads; t++) {
        if (!alloc_lane(&fz->lanes[t], read_bytes, scratch_bytes, stage_bytes)) {
            sl_fused_free(fz);
            return sl_fail(err, SL_ENOMEM, "cannot allocate fused scratch of %zu bytes for thread %d", stage_bytes, t);
        }
    }
    /* Batches too small to split run on the caller's thread alone, so
     * their executor starts no worker to sit beside it and keeps one
     * buffer; one that may split computes batches into a ring of buffers,
     * so that its workers do not write lines the consumer still holds
     * (batch_ring.h). */
    if (threads > 1 && sl_batch_data_bytes(fz->batch) >= SPLIT_MIN_BYTES) {
        st = sl__pool_create(threads, &fz->pool, err);
        int ring_size = sl__batch_ring_size(sl_batch_data_bytes(fz->batch), sl__l2_cache_bytes());
        for (; !st && fz->ring_size < ring_size; fz->ring_size++)
            st = sl_batch_create(&pipeline->output_schema, pipeline->spec.batch_size, &fz->ring[fz->ring_size], err);
        if (st) {
            sl_fused_free(fz);
            return st;
        }
        if (fz->ring_size > 1)
            for (int i = 0; i < fz->ring_size; i++)
                make_resident(fz->ring[i]);
    }
    *out = fz;
    return SL_OK;
}

int sl_fused_threads(const sl_fused *fz)
{
    return fz->threads;
}

bool sl_fused_last_split(const sl_fused *fz)
{
    return fz->last_split;
}

void sl_fused_free(sl_fused *fz)
{
    if (!fz)
        return;
    sl__pool_free(fz->pool);
    sl__bucket_cache_release(&fz->bucket_cache);
    for (int i = 0; i < SL__BATCH_RING_MAX; i++)
        sl_batch_free(fz->ring[i]);
    for (int t = 0; fz->lanes && t < fz->threads; t++)
        free_lane(&fz->lanes[t]);
    free(fz->lanes);
    free(fz);
}

/* Runs one element of one field from the source to its output row. */
static sl_status run_row(const sl_fused *fz, lane *l, int field, int64_t epoch, int64_t element, void *out, sl_err *err)
{
    const sl_pipeline *p = fz->pipeline;
    const sl_kernel_table *k = fz->kernels;
    const field_program *prog = &fz->programs[field];
    if (field == p->pack_field)
        return sl__gather_element(p, fz->source, k, field, element, out, err);

    const void *in = sl_source_map(fz->source, field, (size_t)element * prog->item_bytes, prog->item_bytes);
    if (!in) {
        sl_status st = sl__gather_element(p, fz->source, k, field, element, l->read_scratch, err);
        if (st)
            return st;
        in = l->read_scratch;
    }
    /* cur is where the element's current value lives: the source view (read
     * only) at first, then a staging buffer or the output row. */
    const void *cur = in;
    size_t cur_bytes = prog->item_bytes;
    sl__op_ctx ctx = {p, k, epoch};
    for (int s = 0; s < prog->nsteps; s++) {
        const row_step *step = &prog->steps[s];
        void *other = cur == l->stage_a ? l->stage_b : l->stage_a;
        bool writable = cur != in;
        void *target;
        if (step->chain) {
            target = step->to_out ? out : (writable ? (void *)cur : other);
            if (target != cur)
                memcpy(target, cur, cur_bytes);
            for (int j = 0; j < step->nops; j++) {
                const sl__compiled_op *c = fz->chain_ops[step->first_op + j];
                c->desc->ew_step(&ctx, c, element, &l->chain_steps[step->first_op + j]);
            }
            k->ew_chain(target, (int64_t)(cur_bytes / sizeof(float)), &l->chain_steps[step->first_op], step->nops);
        } else {
            const sl__compiled_op *c = step->op;
            bool in_place = c->desc->in_place && c->in_bytes == c->out_bytes && writable;
            target = step->to_out ? out : (in_place ? (void *)cur : other);
            if (target == cur && !c->desc->in_place)
                target = other;
            c->desc->rows(&ctx, c, &element, 1, cur, target, l->op_scratch);
        }
        cur = target;
        cur_bytes = step->out_bytes;
    }
    if (cur != out)
        memcpy(out, cur, prog->out_bytes);
    return SL_OK;
}

/* A split batch's rows are claimed in chunks (pool.h). About four chunks a
 * thread let a fast thread take over a slow one's share, and a chunk of at
 * least 16 KiB of output keeps the claim (one atomic add on a line the
 * threads share) small beside the chunk's work. */
#define CHUNKS_PER_THREAD 4
#define CHUNK_MIN_BYTES   ((size_t)16 * 1024)

static int64_t chunk_rows(const sl_fused *fz, const sl_batch *b)
{
    size_t row_bytes = sl_batch_data_bytes(b) / (size_t)b->count;
    int64_t chunks = (int64_t)fz->threads * CHUNKS_PER_THREAD;
    int64_t by_share = (b->count + chunks - 1) / chunks;
    int64_t by_bytes = row_bytes ? (int64_t)((CHUNK_MIN_BYTES + row_bytes - 1) / row_bytes) : 1;
    return by_share > by_bytes ? by_share : by_bytes;
}

/* Runs rows [first, end) of the current batch, one chunk, on one thread,
 * up to its first failing row. A failure is kept with its row, so the error
 * reported is the first failing row's whatever the thread count and
 * whichever thread claimed which chunk: every chunk runs, and each stops
 * only at a failure, so no row before the batch's first failing row is
 * left out. */
static void run_rows(void *arg, int thread, int64_t first, int64_t end)
{
    sl_fused *fz = arg;
    const sl_pipeline *p = fz->pipeline;
    sl_batch *b = fz->batch;
    lane *l = &fz->lanes[thread];
    if (fz->ids_in_chunks)
        sl__batch_ids(p, fz->kernels, fz->position, first, end - first, b->element_ids + first);
    for (int64_t r = first; r < end; r++) {
        sl__prefetch_ahead(p, fz->source, b->element_ids, first, r, end);
        for (int f = 0; f < p->source_schema.nfields; f++) {
            void *out = (char *)b->fields[f].data + (size_t)r * fz->programs[f].out_bytes;
            sl_err row_err;
            sl_status st = run_row(fz, l, f, fz->epoch, b->element_ids[r], out, &row_err);
            if (st) {
                /* A lane may take a lower chunk (another thread's) after a
                 * higher one, so it keeps its lowest failing row, and it
                 * still runs the chunks it claims after a failure. */
                if (!l->status || r < l->failed_row) {
                    l->status = st;
                    l->failed_row = r;
                    l->err = row_err;
                }
                return;
            }
        }
    }
}

/* Computes the rows of the batch at position (its ids too, unless
 * ids_known: the probe reuses one batch's). A split batch's ids are
 * computed by each thread for its own chunks, since the keyed shuffle costs
 * about as much as a small row's arithmetic. */
static sl_status run_batch_rows(sl_fused *fz, sl_position position, bool ids_known, sl_err *err)
{
    sl_batch *b = fz->batch;
    const sl_pipeline *p = fz->pipeline;
    for (int t = 0; t < fz->threads; t++)
        fz->lanes[t].status = SL_OK;
    fz->position = position;
    fz->epoch = position.epoch;
    /* Every batch starts at full shape, the probe's repeated one too: a
     * batch op may have narrowed a field of the previous pass. */
    sl__batch_begin_without_ids(p, position, b);
    bool splittable = fz->pool && sl_batch_data_bytes(b) >= SPLIT_MIN_BYTES;
    bool split = splittable && sl__split_choice_next(&fz->split_choice);
    fz->last_split = split;
    /* Idle workers poll only while batches are split: on a vCPU that shares
     * a core a polling worker would slow the one thread running the batch. */
    if (splittable)
        sl__pool_set_polling(fz->pool, split);
    /* A bucketed order sorts a whole window per batch, so one thread finds
     * the batch's ids rather than every thread its chunks. */
    fz->ids_in_chunks = !ids_known && !p->bucket;
    if (!ids_known && p->bucket) {
        sl_status st = sl__batch_all_ids(p, fz->kernels, position, b->count, b->element_ids, &fz->bucket_cache, err);
        if (st)
            return st;
    }
    int64_t started = sl_now_ns();
    if (split)
        sl__pool_run(fz->pool, run_rows, fz, b->count, chunk_rows(fz, b));
    else
        run_rows(fz, 0, 0, b->count);
    if (splittable)
        sl__split_choice_record(&fz->split_choice, sl_now_ns() - started);
    const lane *failed = NULL;
    for (int t = 0; t < fz->threads; t++)
        if (fz->lanes[t].status && (!failed || fz->lanes[t].failed_row < failed->failed_row))
            failed = &fz->lanes[t];
    if (!failed)
        return sl__source_check(fz->source, err);
    if (err)
        *err = failed->err;
    return failed->status;
}

sl_status sl_fused_run(sl_fused *fz, sl_position start, int64_t nbatches, sl_batch_sink sink, void *user, sl_err *err)
{
    const sl_pipeline *p = fz->pipeline;
    if (start.epoch < 0 || start.epoch > SL_MAX_EPOCH || start.batch < 0 || start.batch >= p->batches_per_epoch)
        return sl_fail(err, SL_EINVAL, "fused start epoch %lld batch %lld is outside [0, %lld) batches",
                       (long long)start.epoch, (long long)start.batch, (long long)p->batches_per_epoch);
    if (nbatches <= 0)
        nbatches = p->batches_per_epoch - start.batch;
    sl_position pos = start;
    for (int64_t i = 0; i < nbatches; i++) {
        sl_batch *b = fz->batch = fz->ring[fz->ring_next];
        fz->ring_next = (fz->ring_next + 1) % fz->ring_size;
        sl_status st = run_batch_rows(fz, pos, false, err);
        if (st)
            return st;
        st = sl__run_batch_ops(p, fz->kernels, b, err);
        if (st)
            return st;
        if (sink && sink(b, user))
            break;
        pos = sl_position_advance(p, pos, 1);
    }
    return SL_OK;
}

/* The probe's batch stays the same, so after the first pass its elements
 * and the output are in cache, and what is timed is the op chain itself:
 * no shuffle (the ids are computed once), no allocation, no sink. */
sl_status sl_fused_probe(sl_fused *fz, int repetitions, double *ns_per_batch, sl_err *err)
{
    const sl_pipeline *p = fz->pipeline;
    if (repetitions < 1)
        return sl_fail(err, SL_EINVAL, "the probe needs at least 1 repetition, got %d", repetitions);
    int64_t *samples = malloc((size_t)repetitions * sizeof *samples);
    if (!samples)
        return sl_fail(err, SL_ENOMEM, "cannot allocate %d probe samples", repetitions);
    sl_batch *b = fz->batch;
    sl_status st = run_batch_rows(fz, (sl_position){0, 0}, false, err);
    for (int r = 0; r < repetitions && !st; r++) {
        int64_t start = sl_now_ns();
        st = run_batch_rows(fz, (sl_position){0, 0}, true, err);
        if (!st)
            st = sl__run_batch_ops(p, fz->kernels, b, err);
        samples[r] = sl_now_ns() - start;
    }
    if (!st)
        *ns_per_batch = sl_percentile_i64(samples, (size_t)repetitions, 50.0);
    free(samples);
    return st;
}

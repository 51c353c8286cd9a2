/* The device executor (exec/device_run.h): a pipeline's batches on a device.
 *
 * Like the unfused executor (produce.c) it runs each op over the whole
 * batch in turn, the element phase field by field and then the batch ops,
 * so every op's device path is its rows or batch function over a batch:
 * consecutive element-wise steps on a field become one chain launch (their
 * ew_steps, drawn per row on the host when they are random), every other op
 * runs through its descriptor's device hook. An op whose per-element
 * decisions follow a rule (its `decide`, kernels/decide.h) has them drawn on
 * the device, every row by the rule, in one launch per batch: the same
 * function of the same key and counter the host runs, so no per-row
 * decision of it is computed on the host. Everything else an op decides at
 * random is decided on the host by the same functions `sluice export` hands
 * to peers (decisions, batch_decisions, ew_step), so the device computes
 * what the reference computes, and a captured graph replays any batch: per
 * batch values travel in device memory, never in launch arguments.
 *
 * A pipeline with a cache op keeps the ops before the cache on the device:
 * each element's output of them is computed the first time a batch needs it
 * (its "miss") and kept in a device buffer indexed by element, from which
 * every batch gathers its rows.
 *
 * A pipeline whose source is held in host memory (not read from storage,
 * whose reads every batch keeps) and fits in the device's free memory
 * beside the batch buffers, and whose rows the host needs for nothing,
 * keeps the whole source on the device: it is placed there once, before the first batch
 * (sl_device_run_place), and each batch gathers its rows on the device by
 * its element ids (a token stream's windows packed there). Any other
 * streams its rows: the host gathers them into
 * the slot's page-locked staging, and the copy in overlaps the other
 * slot's kernels. */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "exec/device_run.h"
#include "gather.h"
#include "pipeline/bucket.h"
#include "pipeline/internal.h"
#include "pipeline/op_desc.h"
#include "source/check.h"

#define MAX_SLOTS 2

/* One step of a plan: a chain of fused element-wise steps, or one op. */
typedef struct plan_step {
    bool chain;
    int op;                /* the op (not a chain) */
    int first, count;      /* a chain: its ops, chain_ops[first .. first + count) */
    bool per_row;          /* a chain with a random step: all its steps come from the row table */
    int row_first;         /* its first column of the row table */
    sl_device_chain steps; /* a chain without: its steps, the same for every row */
} plan_step;

/* The ops a sequence runs: a field's element phase, or a sub-chain. */
typedef struct plan {
    int nsteps;
    plan_step steps[SL_MAX_OPS];
} plan;

/* What runs on the device for one pipeline: the run's pipeline, or with a
 * cache op the prefix before it. */
typedef struct stage {
    const sl_pipeline *p;
    plan *fields[SL_MAX_FIELDS]; /* the element phase of each source field */
    plan *nested[SL_MAX_OPS];    /* by the index of a sub-chain's first op */
    int chain_ops[SL_MAX_OPS];
    int nchain_ops;
} stage;

typedef struct slot {
    void *host_in[SL_MAX_FIELDS]; /* page-locked: the gathered rows, source layout */
    void *host_block;             /* page-locked: ids, batch, decisions, row steps, parameters, misses */
    void *dev_block;
    void *dev_in[SL_MAX_FIELDS];
    void *dev_buf[SL_MAX_FIELDS][2];
    void *dev_scratch;
    void *dev_nested;            /* a sub-chain's working rows */
    void *result[SL_MAX_FIELDS]; /* each output field's rows once enqueued */
    int64_t rows;
    int64_t misses;
    sl_batch *out; /* the host batch: per-batch shapes, and the fetched outputs */
} slot;

struct sl_device_run {
    const sl_pipeline *p;
    const sl_kernel_table *kernels;
    const sl_device *dev;
    const sl_source *source; /* the host's source (the prefix's with a cache) */
    int64_t capacity;
    int nslots;
    stage main, prefix;
    bool cached;
    /* The source on the device, each field's rows in the source's order,
     * and whether it is there (else the batches stream their rows). */
    bool resident;
    void *dev_source[SL_MAX_FIELDS];
    /* The block the host fills for each batch, and where its parts start. */
    size_t block_bytes, off_ids, off_batch, off_decisions, off_steps, off_misses;
    int decision_stride;
    int decision_first[SL_MAX_OPS];
    /* The ops whose decisions the device draws, by their rules. */
    sl_device_rules rules;
    bool device_decides[SL_MAX_OPS];
    /* The row table's steps by rule, one rule a column: on the host, and
     * copied once to the device, which draws every row's steps by them. */
    sl_step_rule *step_rules;
    void *dev_step_rules;
    int row_steps;
    size_t param_off[SL_MAX_OPS];
    void *state[SL_MAX_OPS];
    size_t scratch_bytes, nested_bytes;
    size_t in_bytes[SL_MAX_FIELDS];  /* a gathered row of each source field */
    size_t buf_bytes[SL_MAX_FIELDS]; /* the largest row of each field at any stage */
    /* The cache: each element's output of the prefix, by element. */
    void *dev_cache[SL_MAX_FIELDS];
    size_t cache_row[SL_MAX_FIELDS];
    unsigned char *filled;
    int64_t cache_rows;
    slot slots[MAX_SLOTS];
};

static sl_status device_fail(sl_err *err, const sl_device_run *run, int e, const char *what)
{
    return sl_fail(err, e == SL_DEVICE_EUNSUPPORTED ? SL_EUNSUPPORTED : SL_EIO, "the %s device: %s failed: %s",
                   run->dev->name, what, run->dev->error_string(e));
}

#define DEVICE_TRY(call, what)                                                                                         \
    do {                                                                                                               \
        int e_ = (call);                                                                                               \
        if (e_)                                                                                                        \
            return device_fail(err, run, e_, what);                                                                    \
    } while (0)

static size_t align8(size_t bytes)
{
    return (bytes + 7) / 8 * 8;
}

/* ---- Planning --------------------------------------------------------- */

/* An op that is one step of the device's element-wise chain: f32 in and
 * out, in place, with a step the chain interpreter knows and, when random,
 * a rule the device draws each row's step by. */
static bool chainable(const stage *s, const sl__compiled_op *c)
{
    sl_ew_step probe;
    sl__op_ctx ctx = {s->p, NULL, 0};
    return c->desc->ew_step && (!c->desc->random || c->desc->step_rule) && c->desc->in_place && c->in_dtype == SL_F32 &&
           c->out_dtype == SL_F32 && c->in_bytes == c->out_bytes && c->desc->ew_step(&ctx, c, 0, &probe) &&
           (unsigned)probe.kind < SL_EW_OPCODE_COUNT;
}

/* The plan of ops [from, to) of the spec that act on `field` as top-level
 * element ops (owner -1) or as the sub-chain of `owner`. */
static sl_status plan_ops(sl_device_run *run, stage *s, plan *out, int field, int owner, int from, int to, sl_err *err)
{
    const sl_pipeline *p = s->p;
    out->nsteps = 0;
    plan_step *chain = NULL;
    for (int i = from; i < to; i++) {
        const sl__compiled_op *c = &p->compiled[i];
        if (c->field != field || c->owner != owner || !c->desc || c->desc->phase != SL__PHASE_ELEMENT)
            continue;
        if (chainable(s, c)) {
            if (!chain || chain->count == SL_DEVICE_MAX_STEPS) {
                chain = &out->steps[out->nsteps++];
                *chain = (plan_step){.chain = true, .first = s->nchain_ops};
            }
            s->chain_ops[s->nchain_ops++] = i;
            chain->count++;
            chain->per_row |= c->desc->random;
            continue;
        }
        chain = NULL;
        if (!c->desc->device_rows)
            return sl_fail(err, SL_EUNSUPPORTED, "op %d (%s) has no device path", i, sl__op_name(c));
        out->steps[out->nsteps++] = (plan_step){.op = i};
    }
    /* Constant chains carry their steps; random ones take columns of the
     * row table, one per step. */
    for (int k = 0; k < out->nsteps; k++) {
        plan_step *st = &out->steps[k];
        if (!st->chain)
            continue;
        if (st->per_row) {
            st->row_first = run->row_steps;
            run->row_steps += st->count;
            continue;
        }
        sl__op_ctx ctx = {p, run->kernels, 0};
        st->steps.nsteps = st->count;
        for (int j = 0; j < st->count; j++) {
            const sl__compiled_op *c = &p->compiled[s->chain_ops[st->first + j]];
            c->desc->ew_step(&ctx, c, 0, &st->steps.steps[j]);
        }
    }
    return SL_OK;
}

static sl_status plan_stage(sl_device_run *run, stage *s, const sl_pipeline *p, sl_err *err)
{
    s->p = p;
    for (int i = 0; i < p->ncompiled; i++) {
        const sl__compiled_op *c = &p->compiled[i];
        if (!c->desc || (p->cache_at >= 0 && i <= p->cache_at))
            continue;
        if (c->desc->phase == SL__PHASE_BATCH && !c->desc->device_batch)
            return sl_fail(err, SL_EUNSUPPORTED, "op %d (%s) has no device path", i, sl__op_name(c));
        const char *missing = c->desc->device_missing ? c->desc->device_missing(run->dev) : NULL;
        if (missing)
            return sl_fail(err, SL_EUNSUPPORTED, "op %d (%s) cannot run on the %s device: %s", i, sl__op_name(c),
                           run->dev->name, missing);
        /* A cached run keeps the gathered rows on the device, so an op that
         * reads them on the host has nothing to read. */
        if (c->desc->device_params && run->cached && p == run->p)
            return sl_fail(err, SL_EUNSUPPORTED,
                           "op %d (%s) reads the batch's gathered rows on the host, which a cached pipeline keeps "
                           "on the device",
                           i, sl__op_name(c));
        if (c->desc->nested) {
            /* Its sub-chains: branch a, then branch b after it. */
            int a = c->op->u.sub.ops_a, b = c->op->u.sub.ops_b;
            int bounds[3] = {i + 1, i + 1 + a, i + 1 + a + b};
            for (int branch = 0; branch < 2; branch++) {
                if (bounds[branch + 1] == bounds[branch])
                    continue;
                s->nested[bounds[branch]] = calloc(1, sizeof(plan));
                if (!s->nested[bounds[branch]])
                    return sl_fail(err, SL_ENOMEM, "cannot allocate a device plan");
                sl_status st =
                    plan_ops(run, s, s->nested[bounds[branch]], c->field, i, bounds[branch], bounds[branch + 1], err);
                if (st)
                    return st;
            }
        }
    }
    for (int f = 0; f < p->source_schema.nfields; f++) {
        s->fields[f] = calloc(1, sizeof(plan));
        if (!s->fields[f])
            return sl_fail(err, SL_ENOMEM, "cannot allocate a device plan");
        sl_status st = plan_ops(run, s, s->fields[f], f, -1, 0, p->ncompiled, err);
        if (st)
            return st;
    }
    return SL_OK;
}

static void free_stage(stage *s)
{
    for (int f = 0; f < SL_MAX_FIELDS; f++)
        free(s->fields[f]);
    for (int i = 0; i < SL_MAX_OPS; i++)
        free(s->nested[i]);
}

/* Every plan of a stage: its fields' element phases and its sub-chains. */
static int stage_plans(const stage *s, const plan **plans)
{
    int nplans = 0;
    for (int f = 0; f < SL_MAX_FIELDS; f++)
        if (s->fields[f])
            plans[nplans++] = s->fields[f];
    for (int i = 0; i < SL_MAX_OPS; i++)
        if (s->nested[i])
            plans[nplans++] = s->nested[i];
    return nplans;
}

/* The rule of each column of the main stage's row table, which the device
 * draws every row's steps by: a constant op's step as it is, a random op's
 * by its step_rule (a random op without one is no chain step, chainable). */
static sl_status plan_step_rules(sl_device_run *run, sl_err *err)
{
    const stage *s = &run->main;
    if (run->row_steps == 0)
        return SL_OK;
    run->step_rules = calloc((size_t)run->row_steps, sizeof *run->step_rules);
    if (!run->step_rules)
        return sl_fail(err, SL_ENOMEM, "cannot allocate the device's step rules");
    sl__op_ctx ctx = {s->p, run->kernels, 0};
    const plan *plans[2 * SL_MAX_OPS];
    int nplans = stage_plans(s, plans);
    for (int k = 0; k < nplans; k++)
        for (int j = 0; j < plans[k]->nsteps; j++) {
            const plan_step *st = &plans[k]->steps[j];
            for (int q = 0; st->chain && st->per_row && q < st->count; q++) {
                const sl__compiled_op *c = &s->p->compiled[s->chain_ops[st->first + q]];
                sl_step_rule *rule = &run->step_rules[st->row_first + q];
                if (c->desc->random)
                    c->desc->step_rule(&ctx, c, rule);
                else
                    c->desc->ew_step(&ctx, c, 0, &rule->base);
            }
        }
    return SL_OK;
}

/* The host block: ids, the batch, every op's decisions, the row table,
 * the ops' per-batch blocks and, with a cache, the misses. */
static void lay_out_block(sl_device_run *run)
{
    const sl_pipeline *p = run->p;
    size_t at = 0;
    run->off_ids = at;
    at += align8((size_t)run->capacity * sizeof(int64_t));
    run->off_batch = at;
    at += align8(sizeof(sl_device_batch));
    for (int i = 0; i < p->ncompiled; i++) {
        const sl__compiled_op *c = &p->compiled[i];
        run->decision_first[i] = run->decision_stride;
        if (!c->desc || !c->desc->decisions || c->desc->phase != SL__PHASE_ELEMENT)
            continue;
        run->decision_stride += sl__column_count(c->desc->decision_columns);
        if (c->desc->decide && run->rules.nrules < SL_DEVICE_MAX_RULES) {
            /* The epoch is the batch's, read on the device: any will do. */
            sl__op_ctx ctx = {p, run->kernels, 0};
            sl_decide_rule *rule = &run->rules.rules[run->rules.nrules++];
            c->desc->decide(&ctx, c, rule);
            rule->first = run->decision_first[i];
            run->device_decides[i] = true;
        }
    }
    run->off_decisions = at;
    at += align8((size_t)run->capacity * (size_t)run->decision_stride * sizeof(int32_t));
    run->off_steps = at;
    at += align8((size_t)run->capacity * (size_t)run->row_steps * sizeof(sl_ew_step));
    for (int i = 0; i < p->ncompiled; i++) {
        const sl__compiled_op *c = &p->compiled[i];
        run->param_off[i] = at;
        if (!c->desc)
            continue;
        if (c->desc->batch_decisions)
            at += sl__device_partners_offset(c->desc) + align8((size_t)run->capacity * sizeof(int64_t));
        else if (c->desc->device_params)
            at += align8(c->desc->device_params_bytes);
    }
    run->off_misses = at;
    at += align8((size_t)run->capacity * sizeof(int64_t));
    run->block_bytes = at;
}

/* ---- Buffers ---------------------------------------------------------- */

static sl_status alloc_device(sl_device_run *run, void **ptr, size_t bytes, sl_err *err)
{
    DEVICE_TRY(run->dev->alloc(ptr, bytes ? bytes : 8), "allocating device memory");
    return SL_OK;
}

static void row_sizes(sl_device_run *run)
{
    const sl_pipeline *p = run->p;
    for (int f = 0; f < p->output_schema.nfields; f++) {
        size_t bytes = sl_field_element_bytes(&p->output_schema.fields[f]);
        if (f < p->source_schema.nfields) {
            run->in_bytes[f] = f == p->pack_field ? (size_t)p->seq_len * sizeof(int32_t)
                                                  : sl_field_element_bytes(&p->source_schema.fields[f]);
            if (p->max_element_bytes[f] > bytes)
                bytes = p->max_element_bytes[f];
            if (run->in_bytes[f] > bytes)
                bytes = run->in_bytes[f];
        }
        run->buf_bytes[f] = bytes;
    }
}

/* What every op needs of device scratch and sub-chains of working rows. */
static void scratch_sizes(sl_device_run *run, const sl_pipeline *p)
{
    for (int i = 0; i < p->ncompiled; i++) {
        const sl__compiled_op *c = &p->compiled[i];
        if (!c->desc)
            continue;
        if (c->desc->device_scratch) {
            size_t bytes = c->desc->device_scratch(run->dev, c, run->capacity);
            if (bytes > run->scratch_bytes)
                run->scratch_bytes = bytes;
        }
        if (c->owner >= 0 && (size_t)run->capacity * c->in_bytes > run->nested_bytes)
            run->nested_bytes = (size_t)run->capacity * c->in_bytes;
    }
}

static sl_status alloc_slot(sl_device_run *run, slot *sl, sl_err *err)
{
    const sl_pipeline *p = run->p;
    const sl_device *dev = run->dev;
    int64_t cap = run->capacity;
    const sl_schema *in_schema = run->cached ? &run->prefix.p->source_schema : &p->source_schema;
    for (int f = 0; f < in_schema->nfields; f++) {
        size_t bytes = (size_t)cap * (run->cached ? sl_field_element_bytes(&in_schema->fields[f]) : run->in_bytes[f]);
        DEVICE_TRY(dev->host_alloc(&sl->host_in[f], bytes ? bytes : 8), "allocating page-locked memory");
    }
    DEVICE_TRY(dev->host_alloc(&sl->host_block, run->block_bytes), "allocating page-locked memory");
    memset(sl->host_block, 0, run->block_bytes);
    sl_status st = alloc_device(run, &sl->dev_block, run->block_bytes, err);
    for (int f = 0; f < p->output_schema.nfields && !st; f++) {
        size_t bytes = (size_t)cap * run->buf_bytes[f];
        if (f < p->source_schema.nfields)
            st = alloc_device(run, &sl->dev_in[f], bytes, err);
        for (int k = 0; k < 2 && !st; k++)
            st = alloc_device(run, &sl->dev_buf[f][k], bytes, err);
    }
    if (!st && run->scratch_bytes)
        st = alloc_device(run, &sl->dev_scratch, run->scratch_bytes, err);
    if (!st && run->nested_bytes)
        st = alloc_device(run, &sl->dev_nested, run->nested_bytes, err);
    if (!st)
        st = sl_batch_create(&p->output_schema, cap, &sl->out, err);
    return st;
}

static void free_slot(sl_device_run *run, slot *sl)
{
    const sl_device *dev = run->dev;
    for (int f = 0; f < SL_MAX_FIELDS; f++) {
        if (sl->host_in[f])
            dev->host_release(sl->host_in[f]);
        if (sl->dev_in[f])
            dev->release(sl->dev_in[f]);
        for (int k = 0; k < 2; k++)
            if (sl->dev_buf[f][k])
                dev->release(sl->dev_buf[f][k]);
    }
    if (sl->host_block)
        dev->host_release(sl->host_block);
    if (sl->dev_block)
        dev->release(sl->dev_block);
    if (sl->dev_scratch)
        dev->release(sl->dev_scratch);
    if (sl->dev_nested)
        dev->release(sl->dev_nested);
    sl_batch_free(sl->out);
}

static sl_status setup_cache(sl_device_run *run, sl_err *err)
{
    const sl_pipeline *prefix = run->prefix.p;
    run->cache_rows = sl_pipeline_dataset_size(prefix);
    run->filled = calloc((size_t)run->cache_rows + 1, 1);
    if (!run->filled)
        return sl_fail(err, SL_ENOMEM, "cannot allocate the device cache's map of %lld elements",
                       (long long)run->cache_rows);
    for (int f = 0; f < prefix->output_schema.nfields; f++) {
        run->cache_row[f] = sl_field_element_bytes(&prefix->output_schema.fields[f]);
        sl_status st = alloc_device(run, &run->dev_cache[f], (size_t)run->cache_rows * run->cache_row[f], err);
        if (st)
            return st;
    }
    return SL_OK;
}

/* Whether every part of the source holds its bytes in host memory (a
 * memory or a mapped source, which gives a view of them): a source read
 * from storage (pread, a stream) keeps its reads in every batch, as on the
 * CPU, so that the I/O scenarios measure them. */
static bool source_in_memory(const sl_source *source)
{
    int64_t rows[SL_MAX_PARTS];
    int nparts = sl_source_parts(source, rows, SL_MAX_PARTS);
    for (int k = 0; k < nparts; k++) {
        const sl_source *part = sl_source_part(source, k);
        for (int f = 0; part && rows[k] > 0 && f < sl_source_schema(part)->nfields; f++)
            if (!sl_source_map(part, f, 0, sl_source_field_bytes(part, f)))
                return false;
    }
    return nparts > 0;
}

/* Whether the batches could gather their rows from a copy of the source
 * on the device: the source is in host memory, no cache stands between,
 * and no op reads the gathered rows on the host. */
static bool could_be_resident(const sl_device_run *run)
{
    const sl_pipeline *p = run->p;
    if (run->cached || !source_in_memory(run->source))
        return false;
    for (int i = 0; i < p->ncompiled; i++)
        if (p->compiled[i].desc && p->compiled[i].desc->device_params)
            return false;
    return true;
}

/* The bytes of the whole source as the device would hold it. */
static size_t source_bytes(const sl_device_run *run)
{
    size_t bytes = 0;
    for (int f = 0; f < run->p->source_schema.nfields; f++)
        bytes += sl_source_field_bytes(run->source, f);
    return bytes;
}

/* The pipeline's buffers against the device's free memory: a variant that
 * does not fit is skipped with the amounts, not failed. The source is
 * placed on the device when it fits there beside them. */
static sl_status check_fit(sl_device_run *run, int64_t source_limit_bytes, sl_err *err)
{
    size_t need = (size_t)run->nslots * (run->block_bytes + run->scratch_bytes + run->nested_bytes);
    for (int f = 0; f < run->p->output_schema.nfields; f++)
        need += (size_t)run->nslots * 3 * (size_t)run->capacity * run->buf_bytes[f];
    if (run->cached)
        for (int f = 0; f < run->prefix.p->output_schema.nfields; f++)
            need += (size_t)run->cache_rows * run->cache_row[f];
    size_t free_bytes = 0, total_bytes = 0;
    DEVICE_TRY(run->dev->memory(&free_bytes, &total_bytes), "reading the device's free memory");
    if (need > free_bytes)
        return sl_fail(err, SL_ESKIPPED, "the batch buffers need %.2f GB of device memory, %.2f GB are free",
                       (double)need / 1e9, (double)free_bytes / 1e9);
    size_t room = free_bytes - need;
    if (source_limit_bytes >= 0 && (size_t)source_limit_bytes < room)
        room = (size_t)source_limit_bytes;
    run->resident = could_be_resident(run) && source_bytes(run) <= room;
    return SL_OK;
}

static sl_status setup_resident_source(sl_device_run *run, sl_err *err)
{
    for (int f = 0; f < run->p->source_schema.nfields; f++) {
        sl_status st = alloc_device(run, &run->dev_source[f], sl_source_field_bytes(run->source, f), err);
        if (st)
            return st;
    }
    return SL_OK;
}

sl_status sl_device_run_place(sl_device_run *run, void *stream, sl_err *err)
{
    if (run->row_steps > 0) {
        DEVICE_TRY(run->dev->copy(run->dev_step_rules, run->step_rules, (size_t)run->row_steps * sizeof(sl_step_rule),
                                  SL_DEVICE_HOST_TO_DEVICE, stream),
                   "copying the step rules to the device");
        DEVICE_TRY(run->dev->stream_sync(stream), "waiting for the step rules' copy");
    }
    if (!run->resident)
        return SL_OK;
    /* Through slot 0's staging, a batch's bytes at a time: page-locked
     * memory copies at the bus's speed, where a mapped file's pages would
     * be faulted in by the copy itself. */
    slot *sl = &run->slots[0];
    for (int f = 0; f < run->p->source_schema.nfields; f++) {
        size_t total = sl_source_field_bytes(run->source, f), chunk = (size_t)run->capacity * run->in_bytes[f];
        for (size_t at = 0; at < total; at += chunk) {
            size_t bytes = total - at < chunk ? total - at : chunk;
            sl_status st = sl_source_read(run->source, f, at, bytes, sl->host_in[f], err);
            if (st)
                return sl_fail_context(err, "placing the source on the %s device", run->dev->name);
            DEVICE_TRY(run->dev->copy((char *)run->dev_source[f] + at, sl->host_in[f], bytes, SL_DEVICE_HOST_TO_DEVICE,
                                      stream),
                       "copying the source to the device");
            DEVICE_TRY(run->dev->stream_sync(stream), "waiting for the source's copy");
        }
    }
    return SL_OK;
}

bool sl_device_run_resident(const sl_device_run *run)
{
    return run->resident;
}

sl_status sl_device_run_create(const sl_pipeline *pipeline, const sl_kernel_table *kernels, const sl_device *device,
                               int slots, int64_t source_limit_bytes, sl_device_run **out, sl_err *err)
{
    *out = NULL;
    sl_status st = sl__require_kernels(kernels, "the device executor", err);
    if (st)
        return st;
    if (slots < 1 || slots > MAX_SLOTS)
        return sl_fail(err, SL_EINVAL, "the device executor holds 1 to %d batches in flight, not %d", MAX_SLOTS, slots);
    sl_device_run *run = calloc(1, sizeof *run);
    if (!run)
        return sl_fail(err, SL_ENOMEM, "cannot allocate the device executor");
    run->p = pipeline;
    run->kernels = kernels;
    run->dev = device;
    run->capacity = pipeline->spec.batch_size;
    run->nslots = slots;
    run->cached = pipeline->cache_at >= 0;
    run->source = run->cached ? pipeline->prefix->source : pipeline->source;
    if (run->cached)
        st = plan_stage(run, &run->prefix, pipeline->prefix, err);
    if (!st)
        st = plan_stage(run, &run->main, pipeline, err);
    if (!st) {
        lay_out_block(run);
        row_sizes(run);
        scratch_sizes(run, pipeline);
        if (run->cached)
            scratch_sizes(run, pipeline->prefix);
        if (run->cached)
            run->cache_rows = sl_pipeline_dataset_size(pipeline->prefix);
        st = check_fit(run, source_limit_bytes, err);
    }
    for (int i = 0; i < pipeline->ncompiled && !st; i++) {
        const sl__compiled_op *c = &pipeline->compiled[i];
        if (c->desc && c->desc->device_setup) {
            int e = c->desc->device_setup(device, c, &run->state[i]);
            if (e)
                st = device_fail(err, run, e, "preparing an op's device constants");
        }
    }
    if (!st && run->cached)
        st = setup_cache(run, err);
    if (!st && run->resident)
        st = setup_resident_source(run, err);
    if (!st)
        st = plan_step_rules(run, err);
    if (!st && run->row_steps > 0)
        st = alloc_device(run, &run->dev_step_rules, (size_t)run->row_steps * sizeof(sl_step_rule), err);
    for (int k = 0; k < slots && !st; k++)
        st = alloc_slot(run, &run->slots[k], err);
    if (st) {
        sl_device_run_free(run);
        return st;
    }
    *out = run;
    return SL_OK;
}

void sl_device_run_free(sl_device_run *run)
{
    if (!run)
        return;
    for (int k = 0; k < MAX_SLOTS; k++)
        free_slot(run, &run->slots[k]);
    for (int i = 0; i < run->p->ncompiled; i++) {
        const sl__compiled_op *c = &run->p->compiled[i];
        if (run->state[i] && c->desc->device_release)
            c->desc->device_release(run->dev, run->state[i]);
    }
    for (int f = 0; f < SL_MAX_FIELDS; f++) {
        if (run->dev_cache[f])
            run->dev->release(run->dev_cache[f]);
        if (run->dev_source[f])
            run->dev->release(run->dev_source[f]);
    }
    if (run->dev_step_rules)
        run->dev->release(run->dev_step_rules);
    free(run->step_rules);
    free(run->filled);
    free_stage(&run->main);
    free_stage(&run->prefix);
    free(run);
}

/* ---- The host's part of a batch --------------------------------------- */

static void *block_at(const slot *sl, size_t offset)
{
    return (char *)sl->host_block + offset;
}

/* Each random op's per-row decisions that no rule describes, row by row, by
 * the functions the CPU executors run (the device draws the rest, and
 * every chain's steps). */
static void fill_rows(sl_device_run *run, slot *sl, const stage *s, const int64_t *ids, int64_t rows, int64_t epoch)
{
    const sl_pipeline *p = s->p;
    sl__op_ctx ctx = {p, run->kernels, epoch};
    int32_t *decisions = block_at(sl, run->off_decisions);
    for (int i = 0; i < p->ncompiled; i++) {
        const sl__compiled_op *c = &p->compiled[i];
        if (!c->desc || !c->desc->decisions || c->desc->phase != SL__PHASE_ELEMENT || run->device_decides[i])
            continue;
        for (int64_t r = 0; r < rows; r++)
            c->desc->decisions(&ctx, c, ids[r], decisions + r * run->decision_stride + run->decision_first[i]);
    }
}

/* The batch ops' per-batch blocks, and the narrowing of the host batch's
 * shapes they make. */
static void fill_batch_params(sl_device_run *run, slot *sl, const sl_batch *gathered)
{
    const sl_pipeline *p = run->p;
    sl__op_ctx ctx = {p, run->kernels, sl->out->epoch};
    for (int i = 0; i < p->ncompiled; i++) {
        const sl__compiled_op *c = &p->compiled[i];
        if (!c->desc || (p->cache_at >= 0 && i <= p->cache_at))
            continue;
        void *params = block_at(sl, run->param_off[i]);
        if (c->desc->batch_decisions) {
            int64_t *partner = (int64_t *)((char *)params + sl__device_partners_offset(c->desc));
            c->desc->batch_decisions(&ctx, c, sl->out, params, c->desc->batch_partners ? partner : NULL);
        } else if (c->desc->device_params) {
            c->desc->device_params(&ctx, c, gathered, sl->out, params);
        }
    }
}

/* Gathers a row of each source field of element `element` into the slot's
 * staging, the way every executor gathers. */
static sl_status gather_row(sl_device_run *run, slot *sl, const sl_pipeline *p, int64_t element, int64_t row,
                            sl_err *err)
{
    for (int f = 0; f < p->source_schema.nfields; f++) {
        size_t bytes = p == run->p ? run->in_bytes[f] : sl_field_element_bytes(&p->source_schema.fields[f]);
        sl_status st = sl__gather_element(p, run->source, run->kernels, f, element,
                                          (char *)sl->host_in[f] + (size_t)row * bytes, err);
        if (st)
            return st;
    }
    return SL_OK;
}

/* With a cache: the batch's elements not yet kept on the device, each
 * gathered (from the prefix's source) to be computed once. */
static sl_status gather_misses(sl_device_run *run, slot *sl, const int64_t *ids, int64_t rows, sl_err *err)
{
    int64_t *misses = block_at(sl, run->off_misses);
    sl->misses = 0;
    for (int64_t r = 0; r < rows; r++) {
        int64_t e = ids[r];
        if (run->filled[e])
            continue;
        run->filled[e] = 1;
        misses[sl->misses] = e;
        sl_status st = gather_row(run, sl, run->prefix.p, e, sl->misses, err);
        if (st)
            return st;
        sl->misses++;
    }
    return SL_OK;
}

/* The gathered rows as a batch, for the ops' device_params. */
static void gathered_view(const sl_device_run *run, slot *sl, sl_batch *view)
{
    memset(view, 0, sizeof *view);
    view->schema = run->p->source_schema;
    view->count = sl->rows;
    view->capacity = run->capacity;
    view->element_ids = block_at(sl, run->off_ids);
    if (run->cached)
        return;
    for (int f = 0; f < view->schema.nfields; f++)
        view->fields[f].data = sl->host_in[f];
}

sl_status sl_device_run_prepare(sl_device_run *run, int slot_index, sl_position position, sl_err *err)
{
    slot *sl = &run->slots[slot_index];
    const sl_pipeline *p = run->p;
    sl_status st = sl__produce_check(p, position, sl->out, err);
    if (st)
        return st;
    sl__batch_begin_without_ids(p, position, sl->out);
    sl->rows = sl->out->count;
    int64_t *ids = block_at(sl, run->off_ids);
    st = sl__batch_all_ids(p, run->kernels, position, sl->rows, ids, NULL, err);
    if (st)
        return st;
    memcpy(sl->out->element_ids, ids, (size_t)sl->rows * sizeof *ids);
    *(sl_device_batch *)block_at(sl, run->off_batch) = (sl_device_batch){position.epoch, position.batch};
    if (run->cached) {
        st = gather_misses(run, sl, ids, sl->rows, err);
    } else if (!run->resident) {
        for (int64_t r = 0; r < sl->rows && !st; r++)
            st = gather_row(run, sl, p, ids[r], r, err);
    }
    if (!st && !run->resident)
        st = sl__source_check(run->source, err);
    if (st)
        return st;
    fill_rows(run, sl, &run->main, ids, sl->rows, position.epoch);
    sl_batch gathered;
    gathered_view(run, sl, &gathered);
    fill_batch_params(run, sl, &gathered);
    return SL_OK;
}

/* ---- The device's part ------------------------------------------------ */

typedef struct running {
    sl_device_run *run;
    slot *sl;
    const stage *s;
    void *stream;
    int64_t rows;
    const void *dev_ids; /* the rows' element ids on the device */
} running;

static sl__device_ctx op_ctx(const running *r, int op);

/* Runs a plan on rows of x (a field's rows, row_bytes each) in place
 * through the chains, out of place through `other` for every other op,
 * leaving the result in *x. */
static int run_plan(const running *r, const plan *pl, void **x, void **other)
{
    sl_device_run *run = r->run;
    const sl_device *dev = run->dev;
    const sl_pipeline *p = r->s->p;
    const char *block = r->sl->dev_block;
    for (int k = 0; k < pl->nsteps; k++) {
        const plan_step *st = &pl->steps[k];
        if (st->chain) {
            const sl__compiled_op *first = &p->compiled[r->s->chain_ops[st->first]];
            int64_t values = (int64_t)(first->in_bytes / sizeof(float));
            int e = st->per_row
                        ? dev->ew_chain_rows(*x, r->rows * values, values, (const sl_ew_step *)(block + run->off_steps),
                                             run->row_steps, st->row_first, st->count, r->stream)
                        : dev->ew_chain(*x, r->rows * values, &st->steps, r->stream);
            if (e)
                return e;
            continue;
        }
        const sl__compiled_op *c = &p->compiled[st->op];
        sl__device_ctx ctx = op_ctx(r, st->op);
        int e = c->desc->device_rows(&ctx, c, *x, *other);
        if (e)
            return e;
        void *swap = *x;
        *x = *other;
        *other = swap;
    }
    return 0;
}

/* A sub-chain on rows of x in place: through the slot's working rows, and
 * copied back when the result ends there. */
static int run_nested(const sl__device_ctx *ctx, int first, int count, void *x)
{
    const running *r = ctx->executor;
    const plan *pl = r->s->nested[first];
    if (!pl || count == 0)
        return 0;
    void *cur = x, *other = r->sl->dev_nested;
    int e = run_plan(r, pl, &cur, &other);
    if (e || cur == x)
        return e;
    const sl__compiled_op *c = &r->s->p->compiled[first];
    return r->run->dev->copy(x, cur, (size_t)r->rows * c->in_bytes, SL_DEVICE_DEVICE_TO_DEVICE, r->stream);
}

static sl__device_ctx op_ctx(const running *r, int op)
{
    const sl_device_run *run = r->run;
    const char *block = r->sl->dev_block;
    return (sl__device_ctx){
        .pipeline = r->s->p,
        .device = run->dev,
        .stream = r->stream,
        .rows = r->rows,
        .capacity = run->capacity,
        .ids = r->dev_ids,
        .batch = (const sl_device_batch *)(block + run->off_batch),
        .decisions = {(const int32_t *)(block + run->off_decisions), run->decision_stride, run->decision_first[op]},
        .params = block + run->param_off[op],
        .scratch = r->sl->dev_scratch,
        .state = r->s == &run->main ? run->state[op] : NULL,
        .run_nested = run_nested,
        .executor = (void *)r,
    };
}

/* The element phase of a stage on `rows` rows: each source field from in[f]
 * through its plan, in[f] itself and work[f] the two buffers the ops
 * writing out of place alternate between; results in out[f]. */
static int element_phase(running *r, void *const *in, void *const *work, void **out)
{
    const sl_pipeline *p = r->s->p;
    for (int f = 0; f < p->source_schema.nfields; f++) {
        void *x = in[f], *other = work[f];
        int e = run_plan(r, r->s->fields[f], &x, &other);
        if (e)
            return e;
        out[f] = x;
    }
    return 0;
}

/* With a cache: the misses through the prefix's ops into the cache, then
 * the batch's rows gathered from it. */
static int cached_inputs(running *r)
{
    sl_device_run *run = r->run;
    slot *sl = r->sl;
    const sl_device *dev = run->dev;
    const sl_pipeline *prefix = run->prefix.p;
    const char *block = sl->dev_block;
    const int64_t *dev_misses = (const int64_t *)(block + run->off_misses);
    int e = 0;
    if (sl->misses > 0) {
        void *in[SL_MAX_FIELDS], *work[SL_MAX_FIELDS], *out[SL_MAX_FIELDS];
        for (int f = 0; f < prefix->source_schema.nfields && !e; f++) {
            /* The misses' rows land in the work buffers of each field
             * (large enough: the prefix's output is the main's input). */
            in[f] = sl->dev_buf[f][0];
            work[f] = sl->dev_buf[f][1];
            e = dev->copy(in[f], sl->host_in[f],
                          (size_t)sl->misses * sl_field_element_bytes(&prefix->source_schema.fields[f]),
                          SL_DEVICE_HOST_TO_DEVICE, r->stream);
        }
        running pr = *r;
        pr.s = &run->prefix;
        pr.rows = sl->misses;
        pr.dev_ids = dev_misses;
        if (!e)
            e = element_phase(&pr, in, work, out);
        for (int f = 0; f < prefix->output_schema.nfields && !e; f++)
            e = dev->scatter_rows(run->dev_cache[f], out[f], sl->misses, run->cache_row[f], dev_misses, r->stream);
    }
    for (int f = 0; f < prefix->output_schema.nfields && !e; f++)
        e = dev->gather_rows(sl->dev_in[f], run->dev_cache[f], r->rows, run->cache_row[f], r->dev_ids, r->stream);
    return e;
}

sl_status sl_device_run_enqueue(sl_device_run *run, int slot_index, void *stream, sl_err *err)
{
    slot *sl = &run->slots[slot_index];
    const sl_pipeline *p = run->p;
    const sl_device *dev = run->dev;
    DEVICE_TRY(dev->copy(sl->dev_block, sl->host_block, run->block_bytes, SL_DEVICE_HOST_TO_DEVICE, stream),
               "copying a batch's decisions to the device");
    running r = {.run = run, .sl = sl, .s = &run->main, .stream = stream, .rows = sl->rows};
    r.dev_ids = (const char *)sl->dev_block + run->off_ids;
    if (run->rules.nrules > 0)
        DEVICE_TRY(dev->decide_rows(r.dev_ids, (const sl_device_batch *)((char *)sl->dev_block + run->off_batch),
                                    &run->rules, (int32_t *)((char *)sl->dev_block + run->off_decisions),
                                    run->decision_stride, sl->rows, stream),
                   "drawing a batch's decisions on the device");
    if (run->row_steps > 0)
        DEVICE_TRY(dev->step_rows(r.dev_ids, (const sl_device_batch *)((char *)sl->dev_block + run->off_batch),
                                  run->dev_step_rules, (sl_ew_step *)((char *)sl->dev_block + run->off_steps),
                                  run->row_steps, sl->rows, stream),
                   "drawing a batch's chain steps on the device");
    if (run->cached) {
        DEVICE_TRY(cached_inputs(&r), "filling the device cache");
    } else if (run->resident) {
        for (int f = 0; f < p->source_schema.nfields; f++)
            DEVICE_TRY(f == p->pack_field ? dev->pack_rows(sl->dev_in[f], run->dev_source[f], sl->rows, p->seq_len,
                                                           p->stream_tokens, r.dev_ids, p->pad_id, stream)
                                          : dev->gather_rows(sl->dev_in[f], run->dev_source[f], sl->rows,
                                                             run->in_bytes[f], r.dev_ids, stream),
                       "gathering a batch's rows on the device");
    } else {
        for (int f = 0; f < p->source_schema.nfields; f++)
            DEVICE_TRY(dev->copy(sl->dev_in[f], sl->host_in[f], (size_t)sl->rows * run->in_bytes[f],
                                 SL_DEVICE_HOST_TO_DEVICE, stream),
                       "copying a batch's rows to the device");
    }
    void *work[SL_MAX_FIELDS];
    for (int f = 0; f < SL_MAX_FIELDS; f++)
        work[f] = sl->dev_buf[f][0];
    DEVICE_TRY(element_phase(&r, sl->dev_in, work, sl->result), "the element phase");
    for (int f = p->source_schema.nfields; f < p->output_schema.nfields; f++)
        sl->result[f] = sl->dev_buf[f][0];
    /* The batch phase, in order, on every field. */
    sl__device_fields fields;
    for (int f = 0; f < p->output_schema.nfields; f++) {
        fields.data[f] = sl->result[f];
        /* Any buffer of the field's three that does not hold its rows. */
        fields.spare[f] = sl->result[f] == sl->dev_buf[f][1] ? sl->dev_buf[f][0] : sl->dev_buf[f][1];
    }
    for (int i = 0; i < p->ncompiled; i++) {
        const sl__compiled_op *c = &p->compiled[i];
        if (!c->desc || c->desc->phase != SL__PHASE_BATCH)
            continue;
        sl__device_ctx ctx = op_ctx(&r, i);
        DEVICE_TRY(c->desc->device_batch(&ctx, c, &fields), "a batch op");
    }
    for (int f = 0; f < p->output_schema.nfields; f++)
        sl->result[f] = fields.data[f];
    return SL_OK;
}

sl_status sl_device_run_fetch(sl_device_run *run, int slot_index, void *stream, const sl_batch **out, sl_err *err)
{
    slot *sl = &run->slots[slot_index];
    for (int f = 0; f < run->p->output_schema.nfields; f++)
        DEVICE_TRY(run->dev->copy(sl->out->fields[f].data, sl->result[f], sl_tensor_nbytes(&sl->out->fields[f]),
                                  SL_DEVICE_DEVICE_TO_HOST, stream),
                   "copying a batch back to the host");
    DEVICE_TRY(run->dev->stream_sync(stream), "waiting for a batch's copy back");
    *out = sl->out;
    return SL_OK;
}

int64_t sl_device_run_rows(const sl_device_run *run, int slot)
{
    return run->slots[slot].rows;
}

int64_t sl_device_run_capacity(const sl_device_run *run)
{
    return run->capacity;
}

bool sl_device_run_graphable(const sl_device_run *run, char *why, size_t size)
{
    if (run->cached && why && size)
        sl__copy_string(why, size, "a cache's misses change from batch to batch, so each batch runs direct");
    return !run->cached;
}

bool sl_device_run_overlappable(const sl_device_run *run)
{
    return !run->cached;
}

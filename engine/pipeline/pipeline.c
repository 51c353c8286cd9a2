/* Pipeline construction: validation, schema inference, fingerprint. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "core/internal.h"
#include "pipeline/bucket.h"
#include "pipeline/internal.h"
#include "pipeline/op_desc.h"
#include "sluice/core/philox.h"

const char *sl_mode_name(sl_mode mode)
{
    return mode == SL_MODE_TRAIN ? "train" : mode == SL_MODE_EVAL ? "eval" : "?";
}

void sl_pipeline_spec_init(sl_pipeline_spec *spec, const sl_source *source, int64_t batch_size, uint64_t seed)
{
    memset(spec, 0, sizeof *spec);
    spec->source = source;
    spec->batch_size = batch_size;
    spec->shuffle = true;
    spec->seed = seed;
    spec->shard.rank = 0;
    spec->shard.world = 1;
}

sl_status sl_pipeline_spec_add(sl_pipeline_spec *spec, sl_op op, sl_err *err)
{
    if (spec->nops >= SL_MAX_OPS)
        return sl_fail(err, SL_EINVAL, "a pipeline holds at most %d ops", SL_MAX_OPS);
    spec->ops[spec->nops++] = op;
    return SL_OK;
}

/* Compiles spec op `index` into compiled slot `index`; owner is the op
 * whose sub-chain it belongs to, or -1. */
static sl_status compile_op(sl_pipeline *p, int index, int owner, sl_err *err)
{
    const sl_op *op = &p->spec.ops[index];
    sl__compiled_op *c = &p->compiled[index];
    const sl__op_desc *desc = sl__op_desc_of(op->kind);
    if (!desc)
        return sl_fail(err, SL_EINVAL, "op %d has unknown kind %d", index, (int)op->kind);
    int f = sl_schema_find(&p->output_schema, op->field);
    if (f < 0)
        return sl_fail(err, SL_EINVAL, "op %d (%s) names field '%s', which the source does not have", index,
                       sl_op_kind_name(op->kind), op->field);
    sl_field_spec *field = &p->output_schema.fields[f];
    c->op = op;
    c->desc = desc;
    c->field = f;
    c->other_field = -1;
    c->out_field = -1;
    c->owner = owner;
    c->in_dtype = c->out_dtype = field->dtype;
    c->values = sl_shape_numel(&field->shape);
    c->in_bytes = c->out_bytes = sl_field_element_bytes(field);
    sl_status st = desc->compile(p, index, c, field, err);
    if (st)
        return st;
    p->transforms |= SL_TRANSFORM(op->kind);
    if (desc->phase == SL__PHASE_BATCH) {
        p->nbatch_ops++;
        return SL_OK;
    }
    if (desc->phase == SL__PHASE_ELEMENT) {
        if (p->nbatch_ops > 0)
            return sl_fail(err, SL_EINVAL, "op %d (%s) is a per-element op after a batch op; batch ops come last",
                           index, sl_op_kind_name(op->kind));
        if (f >= p->source_schema.nfields)
            return sl_fail(err, SL_EINVAL, "op %d (%s): field '%s' is made by a batch op, after the element phase",
                           index, sl_op_kind_name(op->kind), field->name);
        if (c->out_bytes != c->in_bytes || c->out_dtype != c->in_dtype)
            p->needs_staging[f] = true;
    }
    if (c->out_bytes > p->max_element_bytes[f])
        p->max_element_bytes[f] = c->out_bytes;
    return SL_OK;
}

sl_status sl__compile_nested(sl_pipeline *p, int owner, int first, int count, sl_err *err)
{
    const sl__compiled_op *parent = &p->compiled[owner];
    for (int j = first; j < first + count; j++) {
        const sl_op *op = &p->spec.ops[j];
        const sl__op_desc *desc = sl__op_desc_of(op->kind);
        if (desc && (desc->phase != SL__PHASE_ELEMENT || desc->nested))
            return sl_fail(err, SL_EINVAL,
                           "op %d (%s) cannot run inside op %d (%s): a sub-chain holds per-element ops that own no "
                           "ops themselves",
                           j, sl_op_kind_name(op->kind), owner, sl__op_name(parent));
        if (p->ncompiled < j + 1)
            p->ncompiled = j + 1;
        sl_status st = compile_op(p, j, owner, err);
        if (st)
            return st;
        const sl__compiled_op *c = &p->compiled[j];
        if (c->field != parent->field)
            return sl_fail(err, SL_EINVAL, "op %d (%s) inside op %d (%s) acts on field '%s', not on its owner's '%s'",
                           j, sl_op_kind_name(op->kind), owner, sl__op_name(parent), op->field, parent->op->field);
        if (!desc->in_place || c->in_bytes != c->out_bytes || c->in_dtype != c->out_dtype)
            return sl_fail(err, SL_EINVAL,
                           "op %d (%s) inside op %d (%s) must keep field '%s''s layout and work in place", j,
                           sl_op_kind_name(op->kind), owner, sl__op_name(parent), op->field);
    }
    return SL_OK;
}

/* A canonical, padding-free description of everything that determines the
 * pipeline's output, hashed into its fingerprint. */
static uint64_t compute_fingerprint(const sl_pipeline *p)
{
    XXH3_state_t *state = XXH3_createState();
    if (!state)
        return 0;
    XXH3_64bits_reset(state);
#define FEED(value)                                                                                                    \
    do {                                                                                                               \
        int64_t v_ = (int64_t)(value);                                                                                 \
        XXH3_64bits_update(state, &v_, sizeof v_);                                                                     \
    } while (0)
    /* The spec's own source, which a cache stands in front of. */
    const sl_schema *s = sl_source_schema(p->spec.source);
    FEED(s->nfields);
    for (int f = 0; f < s->nfields; f++) {
        XXH3_64bits_update(state, s->fields[f].name, strlen(s->fields[f].name) + 1);
        FEED(s->fields[f].dtype);
        FEED(s->fields[f].shape.rank);
        for (int d = 0; d < s->fields[f].shape.rank; d++)
            FEED(s->fields[f].shape.dims[d]);
    }
    FEED(sl_source_rows(p->spec.source));
    FEED(p->spec.batch_size);
    FEED(p->spec.drop_last);
    FEED(p->spec.shuffle);
    FEED((int64_t)p->spec.seed);
    FEED(p->spec.shard.rank);
    FEED(p->spec.shard.world);
    FEED(p->spec.mode);
    sl__order_fingerprint(&p->order, &p->spec, state);
    FEED(p->spec.nops);
    for (int i = 0; i < p->spec.nops; i++) {
        const sl_op *op = &p->spec.ops[i];
        FEED(op->kind);
        FEED(op->op_id);
        XXH3_64bits_update(state, op->field, strlen(op->field) + 1);
        sl__op_fingerprint(op, state);
    }
#undef FEED
    uint64_t h = XXH3_64bits_digest(state);
    XXH3_freeState(state);
    return h;
}

/* The ops before the cache at index `at` become a pipeline of their own,
 * whose output the cache sources keep; this pipeline then reads a cache
 * source in place of the spec's. */
static sl_status split_at_cache(sl_pipeline *p, int at, sl_err *err)
{
    const sl_pipeline_spec *spec = &p->spec;
    for (int i = 0; i < at; i++) {
        const sl__op_desc *desc = sl__op_desc_of(spec->ops[i].kind);
        if (!desc)
            return sl_fail(err, SL_EINVAL, "op %d has unknown kind %d", i, (int)spec->ops[i].kind);
        if (desc->phase == SL__PHASE_BATCH)
            return sl_fail(err, SL_EINVAL, "op %d (%s) is a batch op; a cache (op %d) may follow only per-element ops",
                           i, sl_op_kind_name(spec->ops[i].kind), at);
        if (desc->random)
            return sl_fail(err, SL_EINVAL,
                           "op %d (%s) draws new numbers every epoch; a cache after it (op %d) would replay epoch "
                           "0's draws in every epoch. Put the cache before it",
                           i, sl_op_kind_name(spec->ops[i].kind), at);
    }
    sl_pipeline_spec prefix_spec;
    sl_pipeline_spec_init(&prefix_spec, spec->source, 1, spec->seed);
    prefix_spec.shuffle = false;
    prefix_spec.mode = spec->mode;
    for (int i = 0; i < at; i++)
        prefix_spec.ops[prefix_spec.nops++] = spec->ops[i];
    sl_status st = sl_pipeline_create(&prefix_spec, &p->prefix, err);
    if (st)
        return sl_fail_context(err, "the ops before the cache (op %d)", at);
    if (sl_schema_find(sl_pipeline_output_schema(p->prefix), spec->ops[at].field) < 0)
        return sl_fail(err, SL_EINVAL, "op %d (cache) names field '%s', which the element does not have there", at,
                       spec->ops[at].field);
    /* The executors create each table's cache when they first read it
     * (engine/exec/cache_source.c); nothing here reads elements. */
    p->source = NULL;
    p->source_schema = *sl_pipeline_output_schema(p->prefix);
    p->transforms |= p->prefix->transforms | SL_TRANSFORM(SL_OP_CACHE);
    return SL_OK;
}

/* The spec index of the cache op, -1 when there is none, or an error for a
 * second one. */
static sl_status find_cache(const sl_pipeline_spec *spec, int *at, sl_err *err)
{
    *at = -1;
    for (int i = 0; i < spec->nops; i++) {
        if (spec->ops[i].kind != SL_OP_CACHE)
            continue;
        if (*at >= 0)
            return sl_fail(err, SL_EINVAL, "ops %d and %d are both caches; a pipeline holds at most one", *at, i);
        *at = i;
    }
    return SL_OK;
}

sl_status sl_pipeline_create(const sl_pipeline_spec *spec, sl_pipeline **out, sl_err *err)
{
    *out = NULL;
    if (!spec->source)
        return sl_fail(err, SL_EINVAL, "pipeline spec has no source");
    if (spec->batch_size <= 0)
        return sl_fail(err, SL_EINVAL, "batch_size must be positive, got %lld", (long long)spec->batch_size);
    if (spec->shard.world < 1 || spec->shard.rank < 0 || spec->shard.rank >= spec->shard.world)
        return sl_fail(err, SL_EINVAL, "shard rank %d is not in [0, world %d)", spec->shard.rank, spec->shard.world);
    if (spec->mode != SL_MODE_TRAIN && spec->mode != SL_MODE_EVAL)
        return sl_fail(err, SL_EINVAL, "pipeline mode must be train or eval, got %d", (int)spec->mode);
    if (spec->nops < 0 || spec->nops > SL_MAX_OPS)
        return sl_fail(err, SL_EINVAL, "a pipeline holds 0 to %d ops, got %d", SL_MAX_OPS, spec->nops);
    sl_pipeline *p = calloc(1, sizeof *p);
    if (!p)
        return sl_fail(err, SL_ENOMEM, "cannot allocate a pipeline");
    p->cache_at = -1;
    p->spec = *spec;
    p->source = spec->source;
    p->source_schema = *sl_source_schema(spec->source);
    p->pack_field = -1;
    int cache_at = -1;
    sl_status st = find_cache(spec, &cache_at, err);
    if (st == SL_OK && cache_at >= 0) {
        pthread_mutex_init(&p->cache_lock, NULL);
        p->cache_at = cache_at;
        st = split_at_cache(p, cache_at, err);
    }
    if (st) {
        sl_pipeline_free(p);
        return st;
    }
    p->output_schema = p->source_schema;
    for (int f = 0; f < p->source_schema.nfields; f++)
        p->max_element_bytes[f] = sl_field_element_bytes(&p->source_schema.fields[f]);
    /* The ops up to the cache run in the prefix pipeline: here they keep
     * their slots as inert entries (no phase any executor runs), so that
     * slot i is spec op i for every op after them. */
    for (int i = 0; i <= p->cache_at; i++)
        p->compiled[i] = (sl__compiled_op){.op = &p->spec.ops[i],
                                           .desc = &sl__op_cache_desc,
                                           .field = -1,
                                           .other_field = -1,
                                           .out_field = -1,
                                           .owner = -1};
    p->ncompiled = p->cache_at + 1;
    for (int i = p->cache_at + 1; i < spec->nops; i++) {
        if (p->ncompiled < i + 1)
            p->ncompiled = i + 1;
        st = compile_op(p, i, -1, err);
        if (st) {
            sl_pipeline_free(p);
            return st;
        }
        /* The op compiled the ops it owns; skip past them. */
        const sl__op_desc *desc = p->compiled[i].desc;
        if (desc->nested)
            i += desc->nested(&spec->ops[i]);
    }
    int64_t rows = p->source ? sl_source_rows(p->source) : sl_pipeline_dataset_size(p->prefix);
    p->dataset_size = p->pack_field >= 0 ? (rows + p->seq_len - 1) / p->seq_len : rows;
    /* A mixture's epoch has its own length. */
    sl_status order_status = sl__order_init(&p->order, &p->spec, p->source, p->pack_field >= 0, p->dataset_size, err);
    p->dataset_size = p->order.dataset_size;
    if (order_status) {
        sl_pipeline_free(p);
        return order_status;
    }
    if (p->dataset_size >= ((int64_t)1 << 62)) {
        int64_t size = p->dataset_size;
        sl_pipeline_free(p);
        return sl_fail(err, SL_EINVAL, "a data set of %lld elements exceeds the shuffle's limit of 2^62",
                       (long long)size);
    }
    p->epoch_size = (int64_t)sl_shard_size(spec->shard, (uint64_t)p->dataset_size);
    p->batches_per_epoch =
        spec->drop_last ? p->epoch_size / spec->batch_size : (p->epoch_size + spec->batch_size - 1) / spec->batch_size;
    if (p->batches_per_epoch == 0) {
        int64_t epoch_size = p->epoch_size;
        sl_pipeline_free(p);
        return sl_fail(err, SL_EINVAL, "an epoch of %lld elements makes no batch of %lld%s", (long long)epoch_size,
                       (long long)spec->batch_size, spec->drop_last ? " (drop_last)" : "");
    }
    for (int f = 0; f < p->output_schema.nfields; f++)
        p->batch_bytes += (size_t)spec->batch_size * sl_field_element_bytes(&p->output_schema.fields[f]);
    p->fingerprint = compute_fingerprint(p);
    *out = p;
    return SL_OK;
}

void sl_pipeline_free(sl_pipeline *pipeline)
{
    if (!pipeline)
        return;
    for (int i = 0; i < pipeline->ncompiled; i++) {
        sl__compiled_op *c = &pipeline->compiled[i];
        if (c->desc && c->desc->release)
            c->desc->release(c);
    }
    for (int t = 0; t < SL_TABLE_SLOTS; t++)
        sl_source_free(pipeline->caches[t]);
    if (pipeline->cache_at >= 0)
        pthread_mutex_destroy(&pipeline->cache_lock);
    sl_pipeline_free(pipeline->prefix);
    sl__order_release(&pipeline->order);
    free(pipeline);
}

const sl_pipeline_spec *sl_pipeline_get_spec(const sl_pipeline *p)
{
    return &p->spec;
}
const sl_schema *sl_pipeline_output_schema(const sl_pipeline *p)
{
    return &p->output_schema;
}
int64_t sl_pipeline_dataset_size(const sl_pipeline *p)
{
    return p->dataset_size;
}
int64_t sl_pipeline_epoch_size(const sl_pipeline *p)
{
    return p->epoch_size;
}
int64_t sl_pipeline_batches_per_epoch(const sl_pipeline *p)
{
    return p->batches_per_epoch;
}
size_t sl_pipeline_batch_bytes(const sl_pipeline *p)
{
    return p->batch_bytes;
}
sl_transform_set sl_pipeline_transforms(const sl_pipeline *p)
{
    return p->transforms;
}
uint64_t sl_pipeline_fingerprint(const sl_pipeline *p)
{
    return p->fingerprint;
}

int64_t sl_pipeline_batch_rows(const sl_pipeline *p, int64_t batch)
{
    int64_t first = batch * p->spec.batch_size;
    int64_t left = p->epoch_size - first;
    return left < p->spec.batch_size ? left : p->spec.batch_size;
}

int64_t sl_pipeline_element_at(const sl_pipeline *p, int64_t epoch, int64_t local_position)
{
    int64_t element;
    sl__order_ids(&p->order, NULL, epoch, sl_shard_global_position(p->spec.shard, (uint64_t)local_position), 1, 1,
                  &element);
    return element;
}

sl_position sl_position_advance(const sl_pipeline *p, sl_position position, int64_t batches)
{
    /* No product of epoch and batches per epoch, which could overflow. */
    int64_t per_epoch = p->batches_per_epoch;
    int64_t epoch = position.epoch + batches / per_epoch;
    int64_t batch = position.batch + batches % per_epoch;
    if (batch >= per_epoch) {
        batch -= per_epoch;
        epoch++;
    }
    if (epoch > SL_MAX_EPOCH || epoch < position.epoch)
        return (sl_position){SL_MAX_EPOCH + 1, 0};
    return (sl_position){epoch, batch};
}

void sl__batch_ids(const sl_pipeline *p, const sl_kernel_table *kernels, sl_position position, int64_t first_row,
                   int64_t rows, int64_t *ids)
{
    int64_t first = position.batch * p->spec.batch_size + first_row;
    sl__order_ids(&p->order, kernels, position.epoch, sl_shard_global_position(p->spec.shard, (uint64_t)first),
                  (uint64_t)p->spec.shard.world, rows, ids);
}

sl_status sl__batch_all_ids(const sl_pipeline *p, const sl_kernel_table *kernels, sl_position position, int64_t rows,
                            int64_t *ids, struct sl__bucket_cache *cache, sl_err *err)
{
    if (p->bucket)
        return sl__bucket_batch_ids(p, position, ids, cache, err);
    sl__batch_ids(p, kernels, position, 0, rows, ids);
    return SL_OK;
}

sl_status sl__batch_begin(const sl_pipeline *p, const sl_kernel_table *kernels, sl_position position, sl_batch *batch,
                          sl_err *err)
{
    sl__batch_begin_without_ids(p, position, batch);
    return sl__batch_all_ids(p, kernels, position, batch->count, batch->element_ids, NULL, err);
}

void sl__batch_begin_without_ids(const sl_pipeline *p, sl_position position, sl_batch *batch)
{
    int64_t rows = sl_pipeline_batch_rows(p, position.batch);
    batch->epoch = position.epoch;
    batch->index = position.batch;
    for (int f = 0; f < batch->schema.nfields; f++) {
        sl_tensor *t = &batch->fields[f];
        t->shape.rank = batch->schema.fields[f].shape.rank + 1;
        for (int d = 0; d < batch->schema.fields[f].shape.rank; d++)
            t->shape.dims[d + 1] = batch->schema.fields[f].shape.dims[d];
    }
    sl_batch_set_count(batch, rows);
}

sl_status sl__run_batch_ops(const sl_pipeline *p, const sl_kernel_table *kernels, sl_batch *batch, sl_err *err)
{
    if (p->nbatch_ops == 0)
        return SL_OK;
    sl__op_ctx ctx = {p, kernels, batch->epoch};
    for (int i = 0; i < p->ncompiled; i++) {
        const sl__compiled_op *c = &p->compiled[i];
        if (c->desc->phase != SL__PHASE_BATCH)
            continue;
        sl_status st = c->desc->batch(&ctx, c, batch, err);
        if (st)
            return sl_fail_context(err, "batch op %d (%s), epoch %lld batch %lld", i, sl__op_name(c),
                                   (long long)batch->epoch, (long long)batch->index);
    }
    return SL_OK;
}

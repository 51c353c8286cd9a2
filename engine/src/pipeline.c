/* Pipeline construction: validation, schema inference, fingerprint. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "internal.h"
#include "pipeline_internal.h"
#include "sluice/philox.h"

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

/* Image geometry of a field: [h, w, c] or [h, w] (one channel). */
static sl_status image_geometry(const sl_field_spec *field, const char *what, sl__compiled_op *c, sl_err *err)
{
    if (field->shape.rank != 2 && field->shape.rank != 3)
        return sl_fail(err, SL_EINVAL, "%s needs an image field [h, w] or [h, w, c], but field '%s' has rank %d",
                       what, field->name, field->shape.rank);
    c->h = (int)field->shape.dims[0];
    c->w = (int)field->shape.dims[1];
    int64_t channels = field->shape.rank == 3 ? field->shape.dims[2] : 1;
    c->pixel_bytes = (size_t)channels * sl_dtype_size(field->dtype);
    return SL_OK;
}

static sl_status compile_op(sl_pipeline *p, int index, sl_err *err)
{
    const sl_op *op = &p->spec.ops[index];
    sl__compiled_op *c = &p->compiled[index];
    const char *name = sl_op_kind_name(op->kind);
    if ((unsigned)op->kind >= SL_OP_KIND_COUNT)
        return sl_fail(err, SL_EINVAL, "op %d has unknown kind %d", index, (int)op->kind);
    int f = sl_schema_find(&p->output_schema, op->field);
    if (f < 0)
        return sl_fail(err, SL_EINVAL, "op %d (%s) names field '%s', which the source does not have", index,
                       name, op->field);
    sl_field_spec *field = &p->output_schema.fields[f];
    c->op = op;
    c->field = f;
    c->in_dtype = field->dtype;
    c->values = sl_shape_numel(&field->shape);
    p->transforms |= SL_TRANSFORM(op->kind);

    switch (op->kind) {
    case SL_OP_PACK_TOKENS:
        if (index != 0)
            return sl_fail(err, SL_EINVAL, "op %d: pack_tokens must be the first op", index);
        if (field->dtype != SL_I32 || field->shape.rank != 0)
            return sl_fail(err, SL_EINVAL, "op %d: pack_tokens needs a stream of i32 scalars, field '%s' is %s rank %d",
                           index, field->name, sl_dtype_name(field->dtype), field->shape.rank);
        if (p->source_schema.nfields != 1)
            return sl_fail(err, SL_EINVAL, "op %d: pack_tokens needs a source with only the token field", index);
        if (op->u.pack.seq_len <= 0)
            return sl_fail(err, SL_EINVAL, "op %d: pack_tokens seq_len must be positive, got %d", index,
                           op->u.pack.seq_len);
        p->pack_field = f;
        p->seq_len = op->u.pack.seq_len;
        p->pad_id = op->u.pack.pad_id;
        p->stream_tokens = sl_source_rows(p->source);
        field->shape.rank = 1;
        field->shape.dims[0] = op->u.pack.seq_len;
        c->values = op->u.pack.seq_len;
        return SL_OK;
    case SL_OP_NORMALIZE: {
        int channels = op->u.normalize.channels;
        int64_t last = field->shape.rank ? field->shape.dims[field->shape.rank - 1] : 1;
        if (field->dtype != SL_U8 && field->dtype != SL_F32)
            return sl_fail(err, SL_EINVAL, "op %d: normalize takes u8 or f32, field '%s' is %s", index, field->name,
                           sl_dtype_name(field->dtype));
        if (channels < 1 || channels > SL_MAX_CHANNELS || (channels != 1 && channels != last))
            return sl_fail(err, SL_EINVAL,
                           "op %d: normalize has %d channels; field '%s' needs 1 or its last dimension %lld", index,
                           channels, field->name, (long long)last);
        sl_status st = sl_normalize_consts_init(&c->norm, channels, op->u.normalize.mean, op->u.normalize.std, err);
        if (st)
            return sl_fail_context(err, "op %d (normalize of field '%s')", index, field->name);
        if (field->dtype == SL_U8)
            p->needs_staging[f] = true;
        field->dtype = SL_F32;
        return SL_OK;
    }
    case SL_OP_SCALE:
    case SL_OP_ADD:
    case SL_OP_MULTIPLY:
    case SL_OP_CLIP:
        if (field->dtype != SL_F32)
            return sl_fail(err, SL_EINVAL, "op %d: %s takes f32, field '%s' is %s (normalize it first)", index, name,
                           field->name, sl_dtype_name(field->dtype));
        if (op->kind == SL_OP_CLIP && !(op->u.clip.lo <= op->u.clip.hi))
            return sl_fail(err, SL_EINVAL, "op %d: clip needs lo <= hi", index);
        return SL_OK;
    case SL_OP_RANDOM_CROP: {
        sl_status st = image_geometry(field, name, c, err);
        if (st)
            return st;
        if (op->u.crop.crop_h < 1 || op->u.crop.crop_h > c->h || op->u.crop.crop_w < 1 || op->u.crop.crop_w > c->w)
            return sl_fail(err, SL_EINVAL, "op %d: crop %dx%d does not fit field '%s' of %dx%d", index,
                           op->u.crop.crop_h, op->u.crop.crop_w, field->name, c->h, c->w);
        return SL_OK;
    }
    case SL_OP_RANDOM_HFLIP: {
        sl_status st = image_geometry(field, name, c, err);
        if (st)
            return st;
        if (!(op->u.flip.p >= 0.0f && op->u.flip.p <= 1.0f))
            return sl_fail(err, SL_EINVAL, "op %d: flip probability must be in [0, 1]", index);
        return SL_OK;
    }
    case SL_OP_KIND_COUNT:
        break;
    }
    return sl_fail(err, SL_EINVAL, "op %d has unknown kind", index);
}

/* A canonical, padding-free description of everything that determines the
 * pipeline's output, hashed into its fingerprint. */
static uint64_t compute_fingerprint(const sl_pipeline *p)
{
    XXH3_state_t *state = XXH3_createState();
    if (!state)
        return 0;
    XXH3_64bits_reset(state);
#define FEED(value)                                                                                                   \
    do {                                                                                                              \
        int64_t v_ = (int64_t)(value);                                                                                \
        XXH3_64bits_update(state, &v_, sizeof v_);                                                                    \
    } while (0)
#define FEED_FLOAT(value)                                                                                             \
    do {                                                                                                              \
        float f_ = (value);                                                                                           \
        XXH3_64bits_update(state, &f_, sizeof f_);                                                                    \
    } while (0)
    const sl_schema *s = &p->source_schema;
    FEED(s->nfields);
    for (int f = 0; f < s->nfields; f++) {
        XXH3_64bits_update(state, s->fields[f].name, strlen(s->fields[f].name) + 1);
        FEED(s->fields[f].dtype);
        FEED(s->fields[f].shape.rank);
        for (int d = 0; d < s->fields[f].shape.rank; d++)
            FEED(s->fields[f].shape.dims[d]);
    }
    FEED(sl_source_rows(p->source));
    FEED(p->spec.batch_size);
    FEED(p->spec.drop_last);
    FEED(p->spec.shuffle);
    FEED((int64_t)p->spec.seed);
    FEED(p->spec.shard.rank);
    FEED(p->spec.shard.world);
    FEED(p->spec.nops);
    for (int i = 0; i < p->spec.nops; i++) {
        const sl_op *op = &p->spec.ops[i];
        FEED(op->kind);
        FEED(op->op_id);
        XXH3_64bits_update(state, op->field, strlen(op->field) + 1);
        switch (op->kind) {
        case SL_OP_PACK_TOKENS: FEED(op->u.pack.seq_len); FEED(op->u.pack.pad_id); break;
        case SL_OP_NORMALIZE:
            FEED(op->u.normalize.channels);
            for (int ch = 0; ch < op->u.normalize.channels; ch++) {
                FEED_FLOAT(op->u.normalize.mean[ch]);
                FEED_FLOAT(op->u.normalize.std[ch]);
            }
            break;
        case SL_OP_SCALE:
        case SL_OP_ADD:
        case SL_OP_MULTIPLY: FEED_FLOAT(op->u.scalar.value); break;
        case SL_OP_CLIP: FEED_FLOAT(op->u.clip.lo); FEED_FLOAT(op->u.clip.hi); break;
        case SL_OP_RANDOM_CROP: FEED(op->u.crop.crop_h); FEED(op->u.crop.crop_w); break;
        case SL_OP_RANDOM_HFLIP: FEED_FLOAT(op->u.flip.p); break;
        case SL_OP_KIND_COUNT: break;
        }
    }
#undef FEED
#undef FEED_FLOAT
    uint64_t h = XXH3_64bits_digest(state);
    XXH3_freeState(state);
    return h;
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
    if (spec->nops < 0 || spec->nops > SL_MAX_OPS)
        return sl_fail(err, SL_EINVAL, "a pipeline holds 0 to %d ops, got %d", SL_MAX_OPS, spec->nops);
    sl_pipeline *p = calloc(1, sizeof *p);
    if (!p)
        return sl_fail(err, SL_ENOMEM, "cannot allocate a pipeline");
    p->spec = *spec;
    p->source = spec->source;
    p->source_schema = *sl_source_schema(spec->source);
    p->output_schema = p->source_schema;
    p->pack_field = -1;
    p->ncompiled = spec->nops;
    for (int i = 0; i < spec->nops; i++) {
        sl_status st = compile_op(p, i, err);
        if (st) {
            sl_pipeline_free(p);
            return st;
        }
    }
    int64_t rows = sl_source_rows(spec->source);
    p->dataset_size = p->pack_field >= 0 ? (rows + p->seq_len - 1) / p->seq_len : rows;
    if (p->dataset_size >= ((int64_t)1 << 62)) {
        int64_t size = p->dataset_size;
        sl_pipeline_free(p);
        return sl_fail(err, SL_EINVAL, "a data set of %lld elements exceeds the shuffle's limit of 2^62",
                       (long long)size);
    }
    p->epoch_size = (int64_t)sl_shard_size(spec->shard, (uint64_t)p->dataset_size);
    p->batches_per_epoch = spec->drop_last ? p->epoch_size / spec->batch_size
                                           : (p->epoch_size + spec->batch_size - 1) / spec->batch_size;
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
    for (int i = 0; i < pipeline->ncompiled; i++)
        if (pipeline->compiled[i].op && pipeline->compiled[i].op->kind == SL_OP_NORMALIZE)
            sl_normalize_consts_release(&pipeline->compiled[i].norm);
    free(pipeline);
}

const sl_pipeline_spec *sl_pipeline_get_spec(const sl_pipeline *p) { return &p->spec; }
const sl_schema *sl_pipeline_output_schema(const sl_pipeline *p) { return &p->output_schema; }
int64_t sl_pipeline_dataset_size(const sl_pipeline *p) { return p->dataset_size; }
int64_t sl_pipeline_epoch_size(const sl_pipeline *p) { return p->epoch_size; }
int64_t sl_pipeline_batches_per_epoch(const sl_pipeline *p) { return p->batches_per_epoch; }
size_t sl_pipeline_batch_bytes(const sl_pipeline *p) { return p->batch_bytes; }
sl_transform_set sl_pipeline_transforms(const sl_pipeline *p) { return p->transforms; }
uint64_t sl_pipeline_fingerprint(const sl_pipeline *p) { return p->fingerprint; }

int64_t sl_pipeline_batch_rows(const sl_pipeline *p, int64_t batch)
{
    int64_t first = batch * p->spec.batch_size;
    int64_t left = p->epoch_size - first;
    return left < p->spec.batch_size ? left : p->spec.batch_size;
}

int64_t sl_pipeline_element_at(const sl_pipeline *p, int64_t epoch, int64_t local_position)
{
    sl_permutation perm;
    sl_permutation_init(&perm, (uint64_t)p->dataset_size, p->spec.seed, (uint64_t)epoch, p->spec.shuffle);
    return (int64_t)sl_permutation_apply(&perm, sl_shard_global_position(p->spec.shard, (uint64_t)local_position));
}

sl_position sl_position_advance(const sl_pipeline *p, sl_position position, int64_t batches)
{
    int64_t absolute = position.epoch * p->batches_per_epoch + position.batch + batches;
    sl_position next = {absolute / p->batches_per_epoch, absolute % p->batches_per_epoch};
    return next;
}

const sl_kernel_table *sl_kernel_table_for(sl_kernel_choice choice)
{
    return choice == SL_KERNELS_REFERENCE ? sl_kernels_reference() : sl_kernels_best();
}

bool sl__op_fits_ew_chain(const sl__compiled_op *op)
{
    if (op->op->kind == SL_OP_NORMALIZE)
        return op->in_dtype == SL_F32 && op->norm.channels == 1;
    return sl_op_is_elementwise(op->op->kind);
}

sl_ew_step sl__ew_step_of(const sl__compiled_op *c)
{
    sl_ew_step step = {c->op->kind, 0.0f, 0.0f};
    switch (c->op->kind) {
    case SL_OP_NORMALIZE: step.a = c->norm.mean[0]; step.b = c->norm.inv_std[0]; break;
    case SL_OP_CLIP: step.a = c->op->u.clip.lo; step.b = c->op->u.clip.hi; break;
    default: step.a = c->op->u.scalar.value; break;
    }
    return step;
}

void sl__crop_offsets(const sl_pipeline *p, const sl__compiled_op *c, int64_t epoch, int64_t element, int *off_y,
                      int *off_x)
{
    sl_philox_ctr r = sl_philox4x32_10(sl_philox_ctr_for((uint64_t)element, (uint32_t)epoch, 0),
                                       sl_philox_key_for(p->spec.seed, c->op->op_id));
    *off_y = (int)sl_u32_below(r.v[0], (uint32_t)(c->h - c->op->u.crop.crop_h + 1));
    *off_x = (int)sl_u32_below(r.v[1], (uint32_t)(c->w - c->op->u.crop.crop_w + 1));
}

bool sl__flip_decision(const sl_pipeline *p, const sl__compiled_op *c, int64_t epoch, int64_t element)
{
    sl_philox_ctr r = sl_philox4x32_10(sl_philox_ctr_for((uint64_t)element, (uint32_t)epoch, 0),
                                       sl_philox_key_for(p->spec.seed, c->op->op_id));
    return sl_u32_to_unit_float(r.v[0]) < c->op->u.flip.p;
}

sl_status sl__gather_element(const sl_pipeline *p, const sl_kernel_table *kernels, int field, int64_t element,
                             void *dst, sl_err *err)
{
    if (field == p->pack_field) {
        int64_t first = element * p->seq_len;
        int64_t available = p->stream_tokens - first;
        if (available > p->seq_len)
            available = p->seq_len;
        size_t offset = (size_t)first * sizeof(int32_t);
        size_t nbytes = (size_t)available * sizeof(int32_t);
        const int32_t *tokens = sl_source_map(p->source, field, offset, nbytes);
        if (tokens) {
            kernels->pack(dst, tokens, available, p->seq_len, p->pad_id);
            return SL_OK;
        }
        /* No zero-copy view: read the tokens into place, then let the pack
         * kernel write only the padding after them. */
        sl_status st = sl_source_read(p->source, field, offset, nbytes, dst, err);
        if (st)
            return st;
        kernels->pack((int32_t *)dst + available, NULL, 0, p->seq_len - available, p->pad_id);
        return SL_OK;
    }
    size_t bytes = sl_field_element_bytes(&p->source_schema.fields[field]);
    return sl_source_read(p->source, field, (size_t)element * bytes, bytes, dst, err);
}

void sl__batch_begin(const sl_pipeline *p, sl_position position, sl_batch *batch)
{
    int64_t rows = sl_pipeline_batch_rows(p, position.batch);
    sl_permutation perm;
    sl_permutation_init(&perm, (uint64_t)p->dataset_size, p->spec.seed, (uint64_t)position.epoch, p->spec.shuffle);
    int64_t first = position.batch * p->spec.batch_size;
    sl_permutation_apply_strided(&perm, sl_shard_global_position(p->spec.shard, (uint64_t)first),
                                 (uint64_t)p->spec.shard.world, rows, batch->element_ids);
    batch->epoch = position.epoch;
    batch->index = position.batch;
    sl_batch_set_count(batch, rows);
}

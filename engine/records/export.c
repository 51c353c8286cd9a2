/* sluice export: a pipeline's data, order, random decisions and reference
 * digests, written so that another loader can do the same work and prove it
 * did (docs/peers.md). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/json.h"
#include "pipeline/internal.h"
#include "pipeline/op_desc.h"
#include "sluice/core/digest.h"
#include "sluice/core/npy.h"
#include "sluice/exec/executors.h"
#include "sluice/records/export.h"
#include "sluice/records/record.h"

static cJSON *shape_json(const sl_shape *shape, bool *ok)
{
    cJSON *dims = cJSON_CreateArray();
    for (int d = 0; d < shape->rank; d++)
        sl__json_append(dims, cJSON_CreateNumber((double)shape->dims[d]), ok);
    return dims;
}

static cJSON *schema_json(const sl_schema *schema, bool *ok)
{
    cJSON *fields = cJSON_CreateArray();
    for (int f = 0; f < schema->nfields; f++) {
        cJSON *field = cJSON_CreateObject();
        sl__json_put(field, "name", cJSON_CreateString(schema->fields[f].name), ok);
        sl__json_put(field, "dtype", cJSON_CreateString(sl_dtype_name(schema->fields[f].dtype)), ok);
        sl__json_put(field, "shape", shape_json(&schema->fields[f].shape, ok), ok);
        sl__json_append(fields, field, ok);
    }
    return fields;
}

static void put_number(cJSON *object, const char *key, double value, bool *ok)
{
    sl__json_put(object, key, cJSON_CreateNumber(value), ok);
}

static const void *param_at(const sl_op *op, size_t offset)
{
    return (const char *)op + offset;
}

/* One column of a parameter table, as a JSON array of its rows. A float
 * widens to a double exactly, and cJSON prints doubles so they read back to
 * the same double, so a peer's float32(value) is bitwise the value sluice
 * uses. */
static cJSON *column_json(const sl_op *op, const sl__param_column *column, int rows, bool *ok)
{
    cJSON *array = cJSON_CreateArray();
    for (int r = 0; r < rows && r < SL_MAX_CHANNELS; r++) {
        double value = column->derive                  ? (double)column->derive(op, r)
                       : column->type == SL__PARAM_I64 ? (double)((const int64_t *)param_at(op, column->offset))[r]
                                                       : (double)((const float *)param_at(op, column->offset))[r];
        sl__json_append(array, cJSON_CreateNumber(value), ok);
    }
    return array;
}

/* An op's parameters by name, as its descriptor declares them (the same
 * walk feeds the fingerprint): a table's row count, then each column. */
static cJSON *op_params(const sl_op *op, bool *ok)
{
    cJSON *p = cJSON_CreateObject();
    const sl__op_desc *desc = sl__op_desc_of(op->kind);
    for (int i = 0; desc && i < desc->nparams; i++) {
        const sl__op_param *param = &desc->params[i];
        const void *value = param_at(op, param->offset);
        switch (param->type) {
        case SL__PARAM_I32: put_number(p, param->name, *(const int32_t *)value, ok); break;
        case SL__PARAM_I64: put_number(p, param->name, (double)*(const int64_t *)value, ok); break;
        case SL__PARAM_F32: put_number(p, param->name, *(const float *)value, ok); break;
        case SL__PARAM_NAME: sl__json_put(p, param->name, cJSON_CreateString(value), ok); break;
        case SL__PARAM_TABLE: {
            int32_t rows = *(const int32_t *)value;
            put_number(p, param->name, rows, ok);
            for (int k = 0; k < param->ncolumns; k++)
                sl__json_put(p, param->columns[k].name, column_json(op, &param->columns[k], rows, ok), ok);
            break;
        }
        }
    }
    return p;
}

static const char *phase_name(sl__op_phase phase)
{
    return phase == SL__PHASE_SOURCE ? "source" : phase == SL__PHASE_ELEMENT ? "element" : "batch";
}

/* The compiled op of spec op `index`, or NULL (ops before a cache point
 * are compiled into the prefix pipeline, and have no randomness). */
static const sl__compiled_op *compiled_of(const sl_pipeline *p, int index)
{
    for (int i = 0; i < p->ncompiled; i++)
        if (p->compiled[i].op == &p->spec.ops[index])
            return &p->compiled[i];
    return NULL;
}

static sl_status write_i32_matrix(const char *path, int32_t *data, int64_t rows, int64_t cols, sl_err *err)
{
    sl_tensor t = {.dtype = SL_I32, .shape = {.rank = 2, .dims = {rows, cols}}, .data = data};
    return sl_npy_write(path, &t, err);
}

/* One op's decisions for every element of one epoch, indexed by element id. */
static sl_status write_decisions(const sl_pipeline *p, const sl_kernel_table *kernels, const sl__compiled_op *c,
                                 int64_t epoch, const char *path, sl_err *err)
{
    int cols = sl__column_count(c->desc->decision_columns);
    int64_t n = p->dataset_size;
    int32_t *data = malloc((size_t)n * (size_t)cols * sizeof *data + 1);
    if (!data)
        return sl_fail(err, SL_ENOMEM, "no memory for the decisions of op %s", sl__op_name(c));
    sl__op_ctx ctx = {p, kernels, epoch};
    for (int64_t e = 0; e < n; e++)
        c->desc->decisions(&ctx, c, e, data + e * cols);
    sl_status st = write_i32_matrix(path, data, n, cols, err);
    free(data);
    return st;
}

static sl_status path_in(char *buf, size_t size, const char *dir, const char *name, sl_err *err)
{
    if ((size_t)snprintf(buf, size, "%s/%s", dir, name) >= size)
        return sl_fail(err, SL_EINVAL, "export path '%s/%s' is too long", dir, name);
    return SL_OK;
}

/* Each epoch's element order, the batch list and the reference digests
 * (for meta, never for dir), in one pass of the reference kernels over the
 * batches. */
static sl_status write_batches(const sl_pipeline *p, const sl_export_meta *meta, int64_t nbatches, int64_t epochs,
                               const char *dir, cJSON *plan, bool *ok, sl_err *err)
{
    sl_batch *batch = NULL;
    const sl_kernel_table *kernels = meta->kernels;
    sl_status st = sl_batch_create(&p->output_schema, p->spec.batch_size, &batch, err);
    if (st)
        return st;
    int64_t *order = malloc((size_t)p->epoch_size * sizeof *order + 1);
    uint64_t *digests = malloc((size_t)nbatches * sizeof *digests + 1);
    cJSON *list = cJSON_CreateArray();
    if (!order || !digests) {
        st = sl_fail(err, SL_ENOMEM, "no memory for the export's order and digests");
        goto done;
    }
    sl_position pos = {0, 0};
    int64_t i = 0;
    char path[4096], name[64];
    for (int64_t e = 0; e < epochs && !st; e++) {
        int64_t offset = 0;
        for (int64_t b = 0; b < p->batches_per_epoch && !st; b++) {
            pos = (sl_position){e, b};
            bool wanted = i < nbatches;
            /* Without digests to compute, a batch is only begun: its
             * element ids and row count are all the plan needs (the bench
             * computes its digests before the peer starts, so that the plan
             * is written at once after the peer's hello). */
            if (wanted && (meta->digests || meta->digests_path))
                st = sl_pipeline_produce(p, kernels, pos, batch, err);
            else
                st = sl__batch_begin(p, kernels, pos, batch, err);
            if (st)
                break;
            memcpy(order + offset, batch->element_ids, (size_t)batch->count * sizeof *order);
            if (wanted) {
                sl_digest *d = meta->digests || meta->digests_path ? sl_digest_new() : NULL;
                if (d) {
                    sl_digest_add_batch(d, batch);
                    digests[i] = sl_digest_value(d);
                    sl_digest_free(d);
                } else if (meta->digests || meta->digests_path) {
                    st = sl_fail(err, SL_ENOMEM, "no memory for a digest");
                    break;
                }
                cJSON *entry = cJSON_CreateObject();
                put_number(entry, "epoch", (double)e, ok);
                put_number(entry, "batch", (double)b, ok);
                put_number(entry, "offset", (double)offset, ok);
                put_number(entry, "rows", (double)batch->count, ok);
                sl__json_append(list, entry, ok);
                i++;
            }
            offset += batch->count;
        }
        if (st)
            break;
        snprintf(name, sizeof name, "order_e%" PRId64 ".npy", e);
        st = path_in(path, sizeof path, dir, name, err);
        sl_tensor t = {.dtype = SL_I64, .shape = {.rank = 1, .dims = {offset}}, .data = order};
        if (!st)
            st = sl_npy_write(path, &t, err);
    }
    if (!st && meta->digests)
        memcpy(meta->digests, digests, (size_t)nbatches * sizeof *digests);
    if (!st && meta->digests_path) {
        /* u64 has no sl_dtype; the same bytes as i64 (a reader views them as u64). */
        sl_tensor t = {.dtype = SL_I64, .shape = {.rank = 1, .dims = {nbatches}}, .data = digests};
        st = sl_npy_write(meta->digests_path, &t, err);
    }
done:
    sl__json_put(plan, "batches", list, ok);
    free(order);
    free(digests);
    sl_batch_free(batch);
    return st;
}

/* A batch op's per-batch decisions for the plan's first nbatches batches
 * (row k is batch k of the plan): f32 [nbatches, columns], and, for an op
 * that pairs rows, each row's partner within its batch, i32 [nbatches,
 * batch size], -1 past a short batch's rows. The batches are only begun
 * (epoch, index, row count), which is all the draws read. */
static sl_status write_batch_decisions(const sl_pipeline *p, const sl_kernel_table *kernels, const sl__compiled_op *c,
                                       int64_t nbatches, const char *values_path, const char *partners_path,
                                       sl_err *err)
{
    int cols = sl__column_count(c->desc->batch_decision_columns);
    int64_t rows = p->spec.batch_size;
    sl_batch *batch = NULL;
    sl_status st = sl_batch_create(&p->output_schema, rows, &batch, err);
    if (st)
        return st;
    float *values = malloc((size_t)nbatches * (size_t)cols * sizeof *values + 1);
    int32_t *partners = malloc((size_t)nbatches * (size_t)rows * sizeof *partners + 1);
    int64_t *partner = malloc((size_t)rows * sizeof *partner + 1);
    if (!values || !partners || !partner) {
        st = sl_fail(err, SL_ENOMEM, "no memory for the decisions of op %s", sl__op_name(c));
        goto done;
    }
    sl__op_ctx ctx = {p, kernels, 0};
    for (int64_t k = 0; k < nbatches; k++) {
        sl_position pos = {k / p->batches_per_epoch, k % p->batches_per_epoch};
        sl__batch_begin_without_ids(p, pos, batch);
        ctx.epoch = pos.epoch;
        c->desc->batch_decisions(&ctx, c, batch, values + k * cols, partner);
        for (int64_t i = 0; i < rows; i++)
            partners[k * rows + i] = c->desc->batch_partners && i < batch->count ? (int32_t)partner[i] : -1;
    }
    sl_tensor t = {.dtype = SL_F32, .shape = {.rank = 2, .dims = {nbatches, cols}}, .data = values};
    st = sl_npy_write(values_path, &t, err);
    if (!st && c->desc->batch_partners)
        st = write_i32_matrix(partners_path, partners, nbatches, rows, err);
done:
    free(values);
    free(partners);
    free(partner);
    sl_batch_free(batch);
    return st;
}

static cJSON *op_json(const sl_pipeline *p, const sl_kernel_table *kernels, int index, int64_t nbatches, int64_t epochs,
                      const char *dir, bool *exportable, sl_status *st, bool *ok, sl_err *err)
{
    const sl_op *op = &p->spec.ops[index];
    const sl__op_desc *desc = sl__op_desc_of(op->kind);
    const sl__compiled_op *c = compiled_of(p, index);
    cJSON *o = cJSON_CreateObject();
    sl__json_put(o, "index", cJSON_CreateNumber(index), ok);
    sl__json_put(o, "kind", cJSON_CreateString(sl_op_kind_name(op->kind)), ok);
    sl__json_put(o, "field", cJSON_CreateString(op->field), ok);
    sl__json_put(o, "op_id", cJSON_CreateNumber(op->op_id), ok);
    sl__json_put(o, "phase", cJSON_CreateString(phase_name(desc->phase)), ok);
    sl__json_put(o, "params", op_params(op, ok), ok);
    sl__json_put(o, "random", cJSON_CreateBool(desc->random), ok);
    if (!desc->random)
        return o;
    cJSON *dec = cJSON_CreateObject();
    char name[64], path[4096];
    if (desc->decisions && c) {
        snprintf(name, sizeof name, "decisions_op%d_e{epoch}.npy", index);
        sl__json_put(dec, "exported", cJSON_CreateTrue(), ok);
        sl__json_put(dec, "file", cJSON_CreateString(name), ok);
        sl__json_put(dec, "dtype", cJSON_CreateString("i32"), ok);
        sl__json_put(dec, "columns", cJSON_CreateString(desc->decision_columns), ok);
        sl__json_put(dec, "indexed_by", cJSON_CreateString("element id"), ok);
        for (int64_t e = 0; e < epochs && !*st; e++) {
            snprintf(name, sizeof name, "decisions_op%d_e%" PRId64 ".npy", index, e);
            *st = path_in(path, sizeof path, dir, name, err);
            if (!*st)
                *st = write_decisions(p, kernels, c, e, path, err);
        }
    } else if (desc->batch_decisions && c) {
        char partners_name[64], partners_path[4096];
        snprintf(name, sizeof name, "decisions_op%d_batches.npy", index);
        snprintf(partners_name, sizeof partners_name, "decisions_op%d_partners.npy", index);
        sl__json_put(dec, "exported", cJSON_CreateTrue(), ok);
        sl__json_put(dec, "file", cJSON_CreateString(name), ok);
        sl__json_put(dec, "dtype", cJSON_CreateString("f32"), ok);
        sl__json_put(dec, "columns", cJSON_CreateString(desc->batch_decision_columns), ok);
        sl__json_put(dec, "indexed_by", cJSON_CreateString("batch (row k is the plan's batches[k])"), ok);
        if (desc->batch_partners) {
            sl__json_put(dec, "partners_file", cJSON_CreateString(partners_name), ok);
            sl__json_put(dec, "partners_dtype", cJSON_CreateString("i32"), ok);
            sl__json_put(dec, "partners_indexed_by",
                         cJSON_CreateString("batch, row within the batch (-1 past a short batch's rows)"), ok);
        }
        *st = path_in(path, sizeof path, dir, name, err);
        if (!*st)
            *st = path_in(partners_path, sizeof partners_path, dir, partners_name, err);
        if (!*st)
            *st = write_batch_decisions(p, kernels, c, nbatches, path, partners_path, err);
    } else if (desc->keyed_draws) {
        sl__json_put(dec, "exported", cJSON_CreateTrue(), ok);
        sl__json_put(dec, "keyed", cJSON_CreateString(desc->keyed_draws), ok);
    } else {
        *exportable = false;
        sl__json_put(dec, "exported", cJSON_CreateFalse(), ok);
        sl__json_put(dec, "reason",
                     cJSON_CreateString(desc->no_decisions_reason
                                            ? desc->no_decisions_reason
                                            : "its draws are not exported; a peer is compared statistically, never "
                                              "bitwise"),
                     ok);
    }
    sl__json_put(o, "decisions", dec, ok);
    return o;
}

/* Whether op `index`'s draws are handed over: not random, random with a
 * decisions hook (per element or per batch), or keyed by what the plan
 * holds. */
static bool op_exported(const sl_pipeline *p, int index)
{
    const sl__op_desc *desc = sl__op_desc_of(p->spec.ops[index].kind);
    return !desc->random || desc->keyed_draws || ((desc->decisions || desc->batch_decisions) && compiled_of(p, index));
}

bool sl_export_decisions_exported(const sl_pipeline *p)
{
    for (int i = 0; i < p->spec.nops; i++)
        if (!op_exported(p, i))
            return false;
    return true;
}

bool sl_export_draws(const sl_pipeline *p)
{
    for (int i = 0; i < p->spec.nops; i++)
        if (sl__op_desc_of(p->spec.ops[i].kind)->random)
            return true;
    return false;
}

sl_status sl_export_rekeyed(const sl_pipeline *p, uint32_t salt, sl_pipeline **out, sl_err *err)
{
    sl_pipeline_spec spec = p->spec;
    /* A multiple of the golden ratio's 32-bit fraction moves each op id far
     * from the small ids scenarios use, so no two random ops share a key. */
    for (int i = 0; i < spec.nops; i++)
        if (!op_exported(p, i))
            spec.ops[i].op_id += 0x9E3779B9u * salt;
    return sl_pipeline_create(&spec, out, err);
}

sl_status sl_export_write(const sl_pipeline *p, const sl_export_meta *meta, int64_t nbatches, const char *dir,
                          sl_err *err)
{
    if (nbatches <= 0)
        return sl_fail(err, SL_EINVAL, "an export needs at least one batch, got %" PRId64, nbatches);
    if (!meta || !meta->kernels)
        return sl_fail(err, SL_EINVAL, "an export needs the kernel table its batches are computed with (meta.kernels)");
    sl_status st = meta->plan_only ? SL_OK : sl_source_export_npy(p->spec.source, dir, err);
    if (st || meta->data_only)
        return st;
    int64_t epochs = (nbatches + p->batches_per_epoch - 1) / p->batches_per_epoch;
    bool ok = true, exportable = true;
    cJSON *plan = cJSON_CreateObject();
    sl__json_put(plan, "format", cJSON_CreateString("sluice-peer-plan"), &ok);
    sl__json_put(plan, "version", cJSON_CreateNumber(SL_EXPORT_VERSION), &ok);
    sl__json_put(plan, "scenario", cJSON_CreateString(meta && meta->scenario ? meta->scenario : ""), &ok);
    sl__json_put(plan, "variant", cJSON_CreateString(meta && meta->variant ? meta->variant : ""), &ok);
    sl__json_put(plan, "profile", cJSON_CreateString(meta && meta->profile ? meta->profile : ""), &ok);
    put_number(plan, "warmup_batches", meta ? (double)meta->warmup_batches : 0.0, &ok);
    sl__json_put(plan, "seed", sl__json_u64_text(p->spec.seed), &ok);
    sl__json_put(plan, "shuffle", cJSON_CreateBool(p->spec.shuffle), &ok);
    sl__json_put(plan, "mode", cJSON_CreateString(sl_mode_name(p->spec.mode)), &ok);
    put_number(plan, "batch_size", (double)p->spec.batch_size, &ok);
    sl__json_put(plan, "drop_last", cJSON_CreateBool(p->spec.drop_last), &ok);
    put_number(plan, "dataset_size", (double)p->dataset_size, &ok);
    put_number(plan, "epoch_size", (double)p->epoch_size, &ok);
    put_number(plan, "batches_per_epoch", (double)p->batches_per_epoch, &ok);
    put_number(plan, "nbatches", (double)nbatches, &ok);
    put_number(plan, "epochs", (double)epochs, &ok);
    sl__json_put(plan, "fingerprint", sl__json_hex64(sl_pipeline_fingerprint(p)), &ok);

    cJSON *source = cJSON_CreateObject();
    put_number(source, "rows", (double)sl_source_rows(p->spec.source), &ok);
    sl__json_put(source, "fields", schema_json(sl_source_schema(p->spec.source), &ok), &ok);
    sl__json_put(plan, "source", source, &ok);
    sl__json_put(plan, "output", schema_json(&p->output_schema, &ok), &ok);

    cJSON *ops = cJSON_CreateArray();
    for (int i = 0; i < p->spec.nops && !st; i++)
        sl__json_append(ops, op_json(p, meta->kernels, i, nbatches, epochs, dir, &exportable, &st, &ok, err), &ok);
    sl__json_put(plan, "ops", ops, &ok);
    sl__json_put(plan, "order_file", cJSON_CreateString("order_e{epoch}.npy"), &ok);
    if (!st)
        st = write_batches(p, meta, nbatches, epochs, dir, plan, &ok, err);
    sl__json_put(plan, "decisions_exported", cJSON_CreateBool(exportable), &ok);
    if (st) {
        cJSON_Delete(plan);
        return st;
    }
    char path[4096];
    st = path_in(path, sizeof path, dir, "plan.json", err);
    if (st) {
        cJSON_Delete(plan);
        return st;
    }
    st = sl__json_save(ok ? plan : (cJSON_Delete(plan), NULL), path, err);
    if (st == SL_OK)
        st = sl_folder_write_manifest(dir, "export", meta->origin, err);
    return st;
}

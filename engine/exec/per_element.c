/* The per-element executor: each element computed alone, through every op,
 * into buffers of its own, then the batch collated from the elements. This
 * is what a Python `map` over a data set followed by a collate function
 * does, and the baseline that shows what batching and fusion buy: the same
 * bytes as the batched executors (every draw is keyed by the element), at
 * the cost of one call per op per element and an allocation per op. */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "gather.h"
#include "pipeline/internal.h"
#include "pipeline/op_desc.h"
#include "source/check.h"

/* Bytes of one element of a source field as gathered (a packed sequence for
 * a token stream). */
static size_t gathered_bytes(const sl_pipeline *p, int field)
{
    return field == p->pack_field ? (size_t)p->seq_len * sizeof(int32_t)
                                  : sl_field_element_bytes(&p->source_schema.fields[field]);
}

static size_t max_scratch(const sl_pipeline *p)
{
    size_t bytes = 1;
    for (int i = 0; i < p->ncompiled; i++)
        if (p->compiled[i].scratch_bytes > bytes)
            bytes = p->compiled[i].scratch_bytes;
    return bytes;
}

/* One field of one element from the source through its ops; every op
 * writes a newly allocated buffer, as a transform returning a new array
 * does. */
static sl_status element_field(const sl_pipeline *p, const sl_source *source, const sl__op_ctx *ctx, int field,
                               int64_t element, void *out, void *scratch, sl_err *err)
{
    void *cur = sl__aligned_alloc(SL_ALIGN, gathered_bytes(p, field));
    if (!cur)
        return sl_fail(err, SL_ENOMEM, "cannot allocate element %lld of field '%s'", (long long)element,
                       p->source_schema.fields[field].name);
    sl_status st = sl__gather_element(p, source, ctx->kernels, field, element, cur, err);
    for (int i = 0; i < p->ncompiled && !st; i++) {
        const sl__compiled_op *c = &p->compiled[i];
        /* An op with an owner runs inside its owner's rows. */
        if (c->field != field || c->desc->phase != SL__PHASE_ELEMENT || c->owner >= 0)
            continue;
        void *next = sl__aligned_alloc(SL_ALIGN, c->out_bytes);
        if (!next) {
            st = sl_fail(err, SL_ENOMEM, "cannot allocate %zu bytes for op %d (%s)", c->out_bytes, i, sl__op_name(c));
            break;
        }
        c->desc->rows(ctx, c, &element, 1, cur, next, scratch);
        free(cur);
        cur = next;
    }
    if (!st)
        memcpy(out, cur, sl_field_element_bytes(&p->output_schema.fields[field]));
    free(cur);
    return st;
}

sl_status sl_pipeline_produce_element(const sl_pipeline *p, const sl_kernel_table *kernels, int64_t epoch,
                                      int64_t element, void *const out[SL_MAX_FIELDS], sl_err *err)
{
    if (epoch < 0 || epoch > SL_MAX_EPOCH)
        return sl_fail(err, SL_EINVAL, "epoch %lld is outside [0, %lld]", (long long)epoch, (long long)SL_MAX_EPOCH);
    if (element < 0 || element >= p->dataset_size)
        return sl_fail(err, SL_EINVAL, "element %lld is outside the data set [0, %lld)", (long long)element,
                       (long long)p->dataset_size);
    const sl_source *source;
    sl_status st = sl__require_kernels(kernels, "producing an element", err);
    if (st == SL_OK)
        st = sl__element_source(p, kernels, &source, err);
    if (st)
        return st;
    void *scratch = sl__aligned_alloc(SL_ALIGN, max_scratch(p));
    if (!scratch)
        return sl_fail(err, SL_ENOMEM, "cannot allocate op scratch");
    sl__op_ctx ctx = {p, kernels, epoch};
    for (int f = 0; f < p->source_schema.nfields && !st; f++)
        st = element_field(p, source, &ctx, f, element, out[f], scratch, err);
    free(scratch);
    return st ? st : sl__source_check(source, err);
}

/* The elements of one batch, each in its own allocation per field, as the
 * list a `map` yields before collation. */
typedef struct element_list {
    int64_t count;
    void **rows; /* count x nfields */
} element_list;

static void element_list_free(element_list *list, int nfields)
{
    for (int64_t i = 0; list->rows && i < list->count * nfields; i++)
        free(list->rows[i]);
    free(list->rows);
}

sl_status sl_pipeline_produce_per_element(const sl_pipeline *p, const sl_kernel_table *kernels, sl_position position,
                                          sl_batch *dst, sl_err *err)
{
    sl_status st = sl__require_kernels(kernels, "producing a batch", err);
    if (st == SL_OK)
        st = sl__produce_check(p, position, dst, err);
    if (st == SL_OK)
        st = sl__batch_begin(p, kernels, position, dst, err);
    if (st)
        return st;
    int nfields = p->source_schema.nfields;
    element_list list = {dst->count, calloc((size_t)dst->count * (size_t)nfields + 1, sizeof(void *))};
    if (!list.rows)
        return sl_fail(err, SL_ENOMEM, "cannot allocate a list of %lld elements", (long long)dst->count);
    for (int64_t r = 0; r < dst->count && !st; r++) {
        void **row = list.rows + r * nfields;
        for (int f = 0; f < nfields && !st; f++) {
            row[f] = sl__aligned_alloc(SL_ALIGN, sl_field_element_bytes(&p->output_schema.fields[f]));
            if (!row[f])
                st = sl_fail(err, SL_ENOMEM, "cannot allocate element %lld", (long long)dst->element_ids[r]);
        }
        if (!st)
            st = sl_pipeline_produce_element(p, kernels, position.epoch, dst->element_ids[r], row, err);
    }
    /* Collation: the elements stacked into the batch's fields, row by row. */
    for (int f = 0; f < nfields && !st; f++) {
        size_t bytes = sl_field_element_bytes(&p->output_schema.fields[f]);
        for (int64_t r = 0; r < dst->count; r++)
            memcpy((char *)dst->fields[f].data + (size_t)r * bytes, list.rows[r * nfields + f], bytes);
    }
    element_list_free(&list, nfields);
    if (!st)
        st = sl__run_batch_ops(p, kernels, dst, err);
    return st;
}

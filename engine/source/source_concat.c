/* A concatenation of sources with one schema: part 0's rows, then part 1's,
 * and so on. It is what a pipeline's mixture interleaves (IO-3): the
 * mixture decides which part each position takes, and the concatenation
 * turns the chosen element's id into bytes. Reads and views go to the part
 * that holds them, so a concatenation of memory or mapped parts is still
 * zero-copy for the fused executor. */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "sluice/source/source.h"
#include "source/source_impl.h"

typedef struct concat_state {
    int nparts;
    sl_source *parts[SL_MAX_PARTS];
    int64_t first_row[SL_MAX_PARTS + 1]; /* first_row[p]: the concatenation's row of part p's row 0 */
    bool owns;
} concat_state;

static void release_concat(sl_source *source)
{
    concat_state *cs = source->state;
    if (!cs)
        return;
    for (int p = 0; cs->owns && p < cs->nparts; p++)
        sl_source_free(cs->parts[p]);
    free(cs);
}

/* The part that holds row, found by a scan: there are at most eight. */
static int part_of_row(const concat_state *cs, int64_t row)
{
    int p = 0;
    while (p + 1 < cs->nparts && row >= cs->first_row[p + 1])
        p++;
    return p;
}

static sl_status read_concat(const sl_source *source, int field, size_t offset, size_t nbytes, void *dst, sl_err *err)
{
    const concat_state *cs = source->state;
    size_t row_bytes = sl_field_element_bytes(&source->schema.fields[field]);
    unsigned char *out = dst;
    /* A read may span parts (an export reads a whole field): each piece goes
     * to its own part. */
    while (nbytes > 0) {
        int p = part_of_row(cs, (int64_t)(offset / row_bytes));
        size_t part_start = (size_t)cs->first_row[p] * row_bytes;
        size_t part_end = (size_t)cs->first_row[p + 1] * row_bytes;
        size_t n = part_end - offset < nbytes ? part_end - offset : nbytes;
        sl_status st = sl_source_read(cs->parts[p], field, offset - part_start, n, out, err);
        if (st != SL_OK)
            return sl_fail_context(err, "part %d of a concatenation", p);
        out += n;
        offset += n;
        nbytes -= n;
    }
    return SL_OK;
}

static const void *map_concat(const sl_source *source, int field, size_t offset, size_t nbytes)
{
    const concat_state *cs = source->state;
    size_t row_bytes = sl_field_element_bytes(&source->schema.fields[field]);
    if (row_bytes == 0)
        return NULL;
    int p = part_of_row(cs, (int64_t)(offset / row_bytes));
    size_t part_start = (size_t)cs->first_row[p] * row_bytes;
    size_t part_end = (size_t)cs->first_row[p + 1] * row_bytes;
    if (nbytes > part_end - offset)
        return NULL; /* it spans two parts: no single view */
    return sl_source_map(cs->parts[p], field, offset - part_start, nbytes);
}

static sl_status check_concat(const sl_source *source, sl_err *err)
{
    const concat_state *cs = source->state;
    for (int p = 0; p < cs->nparts; p++) {
        sl_status st = sl__source_check(cs->parts[p], err);
        if (st != SL_OK)
            return sl_fail_context(err, "part %d of a concatenation", p);
    }
    return SL_OK;
}

static const sl__source_ops concat_ops = {read_concat, release_concat, check_concat, map_concat};

/* Part p's schema must be part 0's, field by field. */
static sl_status same_schema(const sl_schema *first, const sl_schema *other, int p, sl_err *err)
{
    if (other->nfields != first->nfields)
        return sl_fail(err, SL_EMISMATCH, "part %d has %d fields, part 0 has %d", p, other->nfields, first->nfields);
    for (int f = 0; f < first->nfields; f++) {
        const sl_field_spec *a = &first->fields[f], *b = &other->fields[f];
        if (strcmp(a->name, b->name) != 0)
            return sl_fail(err, SL_EMISMATCH, "part %d's field %d is '%s', part 0's is '%s'", p, f, b->name, a->name);
        if (a->dtype != b->dtype || !sl_shape_equal(&a->shape, &b->shape))
            return sl_fail(err, SL_EMISMATCH, "part %d's field '%s' differs from part 0's in dtype or shape", p,
                           a->name);
    }
    return SL_OK;
}

sl_status sl_source_concat_create(int nparts, sl_source *const *parts, sl_ownership ownership, sl_source **out,
                                  sl_err *err)
{
    *out = NULL;
    if (nparts < 1 || nparts > SL_MAX_PARTS)
        return sl_fail(err, SL_EINVAL, "a concatenation has 1 to %d parts, got %d", SL_MAX_PARTS, nparts);
    int64_t rows = 0;
    for (int p = 0; p < nparts; p++) {
        if (!parts[p])
            return sl_fail(err, SL_EINVAL, "part %d of a concatenation is NULL", p);
        sl_status st = same_schema(&parts[0]->schema, &parts[p]->schema, p, err);
        if (st != SL_OK)
            return st;
        if (parts[p]->rows > INT64_MAX - rows)
            return sl_fail(err, SL_EINVAL, "the parts of a concatenation hold more than 2^63 rows");
        rows += parts[p]->rows;
    }
    concat_state *cs = calloc(1, sizeof *cs);
    if (!cs)
        return sl_fail(err, SL_ENOMEM, "cannot allocate a concatenation");
    sl_source *source;
    sl_status st = sl__source_new(SL_SOURCE_CONCAT, &parts[0]->schema, rows, &source, err);
    if (st != SL_OK) {
        free(cs);
        return st;
    }
    cs->nparts = nparts;
    cs->owns = ownership == SL_TAKE;
    for (int p = 0; p < nparts; p++) {
        cs->parts[p] = parts[p];
        cs->first_row[p + 1] = cs->first_row[p] + parts[p]->rows;
        source->part_rows[p] = parts[p]->rows;
    }
    source->nparts = nparts;
    source->ops = &concat_ops;
    source->state = cs;
    *out = source;
    return SL_OK;
}

const sl_source *sl_source_part(const sl_source *source, int part)
{
    if (source->kind != SL_SOURCE_CONCAT)
        return part == 0 ? source : NULL;
    const concat_state *cs = source->state;
    return part >= 0 && part < cs->nparts ? cs->parts[part] : NULL;
}

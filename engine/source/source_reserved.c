/* A source whose rows live in reserved address space and exist only where
 * they were filled (source/source_impl.h): what lets a rank of a
 * distributed run hold only the rows it reads of a data set it addresses
 * whole. Each field is one PROT_NONE mapping of the whole field; filling
 * rows makes their pages readable and writes them, so resident memory
 * follows the rows filled, not the rows addressed. A read of a page that
 * holds no filled row faults, and the guard (core/mapguard.h) turns the
 * fault into zeros and a mark that the source's check reports: never a
 * silent wrong value, never a crash. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/internal.h"
#include "core/mapguard.h"
#include "source/source_impl.h"

typedef struct reserved_state {
    void *map[SL_MAX_FIELDS];
    size_t map_bytes[SL_MAX_FIELDS];
    int guard[SL_MAX_FIELDS];
    uint64_t *filled; /* one bit per row */
    int64_t rows_filled;
} reserved_state;

static bool bit(const uint64_t *bits, int64_t i)
{
    return (bits[i >> 6] >> (i & 63)) & 1u;
}

static void set_bit(uint64_t *bits, int64_t i)
{
    bits[i >> 6] |= UINT64_C(1) << (i & 63);
}

static void release(sl_source *source)
{
    reserved_state *st = source->state;
    if (!st)
        return;
    for (int f = 0; f < source->schema.nfields; f++) {
        sl__mapguard_unregister(st->guard[f]);
        if (st->map[f])
            munmap(st->map[f], st->map_bytes[f]);
    }
    free(st->filled);
    free(st);
}

static sl_status check(const sl_source *source, sl_err *err)
{
    const reserved_state *st = source->state;
    for (int f = 0; f < source->schema.nfields; f++)
        if (sl__mapguard_damaged(st->guard[f]))
            return sl_fail(err, SL_EIO,
                           "field '%s': a row was read that this process never generated (it holds %" PRId64
                           " of %" PRId64 " rows, the ones its run was to read); the values read were zeros",
                           source->schema.fields[f].name, st->rows_filled, source->rows);
    return SL_OK;
}

static const sl__source_ops reserved_ops = {.release = release, .check = check};

static size_t page_size(void)
{
    return (size_t)sysconf(_SC_PAGESIZE);
}

sl_status sl__source_reserved_create(const sl_schema *schema, int64_t rows, sl_source **out, sl_err *err)
{
    sl_source *source;
    sl_status status = sl__source_new(SL_SOURCE_MEMORY, schema, rows, &source, err);
    if (status != SL_OK)
        return status;
    reserved_state *st = calloc(1, sizeof *st);
    if (st)
        st->filled = calloc((size_t)(rows / 64 + 1), sizeof *st->filled);
    if (!st || !st->filled) {
        free(st);
        free(source);
        return sl_fail(err, SL_ENOMEM, "cannot track which of %" PRId64 " rows exist", rows);
    }
    for (int f = 0; f < SL_MAX_FIELDS; f++)
        st->guard[f] = -1;
    source->state = st;
    source->ops = &reserved_ops;
    size_t page = page_size();
    for (int f = 0; f < schema->nfields && status == SL_OK; f++) {
        size_t bytes = source->field_bytes[f] ? source->field_bytes[f] : 1;
        st->map_bytes[f] = (bytes + page - 1) / page * page;
        /* Address space only: nothing is committed until rows are filled. */
        void *map = mmap(NULL, st->map_bytes[f], PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (map == MAP_FAILED) {
            status = sl_fail(err, SL_ENOMEM, "cannot reserve %zu bytes of address space for field '%s': %s",
                             st->map_bytes[f], schema->fields[f].name, strerror(errno));
            break;
        }
        st->map[f] = map;
        st->guard[f] = sl__mapguard_register_reserved(map, st->map_bytes[f]);
        source->data[f] = map;
    }
    if (status != SL_OK) {
        sl_source_free(source);
        return status;
    }
    *out = source;
    return SL_OK;
}

/* Marks, in want, every row that shares a page of some field with a row in
 * want or already filled, until no more join: a readable page then holds
 * only rows that exist, so no read of a row not filled returns zeros
 * silently. Rows of a page multiple in size, aligned (as an image row is)
 * add nobody; rows smaller than a page bring their page's neighbours. */
static void close_over_pages(const sl_source *source, const reserved_state *st, uint64_t *want)
{
    size_t page = page_size();
    bool changed = true;
    while (changed) {
        changed = false;
        for (int f = 0; f < source->schema.nfields; f++) {
            size_t row_bytes = source->rows ? source->field_bytes[f] / (size_t)source->rows : 0;
            if (row_bytes == 0)
                continue;
            for (int64_t r = 0; r < source->rows; r++) {
                if (!bit(want, r))
                    continue;
                size_t lo = (size_t)r * row_bytes / page * page;
                size_t hi = ((size_t)(r + 1) * row_bytes + page - 1) / page * page;
                int64_t first = (int64_t)(lo / row_bytes);
                int64_t last = (int64_t)((hi - 1) / row_bytes);
                for (int64_t k = first; k <= last && k < source->rows; k++)
                    if (!bit(want, k) && !bit(st->filled, k)) {
                        set_bit(want, k);
                        changed = true;
                    }
            }
        }
    }
}

sl_status sl__source_reserved_fill(sl_source *source, const int64_t *ids, int64_t n, sl__source_fill_fn fill,
                                   void *user, sl_err *err)
{
    if (source->ops != &reserved_ops)
        return sl_fail(err, SL_EINVAL, "only a reserved source's rows can be filled");
    reserved_state *st = source->state;
    uint64_t *want = calloc((size_t)(source->rows / 64 + 1), sizeof *want);
    if (!want)
        return sl_fail(err, SL_ENOMEM, "out of memory choosing rows to fill");
    for (int64_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= source->rows) {
            free(want);
            return sl_fail(err, SL_EINVAL, "row %" PRId64 " is not in [0, %" PRId64 ")", ids[i], source->rows);
        }
        if (!bit(st->filled, ids[i]))
            set_bit(want, ids[i]);
    }
    close_over_pages(source, st, want);
    size_t page = page_size();
    unsigned char *fields[SL_MAX_FIELDS];
    for (int f = 0; f < source->schema.nfields; f++)
        fields[f] = st->map[f];
    sl_status status = SL_OK;
    for (int64_t r = 0; r < source->rows && status == SL_OK;) {
        if (!bit(want, r)) {
            r++;
            continue;
        }
        int64_t end = r;
        while (end < source->rows && bit(want, end))
            end++;
        /* Rows [r, end): their pages writable, written, then read-only, as
         * the rest of a source's bytes are. */
        for (int f = 0; f < source->schema.nfields && status == SL_OK; f++) {
            size_t row_bytes = source->field_bytes[f] / (size_t)source->rows;
            size_t lo = (size_t)r * row_bytes / page * page;
            size_t hi = ((size_t)end * row_bytes + page - 1) / page * page;
            if (hi > lo && mprotect(fields[f] + lo, hi - lo, PROT_READ | PROT_WRITE) != 0)
                status = sl_fail(err, SL_ENOMEM, "cannot commit rows %" PRId64 " to %" PRId64 " of field '%s': %s", r,
                                 end - 1, source->schema.fields[f].name, strerror(errno));
        }
        if (status == SL_OK)
            fill(user, fields, r, end - r);
        for (int f = 0; f < source->schema.nfields; f++) {
            size_t row_bytes = source->field_bytes[f] / (size_t)source->rows;
            size_t lo = (size_t)r * row_bytes / page * page;
            size_t hi = ((size_t)end * row_bytes + page - 1) / page * page;
            if (hi > lo)
                mprotect(fields[f] + lo, hi - lo, PROT_READ);
        }
        for (int64_t k = r; k < end && status == SL_OK; k++) {
            set_bit(st->filled, k);
            st->rows_filled++;
        }
        r = end;
    }
    free(want);
    return status;
}

int64_t sl__source_reserved_rows(const sl_source *source)
{
    return source->ops == &reserved_ops ? ((const reserved_state *)source->state)->rows_filled : source->rows;
}

/* Fetching elements: the source an executor reads (the spec's or its
 * table's cache), where an element's bytes lie, and the prefetch that hides
 * the misses of a shuffled order. */
#include "gather.h"
#include "cache_source.h"

sl_status sl__require_kernels(const sl_kernel_table *kernels, const char *who, sl_err *err)
{
    return kernels ? SL_OK : sl_fail(err, SL_EINVAL, "%s needs a kernel table (sl_kernels_choose)", who);
}

sl_status sl__element_source(const sl_pipeline *p, const sl_kernel_table *kernels, const sl_source **out, sl_err *err)
{
    if (p->cache_at < 0) {
        *out = p->source;
        return SL_OK;
    }
    sl_pipeline *mutable = (sl_pipeline *)p;
    sl_status st = SL_OK;
    pthread_mutex_lock(&mutable->cache_lock);
    if (!mutable->caches[kernels->id])
        st = sl__cache_source_create(p->prefix, kernels, &mutable->caches[kernels->id], err);
    *out = mutable->caches[kernels->id];
    pthread_mutex_unlock(&mutable->cache_lock);
    return st;
}

void sl__element_span(const sl_pipeline *p, int field, int64_t element, size_t *offset, size_t *nbytes)
{
    if (field == p->pack_field) {
        int64_t first = element * p->seq_len;
        int64_t available = p->stream_tokens - first;
        if (available > p->seq_len)
            available = p->seq_len;
        *offset = (size_t)first * sizeof(int32_t);
        *nbytes = (size_t)available * sizeof(int32_t);
        return;
    }
    size_t bytes = sl_field_element_bytes(&p->source_schema.fields[field]);
    *offset = (size_t)element * bytes;
    *nbytes = bytes;
}

/* How many rows ahead an element is asked for (sl__prefetch_ahead): all of
 * its row (up to 16 KiB, below), 8 rows ahead, into L2 (prefetcht1,
 * locality 2), not L1.
 *
 * A row asked for into L1 was gone before it was read: while the 8 rows
 * before it are transformed, their output (12 KiB a row on CV-1, 48 KiB on
 * IO-1) streams through L1's 32 KiB and evicts it. Into L1, whole rows 8
 * ahead were no faster than before (the first 2 KiB of a row, 4 ahead,
 * the hardware prefetcher following the rest); into L2 they made fused
 * 1.66x [1.37-1.94] faster on CV-1, 1.17x [1.07-1.28] on IO-1 and about
 * 1.04x on PC-1, TAB-1 unchanged, per round over 8 interleaved rounds
 * (docs/adapters.md, "CV-1 and IO-1"). The gather probe asks the same way,
 * so the hardware bound moved with it: it was loose by as much.
 *
 * A row longer than 16 KiB (PC-1's, the longest measured, is 16 KiB) is
 * asked for by its first 16 KiB, and the hardware prefetcher follows the rest once it
 * is read in order: at most 128 KiB asked for ahead, an eighth of L2,
 * where whole rows of CV-1's 256x256 variant (192 KiB) 8 ahead would
 * evict each other before they were read. */
#define PREFETCH_DISTANCE  8
#define PREFETCH_MAX_BYTES ((size_t)16 * 1024)

static void prefetch_element(const sl_pipeline *p, const sl_source *source, int64_t element)
{
    for (int f = 0; f < p->source_schema.nfields; f++) {
        size_t offset, bytes;
        sl__element_span(p, f, element, &offset, &bytes);
        const char *row = bytes ? sl_source_map(source, f, offset, bytes) : NULL;
        if (!row)
            continue;
        size_t span = bytes < PREFETCH_MAX_BYTES ? bytes : PREFETCH_MAX_BYTES;
        for (size_t at = 0; at < span; at += 64)
            __builtin_prefetch(row + at, 0, 2);
    }
}

void sl__prefetch_ahead(const sl_pipeline *p, const sl_source *source, const int64_t *ids, int64_t first, int64_t row,
                        int64_t end)
{
    if (row == first)
        for (int64_t r = first; r < end && r < first + PREFETCH_DISTANCE; r++)
            prefetch_element(p, source, ids[r]);
    if (row + PREFETCH_DISTANCE < end)
        prefetch_element(p, source, ids[row + PREFETCH_DISTANCE]);
}

sl_status sl__gather_element(const sl_pipeline *p, const sl_source *source, const sl_kernel_table *kernels, int field,
                             int64_t element, void *dst, sl_err *err)
{
    size_t offset, nbytes;
    sl__element_span(p, field, element, &offset, &nbytes);
    if (field == p->pack_field) {
        int64_t available = (int64_t)(nbytes / sizeof(int32_t));
        const int32_t *tokens = sl_source_map(source, field, offset, nbytes);
        if (tokens) {
            kernels->pack(dst, tokens, available, p->seq_len, p->pad_id);
            return SL_OK;
        }
        /* No zero-copy view: read the tokens into place, then let the pack
         * kernel write only the padding after them. */
        sl_status st = sl_source_read(source, field, offset, nbytes, dst, err);
        if (st)
            return st;
        kernels->pack((int32_t *)dst + available, NULL, 0, p->seq_len - available, p->pad_id);
        return SL_OK;
    }
    return sl_source_read(source, field, offset, nbytes, dst, err);
}

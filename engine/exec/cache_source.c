/* The cache of a pipeline (a `cache` op): a source whose element i is the
 * output of the ops before the cache for element i, computed on first read
 * and kept. The pipeline's own ops, after the cache, read it like any other
 * source, so no executor knows caches exist.
 *
 * Prefetch workers read it from several threads at once. Each element has a
 * state (empty, being filled, filled): a reader that finds it filled copies
 * it; one that does not computes it, and publishes it unless another thread
 * is already doing so. Computing an element twice gives the same bytes (the
 * prefix is a pure function of the element), so no reader ever waits. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "cache_source.h"
#include "core/internal.h"
#include "gather.h"
#include "pipeline/internal.h"
#include "sluice/exec/executors.h"
#include "source/source_impl.h"

enum { SLOT_EMPTY = 0, SLOT_FILLING, SLOT_FILLED };

typedef struct cache_state {
    const sl_pipeline *prefix;
    const sl_kernel_table *kernels;
    int nfields;
    size_t element_bytes[SL_MAX_FIELDS];
    unsigned char *slots[SL_MAX_FIELDS]; /* rows x element_bytes, zero pages until filled */
    atomic_uchar *state;                 /* one per element */
    atomic_llong filled;
} cache_state;

static void release_cache(sl_source *source)
{
    cache_state *cs = source->state;
    if (!cs)
        return;
    for (int f = 0; f < cs->nfields; f++)
        free(cs->slots[f]);
    free(cs->state);
    free(cs);
}

/* The prefix's output for one element: batch index i of an unshuffled
 * pipeline of batch size 1 is element i. */
static sl_status compute_element(const cache_state *cs, int64_t element, sl_batch *scratch, sl_err *err)
{
    return sl_pipeline_produce(cs->prefix, cs->kernels, (sl_position){0, element}, scratch, err);
}

static sl_status read_cached(const sl_source *source, int field, size_t offset, size_t nbytes, void *dst, sl_err *err)
{
    cache_state *cs = source->state;
    size_t element_bytes = cs->element_bytes[field];
    sl_batch *scratch = NULL;
    sl_status st = SL_OK;
    unsigned char *out = dst;
    while (nbytes > 0 && st == SL_OK) {
        int64_t element = (int64_t)(offset / element_bytes);
        size_t within = offset % element_bytes;
        size_t take = element_bytes - within < nbytes ? element_bytes - within : nbytes;
        const unsigned char *from;
        if (atomic_load_explicit(&cs->state[element], memory_order_acquire) == SLOT_FILLED) {
            from = cs->slots[field] + (size_t)element * element_bytes;
        } else {
            if (!scratch)
                st = sl_batch_create(sl_pipeline_output_schema(cs->prefix), 1, &scratch, err);
            if (st == SL_OK)
                st = compute_element(cs, element, scratch, err);
            if (st != SL_OK)
                break;
            unsigned char expected = SLOT_EMPTY;
            if (atomic_compare_exchange_strong(&cs->state[element], &expected, SLOT_FILLING)) {
                for (int f = 0; f < cs->nfields; f++)
                    memcpy(cs->slots[f] + (size_t)element * cs->element_bytes[f], scratch->fields[f].data,
                           cs->element_bytes[f]);
                atomic_store_explicit(&cs->state[element], SLOT_FILLED, memory_order_release);
                atomic_fetch_add(&cs->filled, 1);
            }
            from = scratch->fields[field].data;
        }
        memcpy(out, from + within, take);
        out += take;
        offset += take;
        nbytes -= take;
    }
    sl_batch_free(scratch);
    return st;
}

/* A cache fed from a file that shrank is as void as the file. */
static sl_status check_prefix_source(const sl_source *source, sl_err *err)
{
    const cache_state *cs = source->state;
    const sl_source *prefix_source;
    sl_status st = sl__element_source(cs->prefix, cs->kernels, &prefix_source, err);
    return st ? st : sl__source_check(prefix_source, err);
}

static const sl__source_ops cache_ops = {.read = read_cached, .release = release_cache, .check = check_prefix_source};

sl_status sl__cache_source_create(const sl_pipeline *prefix, const sl_kernel_table *kernels, sl_source **out,
                                  sl_err *err)
{
    *out = NULL;
    const sl_schema *schema = sl_pipeline_output_schema(prefix);
    int64_t rows = sl_pipeline_dataset_size(prefix);
    cache_state *cs = calloc(1, sizeof *cs);
    if (!cs)
        return sl_fail(err, SL_ENOMEM, "cannot allocate a cache");
    cs->prefix = prefix;
    cs->kernels = kernels;
    cs->nfields = schema->nfields;
    cs->state = calloc((size_t)rows, sizeof *cs->state);
    sl_status st =
        cs->state ? SL_OK : sl_fail(err, SL_ENOMEM, "cannot allocate a cache of %lld elements", (long long)rows);
    for (int f = 0; f < schema->nfields && st == SL_OK; f++) {
        cs->element_bytes[f] = sl_field_element_bytes(&schema->fields[f]);
        /* calloc of a large block maps zero pages: memory is used only as
         * elements are filled, which is what cache_bytes reports. */
        cs->slots[f] = calloc((size_t)rows, cs->element_bytes[f] ? cs->element_bytes[f] : 1);
        sl__advise_huge(cs->slots[f], (size_t)rows * (cs->element_bytes[f] ? cs->element_bytes[f] : 1));
        if (!cs->slots[f])
            st = sl_fail(err, SL_ENOMEM, "cannot allocate a cache of %lld x %zu bytes for field '%s'", (long long)rows,
                         cs->element_bytes[f], schema->fields[f].name);
    }
    sl_source *source = NULL;
    if (st == SL_OK)
        st = sl__source_new(SL_SOURCE_CACHE, schema, rows, &source, err);
    if (st != SL_OK) {
        sl_source tmp = {.state = cs};
        release_cache(&tmp);
        return st;
    }
    source->ops = &cache_ops;
    source->state = cs;
    *out = source;
    return SL_OK;
}

size_t sl__cache_source_bytes(const sl_source *source)
{
    const cache_state *cs = source->state;
    size_t element = 0;
    for (int f = 0; f < cs->nfields; f++)
        element += cs->element_bytes[f];
    return (size_t)atomic_load(&((cache_state *)cs)->filled) * element;
}

void sl__cache_source_reset(sl_source *source)
{
    cache_state *cs = source->state;
    int64_t rows = sl_source_rows(source);
    for (int64_t i = 0; i < rows; i++)
        atomic_store_explicit(&cs->state[i], SLOT_EMPTY, memory_order_relaxed);
    atomic_store(&cs->filled, 0);
}

size_t sl_pipeline_cache_bytes(const sl_pipeline *p, const sl_kernel_table *kernels)
{
    if (p->cache_at < 0)
        return 0;
    sl_pipeline *mutable = (sl_pipeline *)p;
    pthread_mutex_lock(&mutable->cache_lock);
    const sl_source *cache = p->caches[kernels->id];
    size_t bytes = cache ? sl__cache_source_bytes(cache) : 0;
    pthread_mutex_unlock(&mutable->cache_lock);
    return bytes;
}

void sl_pipeline_cache_reset(const sl_pipeline *p)
{
    if (p->cache_at < 0)
        return;
    sl_pipeline *mutable = (sl_pipeline *)p;
    pthread_mutex_lock(&mutable->cache_lock);
    for (int t = 0; t < SL_TABLE_SLOTS; t++)
        if (p->caches[t])
            sl__cache_source_reset(p->caches[t]);
    pthread_mutex_unlock(&mutable->cache_lock);
}

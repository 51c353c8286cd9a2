/* The gather probe: the memory side of a scenario's roofline
 * (sl_pipeline_gather_probe in sluice/pipeline/pipeline.h).
 *
 * The roofline probe (sl_fused_probe) times the op chain on a batch already
 * in cache, which a scenario whose elements come from a fixture larger than
 * the cache, or from files, cannot reach: there the bound is bringing the
 * bytes in. This probe measures that bound the way every loader must pay
 * it: each element's source bytes, in the run's own shuffled order, from
 * the run's own storage (its mapped view where it has one, as the fused
 * executor reads it), copied once, with the fused executor's prefetch.
 * No op runs, and the element ids are computed before the clock starts. */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "gather.h"
#include "pipeline/bucket.h"
#include "pipeline/internal.h"
#include "sluice/core/timing.h"
#include "source/check.h"

/* The most bytes one element of a source field can read: its row, or for
 * the packed field a window of seq_len tokens. */
static size_t element_bound(const sl_pipeline *p, int field)
{
    if (field == p->pack_field)
        return (size_t)p->seq_len * sizeof(int32_t);
    return sl_field_element_bytes(&p->source_schema.fields[field]);
}

/* Copies the source bytes of rows elements, in order, into buffer. */
static sl_status copy_rows(const sl_pipeline *p, const sl_source *source, const int64_t *ids, int64_t rows,
                           char *buffer, sl_err *err)
{
    for (int64_t r = 0; r < rows; r++) {
        sl__prefetch_ahead(p, source, ids, 0, r, rows);
        for (int f = 0; f < p->source_schema.nfields; f++) {
            size_t offset, bytes;
            sl__element_span(p, f, ids[r], &offset, &bytes);
            /* A mapped view is read the way the fused executor reads it;
             * a source without one is read through its own path. */
            const void *view = sl_source_map(source, f, offset, bytes);
            if (view) {
                memcpy(buffer, view, bytes);
            } else {
                sl_status st = sl_source_read(source, f, offset, bytes, buffer, err);
                if (st)
                    return st;
            }
            buffer += bytes;
        }
    }
    return sl__source_check(source, err);
}

sl_status sl_pipeline_gather_probe(const sl_pipeline *p, const sl_kernel_table *kernels, int64_t first_batch,
                                   int64_t batches, int passes, double *ns_per_batch, sl_err *err)
{
    if (first_batch < 0 || batches < 1 || passes < 1)
        return sl_fail(err, SL_EINVAL,
                       "the gather probe needs at least 1 batch from a batch index of 0 or more and 1 pass, "
                       "got %lld from %lld and %d",
                       (long long)batches, (long long)first_batch, passes);
    const sl_source *source;
    sl_status source_status = sl__require_kernels(kernels, "the gather probe", err);
    if (source_status == SL_OK)
        source_status = sl__element_source(p, kernels, &source, err);
    if (source_status)
        return source_status;
    int64_t capacity = p->spec.batch_size;
    size_t row_bytes = 0;
    for (int f = 0; f < p->source_schema.nfields; f++)
        row_bytes += element_bound(p, f);
    char *buffer = sl__aligned_alloc(SL_ALIGN, row_bytes * (size_t)capacity);
    int64_t *ids = malloc((size_t)capacity * sizeof *ids);
    int64_t nsamples = batches * passes;
    int64_t *samples = malloc((size_t)nsamples * sizeof *samples);
    sl__bucket_cache bucket_cache = {0};
    sl_status st = SL_OK;
    if (!buffer || !ids || !samples)
        st =
            sl_fail(err, SL_ENOMEM, "cannot allocate the gather probe's %zu-byte buffer", row_bytes * (size_t)capacity);
    /* Pass 0 is not timed: an adapter's repetitions after its first find
     * the window as the previous one left it, and so does each timed pass. */
    sl_position start = sl_position_advance(p, (sl_position){0, 0}, first_batch);
    for (int pass = 0; pass <= passes && !st; pass++) {
        sl_position position = start;
        for (int64_t i = 0; i < batches && !st; i++) {
            int64_t rows = sl_pipeline_batch_rows(p, position.batch);
            st = sl__batch_all_ids(p, kernels, position, rows, ids, &bucket_cache, err);
            if (st)
                break;
            int64_t started = sl_now_ns();
            st = copy_rows(p, source, ids, rows, buffer, err);
            if (pass > 0)
                samples[(pass - 1) * batches + i] = sl_now_ns() - started;
            position = sl_position_advance(p, position, 1);
        }
    }
    if (!st)
        *ns_per_batch = sl_percentile_i64(samples, (size_t)nsamples, 50.0);
    sl__bucket_cache_release(&bucket_cache);
    free(samples);
    free(ids);
    free(buffer);
    return st;
}

/* The gather and traffic probes: the memory side of a scenario's roofline
 * (sl_pipeline_gather_probe and sl_pipeline_traffic_probe in
 * sluice/exec/executors.h).
 *
 * The roofline probe (sl_fused_probe) times the op chain on a batch already
 * in cache, which a scenario whose elements come from a fixture larger than
 * the cache, or from files, cannot reach: there the bound is bringing the
 * bytes in. This probe measures that bound the way every loader must pay
 * it: each element's source bytes, in the run's own shuffled order, from
 * the run's own storage (its mapped view where it has one, as the fused
 * executor reads it), copied once, with the fused executor's prefetch.
 * No op runs, and the element ids are computed before the clock starts. */
#include <stdbool.h>
#include <stdio.h>
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

/* Keeps the compiler from dropping stores into a buffer nothing reads. */
static void keep_stores(void *buffer)
{
#if defined(__GNUC__)
    __asm__ volatile("" : : "r"(buffer) : "memory");
#else
    volatile unsigned char sink = *(volatile unsigned char *)buffer;
    (void)sink;
#endif
}

/* What one probe pass does per row: where the row's source bytes go, and
 * how many output bytes it stores after them (0 for the gather probe). */
typedef struct probe_rows {
    char *input;          /* batch-sized (gather) or one row, reused (traffic) */
    bool input_per_batch; /* rows land one after another in input */
    char *output;         /* the batch's output bytes (traffic only) */
    size_t output_row_bytes;
} probe_rows;

/* Copies the source bytes of rows elements, in order, into the probe's
 * input, and stores each row's output bytes after it is read. */
static sl_status copy_rows(const sl_pipeline *p, const sl_source *source, const int64_t *ids, int64_t rows,
                           const probe_rows *to, sl_err *err)
{
    char *buffer = to->input;
    for (int64_t r = 0; r < rows; r++) {
        sl__prefetch_ahead(p, source, ids, 0, r, rows);
        if (!to->input_per_batch)
            buffer = to->input;
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
        if (to->output_row_bytes) {
            char *row = to->output + (size_t)r * to->output_row_bytes;
            memset(row, (int)(r & 0x7f), to->output_row_bytes);
        }
    }
    keep_stores(to->input);
    if (to->output)
        keep_stores(to->output);
    return sl__source_check(source, err);
}

/* Times `passes` passes over the window, after one untimed pass; with
 * output_bytes, each row also stores its share of a batch's output bytes,
 * and its source bytes go through one reused row instead of a batch-sized
 * buffer (the traffic probe). */
static sl_status probe(const sl_pipeline *p, const sl_kernel_table *kernels, const char *name, int64_t first_batch,
                       int64_t batches, int passes, size_t output_bytes, double *ns_per_batch, sl_err *err)
{
    if (first_batch < 0 || batches < 1 || passes < 1)
        return sl_fail(err, SL_EINVAL,
                       "the %s probe needs at least 1 batch from a batch index of 0 or more and 1 pass, "
                       "got %lld from %lld and %d",
                       name, (long long)batches, (long long)first_batch, passes);
    const sl_source *source;
    char who[32];
    snprintf(who, sizeof who, "the %s probe", name);
    sl_status source_status = sl__require_kernels(kernels, who, err);
    if (source_status == SL_OK)
        source_status = sl__element_source(p, kernels, &source, err);
    if (source_status)
        return source_status;
    int64_t capacity = p->spec.batch_size;
    size_t row_bytes = 0;
    for (int f = 0; f < p->source_schema.nfields; f++)
        row_bytes += element_bound(p, f);
    /* Each row stores an equal share of the batch's output bytes, at least
     * one byte, so a batch stores output_bytes to within a row's share. */
    size_t output_row_bytes = output_bytes / (size_t)capacity;
    if (output_bytes && output_row_bytes == 0)
        output_row_bytes = 1;
    probe_rows to = {.input_per_batch = output_bytes == 0, .output_row_bytes = output_row_bytes};
    size_t input_bytes = to.input_per_batch ? row_bytes * (size_t)capacity : row_bytes;
    to.input = sl__aligned_alloc(SL_ALIGN, input_bytes);
    if (output_bytes)
        to.output = sl__aligned_alloc(SL_ALIGN, to.output_row_bytes * (size_t)capacity);
    int64_t *ids = malloc((size_t)capacity * sizeof *ids);
    int64_t nsamples = batches * passes;
    int64_t *samples = malloc((size_t)nsamples * sizeof *samples);
    sl__bucket_cache bucket_cache = {0};
    sl_status st = SL_OK;
    if (!to.input || (output_bytes && !to.output) || !ids || !samples)
        st = sl_fail(err, SL_ENOMEM, "cannot allocate the %s probe's %zu-byte buffers", name,
                     input_bytes + output_row_bytes * (size_t)capacity);
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
            st = copy_rows(p, source, ids, rows, &to, err);
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
    free(to.output);
    free(to.input);
    return st;
}

sl_status sl_pipeline_gather_probe(const sl_pipeline *p, const sl_kernel_table *kernels, int64_t first_batch,
                                   int64_t batches, int passes, double *ns_per_batch, sl_err *err)
{
    return probe(p, kernels, "gather", first_batch, batches, passes, 0, ns_per_batch, err);
}

sl_status sl_pipeline_traffic_probe(const sl_pipeline *p, const sl_kernel_table *kernels, int64_t first_batch,
                                    int64_t batches, int passes, size_t output_bytes, double *ns_per_batch, sl_err *err)
{
    if (output_bytes == 0)
        return sl_fail(err, SL_EINVAL, "the traffic probe needs a batch's output bytes, got 0");
    return probe(p, kernels, "traffic", first_batch, batches, passes, output_bytes, ns_per_batch, err);
}

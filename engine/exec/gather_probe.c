/* The gather and traffic probes: the memory side of a scenario's roofline
 * (sl_pipeline_gather_probe and sl_pipeline_traffic_probe in
 * sluice/exec/executors.h).
 *
 * The roofline probe (sl_fused_probe) times the op chain on a batch already
 * in cache, which a scenario whose elements come from a fixture larger than
 * the cache, or from files, cannot reach: there the bound is bringing the
 * bytes in. The gather probe measures that bound the way every loader must
 * pay it: each element's source bytes, in the run's own shuffled order,
 * from the run's own storage (its mapped view where it has one, as the
 * fused executor reads it), copied once, with the fused executor's
 * prefetch. The traffic probe reads the same bytes the same way and also
 * stores the batch's output bytes, as one core running a pipeline does
 * both. No op runs, and the element ids are computed before the clock
 * starts. */
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

/* Where a probe puts what it reads, and what it stores. The gather probe
 * copies every row's source bytes into `input`, one row after another. The
 * traffic probe stores exactly a batch's output bytes and reads exactly its
 * source bytes: each row's source bytes are copied into that row's share of
 * `output` (up to the share's size; the rest into `overflow`, a few KiB
 * reused, which stay in L1), and the share's bytes left over are filled. So
 * every byte is loaded and stored once, by the C library's copy and fill,
 * as a pipeline that loads its input and stores its output must at least. */
typedef struct probe_rows {
    char *input;
    char *output;
    size_t output_row_bytes;
    char *overflow;
} probe_rows;

/* The traffic probe's overflow: small enough to stay in L1. */
#define OVERFLOW_BYTES 4096

/* Copies `bytes` of a field's bytes from `offset` into dst: from the mapped
 * view, as the fused executor reads it, or through the source's own path. */
static sl_status fetch(const sl_source *source, int field, const void *view, size_t offset, size_t bytes, char *dst,
                       sl_err *err)
{
    if (view) {
        memcpy(dst, view, bytes);
        return SL_OK;
    }
    return sl_source_read(source, field, offset, bytes, dst, err);
}

/* The gather probe's pass over a batch: every row's source bytes into
 * to->input, in order. */
static sl_status gather_rows(const sl_pipeline *p, const sl_source *source, const int64_t *ids, int64_t rows,
                             const probe_rows *to, sl_err *err)
{
    char *buffer = to->input;
    for (int64_t r = 0; r < rows; r++) {
        sl__prefetch_ahead(p, source, ids, 0, r, rows);
        for (int f = 0; f < p->source_schema.nfields; f++) {
            size_t offset, bytes;
            sl__element_span(p, f, ids[r], &offset, &bytes);
            sl_status st = fetch(source, f, sl_source_map(source, f, offset, bytes), offset, bytes, buffer, err);
            if (st)
                return st;
            buffer += bytes;
        }
    }
    sl__keep_stores(to->input);
    return sl__source_check(source, err);
}

/* The traffic probe's pass over a batch: each row's source bytes into its
 * share of the output, the rest of the share filled (probe_rows). */
static sl_status traffic_rows(const sl_pipeline *p, const sl_source *source, const int64_t *ids, int64_t rows,
                              const probe_rows *to, sl_err *err)
{
    for (int64_t r = 0; r < rows; r++) {
        sl__prefetch_ahead(p, source, ids, 0, r, rows);
        char *row = to->output + (size_t)r * to->output_row_bytes;
        size_t stored = 0, spilled = 0;
        for (int f = 0; f < p->source_schema.nfields; f++) {
            size_t offset, bytes;
            sl__element_span(p, f, ids[r], &offset, &bytes);
            const char *view = sl_source_map(source, f, offset, bytes);
            for (size_t done = 0; done < bytes;) {
                char *dst;
                size_t piece = bytes - done;
                if (stored < to->output_row_bytes) {
                    dst = row + stored;
                    if (piece > to->output_row_bytes - stored)
                        piece = to->output_row_bytes - stored;
                    stored += piece;
                } else {
                    if (spilled == OVERFLOW_BYTES)
                        spilled = 0;
                    dst = to->overflow + spilled;
                    if (piece > OVERFLOW_BYTES - spilled)
                        piece = OVERFLOW_BYTES - spilled;
                    spilled += piece;
                }
                sl_status st = fetch(source, f, view ? view + done : NULL, offset + done, piece, dst, err);
                if (st)
                    return st;
                done += piece;
            }
        }
        memset(row + stored, (int)(r & 0x7f), to->output_row_bytes - stored);
    }
    sl__keep_stores(to->output);
    sl__keep_stores(to->overflow);
    return sl__source_check(source, err);
}

/* Times `passes` passes over the window, after one untimed pass: the
 * gather probe with no output_bytes, else the traffic probe. */
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
    probe_rows to = {.output_row_bytes = output_row_bytes};
    size_t buffer_bytes = output_bytes ? output_row_bytes * (size_t)capacity : row_bytes * (size_t)capacity;
    bool buffers;
    if (output_bytes) {
        to.output = sl__aligned_alloc(SL_ALIGN, buffer_bytes);
        to.overflow = sl__aligned_alloc(SL_ALIGN, OVERFLOW_BYTES);
        buffers = to.output && to.overflow;
    } else {
        to.input = sl__aligned_alloc(SL_ALIGN, buffer_bytes);
        buffers = to.input != NULL;
    }
    int64_t *ids = malloc((size_t)capacity * sizeof *ids);
    int64_t nsamples = batches * passes;
    int64_t *samples = malloc((size_t)nsamples * sizeof *samples);
    sl__bucket_cache bucket_cache = {0};
    sl_status st = SL_OK;
    if (!buffers || !ids || !samples)
        st = sl_fail(err, SL_ENOMEM, "cannot allocate the %s probe's %zu-byte buffer", name, buffer_bytes);
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
            st = output_bytes ? traffic_rows(p, source, ids, rows, &to, err)
                              : gather_rows(p, source, ids, rows, &to, err);
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
    free(to.overflow);
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

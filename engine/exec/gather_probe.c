/* The gather and traffic probes: the memory side of a scenario's roofline
 * (sl_pipeline_gather_probe and sl_pipeline_traffic_probe in
 * sluice/exec/executors.h).
 *
 * The roofline probe (sl_fused_probe) times the op chain on a batch already
 * in cache, which a scenario whose elements come from a fixture larger than
 * the cache, or from files, cannot reach: there the bound is bringing the
 * bytes in. The gather probe measures what a loader that gathers a batch
 * before transforming it pays: each element's source bytes, in the run's
 * own shuffled order, from the run's own storage (its mapped view where it
 * has one, as the fused executor reads it), copied once into a batch, with
 * the fused executor's prefetch. The traffic probe reads the same bytes
 * the same way but stores the batch's output bytes instead of a copy of
 * them, as one core running a pipeline that reads its source in place
 * does: it is the bound (with the write probe, bench.c). No op runs, and
 * the element ids are computed before the clock starts. */
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

/* Where a probe puts what it reads, and what it stores: a batch-sized
 * buffer laid out as a batch is, one region per field, each on its own
 * cache lines, holding that field's rows one after another. A row's element
 * of field f is at field[f] + row * row_bytes[f], where a batch of the
 * pipeline has it, so the copies are aligned as a loader's are. (Rows of
 * all fields side by side, as this probe first had them, put IO-3's 48 KiB
 * images 4 bytes off their lines after each 4-byte label, and glibc's copy
 * of a misaligned row took 1.4 times as long: the probe was slower than
 * `fused` itself, which writes each field's rows in place.)
 *
 * The gather probe's buffer holds the source fields' rows as read. The
 * traffic probe's holds the output's: each row's source bytes of field f
 * are copied into its element of output field f (up to that element's
 * size; the rest into `overflow`, a few KiB reused, which stay in L1), and
 * the element's bytes left over are filled, as are the elements of output
 * fields no source field feeds (a batch op's). So every source byte is
 * loaded once and every output byte stored once, by the C library's copy
 * and fill, as a pipeline that loads its input and stores its output must
 * at least. */
typedef struct probe_layout {
    int nfields;
    char *field[SL_MAX_FIELDS];
    size_t row_bytes[SL_MAX_FIELDS];
    char *buffer;
    char *overflow;
} probe_layout;

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

/* The gather probe's pass over a batch: every row's source bytes into its
 * place in to's fields. */
static sl_status gather_rows(const sl_pipeline *p, const sl_source *source, const int64_t *ids, int64_t rows,
                             const probe_layout *to, sl_err *err)
{
    for (int64_t r = 0; r < rows; r++) {
        sl__prefetch_ahead(p, source, ids, 0, r, rows);
        for (int f = 0; f < p->source_schema.nfields; f++) {
            size_t offset, bytes;
            sl__element_span(p, f, ids[r], &offset, &bytes);
            char *dst = to->field[f] + (size_t)r * to->row_bytes[f];
            sl_status st = fetch(source, f, sl_source_map(source, f, offset, bytes), offset, bytes, dst, err);
            if (st)
                return st;
        }
    }
    sl__keep_stores(to->buffer);
    return sl__source_check(source, err);
}

/* Copies one row's source bytes of field f into its output element (up
 * to the element's size, the rest into the overflow) and fills what is
 * left of the element. */
static sl_status traffic_field(const sl_pipeline *p, const sl_source *source, int f, int64_t element, char *out,
                               size_t out_bytes, char *overflow, sl_err *err)
{
    size_t offset, bytes;
    sl__element_span(p, f, element, &offset, &bytes);
    const char *view = sl_source_map(source, f, offset, bytes);
    size_t stored = bytes < out_bytes ? bytes : out_bytes;
    sl_status st = fetch(source, f, view, offset, stored, out, err);
    for (size_t done = stored; !st && done < bytes;) {
        size_t piece = bytes - done < OVERFLOW_BYTES ? bytes - done : OVERFLOW_BYTES;
        st = fetch(source, f, view ? view + done : NULL, offset + done, piece, overflow, err);
        done += piece;
    }
    memset(out + stored, (int)(element & 0x7f), out_bytes - stored);
    return st;
}

/* The traffic probe's pass over a batch: each row's source bytes into its
 * output elements, the rest of them filled (probe_layout). */
static sl_status traffic_rows(const sl_pipeline *p, const sl_source *source, const int64_t *ids, int64_t rows,
                              const probe_layout *to, sl_err *err)
{
    for (int64_t r = 0; r < rows; r++) {
        sl__prefetch_ahead(p, source, ids, 0, r, rows);
        for (int f = 0; f < to->nfields; f++) {
            char *out = to->field[f] + (size_t)r * to->row_bytes[f];
            if (f >= p->source_schema.nfields) {
                memset(out, (int)(r & 0x7f), to->row_bytes[f]);
                continue;
            }
            sl_status st = traffic_field(p, source, f, ids[r], out, to->row_bytes[f], to->overflow, err);
            if (st)
                return st;
        }
    }
    sl__keep_stores(to->buffer);
    sl__keep_stores(to->overflow);
    return sl__source_check(source, err);
}

/* Lays out a batch of `capacity` rows of the source's fields (the gather
 * probe) or of the output's (the traffic probe) in one buffer; false when
 * it cannot be allocated. */
static bool layout_create(const sl_pipeline *p, bool output, int64_t capacity, probe_layout *to, size_t *total)
{
    memset(to, 0, sizeof *to);
    to->nfields = output ? p->output_schema.nfields : p->source_schema.nfields;
    size_t offsets[SL_MAX_FIELDS];
    *total = 0;
    for (int f = 0; f < to->nfields; f++) {
        to->row_bytes[f] = output ? sl_field_element_bytes(&p->output_schema.fields[f]) : element_bound(p, f);
        offsets[f] = *total;
        /* Each field's region starts on SL_ALIGN, as a batch's tensors do. */
        size_t region = to->row_bytes[f] * (size_t)capacity;
        *total += (region + SL_ALIGN - 1) / SL_ALIGN * SL_ALIGN;
    }
    to->buffer = sl__aligned_alloc(SL_ALIGN, *total ? *total : 1);
    if (output)
        to->overflow = sl__aligned_alloc(SL_ALIGN, OVERFLOW_BYTES);
    for (int f = 0; to->buffer && f < to->nfields; f++)
        to->field[f] = to->buffer + offsets[f];
    return to->buffer && (!output || to->overflow);
}

/* Times `passes` passes over the window, after one untimed pass: the
 * traffic probe, else the gather probe. */
static sl_status probe(const sl_pipeline *p, const sl_kernel_table *kernels, const char *name, int64_t first_batch,
                       int64_t batches, int passes, bool traffic, double *ns_per_batch, sl_err *err)
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
    probe_layout to;
    size_t buffer_bytes;
    bool buffers = layout_create(p, traffic, capacity, &to, &buffer_bytes);
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
            st = traffic ? traffic_rows(p, source, ids, rows, &to, err) : gather_rows(p, source, ids, rows, &to, err);
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
    free(to.buffer);
    return st;
}

sl_status sl_pipeline_gather_probe(const sl_pipeline *p, const sl_kernel_table *kernels, int64_t first_batch,
                                   int64_t batches, int passes, double *ns_per_batch, sl_err *err)
{
    return probe(p, kernels, "gather", first_batch, batches, passes, false, ns_per_batch, err);
}

sl_status sl_pipeline_traffic_probe(const sl_pipeline *p, const sl_kernel_table *kernels, int64_t first_batch,
                                    int64_t batches, int passes, double *ns_per_batch, sl_err *err)
{
    return probe(p, kernels, "traffic", first_batch, batches, passes, true, ns_per_batch, err);
}

/* Distributed runs over sl_comm: each rank's report, its wire form, the
 * gather at rank 0, the job's record and the sharding checks. Nothing here
 * knows MPI; docs/distributed.md says how the pieces fit. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>
#include <xxhash.h>

#include "core/internal.h"
#include "sluice/bench/dist.h"
#include "sluice/core/digest.h"
#include "sluice/core/timing.h"

int sl_scenario_mesh(const sl_scenario *scenario, const sl_variant *variant, int world, int *dims, char *reason,
                     size_t size)
{
    if (!scenario->mesh) {
        snprintf(reason, size, "%s is not a distributed scenario; run it without mpirun", scenario->id);
        return 0;
    }
    return scenario->mesh(scenario, variant, world, dims, reason, size);
}

double sl_dist_watchdog_default_s(sl_profile profile)
{
    /* A wait at a step is at most one rank's whole run of one adapter
     * (warmup, repetitions, probes, epoch 0), which the profile's sizes
     * set; docs/distributed.md has the measurements behind these. */
    const sl_profile_settings *settings = sl_profile_get(profile);
    return settings && settings->size_profile == SL_PROFILE_CI ? 120.0 : 900.0;
}

/* --- this rank's report ------------------------------------------------------------ */

static sl_status copy_i64(int64_t **dst, const int64_t *src, int64_t n, sl_err *err)
{
    *dst = NULL;
    if (!src || n <= 0)
        return SL_OK;
    *dst = malloc((size_t)n * sizeof **dst);
    if (!*dst)
        return sl_fail(err, SL_ENOMEM, "cannot copy %" PRId64 " latencies", n);
    memcpy(*dst, src, (size_t)n * sizeof **dst);
    return SL_OK;
}

static int64_t sample_count(const sl_record *record)
{
    return record->samples_ns ? (int64_t)record->repetitions * record->measured_batches : 0;
}

/* A record with its own copies of the latency arrays. */
static sl_status copy_record(sl_record *dst, const sl_record *src, sl_err *err)
{
    *dst = *src;
    dst->latency_ns = NULL;
    dst->samples_ns = NULL;
    sl_status st = copy_i64(&dst->latency_ns, src->latency_ns, src->measured_batches, err);
    if (st == SL_OK)
        st = copy_i64(&dst->samples_ns, src->samples_ns, sample_count(src), err);
    if (st != SL_OK)
        sl_record_release(dst);
    return st;
}

/* The output of one row, every field, as one XXH3-64: each field's bytes
 * hashed with the previous field's hash as the seed. */
static uint64_t row_digest(const sl_batch *batch, int64_t row)
{
    uint64_t h = 0;
    for (int f = 0; f < batch->schema.nfields; f++) {
        size_t row_bytes = sl_tensor_nbytes(&batch->fields[f]) / (size_t)batch->count;
        const unsigned char *data = batch->fields[f].data;
        h = XXH3_64bits_withSeed(data + (size_t)row * row_bytes, row_bytes, h);
    }
    return h;
}

/* Epoch 0 of the rank's pipeline, batch by batch, outside any timed region:
 * the ids and row digests the sharding checks compare, computed by the
 * reference kernels, the oracle (every table gives the same bits). */
static sl_status load_epoch(const sl_pipeline *pipeline, sl_rank_report *out, sl_err *err)
{
    int64_t capacity = sl_pipeline_epoch_size(pipeline);
    int64_t batches = sl_pipeline_batches_per_epoch(pipeline);
    out->epoch_ids = malloc((size_t)(capacity > 0 ? capacity : 1) * sizeof *out->epoch_ids);
    out->epoch_row_digests = malloc((size_t)(capacity > 0 ? capacity : 1) * sizeof *out->epoch_row_digests);
    if (!out->epoch_ids || !out->epoch_row_digests)
        return sl_fail(err, SL_ENOMEM, "cannot hold the ids of an epoch of %" PRId64 " rows", capacity);
    sl_batch *batch = NULL;
    sl_status st =
        sl_batch_create(sl_pipeline_output_schema(pipeline), sl_pipeline_get_spec(pipeline)->batch_size, &batch, err);
    for (int64_t b = 0; st == SL_OK && b < batches; b++) {
        st = sl_pipeline_produce(pipeline, sl_kernels_reference(), (sl_position){0, b}, batch, err);
        if (st != SL_OK)
            break;
        if (out->epoch_rows + batch->count > capacity) {
            st = sl_fail(err, SL_EMISMATCH, "epoch 0 delivered more rows than its %" PRId64, capacity);
            break;
        }
        for (int64_t r = 0; r < batch->count; r++) {
            out->epoch_ids[out->epoch_rows] = batch->element_ids[r];
            out->epoch_row_digests[out->epoch_rows] = row_digest(batch, r);
            out->epoch_rows++;
        }
    }
    sl_batch_free(batch);
    return st;
}

/* The bytes of one row of a source, every field. */
static int64_t row_bytes(const sl_source *source)
{
    const sl_schema *schema = sl_source_schema(source);
    int64_t total = 0;
    for (int f = 0; f < schema->nfields; f++) {
        int64_t bytes = (int64_t)sl_dtype_size(schema->fields[f].dtype);
        for (int d = 0; d < schema->fields[f].shape.rank; d++)
            bytes *= schema->fields[f].shape.dims[d];
        total += bytes;
    }
    return total;
}

sl_status sl_dist_report_local(const sl_comm *comm, const sl_scenario_instance *instance, const sl_record *record,
                               sl_rank_report *out, sl_err *err)
{
    memset(out, 0, sizeof *out);
    out->rank = comm ? comm->rank : 0;
    out->world = comm ? comm->world : 1;
    out->ndims = comm ? comm->ndims : 1;
    for (int d = 0; d < out->ndims; d++) {
        out->dims[d] = comm ? comm->dims[d] : 1;
        out->coords[d] = comm ? comm->coords[d] : 0;
    }
    out->pid = (int64_t)getpid();
    if (instance) {
        out->startup_ns = instance->build_ns;
        out->fixture_bytes = sl_fixture_rows_generated(instance->fixture) * row_bytes(instance->fixture);
    }
    if (gethostname(out->host, sizeof out->host) != 0)
        sl__copy_string(out->host, sizeof out->host, "unknown");
    out->host[sizeof out->host - 1] = '\0';
    sl_status st = copy_record(&out->record, record, err);
    if (st == SL_OK && instance && record->outcome == SL_RECORD_OK)
        st = load_epoch(instance->pipeline, out, err);
    if (st != SL_OK)
        sl_rank_report_release(out);
    return st;
}

void sl_rank_report_release(sl_rank_report *report)
{
    sl_record_release(&report->record);
    free(report->epoch_ids);
    free(report->epoch_row_digests);
    report->epoch_ids = NULL;
    report->epoch_row_digests = NULL;
    report->epoch_rows = 0;
}

/* --- the wire form -------------------------------------------------------------------- */

/* A report travels as this header, the report itself with its pointers
 * cleared, then its arrays. Ranks run the same build (docs/distributed.md),
 * so the struct's layout is the same on every rank; the magic and the
 * size check catch one that is not. */
#define WIRE_MAGIC UINT64_C(0x31304b4e41524c53) /* "SLRANK01" */

typedef struct wire_header {
    uint64_t magic;
    uint64_t report_bytes;
    int64_t latencies;
    int64_t samples;
    int64_t rows;
} wire_header;

static sl_status encode(const sl_rank_report *report, void **out, size_t *size, sl_err *err)
{
    wire_header h = {WIRE_MAGIC, sizeof *report, report->record.latency_ns ? report->record.measured_batches : 0,
                     sample_count(&report->record), report->epoch_rows};
    size_t bytes = sizeof h + sizeof *report + (size_t)(h.latencies + h.samples) * sizeof(int64_t) +
                   (size_t)h.rows * (sizeof(int64_t) + sizeof(uint64_t));
    unsigned char *p = malloc(bytes);
    if (!p)
        return sl_fail(err, SL_ENOMEM, "cannot encode a rank report of %zu bytes", bytes);
    sl_rank_report flat = *report;
    flat.record.latency_ns = NULL;
    flat.record.samples_ns = NULL;
    flat.epoch_ids = NULL;
    flat.epoch_row_digests = NULL;
    size_t at = 0;
#define PUT(src, n)                                                                                                    \
    do {                                                                                                               \
        if ((n) > 0)                                                                                                   \
            memcpy(p + at, (src), (n));                                                                                \
        at += (n);                                                                                                     \
    } while (0)
    PUT(&h, sizeof h);
    PUT(&flat, sizeof flat);
    PUT(report->record.latency_ns, (size_t)h.latencies * sizeof(int64_t));
    PUT(report->record.samples_ns, (size_t)h.samples * sizeof(int64_t));
    PUT(report->epoch_ids, (size_t)h.rows * sizeof(int64_t));
    PUT(report->epoch_row_digests, (size_t)h.rows * sizeof(uint64_t));
#undef PUT
    *out = p;
    *size = bytes;
    return SL_OK;
}

static sl_status take_array(const unsigned char *p, size_t size, size_t *at, int64_t count, size_t item, void **dst,
                            int rank, const char *what, sl_err *err)
{
    *dst = NULL;
    if (count < 0 || (uint64_t)count > (size - *at) / item)
        return sl_fail(err, SL_EFORMAT, "rank %d's report claims %" PRId64 " %s; %zu bytes are left", rank, count, what,
                       size - *at);
    if (count == 0)
        return SL_OK;
    *dst = malloc((size_t)count * item);
    if (!*dst)
        return sl_fail(err, SL_ENOMEM, "cannot hold rank %d's %" PRId64 " %s", rank, count, what);
    memcpy(*dst, p + *at, (size_t)count * item);
    *at += (size_t)count * item;
    return SL_OK;
}

static sl_status decode(const unsigned char *p, size_t size, int rank, int world, sl_rank_report *out, sl_err *err)
{
    memset(out, 0, sizeof *out);
    wire_header h;
    if (size < sizeof h + sizeof *out)
        return sl_fail(err, SL_EFORMAT, "rank %d sent %zu bytes, less than a report's %zu", rank, size,
                       sizeof h + sizeof *out);
    memcpy(&h, p, sizeof h);
    if (h.magic != WIRE_MAGIC || h.report_bytes != sizeof *out)
        return sl_fail(err, SL_EFORMAT,
                       "rank %d's report is not in this build's format (a rank running another sluice build?)", rank);
    memcpy(out, p + sizeof h, sizeof *out);
    out->record.latency_ns = NULL;
    out->record.samples_ns = NULL;
    out->epoch_ids = NULL;
    out->epoch_row_digests = NULL;
    out->host[sizeof out->host - 1] = '\0';
    size_t at = sizeof h + sizeof *out;
    sl_status st = SL_OK;
    if (out->rank != rank || out->world != world)
        st = sl_fail(err, SL_EFORMAT, "the report in rank %d's place says rank %d of %d, not of %d", rank, out->rank,
                     out->world, world);
    else if (out->ndims < 1 || out->ndims > SL_MESH_MAX_DIMS)
        st = sl_fail(err, SL_EFORMAT, "rank %d's report has a mesh of %d axes", rank, out->ndims);
    else if ((h.latencies != 0 && h.latencies != out->record.measured_batches) ||
             (h.samples != 0 && h.samples != (int64_t)out->record.repetitions * out->record.measured_batches))
        st = sl_fail(err, SL_EFORMAT,
                     "rank %d's report has %" PRId64 " latencies and %" PRId64 " samples for %" PRId64
                     " measured batches",
                     rank, h.latencies, h.samples, out->record.measured_batches);
    void *a;
    if (st == SL_OK &&
        (st = take_array(p, size, &at, h.latencies, sizeof(int64_t), &a, rank, "latencies", err)) == SL_OK)
        out->record.latency_ns = a;
    if (st == SL_OK && (st = take_array(p, size, &at, h.samples, sizeof(int64_t), &a, rank, "samples", err)) == SL_OK)
        out->record.samples_ns = a;
    if (st == SL_OK && (st = take_array(p, size, &at, h.rows, sizeof(int64_t), &a, rank, "epoch ids", err)) == SL_OK)
        out->epoch_ids = a;
    if (st == SL_OK &&
        (st = take_array(p, size, &at, h.rows, sizeof(uint64_t), &a, rank, "row digests", err)) == SL_OK) {
        out->epoch_row_digests = a;
        out->epoch_rows = h.rows;
    }
    if (st == SL_OK && at != size)
        st = sl_fail(err, SL_EFORMAT, "rank %d's report has %zu bytes after its end", rank, size - at);
    if (st != SL_OK)
        sl_rank_report_release(out);
    return st;
}

sl_status sl_dist_gather(const sl_comm *comm, const sl_rank_report *mine, sl_dist_view *view, sl_err *err)
{
    memset(view, 0, sizeof *view);
    void *wire = NULL;
    size_t wire_size = 0;
    sl_err local = {0};
    sl_status st = encode(mine, &wire, &wire_size, &local);
    if (st != SL_OK) {
        /* The gather is collective: a rank that cannot encode its report
         * still takes part, with nothing, and rank 0 names it. */
        wire_size = 0;
    }
    size_t *counts = comm->rank == 0 ? calloc((size_t)comm->world, sizeof *counts) : NULL;
    if (comm->rank == 0 && !counts) {
        free(wire);
        return sl_fail(err, SL_ENOMEM, "cannot allocate the gather's counts for %d ranks", comm->world);
    }
    void *all = NULL;
    sl_status gathered = sl_comm_gather(comm, wire, wire_size, &all, counts, err);
    free(wire);
    if (gathered != SL_OK) {
        free(counts);
        return gathered;
    }
    if (st != SL_OK && comm->rank != 0) {
        free(counts);
        return sl_fail(err, st, "%s", local.msg);
    }
    if (comm->rank != 0)
        return SL_OK;
    view->ranks = calloc((size_t)comm->world, sizeof *view->ranks);
    if (!view->ranks) {
        free(all);
        free(counts);
        return sl_fail(err, SL_ENOMEM, "cannot hold %d rank reports", comm->world);
    }
    view->world = comm->world;
    size_t offset = 0;
    st = SL_OK;
    for (int r = 0; r < comm->world && st == SL_OK; r++) {
        if (counts[r] == 0)
            st = sl_fail(err, SL_EFORMAT, "rank %d sent no report (it could not encode one)", r);
        else
            st = decode((const unsigned char *)all + offset, counts[r], r, comm->world, &view->ranks[r], err);
        offset += counts[r];
    }
    free(all);
    free(counts);
    if (st != SL_OK)
        sl_dist_view_free(view);
    return st;
}

sl_status sl_dist_view_single(sl_rank_report *report, sl_dist_view *view, sl_err *err)
{
    memset(view, 0, sizeof *view);
    view->ranks = malloc(sizeof *view->ranks);
    if (!view->ranks) {
        sl_rank_report_release(report);
        return sl_fail(err, SL_ENOMEM, "cannot hold a rank report");
    }
    view->ranks[0] = *report;
    view->world = 1;
    memset(report, 0, sizeof *report);
    return SL_OK;
}

void sl_dist_view_free(sl_dist_view *view)
{
    for (int r = 0; r < view->world && view->ranks; r++)
        sl_rank_report_release(&view->ranks[r]);
    free(view->ranks);
    memset(view, 0, sizeof *view);
}

/* --- the job's record ------------------------------------------------------------------ */

static int64_t measured_wall(const sl_record *record)
{
    int64_t sum = 0;
    for (int64_t b = 0; record->latency_ns && b < record->measured_batches; b++)
        sum += record->latency_ns[b];
    return sum;
}

int sl_dist_slowest_rank(const sl_dist_view *view, int64_t *wall_ns)
{
    int slowest = 0;
    int64_t most = -1;
    for (int r = 0; r < view->world; r++) {
        int64_t wall = measured_wall(&view->ranks[r].record);
        if (view->ranks[r].record.outcome == SL_RECORD_OK && wall > most) {
            most = wall;
            slowest = r;
        }
    }
    if (wall_ns)
        *wall_ns = most < 0 ? 0 : most;
    return slowest;
}

/* The rank whose outcome the job takes when not every rank ran ok: the
 * first that failed or mismatched, else the first not ok; -1 when all are. */
static int first_trouble(const sl_dist_view *view)
{
    int first = -1;
    for (int r = 0; r < view->world; r++) {
        sl_record_outcome outcome = view->ranks[r].record.outcome;
        if (outcome == SL_RECORD_FAILED || outcome == SL_RECORD_MISMATCH)
            return r;
        if (outcome != SL_RECORD_OK && first < 0)
            first = r;
    }
    return first;
}

static bool all_alike(const sl_dist_view *view)
{
    for (int r = 1; r < view->world; r++)
        if (view->ranks[r].record.outcome != view->ranks[0].record.outcome ||
            strcmp(view->ranks[r].record.reason, view->ranks[0].record.reason) != 0)
            return false;
    return true;
}

sl_status sl_dist_merge(const sl_dist_view *view, sl_record *out, sl_err *err)
{
    memset(out, 0, sizeof *out);
    if (view->world < 1)
        return sl_fail(err, SL_EINVAL, "no rank reports to merge");
    int trouble = first_trouble(view);
    if (trouble >= 0) {
        /* Every rank excluded or skipped for the same reason reads as one
         * process's record; otherwise the reason says which rank. */
        const sl_record *source = &view->ranks[trouble].record;
        sl_status st = copy_record(out, source, err);
        if (st == SL_OK && !all_alike(view))
            snprintf(out->reason, sizeof out->reason, "rank %d of %d: %.200s", trouble, view->world, source->reason);
        return st;
    }
    int slowest = sl_dist_slowest_rank(view, NULL);
    sl_status st = copy_record(out, &view->ranks[slowest].record, err);
    if (st != SL_OK)
        return st;
    uint64_t *digests = malloc((size_t)view->world * sizeof *digests);
    if (!digests) {
        sl_record_release(out);
        return sl_fail(err, SL_ENOMEM, "cannot combine %d digests", view->world);
    }
    for (int r = 0; r < view->world; r++)
        digests[r] = view->ranks[r].record.output_digest;
    out->output_digest = sl_digest_bytes(digests, (size_t)view->world * sizeof *digests);
    free(digests);
    return SL_OK;
}

/* --- the sharding checks ---------------------------------------------------------------------- */

static int64_t shard_rows(int64_t n, int64_t d, int64_t data_ranks)
{
    return n > d ? (n - 1 - d) / data_ranks + 1 : 0;
}

/* Row-major index of a rank's coordinates, or -1 outside the mesh. */
static int64_t mesh_index(const sl_rank_report *report, const sl_rank_report *first)
{
    int64_t index = 0;
    for (int d = 0; d < first->ndims; d++) {
        if (report->coords[d] < 0 || report->coords[d] >= first->dims[d])
            return -1;
        index = index * first->dims[d] + report->coords[d];
    }
    return index;
}

static sl_status check_mesh(const sl_dist_view *view, sl_err *err)
{
    const sl_rank_report *first = &view->ranks[0];
    int64_t size = 1;
    for (int d = 0; d < first->ndims; d++)
        size *= first->dims[d] > 0 ? first->dims[d] : 0;
    if (size != view->world)
        return sl_fail(err, SL_EMISMATCH, "rank 0's mesh has %" PRId64 " places for %d ranks", size, view->world);
    bool *taken = calloc((size_t)view->world, sizeof *taken);
    if (!taken)
        return sl_fail(err, SL_ENOMEM, "cannot check a mesh of %d ranks", view->world);
    sl_status st = SL_OK;
    for (int r = 0; r < view->world && st == SL_OK; r++) {
        const sl_rank_report *report = &view->ranks[r];
        if (report->record.outcome != SL_RECORD_OK)
            st = sl_fail(err, SL_EMISMATCH, "rank %d did not run: %s", r, report->record.reason);
        else if (report->ndims != first->ndims || memcmp(report->dims, first->dims, sizeof first->dims) != 0)
            st = sl_fail(err, SL_EMISMATCH, "rank %d's mesh differs from rank 0's", r);
        else {
            int64_t index = mesh_index(report, first);
            if (index < 0 || index >= view->world || taken[index])
                st = sl_fail(err, SL_EMISMATCH, "rank %d's mesh coordinates are outside the mesh or another rank's", r);
            else
                taken[index] = true;
        }
    }
    free(taken);
    return st;
}

/* Shards disjoint and covering the epoch, from the ids alone: an element
 * loaded twice or never is named whatever the order. */
static sl_status check_cover(const sl_dist_view *view, const int *representative, int data_ranks, int64_t n,
                             bool drop_last, sl_err *err)
{
    int *owner = malloc((size_t)(n > 0 ? n : 1) * sizeof *owner);
    if (!owner)
        return sl_fail(err, SL_ENOMEM, "cannot check an epoch of %" PRId64 " elements", n);
    for (int64_t e = 0; e < n; e++)
        owner[e] = -1;
    sl_status st = SL_OK;
    int64_t covered = 0;
    for (int d = 0; d < data_ranks && st == SL_OK; d++) {
        const sl_rank_report *report = &view->ranks[representative[d]];
        for (int64_t i = 0; i < report->epoch_rows && st == SL_OK; i++) {
            int64_t id = report->epoch_ids[i];
            if (id < 0 || id >= n)
                st = sl_fail(err, SL_EMISMATCH, "rank %d loaded element %" PRId64 ", outside the data set of %" PRId64,
                             report->rank, id, n);
            else if (owner[id] >= 0)
                st = sl_fail(err, SL_EMISMATCH,
                             "element %" PRId64 " is in the shards of ranks %d and %d: shards overlap", id, owner[id],
                             report->rank);
            else {
                owner[id] = report->rank;
                covered++;
            }
        }
    }
    if (st == SL_OK && !drop_last && covered != n) {
        int64_t missing = 0;
        while (missing < n && owner[missing] >= 0)
            missing++;
        st = sl_fail(err, SL_EMISMATCH,
                     "the shards hold %" PRId64 " of the epoch's %" PRId64 " elements; element %" PRId64 " is in none",
                     covered, n, missing);
    }
    free(owner);
    return st;
}

static sl_status check_replica(const sl_rank_report *replica, const sl_rank_report *first, sl_err *err)
{
    if (replica->epoch_rows != first->epoch_rows)
        return sl_fail(err, SL_EMISMATCH, "replica rank %d loaded %" PRId64 " rows, rank %d %" PRId64, replica->rank,
                       replica->epoch_rows, first->rank, first->epoch_rows);
    for (int64_t i = 0; i < first->epoch_rows; i++) {
        if (replica->epoch_ids[i] != first->epoch_ids[i])
            return sl_fail(err, SL_EMISMATCH,
                           "replica rank %d holds element %" PRId64 " at position %" PRId64
                           " where rank %d holds %" PRId64,
                           replica->rank, replica->epoch_ids[i], i, first->rank, first->epoch_ids[i]);
        if (replica->epoch_row_digests[i] != first->epoch_row_digests[i])
            return sl_fail(err, SL_EMISMATCH,
                           "replica rank %d's output for element %" PRId64 " (position %" PRId64
                           ") differs from rank %d's",
                           replica->rank, first->epoch_ids[i], i, first->rank);
    }
    if (replica->record.output_digest != first->record.output_digest)
        return sl_fail(err, SL_EMISMATCH, "replica rank %d measured output digest %016" PRIx64 ", rank %d %016" PRIx64,
                       replica->rank, replica->record.output_digest, first->rank, first->record.output_digest);
    return SL_OK;
}

sl_status sl_dist_check_shards(const sl_dist_view *view, const sl_pipeline *pipeline, sl_err *err)
{
    if (view->world < 1)
        return sl_fail(err, SL_EINVAL, "no rank reports to check");
    sl_status st = check_mesh(view, err);
    if (st != SL_OK)
        return st;
    const sl_pipeline_spec *spec = sl_pipeline_get_spec(pipeline);
    int data_ranks = view->ranks[0].dims[0];
    int64_t n = sl_pipeline_dataset_size(pipeline);
    int *representative = malloc((size_t)data_ranks * sizeof *representative);
    if (!representative)
        return sl_fail(err, SL_ENOMEM, "cannot check %d shards", data_ranks);
    for (int d = 0; d < data_ranks; d++)
        representative[d] = -1;
    /* The lowest rank at each data coordinate speaks for it; the mesh check
     * guarantees every coordinate has one. */
    for (int r = 0; r < view->world; r++) {
        int d = view->ranks[r].coords[0];
        if (representative[d] < 0)
            representative[d] = r;
    }

    st = check_cover(view, representative, data_ranks, n, spec->drop_last, err);
    sl_permutation order;
    sl_permutation_init(&order, (uint64_t)n, spec->seed, 0, spec->shuffle);
    for (int d = 0; d < data_ranks && st == SL_OK; d++) {
        const sl_rank_report *report = &view->ranks[representative[d]];
        int64_t expected = shard_rows(n, d, data_ranks);
        if (spec->drop_last)
            expected -= expected % spec->batch_size;
        if (report->epoch_rows != expected) {
            st =
                sl_fail(err, SL_EMISMATCH,
                        "rank %d (data coordinate %d of %d) loaded %" PRId64 " rows of epoch 0; its shard has %" PRId64,
                        report->rank, d, data_ranks, report->epoch_rows, expected);
            break;
        }
        for (int64_t i = 0; i < report->epoch_rows; i++) {
            uint64_t position = (uint64_t)d + (uint64_t)i * (uint64_t)data_ranks;
            int64_t global = (int64_t)sl_permutation_apply(&order, position);
            if (report->epoch_ids[i] != global) {
                st = sl_fail(err, SL_EMISMATCH,
                             "rank %d (data coordinate %d of %d) holds element %" PRId64 " at its position %" PRId64
                             "; global position %" PRIu64 " of the epoch's order is element %" PRId64,
                             report->rank, d, data_ranks, report->epoch_ids[i], i, position, global);
                break;
            }
        }
    }
    for (int r = 0; r < view->world && st == SL_OK; r++) {
        const sl_rank_report *first = &view->ranks[representative[view->ranks[r].coords[0]]];
        if (first != &view->ranks[r])
            st = check_replica(&view->ranks[r], first, err);
    }
    free(representative);
    return st;
}

/* --- per-rank metrics ---------------------------------------------------------------------------- */

static int distinct_processes(const sl_dist_view *view)
{
    int distinct = 0;
    for (int r = 0; r < view->world; r++) {
        bool seen = false;
        for (int s = 0; s < r && !seen; s++)
            seen = view->ranks[s].pid == view->ranks[r].pid && strcmp(view->ranks[s].host, view->ranks[r].host) == 0;
        distinct += !seen;
    }
    return distinct;
}

static double rank_p50(const sl_rank_report *report)
{
    const sl_record *record = &report->record;
    if (!record->latency_ns || record->measured_batches <= 0)
        return 0.0;
    return sl_percentile_i64(record->latency_ns, (size_t)record->measured_batches, 50.0);
}

void sl_dist_add_rank_metrics(const sl_dist_view *view, sl_record *record)
{
    const sl_rank_report *first = &view->ranks[0];
    int replicas = 1;
    for (int d = 1; d < first->ndims; d++)
        replicas *= first->dims[d];
    sl_record_add_scenario_metric(record, "ranks", view->world, "ranks");
    sl_record_add_scenario_metric(record, "mesh_data_ranks", first->dims[0], "ranks");
    sl_record_add_scenario_metric(record, "mesh_replicas", replicas, "ranks");
    /* Distinct (host, pid) pairs: K ranks that are really K processes. */
    sl_record_add_scenario_metric(record, "processes", distinct_processes(view), "processes");

    double *p50 = malloc((size_t)view->world * sizeof *p50);
    double elements = 0.0;
    for (int r = 0; r < view->world; r++) {
        double value = rank_p50(&view->ranks[r]);
        if (p50)
            p50[r] = value;
        elements += (double)view->ranks[r].record.elements;
        if (r < SL_DIST_RANK_METRICS) {
            char name[48];
            snprintf(name, sizeof name, "rank_%d_p50_ns", r);
            sl_record_add_scenario_metric(record, name, value, "ns");
        }
    }
    if (p50) {
        double lo = p50[0], hi = p50[0];
        for (int r = 1; r < view->world; r++) {
            lo = p50[r] < lo ? p50[r] : lo;
            hi = p50[r] > hi ? p50[r] : hi;
        }
        sl_record_add_scenario_metric(record, "rank_p50_min_ns", lo, "ns");
        sl_record_add_scenario_metric(record, "rank_p50_median_ns", sl_median_f64(p50, (size_t)view->world), "ns");
        sl_record_add_scenario_metric(record, "rank_p50_max_ns", hi, "ns");
        free(p50);
    }
    int64_t wall = 0;
    int slowest = sl_dist_slowest_rank(view, &wall);
    sl_record_add_scenario_metric(record, "slowest_rank", slowest, "rank");
    sl_record_add_scenario_metric(record, "slowest_rank_ns", (double)wall, "ns");
    /* The job delivers every rank's elements once its slowest rank is done. */
    sl_record_add_scenario_metric(record, "job_elements_per_s", wall > 0 ? elements * 1e9 / (double)wall : 0.0,
                                  "elements/s");
    /* What one rank costs, which is what a larger job multiplies: its
     * memory at its peak (each rank's own record), its start-up and the
     * fixture rows it generated (docs/distributed.md). */
    int64_t rss_min = -1, rss_max = -1, startup_max = 0, fixture_max = 0;
    for (int r = 0; r < view->world; r++) {
        const sl_rank_report *rank = &view->ranks[r];
        int64_t rss = rank->record.peak_rss_bytes;
        if (rss >= 0) {
            rss_min = rss_min < 0 || rss < rss_min ? rss : rss_min;
            rss_max = rss > rss_max ? rss : rss_max;
        }
        startup_max = rank->startup_ns > startup_max ? rank->startup_ns : startup_max;
        fixture_max = rank->fixture_bytes > fixture_max ? rank->fixture_bytes : fixture_max;
    }
    if (rss_max >= 0) {
        sl_record_add_scenario_metric(record, "rank_peak_rss_min_bytes", (double)rss_min, "bytes");
        sl_record_add_scenario_metric(record, "rank_peak_rss_max_bytes", (double)rss_max, "bytes");
    }
    sl_record_add_scenario_metric(record, "rank_startup_max_ns", (double)startup_max, "ns");
    sl_record_add_scenario_metric(record, "rank_fixture_max_bytes", (double)fixture_max, "bytes");
}

/* --- running it ------------------------------------------------------------------------------------------ */

sl_status sl_dist_view_for(const sl_scenario_instance *instance, const sl_record *record, sl_dist_view *scratch,
                           const sl_dist_view **view, sl_err *err)
{
    if (instance->ranks) {
        *view = instance->ranks;
        return SL_OK;
    }
    sl_rank_report report;
    sl_status st = sl_dist_report_local(instance->comm, instance, record, &report, err);
    if (st == SL_OK)
        st = sl_dist_view_single(&report, scratch, err);
    *view = scratch;
    return st;
}

/* Marks record failed with err's message. */
static void fail_into(sl_record *record, const sl_err *err)
{
    record->outcome = SL_RECORD_FAILED;
    sl__copy_string(record->reason, sizeof record->reason, err->msg);
}

sl_status sl_dist_finish(const sl_comm *comm, sl_scenario_instance *instance, const sl_adapter *adapter,
                         const sl_kernel_table *kernels, sl_record *record, sl_err *err)
{
    sl_rank_report mine;
    sl_err local = {0};
    if (sl_dist_report_local(comm, instance, record, &mine, &local) != SL_OK) {
        /* It still takes part in the gather, as a rank that failed. */
        sl_record failed = *record;
        failed.latency_ns = failed.samples_ns = NULL;
        fail_into(&failed, &local);
        sl_dist_report_local(comm, NULL, &failed, &mine, NULL);
    }
    /* Every rank checks in first, so that one that stopped during its run
     * is named by the watchdog rather than waited for inside the gather. */
    char step[192];
    snprintf(step, sizeof step, "the report of %s/%s on %s", record->scenario, record->variant, adapter->name);
    sl_dist_view view = {0};
    sl_status st = sl_comm_checkin(comm, step, err);
    if (st == SL_OK)
        st = sl_dist_gather(comm, &mine, &view, err);
    sl_rank_report_release(&mine);
    if (comm->rank != 0)
        return st;
    if (st != SL_OK) {
        fail_into(record, err);
        return st;
    }
    sl_record job;
    st = sl_dist_merge(&view, &job, err);
    if (st == SL_OK) {
        sl_record_release(record);
        *record = job;
        if (instance && record->outcome == SL_RECORD_OK) {
            instance->ranks = &view;
            st = sl_bench_scenario_metrics(instance, adapter, kernels, record, err);
            instance->ranks = NULL;
        }
    } else {
        fail_into(record, err);
    }
    sl_dist_view_free(&view);
    return st;
}

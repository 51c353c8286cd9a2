/* Running a peer loader: export the data set once, and for each session a
 * plan of a fresh seed, written after the peer's hello (inputs and
 * decisions, never the answers), run the peer through every batch
 * (peer_session.c),
 * verify each batch from the bytes the peer wrote into the ring against the
 * reference's digest that sluice keeps in memory, classify how its times may
 * be read, then hand the sink the (verified equal) reference batches so the
 * bench's own checks and byte counts apply unchanged (docs/peers.md). */
#include <dirent.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "adapters.h"
#include "peer.h"
#include "sluice/core/cleanup.h"
#include "sluice/core/digest.h"
#include "sluice/core/resources.h"
#include "sluice/core/stats.h"
#include "sluice/core/timing.h"
#include "sluice/fixtures/fixtures.h"
#include "sluice/records/export.h"
#include "sluice/records/record.h"
#include "sluice_config.h"

/* A run is a hand-over (docs/peers.md, "Nothing handed") when its
 * latencies add up to less than writing its batches' bytes could take at
 * WRITE_BYTES_PER_NS, well above what one core writes (work done before its
 * hello), or when a peer that computes when asked used more CPU than its
 * clocks could hold on every CPU plus the protocol's own cost per batch
 * (PROTOCOL_CPU_NS, and one copy of the batch into the ring at
 * PROTOCOL_COPY_BYTES_PER_NS): work done outside its clock. Both bounds
 * hold on a loaded machine, where waiting stretches what sluice sees but
 * neither the bytes nor the CPU time. */
#define WRITE_BYTES_PER_NS         50.0
#define PROTOCOL_CPU_NS            250000.0
#define PROTOCOL_COPY_BYTES_PER_NS 2.0

const char *sl__peer_python(void)
{
    const char *python = getenv("SLUICE_PYTHON");
    return python && *python ? python : "/usr/bin/python3";
}

const char *sl__peer_venv_python(void)
{
    const char *python = getenv("SLUICE_PEER_PYTHON");
    return python && *python ? python : SLUICE_SOURCE_ROOT "/.venv-peers/bin/python";
}

const char *sl__peer_python_of(const sl__peer *peer)
{
    if (peer->python)
        return peer->python();
    return peer->venv ? sl__peer_venv_python() : sl__peer_python();
}

const char *sl__peer_dir(void)
{
    const char *dir = getenv("SLUICE_PEERS_DIR");
    return dir && *dir ? dir : SLUICE_SOURCE_ROOT "/peers";
}

void sl__peer_script_path(const sl__peer *peer, char *path, size_t size)
{
    if (peer->script[0] == '/')
        snprintf(path, size, "%s", peer->script);
    else
        snprintf(path, size, "%s/%s", sl__peer_dir(), peer->script);
}

/* What the last peer run said and how it went; runs are one at a time. */
static struct {
    const sl_adapter *adapter;
    char framework[96];
    char equivalence[32];
    char timing[16];
    char note[256];
    double clocked_fraction;
    double cpu_ns;
    double setup_cpu_ns;
    double plan_setup_cpu_ns;
    double one_batch_cpu_ns; /* the scaling probe's session, when it ran */
    /* The per-window busiest thread (when sampled): the sum over windows,
     * how far past what the latencies hold it went, and sluice's mean
     * time per sample. */
    double window_busiest_ns;
    double window_excess_ns;
    double window_sample_ns;
    double fresh_data_ns; /* generating and exporting the session's data set, when it had its own */
    double p50_with_digest_ns;
    double first_batch_ns;
    double all_batches_ns;
    int64_t all_elements;
} last_run;

void sl__peer_framework(const sl_adapter *adapter, char *out, size_t size)
{
    snprintf(out, size, "%s", last_run.adapter == adapter ? last_run.framework : "");
}

void sl_adapter_last_equivalence(const sl_adapter *adapter, char *out, size_t size)
{
    snprintf(out, size, "%s", last_run.adapter == adapter ? last_run.equivalence : "");
}

void sl__peer_annotate(const sl_adapter *adapter, sl_record *record)
{
    if (last_run.adapter != adapter)
        return;
    snprintf(record->framework, sizeof record->framework, "%s", last_run.framework);
    /* A repetition that was a hand-over makes the record one: it is never
     * ranked as a cost on the strength of its other repetitions. */
    if (!record->timing[0] || strcmp(last_run.timing, "hand-over") == 0)
        snprintf(record->timing, sizeof record->timing, "%s", last_run.timing);
    if (last_run.note[0])
        snprintf(record->note, sizeof record->note, "%s", last_run.note);
    sl_record_add_metric(record, "peer_clocked_fraction", last_run.clocked_fraction, "");
    sl_record_add_metric(record, "peer_cpu_ns", last_run.cpu_ns, "ns");
    sl_record_add_metric(record, "peer_setup_cpu_ns", last_run.setup_cpu_ns, "ns");
    sl_record_add_metric(record, "peer_plan_setup_cpu_ns", last_run.plan_setup_cpu_ns, "ns");
    if (last_run.one_batch_cpu_ns > 0)
        sl_record_add_metric(record, "peer_one_batch_session_cpu_ns", last_run.one_batch_cpu_ns, "ns");
    if (last_run.fresh_data_ns > 0)
        sl_record_add_metric(record, "peer_fresh_data_ns", last_run.fresh_data_ns, "ns");
    if (last_run.window_sample_ns > 0) {
        sl_record_add_metric(record, "peer_window_busiest_thread_ns", last_run.window_busiest_ns, "ns");
        sl_record_add_metric(record, "peer_window_excess_ns", last_run.window_excess_ns, "ns");
        sl_record_add_metric(record, "peer_window_sample_ns", last_run.window_sample_ns, "ns");
    }
    if (last_run.p50_with_digest_ns > 0)
        sl_record_add_metric(record, "peer_p50_with_digest_ns", last_run.p50_with_digest_ns, "ns");
    if (strcmp(last_run.timing, "throughput") == 0 && last_run.all_batches_ns > 0) {
        sl_record_add_metric(record, "peer_first_batch_ns", last_run.first_batch_ns, "ns");
        sl_record_add_metric(record, "peer_throughput_elements_per_s",
                             (double)last_run.all_elements / (last_run.all_batches_ns / 1e9), "elements/s");
    }
}

/* --- the export: the data once per pipeline, the plan after each hello ----- */

static struct {
    const sl_pipeline *pipeline;
    uint64_t fingerprint;
    int64_t nbatches;
    char dir[512];
    uint64_t *digests; /* the answers: in sluice's memory only */
    /* digests hold the bench's own plan's reference (its seed), which the
     * built-in peers' sessions share; a fresh seed's plan overwrites them. */
    bool digests_are_bench;
    /* The bench's plan's batches by the reference kernels, which every
     * peer run on this data set hands its sink (feed_sink): kept once, up
     * to SINK_KEEP_BYTES, rather than computed again for every run. */
    sl__peer_batches sink_batches;
    bool sink_batches_whole;
    bool registered;
    /* The folder's data set is a fresh one of a session (fresh_data), not
     * the bench's: the next run that needs the bench's writes it again. */
    bool data_replaced;
} export_cache;

static void remove_export(void)
{
    if (export_cache.dir[0])
        sl_workdir_remove(export_cache.dir);
    export_cache.dir[0] = '\0';
    export_cache.pipeline = NULL;
    free(export_cache.digests);
    export_cache.digests = NULL;
    export_cache.digests_are_bench = false;
    sl__peer_batches_free(&export_cache.sink_batches);
    export_cache.sink_batches_whole = false;
}

/* A seed no earlier run had: from the kernel's random source, falling back
 * to the clock and the process id where it has none. It reaches no output:
 * the record's bytes and digest are the bench's seed's (feed_sink). */
static uint64_t fresh_seed(void)
{
    uint64_t seed = 0;
    if (getentropy(&seed, sizeof seed) != 0)
        seed = (uint64_t)sl_now_ns() ^ ((uint64_t)getpid() << 32);
    return seed;
}

/* The files of a plan in the export (sl_export_write): removed before each
 * session starts, so that a peer finds only the data set before its hello. */
static bool is_plan_file(const char *name)
{
    return strcmp(name, "plan.json") == 0 || strcmp(name, "MANIFEST.json") == 0 || strncmp(name, "order_e", 7) == 0 ||
           strncmp(name, "decisions_op", 12) == 0;
}

static void hide_plan(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    char path[1024];
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (is_plan_file(e->d_name) && (size_t)snprintf(path, sizeof path, "%s/%s", dir, e->d_name) < sizeof path)
            unlink(path);
    closedir(d);
}

/* Writes pipeline's data set (no plan) into the export's folder. */
static sl_status write_data(const sl_pipeline *pipeline, int64_t nbatches, sl_err *err)
{
    sl_export_meta meta = {.kernels = sl_kernels_reference(), .data_only = true};
    return sl_export_write(pipeline, &meta, nbatches, export_cache.dir, err);
}

/* The data set's files, written once per pipeline and batch count (again
 * after a session wrote a fresh data set in their place, unless the next
 * one writes its own, replaced_next); no plan
 * (D21, attack 1): a peer starts with the data alone, and sluice writes the
 * plan after its hello (reveal_plan), so that nothing computed from the
 * plan escapes the CPU time sluice counts. */
static sl_status ensure_data(const sl_pipeline *pipeline, int64_t nbatches, bool replaced_next, sl_err *err)
{
    uint64_t fp = sl_pipeline_fingerprint(pipeline);
    if (export_cache.dir[0] && export_cache.pipeline == pipeline && export_cache.fingerprint == fp &&
        export_cache.nbatches == nbatches) {
        hide_plan(export_cache.dir);
        /* A session that gets a fresh data set writes its own over it. */
        if (!export_cache.data_replaced || replaced_next)
            return SL_OK;
        sl_status st = write_data(pipeline, nbatches, err);
        export_cache.data_replaced = st != SL_OK;
        return st ? sl_fail_context(err, "exporting the data set for the peer") : SL_OK;
    }
    remove_export();
    if (!export_cache.registered) {
        atexit(remove_export);
        export_cache.registered = true;
    }
    export_cache.digests = malloc((size_t)nbatches * sizeof *export_cache.digests);
    if (!export_cache.digests)
        return sl_fail(err, SL_ENOMEM, "no memory for %" PRId64 " reference digests", nbatches);
    sl_status st = sl_workdir_create(sl_temp_base(), "peer", export_cache.dir, sizeof export_cache.dir, err);
    if (st) {
        export_cache.dir[0] = '\0';
        remove_export();
        return st;
    }
    st = write_data(pipeline, nbatches, err);
    if (st) {
        remove_export();
        return sl_fail_context(err, "exporting the data set for the peer");
    }
    export_cache.pipeline = pipeline;
    export_cache.fingerprint = fp;
    export_cache.nbatches = nbatches;
    return SL_OK;
}

/* One session's plan, written after the peer's hello (the session's reveal
 * hook). Every session of a loader of the user's gets a plan of its own
 * fresh seed (D21, attack 3): the order, and every random op's decisions,
 * differ from run to run, so that batches a loader kept on disk from an
 * earlier run (or repetition) are not this run's, and replaying them is a
 * mismatch. A built-in peer (reviewed code, as for the other checks of
 * D21) runs the bench's own plan, the one sluice's adapters run (bench_seed):
 * like with like, and its reference's digests are computed once per data
 * set rather than once per session (MM-2's log_mel reference takes 6 s a
 * session at the ci size). A
 * prefetching peer's second session gets its first session's plan again
 * (keep_seed), whose batches it is held to. The bench's own seed (goldens,
 * the record's digest, every other adapter) is unchanged: the peer is held
 * to the reference computed with the plan's seed. */
typedef struct plan_reveal {
    const sl_pipeline *bench; /* the bench's pipeline */
    int64_t nbatches;
    uint64_t *digests; /* the reference's, filled when the plan is written */
    sl_pipeline *run;  /* the plan's pipeline: the bench's with a fresh seed */
    bool keep_seed;    /* write run's plan again rather than a new seed's */
    bool bench_seed;   /* the bench's seed rather than a fresh one */
    /* When not NULL, the session's own data set (fresh_data), which run
     * reads in place of the bench's source; borrowed. */
    const sl_source *data;
} plan_reveal;

static uint64_t view_digest(const sl_batch *view);

/* Before the session: the plan's pipeline (a fresh seed, unless keep_seed)
 * and the reference's digests of its batches, in sluice's memory, so that
 * after the hello only the plan's files are left to write (reveal_plan):
 * the loader waits milliseconds for it, not the reference's work. */
static sl_status prepare_plan(plan_reveal *r, sl_err *err)
{
    if (r->run && r->keep_seed)
        return SL_OK;
    sl_pipeline_free(r->run);
    r->run = NULL;
    sl_pipeline_spec spec = *sl_pipeline_get_spec(r->bench);
    if (!r->bench_seed)
        spec.seed = fresh_seed();
    if (r->data)
        spec.source = r->data;
    sl_status st = sl_pipeline_create(&spec, &r->run, err);
    /* The bench's plan's digests in the export's buffer are still there
     * from an earlier session on this data set; any other plan's replace
     * them. */
    bool shared = r->digests == export_cache.digests;
    bool bench_plan = r->bench_seed && !r->data;
    if (!st && shared && bench_plan && export_cache.digests_are_bench)
        return SL_OK;
    if (shared)
        export_cache.digests_are_bench = false;
    sl_batch *batch = NULL;
    if (!st)
        st = sl_batch_create(sl_pipeline_output_schema(r->run), spec.batch_size, &batch, err);
    sl_position pos = {0, 0};
    for (int64_t i = 0; i < r->nbatches && !st; i++) {
        st = sl_pipeline_produce(r->run, sl_kernels_reference(), pos, batch, err);
        if (!st)
            r->digests[i] = view_digest(batch);
        pos = sl_position_advance(r->run, pos, 1);
    }
    sl_batch_free(batch);
    if (!st && shared && bench_plan)
        export_cache.digests_are_bench = true;
    return st ? sl_fail_context(err, "computing the reference of the peer's plan") : SL_OK;
}

/* A data set of a fresh seed for a session (D21, attack 3, the plans no
 * seed changes): on a plan where no op draws, each element's output is a
 * function of its input row alone, whatever the order, so a loader that
 * kept outputs by a hash of each row from an earlier run (or repetition)
 * replays them on any plan sluice could choose. The bench's fixture,
 * generated again with a fresh seed (sl_fixture_regenerate) and exported
 * in the bench's data's place, is a data set no earlier run saw; the plan
 * (prepare_plan) reads it, and the reference is computed from it. The
 * bench's own data set is untouched: goldens, every other adapter, the
 * record's digest and bytes (feed_sink). *out stays NULL for a source no
 * fixture generated whole (files, a stream, a concatenation): those keep
 * the bench's data (docs/peers.md, "What is verified"). */
static sl_status fresh_data(const sl_pipeline *bench, int64_t nbatches, sl_source **out, sl_err *err)
{
    *out = NULL;
    const sl_source *source = sl_pipeline_get_spec(bench)->source;
    sl_err unsupported = {0};
    sl_status st = sl_fixture_regenerate(source, fresh_seed(), out, &unsupported);
    if (st == SL_EUNSUPPORTED)
        return SL_OK;
    if (st)
        return sl_fail(err, st, "generating a fresh data set for the peer: %s", unsupported.msg);
    sl_pipeline_spec spec = *sl_pipeline_get_spec(bench);
    spec.source = *out;
    sl_pipeline *fresh = NULL;
    st = sl_pipeline_create(&spec, &fresh, err);
    export_cache.data_replaced = true;
    if (!st)
        st = write_data(fresh, nbatches, err);
    sl_pipeline_free(fresh);
    if (st) {
        sl_source_free(*out);
        *out = NULL;
        return sl_fail_context(err, "exporting a fresh data set for the peer");
    }
    return SL_OK;
}

/* Whether a second copy of the bench's data set fits beside it (asking for
 * twice its size, as a scenario's fixture does): else the session reads
 * the bench's data, and the record has no peer_fresh_data_ns. Decided
 * before the export is looked at, so that a folder holding an earlier
 * session's fresh data is never left for a session that has none. */
static bool fresh_data_fits(const sl_pipeline *bench)
{
    const sl_source *source = sl_pipeline_get_spec(bench)->source;
    uint64_t bytes = 0;
    for (int f = 0; f < sl_source_schema(source)->nfields; f++)
        bytes += sl_source_field_bytes(source, f);
    int64_t available = sl_memory_available(NULL);
    return available < 0 || 2 * bytes <= (uint64_t)available;
}

static sl_status reveal_plan(void *user, sl_err *err)
{
    plan_reveal *r = user;
    sl_export_meta meta = {.kernels = sl_kernels_reference(), .plan_only = true};
    sl_status st = sl_export_write(r->run, &meta, r->nbatches, export_cache.dir, err);
    return st ? sl_fail_context(err, "writing the peer's plan after its hello") : SL_OK;
}

/* --- verifying each batch from its bytes ------------------------------------ */

typedef struct verify {
    const uint64_t *reference;
    bool statistical; /* no digest can match: keep every batch */
    bool keep_all;    /* a tolerance may apply: keep every batch */
    sl__peer_batches kept;
    int64_t mismatches;
    int64_t first_mismatch;
    uint64_t first_digest;
    sl_batch *first_differing; /* a copy, for the message */
    int64_t bytes, rows;
} verify;

static uint64_t view_digest(const sl_batch *view)
{
    sl_digest *d = sl_digest_new();
    if (!d)
        return 0;
    sl_digest_add_batch(d, view);
    uint64_t value = sl_digest_value(d);
    sl_digest_free(d);
    return value;
}

static sl_status verify_batch(void *user, const sl__peer_batch *b, sl_err *err)
{
    verify *v = user;
    v->rows += b->view.count;
    for (int f = 0; f < b->view.schema.nfields; f++)
        v->bytes += (int64_t)sl_tensor_nbytes(&b->view.fields[f]);
    if (v->statistical || v->keep_all) {
        sl_status st = sl__peer_batches_keep(&v->kept, &b->view, err);
        if (st)
            return st;
    }
    if (v->statistical)
        return SL_OK;
    uint64_t got = view_digest(&b->view);
    if (got == v->reference[b->index])
        return SL_OK;
    if (v->mismatches++ == 0) {
        v->first_mismatch = b->index;
        v->first_digest = got;
        sl__peer_batches one = {0};
        if (sl__peer_batches_keep(&one, &b->view, err) == SL_OK) {
            v->first_differing = one.batches[0];
            free(one.batches);
        }
    }
    return SL_OK;
}

/* Batch k of the pipeline by the reference kernels, into a new batch. */
static sl_status reference_batch(const sl_pipeline *pipeline, int64_t k, sl_batch **out, sl_err *err)
{
    sl_status st =
        sl_batch_create(sl_pipeline_output_schema(pipeline), sl_pipeline_get_spec(pipeline)->batch_size, out, err);
    sl_position pos = {0, 0};
    pos = sl_position_advance(pipeline, pos, k);
    if (!st)
        st = sl_pipeline_produce(pipeline, sl_kernels_reference(), pos, *out, err);
    return st;
}

/* The mismatch's message: how many batches differ, and where the first
 * one first differs from the reference, with both values. */
static sl_status mismatch_error(const sl_adapter *adapter, const sl_pipeline *pipeline, const verify *v,
                                int64_t nbatches, sl_err *err)
{
    char where[400] = "";
    sl_batch *reference = NULL;
    sl_err ref_err = {0};
    if (v->first_differing && reference_batch(pipeline, v->first_mismatch, &reference, &ref_err) == SL_OK) {
        char detail[360];
        if (sl__peer_first_difference(v->first_differing, reference, 0.0, NULL, detail, sizeof detail))
            snprintf(where, sizeof where, ": %s", detail);
    }
    sl_batch_free(reference);
    return sl_fail(err, SL_EMISMATCH,
                   "%s: %" PRId64 " of %" PRId64 " batches differ from the reference's, read from the bytes it "
                   "wrote; batch %" PRId64 " digest %016" PRIx64 ", the reference's %016" PRIx64 "%s",
                   adapter->name, v->mismatches, nbatches, v->first_mismatch, v->first_digest,
                   v->reference[v->first_mismatch], where);
}

/* The most bytes of the bench's reference batches kept for the sink: the
 * ci profile's plans fit whole (MM-2's log_mel reference takes 6 s a pass),
 * the full profile's largest are computed again each run. */
#define SINK_KEEP_BYTES ((size_t)64 << 20)

/* Hands the sink each batch, computed by the reference kernels: the peer's
 * bytes of it were verified equal, so these are the bytes it produced. The
 * export's pipeline's batches are kept the first time they fit, for the
 * runs after it on the same data set. */
static sl_status feed_sink(const sl_pipeline *pipeline, int64_t nbatches, sl_batch_sink sink, void *user, sl_err *err)
{
    /* A caller that only times the run (a scenario's timed passes) passes
     * no sink, as it may to every adapter. */
    if (!sink)
        return SL_OK;
    sl__peer_batches *kept = &export_cache.sink_batches;
    bool cacheable = pipeline == export_cache.pipeline && nbatches == export_cache.nbatches;
    if (cacheable && export_cache.sink_batches_whole) {
        for (int64_t i = 0; i < kept->count; i++)
            if (sink(kept->batches[i], user))
                break;
        return SL_OK;
    }
    sl__peer_batches_free(kept);
    size_t kept_bytes = 0;
    sl_batch *batch = NULL;
    sl_status st =
        sl_batch_create(sl_pipeline_output_schema(pipeline), sl_pipeline_get_spec(pipeline)->batch_size, &batch, err);
    sl_position pos = {0, 0};
    bool stopped = false;
    for (int64_t i = 0; i < nbatches && !st; i++) {
        st = sl_pipeline_produce(pipeline, sl_kernels_reference(), pos, batch, err);
        if (!st && cacheable && kept->count == i && kept_bytes + sl_batch_data_bytes(batch) <= SINK_KEEP_BYTES &&
            sl__peer_batches_keep(kept, batch, err) == SL_OK)
            kept_bytes += sl_batch_data_bytes(batch);
        if (!st && sink(batch, user)) {
            stopped = true;
            break;
        }
        pos = sl_position_advance(pipeline, pos, 1);
    }
    sl_batch_free(batch);
    export_cache.sink_batches_whole = !st && !stopped && cacheable && kept->count == nbatches;
    if (!export_cache.sink_batches_whole)
        sl__peer_batches_free(kept);
    return st;
}

/* --- how its times may be read ------------------------------------------------ */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static double median_ns(const int64_t *values, int64_t n)
{
    if (n <= 0)
        return 0.0;
    int64_t *sorted = malloc((size_t)n * sizeof *sorted);
    if (!sorted)
        return 0.0;
    memcpy(sorted, values, (size_t)n * sizeof *sorted);
    qsort(sorted, (size_t)n, sizeof *sorted, cmp_i64);
    double m = n % 2 ? (double)sorted[n / 2] : 0.5 * ((double)sorted[n / 2 - 1] + (double)sorted[n / 2]);
    free(sorted);
    return m;
}

const char *sl__peer_timing_of(sl__peer_kind kind, const sl__peer_session_result *r, int64_t n, int64_t bytes,
                               double *fraction_out, double *observed_out)
{
    double clocked = 0.0, observed = 0.0;
    for (int64_t i = 0; i < n; i++) {
        clocked += (double)r->latency_ns[i];
        observed += (double)r->observed_ns[i];
    }
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    double protocol = (double)n * PROTOCOL_CPU_NS + (double)bytes / PROTOCOL_COPY_BYTES_PER_NS;
    /* The CPU is counted from the hello; while sluice wrote the plan the
     * loader waited, and its threads' start-up may still have run. */
    double held = clocked + (double)r->reveal_ns;
    bool too_fast = clocked < (double)bytes / WRITE_BYTES_PER_NS;
    /* Its tree's CPU time can outrun its clocks by no more than every CPU,
     * and no one thread of it can run longer than its clocks: a thread
     * runs on one CPU at a time. The second bound holds whatever the
     * number of CPUs or idle threads (a single-threaded loader that
     * reported half its time passed the first on a machine of two). */
    bool unclocked_cpu = kind == SL__PEER_PER_BATCH && r->cpu_ns > 0 &&
                         ((double)r->cpu_ns > (double)(cpus > 0 ? cpus : 1) * held + protocol ||
                          (double)r->busiest_thread_ns > held + protocol);
    if (fraction_out)
        *fraction_out = observed > 0 ? clocked / observed : 1.0;
    if (observed_out)
        *observed_out = observed;
    return kind == SL__PEER_ALL_AT_ONCE   ? "throughput"
           : too_fast || unclocked_cpu    ? "hand-over"
           : kind == SL__PEER_PREFETCHING ? "prefetching"
                                          : "per-batch";
}

/* Sets last_run's timing and note from one session. */
static void classify_timing(const sl__peer *peer, const sl__peer_session_result *r, int64_t n, int64_t bytes)
{
    double fraction = 1.0, observed = 0.0;
    const char *timing = sl__peer_timing_of(peer->kind, r, n, bytes, &fraction, &observed);
    last_run.clocked_fraction = fraction;
    last_run.cpu_ns = (double)r->cpu_ns;
    last_run.setup_cpu_ns = (double)r->setup_cpu_ns;
    last_run.plan_setup_cpu_ns = (double)r->plan_setup_cpu_ns;
    snprintf(last_run.timing, sizeof last_run.timing, "%s", timing);
    /* A loader of the user's that declares itself prefetching skips the CPU
     * check (its clock covers only a hand-over by design): on its own word
     * it is not ranked, unless the user asks for it (D21, attack 2). */
    const char *rank_declared = getenv("SLUICE_RANK_SELF_DECLARED");
    if (peer->users_own && strcmp(timing, "prefetching") == 0 && !(rank_declared && strcmp(rank_declared, "1") == 0)) {
        snprintf(last_run.timing, sizeof last_run.timing, "self-declared");
        snprintf(last_run.note, sizeof last_run.note,
                 "self-declared: a loader of the user's that says it prefetches, timed by sluice's clock as the "
                 "prefetching peers are; its CPU is not checked against its clocks, so it is shown and not ranked "
                 "(SLUICE_RANK_SELF_DECLARED=1 ranks it)");
    }
    if (strcmp(timing, "hand-over") == 0)
        snprintf(last_run.note, sizeof last_run.note,
                 "hand-over: its latencies add up to %.3g ms for %.3g MB of batches, on %.3g ms of CPU (sluice saw "
                 "%.3g ms): work done outside its clock, before its hello or between batches; not ranked",
                 fraction * observed / 1e6, (double)bytes / 1e6, (double)r->cpu_ns / 1e6, observed / 1e6);
    if (peer->kind == SL__PEER_ALL_AT_ONCE) {
        last_run.first_batch_ns = (double)r->latency_ns[0];
        last_run.all_batches_ns = fraction * observed;
    }
}

/* --- a plan's setup that grows with its batches (D21, attack 1) ------------- */

/* A loader that computes every batch as soon as it has the plan (in its
 * first batch's time, or on threads between batches) and then reports
 * latencies just above what handing the bytes over takes passes the bounds
 * above: its clocks hold its CPU, most of it in batch 0, which the warmup
 * leaves out. Honest loaders also spend batch 0 on setup (reading the plan,
 * building a data set or a pipeline), but theirs does not grow with the
 * number of batches, and the attack's does: it costs what every batch
 * costs. So when a session's CPU is more than its median latency could
 * hold over all its batches, sluice runs the loader once more on a plan of
 * one batch (a fresh seed) and holds the growth of its CPU, from one batch
 * to n, to what n - 1 batches at its median latency could use, with
 * SETUP_GROWTH_SLACK for batches slower than the median and a margin for a
 * setup that varies from process to process (docs/peers.md, "What is
 * verified"). */
#define SETUP_GROWTH_SLACK    1.5
#define SETUP_MARGIN_FRACTION 0.25
#define SETUP_MARGIN_NS       100e6

static double protocol_cpu_ns(int64_t n, int64_t bytes)
{
    return (double)n * PROTOCOL_CPU_NS + (double)bytes / PROTOCOL_COPY_BYTES_PER_NS;
}

/* Whether the session's CPU fits n batches at the median latency: then
 * nothing was computed ahead of the clocks that the ranking reads. */
static bool held_at_median(const sl__peer_session_result *r, int64_t n, int64_t bytes, double median, long cpus)
{
    double protocol = protocol_cpu_ns(n, bytes);
    double held = (double)n * median + (double)r->reveal_ns;
    return (double)r->cpu_ns <= (double)cpus * held + protocol && (double)r->busiest_thread_ns <= held + protocol;
}

/* The bytes of a batch, for the probe's protocol allowance. Its bytes are
 * not checked: wrong ones could only make it cheaper, and so the growth
 * larger. */
static sl_status count_bytes(void *user, const sl__peer_batch *b, sl_err *err)
{
    (void)err;
    for (int f = 0; f < b->view.schema.nfields; f++)
        *(int64_t *)user += (int64_t)sl_tensor_nbytes(&b->view.fields[f]);
    return SL_OK;
}

/* Runs the peer on a plan of one batch and judges the growth of its CPU:
 * *grows is set when it grew past what the batches' median could hold. */
static sl_status probe_setup_growth(const sl__peer_session_spec *base, const sl_pipeline *pipeline,
                                    const sl_source *data, const sl__peer_session_result *a, int64_t n, int64_t bytes,
                                    double median, bool *grows, char *why, size_t size, sl_err *err)
{
    uint64_t digest = 0;
    int64_t latency = 0, observed = 0;
    int64_t one_bytes = 0;
    plan_reveal plan = {.bench = pipeline, .nbatches = 1, .digests = &digest, .data = data};
    sl__peer_session_spec spec = *base;
    spec.nbatches = 1;
    spec.digest_between = false;
    spec.on_batch = count_bytes;
    spec.user = &one_bytes;
    spec.reveal = reveal_plan;
    spec.reveal_user = &plan;
    hide_plan(export_cache.dir);
    sl__peer_session_result b = {.latency_ns = &latency, .observed_ns = &observed};
    sl_status st = prepare_plan(&plan, err);
    if (!st)
        st = sl__peer_session_run(&spec, &b, err);
    if (st)
        st = sl_fail_context(err,
                             "running %s on a plan of one batch, to see whether its setup grows with the "
                             "batches",
                             base->name);
    sl_pipeline_free(plan.run);
    if (st)
        return st;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    cpus = cpus > 0 ? cpus : 1;
    double added = (double)(n - 1);
    double protocol = protocol_cpu_ns(n - 1, bytes - one_bytes);
    double held = SETUP_GROWTH_SLACK * added * median;
    double busy_growth = (double)(a->busiest_thread_ns - b.busiest_thread_ns);
    double cpu_growth = (double)(a->cpu_ns - b.cpu_ns);
    bool busy_grows =
        busy_growth > held + protocol + SETUP_MARGIN_NS + SETUP_MARGIN_FRACTION * (double)b.busiest_thread_ns;
    bool cpu_grows =
        cpu_growth > (double)cpus * held + protocol + SETUP_MARGIN_NS + SETUP_MARGIN_FRACTION * (double)b.cpu_ns;
    last_run.one_batch_cpu_ns = (double)b.cpu_ns;
    *grows = busy_grows || cpu_grows;
    if (*grows)
        snprintf(why, size,
                 "hand-over: its CPU grew by %.3g ms from a plan of 1 batch to one of %" PRId64
                 ", where its median latency holds %.3g ms: work done ahead of its clock (before the batches it "
                 "was timed on); not ranked",
                 (busy_grows ? busy_growth : cpu_growth) / 1e6, n, held / 1e6);
    return SL_OK;
}

/* --- a thread per batch, in turn (D21, attack 4) ---------------------------- */

/* The whole session's busiest thread cannot tell k threads that each do
 * every k-th batch alone, inside that batch's window, from one thread: each
 * ran n/k batches, and a loader that reports a k-th of each batch's time
 * passes. A thread runs on one CPU at a time, so in batch i's window (from
 * the sample before its request to the one after its answer) no thread can
 * run longer than batch i's latency, plus the protocol's own cost (and, for
 * batch 0, the plan's writing). Each window's residual, its busiest
 * thread's growth less that allowance, is summed; a window whose thread ran
 * less than it may credits at most WINDOW_LAG_CREDIT_NS, a tick of the
 * coarsest scheduler clock (HZ 100): the scheduler's count of a thread
 * running at a sample can lag by up to a tick, which the next window then
 * counts, and the credit lets that telescope, where an unbounded one would
 * let a loader bank the waits of some batches (reported, and so paid for)
 * to under-report others. Past WINDOW_MARGIN_NS: hand-over (docs/peers.md,
 * "What is verified"). */
#define WINDOW_LAG_CREDIT_NS 10e6
#define WINDOW_MARGIN_NS     20e6

/* The residuals' sum, ns; the sum of the windows' busiest threads in
 * *busiest. */
static double window_excess_ns(const sl__peer_session_result *r, int64_t n, int64_t bytes, double *busiest)
{
    double per_batch = n > 0 ? protocol_cpu_ns(1, bytes / n) : 0.0;
    double excess = 0.0;
    *busiest = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double allowed = (double)r->latency_ns[i] + per_batch + (i == 0 ? (double)r->reveal_ns : 0.0);
        excess += fmax((double)r->window_busiest_ns[i] - allowed, -WINDOW_LAG_CREDIT_NS);
        *busiest += (double)r->window_busiest_ns[i];
    }
    return excess;
}

/* Judges the windows of a sampled session into last_run. */
static void judge_windows(const sl__peer_session_result *r, int64_t n, int64_t bytes)
{
    double busiest = 0.0;
    double excess = window_excess_ns(r, n, bytes, &busiest);
    last_run.window_busiest_ns = busiest;
    last_run.window_excess_ns = excess;
    last_run.window_sample_ns = n > 0 ? (double)r->window_sampling_ns / (double)n : 0.0;
    if (excess > WINDOW_MARGIN_NS && strcmp(last_run.timing, "per-batch") == 0) {
        snprintf(last_run.timing, sizeof last_run.timing, "hand-over");
        snprintf(last_run.note, sizeof last_run.note,
                 "hand-over: batch by batch, its busiest thread ran %.3g ms more than its latencies hold (a thread "
                 "runs on one CPU at a time; %.3g ms allowed): work done outside its clock or latencies "
                 "under-reported; not ranked",
                 excess / 1e6, WINDOW_MARGIN_NS / 1e6);
    }
}

/* --- the adapter -------------------------------------------------------------- */

static void session_spec(const sl__peer *peer, const sl_pipeline *pipeline, const sl_run_request *request,
                         char *workers, size_t size, sl__peer_session_spec *spec)
{
    static char script[1024];
    sl__peer_script_path(peer, script, sizeof script);
    snprintf(workers, size, "--workers=%d", request->workers);
    *spec = (sl__peer_session_spec){
        .name = peer->adapter.name,
        .python = sl__peer_python_of(peer),
        .script = script,
        .export_dir = export_cache.dir,
        .args = {peer->args ? peer->args : workers, NULL},
        .output = sl_pipeline_output_schema(pipeline),
        .rows = sl_pipeline_get_spec(pipeline)->batch_size,
        .nbatches = request->nbatches,
        .startup_s = peer->startup_s,
        .batch_s = peer->batch_s,
        .total_s = peer->total_s,
        .exit_s = peer->exit_s,
    };
}

/* For a prefetching peer, a second session whose consumer digests every
 * batch before asking for the next, as the bench's own sink does: its
 * median beside the steady-state one shows how much work the peer hides
 * behind a consumer (docs/peers.md, "Like with like"). */
static sl_status run_with_digest(const sl__peer_session_spec *base, const uint64_t *reference, int64_t nbatches,
                                 plan_reveal *plan, sl_err *err)
{
    int64_t *latency = calloc((size_t)nbatches, sizeof *latency);
    int64_t *observed = calloc((size_t)nbatches, sizeof *observed);
    if (!latency || !observed) {
        free(latency);
        free(observed);
        return sl_fail(err, SL_ENOMEM, "no memory for the peer's second session");
    }
    verify v = {.reference = reference};
    sl__peer_session_spec spec = *base;
    spec.digest_between = true;
    spec.on_batch = verify_batch;
    spec.user = &v;
    /* The first session's plan again, written after this session's hello. */
    plan->keep_seed = true;
    hide_plan(export_cache.dir);
    sl__peer_session_result result = {.latency_ns = latency, .observed_ns = observed};
    sl_status st = sl__peer_session_run(&spec, &result, err);
    if (!st && v.mismatches)
        st = sl_fail(err, SL_EMISMATCH, "%s: with a digest between batches, %" PRId64 " batches differ", base->name,
                     v.mismatches);
    /* The same clock as the steady state's (sluice's, from request to
     * answer); with a digest between batches, the peer's threads work
     * during it, outside this clock: the difference is the work a consumer
     * hides. */
    if (!st)
        last_run.p50_with_digest_ns = median_ns(observed + 1, nbatches - 1);
    sl_batch_free(v.first_differing);
    sl__peer_batches_free(&v.kept);
    free(latency);
    free(observed);
    return st;
}

/* After the session: the bytes held to the reference, by digest, within
 * the scenario's tolerance, or statistically. */
static sl_status judge(const sl_adapter *adapter, const sl_pipeline *pipeline, const sl_run_request *request, verify *v,
                       sl_err *err)
{
    if (v->statistical) {
        bool agree = false;
        char why[384] = "";
        sl_status st = sl__peer_statistical_check(pipeline, &v->kept, &agree, why, sizeof why, err);
        if (st)
            return st;
        if (!agree)
            return sl_fail(err, SL_EMISMATCH, "%s: statistically not the reference's work: %s", adapter->name, why);
        snprintf(last_run.equivalence, sizeof last_run.equivalence, "statistical");
        return SL_OK;
    }
    if (!v->mismatches)
        return SL_OK;
    if (request->tolerance > 0.0) {
        bool agree = false;
        double worst = 0.0;
        char why[384] = "";
        sl_status st =
            sl__peer_values_check(pipeline, &v->kept, request->tolerance, &agree, &worst, why, sizeof why, err);
        if (st)
            return st;
        if (agree) {
            snprintf(last_run.equivalence, sizeof last_run.equivalence, "within %.3g", request->tolerance);
            return SL_OK;
        }
        return sl_fail(err, SL_EMISMATCH, "%s: beyond the scenario's tolerance %.3g: %s", adapter->name,
                       request->tolerance, why);
    }
    return mismatch_error(adapter, pipeline, v, request->nbatches, err);
}

sl_status sl__peer_run(const sl_adapter *adapter, const sl_pipeline *pipeline, const sl_run_request *request,
                       sl_batch_sink sink, void *user, int64_t *latency_ns, sl_err *err)
{
    const sl__peer *peer = (const sl__peer *)adapter;
    if (request->start.epoch != 0 || request->start.batch != 0)
        return sl_fail(err, SL_EUNSUPPORTED, "%s runs from the start of epoch 0 only", adapter->name);
    /* A loader of the user's on a plan where no op draws gets a data set
     * of its own (fresh_data); the built-in peers' code is reviewed. */
    bool own_data = peer->users_own && !sl_export_draws(pipeline) && fresh_data_fits(pipeline);
    sl_status st = ensure_data(pipeline, request->nbatches, own_data, err);
    if (st)
        return st;
    /* The peer computes this run's plan, written after its hello; the sink
     * gets the bench's. */
    plan_reveal plan = {.bench = pipeline,
                        .nbatches = request->nbatches,
                        .digests = export_cache.digests,
                        .bench_seed = !peer->users_own};
    sl_source *data = NULL;
    int64_t generating = sl_now_ns();
    if (own_data) {
        st = fresh_data(pipeline, request->nbatches, &data, err);
        /* No fresh data after all (a source no fixture made): the folder
         * must hold the bench's, which the reference reads. */
        if (!st && !data)
            st = ensure_data(pipeline, request->nbatches, false, err);
        if (st)
            return st;
        plan.data = data;
    }
    memset(&last_run, 0, sizeof last_run);
    last_run.fresh_data_ns = data ? (double)(sl_now_ns() - generating) : 0.0;
    last_run.adapter = adapter;
    int64_t *observed = calloc((size_t)request->nbatches, sizeof *observed);
    /* A per-batch loader of the user's has its CPU sampled batch by batch
     * (the built-in peers' code is reviewed, as their kinds are). */
    bool windows = peer->users_own && peer->kind == SL__PEER_PER_BATCH;
    int64_t *window_busiest = windows ? calloc((size_t)request->nbatches, sizeof *window_busiest) : NULL;
    if (!observed || (windows && !window_busiest)) {
        free(observed);
        free(window_busiest);
        sl_source_free(data);
        return sl_fail(err, SL_ENOMEM, "no memory for the peer's observed times");
    }
    /* A plan whose draws are not all exported cannot be compared by digest:
     * sluice keeps the peer's batches for the statistical check. */
    verify v = {.reference = export_cache.digests,
                .statistical = !sl_export_decisions_exported(pipeline),
                .keep_all = request->tolerance > 0.0};
    char workers[32];
    sl__peer_session_spec spec;
    session_spec(peer, pipeline, request, workers, sizeof workers, &spec);
    spec.on_batch = verify_batch;
    spec.user = &v;
    spec.reveal = reveal_plan;
    spec.reveal_user = &plan;
    sl__peer_session_result result = {
        .latency_ns = latency_ns, .observed_ns = observed, .window_busiest_ns = window_busiest};
    st = prepare_plan(&plan, err);
    if (!st)
        st = sl__peer_session_run(&spec, &result, err);
    snprintf(last_run.framework, sizeof last_run.framework, "%s", result.framework);
    if (!st)
        st = judge(adapter, plan.run, request, &v, err);
    if (!st) {
        classify_timing(peer, &result, request->nbatches, v.bytes);
        if (windows)
            judge_windows(&result, request->nbatches, v.bytes);
        /* A loader of the user's whose CPU its median latency cannot hold
         * over its batches: does its setup grow with them (attack 1)? The
         * built-in peers' setup is this repository's code, reviewed, as
         * their kinds are; JAX's compiles each batch shape up front, which
         * grows with the shapes and is not the attack. */
        double median = median_ns(latency_ns, request->nbatches);
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        if (peer->users_own && strcmp(last_run.timing, "per-batch") == 0 && request->nbatches > 1 &&
            !held_at_median(&result, request->nbatches, v.bytes, median, cpus > 0 ? cpus : 1)) {
            bool grows = false;
            char why[256] = "";
            st = probe_setup_growth(&spec, pipeline, plan.data, &result, request->nbatches, v.bytes, median, &grows,
                                    why, sizeof why, err);
            if (!st && grows) {
                snprintf(last_run.timing, sizeof last_run.timing, "hand-over");
                snprintf(last_run.note, sizeof last_run.note, "%s", why);
            }
        }
        if (result.slow_exit[0]) {
            size_t used = strlen(last_run.note);
            snprintf(last_run.note + used, sizeof last_run.note - used, "%s%s", used ? "; " : "", result.slow_exit);
        }
        last_run.all_elements = v.rows;
    }
    /* A prefetching peer's own clock covers only the hand-over of a batch
     * its threads made: their work runs whenever they get a CPU (or the
     * interpreter's lock), inside the peer's clock or outside it. With a
     * consumer that asks again as soon as it has a batch, the time sluice
     * sees from each request to its answer is the steady state's cost per
     * batch, and that is the figure its record keeps. */
    if (!st && peer->kind == SL__PEER_PREFETCHING) {
        memcpy(latency_ns, observed, (size_t)request->nbatches * sizeof *latency_ns);
        /* A statistical plan's batches (the peer's own draws) cannot match
         * the reference's digests, nor can those held to a tolerance that
         * differ (MM-2's log_mel through the framework's FFT): the second
         * session must replay the first's, which passed the statistical or
         * tolerance check. */
        uint64_t *own = NULL;
        if (v.statistical || (v.keep_all && v.mismatches)) {
            own = calloc((size_t)request->nbatches, sizeof *own);
            if (!own)
                st = sl_fail(err, SL_ENOMEM, "no memory for the peer's own digests");
            for (int64_t k = 0; own && k < request->nbatches && k < v.kept.count; k++)
                own[k] = view_digest(v.kept.batches[k]);
        }
        if (!st)
            st = run_with_digest(&spec, own ? own : export_cache.digests, request->nbatches, &plan, err);
        free(own);
    }
    if (!st)
        st = feed_sink(pipeline, request->nbatches, sink, user, err);
    sl_batch_free(v.first_differing);
    sl__peer_batches_free(&v.kept);
    sl_pipeline_free(plan.run);
    sl_source_free(data);
    free(observed);
    free(window_busiest);
    return st;
}

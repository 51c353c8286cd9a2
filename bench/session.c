/* A bench session: the selected variants on the selected adapters, one
 * record per run written atomically into the output folder, and every
 * step reported through the caller's callbacks (sluice/bench/session.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_internal.h"
#include "core/internal.h"
#include "sluice/bench/bench.h"
#include "sluice/bench/dist.h"
#include "sluice/bench/environment.h"
#include "sluice/bench/session.h"
#include "sluice/core/cleanup.h"
#include "sluice/core/fileio.h"
#include "sluice/core/folder.h"

struct sl_session {
    sl_session_options options;
    const sl_profile_settings *profile;
    /* The world when the options name none: one local rank. */
    sl_comm *own_world;
    const sl_comm *world;
    bool root;
    char dir[4096];
    /* The advisory lock on dir (sluice/core/folder.h), -1 when none is held. */
    int lock_fd;
    sl_environment env;
    int total;
    int done;
};

void sl_session_options_init(sl_session_options *options, sl_profile profile, uint64_t seed)
{
    *options = (sl_session_options){.output_dir = "records"};
    sl_bench_options_init(&options->bench, profile, seed);
}

/* --- reporting --------------------------------------------------------------------- */

static void report_step(sl_session *s, const sl_session_variant *entry, const sl_adapter *adapter)
{
    s->done++;
    if (!s->options.callbacks.on_step)
        return;
    sl_session_step step = {.scenario = entry->scenario,
                            .variant = entry->variant,
                            .adapter = adapter,
                            .index = s->done,
                            .total = s->total};
    s->options.callbacks.on_step(s->options.callbacks.user, &step);
}

static void report_note(const sl_session *s, sl_session_note_kind kind, bool is_error, const sl_session_variant *entry,
                        const sl_adapter *adapter, const char *message)
{
    if (!s->options.callbacks.on_note)
        return;
    sl_session_note note = {.kind = kind,
                            .is_error = is_error,
                            .scenario = entry->scenario,
                            .variant = entry->variant,
                            .adapter = adapter,
                            .message = message};
    s->options.callbacks.on_note(s->options.callbacks.user, &note);
}

/* How busy the machine was from start to end of one record's run: the
 * record's environment carries it (docs/records.md). */
typedef struct run_load {
    sl__machine_load start, end;
    /* The process's bytes on huge pages as the run ended, while its
     * source and buffers are still held. */
    int64_t anon_huge_bytes;
} run_load;

static void run_load_begin(run_load *load)
{
    sl__machine_sample(&load->start);
    load->end = load->start;
    load->anon_huge_bytes = -1;
}

static void run_load_end(run_load *load)
{
    sl__machine_sample(&load->end);
    load->anon_huge_bytes = sl__anon_huge_bytes();
}

/* Writes the record atomically into the session's folder, with the load
 * of its run when known (NULL for a run that never started), and hands it
 * to the caller with where it went, or why it did not. */
/* Writes the record's file; announce: and tells the session's callbacks
 * (the summary), which a stand-in record (below) must not reach. */
static void write_record(const sl_session *s, const sl_record *record, const run_load *load, bool announce)
{
    char name[256];
    char path[sizeof s->dir + sizeof name + 2];
    sl_err err = {0};
    sl_environment env = s->env;
    if (load) {
        env.load_start = load->start.load1;
        env.load_end = load->end.load1;
        env.steal_fraction = sl__machine_steal_fraction(&load->start, &load->end);
        env.cpu_wait_fraction = sl__process_wait_fraction(&load->start, &load->end);
        env.anon_huge_bytes = (double)load->anon_huge_bytes;
    }
    sl_record_file_name(record, name, sizeof name);
    snprintf(path, sizeof path, "%s/%s", s->dir, name);
    bool written = sl_record_write(record, &env, path, &err) == SL_OK;
    if (announce && s->options.callbacks.on_record)
        s->options.callbacks.on_record(s->options.callbacks.user, record, &env, written ? path : NULL,
                                       written ? NULL : &err);
}

static void save_record_with_load(const sl_session *s, const sl_record *record, const run_load *load)
{
    write_record(s, record, load, true);
}

static void save_record(const sl_session *s, const sl_record *record)
{
    save_record_with_load(s, record, NULL);
}

static void report_variant_done(const sl_session *s, const sl_session_variant *entry)
{
    if (s->options.callbacks.on_variant)
        s->options.callbacks.on_variant(s->options.callbacks.user, entry->scenario, entry->variant);
}

/* --- records of runs that never started -------------------------------------------- */

/* A variant that could not be built still gets one record per adapter, so
 * the reason lands in the report and not only in a note. */
static void unbuilt_record(const sl_session *s, const sl_session_variant *entry, const sl_adapter *adapter,
                           sl_record_outcome outcome, const char *reason, sl_record *record)
{
    memset(record, 0, sizeof *record);
    sl__record_identify(record, entry->scenario, entry->variant, adapter, s->profile, s->options.bench.kernels);
    sl__copy_string(record->reason, sizeof record->reason, reason);
    record->outcome = outcome;
    record->seed = s->options.bench.seed;
    record->batch_size = entry->batch_size;
}

/* Each adapter's run of a variant that cannot run, as a step and a record. */
static void save_unbuilt(sl_session *s, const sl_session_variant *entry, sl_record_outcome outcome, const char *reason)
{
    for (int a = 0; a < s->options.nadapters; a++) {
        const sl_adapter *adapter = s->options.adapters[a];
        sl_record record;
        report_step(s, entry, adapter);
        unbuilt_record(s, entry, adapter, outcome, reason, &record);
        save_record(s, &record);
    }
}

/* --- running ----------------------------------------------------------------------- */

static void build_options(const sl_session *s, sl_build_options *build)
{
    sl_build_options_init(build, s->options.bench.profile, s->options.bench.seed);
}

/* The options every adapter of an instance shares, with the yardsticks
 * measured once per instance and the reference's digest of the measured
 * batches that every adapter is held to. */
static sl_status instance_options(const sl_session *s, const sl_scenario_instance *instance, sl_bench_options *options,
                                  sl_err *err)
{
    *options = s->options.bench;
    options->defer_scenario_metrics = false;
    /* One yardstick per instance: every adapter's record compares with the
     * same probe, and the probe's tenth of a second is not paid per adapter. */
    if (!options->skip_probes) {
        options->memcpy_probe_bytes_per_s = sl_probe_memcpy_bandwidth(sl_pipeline_batch_bytes(instance->pipeline), 5);
        options->roofline_ns_per_batch =
            sl_probe_roofline_best(instance->pipeline, options->kernels, 21, &options->roofline_kernels);
        options->gather_ns_per_batch = sl_probe_gather_ns_per_batch(instance->pipeline, options);
        options->write_ns_per_batch = sl_probe_write_ns_per_batch(sl_pipeline_batch_bytes(instance->pipeline));
        options->traffic_ns_per_batch = sl_probe_traffic_ns_per_batch(instance->pipeline, options);
    }
    /* No time without a check: the reference's digest of the measured
     * batches, computed once, is what every adapter is held to. */
    options->check_against_reference = true;
    return sl_bench_reference_digest(instance, options, &options->reference_digest, err);
}

/* A workers sweep's point runs at its own worker count; the probes and
 * the reference's digest do not depend on it, so they are the instance's. */
static void variant_workers(const sl_session_variant *entry, sl_bench_options *options)
{
    if (entry->sets_workers)
        options->workers = entry->workers;
}

/* The watchdog fired (SL_ETIMEDOUT, docs/distributed.md): this rank records
 * each run it ends as failed with the watchdog's reason and ends the job,
 * since ranks that wait for a silent one would otherwise wait forever.
 *
 * Every rank the watchdog fires on writes those records, not rank 0 alone.
 * A rank other than 0 times out only when rank 0 never released it (rank 0
 * fires first on any other silent rank, at half the wait, and ends the
 * job), so there rank 0 is the silent one and cannot write. The ranks that
 * wait on it time out within moments of each other and the first to end the
 * job kills the rest, so each writes before it ends the job rather than
 * leaving it to one deputy that may already be gone; a record is written
 * whole under its final name (sl_record_write), so two writers leave one
 * whole record. */
static _Noreturn void end_job(sl_session *s, const sl_comm *comm, const sl_session_variant *entry,
                              const sl_adapter *only, const sl_err *err)
{
    for (int a = 0; a < s->options.nadapters; a++) {
        const sl_adapter *adapter = s->options.adapters[a];
        if (only && adapter != only)
            continue;
        sl_record record;
        unbuilt_record(s, entry, adapter, SL_RECORD_FAILED, err->msg, &record);
        report_note(s, SL_SESSION_RUN_FAILED, true, entry, adapter, err->msg);
        save_record(s, &record);
    }
    sl_comm_abort(comm, 1, err->msg);
}

/* One run of a distributed variant on this rank, then the job's record on
 * rank 0 (sl_dist_finish). The ranks start each adapter together, so that
 * their measured batches overlap as a job's do; a rank whose instance was
 * not built still takes every collective step with a record saying why. */
static void run_distributed_adapter(sl_session *s, const sl_session_variant *entry, const sl_comm *mesh,
                                    sl_scenario_instance *instance, const sl_bench_options *options, sl_status built,
                                    const char *build_error, const sl_adapter *adapter)
{
    sl_record record;
    sl_err run_err = {0};
    char step[192];
    if (s->root)
        report_step(s, entry, adapter);
    snprintf(step, sizeof step, "the start of %s/%s on %s", entry->scenario->id, entry->variant->name, adapter->name);
    /* A stand-in, replaced by the run's own record when the run ends: a
     * rank SIGKILLed mid-run ends the whole job (the launcher kills every
     * rank), and the run in progress used to leave no record at all (D26). */
    if (s->root) {
        sl_record stand_in;
        unbuilt_record(s, entry, adapter, SL_RECORD_FAILED,
                       "the job ended while this run was in progress: a rank was killed, or the job was aborted, "
                       "before the run's own record was written",
                       &stand_in);
        write_record(s, &stand_in, NULL, false);
    }
    sl_status started = sl_comm_checkin(mesh, step, &run_err);
    if (started == SL_ETIMEDOUT)
        end_job(s, mesh, entry, adapter, &run_err);
    if (started == SL_OK && built == SL_OK)
        sl_bench_run(instance, adapter, options, &record, &run_err);
    else
        unbuilt_record(s, entry, adapter, built == SL_ESKIPPED ? SL_RECORD_SKIPPED : SL_RECORD_FAILED,
                       built == SL_OK ? run_err.msg : build_error, &record);
    sl_err finish_err = {0};
    sl_status finished =
        sl_dist_finish(mesh, built == SL_OK ? instance : NULL, adapter, s->options.bench.kernels, &record, &finish_err);
    if (finished == SL_ETIMEDOUT) {
        /* Only rank 0's record is the job's; end_job records the failure
         * in place of whichever this rank holds. */
        sl_record_release(&record);
        end_job(s, mesh, entry, adapter, &finish_err);
    }
    if (s->root) {
        if (record.outcome == SL_RECORD_FAILED || record.outcome == SL_RECORD_MISMATCH) {
            char message[SL_ERR_MAX + 128];
            snprintf(message, sizeof message, "%s/%s on %s: %s", entry->scenario->id, entry->variant->name,
                     adapter->name, record.reason);
            report_note(s, SL_SESSION_RUN_FAILED, true, entry, adapter, message);
        }
        save_record(s, &record);
    }
    sl_record_release(&record);
}

/* A distributed scenario's variant, on every rank of the job: the ranks
 * form the variant's mesh, each builds the scenario on its shard and runs
 * each adapter, and rank 0 gathers their reports into one record per
 * adapter. Every rank takes every collective step, built or not, so that a
 * rank that fails is reported rather than waited for; one that stops is
 * named by the watchdog, and the job ends. */
static void bench_distributed(sl_session *s, const sl_session_variant *entry)
{
    int dims[SL_MESH_MAX_DIMS];
    char reason[256] = "", step[160];
    sl_err err = {0};
    sl_comm *mesh = NULL;
    int ndims = sl_scenario_mesh(entry->scenario, entry->variant, s->world->world, dims, reason, sizeof reason);
    snprintf(step, sizeof step, "the mesh of %s/%s", entry->scenario->id, entry->variant->name);
    sl_status status = SL_ESKIPPED;
    if (ndims > 0 && (status = sl_comm_checkin(s->world, step, &err)) == SL_ETIMEDOUT)
        end_job(s, s->world, entry, NULL, &err);
    if (status == SL_OK)
        status = sl_comm_mesh(s->world, ndims, dims, &mesh, &err);
    if (status != SL_OK) {
        if (!s->root)
            return;
        const char *why = ndims == 0 ? reason : err.msg;
        report_note(s, SL_SESSION_NO_MESH, ndims != 0, entry, NULL, why);
        save_unbuilt(s, entry, ndims == 0 ? SL_RECORD_SKIPPED : SL_RECORD_FAILED, why);
        return;
    }

    sl_build_options build;
    build_options(s, &build);
    build.comm = mesh;
    /* A rank generates only the rows its runs read (docs/distributed.md). */
    build.batches_read = sl__bench_batches_read(&s->options.bench);
    sl_scenario_instance *instance = NULL;
    sl_bench_options options = s->options.bench;
    sl_status built = s->options.instantiate(entry->scenario, entry->variant, &build, &instance, &err);
    if (built == SL_OK)
        built = instance_options(s, instance, &options, &err);
    variant_workers(entry, &options);
    options.defer_scenario_metrics = true;
    for (int a = 0; a < s->options.nadapters; a++)
        run_distributed_adapter(s, entry, mesh, instance, &options, built, err.msg, s->options.adapters[a]);
    if (instance)
        s->options.instance_free(instance);
    sl_comm_free(mesh);
}

/* Each adapter's repetitions in a row, one adapter after the other. */
static void run_back_to_back(sl_session *s, const sl_session_variant *entry, const sl_scenario_instance *instance,
                             const sl_bench_options *options)
{
    for (int a = 0; a < s->options.nadapters; a++) {
        const sl_adapter *adapter = s->options.adapters[a];
        sl_record record;
        sl_err run_err = {0};
        run_load load;
        report_step(s, entry, adapter);
        run_load_begin(&load);
        sl_status status = sl_bench_run(instance, adapter, options, &record, &run_err);
        run_load_end(&load);
        if (status != SL_OK)
            report_note(s, SL_SESSION_RUN_FAILED, true, entry, adapter, run_err.msg);
        save_record_with_load(s, &record, &load);
        sl_record_release(&record);
    }
}

/* The adapters of a variant in rounds: every adapter's run begun, then
 * repetition r of each adapter in turn for every round, then every run
 * finished. An adapter whose repetition fails drops out of the later
 * rounds with its record saying why; the others go on. */
static void run_in_rounds(sl_session *s, const sl_session_variant *entry, const sl_scenario_instance *instance,
                          const sl_bench_options *options)
{
    int n = s->options.nadapters;
    sl_record *records = calloc(n > 0 ? (size_t)n : 1, sizeof *records);
    sl__bench_run **runs = calloc(n > 0 ? (size_t)n : 1, sizeof *runs);
    run_load *loads = calloc(n > 0 ? (size_t)n : 1, sizeof *loads);
    if (!records || !runs || !loads) {
        free(records);
        free(runs);
        free(loads);
        report_note(s, SL_SESSION_NO_REFERENCE, true, entry, NULL, "out of memory for a variant's rounds");
        save_unbuilt(s, entry, SL_RECORD_FAILED, "out of memory for a variant's rounds");
        return;
    }
    sl_bench_options per_round = *options;
    per_round.repetitions = s->options.rounds;
    for (int a = 0; a < n; a++) {
        sl_err err = {0};
        run_load_begin(&loads[a]);
        if (sl__bench_begin(instance, s->options.adapters[a], &per_round, &records[a], &runs[a], &err) != SL_OK)
            report_note(s, SL_SESSION_RUN_FAILED, true, entry, s->options.adapters[a], err.msg);
    }
    /* A step is reported as an adapter starts its last round, so that the
     * caller's progress counts runs that are about to complete. */
    for (int r = 0; r < s->options.rounds; r++)
        for (int a = 0; a < n; a++) {
            sl_err err = {0};
            if (r == s->options.rounds - 1)
                report_step(s, entry, s->options.adapters[a]);
            if (runs[a] && sl__bench_repetition(runs[a], r, &err) != SL_OK) {
                report_note(s, SL_SESSION_RUN_FAILED, true, entry, s->options.adapters[a], err.msg);
                sl__bench_abandon(runs[a]);
                runs[a] = NULL;
            }
        }
    for (int a = 0; a < n; a++) {
        sl_err err = {0};
        if (runs[a] && sl__bench_end(runs[a], &err) != SL_OK)
            report_note(s, SL_SESSION_RUN_FAILED, true, entry, s->options.adapters[a], err.msg);
        if (records[a].outcome == SL_RECORD_OK || records[a].outcome == SL_RECORD_MISMATCH)
            records[a].rounds = s->options.rounds;
        run_load_end(&loads[a]);
        save_record_with_load(s, &records[a], &loads[a]);
        sl_record_release(&records[a]);
    }
    free(records);
    free(runs);
    free(loads);
}

/* A variant of one process: built once, its reference digest and probes
 * taken once, then run on each adapter. */
static void bench_variant(sl_session *s, const sl_session_variant *entry)
{
    if (entry->scenario->mesh) {
        bench_distributed(s, entry);
        return;
    }
    sl_build_options build;
    build_options(s, &build);
    sl_scenario_instance *instance = NULL;
    sl_err err = {0};
    sl_status status = s->options.instantiate(entry->scenario, entry->variant, &build, &instance, &err);
    if (status != SL_OK) {
        bool skipped = status == SL_ESKIPPED;
        report_note(s, SL_SESSION_NOT_BUILT, !skipped, entry, NULL, err.msg);
        save_unbuilt(s, entry, skipped ? SL_RECORD_SKIPPED : SL_RECORD_FAILED, err.msg);
        return;
    }
    sl_bench_options options;
    status = instance_options(s, instance, &options, &err);
    variant_workers(entry, &options);
    if (status != SL_OK) {
        report_note(s, SL_SESSION_NO_REFERENCE, true, entry, NULL, err.msg);
        save_unbuilt(s, entry, SL_RECORD_FAILED, err.msg);
        s->options.instance_free(instance);
        return;
    }
    if (s->options.rounds > 0)
        run_in_rounds(s, entry, instance, &options);
    else
        run_back_to_back(s, entry, instance, &options);
    s->options.instance_free(instance);
}

/* Variants that have no size at this profile are reported once and never
 * counted, so the total is the number of runs that will happen. */
static bool runs_at_profile(const sl_session_variant *entry)
{
    return entry->n > 0;
}

/* A job of several ranks runs the distributed scenarios only: the others
 * would run whole on every rank, K copies competing for the same cores,
 * and their records would overwrite those of a run alone. */
static bool runs_in_job(const sl_session *s, const sl_scenario *scenario)
{
    return s->world->world == 1 || scenario->mesh != NULL;
}

static int count_runs(const sl_session *s)
{
    int total = 0;
    for (int i = 0; i < s->options.nvariants; i++) {
        const sl_session_variant *entry = &s->options.variants[i];
        if (runs_at_profile(entry) && runs_in_job(s, entry->scenario))
            total += s->options.nadapters;
    }
    return total;
}

sl_status sl_session_run(sl_session *s, sl_err *err)
{
    if (!s)
        return sl_fail(err, SL_EINVAL, "sl_session_run needs a session");
    s->done = 0;
    for (int i = 0; i < s->options.nvariants; i++) {
        const sl_session_variant *entry = &s->options.variants[i];
        /* Only rank 0 reports: on the others, a variant left out is left
         * out on rank 0 too, which says so. */
        if (!runs_at_profile(entry)) {
            if (s->root)
                report_note(s, SL_SESSION_NOT_AT_SIZE, false, entry, NULL, "");
            continue;
        }
        if (!runs_in_job(s, entry->scenario)) {
            if (s->root)
                report_note(s, SL_SESSION_NOT_IN_JOB, false, entry, NULL, "");
            continue;
        }
        bench_variant(s, entry);
        if (s->root)
            report_variant_done(s, entry);
    }
    return SL_OK;
}

/* --- the session ------------------------------------------------------------------- */

static sl_status check_options(const sl_session_options *options, sl_err *err)
{
    if (!options || !options->instantiate || !options->instance_free || !options->output_dir)
        return sl_fail(err, SL_EINVAL, "a session needs options with instantiate, instance_free and output_dir");
    if (!sl_profile_get(options->bench.profile))
        return sl_fail(err, SL_EINVAL, "unknown profile %d", (int)options->bench.profile);
    if (options->nvariants < 0 || options->nadapters < 0 || (options->nvariants > 0 && !options->variants) ||
        (options->nadapters > 0 && !options->adapters))
        return sl_fail(err, SL_EINVAL, "a session's variants and adapters must be arrays of their counts");
    if (options->rounds < 0 || options->rounds > SL_RECORD_MAX_REPETITIONS)
        return sl_fail(err, SL_EINVAL, "a session runs 0 to %d rounds, not %d", SL_RECORD_MAX_REPETITIONS,
                       options->rounds);
    return SL_OK;
}

/* Rank 0's folder: created, locked for this session (two benches writing
 * one folder would mix their runs and one summary would describe both),
 * and swept of the records a killed run left half-written. */
static sl_status prepare_output(sl_session *s, sl_err *err)
{
    sl_err dir_err = {0};
    if (sl_make_dirs(s->dir, &dir_err) != SL_OK)
        return sl_fail(err, dir_err.status, "cannot create the output directory: %s", dir_err.msg);
    sl_status status = sl_folder_lock(s->dir, "sluice bench", &s->lock_fd, err);
    if (status != SL_OK)
        return status;
    sl_sweep_stale_temporaries(s->dir);
    sl_environment_collect(&s->env);
    return SL_OK;
}

sl_status sl_session_create(const sl_session_options *options, sl_session **out, sl_err *err)
{
    *out = NULL;
    sl_status status = check_options(options, err);
    if (status != SL_OK)
        return status;
    sl_session *s = calloc(1, sizeof *s);
    if (!s)
        return sl_fail(err, SL_ENOMEM, "out of memory for a session");
    s->options = *options;
    s->lock_fd = -1;
    if (!s->options.bench.kernels)
        s->options.bench.kernels = sl_kernels_default();
    s->profile = sl_profile_get(options->bench.profile);
    s->world = options->world;
    if (!s->world && (status = sl_comm_local(0, 1, &s->own_world, err)) != SL_OK) {
        free(s);
        return status;
    }
    if (!s->world)
        s->world = s->own_world;
    s->root = s->world->rank == 0;
    int used = snprintf(s->dir, sizeof s->dir, "%s/%s", options->output_dir, s->profile->name);
    if (used < 0 || (size_t)used >= sizeof s->dir)
        status = sl_fail(err, SL_EINVAL, "the output folder %s is too long for a record's path", options->output_dir);
    else if (s->root)
        status = prepare_output(s, err);
    if (status != SL_OK) {
        sl_session_free(s);
        return status;
    }
    s->total = count_runs(s);
    *out = s;
    return SL_OK;
}

const char *sl_session_dir(const sl_session *session)
{
    return session->dir;
}

const sl_environment *sl_session_environment(const sl_session *session)
{
    return &session->env;
}

int sl_session_total(const sl_session *session)
{
    return session->total;
}

void sl_session_free(sl_session *session)
{
    if (!session)
        return;
    sl_comm_free(session->own_world);
    sl_folder_unlock(session->lock_fd);
    free(session);
}

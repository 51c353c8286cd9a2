/* DIST-1, sharding across processes: the standard checks (one process, the
 * whole data set); simulated ranks in this process, whose shards partition
 * the epoch and interleave to the one-process order for several rank
 * counts; the checks, the job's record and the per-rank metrics on views
 * made by hand; and real jobs under mpirun with K = 1, 2 and 4 processes
 * (suite dist1_mpi, skipped with the reason in a build without MPI). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dirent.h>
#include <unistd.h>
#include <xxhash.h>

#include <criterion/criterion.h>

#include "dist_support.h"
#include "harness.h"

SL_CORPUS_STANDARD_TESTS(dist1, "DIST-1", "32x32")

enum { N = 2000, ROW_BYTES = 32 * 32 * 3 * 4 };

static void run_epoch(const sl_scenario_instance *instance, run_output *out)
{
    harness_run(instance, "reference", 0, 0, (sl_position){0, 0}, 0, out);
}

Test(dist1, simulated_shards_partition_the_epoch_for_any_rank_count)
{
    sl_scenario_instance *alone = harness_build("DIST-1", "32x32");
    run_output whole;
    run_epoch(alone, &whole);
    cr_assert_eq(whole.rows, N);
    static const int worlds[] = {1, 2, 3, 4, 7};
    for (size_t w = 0; w < sizeof worlds / sizeof worlds[0]; w++) {
        int world = worlds[w];
        int owner[N];
        for (int e = 0; e < N; e++)
            owner[e] = -1;
        for (int r = 0; r < world; r++) {
            dist_rank rank;
            dist_rank_build("DIST-1", "32x32", r, world, 1, &world, &rank);
            run_output shard;
            run_epoch(rank.instance, &shard);
            /* Positions r, r + W, ... below N: ceil((N - r) / W) of them. */
            cr_assert_eq(shard.rows, (N - r + world - 1) / world, "rank %d of %d loaded %lld rows", r, world,
                         (long long)shard.rows);
            for (int64_t i = 0; i < shard.rows; i++) {
                int64_t id = shard.ids[i], position = r + i * world;
                cr_assert_eq(owner[id], -1, "element %lld is in the shards of ranks %d and %d of %d", (long long)id,
                             owner[id], r, world);
                owner[id] = r;
                cr_assert_eq(id, whole.ids[position],
                             "rank %d of %d: position %lld holds %lld, the one-process order %lld", r, world,
                             (long long)position, (long long)id, (long long)whole.ids[position]);
                cr_assert(memcmp(harness_row(&shard, 0, i), harness_row(&whole, 0, position), ROW_BYTES) == 0,
                          "rank %d of %d: element %lld's output differs from the one-process run's", r, world,
                          (long long)id);
            }
            harness_release(&shard);
            dist_rank_free(&rank);
        }
        for (int e = 0; e < N; e++)
            cr_assert_geq(owner[e], 0, "element %d is in no shard of %d", e, world);
    }
    harness_release(&whole);
    sl_scenario_instance_free(alone);
}

/* A record that says its run went well, for reports made without a bench. */
static sl_record ok_record(void)
{
    sl_record record;
    memset(&record, 0, sizeof record);
    record.outcome = SL_RECORD_OK;
    return record;
}

/* Reports of three simulated ranks, as sl_dist_report_local makes them. */
static void simulated_view(sl_dist_view *view, dist_rank *ranks)
{
    int world = 3;
    view->world = world;
    view->ranks = calloc((size_t)world, sizeof *view->ranks);
    cr_assert_not_null(view->ranks);
    sl_record record = ok_record();
    for (int r = 0; r < world; r++) {
        dist_rank_build("DIST-1", "32x32", r, world, 1, &world, &ranks[r]);
        sl_err err = {0};
        cr_assert_eq(sl_dist_report_local(ranks[r].mesh, ranks[r].instance, &record, &view->ranks[r], &err), SL_OK,
                     "%s", err.msg);
    }
}

static void expect_refused(const sl_dist_view *view, const sl_pipeline *pipeline, const char *needle)
{
    sl_err err = {0};
    cr_assert_eq(sl_dist_check_shards(view, pipeline, &err), SL_EMISMATCH, "a broken view passed the check");
    cr_expect(strstr(err.msg, needle) != NULL, "message '%s' does not say '%s'", err.msg, needle);
}

Test(dist1, the_check_refuses_shards_that_overlap_miss_or_reorder)
{
    sl_dist_view view;
    dist_rank ranks[3];
    simulated_view(&view, ranks);
    const sl_pipeline *pipeline = ranks[0].instance->pipeline;
    sl_err err = {0};
    cr_assert_eq(sl_dist_check_shards(&view, pipeline, &err), SL_OK, "%s", err.msg);
    int64_t *a = view.ranks[0].epoch_ids, *b = view.ranks[1].epoch_ids;

    /* Two ranks trade an element: still a partition, in the wrong order. */
    int64_t keep = a[0];
    a[0] = b[0];
    b[0] = keep;
    expect_refused(&view, pipeline, "global position");
    b[0] = a[0];
    a[0] = keep;

    /* Rank 1 loads one of rank 0's elements instead of its own. */
    keep = b[5];
    b[5] = a[3];
    expect_refused(&view, pipeline, "overlap");
    b[5] = keep;

    /* Rank 2 stops one row short: an element is in no shard. */
    view.ranks[2].epoch_rows--;
    expect_refused(&view, pipeline, "in none");
    view.ranks[2].epoch_rows++;

    /* Two ranks claim the same place in the mesh. */
    view.ranks[2].coords[0] = 1;
    expect_refused(&view, pipeline, "coordinates");
    view.ranks[2].coords[0] = 2;

    /* A rank whose run failed fails the check, naming it. */
    view.ranks[1].record.outcome = SL_RECORD_FAILED;
    snprintf(view.ranks[1].record.reason, sizeof view.ranks[1].record.reason, "out of memory");
    expect_refused(&view, pipeline, "rank 1 did not run: out of memory");
    view.ranks[1].record.outcome = SL_RECORD_OK;

    cr_assert_eq(sl_dist_check_shards(&view, pipeline, &err), SL_OK, "%s", err.msg);
    sl_dist_view_free(&view);
    for (int r = 0; r < 3; r++)
        dist_rank_free(&ranks[r]);
}

/* A view of ranks with the given kept latencies (5 each), digests and pids. */
static void latency_view(sl_dist_view *view, int world, const int64_t (*latencies)[5], const int64_t *pids)
{
    view->world = world;
    view->ranks = calloc((size_t)world, sizeof *view->ranks);
    cr_assert_not_null(view->ranks);
    for (int r = 0; r < world; r++) {
        sl_rank_report *report = &view->ranks[r];
        report->rank = r;
        report->world = world;
        report->ndims = 1;
        report->dims[0] = world;
        report->coords[0] = r;
        report->pid = pids[r];
        snprintf(report->host, sizeof report->host, "node");
        report->record = ok_record();
        snprintf(report->record.scenario, sizeof report->record.scenario, "DIST-1");
        report->record.measured_batches = 5;
        report->record.elements = 320;
        report->record.output_digest = 0x1000u + (uint64_t)r;
        report->record.latency_ns = malloc(5 * sizeof(int64_t));
        cr_assert_not_null(report->record.latency_ns);
        memcpy(report->record.latency_ns, latencies[r], 5 * sizeof(int64_t));
    }
}

Test(dist1, the_job_record_is_its_slowest_rank_with_every_digest)
{
    /* Sums 15, 30 and 50 ns: rank 2 is the slowest. */
    static const int64_t latencies[3][5] = {{1, 2, 3, 4, 5}, {2, 4, 6, 8, 10}, {10, 10, 10, 10, 10}};
    static const int64_t pids[3] = {100, 101, 102};
    sl_dist_view view;
    latency_view(&view, 3, latencies, pids);
    sl_record job;
    sl_err err = {0};
    cr_assert_eq(sl_dist_merge(&view, &job, &err), SL_OK, "%s", err.msg);
    cr_expect_eq(job.outcome, SL_RECORD_OK);
    cr_expect_eq(job.latency_ns[0], 10);
    cr_expect_eq(job.elements, 320, "the record's own figures are the slowest rank's");
    uint64_t digests[3] = {0x1000, 0x1001, 0x1002};
    cr_expect_eq(job.output_digest, XXH3_64bits(digests, sizeof digests));
    sl_record_release(&job);

    /* One rank failed: the job failed, saying which rank. */
    view.ranks[1].record.outcome = SL_RECORD_FAILED;
    snprintf(view.ranks[1].record.reason, sizeof view.ranks[1].record.reason, "boom");
    cr_assert_eq(sl_dist_merge(&view, &job, &err), SL_OK, "%s", err.msg);
    cr_expect_eq(job.outcome, SL_RECORD_FAILED);
    cr_expect_str_eq(job.reason, "rank 1 of 3: boom");
    sl_record_release(&job);

    /* Every rank excluded alike reads as one process's record. */
    for (int r = 0; r < 3; r++) {
        view.ranks[r].record.outcome = SL_RECORD_EXCLUDED;
        snprintf(view.ranks[r].record.reason, sizeof view.ranks[r].record.reason, "lacks transform normalize");
    }
    cr_assert_eq(sl_dist_merge(&view, &job, &err), SL_OK, "%s", err.msg);
    cr_expect_eq(job.outcome, SL_RECORD_EXCLUDED);
    cr_expect_str_eq(job.reason, "lacks transform normalize");
    sl_record_release(&job);
    sl_dist_view_free(&view);
}

static double metric(const sl_record *record, const char *name)
{
    const sl_record_metric *m = harness_metric(record, name);
    cr_expect_eq(m->scope, SL_METRIC_SCENARIO, "%s is not a scenario metric", name);
    return m->value;
}

Test(dist1, rank_metrics_follow_each_rank)
{
    static const int64_t latencies[3][5] = {{1, 2, 3, 4, 5}, {2, 4, 6, 8, 10}, {10, 10, 10, 10, 10}};
    /* Ranks 0 and 2 report the same process: two processes, not three. */
    static const int64_t pids[3] = {100, 101, 100};
    sl_dist_view view;
    latency_view(&view, 3, latencies, pids);
    sl_record record = ok_record();
    sl_dist_add_rank_metrics(&view, &record);
    cr_expect_eq(metric(&record, "ranks"), 3);
    cr_expect_eq(metric(&record, "mesh_data_ranks"), 3);
    cr_expect_eq(metric(&record, "mesh_replicas"), 1);
    cr_expect_eq(metric(&record, "processes"), 2);
    /* The medians of 1..5, 2..10 step 2 and five 10s. */
    cr_expect_eq(metric(&record, "rank_0_p50_ns"), 3);
    cr_expect_eq(metric(&record, "rank_1_p50_ns"), 6);
    cr_expect_eq(metric(&record, "rank_2_p50_ns"), 10);
    cr_expect_eq(metric(&record, "rank_p50_min_ns"), 3);
    cr_expect_eq(metric(&record, "rank_p50_median_ns"), 6);
    cr_expect_eq(metric(&record, "rank_p50_max_ns"), 10);
    cr_expect_eq(metric(&record, "slowest_rank"), 2);
    cr_expect_eq(metric(&record, "slowest_rank_ns"), 50);
    /* 3 x 320 elements once the slowest rank's 50 ns are over. */
    cr_expect_float_eq(metric(&record, "job_elements_per_s"), 960.0 * 1e9 / 50.0, 1e-3);
    sl_dist_view_free(&view);
}

/* Shard-only generation (docs/distributed.md): a rank of a run that says it
 * reads 6 batches generates only the rows it reads. Rank 1 of 4 owns 500
 * positions of each epoch, and 6 batches of 64 are 384 positions, all inside
 * epoch 0, so it needs exactly epoch 0's shard: 500 of the 2000 rows. Those
 * rows are the bytes the whole fixture holds, and a read past what the run
 * said it would read fails, naming the field, rather than reading zeros
 * silently or crashing. */
Test(dist1, a_rank_generates_only_the_rows_it_reads)
{
    sl_comm *world = NULL, *mesh = NULL;
    sl_err err = {0};
    const int dims[1] = {4};
    cr_assert_eq(sl_comm_local(1, 4, &world, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(sl_comm_mesh(world, 1, dims, &mesh, &err), SL_OK, "%s", err.msg);
    sl_build_options options;
    sl_build_options_init(&options, SL_PROFILE_CI, 42);
    options.comm = mesh;
    sl_scenario_instance *whole = harness_build_with("DIST-1", "32x32", &options);
    options.batches_read = 6;
    sl_scenario_instance *shard = harness_build_with("DIST-1", "32x32", &options);
    cr_expect_eq(sl_fixture_rows_generated(whole->fixture), N);
    cr_expect_eq(sl_fixture_rows_generated(shard->fixture), N / 4, "rank 1 of 4 generated %lld rows",
                 (long long)sl_fixture_rows_generated(shard->fixture));

    static const char *const adapters[] = {"reference", "fused"};
    for (int a = 0; a < 2; a++) {
        run_output got, want;
        harness_run(shard, adapters[a], 0, 0, (sl_position){0, 0}, 0, &got);
        harness_run(whole, "reference", 0, 0, (sl_position){0, 0}, 0, &want);
        cr_assert_eq(got.rows, want.rows);
        cr_expect(memcmp(got.ids, want.ids, (size_t)got.rows * sizeof *got.ids) == 0, "%s: other ids", adapters[a]);
        cr_expect(got.size[0] == want.size[0] && memcmp(got.bytes[0], want.bytes[0], got.size[0]) == 0,
                  "%s: the shard's epoch 0 differs from the whole fixture's", adapters[a]);
        harness_release(&got);
        harness_release(&want);
    }

    sl_batch *batch = NULL;
    cr_assert_eq(sl_batch_create(sl_pipeline_output_schema(shard->pipeline), 64, &batch, &err), SL_OK, "%s", err.msg);
    sl_status st = sl_pipeline_produce(shard->pipeline, sl_kernels_reference(), (sl_position){1, 0}, batch, &err);
    cr_expect_neq(st, SL_OK, "epoch 1 was read though the run said it reads only epoch 0");
    cr_expect(strstr(err.msg, "'x'") && strstr(err.msg, "never generated"), "%s", err.msg);
    sl_batch_free(batch);
    sl_scenario_instance_free(shard);
    sl_scenario_instance_free(whole);
    sl_comm_free(mesh);
    sl_comm_free(world);
}

/* --- real processes ------------------------------------------------------------------ */

Test(dist1_mpi, ranks_are_processes_and_shards_partition_the_epoch_for_k_1_2_4, .timeout = 600)
{
    dist_require_mpi();
    sl_scenario_instance *alone = harness_build("DIST-1", "32x32");
    run_output whole;
    run_epoch(alone, &whole);
    static const int worlds[] = {1, 2, 4};
    for (size_t w = 0; w < sizeof worlds / sizeof worlds[0]; w++) {
        int world = worlds[w];
        cJSON *view = dist_driver_view(world, "DIST-1", "32x32");
        /* The interleaving of the ranks' shards is the one-process order,
         * whatever K: the global order does not depend on the rank count. */
        dist_expect_view(view, world, 1, &world, &whole);
        cJSON_Delete(view);
    }
    harness_release(&whole);
    sl_scenario_instance_free(alone);
}

static int count_files(const char *dir)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "no folder %s", dir);
    int n = 0;
    struct dirent *entry;
    while ((entry = readdir(d)))
        n += entry->d_name[0] != '.';
    closedir(d);
    return n;
}

Test(dist1_mpi, bench_under_mpirun_writes_one_record_with_every_rank, .timeout = 600)
{
    dist_require_mpi();
    char dir[64], records[96], path[160];
    dist_tempdir(dir, sizeof dir);
    const char *args[] = {dist_sluice(),   "bench",   "--scenarios",  "DIST-1,CV-1", "--adapters", "fused",
                          "--repetitions", "1",       "--warmup",     "1",           "--batches",  "3",
                          "--no-probes",   "--quiet", "--output-dir", dir,           NULL};
    char *log = NULL;
    int status = dist_mpirun(4, args, 300, &log);
    cr_assert_eq(status, 0, "mpirun -np 4 sluice bench exited with %d:\n%s", status, log);
    free(log);
    snprintf(records, sizeof records, "%s/ci", dir);
    /* Rank 0 alone wrote: one record and the summary; CV-1 is not
     * distributed and stays out of the job. */
    cr_expect_eq(count_files(records), 2);
    snprintf(path, sizeof path, "%s/DIST-1__32x32__fused.json", records);
    sl_record record;
    sl_err err = {0};
    cr_assert_eq(sl_record_read(path, &record, NULL, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(record.outcome, SL_RECORD_OK, "%s", record.reason);
    cr_expect_eq(metric(&record, "ranks"), 4);
    cr_expect_eq(metric(&record, "processes"), 4, "4 ranks must be 4 processes");
    cr_expect_eq(metric(&record, "mesh_data_ranks"), 4);
    for (int r = 0; r < 4; r++) {
        char name[32];
        snprintf(name, sizeof name, "rank_%d_p50_ns", r);
        cr_expect_gt(metric(&record, name), 0);
    }
    double slowest = metric(&record, "slowest_rank");
    cr_expect(slowest >= 0 && slowest < 4);
    /* The record's latencies are the slowest rank's own. */
    int64_t sum = 0;
    for (int64_t b = 0; b < record.measured_batches; b++)
        sum += record.latency_ns[b];
    cr_expect_eq(metric(&record, "slowest_rank_ns"), (double)sum);
    /* Each rank's 3 measured batches of 64 (its 500 rows make 7 full
     * batches and one of 52; warmup takes batch 0). */
    double job = 4 * 3 * 64 * 1e9 / (double)sum;
    cr_expect_float_eq(metric(&record, "job_elements_per_s"), job, job * 1e-12);
    sl_record_release(&record);
    remove(path);
    snprintf(path, sizeof path, "%s/summary.md", records);
    remove(path);
    rmdir(records);
    rmdir(dir);
}

/* The watchdog (docs/distributed.md). A rank stopped with SIGSTOP, as a
 * frozen node or a rank stuck in I/O stops, used to leave the others
 * waiting in MPI forever: a 15-second job still ran after 150 s, with no
 * message and no record. Now rank 0 names the silent rank once it has
 * waited SLUICE_DIST_TIMEOUT_S at a step, records the run as failed with
 * that reason, and ends the job. */
/* Removes what an aborted job left in dir: its records folder's files (a
 * record, the lock; no summary, since the job ended before one), the
 * folders. */
static void remove_job_folder(const char *dir)
{
    char path[160];
    snprintf(path, sizeof path, "%s/ci", dir);
    DIR *d = opendir(path);
    struct dirent *entry;
    while (d && (entry = readdir(d)) != NULL) {
        char file[512];
        snprintf(file, sizeof file, "%s/%s", path, entry->d_name);
        if (entry->d_name[0] != '.' || strcmp(entry->d_name, ".sluice.lock") == 0)
            remove(file);
    }
    if (d)
        closedir(d);
    rmdir(path);
    rmdir(dir);
}

static void run_with_a_stopped_rank(int stop_rank, const char *dir, char **log, double *after, int *status)
{
    const char *args[] = {
        dist_sluice(), "bench",    "--scenarios", "DIST-1",    "--adapters", "fused",       "--repetitions",
        "3",           "--warmup", "1",           "--batches", "20",         "--no-probes", "--output-dir",
        dir,           NULL};
    const char *env[] = {"SLUICE_DIST_TIMEOUT_S=3", NULL};
    /* "MPI job of" is rank 0's first line: MPI_Init is behind every rank,
     * so the stop lands in sluice's steps, which the watchdog watches. */
    dist_job job = {
        .ranks = 3, .args = args, .env = env, .timeout_s = 120, .stop_rank = stop_rank, .joined_marker = "MPI job of"};
    *status = dist_mpirun_job(&job, log, after);
    /* A job that runs past the limit is reported as such first: its stop
     * time is never taken, so the next check would blame the wrong cause. */
    cr_assert_neq(*status, -1, "the job did not end within 120 s (rank %d stopped or not):\n%s", stop_rank, *log);
    cr_assert_geq(*after, 0.0, "the job ended before rank %d could be stopped:\n%s", stop_rank, *log);
    cr_log_info("the job ended %.1f s after rank %d was stopped (SLUICE_DIST_TIMEOUT_S=3)", *after, stop_rank);
}

/* The run's record in the job's folder is failed, its reason holding each
 * of the phrases (the second may be NULL); the job's log in every message. */
static void expect_failed_record(const char *path, const char *log, const char *phrase, const char *also)
{
    sl_record record;
    sl_err err = {0};
    cr_assert_eq(sl_record_read(path, &record, NULL, &err), SL_OK, "no record of the run: %s\n%s", err.msg, log);
    cr_expect_eq(record.outcome, SL_RECORD_FAILED, "the run's record is %s:\n%s",
                 sl_record_outcome_name(record.outcome), log);
    cr_expect(strstr(record.reason, phrase) && (!also || strstr(record.reason, also)), "the record's reason: %s",
              record.reason);
    sl_record_release(&record);
}

Test(dist1_mpi, a_stopped_rank_is_named_and_its_run_recorded_as_failed, .timeout = 300)
{
    dist_require_mpi();
    char dir[64], path[160];
    dist_tempdir(dir, sizeof dir);
    char *log = NULL;
    double after = -1.0;
    int status = 0;
    run_with_a_stopped_rank(1, dir, &log, &after, &status);
    cr_expect_eq(status, 1, "exit status %d:\n%s", status, log);
    cr_expect(strstr(log, "watchdog: rank 1 of 3 did not check in at "), "rank 0 did not name rank 1:\n%s", log);
    snprintf(path, sizeof path, "%s/ci/DIST-1__32x32__fused.json", dir);
    expect_failed_record(path, log, "rank 1 of 3", "SLUICE_DIST_TIMEOUT_S=3");
    free(log);
    remove_job_folder(dir);
}

/* A rank stopped inside the gather of the reports, after the last check-in
 * (the driver stops itself there): rank 0's receives are from named ranks,
 * so it names the silent one as a check-in does, rather than "a rank"
 * (D26), and ends the job. */
Test(dist1_mpi, a_rank_stopped_in_the_gather_is_named, .timeout = 300)
{
    dist_require_mpi();
    char dir[64], out[128];
    dist_tempdir(dir, sizeof dir);
    snprintf(out, sizeof out, "%s/view.json", dir);
    const char *args[] = {dist_driver(), "DIST-1", "32x32", out, NULL};
    const char *env[] = {"SLUICE_DIST_TIMEOUT_S=3", "DIST_DRIVER_STOP_IN_GATHER=1", NULL};
    dist_job job = {.ranks = 3, .args = args, .env = env, .timeout_s = 120, .stop_rank = -1};
    char *log = NULL;
    int status = dist_mpirun_job(&job, &log, NULL);
    cr_assert_neq(status, -1, "the job did not end within 120 s with rank 1 stopped in the gather:\n%s", log);
    cr_expect_neq(status, 0, "exit status 0 with rank 1 stopped:\n%s", log);
    cr_expect(strstr(log, "watchdog: rank 1 (pid ") &&
                  strstr(log, " of 3 did not send its report's size in the gather"),
              "rank 0 did not name rank 1 in the gather:\n%s", log);
    free(log);
    unlink(out);
    rmdir(dir);
}

/* A rank SIGKILLed mid-run: the launcher ends the whole job at once, so no
 * rank can write anything; rank 0's stand-in record, written before the
 * run started, is what is left: the run is failed, saying the job ended
 * while it was in progress (D26). The kill lands once the stand-in exists,
 * in a run long enough (5 repetitions of 4000 batches) not to have ended. */
Test(dist1_mpi, a_killed_rank_leaves_the_run_recorded_as_failed, .timeout = 300)
{
    dist_require_mpi();
    char dir[64], path[160];
    dist_tempdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/ci/DIST-1__32x32__fused.json", dir);
    const char *args[] = {dist_sluice(), "bench",         "--scenarios", "DIST-1",       "--adapters",
                          "fused",       "--repetitions", "5",           "--warmup",     "1",
                          "--batches",   "4000",          "--no-probes", "--output-dir", dir,
                          NULL};
    dist_job job = {
        .ranks = 3, .args = args, .timeout_s = 120, .stop_rank = 1, .stop_when_file = path, .stop_signal = SIGKILL};
    char *log = NULL;
    double after = -1.0;
    int status = dist_mpirun_job(&job, &log, &after);
    cr_assert_neq(status, -1, "the job did not end within 120 s of rank 1's kill:\n%s", log);
    cr_assert_geq(after, 0.0, "the job ended before rank 1 could be killed:\n%s", log);
    cr_expect_neq(status, 0, "exit status 0 with rank 1 killed:\n%s", log);
    expect_failed_record(path, log, "the job ended while this run was in progress", NULL);
    free(log);
    remove_job_folder(dir);
}

/* Rank 0 stopped: the others cannot be told who is silent by it, so each
 * waits twice the limit for rank 0's release, then says rank 0 is the one
 * and ends the job; the ranks that waited record the run as failed in
 * rank 0's place, since rank 0, which writes every other record, cannot. */
Test(dist1_mpi, a_stopped_rank_0_is_named_by_the_others_and_its_run_recorded_as_failed, .timeout = 300)
{
    dist_require_mpi();
    char dir[64], path[160];
    dist_tempdir(dir, sizeof dir);
    char *log = NULL;
    double after = -1.0;
    int status = 0;
    run_with_a_stopped_rank(0, dir, &log, &after, &status);
    cr_expect_neq(status, 0, "exit status 0:\n%s", log);
    cr_expect(strstr(log, "rank 0 is stopped, frozen or stuck"), "no rank named rank 0:\n%s", log);
    snprintf(path, sizeof path, "%s/ci/DIST-1__32x32__fused.json", dir);
    expect_failed_record(path, log, "rank 0 is stopped", "SLUICE_DIST_TIMEOUT_S");
    free(log);
    remove_job_folder(dir);
}

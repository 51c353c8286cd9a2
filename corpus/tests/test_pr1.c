/* PR-1, checkpoint save/restore: the standard checks; a run stopped after k
 * batches (k = 0, 1, 7, the last of epoch 0, the first of epoch 1, and three
 * into epoch 1) and resumed from its checkpoint in a fresh pipeline, in this
 * process and in a fresh one, continues exactly as the uninterrupted run;
 * truncated, bit-flipped and foreign checkpoints are refused with a message
 * that says what is wrong; the record carries the checkpoint's size and
 * its save and restore times. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "harness.h"

SL_CORPUS_STANDARD_TESTS(pr1, "PR-1", "32x32")

/* Batches compared after each resume. */
enum { CONTINUATION = 6 };

static char tmpdir[256];

static void make_tmpdir(void)
{
    snprintf(tmpdir, sizeof tmpdir, "%s/sluice-pr1-test-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    cr_assert_not_null(mkdtemp(tmpdir));
}

static void remove_tmpdir(void)
{
    char command[512];
    snprintf(command, sizeof command, "rm -rf '%s'", tmpdir);
    cr_expect_eq(system(command), 0);
}

/* Runs k batches from the start through `iter` and saves the iterator's own
 * position, the way a training job checkpoints its loader. */
static sl_position stop_after(const sl_scenario_instance *instance, int64_t k, const char *path)
{
    sl_iter_options options = {.kernels = sl_test_kernels(), .workers = 0, .prefetch_depth = 0, .start = {0, 0}};
    sl_iter *it;
    sl_err err = {0};
    cr_assert_eq(sl_iter_create(instance->pipeline, &options, &it, &err), SL_OK, "%s", err.msg);
    for (int64_t i = 0; i < k; i++) {
        sl_batch *b;
        cr_assert_eq(sl_iter_next(it, &b, &err), SL_OK, "%s", err.msg);
        sl_batch_free(b);
    }
    sl_position at = sl_iter_position(it);
    cr_assert_eq(sl_checkpoint_save(instance->pipeline, at, path, &err), SL_OK, "%s", err.msg);
    sl_iter_free(it);
    return at;
}

/* Loads the checkpoint into a freshly built instance and runs the
 * continuation from where it says, with prefetch workers this time. */
static void resume(const char *path, int workers, run_output *out)
{
    sl_scenario_instance *fresh = harness_build("PR-1", "32x32");
    sl_position at;
    sl_err err = {0};
    cr_assert_eq(sl_checkpoint_load(fresh->pipeline, path, &at, &err), SL_OK, "%s", err.msg);
    harness_run(fresh, "iter", workers, 0, at, CONTINUATION, out);
    sl_scenario_instance_free(fresh);
}

static void expect_continuation(const sl_scenario_instance *instance, const run_output *whole, int64_t k,
                                const run_output *resumed)
{
    /* Every batch of the uninterrupted run holds batch_size rows except an
     * epoch's partial last one, so count rows batch by batch. */
    int64_t per_epoch = sl_pipeline_batches_per_epoch(instance->pipeline);
    int64_t batch_size = sl_pipeline_get_spec(instance->pipeline)->batch_size;
    int64_t rows_per_epoch = sl_source_rows(instance->source);
    int64_t rows_before = 0;
    for (int64_t b = 0; b < k; b++) {
        int64_t left = rows_per_epoch - (b % per_epoch) * batch_size;
        rows_before += left < batch_size ? left : batch_size;
    }
    cr_assert_leq(rows_before + resumed->rows, whole->rows);
    cr_assert(memcmp(resumed->ids, whole->ids + rows_before, (size_t)resumed->rows * sizeof *resumed->ids) == 0,
              "k = %lld: the resumed run's elements differ", (long long)k);
    for (int f = 0; f < resumed->nfields; f++)
        cr_assert(memcmp(resumed->bytes[f], whole->bytes[f] + (size_t)rows_before * whole->row_bytes[f],
                         resumed->size[f]) == 0,
                  "k = %lld: field %d of the resumed run differs from the uninterrupted run", (long long)k, f);
}

TestSuite(pr1_resume, .init = make_tmpdir, .fini = remove_tmpdir);

Test(pr1_resume, a_resumed_run_continues_bit_identically_for_every_k)
{
    sl_scenario_instance *instance = harness_build("PR-1", "32x32");
    int64_t per_epoch = sl_pipeline_batches_per_epoch(instance->pipeline);
    cr_assert_gt(per_epoch, 8);
    run_output whole;
    harness_run(instance, "iter", 0, 0, (sl_position){0, 0}, per_epoch + 3 + CONTINUATION, &whole);
    const int64_t stops[] = {0, 1, 7, per_epoch - 1, per_epoch, per_epoch + 3};
    for (size_t i = 0; i < sizeof stops / sizeof stops[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/k%lld.json", tmpdir, (long long)stops[i]);
        sl_position at = stop_after(instance, stops[i], path);
        cr_assert_eq(at.epoch * per_epoch + at.batch, stops[i], "k = %lld stopped at epoch %lld batch %lld",
                     (long long)stops[i], (long long)at.epoch, (long long)at.batch);
        run_output resumed;
        resume(path, i % 2 ? 2 : 0, &resumed);
        expect_continuation(instance, &whole, stops[i], &resumed);
        harness_release(&resumed);
    }
    harness_release(&whole);
    sl_scenario_instance_free(instance);
}

/* The half of the fresh-process test that runs in the new process: it is
 * started by the test below with the checkpoint and an output path in its
 * environment, and skips itself in an ordinary run. */
Test(pr1_resume, child_of_the_fresh_process_test)
{
    const char *checkpoint = getenv("SLUICE_PR1_CHECKPOINT");
    const char *digest_path = getenv("SLUICE_PR1_DIGEST_OUT");
    if (!checkpoint || !digest_path)
        cr_skip_test("runs only as the fresh process of pr1_resume/a_fresh_process_resumes_bit_identically");
    run_output resumed;
    resume(checkpoint, 2, &resumed);
    FILE *f = fopen(digest_path, "w");
    cr_assert_not_null(f);
    fprintf(f, "%016llx %lld\n", (unsigned long long)resumed.digest, (long long)resumed.rows);
    fclose(f);
    harness_release(&resumed);
}

Test(pr1_resume, a_fresh_process_resumes_bit_identically)
{
    sl_scenario_instance *instance = harness_build("PR-1", "32x32");
    int64_t per_epoch = sl_pipeline_batches_per_epoch(instance->pipeline);
    int64_t k = per_epoch + 2;
    char checkpoint[512], digest_path[512];
    snprintf(checkpoint, sizeof checkpoint, "%s/fresh.json", tmpdir);
    snprintf(digest_path, sizeof digest_path, "%s/digest.txt", tmpdir);
    sl_position at = stop_after(instance, k, checkpoint);
    run_output expected;
    harness_run(instance, "reference", 0, 0, at, CONTINUATION, &expected);

    pid_t child = fork();
    cr_assert_geq(child, 0);
    if (child == 0) {
        setenv("SLUICE_PR1_CHECKPOINT", checkpoint, 1);
        setenv("SLUICE_PR1_DIGEST_OUT", digest_path, 1);
        /* Criterion's sandbox marks its workers with BXFI_MAP; a program
         * started with it would take itself for one and abort. */
        unsetenv("BXFI_MAP");
        /* Its own report must not mix into this test's TAP stream. */
        char log[600];
        snprintf(log, sizeof log, "%s/child.log", tmpdir);
        if (!freopen(log, "w", stdout) || dup2(fileno(stdout), STDERR_FILENO) < 0)
            _exit(126);
        /* A new image of this test program: nothing of this process's
         * pipeline survives into it. */
        execl("/proc/self/exe", "test_pr1", "--filter=pr1_resume/child_of_the_fresh_process_test", "--jobs=1",
              (char *)NULL);
        _exit(127);
    }
    int status = 0;
    cr_assert_eq(waitpid(child, &status, 0), child);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the fresh process failed (status %#x); see %s/child.log",
              status, tmpdir);
    FILE *f = fopen(digest_path, "r");
    cr_assert_not_null(f, "the fresh process wrote no digest");
    unsigned long long digest = 0;
    long long rows = 0;
    cr_assert_eq(fscanf(f, "%llx %lld", &digest, &rows), 2);
    fclose(f);
    cr_expect_eq(rows, expected.rows);
    cr_expect_eq(digest, expected.digest, "the fresh process resumed to %016llx, the original run has %016llx", digest,
                 (unsigned long long)expected.digest);
    harness_release(&expected);
    sl_scenario_instance_free(instance);
}

/* Writes a good checkpoint, damages it with `damage`, and expects the load
 * to fail with a message holding the path and `needle`. */
static void expect_refused(const char *name, void (*damage)(const char *path), const char *needle)
{
    sl_scenario_instance *instance = harness_build("PR-1", "32x32");
    char path[512];
    snprintf(path, sizeof path, "%s/%s.json", tmpdir, name);
    stop_after(instance, 5, path);
    damage(path);
    sl_position at;
    sl_err err = {0};
    sl_status st = sl_checkpoint_load(instance->pipeline, path, &at, &err);
    cr_expect_neq(st, SL_OK, "a %s checkpoint was accepted", name);
    cr_expect(strstr(err.msg, path) != NULL, "the message does not name the file: %s", err.msg);
    cr_expect(strstr(err.msg, needle) != NULL, "the message does not say '%s': %s", needle, err.msg);
    sl_scenario_instance_free(instance);
}

static void truncate_to_half(const char *path)
{
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(truncate(path, st.st_size / 2), 0);
}

/* Flips one bit of the batch number's digit, which keeps the JSON valid
 * and the number plausible: only the checksum can tell. */
static void flip_a_bit_of_the_batch(const char *path)
{
    FILE *f = fopen(path, "r+");
    cr_assert_not_null(f);
    char text[4096];
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    char *batch = strstr(text, "\"batch\":");
    cr_assert_not_null(batch);
    char *digit = batch + strlen("\"batch\":");
    while (*digit == ' ' || *digit == '\t')
        digit++;
    cr_assert(*digit == '5', "expected batch 5, found '%c'", *digit);
    *digit ^= 0x02; /* '5' becomes '7' */
    rewind(f);
    fwrite(text, 1, n, f);
    fclose(f);
}

Test(pr1_resume, a_truncated_checkpoint_is_refused)
{
    expect_refused("truncated", truncate_to_half, "JSON");
}

Test(pr1_resume, a_bit_flipped_checkpoint_is_refused)
{
    expect_refused("flipped", flip_a_bit_of_the_batch, "checksum");
}

Test(pr1_resume, a_foreign_checkpoint_is_refused)
{
    /* Written by PR-1 with seed 42, loaded into PR-1 with seed 7: the same
     * shapes, another pipeline. */
    sl_scenario_instance *writer = harness_build("PR-1", "32x32");
    char path[512];
    snprintf(path, sizeof path, "%s/foreign.json", tmpdir);
    stop_after(writer, 3, path);
    sl_scenario_instance_free(writer);
    sl_build_options options;
    sl_build_options_init(&options, SL_PROFILE_CI, 7);
    sl_scenario_instance *reader = harness_build_with("PR-1", "32x32", &options);
    sl_position at;
    sl_err err = {0};
    cr_expect_eq(sl_checkpoint_load(reader->pipeline, path, &at, &err), SL_ESTATE);
    cr_expect(strstr(err.msg, path) && strstr(err.msg, "different pipeline"), "%s", err.msg);
    sl_scenario_instance_free(reader);
}

Test(pr1_resume, the_record_carries_checkpoint_size_and_times)
{
    sl_scenario_instance *instance = harness_build("PR-1", "32x32");
    sl_bench_options options;
    sl_bench_options_init(&options, SL_PROFILE_CI, 42);
    options.repetitions = 1;
    options.warmup_batches = 1;
    options.measured_batches = 2;
    sl_record record;
    sl_err err = {0};
    cr_assert_eq(sl_bench_run(instance, sl_adapter_find("fused"), &options, &record, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(record.outcome, SL_RECORD_OK, "%s", record.reason);
    const char *names[] = {"checkpoint_bytes", "checkpoint_save_ns", "checkpoint_restore_ns",
                           "restore_to_first_batch_ns"};
    double values[4];
    for (int i = 0; i < 4; i++)
        values[i] = harness_metric(&record, names[i])->value;
    /* A checkpoint is a few hundred bytes of JSON (format, version, the
     * fingerprint, the position and a checksum), not a copy of any data. */
    cr_expect(values[0] > 100 && values[0] < 1024, "checkpoint_bytes = %g", values[0]);
    for (int i = 1; i < 4; i++)
        cr_expect_gt(values[i], 0, "%s = %g", names[i], values[i]);
    /* The first batch after a restore includes the restore itself. */
    cr_expect_geq(values[3], values[2]);
    sl_record_release(&record);
    sl_scenario_instance_free(instance);
}

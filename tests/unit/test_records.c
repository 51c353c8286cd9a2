/* Timing records, the environment fingerprint and the file helpers every
 * writer of sluice files shares. Expected values are written out by hand from
 * the sample below, never taken from the code under test. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sluice/core/stats.h"
#include "sluice/records/record.h"

#include "support.h"

/* A scratch directory per test, removed afterwards. */
static char dir[64];

static void make_scratch(void)
{
    test_tmpdir_create(dir, sizeof dir, "records");
}

static void remove_scratch(void)
{
    chmod(dir, 0755);
    test_tmpdir_remove(dir);
}

TestSuite(records, .init = make_scratch, .fini = remove_scratch);
TestSuite(fileio, .init = make_scratch, .fini = remove_scratch);

static void scratch_path(char *buf, size_t size, const char *name)
{
    snprintf(buf, size, "%s/%s", dir, name);
}

static int count_entries(const char *path)
{
    DIR *d = opendir(path);
    cr_assert_not_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

static char *slurp(const char *path)
{
    char *data = NULL;
    size_t size = 0;
    sl_err err = {0};
    cr_assert_eq(sl_read_file(path, &data, &size, &err), SL_OK, "%s", err.msg);
    return data;
}

/* Latencies summing to 10 ms: 320 elements over 0.01 s is 32000 elements/s. */
static int64_t sample_latency[5] = {1000000, 2000000, 1500000, 2500000, 3000000};
/* Three repetitions of five batches; the second is the kept one. */
static int64_t sample_all[15] = {1100000, 2100000, 1600000, 2600000, 3100000, 1000000, 2000000, 1500000,
                                 2500000, 3000000, 900000,  1900000, 1400000, 2400000, 2900000};
#define SAMPLE_SEED      0xFEDCBA9876543210ULL
#define SAMPLE_SEED_TEXT "18364758544493064720"

static void sample_record(sl_record *r)
{
    memset(r, 0, sizeof *r);
    strcpy(r->scenario, "CV-1");
    strcpy(r->variant, "32x32");
    strcpy(r->adapter, "iter");
    strcpy(r->profile, "ci");
    strcpy(r->backend_requested, "cuda");
    strcpy(r->backend_active, "cpu");
    r->outcome = SL_RECORD_OK;
    strcpy(r->transforms, "normalize,random_crop,flip");
    strcpy(r->kernels, "auto");
    strcpy(r->kernel_choice, "permute_strided=cpu-avx512,normalize_u8=cpu-avx2");
    strcpy(r->roofline_kernels, "cpu-avx2");
    r->seed = SAMPLE_SEED;
    r->batch_size = 64;
    r->warmup_batches = 3;
    r->measured_batches = 5;
    r->repetitions = 3;
    r->repetition_kept = 1;
    r->repetition_elements_per_s[0] = 1000.5;
    r->repetition_elements_per_s[1] = 2000.25;
    r->repetition_elements_per_s[2] = 3000.125;
    r->latency_ns = sample_latency;
    r->samples_ns = sample_all;
    r->elements = 320;
    r->bytes = 320 * 3072 * 4;
    r->first_batch_ns = 123456;
    r->peak_rss_bytes = 987654321;
    strcpy(r->peak_rss_method, "vmhwm-reset");
    r->output_digest = 0x0123456789abcdefULL;
    sl_record_add_metric(r, "cost_per_stage_ns", 12.5, "ns");
    sl_record_add_scenario_metric(r, "speedup", 1.75, "x");
}

static void sample_environment(sl_environment *env)
{
    memset(env, 0, sizeof *env);
    strcpy(env->cpu_model, "Example CPU @ 3.00GHz");
    env->cpu_cores = 12;
    strcpy(env->compiler, "gcc 12.2.0");
    strcpy(env->compile_flags, "buildtype=release -ffp-contract=off");
    strcpy(env->library_versions, "sluice 0.1.0; cJSON 1.7.15; xxHash 0.8.1; libc 2.36");
    strcpy(env->git_commit, "0123456789ab");
    strcpy(env->kernel, "Linux 6.1.0 x86_64");
    strcpy(env->time_utc, "2024-05-06T07:08:09Z");
}

static void write_sample(const char *path)
{
    sl_record r;
    sl_environment env;
    sample_record(&r);
    sample_environment(&env);
    sl_err err = {0};
    cr_assert_eq(sl_record_write(&r, &env, path, &err), SL_OK, "%s", err.msg);
}

/* Expects sl_record_read to refuse path with a message naming the file and,
 * when given, the field. */
static void expect_refused(const char *path, const char *field)
{
    sl_record r;
    sl_environment env;
    sl_err err = {0};
    sl_status status = sl_record_read(path, &r, &env, &err);
    cr_assert_neq(status, SL_OK, "a damaged record was accepted (field %s)", field ? field : "-");
    cr_assert_null(r.latency_ns, "a refused read must not leave an allocation behind");
    cr_assert_not_null(strstr(err.msg, path), "message does not name the file: %s", err.msg);
    if (field) {
        char quoted[96];
        snprintf(quoted, sizeof quoted, "'%s'", field);
        cr_assert_not_null(strstr(err.msg, quoted), "message does not name %s: %s", quoted, err.msg);
    }
}

/* Writes the sample, lets edit change its JSON, and writes it back. */
static void write_edited(const char *path, void (*edit)(cJSON *root, const void *arg), const void *arg)
{
    write_sample(path);
    char *text = slurp(path);
    cJSON *root = cJSON_Parse(text);
    free(text);
    cr_assert_not_null(root);
    edit(root, arg);
    text = cJSON_Print(root);
    cJSON_Delete(root);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
    free(text);
}

/* Derived figures and metrics. */

Test(records, outcome_names)
{
    cr_assert_str_eq(sl_record_outcome_name(SL_RECORD_OK), "ok");
    cr_assert_str_eq(sl_record_outcome_name(SL_RECORD_EXCLUDED), "excluded");
    cr_assert_str_eq(sl_record_outcome_name(SL_RECORD_SKIPPED), "skipped");
    cr_assert_str_eq(sl_record_outcome_name(SL_RECORD_FAILED), "failed");
}

static bool number_is(const cJSON *root, const char *key, double value)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(root, key);
    return cJSON_IsNumber(item) && fabs(item->valuedouble - value) <= 1e-9 * fabs(value);
}

Test(records, throughput_is_at_the_median_of_every_repetition)
{
    /* Three repetitions of five batches, 64 elements each, the third with a
     * 20 ms stall. Sorted, the 15 batches are 1.0 1.1 1.5 1.6 1.95 1.95
     * 1.95 1.95 2.0 2.1 2.5 2.6 3.0 3.1 20 ms: the median is x(8) = 1.95
     * ms, so 64 / 1.95 ms = 32820.51/s; the interval [x(4), x(12)] = [1.6,
     * 2.6] ms gives 24615.38 to 40000/s. The mean, 48.3 ms / 15 = 3.22 ms,
     * gives 19875.78/s: 39% below, so the row is noisy. Bytes per second
     * follow the median the same way. */
    static int64_t kept[5] = {1000000, 2000000, 1500000, 2500000, 3000000};
    static int64_t all[15] = {1100000, 2100000, 1600000, 2600000, 3100000, 1000000, 2000000, 1500000,
                              2500000, 3000000, 1950000, 1950000, 1950000, 1950000, 20000000};
    sl_record r;
    sample_record(&r);
    r.latency_ns = kept;
    r.samples_ns = all;
    cr_assert_float_eq(sl_record_elements_per_s(&r), 64 / 1.95e-3, 1e-6);
    cr_assert_float_eq(sl_record_bytes_per_s(&r), 64.0 * 3072 * 4 / 1.95e-3, 1e-3);
    sl_throughput t;
    cr_assert(sl_record_throughput(&r, &t));
    cr_expect_float_eq(t.rate_lo, 64 / 2.6e-3, 1e-6);
    cr_expect_float_eq(t.rate_hi, 64 / 1.6e-3, 1e-6);
    cr_expect_float_eq(t.mean_rate, 64 / 3.22e-3, 1e-6);
    cr_expect(t.noisy);

    /* The JSON carries the same figures. */
    sl_environment env;
    sample_environment(&env);
    char *text = sl_record_to_json(&r, &env);
    cJSON *root = cJSON_Parse(text);
    free(text);
    cr_assert(number_is(root, "elements_per_s", 64 / 1.95e-3));
    cr_assert(number_is(root, "elements_per_s_ci_low", 64 / 2.6e-3));
    cr_assert(number_is(root, "elements_per_s_ci_high", 64 / 1.6e-3));
    cr_assert(number_is(root, "mean_elements_per_s", 64 / 3.22e-3));
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "noisy")));
    cr_assert_not_null(strstr(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(root, "noisy_reason")), "mean"));
    cJSON_Delete(root);

    /* Without samples, the kept repetition alone: its median is 2 ms. */
    r.samples_ns = NULL;
    cr_assert_float_eq(sl_record_elements_per_s(&r), 32000.0, 1e-6);
    r.latency_ns = NULL;
    cr_assert_eq(sl_record_elements_per_s(&r), 0.0);
    cr_assert_eq(sl_record_bytes_per_s(&r), 0.0);
    r.latency_ns = kept;
    r.measured_batches = 0;
    cr_assert_eq(sl_record_elements_per_s(&r), 0.0);
}

Test(records, metrics_replace_by_name_and_stop_at_the_table_size)
{
    sl_record r;
    memset(&r, 0, sizeof r);
    sl_record_add_metric(&r, "speedup", 1.5, "x");
    sl_record_add_metric(&r, "cache_bytes", 4096, "B");
    sl_record_add_metric(&r, "speedup", 2.5, "x");
    cr_assert_eq(r.nmetrics, 2);
    cr_assert_str_eq(r.metrics[0].name, "speedup");
    cr_assert_eq(r.metrics[0].value, 2.5);
    cr_assert_str_eq(r.metrics[1].unit, "B");
    for (int i = 0; i < SL_RECORD_MAX_METRICS + 4; i++) {
        char name[16];
        snprintf(name, sizeof name, "m%d", i);
        sl_record_add_metric(&r, name, i, "");
    }
    cr_assert_eq(r.nmetrics, SL_RECORD_MAX_METRICS);
}

/* Writing and reading back. */

Test(records, round_trip_keeps_every_field)
{
    char path[128];
    scratch_path(path, sizeof path, "r.json");
    write_sample(path);
    sl_record want, got;
    sl_environment want_env, got_env;
    sample_record(&want);
    sample_environment(&want_env);
    sl_err err = {0};
    cr_assert_eq(sl_record_read(path, &got, &got_env, &err), SL_OK, "%s", err.msg);

    cr_assert_str_eq(got.scenario, "CV-1");
    cr_assert_str_eq(got.variant, "32x32");
    cr_assert_str_eq(got.adapter, "iter");
    cr_assert_str_eq(got.profile, "ci");
    cr_assert_str_eq(got.backend_requested, "cuda");
    cr_assert_str_eq(got.backend_active, "cpu");
    cr_assert_eq(got.outcome, SL_RECORD_OK);
    cr_assert_str_eq(got.reason, "");
    cr_assert_str_eq(got.transforms, "normalize,random_crop,flip");
    cr_assert_str_eq(got.kernels, "auto");
    cr_assert_str_eq(got.kernel_choice, "permute_strided=cpu-avx512,normalize_u8=cpu-avx2");
    cr_assert_str_eq(got.roofline_kernels, "cpu-avx2");
    cr_assert_eq(got.seed, SAMPLE_SEED);
    cr_assert_eq(got.batch_size, 64);
    cr_assert_eq(got.warmup_batches, 3);
    cr_assert_eq(got.measured_batches, 5);
    cr_assert_eq(got.repetitions, 3);
    cr_assert_eq(got.repetition_kept, 1);
    cr_assert_arr_eq(got.repetition_elements_per_s, want.repetition_elements_per_s, 3 * sizeof(double));
    cr_assert_not_null(got.latency_ns);
    cr_assert_arr_eq(got.latency_ns, sample_latency, sizeof sample_latency);
    cr_assert_not_null(got.samples_ns);
    cr_assert_arr_eq(got.samples_ns, sample_all, sizeof sample_all);
    cr_assert_eq(got.elements, 320);
    cr_assert_eq(got.bytes, 320 * 3072 * 4);
    cr_assert_eq(got.first_batch_ns, 123456);
    cr_assert_eq(got.peak_rss_bytes, 987654321);
    cr_assert_str_eq(got.peak_rss_method, "vmhwm-reset");
    cr_assert_eq(got.output_digest, 0x0123456789abcdefULL);
    cr_assert_eq(got.nmetrics, 2);
    cr_assert_str_eq(got.metrics[0].name, "cost_per_stage_ns");
    cr_assert_eq(got.metrics[0].value, 12.5);
    cr_assert_str_eq(got.metrics[0].unit, "ns");
    cr_assert_str_eq(got.metrics[1].name, "speedup");
    cr_assert_eq(got.metrics[1].value, 1.75);
    cr_assert_str_eq(got.metrics[1].unit, "x");
    cr_assert_eq(got.metrics[0].scope, SL_METRIC_BENCH);
    cr_assert_eq(got.metrics[1].scope, SL_METRIC_SCENARIO);

    cr_assert_str_eq(got_env.cpu_model, want_env.cpu_model);
    cr_assert_eq(got_env.cpu_cores, 12);
    cr_assert_str_eq(got_env.compiler, want_env.compiler);
    cr_assert_str_eq(got_env.compile_flags, want_env.compile_flags);
    cr_assert_str_eq(got_env.library_versions, want_env.library_versions);
    cr_assert_str_eq(got_env.git_commit, want_env.git_commit);
    cr_assert_str_eq(got_env.kernel, want_env.kernel);
    cr_assert_str_eq(got_env.time_utc, want_env.time_utc);
    sl_record_release(&got);
    cr_assert_null(got.latency_ns);
}

/* Records from before the per-kernel choice have neither it nor the
 * roofline's table, and still read. */
Test(records, a_record_without_the_kernel_choice_reads)
{
    char path[128];
    scratch_path(path, sizeof path, "r.json");
    sl_record r;
    sl_record sample;
    sample_record(&sample);
    sample.kernel_choice[0] = '\0';
    sample.roofline_kernels[0] = '\0';
    sl_environment env;
    sample_environment(&env);
    sl_err err = {0};
    cr_assert_eq(sl_record_write(&sample, &env, path, &err), SL_OK, "%s", err.msg);
    char *text = slurp(path);
    cr_expect_null(strstr(text, "kernel_choice"), "an empty choice is left out of the JSON");
    free(text);
    cr_assert_eq(sl_record_read(path, &r, &env, &err), SL_OK, "%s", err.msg);
    cr_expect_str_empty(r.kernel_choice);
    cr_expect_str_empty(r.roofline_kernels);
    sl_record_release(&r);
}

Test(records, excluded_record_without_latencies_round_trips)
{
    char path[128];
    scratch_path(path, sizeof path, "excluded.json");
    sl_record r, got;
    sl_environment env;
    sample_record(&r);
    sample_environment(&env);
    r.outcome = SL_RECORD_EXCLUDED;
    strcpy(r.reason, "lacks transform rot90");
    r.latency_ns = NULL;
    r.repetitions = 0;
    r.repetition_kept = 0;
    sl_err err = {0};
    cr_assert_eq(sl_record_write(&r, &env, path, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(sl_record_read(path, &got, NULL, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(got.outcome, SL_RECORD_EXCLUDED);
    cr_assert_str_eq(got.reason, "lacks transform rot90");
    cr_assert_null(got.latency_ns);
    cr_assert_eq(got.repetitions, 0);
    sl_record_release(&got);
}

Test(records, an_ok_record_without_latencies_is_not_written)
{
    char path[128];
    scratch_path(path, sizeof path, "bad.json");
    sl_record r;
    sample_record(&r);
    r.latency_ns = NULL;
    sl_environment env;
    sl_environment_collect(&env);
    sl_err err = {0};
    cr_assert_eq(sl_record_write(&r, &env, path, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.msg, path), "%s", err.msg);
    cr_assert_not_null(strstr(err.msg, "latencies"), "%s", err.msg);
    cr_assert_eq(access(path, F_OK), -1, "nothing may be written");
}

Test(records, json_holds_every_documented_field)
{
    sl_record r;
    sl_environment env;
    sample_record(&r);
    sample_environment(&env);
    char *text = sl_record_to_json(&r, &env);
    cr_assert_not_null(text);
    cJSON *root = cJSON_Parse(text);
    free(text);
    cr_assert_not_null(root);

    /* The list of docs/records.md, kept here by hand on purpose. */
    static const char *const top[] = {
        "schema_version",
        "scenario",
        "variant",
        "adapter",
        "profile",
        "backend",
        "outcome",
        "reason",
        "transforms",
        "kernels",
        "seed",
        "batch_size",
        "warmup_batches",
        "measured_batches",
        "repetitions",
        "repetition_kept",
        "repetition_elements_per_s",
        "latency_ns",
        "elements",
        "bytes",
        "elements_per_s",
        "bytes_per_s",
        "p50_ns",
        "p95_ns",
        "p99_ns",
        "mean_ns",
        "min_ns",
        "max_ns",
        "first_batch_ns",
        "peak_rss_bytes",
        "peak_rss_method",
        "output_digest",
        "metrics",
        "environment",
        "equivalence",
        "samples_ns",
        "median_all_ns",
        "median_ci_low_ns",
        "median_ci_high_ns",
        "noisy",
        "workers",
        "threads",
        "adapter_memory_bytes",
        "elements_per_s_ci_low",
        "elements_per_s_ci_high",
        "mean_elements_per_s",
        "noisy_reason",
        "rounds",
        "wall_ns",
        "kernel_choice",
        "roofline_kernels",
    };
    for (size_t i = 0; i < sizeof top / sizeof top[0]; i++)
        cr_expect(cJSON_HasObjectItem(root, top[i]), "missing %s", top[i]);
    const cJSON *choice = cJSON_GetObjectItemCaseSensitive(root, "kernel_choice");
    cr_assert_eq(cJSON_GetArraySize(choice), 2);
    cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(choice, "normalize_u8")), "cpu-avx2");
    cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(choice, "permute_strided")), "cpu-avx512");
    static const char *const environment[] = {
        "cpu_model", "cpu_cores", "compiler",   "compile_flags", "library_versions", "git_commit",
        "kernel",    "time_utc",  "load_start", "load_end",      "steal_fraction",   "cpu_wait_fraction",
    };
    const cJSON *envj = cJSON_GetObjectItemCaseSensitive(root, "environment");
    for (size_t i = 0; i < sizeof environment / sizeof environment[0]; i++)
        cr_expect(cJSON_HasObjectItem(envj, environment[i]), "missing environment.%s", environment[i]);
    const cJSON *backend = cJSON_GetObjectItemCaseSensitive(root, "backend");
    cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(backend, "requested")), "cuda");
    cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(backend, "active")), "cpu");

    cr_assert(number_is(root, "schema_version", SL_RECORD_SCHEMA_VERSION));
    cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(root, "seed")), SAMPLE_SEED_TEXT);
    cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(root, "output_digest")), "0123456789abcdef");
    cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(root, "outcome")), "ok");
    const cJSON *transforms = cJSON_GetObjectItemCaseSensitive(root, "transforms");
    cr_assert_eq(cJSON_GetArraySize(transforms), 3);
    cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetArrayItem(transforms, 0)), "normalize");
    cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetArrayItem(transforms, 1)), "random_crop");
    cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetArrayItem(transforms, 2)), "flip");
    const cJSON *latency = cJSON_GetObjectItemCaseSensitive(root, "latency_ns");
    cr_assert_eq(cJSON_GetArraySize(latency), 5);
    cr_assert_eq(cJSON_GetArrayItem(latency, 3)->valuedouble, 2500000.0);

    /* Sorted latencies 1, 1.5, 2, 2.5, 3 ms; h = 4q/100. */
    cr_assert(number_is(root, "elements_per_s", 32000.0));
    cr_assert(number_is(root, "bytes_per_s", 320.0 * 3072 * 4 / 0.01));
    cr_assert(number_is(root, "p50_ns", 2000000.0));
    cr_assert(number_is(root, "p95_ns", 2900000.0));
    cr_assert(number_is(root, "p99_ns", 2980000.0));
    cr_assert(number_is(root, "mean_ns", 2000000.0));
    cr_assert(number_is(root, "min_ns", 1000000.0));
    cr_assert(number_is(root, "max_ns", 3000000.0));
    const cJSON *metric = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(root, "metrics"), 1);
    cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(metric, "name")), "speedup");
    cr_assert(number_is(metric, "value", 1.75));
    cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(metric, "unit")), "x");
    cJSON_Delete(root);
}

/* Damaged records. */

Test(records, missing_file_is_named)
{
    char path[128];
    scratch_path(path, sizeof path, "absent.json");
    sl_record r;
    sl_err err = {0};
    cr_assert_eq(sl_record_read(path, &r, NULL, &err), SL_ENOTFOUND);
    cr_assert_not_null(strstr(err.msg, path), "%s", err.msg);
}

Test(records, truncated_file_is_refused)
{
    char path[128];
    scratch_path(path, sizeof path, "r.json");
    write_sample(path);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(truncate(path, st.st_size / 2), 0);
    expect_refused(path, NULL);
    sl_record r;
    sl_err err = {0};
    sl_record_read(path, &r, NULL, &err);
    cr_assert_not_null(strstr(err.msg, "truncated"), "%s", err.msg);
}

Test(records, malformed_json_is_refused)
{
    char path[128];
    scratch_path(path, sizeof path, "r.json");
    FILE *f = fopen(path, "w");
    fputs("{\"schema_version\": 1, \"scenario\": oops}", f);
    fclose(f);
    expect_refused(path, NULL);
    f = fopen(path, "w");
    fputs("[1, 2, 3]", f);
    fclose(f);
    expect_refused(path, NULL);
}

/* A metric's scope is "bench" or "scenario"; anything else is named. */
static void corrupt_metric_scope(cJSON *root, const void *arg)
{
    (void)arg;
    cJSON *metric = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(root, "metrics"), 1);
    cJSON_ReplaceItemInObjectCaseSensitive(metric, "scope", cJSON_CreateString("global"));
}

static void drop_metric_scopes(cJSON *root, const void *arg)
{
    (void)arg;
    cJSON *metric;
    cJSON_ArrayForEach(metric, cJSON_GetObjectItemCaseSensitive(root, "metrics"))
        cJSON_DeleteItemFromObjectCaseSensitive(metric, "scope");
}

/* A record of version 1 (before outcomes mismatch and unavailable and the
 * equivalence field) is refused with a message that says what to do. */
static void set_version_one(cJSON *root, const void *arg)
{
    (void)arg;
    cJSON_ReplaceItemInObjectCaseSensitive(root, "schema_version", cJSON_CreateNumber(1));
}

Test(records, wrong_schema_version_is_refused)
{
    char path[128];
    scratch_path(path, sizeof path, "r.json");
    write_edited(path, set_version_one, NULL);
    expect_refused(path, "schema_version");
    sl_record r;
    sl_err err = {0};
    sl_record_read(path, &r, NULL, &err);
    cr_assert_not_null(strstr(err.msg, "run `sluice bench` again"), "%s", err.msg);
}

/* "a.b" names member b of object a. */
static cJSON *parent_and_leaf(cJSON *root, const char *key, const char **leaf)
{
    const char *dot = strchr(key, '.');
    *leaf = dot ? dot + 1 : key;
    if (!dot)
        return root;
    char name[32];
    snprintf(name, sizeof name, "%.*s", (int)(dot - key), key);
    return cJSON_GetObjectItemCaseSensitive(root, name);
}

static void delete_key(cJSON *root, const void *arg)
{
    const char *leaf;
    cJSON *parent = parent_and_leaf(root, arg, &leaf);
    cr_assert(cJSON_HasObjectItem(parent, leaf), "the sample has no %s to delete", (const char *)arg);
    cJSON_DeleteItemFromObjectCaseSensitive(parent, leaf);
}

Test(records, each_missing_field_is_named)
{
    static const char *const keys[] = {
        "scenario",
        "variant",
        "adapter",
        "profile",
        "backend",
        "backend.active",
        "outcome",
        "reason",
        "transforms",
        "kernels",
        "seed",
        "batch_size",
        "warmup_batches",
        "measured_batches",
        "repetitions",
        "repetition_kept",
        "repetition_elements_per_s",
        "latency_ns",
        "elements",
        "bytes",
        "elements_per_s",
        "p99_ns",
        "first_batch_ns",
        "peak_rss_bytes",
        "peak_rss_method",
        "output_digest",
        "metrics",
        "environment",
        "environment.cpu_cores",
        "environment.kernel",
        "environment.time_utc",
        "equivalence",
        "samples_ns",
        "noisy",
        "median_ci_low_ns",
        "workers",
        "threads",
        "adapter_memory_bytes",
        "rounds",
        "wall_ns",
        "noisy_reason",
        "mean_elements_per_s",
        "environment.load_end",
        "environment.steal_fraction",
    };
    char path[128];
    scratch_path(path, sizeof path, "r.json");
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        write_edited(path, delete_key, keys[i]);
        expect_refused(path, keys[i]);
    }
}

struct replacement {
    const char *key;
    const char *json;
    const char *named; /* what the message must name */
};

static void replace_key(cJSON *root, const void *arg)
{
    const struct replacement *rep = arg;
    const char *leaf;
    cJSON *parent = parent_and_leaf(root, rep->key, &leaf);
    cJSON *value = cJSON_Parse(rep->json);
    cr_assert_not_null(value);
    cr_assert(cJSON_ReplaceItemInObjectCaseSensitive(parent, leaf, value), "no %s to replace", rep->key);
}

Test(records, each_wrong_type_or_value_is_named)
{
    static const struct replacement cases[] = {
        {"batch_size", "\"64\"", "batch_size"},
        {"seed", "42", "seed"},
        {"seed", "\"-1\"", "seed"},
        {"seed", "\"18446744073709551616\"", "seed"},
        {"scenario", "7", "scenario"},
        {"transforms", "\"normalize\"", "transforms"},
        {"transforms", "[\"normalize\", 3]", "transforms[1]"},
        {"output_digest", "\"0123456789ABCDEF\"", "output_digest"},
        {"output_digest", "\"12345\"", "output_digest"},
        {"outcome", "\"fine\"", "outcome"},
        {"measured_batches", "2.5", "measured_batches"},
        {"latency_ns", "[1000000, 2000000, \"x\", 2500000, 3000000]", "latency_ns[2]"},
        {"latency_ns", "[1000000, 2000000, 1500000, 2500000]", "latency_ns"},
        {"samples_ns", "[1000000, 2000000]", "samples_ns"},
        {"noisy", "\"no\"", "noisy"},
        {"repetition_kept", "3", "repetition_kept"},
        {"repetition_elements_per_s", "[1, 2]", "repetition_elements_per_s"},
        {"metrics", "[{\"name\": \"speedup\", \"value\": \"fast\", \"unit\": \"x\"}]", "metrics[0].value"},
        {"environment", "\"linux\"", "environment"},
        {"environment.cpu_cores", "\"12\"", "environment.cpu_cores"},
        {"backend.requested", "null", "backend.requested"},
        {"kernel_choice", "[\"cpu-avx2\"]", "kernel_choice"},
        {"kernel_choice", "{\"normalize_u8\": 2}", "kernel_choice.normalize_u8"},
        {"kernel_choice", "{\"normalize_u8\": \"cpu-avx2,cpu-avx512\"}", "kernel_choice.normalize_u8"},
        {"roofline_kernels", "3", "roofline_kernels"},
    };
    char path[128];
    scratch_path(path, sizeof path, "r.json");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_edited(path, replace_key, &cases[i]);
        expect_refused(path, cases[i].named);
    }
}

Test(records, metric_scope_must_be_bench_or_scenario)
{
    char path[128];
    scratch_path(path, sizeof path, "r.json");
    write_edited(path, corrupt_metric_scope, NULL);
    expect_refused(path, "metrics[1].scope");
}

Test(records, metrics_without_a_scope_are_bench_metrics)
{
    char path[128];
    scratch_path(path, sizeof path, "r.json");
    write_edited(path, drop_metric_scopes, NULL);
    sl_record got;
    sl_environment env;
    sl_err err = {0};
    cr_assert_eq(sl_record_read(path, &got, &env, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(got.nmetrics, 2);
    cr_assert_eq(got.metrics[1].scope, SL_METRIC_BENCH, "a record older than scopes holds only bench metrics");
    sl_record_release(&got);
}

/* 1100 batches of 2^53 - 1 ns each: every one a valid JSON integer, their
 * sum past 2^63. Such a record was once accepted and reported 0 elements/s. */
static void overflowing_latencies(cJSON *root, const void *arg)
{
    (void)arg;
    cJSON *latency = cJSON_CreateArray(), *samples = cJSON_CreateArray();
    for (int i = 0; i < 1100; i++)
        cJSON_AddItemToArray(latency, cJSON_CreateNumber(9007199254740991.0));
    for (int i = 0; i < 3 * 1100; i++)
        cJSON_AddItemToArray(samples, cJSON_CreateNumber(1000.0));
    cJSON_ReplaceItemInObjectCaseSensitive(root, "measured_batches", cJSON_CreateNumber(1100));
    cJSON_ReplaceItemInObjectCaseSensitive(root, "latency_ns", latency);
    cJSON_ReplaceItemInObjectCaseSensitive(root, "samples_ns", samples);
}

Test(records, latencies_summing_past_int64_are_refused)
{
    char path[128];
    scratch_path(path, sizeof path, "r.json");
    write_edited(path, overflowing_latencies, NULL);
    expect_refused(path, "latency_ns");
    sl_record r;
    sl_err err = {0};
    sl_record_read(path, &r, NULL, &err);
    cr_assert_not_null(strstr(err.msg, "sums past"), "%s", err.msg);
}

/* The environment fingerprint. */

Test(records, environment_is_filled)
{
    sl_environment env;
    memset(&env, 0, sizeof env);
    sl_environment_collect(&env);
    cr_assert_gt(strlen(env.cpu_model), 0);
    cr_assert_geq(env.cpu_cores, 1);
    cr_assert(strncmp(env.compiler, "gcc ", 4) == 0 || strncmp(env.compiler, "clang ", 6) == 0, "compiler %s",
              env.compiler);
    cr_assert_not_null(strstr(env.compile_flags, "-ffp-contract=off"), "%s", env.compile_flags);
    cr_assert_not_null(strstr(env.library_versions, "sluice 0.1.0; cJSON "), "%s", env.library_versions);
    unsigned major, minor, release;
    const char *xxh = strstr(env.library_versions, "; xxHash ");
    cr_assert_not_null(xxh, "%s", env.library_versions);
    cr_assert_eq(sscanf(xxh, "; xxHash %u.%u.%u", &major, &minor, &release), 3, "%s", env.library_versions);
    cr_assert_not_null(strstr(env.library_versions, "; libc 2."), "%s", env.library_versions);
    /* The BLAS behind MM-2, with the one thread sluice sets, or why none. */
    const char *blas = strstr(env.library_versions, "; BLAS ");
    cr_assert_not_null(blas, "%s", env.library_versions);
    cr_assert(strstr(blas, ", 1 thread") || strstr(blas, "no BLAS"), "%s", env.library_versions);
    cr_assert_gt(strlen(env.git_commit), 0);
    cr_assert_eq(strncmp(env.kernel, "Linux ", 6), 0, "%s", env.kernel);

    /* ISO 8601 in UTC, and now. */
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    const char *end = strptime(env.time_utc, "%Y-%m-%dT%H:%M:%SZ", &tm);
    cr_assert(end && *end == '\0', "time_utc %s", env.time_utc);
    cr_assert_eq(strlen(env.time_utc), 20);
    cr_assert_leq(llabs((long long)(timegm(&tm) - time(NULL))), 120);
}

Test(records, a_record_without_an_environment_is_not_written)
{
    sl_record r;
    sample_record(&r);
    cr_expect_null(sl_record_to_json(&r, NULL));
    char path[128];
    scratch_path(path, sizeof path, "no-env.json");
    sl_err err = {0};
    cr_expect_eq(sl_record_write(&r, NULL, path, &err), SL_EINVAL);
    cr_expect(strstr(err.msg, "environment") != NULL, "%s", err.msg);
    cr_expect_eq(access(path, F_OK), -1, "nothing may be written");
}

/* Files. */

Test(fileio, atomic_write_creates_and_replaces)
{
    char path[128];
    scratch_path(path, sizeof path, "f.bin");
    sl_err err = {0};
    const char first[] = "first\0with a NUL";
    cr_assert_eq(sl_write_file_atomic(path, first, sizeof first, &err), SL_OK, "%s", err.msg);
    char *data = NULL;
    size_t size = 0;
    cr_assert_eq(sl_read_file(path, &data, &size, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(size, sizeof first);
    cr_assert_arr_eq(data, first, sizeof first);
    cr_assert_eq(data[size], '\0');
    free(data);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0644, "a new file is 0644, found %o", st.st_mode & 0777);

    /* The mode of a replaced file is not copied: a setuid, world-writable
     * file there once made a setuid, world-writable record. */
    cr_assert_eq(chmod(path, 06777), 0);
    cr_assert_eq(sl_write_file_atomic(path, "second", 6, &err), SL_OK, "%s", err.msg);
    data = slurp(path);
    cr_assert_str_eq(data, "second");
    free(data);
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_mode & 07777, 0644, "a replaced file is 0644 like a new one, found %o", st.st_mode & 07777);
    cr_assert_eq(count_entries(dir), 1, "no temporary file may remain");
}

/* A symbolic link at the path (to /dev/null, or to a file elsewhere) is
 * refused, never followed: /dev/null once became a 0666 regular file. */
Test(fileio, atomic_write_refuses_links_and_special_files)
{
    char path[128], target[128];
    scratch_path(path, sizeof path, "link.json");
    scratch_path(target, sizeof target, "elsewhere.json");
    FILE *f = fopen(target, "w");
    fputs("keep me", f);
    fclose(f);
    cr_assert_eq(symlink(target, path), 0);
    sl_err err = {0};
    cr_expect_neq(sl_write_file_atomic(path, "x", 1, &err), SL_OK);
    cr_expect(strstr(err.msg, path) && strstr(err.msg, "symbolic link"), "%s", err.msg);
    char *kept = slurp(target);
    cr_expect_str_eq(kept, "keep me");
    free(kept);
    struct stat st;
    cr_expect_eq(lstat(path, &st), 0);
    cr_expect(S_ISLNK(st.st_mode), "the link itself is left alone");
    char fifo[128];
    scratch_path(fifo, sizeof fifo, "fifo.json");
    cr_assert_eq(mkfifo(fifo, 0644), 0);
    cr_expect_neq(sl_write_file_atomic(fifo, "x", 1, &err), SL_OK);
    cr_expect(strstr(err.msg, "special file"), "%s", err.msg);
}

/* JSON readers take regular files only: a FIFO once blocked forever and
 * /dev/zero made a reader allocate until memory ran out. */
Test(fileio, json_readers_refuse_fifos_and_devices)
{
    char fifo[128], link[128];
    scratch_path(fifo, sizeof fifo, "CV-1__32x32__fused.json");
    cr_assert_eq(mkfifo(fifo, 0644), 0);
    sl_record r;
    sl_err err = {0};
    cr_expect_neq(sl_record_read(fifo, &r, NULL, &err), SL_OK);
    cr_expect(strstr(err.msg, "not a regular file"), "%s", err.msg);
    scratch_path(link, sizeof link, "zero.json");
    cr_assert_eq(symlink("/dev/zero", link), 0);
    cr_expect_neq(sl_record_read(link, &r, NULL, &err), SL_OK);
    cr_expect(strstr(err.msg, "not a regular file"), "%s", err.msg);
}

Test(fileio, failed_write_leaves_the_old_file)
{
    char path[128];
    scratch_path(path, sizeof path, "f.txt");
    sl_err err = {0};
    cr_assert_eq(sl_write_file_atomic(path, "old contents", 12, &err), SL_OK, "%s", err.msg);
    /* A file size limit makes the write itself fail (EFBIG), for root too. */
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit limit = {4096, 4096};
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &limit), 0);
    size_t big = 1 << 20;
    char *payload = calloc(1, big);
    cr_assert_eq(sl_write_file_atomic(path, payload, big, &err), SL_EIO);
    free(payload);
    cr_assert_not_null(strstr(err.msg, path), "%s", err.msg);
    char *data = slurp(path);
    cr_assert_str_eq(data, "old contents");
    free(data);
    cr_assert_eq(count_entries(dir), 1, "the temporary file must be removed");
}

Test(fileio, unwritable_directory_leaves_the_old_file)
{
    char path[128];
    scratch_path(path, sizeof path, "f.txt");
    sl_err err = {0};
    cr_assert_eq(sl_write_file_atomic(path, "old contents", 12, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(chmod(dir, 0555), 0);
    /* Root ignores directory permissions, so the attempt runs in a child
     * that gives up root first; it reports the status and message back. */
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        close(fds[0]);
        if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0))
            _exit(2);
        sl_err child = {0};
        child.status = sl_write_file_atomic(path, "new contents", 12, &child);
        ssize_t n = write(fds[1], &child, sizeof child);
        _exit(n == (ssize_t)sizeof child ? 0 : 3);
    }
    close(fds[1]);
    sl_err child = {0};
    ssize_t n = read(fds[0], &child, sizeof child);
    close(fds[0]);
    int wstatus;
    waitpid(pid, &wstatus, 0);
    cr_assert(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0, "child failed: %d", wstatus);
    cr_assert_eq(n, (ssize_t)sizeof child);
    cr_assert_eq(child.status, SL_EIO);
    cr_assert_not_null(strstr(child.msg, path), "%s", child.msg);
    char *data = slurp(path);
    cr_assert_str_eq(data, "old contents");
    free(data);
    cr_assert_eq(count_entries(dir), 1);
}

Test(fileio, rename_onto_a_directory_fails_cleanly)
{
    char path[128];
    scratch_path(path, sizeof path, "taken");
    cr_assert_eq(mkdir(path, 0755), 0);
    sl_err err = {0};
    cr_assert_eq(sl_write_file_atomic(path, "x", 1, &err), SL_EIO);
    cr_assert_not_null(strstr(err.msg, path), "%s", err.msg);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_assert(S_ISDIR(st.st_mode));
    cr_assert_eq(count_entries(dir), 1, "the temporary file must be removed");
}

Test(fileio, make_dirs_creates_every_level_and_names_the_failing_one)
{
    char path[160];
    snprintf(path, sizeof path, "%s/a/b//c/", dir);
    sl_err err = {0};
    cr_assert_eq(sl_make_dirs(path, &err), SL_OK, "%s", err.msg);
    char leaf[160];
    snprintf(leaf, sizeof leaf, "%s/a/b/c", dir);
    struct stat st;
    cr_assert_eq(stat(leaf, &st), 0);
    cr_assert(S_ISDIR(st.st_mode));
    cr_assert_eq(sl_make_dirs(path, &err), SL_OK, "existing directories are fine: %s", err.msg);

    char file[160];
    snprintf(file, sizeof file, "%s/a/plain", dir);
    cr_assert_eq(sl_write_file_atomic(file, "x", 1, &err), SL_OK, "%s", err.msg);
    snprintf(path, sizeof path, "%s/a/plain/d/e", dir);
    cr_assert_neq(sl_make_dirs(path, &err), SL_OK);
    cr_assert_not_null(strstr(err.msg, file), "the message must name %s: %s", file, err.msg);
    cr_assert_eq(sl_make_dirs("", &err), SL_EINVAL);
}

/* The interval is over all repetitions' samples: the kept repetition's
 * 1.0 to 3.0 ms batches widened by the other two. With 15 samples the 95%
 * interval of the median is [x(4), x(12)] (P(Bin(15, 1/2) <= 3) = 0.0176). */
Test(records, median_interval_pools_every_repetition)
{
    sl_record r;
    sample_record(&r);
    sl_median_ci ci;
    cr_assert(sl_record_latency_ci(&r, &ci));
    cr_expect_eq(ci.n, 15);
    cr_expect_eq(ci.median, 2000000.0);
    cr_expect_eq(ci.lo, 1400000.0); /* x(4) of the 15 sorted samples */
    cr_expect_eq(ci.hi, 2600000.0); /* x(12) */
}

/* A record string that is not UTF-8 (a peer's stderr cut mid-character)
 * is written with U+FFFD in place of each bad byte, so that every record
 * sluice writes can be read back (the reader refuses such bytes). */
Test(records, invalid_utf8_is_replaced_when_written)
{
    char path[128];
    scratch_path(path, sizeof path, "utf8.json");
    sl_record r;
    sl_environment env;
    sample_record(&r);
    sample_environment(&env);
    r.outcome = SL_RECORD_FAILED;
    /* A lone continuation byte, an overlong '/', a cut three-byte
     * sequence; then a valid 'é' (kept) and a bad byte. */
    strcpy(r.reason, "crashed: \x80\xC0\xAF\xE2 tail");
    strcpy(r.framework, "numpy \xC3\xA9\xFFx");
    sl_err err = {0};
    cr_assert_eq(sl_record_write(&r, &env, path, &err), SL_OK, "%s", err.msg);
    sl_record got;
    sl_environment got_env;
    cr_assert_eq(sl_record_read(path, &got, &got_env, &err), SL_OK, "%s", err.msg);
    cr_expect_str_eq(got.reason, "crashed: \xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD tail");
    cr_expect_str_eq(got.framework, "numpy \xC3\xA9\xEF\xBF\xBDx");
    sl_record_release(&got);
}

Test(records, the_load_around_a_run_round_trips)
{
    char path[128];
    scratch_path(path, sizeof path, "load.json");
    sl_record r;
    sl_environment env, got_env;
    sample_record(&r);
    sample_environment(&env);
    env.load_start = 1.5;
    env.load_end = 3.25;
    env.steal_fraction = 0.03125;
    env.cpu_wait_fraction = 0.0625;
    r.rounds = 3;
    r.wall_ns = 4200000000;
    sl_err err = {0};
    cr_assert_eq(sl_record_write(&r, &env, path, &err), SL_OK, "%s", err.msg);
    sl_record got;
    cr_assert_eq(sl_record_read(path, &got, &got_env, &err), SL_OK, "%s", err.msg);
    cr_expect_eq(got_env.load_start, 1.5);
    cr_expect_eq(got_env.load_end, 3.25);
    cr_expect_eq(got_env.steal_fraction, 0.03125);
    cr_expect_eq(got_env.cpu_wait_fraction, 0.0625);
    cr_expect_eq(got.rounds, 3);
    cr_expect_eq(got.wall_ns, 4200000000);
    /* Twelve CPUs under a load of 3.25, 3% of their time stolen, are not
     * busy; with a quarter stolen, or a load above twelve, they are. */
    cr_expect_not(sl_environment_busy(&got_env));
    got_env.steal_fraction = 0.25;
    cr_expect(sl_environment_busy(&got_env));
    got_env.steal_fraction = 0.0;
    got_env.load_end = 12.5;
    cr_expect(sl_environment_busy(&got_env));
    /* A run that waited for a CPU more than a tenth of its time is busy
     * whatever the load average said. */
    got_env.load_end = 3.25;
    got_env.cpu_wait_fraction = 0.35;
    cr_expect(sl_environment_busy(&got_env));
    sl_record_release(&got);
}

Test(records, a_record_from_before_the_cpu_wait_reads_it_as_unknown)
{
    /* Records and baselines written before cpu_wait_fraction existed stay
     * readable: the field is the one measure of load a reader may miss. */
    char path[128];
    scratch_path(path, sizeof path, "no-wait.json");
    write_edited(path, delete_key, "environment.cpu_wait_fraction");
    sl_err err = {0};
    sl_environment got_env;
    sl_record got;
    cr_assert_eq(sl_record_read(path, &got, &got_env, &err), SL_OK, "%s", err.msg);
    cr_expect_eq(got_env.cpu_wait_fraction, -1.0);
    sl_record_release(&got);
}

Test(records, pages_and_placement_round_trip_and_older_records_lack_them)
{
    char path[128];
    scratch_path(path, sizeof path, "pages.json");
    sl_record r;
    sl_environment env, got_env;
    sample_record(&r);
    sample_environment(&env);
    snprintf(env.thp_enabled, sizeof env.thp_enabled, "madvise");
    snprintf(env.thp_defrag, sizeof env.thp_defrag, "defer+madvise");
    snprintf(env.huge_pages, sizeof env.huge_pages, "off");
    snprintf(env.placement, sizeof env.placement, "CPUs 0-15");
    env.anon_huge_bytes = 8388608.0;
    env.numa_nodes = 2.0;
    sl_err err = {0};
    cr_assert_eq(sl_record_write(&r, &env, path, &err), SL_OK, "%s", err.msg);
    sl_record got;
    cr_assert_eq(sl_record_read(path, &got, &got_env, &err), SL_OK, "%s", err.msg);
    cr_expect_str_eq(got_env.thp_enabled, "madvise");
    cr_expect_str_eq(got_env.thp_defrag, "defer+madvise");
    cr_expect_str_eq(got_env.huge_pages, "off");
    cr_expect_str_eq(got_env.placement, "CPUs 0-15");
    cr_expect_eq(got_env.anon_huge_bytes, 8388608.0);
    cr_expect_eq(got_env.numa_nodes, 2.0);
    sl_record_release(&got);
    /* A record written before pages were recorded reads them as unknown. */
    scratch_path(path, sizeof path, "no-pages.json");
    write_edited(path, delete_key, "environment.anon_huge_bytes");
    cr_assert_eq(sl_record_read(path, &got, &got_env, &err), SL_OK, "%s", err.msg);
    cr_expect_eq(got_env.anon_huge_bytes, -1.0);
    sl_record_release(&got);
    write_edited(path, delete_key, "environment.thp_enabled");
    cr_assert_eq(sl_record_read(path, &got, &got_env, &err), SL_OK, "%s", err.msg);
    cr_expect_str_eq(got_env.thp_enabled, "");
    sl_record_release(&got);
}

/* Counts no run can produce (the review's D19): each is refused naming the
 * field, where they used to be read and turned into nonsense figures
 * (elements/s of -1598 from "elements": -100). */
Test(records, impossible_counts_are_refused_by_name)
{
    static const struct replacement cases[] = {
        {"elements", "-100", "elements"},
        {"bytes", "-1", "bytes"},
        {"batch_size", "-64", "batch_size"},
        {"first_batch_ns", "-5", "first_batch_ns"},
        {"workers", "-2", "workers"},
        {"peak_rss_bytes", "-2", "peak_rss_bytes"},
        /* 5 measured batches of 64 rows hold at most 320 elements. */
        {"elements", "321", "elements"},
        {"elements", "0", "elements"},
        {"latency_ns", "[0, 0, 0, 0, 0]", "latency_ns"},
    };
    char path[128];
    scratch_path(path, sizeof path, "r.json");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_edited(path, replace_key, &cases[i]);
        expect_refused(path, cases[i].named);
    }
    /* -1 is how a memory figure says "not measured". */
    static const struct replacement unknown = {"adapter_memory_bytes", "-1", NULL};
    write_edited(path, replace_key, &unknown);
    sl_record r;
    sl_err err = {0};
    cr_expect_eq(sl_record_read(path, &r, NULL, &err), SL_OK, "%s", err.msg);
    sl_record_release(&r);
}

/* Writes the sample record's text with `insert` placed right after the
 * opening brace of the object that starts at the first occurrence of
 * `object_start` ("{" for the top level). */
static void write_with_inserted(const char *path, const char *object_start, const char *insert)
{
    write_sample(path);
    char *text = slurp(path);
    char *at = strstr(text, object_start);
    cr_assert_not_null(at);
    at = strchr(at, '{') + 1;
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fprintf(f, "%.*s%s%s", (int)(at - text), text, insert, at);
    fclose(f);
    free(text);
}

/* The review's N2: cJSON finds the first of two equal keys and Python's
 * json keeps the last, so one file read as "DUP failed" to sluice and "CV-1
 * ok" to Python tooling. A repeated key is refused, at any depth, naming it. */
Test(records, a_repeated_key_is_refused_by_name)
{
    char path[128];
    scratch_path(path, sizeof path, "r.json");
    write_with_inserted(path, "{", "\"scenario\": \"DUP\",");
    expect_refused(path, "scenario");
    write_with_inserted(path, "\"environment\"", "\"cpu_model\": \"elsewhere\",");
    expect_refused(path, "environment.cpu_model");
}

/* Text that is not UTF-8 is refused naming the field: a raw 0xff byte, an
 * overlong '/', a UTF-16 surrogate written as UTF-8, in a value and in a
 * key. */
Test(records, a_string_that_is_not_utf8_is_refused_by_name)
{
    char path[128];
    scratch_path(path, sizeof path, "r.json");
    static const char *const values[] = {"\"reason\": \"bad \xff byte\",", "\"reason\": \"\xc0\xaf\",",
                                         "\"reason\": \"\xed\xa0\x80\","};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        /* A key the reader does not use is checked all the same: a file
         * is valid UTF-8 throughout or it is refused. */
        write_with_inserted(path, "\"environment\"", values[i]);
        expect_refused(path, "environment.reason");
    }
    write_with_inserted(path, "\"environment\"", "\"k\xff\": 1,");
    expect_refused(path, "environment");
}

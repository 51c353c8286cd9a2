/* JUnit XML and Google Benchmark JSON exports (exports.h). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "exports.h"
#include "sluice/core/stats.h"

static double wall_seconds(const sl_record *r)
{
    return (double)r->wall_ns / 1e9;
}

static void property(FILE *out, const char *name, const char *value)
{
    fputs("        <property name=\"", out);
    sl__html_escape(out, name);
    fputs("\" value=\"", out);
    sl__html_escape(out, value);
    fputs("\"/>\n", out);
}

static void number_property(FILE *out, const char *name, double value)
{
    char text[64];
    snprintf(text, sizeof text, "%.17g", value);
    property(out, name, text);
}

/* The measured figures of a testcase, for the trackers that read JUnit
 * properties: the headline figure with its interval and the mean beside
 * it, the median batch time and the p99, how noisy, how verified, and how
 * busy the machine was. */
static void testcase_properties(FILE *out, const sl_record *r, const sl_environment *env)
{
    sl_throughput t;
    fputs("      <properties>\n", out);
    property(out, "outcome", sl_record_outcome_name(r->outcome));
    property(out, "equivalence", r->equivalence);
    if (r->outcome == SL_RECORD_OK && sl_record_throughput(r, &t)) {
        number_property(out, "elements_per_s", t.rate);
        number_property(out, "elements_per_s_ci_low", t.rate_lo);
        number_property(out, "elements_per_s_ci_high", t.rate_hi);
        number_property(out, "mean_elements_per_s", t.mean_rate);
        number_property(out, "median_batch_ns", t.median_ns);
        sl_latency_summary s;
        sl_latency_summarize(r->latency_ns, (size_t)r->measured_batches, &s);
        number_property(out, "p99_ns", s.p99_ns);
        property(out, "noisy", t.noisy ? "true" : "false");
        char why[512];
        sl_throughput_noise_reason(&t, why, sizeof why);
        if (why[0])
            property(out, "noisy_reason", why);
    }
    number_property(out, "repetitions", r->repetitions);
    number_property(out, "rounds", r->rounds);
    number_property(out, "measured_batches", (double)r->measured_batches);
    if (env) {
        number_property(out, "load_start", env->load_start);
        number_property(out, "load_end", env->load_end);
    }
    fputs("      </properties>\n", out);
}

void sl__export_junit(const sl_record *records, const sl_environment *environments, int count, FILE *out)
{
    int failures = 0, errors = 0, skipped = 0;
    double time = 0.0;
    for (int i = 0; i < count; i++) {
        failures += records[i].outcome == SL_RECORD_MISMATCH;
        errors += records[i].outcome == SL_RECORD_FAILED;
        skipped += records[i].outcome == SL_RECORD_EXCLUDED || records[i].outcome == SL_RECORD_UNAVAILABLE ||
                   records[i].outcome == SL_RECORD_SKIPPED;
        time += wall_seconds(&records[i]);
    }
    fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", out);
    fprintf(out,
            "<testsuites name=\"sluice bench\" tests=\"%d\" failures=\"%d\" errors=\"%d\" skipped=\"%d\" "
            "time=\"%.6f\">\n",
            count, failures, errors, skipped, time);
    fprintf(out,
            "  <testsuite name=\"sluice bench\" tests=\"%d\" failures=\"%d\" errors=\"%d\" skipped=\"%d\" "
            "time=\"%.6f\">\n",
            count, failures, errors, skipped, time);
    for (int i = 0; i < count; i++) {
        const sl_record *r = &records[i];
        fputs("    <testcase classname=\"", out);
        sl__html_escape(out, r->scenario);
        fputc('.', out);
        sl__html_escape(out, r->variant);
        fputs("\" name=\"", out);
        sl__html_escape(out, r->adapter);
        /* A testcase's time is how long it took, as for any test: the
         * run's wall time. The measured figures are properties. */
        fprintf(out, "\" time=\"%.6f\">\n", wall_seconds(r));
        testcase_properties(out, r, environments ? &environments[i] : NULL);
        const char *tag = r->outcome == SL_RECORD_MISMATCH ? "failure"
                          : r->outcome == SL_RECORD_FAILED ? "error"
                          : r->outcome == SL_RECORD_OK     ? NULL
                                                           : "skipped";
        if (tag) {
            fprintf(out, "      <%s type=\"%s\" message=\"", tag, sl_record_outcome_name(r->outcome));
            sl__html_escape(out, r->reason);
            fputs("\"/>\n", out);
        }
        fputs("    </testcase>\n", out);
    }
    fputs("  </testsuite>\n</testsuites>\n", out);
}

bool sl__export_junit_file(const sl_record *records, const sl_environment *environments, int count, const char *path)
{
    char *xml = NULL;
    size_t xml_size = 0;
    sl_err err = {0};
    FILE *out = open_memstream(&xml, &xml_size);
    if (out) {
        sl__export_junit(records, environments, count, out);
        fclose(out);
    }
    bool ok = out && sl_write_file_atomic(path, xml, xml_size, &err) == SL_OK;
    if (!ok)
        sl__cli_error("bench", "cannot write %s: %s", path, out ? err.msg : "out of memory");
    free(xml);
    return ok;
}

/* One entry as Google Benchmark writes it; an aggregate's name ends in
 * _<aggregate_name>. cpu_time repeats real_time: sluice measures the time a
 * batch took to be ready, not the CPU it used. */
static cJSON *gbench_entry(const sl_record *r, const char *aggregate, int repetition, double ns, double items_per_s)
{
    char run_name[128], name[160];
    snprintf(run_name, sizeof run_name, "%s/%s/%s", r->scenario, r->variant, r->adapter);
    snprintf(name, sizeof name, aggregate ? "%s_%s" : "%s", run_name, aggregate);
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "name", name);
    cJSON_AddStringToObject(e, "run_name", run_name);
    cJSON_AddStringToObject(e, "run_type", aggregate ? "aggregate" : "iteration");
    cJSON_AddNumberToObject(e, "repetitions", r->repetitions);
    if (aggregate) {
        cJSON_AddStringToObject(e, "aggregate_name", aggregate);
        cJSON_AddStringToObject(e, "aggregate_unit", strcmp(aggregate, "cv") == 0 ? "percentage" : "time");
    } else {
        cJSON_AddNumberToObject(e, "repetition_index", repetition);
    }
    cJSON_AddNumberToObject(e, "threads", (double)r->threads);
    cJSON_AddNumberToObject(e, "iterations", (double)r->measured_batches);
    cJSON_AddNumberToObject(e, "real_time", ns);
    cJSON_AddNumberToObject(e, "cpu_time", ns);
    cJSON_AddStringToObject(e, "time_unit", "ns");
    cJSON_AddNumberToObject(e, "items_per_second", items_per_s);
    return e;
}

/* The mean and the sample standard deviation (n - 1), as Google Benchmark
 * computes its aggregates; 0 deviation for one value. */
static void mean_and_stddev(const double *v, int n, double *mean, double *stddev)
{
    double sum = 0.0, squares = 0.0;
    for (int i = 0; i < n; i++)
        sum += v[i];
    *mean = n > 0 ? sum / n : 0.0;
    for (int i = 0; i < n; i++)
        squares += (v[i] - *mean) * (v[i] - *mean);
    *stddev = n > 1 ? sqrt(squares / (n - 1)) : 0.0;
}

/* The meson build type of the build that made the records, from their
 * compile_flags ("buildtype=release optimization=3 ..."). */
static void build_type(const sl_environment *env, char *buf, size_t size)
{
    const char *at = strstr(env->compile_flags, "buildtype=");
    if (!at) {
        snprintf(buf, size, "unknown");
        return;
    }
    at += strlen("buildtype=");
    snprintf(buf, size, "%.*s", (int)strcspn(at, " "), at);
}

static void add_record(cJSON *benchmarks, const sl_record *r)
{
    sl_throughput t;
    if (r->outcome != SL_RECORD_OK || !r->samples_ns || r->measured_batches <= 0 || r->repetitions <= 0 ||
        !sl_record_throughput(r, &t))
        return;
    size_t per = (size_t)r->measured_batches;
    double times[SL_RECORD_MAX_REPETITIONS], rates[SL_RECORD_MAX_REPETITIONS];
    int n = 0;
    /* Each repetition's entry is its median batch time: one stalled batch
     * moves it by one rank, not by its whole length. */
    for (int rep = 0; rep < r->repetitions; rep++) {
        sl_median_ci ci;
        if (!sl_median_ci_i64(r->samples_ns + (size_t)rep * per, per, SL_CI_LEVEL, &ci) || !(ci.median > 0.0))
            continue;
        times[n] = ci.median;
        rates[n] = t.per_batch / ci.median * 1e9;
        cJSON_AddItemToArray(benchmarks, gbench_entry(r, NULL, rep, times[n], rates[n]));
        n++;
    }
    if (n == 0)
        return;
    double time_mean, time_sd, rate_mean, rate_sd;
    mean_and_stddev(times, n, &time_mean, &time_sd);
    mean_and_stddev(rates, n, &rate_mean, &rate_sd);
    cJSON_AddItemToArray(benchmarks, gbench_entry(r, "mean", 0, time_mean, rate_mean));
    /* The median aggregate is sluice's headline figure: the median over
     * every batch of every repetition, the same number the summary, the
     * record and the report give (docs/cli.md). */
    cJSON_AddItemToArray(benchmarks, gbench_entry(r, "median", 0, t.median_ns, t.rate));
    cJSON_AddItemToArray(benchmarks, gbench_entry(r, "stddev", 0, time_sd, rate_sd));
    cJSON_AddItemToArray(benchmarks, gbench_entry(r, "cv", 0, time_mean > 0.0 ? time_sd / time_mean : 0.0,
                                                  rate_mean > 0.0 ? rate_sd / rate_mean : 0.0));
}

void sl__export_gbench(const sl_record *records, int count, const sl_environment *env, FILE *out)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *context = cJSON_AddObjectToObject(root, "context");
    char type[32];
    build_type(env, type, sizeof type);
    cJSON_AddStringToObject(context, "date", env->time_utc);
    cJSON_AddStringToObject(context, "executable", "sluice bench");
    cJSON_AddNumberToObject(context, "num_cpus", env->cpu_cores);
    cJSON_AddNumberToObject(context, "mhz_per_cpu", 0);
    cJSON_AddBoolToObject(context, "cpu_scaling_enabled", false);
    cJSON_AddStringToObject(context, "library_build_type", type);
    cJSON_AddStringToObject(context, "cpu_model", env->cpu_model);
    cJSON_AddStringToObject(context, "git_commit", env->git_commit);
    cJSON *benchmarks = cJSON_AddArrayToObject(root, "benchmarks");
    for (int i = 0; i < count; i++)
        add_record(benchmarks, &records[i]);
    char *text = cJSON_Print(root);
    if (text) {
        fputs(text, out);
        fputc('\n', out);
    }
    free(text);
    cJSON_Delete(root);
}

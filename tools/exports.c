/* JUnit XML and Google Benchmark JSON exports (exports.h). */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "exports.h"
#include "sluice/stats.h"

static double seconds_of(const sl_record *r)
{
    double total = 0.0;
    for (int64_t i = 0; r->latency_ns && i < r->measured_batches; i++)
        total += (double)r->latency_ns[i];
    return total / 1e9;
}

void sl__export_junit(const sl_record *records, int count, FILE *out)
{
    int failures = 0, errors = 0, skipped = 0;
    double time = 0.0;
    for (int i = 0; i < count; i++) {
        failures += records[i].outcome == SL_RECORD_MISMATCH;
        errors += records[i].outcome == SL_RECORD_FAILED;
        skipped += records[i].outcome == SL_RECORD_EXCLUDED || records[i].outcome == SL_RECORD_UNAVAILABLE ||
                   records[i].outcome == SL_RECORD_SKIPPED;
        time += seconds_of(&records[i]);
    }
    fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", out);
    fprintf(out, "<testsuites name=\"sluice bench\" tests=\"%d\" failures=\"%d\" errors=\"%d\" skipped=\"%d\" "
                 "time=\"%.6f\">\n",
            count, failures, errors, skipped, time);
    fprintf(out, "  <testsuite name=\"sluice bench\" tests=\"%d\" failures=\"%d\" errors=\"%d\" skipped=\"%d\" "
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
        fprintf(out, "\" time=\"%.6f\"", seconds_of(r));
        const char *tag = r->outcome == SL_RECORD_MISMATCH ? "failure"
                          : r->outcome == SL_RECORD_FAILED ? "error"
                          : r->outcome == SL_RECORD_OK     ? NULL
                                                           : "skipped";
        if (!tag) {
            fputs("/>\n", out);
            continue;
        }
        fprintf(out, ">\n      <%s type=\"%s\" message=\"", tag, sl_record_outcome_name(r->outcome));
        sl__html_escape(out, r->reason);
        fprintf(out, "\"/>\n    </testcase>\n");
    }
    fputs("  </testsuite>\n</testsuites>\n", out);
}

static cJSON *gbench_entry(const sl_record *r, const char *run_type, int repetition, double ns, double items_per_s)
{
    char run_name[128], name[140];
    snprintf(run_name, sizeof run_name, "%s/%s/%s", r->scenario, r->variant, r->adapter);
    snprintf(name, sizeof name, "%s%s", run_name, strcmp(run_type, "aggregate") == 0 ? "_median" : "");
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "name", name);
    cJSON_AddStringToObject(e, "run_name", run_name);
    cJSON_AddStringToObject(e, "run_type", run_type);
    cJSON_AddNumberToObject(e, "repetitions", r->repetitions);
    if (strcmp(run_type, "aggregate") == 0)
        cJSON_AddStringToObject(e, "aggregate_name", "median");
    else
        cJSON_AddNumberToObject(e, "repetition_index", repetition);
    cJSON_AddNumberToObject(e, "threads", (double)r->threads);
    cJSON_AddNumberToObject(e, "iterations", (double)r->measured_batches);
    cJSON_AddNumberToObject(e, "real_time", ns);
    cJSON_AddNumberToObject(e, "cpu_time", ns);
    cJSON_AddStringToObject(e, "time_unit", "ns");
    cJSON_AddNumberToObject(e, "items_per_second", items_per_s);
    return e;
}

void sl__export_gbench(const sl_record *records, int count, const sl_environment *env, FILE *out)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *context = cJSON_AddObjectToObject(root, "context");
    cJSON_AddStringToObject(context, "date", env->time_utc);
    cJSON_AddStringToObject(context, "executable", "sluice bench");
    cJSON_AddNumberToObject(context, "num_cpus", env->cpu_cores);
    cJSON_AddNumberToObject(context, "mhz_per_cpu", 0);
    cJSON_AddBoolToObject(context, "cpu_scaling_enabled", false);
    cJSON_AddStringToObject(context, "library_build_type", "release");
    cJSON_AddStringToObject(context, "cpu_model", env->cpu_model);
    cJSON_AddStringToObject(context, "git_commit", env->git_commit);
    cJSON *benchmarks = cJSON_AddArrayToObject(root, "benchmarks");
    for (int i = 0; i < count; i++) {
        const sl_record *r = &records[i];
        if (r->outcome != SL_RECORD_OK || !r->samples_ns || r->measured_batches <= 0)
            continue;
        double per_batch = (double)r->elements / (double)r->measured_batches;
        for (int rep = 0; rep < r->repetitions; rep++) {
            double total = 0.0;
            for (int64_t b = 0; b < r->measured_batches; b++)
                total += (double)r->samples_ns[(size_t)rep * (size_t)r->measured_batches + (size_t)b];
            double mean = total / (double)r->measured_batches;
            cJSON_AddItemToArray(benchmarks, gbench_entry(r, "iteration", rep, mean, per_batch / mean * 1e9));
        }
        sl_median_ci ci;
        if (sl_record_latency_ci(r, &ci))
            cJSON_AddItemToArray(benchmarks, gbench_entry(r, "aggregate", 0, ci.median, per_batch / ci.median * 1e9));
    }
    char *text = cJSON_Print(root);
    if (text) {
        fputs(text, out);
        fputc('\n', out);
    }
    free(text);
    cJSON_Delete(root);
}

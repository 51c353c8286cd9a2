/* `sluice history export`: every run of a history as one JSON file in a
 * format another tracker reads (docs/history.md, "Exports"):
 *
 * - asv (airspeed velocity, results format version 2): a results folder
 *   with benchmarks.json, and per machine machine.json and one
 *   <commit>-sluice.json per run whose results are the median batch time in
 *   seconds with its 99% interval, quartiles and every sample;
 * - Bencher Metric Format: per run a file mapping each benchmark to its
 *   latency (ns per batch) and throughput (elements/s), each with its 95%
 *   interval as lower_value and upper_value.
 *
 * Benchmarks are named <profile>.<scenario>.<variant>.<adapter> for asv and
 * <profile>/<scenario>/<variant>/<adapter> for Bencher; only rows that
 * measured something are exported (asv gets null for a failed run). A run
 * of several processes is one value per benchmark in both: the process
 * whose median is the median of the processes' (the lower of the two
 * middle ones for an even count), as a record keeps its median
 * repetition. */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "history.h"
#include "sluice/core/stats.h"

static bool save(cJSON *root, const char *dir, const char *name)
{
    char path[4096];
    sl_err err = {0};
    int n = snprintf(path, sizeof path, "%s/%s", dir, name);
    char *text = root ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    bool ok = text && n > 0 && (size_t)n < sizeof path && sl_write_file_atomic(path, text, strlen(text), &err) == SL_OK;
    if (!ok)
        sl__cli_error("history", "%s/%s: %s", dir, name, err.msg[0] ? err.msg : "out of memory or path too long");
    free(text);
    return ok;
}

static bool make_dir(const char *dir, const char *sub, char *out, size_t size)
{
    sl_err err = {0};
    int n = snprintf(out, size, "%s/%s", dir, sub);
    if (n < 0 || (size_t)n >= size || sl_make_dirs(out, &err) != SL_OK) {
        sl__cli_error("history", "%s", err.msg[0] ? err.msg : "the export's path is too long");
        return false;
    }
    return true;
}

/* Milliseconds since the epoch of an ISO 8601 time ("2026-11-23T10:00:00Z"
 * or with an offset "+01:00"), as asv's JavaScript dates; 0 when empty or
 * unreadable. */
static double js_time(const char *iso)
{
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    const char *rest = strptime(iso, "%Y-%m-%dT%H:%M:%S", &tm);
    if (!rest)
        return 0;
    double seconds = (double)timegm(&tm);
    int hours, minutes;
    if ((rest[0] == '+' || rest[0] == '-') && sscanf(rest + 1, "%d:%d", &hours, &minutes) == 2)
        seconds -= (rest[0] == '+' ? 1 : -1) * (hours * 3600.0 + minutes * 60.0);
    return seconds * 1000.0;
}

static int compare_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* NumPy's linear quantile of sorted values (docs/records.md). */
static double quantile(const int64_t *sorted, int64_t n, double q)
{
    double h = (double)(n - 1) * q;
    int64_t i = (int64_t)floor(h);
    return i + 1 < n ? (double)sorted[i] + (h - (double)i) * (double)(sorted[i + 1] - sorted[i]) : (double)sorted[i];
}

static bool same_key(const sl_history_key *a, const sl_history_key *b)
{
    return strcmp(a->scenario, b->scenario) == 0 && strcmp(a->variant, b->variant) == 0 &&
           strcmp(a->adapter, b->adapter) == 0 && strcmp(a->profile, b->profile) == 0;
}

/* The row that stands for row i's benchmark in the run, or NULL when row i
 * is not the first of its benchmark (another row of it was exported). Of
 * several measured processes, the one with the median median. */
static const sl_history_row *benchmark_row(const sl_history_run *run, int i)
{
    const sl_history_row *row = &run->rows[i];
    for (int j = 0; j < i; j++)
        if (same_key(&run->rows[j].key, &row->key))
            return NULL;
    int measured = 0;
    for (int j = i; j < run->nrows; j++)
        measured += same_key(&run->rows[j].key, &row->key) && run->rows[j].measured;
    if (measured <= 1) {
        for (int j = i; j < run->nrows; j++)
            if (same_key(&run->rows[j].key, &row->key) && run->rows[j].measured)
                return &run->rows[j];
        return row;
    }
    /* The one ranked (measured - 1) / 2 by median, ties by place. */
    int want = (measured - 1) / 2;
    for (int j = i; j < run->nrows; j++) {
        const sl_history_row *c = &run->rows[j];
        if (!same_key(&c->key, &row->key) || !c->measured)
            continue;
        int rank = 0;
        for (int k = i; k < run->nrows; k++) {
            const sl_history_row *o = &run->rows[k];
            if (k != j && same_key(&o->key, &row->key) && o->measured &&
                (o->figure.median_ns < c->figure.median_ns || (o->figure.median_ns == c->figure.median_ns && k < j)))
                rank++;
        }
        if (rank == want)
            return c;
    }
    return row;
}

static cJSON *one(double value)
{
    cJSON *a = cJSON_CreateArray();
    cJSON_AddItemToArray(a, isfinite(value) ? cJSON_CreateNumber(value) : cJSON_CreateNull());
    return a;
}

static cJSON *machine_params(const sl_history_run *run)
{
    cJSON *p = cJSON_CreateObject();
    const char *space = strrchr(run->environment.kernel, ' ');
    cJSON_AddStringToObject(p, "arch", space ? space + 1 : "");
    cJSON_AddStringToObject(p, "cpu", run->environment.cpu_model);
    cJSON_AddStringToObject(p, "machine", run->machine);
    char cores[16];
    snprintf(cores, sizeof cores, "%d", run->environment.cpu_cores);
    cJSON_AddStringToObject(p, "num_cpu", cores);
    cJSON_AddStringToObject(p, "os", run->environment.kernel);
    cJSON_AddStringToObject(p, "ram", "");
    return p;
}

static void asv_name(const sl_history_row *row, char *buf, size_t size)
{
    snprintf(buf, size, "%s.%s.%s.%s", row->key.profile, row->key.scenario, row->key.variant, row->key.adapter);
}

/* One result row: [result, params, version, started_at, duration,
 * ci_99_a, ci_99_b, q_25, q_75, number, repeat, samples], times in seconds. */
static cJSON *asv_result(const sl_history_row *row, double started_at)
{
    cJSON *r = cJSON_CreateArray();
    if (!row->measured) {
        cJSON_AddItemToArray(r, one(NAN));
        cJSON_AddItemToArray(r, cJSON_CreateArray());
        cJSON_AddItemToArray(r, cJSON_CreateString("1"));
        return r;
    }
    int64_t n = row->nsamples;
    int64_t *sorted = malloc((size_t)n * sizeof *sorted);
    if (!sorted)
        return r;
    memcpy(sorted, row->samples_ns, (size_t)n * sizeof *sorted);
    qsort(sorted, (size_t)n, sizeof *sorted, compare_i64);
    sl_median_ci ci99;
    sl_median_ci_i64(row->samples_ns, (size_t)n, 0.99, &ci99);
    double total = 0;
    for (int64_t i = 0; i < n; i++)
        total += (double)row->samples_ns[i];
    cJSON_AddItemToArray(r, one(row->figure.median_ns / 1e9));
    cJSON_AddItemToArray(r, cJSON_CreateArray());
    cJSON_AddItemToArray(r, cJSON_CreateString("1"));
    cJSON_AddItemToArray(r, cJSON_CreateNumber(started_at));
    cJSON_AddItemToArray(r, cJSON_CreateNumber(total / 1e9));
    cJSON_AddItemToArray(r, one(ci99.lo / 1e9));
    cJSON_AddItemToArray(r, one(ci99.hi / 1e9));
    cJSON_AddItemToArray(r, one(quantile(sorted, n, 0.25) / 1e9));
    cJSON_AddItemToArray(r, one(quantile(sorted, n, 0.75) / 1e9));
    cJSON_AddItemToArray(r, one(1));
    cJSON_AddItemToArray(r, one((double)n));
    cJSON *samples = cJSON_CreateArray(), *wrapped = cJSON_CreateArray();
    for (int64_t i = 0; i < n; i++)
        cJSON_AddItemToArray(samples, cJSON_CreateNumber((double)row->samples_ns[i] / 1e9));
    cJSON_AddItemToArray(wrapped, samples);
    cJSON_AddItemToArray(r, wrapped);
    free(sorted);
    return r;
}

static const char *const asv_columns[] = {"result",     "params",        "version",       "started_at",
                                          "duration",   "stats_ci_99_a", "stats_ci_99_b", "stats_q_25",
                                          "stats_q_75", "stats_number",  "stats_repeat",  "samples"};

int sl__history_export_asv(const sl_history *history, const char *dir)
{
    sl_err err = {0};
    if (sl_make_dirs(dir, &err) != SL_OK) {
        sl__cli_error("history", "%s", err.msg);
        return 1;
    }
    cJSON *benchmarks = cJSON_CreateObject();
    for (int r = 0; r < history->nruns; r++) {
        const sl_history_run *run = &history->runs[r];
        char machine_dir[4096];
        if (!make_dir(dir, run->machine, machine_dir, sizeof machine_dir)) {
            cJSON_Delete(benchmarks);
            return 1;
        }
        cJSON *machine = machine_params(run);
        cJSON_AddNumberToObject(machine, "version", 1);
        if (!save(machine, machine_dir, "machine.json")) {
            cJSON_Delete(benchmarks);
            return 1;
        }
        cJSON *root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "commit_hash", run->commit);
        cJSON_AddStringToObject(root, "env_name", "sluice");
        double committed = js_time(run->commit_time);
        cJSON_AddNumberToObject(root, "date", committed > 0 ? committed : js_time(run->environment.time_utc));
        cJSON_AddItemToObject(root, "params", machine_params(run));
        cJSON_AddStringToObject(root, "python", "");
        cJSON_AddItemToObject(root, "requirements", cJSON_CreateObject());
        cJSON_AddItemToObject(root, "env_vars", cJSON_CreateObject());
        cJSON *columns = cJSON_CreateArray();
        for (size_t c = 0; c < sizeof asv_columns / sizeof *asv_columns; c++)
            cJSON_AddItemToArray(columns, cJSON_CreateString(asv_columns[c]));
        cJSON_AddItemToObject(root, "result_columns", columns);
        cJSON *results = cJSON_CreateObject();
        double started = js_time(run->environment.time_utc);
        for (int i = 0; i < run->nrows; i++) {
            const sl_history_row *row = benchmark_row(run, i);
            if (!row || (!row->measured && row->outcome != SL_RECORD_FAILED && row->outcome != SL_RECORD_MISMATCH))
                continue;
            char name[160];
            asv_name(row, name, sizeof name);
            cJSON_AddItemToObject(results, name, asv_result(row, started));
            if (!cJSON_GetObjectItemCaseSensitive(benchmarks, name)) {
                cJSON *b = cJSON_CreateObject();
                cJSON_AddStringToObject(b, "name", name);
                cJSON_AddStringToObject(b, "type", "time");
                cJSON_AddStringToObject(b, "unit", "seconds");
                cJSON_AddItemToObject(b, "params", cJSON_CreateArray());
                cJSON_AddItemToObject(b, "param_names", cJSON_CreateArray());
                cJSON_AddStringToObject(b, "version", "1");
                cJSON_AddItemToObject(benchmarks, name, b);
            }
        }
        cJSON_AddItemToObject(root, "results", results);
        cJSON_AddItemToObject(root, "durations", cJSON_CreateObject());
        cJSON_AddNumberToObject(root, "version", 2);
        char name[96];
        snprintf(name, sizeof name, "%.40s-sluice.json", run->commit);
        if (!save(root, machine_dir, name)) {
            cJSON_Delete(benchmarks);
            return 1;
        }
    }
    cJSON_AddNumberToObject(benchmarks, "version", 2);
    return save(benchmarks, dir, "benchmarks.json") ? 0 : 1;
}

static cJSON *bmf_measure(double value, double lower, double upper)
{
    cJSON *m = cJSON_CreateObject();
    cJSON_AddNumberToObject(m, "value", value);
    cJSON_AddNumberToObject(m, "lower_value", lower);
    cJSON_AddNumberToObject(m, "upper_value", upper);
    return m;
}

int sl__history_export_bencher(const sl_history *history, const char *dir)
{
    for (int r = 0; r < history->nruns; r++) {
        const sl_history_run *run = &history->runs[r];
        char machine_dir[4096];
        if (!make_dir(dir, run->machine, machine_dir, sizeof machine_dir))
            return 1;
        cJSON *root = cJSON_CreateObject();
        for (int i = 0; i < run->nrows; i++) {
            const sl_history_row *row = benchmark_row(run, i);
            if (!row || !row->measured)
                continue;
            char name[160];
            snprintf(name, sizeof name, "%s/%s/%s/%s", row->key.profile, row->key.scenario, row->key.variant,
                     row->key.adapter);
            cJSON *b = cJSON_CreateObject();
            cJSON_AddItemToObject(b, "latency",
                                  bmf_measure(row->figure.median_ns, row->figure.low_ns, row->figure.high_ns));
            cJSON_AddItemToObject(b, "throughput",
                                  bmf_measure(sl_history_rate(&row->figure), sl_history_rate_low(&row->figure),
                                              sl_history_rate_high(&row->figure)));
            cJSON_AddItemToObject(root, name, b);
        }
        char name[96];
        snprintf(name, sizeof name, "%010" PRId64 "-%.40s.json", run->position, run->commit);
        if (!save(root, machine_dir, name))
            return 1;
    }
    return 0;
}

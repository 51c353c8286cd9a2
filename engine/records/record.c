#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/json.h"
#include "environment_json.h"
#include "sluice/core/fileio.h"
#include "sluice/core/stats.h"
#include "sluice/records/record.h"

/* The record proper. */

static const char *const outcome_names[] = {
    [SL_RECORD_OK] = "ok",         [SL_RECORD_EXCLUDED] = "excluded", [SL_RECORD_SKIPPED] = "skipped",
    [SL_RECORD_FAILED] = "failed", [SL_RECORD_MISMATCH] = "mismatch", [SL_RECORD_UNAVAILABLE] = "unavailable",
};
#define OUTCOME_COUNT ((int)(sizeof outcome_names / sizeof outcome_names[0]))

const char *sl_record_outcome_name(sl_record_outcome outcome)
{
    return (unsigned)outcome < (unsigned)OUTCOME_COUNT ? outcome_names[outcome] : "unknown";
}

/* The batches a record's figures pool: every repetition's, or the kept
 * repetition's in a record that holds no samples (one repetition's span,
 * or a record from before samples were kept). */
static const int64_t *pooled(const sl_record *r, size_t *n)
{
    if (r->samples_ns && r->measured_batches > 0 && r->repetitions > 0) {
        *n = (size_t)r->measured_batches * (size_t)r->repetitions;
        return r->samples_ns;
    }
    *n = r->latency_ns && r->measured_batches > 0 ? (size_t)r->measured_batches : 0;
    return r->latency_ns;
}

/* Throughput is defined at the median of the measured batches' latencies,
 * not over the wall clock around them, so that every adapter is timed at
 * the same points (DESIGN.md invariant 4) and one stalled batch does not
 * decide a ranking (docs/records.md, "The headline figure"). */
static bool throughput_of(const sl_record *r, int64_t amount, sl_throughput *out)
{
    size_t n;
    const int64_t *samples = pooled(r, &n);
    if (r->measured_batches <= 0 || amount <= 0)
        return false;
    return sl_throughput_of(samples, n, (double)amount / (double)r->measured_batches, out);
}

bool sl_record_throughput(const sl_record *record, sl_throughput *out)
{
    return throughput_of(record, record->elements, out);
}

double sl_record_elements_per_s(const sl_record *record)
{
    sl_throughput t;
    return throughput_of(record, record->elements, &t) ? t.rate : 0.0;
}

double sl_record_bytes_per_s(const sl_record *record)
{
    sl_throughput t;
    return throughput_of(record, record->bytes, &t) ? t.rate : 0.0;
}

bool sl_record_ratio(const sl_record *a, const sl_record *b, sl_ratio *out)
{
    size_t na, nb;
    const int64_t *sa = pooled(a, &na), *sb = pooled(b, &nb);
    if (!sa || !sb)
        return false;
    /* Repetition r of each is a round only when both hold every
     * repetition of the same batch count. */
    bool aligned = a->samples_ns && b->samples_ns && a->repetitions == b->repetitions &&
                   a->measured_batches == b->measured_batches;
    return sl_ratio_of_medians(sa, na, sb, nb, aligned ? (size_t)a->measured_batches : 0, out);
}

bool sl_environment_busy(const sl_environment *env)
{
    double load = env->load_start > env->load_end ? env->load_start : env->load_end;
    return (env->cpu_cores > 0 && load > (double)env->cpu_cores) || env->steal_fraction > SL_BUSY_STEAL ||
           env->cpu_wait_fraction > SL_BUSY_WAIT;
}

static void add_metric(sl_record *record, const char *name, double value, const char *unit, sl_metric_scope scope)
{
    /* A metric reported twice keeps its latest value rather than appearing
     * twice; past SL_RECORD_MAX_METRICS further names are dropped, since the
     * fixed table is part of the record's layout. */
    int i = 0;
    while (i < record->nmetrics && strcmp(record->metrics[i].name, name) != 0)
        i++;
    if (i == SL_RECORD_MAX_METRICS)
        return;
    if (i == record->nmetrics)
        record->nmetrics++;
    sl__copy_string(record->metrics[i].name, sizeof record->metrics[i].name, name);
    sl__copy_string(record->metrics[i].unit, sizeof record->metrics[i].unit, unit);
    record->metrics[i].value = value;
    record->metrics[i].scope = scope;
}

void sl_record_add_metric(sl_record *record, const char *name, double value, const char *unit)
{
    add_metric(record, name, value, unit, SL_METRIC_BENCH);
}

void sl_record_add_scenario_metric(sl_record *record, const char *name, double value, const char *unit)
{
    add_metric(record, name, value, unit, SL_METRIC_SCENARIO);
}

/* Text and integer fields, listed once so that the writer and the reader
 * cannot drift apart. */
typedef struct text_field {
    const char *key;
    size_t offset, size;
} text_field;

typedef struct i64_field {
    const char *key;
    size_t offset;
} i64_field;

#define TEXT(type, key, member)                                                                                        \
    {                                                                                                                  \
        key, offsetof(type, member), sizeof((type *)0)->member                                                         \
    }
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const text_field record_texts[] = {
    TEXT(sl_record, "scenario", scenario),       TEXT(sl_record, "variant", variant),
    TEXT(sl_record, "adapter", adapter),         TEXT(sl_record, "profile", profile),
    TEXT(sl_record, "reason", reason),           TEXT(sl_record, "kernels", kernels),
    TEXT(sl_record, "equivalence", equivalence),
};

static const text_field backend_texts[] = {
    TEXT(sl_record, "requested", backend_requested),
    TEXT(sl_record, "active", backend_active),
};

/* The optional "device" object, present when device_name is set. */
static const text_field device_texts[] = {
    TEXT(sl_record, "name", device_name),
    TEXT(sl_record, "compute_capability", device_compute_capability),
    TEXT(sl_record, "driver", device_driver),
    TEXT(sl_record, "runtime", device_runtime),
};

static const text_field env_texts[] = {
    TEXT(sl_environment, "cpu_model", cpu_model),         TEXT(sl_environment, "compiler", compiler),
    TEXT(sl_environment, "compile_flags", compile_flags), TEXT(sl_environment, "library_versions", library_versions),
    TEXT(sl_environment, "git_commit", git_commit),       TEXT(sl_environment, "kernel", kernel),
    TEXT(sl_environment, "time_utc", time_utc),
};

/* Environment texts added after schema 3 began: "" where a record lacks them. */
static const text_field env_optional_texts[] = {
    TEXT(sl_environment, "thp_enabled", thp_enabled),
    TEXT(sl_environment, "thp_defrag", thp_defrag),
    TEXT(sl_environment, "huge_pages", huge_pages),
    TEXT(sl_environment, "placement", placement),
};

static const i64_field record_i64s[] = {
    {"batch_size", offsetof(sl_record, batch_size)},
    {"warmup_batches", offsetof(sl_record, warmup_batches)},
    {"measured_batches", offsetof(sl_record, measured_batches)},
    {"elements", offsetof(sl_record, elements)},
    {"bytes", offsetof(sl_record, bytes)},
    {"first_batch_ns", offsetof(sl_record, first_batch_ns)},
    {"peak_rss_bytes", offsetof(sl_record, peak_rss_bytes)},
    {"workers", offsetof(sl_record, workers)},
    {"threads", offsetof(sl_record, threads)},
    {"adapter_memory_bytes", offsetof(sl_record, adapter_memory_bytes)},
    {"wall_ns", offsetof(sl_record, wall_ns)},
};

/* Figures derived from the latencies. They are written for readers of the
 * file and checked for presence on reading, but never read back: the
 * latencies they come from are. */
static const char *const derived_keys[] = {
    "elements_per_s",
    "elements_per_s_ci_low",
    "elements_per_s_ci_high",
    "mean_elements_per_s",
    "bytes_per_s",
    "p50_ns",
    "p95_ns",
    "p99_ns",
    "mean_ns",
    "min_ns",
    "max_ns",
    "median_all_ns",
    "median_ci_low_ns",
    "median_ci_high_ns",
};

/* The environment's measures of load, numbers. A record written before a
 * measure existed lacks it, and reads as -1 (unknown) there. */
static const struct {
    const char *key;
    size_t offset;
    bool optional;
} env_numbers[] = {
    {"load_start", offsetof(sl_environment, load_start), false},
    {"load_end", offsetof(sl_environment, load_end), false},
    {"steal_fraction", offsetof(sl_environment, steal_fraction), false},
    {"cpu_wait_fraction", offsetof(sl_environment, cpu_wait_fraction), true},
    {"anon_huge_bytes", offsetof(sl_environment, anon_huge_bytes), true},
    {"numa_nodes", offsetof(sl_environment, numa_nodes), true},
};

/* A record's strings may come from another program (a peer's stderr, a
 * framework's version); they are written as valid UTF-8, whatever bytes
 * they held, since the readers refuse anything else. */
static cJSON *utf8_string(const char *text)
{
    size_t length = strlen(text);
    if (sl__utf8_valid(text, length, NULL))
        return cJSON_CreateString(text);
    /* Each bad byte may become three. */
    char *copy = malloc(3 * length + 1);
    if (!copy)
        return NULL;
    memcpy(copy, text, length + 1);
    sl__utf8_sanitize(copy, 3 * length + 1);
    cJSON *string = cJSON_CreateString(copy);
    free(copy);
    return string;
}

static void put_texts(cJSON *object, const text_field *fields, size_t n, const void *base, bool *ok)
{
    for (size_t i = 0; i < n; i++)
        sl__json_put(object, fields[i].key, utf8_string((const char *)base + fields[i].offset), ok);
}

static cJSON *texts_object(const text_field *fields, size_t n, const void *base, bool *ok)
{
    cJSON *object = cJSON_CreateObject();
    if (object)
        put_texts(object, fields, n, base, ok);
    return object;
}

static cJSON *transforms_json(const char *list, bool *ok)
{
    cJSON *array = cJSON_CreateArray();
    for (const char *p = list; array && *p;) {
        size_t n = strcspn(p, ",");
        if (n > 0) {
            char name[sizeof((sl_record *)0)->transforms];
            snprintf(name, sizeof name, "%.*s", (int)n, p);
            sl__json_append(array, cJSON_CreateString(name), ok);
        }
        p += n + (p[n] == ',');
    }
    return array;
}

/* "entry=table,..." as {"entry": "table", ...}. */
static cJSON *kernel_choice_json(const char *list, bool *ok)
{
    cJSON *object = cJSON_CreateObject();
    for (const char *p = list; object && *p;) {
        size_t n = strcspn(p, ",");
        const char *eq = memchr(p, '=', n);
        if (eq) {
            char entry[64], table[64];
            snprintf(entry, sizeof entry, "%.*s", (int)(eq - p), p);
            snprintf(table, sizeof table, "%.*s", (int)(n - (size_t)(eq - p) - 1), eq + 1);
            sl__json_put(object, entry, cJSON_CreateString(table), ok);
        }
        p += n + (p[n] == ',');
    }
    return object;
}

static size_t latency_count(const sl_record *r)
{
    return r->latency_ns && r->measured_batches > 0 ? (size_t)r->measured_batches : 0;
}

static size_t sample_count(const sl_record *r)
{
    return r->samples_ns && r->measured_batches > 0 && r->repetitions > 0
               ? (size_t)r->measured_batches * (size_t)r->repetitions
               : 0;
}

static cJSON *i64_array_json(const int64_t *values, size_t n, bool *ok)
{
    cJSON *array = cJSON_CreateArray();
    for (size_t i = 0; array && i < n; i++)
        sl__json_append(array, cJSON_CreateNumber((double)values[i]), ok);
    return array;
}

bool sl_record_latency_ci(const sl_record *r, sl_median_ci *out)
{
    if (sample_count(r) > 0)
        return sl_median_ci_i64(r->samples_ns, sample_count(r), SL_CI_LEVEL, out);
    return sl_median_ci_i64(r->latency_ns, latency_count(r), SL_CI_LEVEL, out);
}

static cJSON *metrics_json(const sl_record *r, bool *ok)
{
    cJSON *array = cJSON_CreateArray();
    for (int i = 0; array && i < r->nmetrics && i < SL_RECORD_MAX_METRICS; i++) {
        cJSON *m = cJSON_CreateObject();
        if (m) {
            sl__json_put(m, "name", cJSON_CreateString(r->metrics[i].name), ok);
            /* cJSON writes a non-finite number as null; the reader maps null
             * back to NaN. */
            sl__json_put(m, "value", cJSON_CreateNumber(r->metrics[i].value), ok);
            sl__json_put(m, "unit", cJSON_CreateString(r->metrics[i].unit), ok);
            sl__json_put(m, "scope",
                         cJSON_CreateString(r->metrics[i].scope == SL_METRIC_SCENARIO ? "scenario" : "bench"), ok);
        }
        sl__json_append(array, m, ok);
    }
    return array;
}

static cJSON *environment_json(const sl_environment *env, bool *ok)
{
    cJSON *object = texts_object(env_texts, COUNT(env_texts), env, ok);
    if (object)
        put_texts(object, env_optional_texts, COUNT(env_optional_texts), env, ok);
    if (object)
        sl__json_put(object, "cpu_cores", cJSON_CreateNumber(env->cpu_cores), ok);
    for (size_t i = 0; object && i < COUNT(env_numbers); i++)
        sl__json_put(object, env_numbers[i].key,
                     cJSON_CreateNumber(*(const double *)((const char *)env + env_numbers[i].offset)), ok);
    return object;
}

/* The device object's figures of the record's own runs, optional (older
 * records lack them: -1 and ""). */
static sl_status read_device_runs(const cJSON *device, sl_record *r, const char *path, sl_err *err)
{
    r->device_allocated_peak_bytes = -1;
    r->device_source[0] = '\0';
    r->device_source_setup_ns = -1;
    const cJSON *peak = sl__json_member(device, "allocated_peak_bytes");
    sl_status status =
        peak ? sl__json_int64(peak, path, "device.allocated_peak_bytes", &r->device_allocated_peak_bytes, err) : SL_OK;
    const cJSON *source = sl__json_member(device, "source");
    if (status || !source)
        return status;
    status = sl__json_text(source, path, "device.source", r->device_source, sizeof r->device_source, err);
    if (status == SL_OK && strcmp(r->device_source, "resident") != 0 && strcmp(r->device_source, "streamed") != 0)
        return sl_fail(err, SL_EFORMAT, "%s: device.source is \"%s\", not \"resident\" or \"streamed\"", path,
                       r->device_source);
    if (status == SL_OK)
        status = sl__json_int64(sl__json_member(device, "source_setup_ns"), path, "device.source_setup_ns",
                                &r->device_source_setup_ns, err);
    return status;
}

static cJSON *record_json(const sl_record *r, const sl_environment *env)
{
    bool ok = true;
    cJSON *root = cJSON_CreateObject();
    if (!root)
        return NULL;
    sl__json_put(root, "schema_version", cJSON_CreateNumber(SL_RECORD_SCHEMA_VERSION), &ok);
    sl__json_put(root, "outcome", cJSON_CreateString(sl_record_outcome_name(r->outcome)), &ok);
    put_texts(root, record_texts, COUNT(record_texts), r, &ok);
    /* Only a peer's record names a framework: sluice's own are sluice. */
    if (r->framework[0])
        sl__json_put(root, "framework", utf8_string(r->framework), &ok);
    if (r->timing[0])
        sl__json_put(root, "timing", utf8_string(r->timing), &ok);
    if (r->note[0])
        sl__json_put(root, "note", utf8_string(r->note), &ok);
    sl__json_put(root, "backend", texts_object(backend_texts, COUNT(backend_texts), r, &ok), &ok);
    if (r->device_name[0]) {
        cJSON *device = texts_object(device_texts, COUNT(device_texts), r, &ok);
        if (device) {
            sl__json_put(device, "peak_memory_bytes", cJSON_CreateNumber((double)r->device_peak_memory_bytes), &ok);
            sl__json_put(device, "allocated_peak_bytes", cJSON_CreateNumber((double)r->device_allocated_peak_bytes),
                         &ok);
            /* Which path the source took, only from a record whose runs
             * ran. */
            if (r->device_source[0]) {
                sl__json_put(device, "source", cJSON_CreateString(r->device_source), &ok);
                sl__json_put(device, "source_setup_ns", cJSON_CreateNumber((double)r->device_source_setup_ns), &ok);
            }
        }
        sl__json_put(root, "device", device, &ok);
    }
    sl__json_put(root, "transforms", transforms_json(r->transforms, &ok), &ok);
    if (r->kernel_choice[0])
        sl__json_put(root, "kernel_choice", kernel_choice_json(r->kernel_choice, &ok), &ok);
    if (r->roofline_kernels[0])
        sl__json_put(root, "roofline_kernels", cJSON_CreateString(r->roofline_kernels), &ok);
    sl__json_put(root, "seed", sl__json_u64_text(r->seed), &ok);
    for (size_t i = 0; i < COUNT(record_i64s); i++) {
        int64_t value = *(const int64_t *)((const char *)r + record_i64s[i].offset);
        sl__json_put(root, record_i64s[i].key, cJSON_CreateNumber((double)value), &ok);
    }
    sl__json_put(root, "peak_rss_method", cJSON_CreateString(r->peak_rss_method), &ok);
    sl__json_put(root, "repetitions", cJSON_CreateNumber(r->repetitions), &ok);
    sl__json_put(root, "rounds", cJSON_CreateNumber(r->rounds), &ok);
    sl__json_put(root, "repetition_kept", cJSON_CreateNumber(r->repetition_kept), &ok);
    sl__json_put(root, "repetition_elements_per_s",
                 cJSON_CreateDoubleArray(r->repetition_elements_per_s, r->repetitions), &ok);
    if (r->repetitions > 0 && r->repetition_process[r->repetitions - 1] > 0)
        sl__json_put(root, "repetition_process", cJSON_CreateIntArray(r->repetition_process, r->repetitions), &ok);
    sl__json_put(root, "output_digest", sl__json_hex64(r->output_digest), &ok);

    sl_latency_summary s;
    sl_latency_summarize(r->latency_ns, latency_count(r), &s);
    sl_throughput t;
    bool has = sl_record_throughput(r, &t);
    /* An interval end is infinite only for a batch measured at 0 ns; JSON
     * has no infinity, and 0 says "no figure" as for a run without one. */
    double rate_hi = has && isfinite(t.rate_hi) ? t.rate_hi : 0.0;
    const double derived[COUNT(derived_keys)] = {
        has ? t.rate : 0.0,
        has ? t.rate_lo : 0.0,
        rate_hi,
        has ? t.mean_rate : 0.0,
        sl_record_bytes_per_s(r),
        s.p50_ns,
        s.p95_ns,
        s.p99_ns,
        s.mean_ns,
        s.min_ns,
        s.max_ns,
        has ? t.median_ns : 0.0,
        has ? t.lo_ns : 0.0,
        has ? t.hi_ns : 0.0,
    };
    for (size_t i = 0; i < COUNT(derived_keys); i++)
        sl__json_put(root, derived_keys[i], cJSON_CreateNumber(derived[i]), &ok);
    char reason[512] = "";
    if (has)
        sl_throughput_noise_reason(&t, reason, sizeof reason);
    sl__json_put(root, "noisy", cJSON_CreateBool(has && t.noisy), &ok);
    sl__json_put(root, "noisy_reason", cJSON_CreateString(reason), &ok);
    sl__json_put(root, "latency_ns", i64_array_json(r->latency_ns, latency_count(r), &ok), &ok);
    sl__json_put(root, "samples_ns", i64_array_json(r->samples_ns, sample_count(r), &ok), &ok);
    sl__json_put(root, "metrics", metrics_json(r, &ok), &ok);
    sl__json_put(root, "environment", environment_json(env, &ok), &ok);
    if (!ok) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

/* What makes a record impossible to write faithfully: the repetition count
 * indexes a fixed table, and the reader refuses an ok record without its
 * latencies, so writing such a file would only postpone the error. */
static const char *unwritable(const sl_record *r)
{
    if (r->repetitions < 0 || r->repetitions > SL_RECORD_MAX_REPETITIONS)
        return "repetitions is outside 0 to SL_RECORD_MAX_REPETITIONS";
    if (r->outcome == SL_RECORD_OK && r->measured_batches > 0 && !r->latency_ns)
        return "an ok record needs the latencies of its measured batches";
    return NULL;
}

char *sl_record_to_json(const sl_record *record, const sl_environment *env)
{
    /* A record means nothing without the machine that made it. */
    if (!env || unwritable(record))
        return NULL;
    cJSON *root = record_json(record, env);
    char *text = root ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    return text;
}

sl_status sl_record_write(const sl_record *record, const sl_environment *env, const char *path, sl_err *err)
{
    const char *problem = env ? unwritable(record) : "a record needs the environment it was measured in";
    if (problem)
        return sl_fail(err, SL_EINVAL, "cannot write %s: %s", path, problem);
    char *text = sl_record_to_json(record, env);
    if (!text)
        return sl_fail(err, SL_ENOMEM, "cannot write %s: out of memory while building the JSON", path);
    sl_status status = sl_write_file_atomic(path, text, strlen(text), err);
    free(text);
    return status;
}

/* Reading. Each step returns the first problem it finds, named. */

static sl_status read_texts(const cJSON *object, const char *prefix, const text_field *fields, size_t n, void *base,
                            const char *path, sl_err *err)
{
    for (size_t i = 0; i < n; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s%s", prefix, fields[i].key);
        sl_status status = sl__json_text(sl__json_member(object, fields[i].key), path, name,
                                         (char *)base + fields[i].offset, fields[i].size, err);
        if (status != SL_OK)
            return status;
    }
    return SL_OK;
}

static sl_status read_int(const cJSON *object, const char *key, const char *name, int lo, int hi, int *out,
                          const char *path, sl_err *err)
{
    int64_t v;
    sl_status status = sl__json_int64(sl__json_member(object, key), path, name, &v, err);
    if (status != SL_OK)
        return status;
    if (v < lo || v > hi)
        return sl_fail(err, SL_EFORMAT, "%s: field '%s' must be between %d and %d, found %lld", path, name, lo, hi,
                       (long long)v);
    *out = (int)v;
    return SL_OK;
}

static sl_status read_header(const cJSON *root, sl_record *r, const char *path, sl_err *err)
{
    int64_t version;
    sl_status status = sl__json_int64(sl__json_member(root, "schema_version"), path, "schema_version", &version, err);
    if (status != SL_OK)
        return status;
    if (version != SL_RECORD_SCHEMA_VERSION)
        return sl_fail(err, SL_EFORMAT,
                       "%s: field 'schema_version' is %lld, but this build reads version %d (records of another "
                       "version come from another sluice; run `sluice bench` again to compare them)",
                       path, (long long)version, SL_RECORD_SCHEMA_VERSION);
    status = read_texts(root, "", record_texts, COUNT(record_texts), r, path, err);
    const cJSON *framework = sl__json_member(root, "framework");
    if (status == SL_OK && framework)
        status = sl__json_text(framework, path, "framework", r->framework, sizeof r->framework, err);
    const cJSON *timing = sl__json_member(root, "timing");
    if (status == SL_OK && timing)
        status = sl__json_text(timing, path, "timing", r->timing, sizeof r->timing, err);
    const cJSON *note = sl__json_member(root, "note");
    if (status == SL_OK && note)
        status = sl__json_text(note, path, "note", r->note, sizeof r->note, err);
    const cJSON *backend = sl__json_member(root, "backend");
    if (status == SL_OK)
        status = sl__json_expect(backend, cJSON_Object, path, "backend", err);
    if (status == SL_OK)
        status = read_texts(backend, "backend.", backend_texts, COUNT(backend_texts), r, path, err);
    const cJSON *device = sl__json_member(root, "device");
    if (status == SL_OK && device) {
        status = sl__json_expect(device, cJSON_Object, path, "device", err);
        if (status == SL_OK)
            status = read_texts(device, "device.", device_texts, COUNT(device_texts), r, path, err);
        if (status == SL_OK)
            status = sl__json_int64(sl__json_member(device, "peak_memory_bytes"), path, "device.peak_memory_bytes",
                                    &r->device_peak_memory_bytes, err);
        status = status ? status : read_device_runs(device, r, path, err);
    }
    for (size_t i = 0; status == SL_OK && i < COUNT(record_i64s); i++)
        status = sl__json_int64(sl__json_member(root, record_i64s[i].key), path, record_i64s[i].key,
                                (int64_t *)((char *)r + record_i64s[i].offset), err);
    if (status == SL_OK)
        status = sl__json_text(sl__json_member(root, "peak_rss_method"), path, "peak_rss_method", r->peak_rss_method,
                               sizeof r->peak_rss_method, err);
    if (status == SL_OK)
        status = sl__json_u64_value(sl__json_member(root, "seed"), path, "seed", &r->seed, err);
    if (status == SL_OK)
        status =
            sl__json_hex64_value(sl__json_member(root, "output_digest"), path, "output_digest", &r->output_digest, err);
    for (size_t i = 0; status == SL_OK && i < COUNT(derived_keys); i++)
        status = sl__json_expect(sl__json_member(root, derived_keys[i]), cJSON_Number, path, derived_keys[i], err);
    return status;
}

static sl_status read_outcome(const cJSON *root, sl_record *r, const char *path, sl_err *err)
{
    const cJSON *item = sl__json_member(root, "outcome");
    sl_status status = sl__json_expect(item, cJSON_String, path, "outcome", err);
    if (status != SL_OK)
        return status;
    for (int i = 0; i < OUTCOME_COUNT; i++) {
        if (strcmp(item->valuestring, outcome_names[i]) == 0) {
            r->outcome = (sl_record_outcome)i;
            return SL_OK;
        }
    }
    char names[160] = "";
    for (int i = 0; i < OUTCOME_COUNT; i++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "", outcome_names[i]);
    return sl_fail(err, SL_EFORMAT, "%s: field 'outcome' must be one of %s, found \"%.40s\"", path, names,
                   item->valuestring);
}

static sl_status read_transforms(const cJSON *root, sl_record *r, const char *path, sl_err *err)
{
    const cJSON *array = sl__json_member(root, "transforms");
    sl_status status = sl__json_expect(array, cJSON_Array, path, "transforms", err);
    if (status != SL_OK)
        return status;
    size_t used = 0;
    int i = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, array)
    {
        char name[32];
        snprintf(name, sizeof name, "transforms[%d]", i++);
        if ((status = sl__json_expect(item, cJSON_String, path, name, err)) != SL_OK)
            return status;
        int n = snprintf(r->transforms + used, sizeof r->transforms - used, "%s%s", used ? "," : "", item->valuestring);
        if (n < 0 || (size_t)n >= sizeof r->transforms - used)
            return sl_fail(err, SL_EFORMAT, "%s: field 'transforms' lists more than %zu characters of names", path,
                           sizeof r->transforms - 1);
        used += (size_t)n;
    }
    return SL_OK;
}

/* The optional per-entry kernel choice and roofline table (records from
 * before them have neither). */
static sl_status read_kernel_choice(const cJSON *root, sl_record *r, const char *path, sl_err *err)
{
    const cJSON *roofline = sl__json_member(root, "roofline_kernels");
    sl_status status = roofline ? sl__json_text(roofline, path, "roofline_kernels", r->roofline_kernels,
                                                sizeof r->roofline_kernels, err)
                                : SL_OK;
    const cJSON *object = sl__json_member(root, "kernel_choice");
    if (status != SL_OK || !object)
        return status;
    if ((status = sl__json_expect(object, cJSON_Object, path, "kernel_choice", err)) != SL_OK)
        return status;
    size_t used = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, object)
    {
        char name[96];
        snprintf(name, sizeof name, "kernel_choice.%.64s", item->string);
        if ((status = sl__json_expect(item, cJSON_String, path, name, err)) != SL_OK)
            return status;
        if (strchr(item->string, ',') || strchr(item->string, '=') || strchr(item->valuestring, ','))
            return sl_fail(err, SL_EFORMAT, "%s: field '%s' holds a ',' or '=', which no kernel or table name has",
                           path, name);
        int n = snprintf(r->kernel_choice + used, sizeof r->kernel_choice - used, "%s%s=%s", used ? "," : "",
                         item->string, item->valuestring);
        if (n < 0 || (size_t)n >= sizeof r->kernel_choice - used)
            return sl_fail(err, SL_EFORMAT, "%s: field 'kernel_choice' names more than %zu characters", path,
                           sizeof r->kernel_choice - 1);
        used += (size_t)n;
    }
    return SL_OK;
}

/* The process of each repetition: absent for one run; otherwise one entry
 * per repetition, starting at 0 and growing by 0 or 1. */
static sl_status read_repetition_process(const cJSON *root, sl_record *r, const char *path, sl_err *err)
{
    memset(r->repetition_process, 0, sizeof r->repetition_process);
    const cJSON *array = sl__json_member(root, "repetition_process");
    if (!array)
        return SL_OK;
    sl_status status = sl__json_expect(array, cJSON_Array, path, "repetition_process", err);
    if (status != SL_OK)
        return status;
    if (cJSON_GetArraySize(array) != r->repetitions)
        return sl_fail(err, SL_EFORMAT, "%s: field 'repetition_process' has %d entries, but repetitions is %d", path,
                       cJSON_GetArraySize(array), r->repetitions);
    int i = 0, previous = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, array)
    {
        int value = cJSON_IsNumber(item) ? item->valueint : -1;
        if (!cJSON_IsNumber(item) || item->valuedouble != (double)value || value < previous || value > previous + 1 ||
            (i == 0 && value != 0))
            return sl_fail(err, SL_EFORMAT,
                           "%s: field 'repetition_process[%d]' is not a process number (0 first, then the same or "
                           "one more than the one before)",
                           path, i);
        r->repetition_process[i++] = value;
        previous = value;
    }
    return SL_OK;
}

static sl_status read_repetitions(const cJSON *root, sl_record *r, const char *path, sl_err *err)
{
    sl_status status =
        read_int(root, "repetitions", "repetitions", 0, SL_RECORD_MAX_REPETITIONS, &r->repetitions, path, err);
    if (status == SL_OK)
        status = read_int(root, "rounds", "rounds", 0, SL_RECORD_MAX_REPETITIONS, &r->rounds, path, err);
    if (status == SL_OK)
        status = read_int(root, "repetition_kept", "repetition_kept", 0, r->repetitions ? r->repetitions - 1 : 0,
                          &r->repetition_kept, path, err);
    const cJSON *array = sl__json_member(root, "repetition_elements_per_s");
    if (status == SL_OK)
        status = sl__json_expect(array, cJSON_Array, path, "repetition_elements_per_s", err);
    if (status != SL_OK)
        return status;
    if (cJSON_GetArraySize(array) != r->repetitions)
        return sl_fail(err, SL_EFORMAT, "%s: field 'repetition_elements_per_s' has %d entries, but repetitions is %d",
                       path, cJSON_GetArraySize(array), r->repetitions);
    int i = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, array)
    {
        char name[48];
        snprintf(name, sizeof name, "repetition_elements_per_s[%d]", i);
        if ((status = sl__json_expect(item, cJSON_Number, path, name, err)) != SL_OK)
            return status;
        r->repetition_elements_per_s[i++] = item->valuedouble;
    }
    return read_repetition_process(root, r, path, err);
}

/* Reads an array of non-negative nanosecond counts that must have `expected`
 * entries, or none in a record that did not run. */
static sl_status read_ns_array(const cJSON *root, const char *key, int64_t expected, const sl_record *r, int64_t **out,
                               const char *path, sl_err *err)
{
    const cJSON *array = sl__json_member(root, key);
    sl_status status = sl__json_expect(array, cJSON_Array, path, key, err);
    if (status != SL_OK)
        return status;
    int64_t n = cJSON_GetArraySize(array);
    /* An excluded, skipped or failed run may have measured nothing. */
    bool ran = r->outcome == SL_RECORD_OK || r->outcome == SL_RECORD_MISMATCH;
    if (n != expected && !(n == 0 && !ran))
        return sl_fail(err, SL_EFORMAT, "%s: field '%s' has %lld entries, but the record measured %lld", path, key,
                       (long long)n, (long long)expected);
    if (n == 0)
        return SL_OK;
    *out = malloc((size_t)n * sizeof **out);
    if (!*out)
        return sl_fail(err, SL_ENOMEM, "%s: no memory for %lld entries of '%s'", path, (long long)n, key);
    int64_t i = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, array)
    {
        char name[48];
        snprintf(name, sizeof name, "%s[%lld]", key, (long long)i);
        if ((status = sl__json_int64(item, path, name, &(*out)[i], err)) != SL_OK)
            return status;
        if ((*out)[i++] < 0)
            return sl_fail(err, SL_EFORMAT, "%s: field '%s' is negative", path, name);
    }
    return SL_OK;
}

/* A run's batches sum to its wall time, which is far below 2^63 ns (292
 * years); a sum past that is a damaged or crafted file. */
static sl_status check_sum(const int64_t *values, int64_t n, const char *key, const char *path, sl_err *err)
{
    int64_t total = 0;
    for (int64_t i = 0; values && i < n; i++)
        if (__builtin_add_overflow(total, values[i], &total))
            return sl_fail(err, SL_EFORMAT, "%s: field '%s' sums past 2^63 ns at entry %lld; not a run's latencies",
                           path, key, (long long)i);
    return SL_OK;
}

static sl_status read_latencies(const cJSON *root, sl_record *r, const char *path, sl_err *err)
{
    sl_status status = read_ns_array(root, "latency_ns", r->measured_batches, r, &r->latency_ns, path, err);
    if (status == SL_OK)
        status = check_sum(r->latency_ns, r->latency_ns ? r->measured_batches : 0, "latency_ns", path, err);
    if (status == SL_OK)
        status = read_ns_array(root, "samples_ns", r->measured_batches * r->repetitions, r, &r->samples_ns, path, err);
    const cJSON *noisy = sl__json_member(root, "noisy");
    if (status == SL_OK && !cJSON_IsBool(noisy))
        status = sl_fail(err, SL_EFORMAT, "%s: field 'noisy' must be true or false%s", path,
                         noisy ? "" : ", and is missing");
    if (status == SL_OK)
        status = sl__json_expect(sl__json_member(root, "noisy_reason"), cJSON_String, path, "noisy_reason", err);
    return status;
}

static sl_status read_metrics(const cJSON *root, sl_record *r, const char *path, sl_err *err)
{
    const cJSON *array = sl__json_member(root, "metrics");
    sl_status status = sl__json_expect(array, cJSON_Array, path, "metrics", err);
    if (status != SL_OK)
        return status;
    if (cJSON_GetArraySize(array) > SL_RECORD_MAX_METRICS)
        return sl_fail(err, SL_EFORMAT, "%s: field 'metrics' has %d entries, more than the %d a record holds", path,
                       cJSON_GetArraySize(array), SL_RECORD_MAX_METRICS);
    const cJSON *item;
    cJSON_ArrayForEach(item, array)
    {
        sl_record_metric *m = &r->metrics[r->nmetrics];
        char prefix[24], name[48];
        snprintf(prefix, sizeof prefix, "metrics[%d]", r->nmetrics++);
        const cJSON *value = sl__json_member(item, "value");
        status = sl__json_expect(item, cJSON_Object, path, prefix, err);
        snprintf(name, sizeof name, "%s.name", prefix);
        if (status == SL_OK)
            status = sl__json_text(sl__json_member(item, "name"), path, name, m->name, sizeof m->name, err);
        snprintf(name, sizeof name, "%s.unit", prefix);
        if (status == SL_OK)
            status = sl__json_text(sl__json_member(item, "unit"), path, name, m->unit, sizeof m->unit, err);
        snprintf(name, sizeof name, "%s.value", prefix);
        if (status == SL_OK && !cJSON_IsNull(value))
            status = sl__json_expect(value, cJSON_Number, path, name, err);
        /* Records written before scenario metrics existed have no scope:
         * every metric they hold is a bench metric. */
        const cJSON *scope = sl__json_member(item, "scope");
        m->scope = SL_METRIC_BENCH;
        if (status == SL_OK && scope) {
            char scope_name[16];
            snprintf(name, sizeof name, "%s.scope", prefix);
            status = sl__json_text(scope, path, name, scope_name, sizeof scope_name, err);
            if (status == SL_OK && strcmp(scope_name, "scenario") == 0)
                m->scope = SL_METRIC_SCENARIO;
            else if (status == SL_OK && strcmp(scope_name, "bench") != 0)
                status = sl_fail(err, SL_EFORMAT, "%s: field '%s' is '%s', not 'bench' or 'scenario'", path, name,
                                 scope_name);
        }
        if (status != SL_OK)
            return status;
        m->value = cJSON_IsNull(value) ? NAN : value->valuedouble;
    }
    return SL_OK;
}

static sl_status read_environment(const cJSON *root, sl_environment *env, const char *path, sl_err *err)
{
    const cJSON *object = sl__json_member(root, "environment");
    sl_status status = sl__json_expect(object, cJSON_Object, path, "environment", err);
    if (status == SL_OK)
        status = read_texts(object, "environment.", env_texts, COUNT(env_texts), env, path, err);
    for (size_t i = 0; status == SL_OK && i < COUNT(env_optional_texts); i++) {
        const text_field *field = &env_optional_texts[i];
        char *text = (char *)env + field->offset;
        const cJSON *item = sl__json_member(object, field->key);
        char name[48];
        snprintf(name, sizeof name, "environment.%s", field->key);
        if (item)
            status = sl__json_text(item, path, name, text, field->size, err);
        else
            text[0] = '\0';
    }
    if (status == SL_OK)
        status = read_int(object, "cpu_cores", "environment.cpu_cores", 0, 1 << 20, &env->cpu_cores, path, err);
    for (size_t i = 0; status == SL_OK && i < COUNT(env_numbers); i++) {
        char name[48];
        snprintf(name, sizeof name, "environment.%s", env_numbers[i].key);
        const cJSON *item = sl__json_member(object, env_numbers[i].key);
        if (!item && env_numbers[i].optional) {
            *(double *)((char *)env + env_numbers[i].offset) = -1.0;
            continue;
        }
        status = sl__json_expect(item, cJSON_Number, path, name, err);
        if (status == SL_OK)
            *(double *)((char *)env + env_numbers[i].offset) = item->valuedouble;
    }
    return status;
}

/* Counts that no run can produce: a negative count, size or time (a
 * memory figure may be -1, "not measured"), or a run that measured with no
 * batches, rows, or elements beyond what its batches hold, or whose every
 * batch took 0 ns. Such a file was damaged or made by hand, and a figure
 * derived from it (elements/s) would be nonsense. */
static sl_status check_counts(const sl_record *r, const char *path, sl_err *err)
{
    for (size_t i = 0; i < COUNT(record_i64s); i++) {
        const char *key = record_i64s[i].key;
        int64_t value = *(const int64_t *)((const char *)r + record_i64s[i].offset);
        int64_t least = strcmp(key, "peak_rss_bytes") == 0 || strcmp(key, "adapter_memory_bytes") == 0 ? -1 : 0;
        if (value < least)
            return sl_fail(err, SL_EFORMAT, "%s: field '%s' is %lld; it cannot be below %lld", path, key,
                           (long long)value, (long long)least);
    }
    bool measured = (r->outcome == SL_RECORD_OK || r->outcome == SL_RECORD_MISMATCH) && r->latency_ns;
    if (!measured)
        return SL_OK;
    if (r->batch_size < 1 || r->measured_batches < 1 || r->elements < 1)
        return sl_fail(err, SL_EFORMAT,
                       "%s: fields 'batch_size' (%lld), 'measured_batches' (%lld) and 'elements' (%lld) must be "
                       "positive in a record that measured",
                       path, (long long)r->batch_size, (long long)r->measured_batches, (long long)r->elements);
    if (r->elements / r->measured_batches > r->batch_size ||
        (r->elements / r->measured_batches == r->batch_size && r->elements % r->measured_batches != 0))
        return sl_fail(err, SL_EFORMAT, "%s: field 'elements' is %lld, more than %lld batches of %lld rows can hold",
                       path, (long long)r->elements, (long long)r->measured_batches, (long long)r->batch_size);
    bool ticked = false;
    for (int64_t i = 0; i < r->measured_batches && !ticked; i++)
        ticked = r->latency_ns[i] > 0;
    if (!ticked)
        return sl_fail(err, SL_EFORMAT,
                       "%s: field 'latency_ns' is 0 ns for every measured batch; no run measures that (the file was "
                       "damaged or edited)",
                       path);
    return SL_OK;
}

sl_status sl_record_read(const char *path, sl_record *record, sl_environment *env, sl_err *err)
{
    sl_environment scratch;
    if (!env)
        env = &scratch;
    memset(record, 0, sizeof *record);
    memset(env, 0, sizeof *env);
    cJSON *root;
    sl_status status = sl__json_parse_file(path, &root, err);
    if (status != SL_OK)
        return status;
    status = read_header(root, record, path, err);
    if (status == SL_OK)
        status = read_outcome(root, record, path, err);
    if (status == SL_OK)
        status = read_transforms(root, record, path, err);
    if (status == SL_OK)
        status = read_kernel_choice(root, record, path, err);
    if (status == SL_OK)
        status = read_repetitions(root, record, path, err);
    if (status == SL_OK)
        status = read_latencies(root, record, path, err);
    if (status == SL_OK)
        status = read_metrics(root, record, path, err);
    if (status == SL_OK)
        status = read_environment(root, env, path, err);
    if (status == SL_OK)
        status = check_counts(record, path, err);
    cJSON_Delete(root);
    if (status != SL_OK)
        sl_record_release(record);
    return status;
}

void sl_record_release(sl_record *record)
{
    free(record->latency_ns);
    record->latency_ns = NULL;
    free(record->samples_ns);
    record->samples_ns = NULL;
}

/* The environment object as records write and read it, for the other files
 * of this layer that keep an environment (the history's runs and
 * machines), so that they cannot drift from the records'. */
cJSON *sl__environment_to_json(const sl_environment *env, bool *ok)
{
    return environment_json(env, ok);
}

sl_status sl__environment_from_json(const cJSON *holder, sl_environment *env, const char *path, sl_err *err)
{
    return read_environment(holder, env, path, err);
}

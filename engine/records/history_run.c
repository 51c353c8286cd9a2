/* One run of a history (sluice/records/history.h): made from a records folder, its
 * instruction counts added, and written and read as JSON. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/json.h"
#include "environment_json.h"
#include "sluice/core/digest.h"
#include "sluice/core/fileio.h"
#include "sluice/core/stats.h"
#include "sluice/records/history.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* The one place the history takes its figure from a record: when the
 * record's headline statistic changes (docs/records.md), this changes and
 * nothing else in the history does. */
bool sl_history_figure_of(const sl_record *record, sl_history_figure *out)
{
    memset(out, 0, sizeof *out);
    /* The headline figure of every other view (docs/records.md): the median
     * batch time over every repetition, with its order-statistic interval. */
    sl_throughput t;
    if (record->outcome != SL_RECORD_OK || record->measured_batches <= 0 || record->elements <= 0 ||
        !sl_record_throughput(record, &t) || !(t.median_ns > 0.0))
        return false;
    out->median_ns = t.median_ns;
    out->low_ns = t.lo_ns;
    out->high_ns = t.hi_ns;
    out->elements_per_batch = t.per_batch;
    return true;
}

static double rate_at(const sl_history_figure *figure, double ns)
{
    return ns > 0.0 ? figure->elements_per_batch * 1e9 / ns : 0.0;
}

double sl_history_rate(const sl_history_figure *figure)
{
    return rate_at(figure, figure->median_ns);
}

double sl_history_rate_low(const sl_history_figure *figure)
{
    return rate_at(figure, figure->high_ns);
}

double sl_history_rate_high(const sl_history_figure *figure)
{
    return rate_at(figure, figure->low_ns);
}

/* sluice's own version leads library_versions ("sluice 0.1.0; cJSON ...");
 * a release of sluice is code, not a machine, so it is left out. */
static const char *libraries_but_sluice(const char *versions)
{
    if (strncmp(versions, "sluice ", 7) == 0) {
        const char *rest = strstr(versions, "; ");
        return rest ? rest + 2 : "";
    }
    return versions;
}

void sl_history_machine_id(const sl_environment *env, char *id, size_t size)
{
    char text[1024];
    int n = snprintf(text, sizeof text, "%s\n%d\n%s\n%s\n%s\n%s", env->cpu_model, env->cpu_cores, env->kernel,
                     env->compiler, env->compile_flags, libraries_but_sluice(env->library_versions));
    uint64_t digest = sl_digest_bytes(text, n > 0 && (size_t)n < sizeof text ? (size_t)n : strlen(text));
    snprintf(id, size, "%016" PRIx64, digest);
}

void sl_history_machine_label(const sl_environment *env, char *buf, size_t size)
{
    snprintf(buf, size, "%s, %d CPU%s, %s, %s", env->cpu_model, env->cpu_cores, env->cpu_cores == 1 ? "" : "s",
             env->kernel, env->compiler);
}

/* A commit id as git prints it: 7 to 40 lowercase hex digits. It becomes
 * part of a file name, so nothing else may pass. */
static bool is_commit_id(const char *text)
{
    size_t n = strlen(text);
    return n >= 7 && n <= 40 && strspn(text, "0123456789abcdef") == n;
}

static void copy_row(const sl_record *r, sl_history_row *row)
{
    memset(row, 0, sizeof *row);
    sl__copy_string(row->key.scenario, sizeof row->key.scenario, r->scenario);
    sl__copy_string(row->key.variant, sizeof row->key.variant, r->variant);
    sl__copy_string(row->key.adapter, sizeof row->key.adapter, r->adapter);
    sl__copy_string(row->key.profile, sizeof row->key.profile, r->profile);
    sl__copy_string(row->key.kernels, sizeof row->key.kernels, r->kernels);
    sl__copy_string(row->reason, sizeof row->reason, r->reason);
    sl__copy_string(row->equivalence, sizeof row->equivalence, r->equivalence);
    row->key.threads = r->threads;
    row->key.workers = r->workers;
    row->batch_size = r->batch_size;
    row->outcome = r->outcome;
    row->output_digest = r->output_digest;
    row->instructions = -1;
    sl__copy_string(row->kernel_choice, sizeof row->kernel_choice, r->kernel_choice);
}

/* The samples behind the figure: every repetition's batches, or the kept
 * repetition's in a record without them. */
static sl_status copy_samples(const sl_record *r, sl_history_row *row, const char *path, sl_err *err)
{
    const int64_t *from = r->samples_ns;
    int64_t n = r->samples_ns ? r->measured_batches * r->repetitions : 0;
    if (n <= 0) {
        from = r->latency_ns;
        n = r->latency_ns ? r->measured_batches : 0;
    }
    row->samples_ns = malloc((size_t)(n > 0 ? n : 1) * sizeof *row->samples_ns);
    if (!row->samples_ns)
        return sl_fail(err, SL_ENOMEM, "%s: out of memory for %" PRId64 " samples", path, n);
    memcpy(row->samples_ns, from, (size_t)n * sizeof *row->samples_ns);
    row->nsamples = n;
    return SL_OK;
}

sl_status sl_history_run_from_records(const sl_record_set *set, const char *records_dir, int64_t position,
                                      const char *commit_time, sl_history_run *run, sl_err *err)
{
    memset(run, 0, sizeof *run);
    if (set->count == 0)
        return sl_fail(err, SL_EINVAL, "%s: no records (run `sluice bench` first)", records_dir);
    if (position < 0)
        return sl_fail(err, SL_EINVAL, "%s: position %" PRId64 " is negative", records_dir, position);
    const sl_environment *env = &set->environments[0];
    if (!is_commit_id(env->git_commit))
        return sl_fail(err, SL_EINVAL,
                       "%s: environment.git_commit \"%.48s\" is not a commit id (7 to 40 lowercase hex digits); a "
                       "history files runs of builds made from a git checkout",
                       set->paths[0], env->git_commit);
    char machine[24];
    sl_history_machine_id(env, machine, sizeof machine);
    for (int i = 1; i < set->count; i++) {
        char other[24];
        sl_history_machine_id(&set->environments[i], other, sizeof other);
        if (strcmp(set->environments[i].git_commit, env->git_commit) != 0)
            return sl_fail(err, SL_EMISMATCH,
                           "%s: commit %.48s, but %s is of commit %.48s; a run holds the records of one commit",
                           set->paths[i], set->environments[i].git_commit, set->paths[0], env->git_commit);
        if (strcmp(other, machine) != 0)
            return sl_fail(err, SL_EMISMATCH,
                           "%s: measured on another machine than %s (CPU, kernel, compiler, flags or libraries "
                           "differ); a run holds the records of one machine",
                           set->paths[i], set->paths[0]);
    }
    run->rows = calloc((size_t)set->count, sizeof *run->rows);
    if (!run->rows)
        return sl_fail(err, SL_ENOMEM, "%s: out of memory for %d rows", records_dir, set->count);
    sl__copy_string(run->commit, sizeof run->commit, env->git_commit);
    sl__copy_string(run->commit_time, sizeof run->commit_time, commit_time ? commit_time : "");
    sl__copy_string(run->machine, sizeof run->machine, machine);
    run->environment = *env;
    run->position = position;
    for (int i = 0; i < set->count; i++) {
        sl_history_row *row = &run->rows[run->nrows++];
        copy_row(&set->records[i], row);
        row->measured = sl_history_figure_of(&set->records[i], &row->figure);
        if (row->measured) {
            sl_status status = copy_samples(&set->records[i], row, set->paths[i], err);
            if (status != SL_OK) {
                sl_history_run_free(run);
                return status;
            }
        }
    }
    return SL_OK;
}

int sl_history_run_processes(const sl_history_run *run)
{
    int most = 0;
    for (int i = 0; i < run->nrows; i++)
        if (run->rows[i].process + 1 > most)
            most = run->rows[i].process + 1;
    return most;
}

sl_status sl_history_run_add_process(sl_history_run *run, sl_history_run *other, const char *records_dir, sl_err *err)
{
    if (strcmp(run->commit, other->commit) != 0)
        return sl_fail(err, SL_EMISMATCH,
                       "%s: commit %s, but the run's first records are of commit %s; a run holds "
                       "the processes of one commit",
                       records_dir, other->commit, run->commit);
    if (strcmp(run->machine, other->machine) != 0)
        return sl_fail(err, SL_EMISMATCH,
                       "%s: measured on machine %s, but the run's first records on %s; a run holds "
                       "the processes of one machine",
                       records_dir, other->machine, run->machine);
    if (sl_history_run_processes(run) >= SL_HISTORY_MAX_PROCESSES)
        return sl_fail(err, SL_EINVAL, "%s: a run holds at most %d processes", records_dir, SL_HISTORY_MAX_PROCESSES);
    sl_history_row *grown = realloc(run->rows, (size_t)(run->nrows + other->nrows) * sizeof *grown);
    if (!grown)
        return sl_fail(err, SL_ENOMEM, "%s: out of memory for %d rows", records_dir, run->nrows + other->nrows);
    run->rows = grown;
    int process = sl_history_run_processes(run);
    for (int i = 0; i < other->nrows; i++) {
        run->rows[run->nrows] = other->rows[i];
        run->rows[run->nrows++].process = process;
    }
    /* The samples now belong to run. */
    other->nrows = 0;
    sl_history_run_free(other);
    return SL_OK;
}

void sl_history_run_free(sl_history_run *run)
{
    for (int i = 0; i < run->nrows; i++)
        free(run->rows[i].samples_ns);
    free(run->rows);
    free(run->path);
    memset(run, 0, sizeof *run);
}

/* --- instruction counts ------------------------------------------------------ */

sl_status sl_history_run_add_instructions(sl_history_run *run, const char *path, sl_err *err)
{
    char *text;
    size_t size;
    sl_status status = sl_read_file(path, &text, &size, err);
    if (status != SL_OK)
        return status;
    int line = 0;
    for (char *p = text; status == SL_OK && *p;) {
        char *end = p + strcspn(p, "\n");
        bool last = *end == '\0';
        *end = '\0';
        line++;
        char scenario[64], variant[64], adapter[64], count[32];
        char extra;
        if (*p == '\0') {
            /* A blank line says nothing. */
        } else if (sscanf(p, "%63[^\t]\t%63[^\t]\t%63[^\t]\t%31[^\t]%c", scenario, variant, adapter, count, &extra) !=
                   4) {
            status = sl_fail(err, SL_EFORMAT,
                             "%s: line %d is not SCENARIO<TAB>VARIANT<TAB>ADAPTER<TAB>COUNT "
                             "(ci/count-instructions.sh writes these)",
                             path, line);
        } else if (strcmp(count, "-") != 0) {
            char *stop;
            errno = 0;
            long long value = strtoll(count, &stop, 10);
            if (errno || *stop || stop == count || value <= 0) {
                status = sl_fail(err, SL_EFORMAT, "%s: line %d: count '%.31s' is not a positive whole number", path,
                                 line, count);
            } else {
                for (int i = 0; i < run->nrows; i++) {
                    sl_history_row *row = &run->rows[i];
                    if (strcmp(row->key.scenario, scenario) == 0 && strcmp(row->key.variant, variant) == 0 &&
                        strcmp(row->key.adapter, adapter) == 0)
                        row->instructions = value;
                }
            }
        }
        p = last ? end : end + 1;
    }
    free(text);
    return status;
}

/* --- JSON ----------------------------------------------------------------------- */

#define RUN_FORMAT "sluice-history-run"

static cJSON *row_json(const sl_history_row *row, bool *ok)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    sl__json_put(o, "scenario", cJSON_CreateString(row->key.scenario), ok);
    sl__json_put(o, "variant", cJSON_CreateString(row->key.variant), ok);
    sl__json_put(o, "adapter", cJSON_CreateString(row->key.adapter), ok);
    sl__json_put(o, "profile", cJSON_CreateString(row->key.profile), ok);
    sl__json_put(o, "kernels", cJSON_CreateString(row->key.kernels), ok);
    sl__json_put(o, "threads", cJSON_CreateNumber((double)row->key.threads), ok);
    sl__json_put(o, "workers", cJSON_CreateNumber((double)row->key.workers), ok);
    sl__json_put(o, "batch_size", cJSON_CreateNumber((double)row->batch_size), ok);
    sl__json_put(o, "outcome", cJSON_CreateString(sl_record_outcome_name(row->outcome)), ok);
    sl__json_put(o, "reason", cJSON_CreateString(row->reason), ok);
    sl__json_put(o, "equivalence", cJSON_CreateString(row->equivalence), ok);
    sl__json_put(o, "output_digest", sl__json_hex64(row->output_digest), ok);
    sl__json_put(o, "measured", cJSON_CreateBool(row->measured), ok);
    if (row->measured) {
        sl__json_put(o, "median_ns", cJSON_CreateNumber(row->figure.median_ns), ok);
        sl__json_put(o, "low_ns", cJSON_CreateNumber(row->figure.low_ns), ok);
        sl__json_put(o, "high_ns", cJSON_CreateNumber(row->figure.high_ns), ok);
        sl__json_put(o, "elements_per_batch", cJSON_CreateNumber(row->figure.elements_per_batch), ok);
        cJSON *samples = cJSON_CreateArray();
        for (int64_t i = 0; samples && i < row->nsamples; i++)
            sl__json_append(samples, cJSON_CreateNumber((double)row->samples_ns[i]), ok);
        sl__json_put(o, "samples_ns", samples, ok);
    }
    if (row->instructions >= 0)
        sl__json_put(o, "instructions", cJSON_CreateNumber((double)row->instructions), ok);
    /* Both optional, so that run files written before them read the same. */
    if (row->process > 0)
        sl__json_put(o, "process", cJSON_CreateNumber(row->process), ok);
    if (row->kernel_choice[0])
        sl__json_put(o, "kernel_choice", cJSON_CreateString(row->kernel_choice), ok);
    return o;
}

char *sl_history_run_to_json(const sl_history_run *run)
{
    bool ok = true;
    cJSON *root = cJSON_CreateObject();
    if (!root)
        return NULL;
    sl__json_put(root, "format", cJSON_CreateString(RUN_FORMAT), &ok);
    sl__json_put(root, "version", cJSON_CreateNumber(SL_HISTORY_VERSION), &ok);
    sl__json_put(root, "commit", cJSON_CreateString(run->commit), &ok);
    sl__json_put(root, "position", cJSON_CreateNumber((double)run->position), &ok);
    sl__json_put(root, "commit_time", cJSON_CreateString(run->commit_time), &ok);
    sl__json_put(root, "machine", cJSON_CreateString(run->machine), &ok);
    sl__json_put(root, "environment", sl__environment_to_json(&run->environment, &ok), &ok);
    cJSON *rows = cJSON_CreateArray();
    for (int i = 0; rows && i < run->nrows; i++)
        sl__json_append(rows, row_json(&run->rows[i], &ok), &ok);
    sl__json_put(root, "rows", rows, &ok);
    char *text = ok ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    return text;
}

/* A finite number of at least min, named on failure. */
static sl_status read_number(const cJSON *object, const char *key, const char *name, double min, double *out,
                             const char *path, sl_err *err)
{
    const cJSON *item = sl__json_member(object, key);
    sl_status status = sl__json_expect(item, cJSON_Number, path, name, err);
    if (status != SL_OK)
        return status;
    if (!isfinite(item->valuedouble) || item->valuedouble < min)
        return sl_fail(err, SL_EFORMAT, "%s: field '%s' must be a number of at least %g, found %g", path, name, min,
                       item->valuedouble);
    *out = item->valuedouble;
    return SL_OK;
}

static sl_status read_outcome(const cJSON *object, const char *name, sl_record_outcome *out, const char *path,
                              sl_err *err)
{
    char text[32];
    sl_status status = sl__json_text(sl__json_member(object, "outcome"), path, name, text, sizeof text, err);
    if (status != SL_OK)
        return status;
    for (int o = 0; o < SL_RECORD_OUTCOME_COUNT; o++) {
        if (strcmp(text, sl_record_outcome_name((sl_record_outcome)o)) == 0) {
            *out = (sl_record_outcome)o;
            return SL_OK;
        }
    }
    return sl_fail(err, SL_EFORMAT, "%s: field '%s' is \"%s\", not an outcome", path, name, text);
}

typedef struct row_text {
    const char *key;
    size_t offset, size;
} row_text;

/* clang-format off */
#define ROW_TEXT(name, member) {name, offsetof(sl_history_row, member), sizeof((sl_history_row *)0)->member}
/* clang-format on */

static const row_text row_texts[] = {
    ROW_TEXT("scenario", key.scenario),   ROW_TEXT("variant", key.variant), ROW_TEXT("adapter", key.adapter),
    ROW_TEXT("profile", key.profile),     ROW_TEXT("kernels", key.kernels), ROW_TEXT("reason", reason),
    ROW_TEXT("equivalence", equivalence),
};

static sl_status read_samples(const cJSON *o, const char *prefix, sl_history_row *row, const char *path, sl_err *err)
{
    char name[96];
    snprintf(name, sizeof name, "%s.samples_ns", prefix);
    const cJSON *samples = sl__json_member(o, "samples_ns");
    sl_status status = sl__json_expect(samples, cJSON_Array, path, name, err);
    if (status != SL_OK)
        return status;
    int n = cJSON_GetArraySize(samples);
    if (n <= 0)
        return sl_fail(err, SL_EFORMAT, "%s: field '%s' is empty in a measured row", path, name);
    row->samples_ns = malloc((size_t)n * sizeof *row->samples_ns);
    if (!row->samples_ns)
        return sl_fail(err, SL_ENOMEM, "%s: out of memory for %d samples", path, n);
    int i = 0;
    for (const cJSON *s = samples->child; s; s = s->next, i++) {
        snprintf(name, sizeof name, "%s.samples_ns[%d]", prefix, i);
        status = sl__json_int64(s, path, name, &row->samples_ns[i], err);
        if (status == SL_OK && row->samples_ns[i] <= 0)
            status = sl_fail(err, SL_EFORMAT, "%s: field '%s' must be positive", path, name);
        if (status != SL_OK)
            return status;
    }
    row->nsamples = n;
    return SL_OK;
}

static sl_status read_figure(const cJSON *o, const char *prefix, sl_history_row *row, const char *path, sl_err *err)
{
    static const struct {
        const char *key;
        size_t offset;
    } numbers[] = {
        {"median_ns", offsetof(sl_history_figure, median_ns)},
        {"low_ns", offsetof(sl_history_figure, low_ns)},
        {"high_ns", offsetof(sl_history_figure, high_ns)},
        {"elements_per_batch", offsetof(sl_history_figure, elements_per_batch)},
    };
    char name[96];
    for (size_t i = 0; i < COUNT(numbers); i++) {
        snprintf(name, sizeof name, "%s.%s", prefix, numbers[i].key);
        sl_status status =
            read_number(o, numbers[i].key, name, 1e-9, (double *)((char *)&row->figure + numbers[i].offset), path, err);
        if (status != SL_OK)
            return status;
    }
    const sl_history_figure *f = &row->figure;
    if (!(f->low_ns <= f->median_ns && f->median_ns <= f->high_ns))
        return sl_fail(err, SL_EFORMAT, "%s: %s: the interval %g to %g ns does not hold the median %g ns", path, prefix,
                       f->low_ns, f->high_ns, f->median_ns);
    return read_samples(o, prefix, row, path, err);
}

static sl_status read_row(const cJSON *o, int index, sl_history_row *row, const char *path, sl_err *err)
{
    char prefix[48], name[96];
    snprintf(prefix, sizeof prefix, "rows[%d]", index);
    sl_status status = sl__json_expect(o, cJSON_Object, path, prefix, err);
    for (size_t i = 0; status == SL_OK && i < COUNT(row_texts); i++) {
        snprintf(name, sizeof name, "%s.%s", prefix, row_texts[i].key);
        status = sl__json_text(sl__json_member(o, row_texts[i].key), path, name, (char *)row + row_texts[i].offset,
                               row_texts[i].size, err);
    }
    static const struct {
        const char *key;
        size_t offset;
    } ints[] = {
        {"threads", offsetof(sl_history_row, key.threads)},
        {"workers", offsetof(sl_history_row, key.workers)},
        {"batch_size", offsetof(sl_history_row, batch_size)},
    };
    for (size_t i = 0; status == SL_OK && i < COUNT(ints); i++) {
        snprintf(name, sizeof name, "%s.%s", prefix, ints[i].key);
        status =
            sl__json_int64(sl__json_member(o, ints[i].key), path, name, (int64_t *)((char *)row + ints[i].offset), err);
    }
    if (status == SL_OK) {
        snprintf(name, sizeof name, "%s.outcome", prefix);
        status = read_outcome(o, name, &row->outcome, path, err);
    }
    if (status == SL_OK) {
        snprintf(name, sizeof name, "%s.output_digest", prefix);
        status = sl__json_hex64_value(sl__json_member(o, "output_digest"), path, name, &row->output_digest, err);
    }
    if (status == SL_OK) {
        snprintf(name, sizeof name, "%s.measured", prefix);
        const cJSON *measured = sl__json_member(o, "measured");
        if (!cJSON_IsBool(measured))
            status = sl_fail(err, SL_EFORMAT, "%s: field '%s' is missing or not true or false", path, name);
        else
            row->measured = cJSON_IsTrue(measured);
    }
    if (status == SL_OK && row->measured && row->outcome != SL_RECORD_OK)
        status = sl_fail(err, SL_EFORMAT, "%s: %s is measured but its outcome is %s", path, prefix,
                         sl_record_outcome_name(row->outcome));
    if (status == SL_OK && row->measured)
        status = read_figure(o, prefix, row, path, err);
    row->instructions = -1;
    const cJSON *count = sl__json_member(o, "instructions");
    if (status == SL_OK && count) {
        snprintf(name, sizeof name, "%s.instructions", prefix);
        status = sl__json_int64(count, path, name, &row->instructions, err);
        if (status == SL_OK && row->instructions <= 0)
            status = sl_fail(err, SL_EFORMAT, "%s: field '%s' must be positive", path, name);
    }
    const cJSON *process = sl__json_member(o, "process");
    if (status == SL_OK && process) {
        int64_t value;
        snprintf(name, sizeof name, "%s.process", prefix);
        status = sl__json_int64(process, path, name, &value, err);
        if (status == SL_OK && (value < 0 || value >= SL_HISTORY_MAX_PROCESSES))
            status = sl_fail(err, SL_EFORMAT, "%s: field '%s' must be 0 to %d, found %" PRId64, path, name,
                             SL_HISTORY_MAX_PROCESSES - 1, value);
        row->process = (int)value;
    }
    const cJSON *choice = sl__json_member(o, "kernel_choice");
    if (status == SL_OK && choice) {
        snprintf(name, sizeof name, "%s.kernel_choice", prefix);
        status = sl__json_text(choice, path, name, row->kernel_choice, sizeof row->kernel_choice, err);
    }
    return status;
}

static sl_status read_run_header(const cJSON *root, sl_history_run *run, const char *path, sl_err *err)
{
    char format[32];
    int64_t version;
    sl_status status = sl__json_text(sl__json_member(root, "format"), path, "format", format, sizeof format, err);
    if (status == SL_OK && strcmp(format, RUN_FORMAT) != 0)
        status = sl_fail(err, SL_EFORMAT, "%s: field 'format' is \"%s\": not a history run", path, format);
    if (status == SL_OK)
        status = sl__json_int64(sl__json_member(root, "version"), path, "version", &version, err);
    if (status == SL_OK && version != SL_HISTORY_VERSION)
        status = sl_fail(err, SL_EFORMAT, "%s: version %" PRId64 ", this sluice reads version %d", path, version,
                         SL_HISTORY_VERSION);
    if (status == SL_OK)
        status = sl__json_text(sl__json_member(root, "commit"), path, "commit", run->commit, sizeof run->commit, err);
    if (status == SL_OK && !is_commit_id(run->commit))
        status = sl_fail(err, SL_EFORMAT, "%s: field 'commit' \"%s\" is not a commit id", path, run->commit);
    if (status == SL_OK)
        status = sl__json_int64(sl__json_member(root, "position"), path, "position", &run->position, err);
    if (status == SL_OK && run->position < 0)
        status = sl_fail(err, SL_EFORMAT, "%s: field 'position' is negative", path);
    if (status == SL_OK)
        status = sl__json_text(sl__json_member(root, "commit_time"), path, "commit_time", run->commit_time,
                               sizeof run->commit_time, err);
    if (status == SL_OK)
        status =
            sl__json_text(sl__json_member(root, "machine"), path, "machine", run->machine, sizeof run->machine, err);
    if (status == SL_OK)
        status = sl__environment_from_json(root, &run->environment, path, err);
    if (status == SL_OK) {
        char id[24];
        sl_history_machine_id(&run->environment, id, sizeof id);
        if (strcmp(id, run->machine) != 0)
            status = sl_fail(err, SL_EFORMAT, "%s: field 'machine' is %s but its environment is machine %s", path,
                             run->machine, id);
    }
    if (status == SL_OK && strcmp(run->environment.git_commit, run->commit) != 0)
        status = sl_fail(err, SL_EFORMAT, "%s: field 'commit' is %s but environment.git_commit is %s", path,
                         run->commit, run->environment.git_commit);
    return status;
}

sl_status sl_history_run_read(const char *path, sl_history_run *run, sl_err *err)
{
    memset(run, 0, sizeof *run);
    cJSON *root;
    sl_status status = sl__json_parse_file(path, &root, err);
    if (status != SL_OK)
        return status;
    status = read_run_header(root, run, path, err);
    const cJSON *rows = sl__json_member(root, "rows");
    if (status == SL_OK)
        status = sl__json_expect(rows, cJSON_Array, path, "rows", err);
    int n = status == SL_OK ? cJSON_GetArraySize(rows) : 0;
    if (status == SL_OK && n == 0)
        status = sl_fail(err, SL_EFORMAT, "%s: field 'rows' is empty", path);
    if (status == SL_OK && !(run->rows = calloc((size_t)n, sizeof *run->rows)))
        status = sl_fail(err, SL_ENOMEM, "%s: out of memory for %d rows", path, n);
    for (const cJSON *o = status == SL_OK ? rows->child : NULL; o && status == SL_OK; o = o->next) {
        status = read_row(o, run->nrows, &run->rows[run->nrows], path, err);
        run->nrows++;
    }
    for (int i = 0; status == SL_OK && i < run->nrows; i++)
        for (int j = 0; status == SL_OK && j < i; j++) {
            const sl_history_row *a = &run->rows[i], *b = &run->rows[j];
            if (strcmp(a->key.scenario, b->key.scenario) == 0 && strcmp(a->key.variant, b->key.variant) == 0 &&
                strcmp(a->key.adapter, b->key.adapter) == 0 && strcmp(a->key.profile, b->key.profile) == 0 &&
                a->process == b->process)
                status = sl_fail(err, SL_EFORMAT, "%s: rows[%d] repeats rows[%d] (%s %s %s, process %d)", path, i, j,
                                 a->key.scenario, a->key.variant, a->key.adapter, a->process);
        }
    cJSON_Delete(root);
    if (status == SL_OK && !(run->path = strdup(path)))
        status = sl_fail(err, SL_ENOMEM, "%s: out of memory", path);
    if (status != SL_OK)
        sl_history_run_free(run);
    return status;
}

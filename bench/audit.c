/* Determinism audit manifests (sluice/bench/audit.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "core/internal.h"
#include "core/json.h"
#include "sluice/bench/audit.h"

typedef struct audit_field {
    char name[SL_NAME_MAX];
    uint64_t digest; /* the field's shape and bytes */
    int64_t rows;
    uint64_t *row_digests; /* each row's bytes */
} audit_field;

typedef struct audit_batch {
    int64_t epoch, index;
    int nfields;
    audit_field fields[SL_MAX_FIELDS];
} audit_batch;

typedef struct audit_run {
    char scenario[16], variant[32], adapter[32];
    /* The kernel table the run used, and whether its output is the same
     * bits on every table: false for a scenario with a stated tolerance
     * (MM-2's log-mel sums through the BLAS) on a table other than the
     * reference, whose bits depend on the table, the BLAS and the CPU. */
    char kernels[32];
    bool exact;
    uint64_t seed;
    int64_t nbatches;
    audit_batch *batches;
} audit_run;

struct sl_audit {
    sl_audit_settings settings;
    int nruns, capacity;
    audit_run *runs;
};

sl_audit *sl_audit_new(const sl_audit_settings *settings)
{
    sl_audit *audit = calloc(1, sizeof *audit);
    if (audit && settings)
        audit->settings = *settings;
    return audit;
}

static void free_run(audit_run *run)
{
    for (int64_t b = 0; b < run->nbatches; b++)
        for (int f = 0; f < run->batches[b].nfields; f++)
            free(run->batches[b].fields[f].row_digests);
    free(run->batches);
}

void sl_audit_free(sl_audit *audit)
{
    if (!audit)
        return;
    for (int r = 0; r < audit->nruns; r++)
        free_run(&audit->runs[r]);
    free(audit->runs);
    free(audit);
}

int sl_audit_runs(const sl_audit *audit)
{
    return audit->nruns;
}

static audit_run *append_run(sl_audit *audit)
{
    if (audit->nruns == audit->capacity) {
        int capacity = audit->capacity ? 2 * audit->capacity : 16;
        audit_run *grown = realloc(audit->runs, (size_t)capacity * sizeof *grown);
        if (!grown)
            return NULL;
        audit->runs = grown;
        audit->capacity = capacity;
    }
    audit_run *run = &audit->runs[audit->nruns++];
    memset(run, 0, sizeof *run);
    return run;
}

/* What the sink of one audited run fills. */
typedef struct audit_sink {
    audit_run *run;
    int64_t capacity;
    sl_status status;
} audit_sink;

static int audit_batch_sink(const sl_batch *batch, void *user)
{
    audit_sink *sink = user;
    audit_run *run = sink->run;
    if (run->nbatches == sink->capacity) {
        sink->status = SL_EMISMATCH;
        return 1;
    }
    audit_batch *ab = &run->batches[run->nbatches++];
    ab->epoch = batch->epoch;
    ab->index = batch->index;
    ab->nfields = batch->schema.nfields;
    for (int f = 0; f < batch->schema.nfields; f++) {
        audit_field *af = &ab->fields[f];
        const sl_tensor *t = &batch->fields[f];
        sl__copy_string(af->name, sizeof af->name, batch->schema.fields[f].name);
        size_t bytes = sl_tensor_nbytes(t);
        XXH3_state_t *state = XXH3_createState();
        if (!state) {
            sink->status = SL_ENOMEM;
            return 1;
        }
        XXH3_64bits_reset(state);
        XXH3_64bits_update(state, &t->shape, sizeof t->shape.rank);
        XXH3_64bits_update(state, t->shape.dims, (size_t)t->shape.rank * sizeof t->shape.dims[0]);
        XXH3_64bits_update(state, t->data, bytes);
        af->digest = XXH3_64bits_digest(state);
        XXH3_freeState(state);
        af->rows = batch->count;
        af->row_digests = malloc((size_t)(batch->count ? batch->count : 1) * sizeof *af->row_digests);
        if (!af->row_digests) {
            sink->status = SL_ENOMEM;
            return 1;
        }
        size_t row_bytes = batch->count ? bytes / (size_t)batch->count : 0;
        for (int64_t r = 0; r < batch->count; r++)
            af->row_digests[r] = XXH3_64bits((const char *)t->data + (size_t)r * row_bytes, row_bytes);
    }
    return 0;
}

sl_status sl_audit_add_run(sl_audit *audit, const sl_scenario_instance *instance, const sl_adapter *adapter,
                           uint64_t seed, sl_err *err)
{
    const sl_pipeline *pipeline = instance->pipeline;
    int64_t per_epoch = sl_pipeline_batches_per_epoch(pipeline);
    if (audit->settings.batches_per_epoch > 0 && audit->settings.batches_per_epoch < per_epoch)
        per_epoch = audit->settings.batches_per_epoch;
    int epochs = audit->settings.epochs > 0 ? audit->settings.epochs : 1;
    audit_run *run = append_run(audit);
    if (!run)
        return sl_fail(err, SL_ENOMEM, "out of memory for the audit");
    sl__copy_string(run->scenario, sizeof run->scenario, instance->scenario->id);
    sl__copy_string(run->variant, sizeof run->variant, instance->variant->name);
    sl__copy_string(run->adapter, sizeof run->adapter, adapter->name);
    run->seed = seed;
    run->exact = true;
    int64_t total = per_epoch * epochs;
    run->batches = calloc((size_t)total, sizeof *run->batches);
    int64_t *latency = calloc((size_t)sl_pipeline_batches_per_epoch(pipeline), sizeof *latency);
    sl_status status = SL_OK;
    if (!run->batches || !latency) {
        status = sl_fail(err, SL_ENOMEM, "out of memory for the audit of %s/%s", run->scenario, run->variant);
        goto done;
    }
    /* The table the settings name (the manifest records it by name). */
    const sl_kernel_table *kernels =
        audit->settings.kernels[0] ? sl_kernels_find(audit->settings.kernels) : sl_kernels_default();
    if (!kernels) {
        status = sl_fail(err, SL_EINVAL, "the audit's settings name kernel table '%s', which is not registered",
                         audit->settings.kernels);
        goto done;
    }
    const sl_kernel_table *used = sl_adapter_kernels(adapter, kernels);
    sl__copy_string(run->kernels, sizeof run->kernels, used->name);
    run->exact = instance->scenario->tolerance <= 0.0 || used == sl_kernels_reference();
    audit_sink sink = {run, total, SL_OK};
    for (int e = 0; e < epochs && status == SL_OK; e++) {
        /* Each epoch from its own start, so that a partial epoch audited
         * (batches_per_epoch) still covers every epoch's keys. */
        sl_run_request request = {.start = {e, 0},
                                  .nbatches = per_epoch,
                                  .workers = audit->settings.workers,
                                  .threads = audit->settings.threads,
                                  .kernels = kernels};
        status = adapter->run(adapter, pipeline, &request, audit_batch_sink, &sink, latency, err);
        if (status == SL_OK && sink.status != SL_OK)
            status = sl_fail(err, sink.status, "auditing %s/%s on %s: %s", run->scenario, run->variant, adapter->name,
                             sink.status == SL_ENOMEM ? "out of memory" : "more batches than asked");
    }
done:
    free(latency);
    if (status != SL_OK) {
        free_run(run);
        audit->nruns--;
    }
    return status;
}

/* --- files ---------------------------------------------------------------- */

static cJSON *rows_json(const audit_field *f)
{
    /* 16 hex digits per row in one string: a manifest holds many thousands
     * of rows, and one string per row would triple its size. */
    char *text = malloc((size_t)f->rows * 16 + 1);
    if (!text)
        return NULL;
    for (int64_t r = 0; r < f->rows; r++)
        snprintf(text + r * 16, 17, "%016" PRIx64, f->row_digests[r]);
    text[f->rows * 16] = '\0';
    cJSON *s = cJSON_CreateString(text);
    free(text);
    return s;
}

sl_status sl_audit_save(const sl_audit *audit, const sl_environment *env, const char *path, sl_err *err)
{
    bool ok = true;
    cJSON *root = cJSON_CreateObject();
    sl__json_put(root, "format", cJSON_CreateString("sluice-audit"), &ok);
    sl__json_put(root, "version", cJSON_CreateNumber(SL_AUDIT_VERSION), &ok);
    cJSON *settings = cJSON_CreateObject();
    sl__json_put(settings, "epochs", cJSON_CreateNumber(audit->settings.epochs), &ok);
    sl__json_put(settings, "batches_per_epoch", cJSON_CreateNumber((double)audit->settings.batches_per_epoch), &ok);
    sl__json_put(settings, "workers", cJSON_CreateNumber(audit->settings.workers), &ok);
    sl__json_put(settings, "threads", cJSON_CreateNumber(audit->settings.threads), &ok);
    sl__json_put(settings, "kernels", cJSON_CreateString(audit->settings.kernels), &ok);
    sl__json_put(root, "settings", settings, &ok);
    if (env) {
        cJSON *e = cJSON_CreateObject();
        sl__json_put(e, "cpu_model", cJSON_CreateString(env->cpu_model), &ok);
        sl__json_put(e, "compiler", cJSON_CreateString(env->compiler), &ok);
        sl__json_put(e, "compile_flags", cJSON_CreateString(env->compile_flags), &ok);
        sl__json_put(e, "git_commit", cJSON_CreateString(env->git_commit), &ok);
        sl__json_put(e, "time_utc", cJSON_CreateString(env->time_utc), &ok);
        sl__json_put(root, "environment", e, &ok);
    }
    cJSON *runs = cJSON_CreateArray();
    for (int i = 0; ok && i < audit->nruns; i++) {
        const audit_run *run = &audit->runs[i];
        cJSON *r = cJSON_CreateObject();
        sl__json_put(r, "scenario", cJSON_CreateString(run->scenario), &ok);
        sl__json_put(r, "variant", cJSON_CreateString(run->variant), &ok);
        sl__json_put(r, "adapter", cJSON_CreateString(run->adapter), &ok);
        sl__json_put(r, "seed", sl__json_u64_text(run->seed), &ok);
        sl__json_put(r, "kernels", cJSON_CreateString(run->kernels), &ok);
        sl__json_put(r, "exact", cJSON_CreateBool(run->exact), &ok);
        cJSON *batches = cJSON_CreateArray();
        for (int64_t b = 0; ok && b < run->nbatches; b++) {
            const audit_batch *ab = &run->batches[b];
            cJSON *jb = cJSON_CreateObject();
            sl__json_put(jb, "epoch", cJSON_CreateNumber((double)ab->epoch), &ok);
            sl__json_put(jb, "batch", cJSON_CreateNumber((double)ab->index), &ok);
            cJSON *fields = cJSON_CreateArray();
            for (int f = 0; f < ab->nfields; f++) {
                cJSON *jf = cJSON_CreateObject();
                sl__json_put(jf, "name", cJSON_CreateString(ab->fields[f].name), &ok);
                sl__json_put(jf, "digest", sl__json_hex64(ab->fields[f].digest), &ok);
                sl__json_put(jf, "rows", rows_json(&ab->fields[f]), &ok);
                sl__json_append(fields, jf, &ok);
            }
            sl__json_put(jb, "fields", fields, &ok);
            sl__json_append(batches, jb, &ok);
        }
        sl__json_put(r, "batches", batches, &ok);
        sl__json_append(runs, r, &ok);
    }
    sl__json_put(root, "runs", runs, &ok);
    if (!ok) {
        cJSON_Delete(root);
        root = NULL;
    }
    return sl__json_save(root, path, err);
}

static sl_status parse_rows(const cJSON *item, audit_field *f, const char *path, const char *name, sl_err *err)
{
    sl_status status = sl__json_expect(item, cJSON_String, path, name, err);
    if (status != SL_OK)
        return status;
    size_t len = strlen(item->valuestring);
    if (len % 16 != 0)
        return sl_fail(err, SL_EFORMAT, "%s: field '%s' has %zu hex digits, not a multiple of 16", path, name, len);
    f->rows = (int64_t)(len / 16);
    f->row_digests = malloc((len / 16 ? len / 16 : 1) * sizeof *f->row_digests);
    if (!f->row_digests)
        return sl_fail(err, SL_ENOMEM, "%s: out of memory for '%s'", path, name);
    for (int64_t r = 0; r < f->rows; r++) {
        char hex[17];
        memcpy(hex, item->valuestring + r * 16, 16);
        hex[16] = '\0';
        char *end = NULL;
        f->row_digests[r] = strtoull(hex, &end, 16);
        if (end != hex + 16 || strspn(hex, "0123456789abcdef") != 16)
            return sl_fail(err, SL_EFORMAT, "%s: field '%s' row %lld is not 16 hex digits", path, name, (long long)r);
    }
    return SL_OK;
}

static sl_status parse_batch(const cJSON *jb, audit_batch *ab, const char *path, const char *prefix, sl_err *err)
{
    char name[160];
    snprintf(name, sizeof name, "%s.epoch", prefix);
    sl_status status = sl__json_int64(sl__json_member(jb, "epoch"), path, name, &ab->epoch, err);
    snprintf(name, sizeof name, "%s.batch", prefix);
    if (status == SL_OK)
        status = sl__json_int64(sl__json_member(jb, "batch"), path, name, &ab->index, err);
    const cJSON *fields = sl__json_member(jb, "fields");
    snprintf(name, sizeof name, "%s.fields", prefix);
    if (status == SL_OK)
        status = sl__json_expect(fields, cJSON_Array, path, name, err);
    if (status == SL_OK && cJSON_GetArraySize(fields) > SL_MAX_FIELDS)
        status = sl_fail(err, SL_EFORMAT, "%s: field '%s' has more than %d fields", path, name, SL_MAX_FIELDS);
    const cJSON *jf;
    if (status == SL_OK) {
        cJSON_ArrayForEach(jf, fields)
        {
            audit_field *af = &ab->fields[ab->nfields];
            snprintf(name, sizeof name, "%s.fields[%d].name", prefix, ab->nfields);
            ab->nfields++;
            status = sl__json_text(sl__json_member(jf, "name"), path, name, af->name, sizeof af->name, err);
            snprintf(name, sizeof name, "%s.fields[%d].digest", prefix, ab->nfields - 1);
            if (status == SL_OK)
                status = sl__json_hex64_value(sl__json_member(jf, "digest"), path, name, &af->digest, err);
            snprintf(name, sizeof name, "%s.fields[%d].rows", prefix, ab->nfields - 1);
            if (status == SL_OK)
                status = parse_rows(sl__json_member(jf, "rows"), af, path, name, err);
            if (status != SL_OK)
                break;
        }
    }
    return status;
}

static sl_status parse_run(const cJSON *jr, audit_run *run, const char *path, int index, sl_err *err)
{
    char name[96];
    snprintf(name, sizeof name, "runs[%d].scenario", index);
    sl_status status =
        sl__json_text(sl__json_member(jr, "scenario"), path, name, run->scenario, sizeof run->scenario, err);
    snprintf(name, sizeof name, "runs[%d].variant", index);
    if (status == SL_OK)
        status = sl__json_text(sl__json_member(jr, "variant"), path, name, run->variant, sizeof run->variant, err);
    snprintf(name, sizeof name, "runs[%d].adapter", index);
    if (status == SL_OK)
        status = sl__json_text(sl__json_member(jr, "adapter"), path, name, run->adapter, sizeof run->adapter, err);
    snprintf(name, sizeof name, "runs[%d].seed", index);
    if (status == SL_OK)
        status = sl__json_u64_value(sl__json_member(jr, "seed"), path, name, &run->seed, err);
    /* Manifests made before runs said which table they used and whether
     * their bits are the same on every table read as exact. */
    run->exact = true;
    const cJSON *kernels = sl__json_member(jr, "kernels"), *exact = sl__json_member(jr, "exact");
    snprintf(name, sizeof name, "runs[%d].kernels", index);
    if (status == SL_OK && kernels)
        status = sl__json_text(kernels, path, name, run->kernels, sizeof run->kernels, err);
    snprintf(name, sizeof name, "runs[%d].exact", index);
    if (status == SL_OK && exact && !cJSON_IsBool(exact))
        status = sl_fail(err, SL_EFORMAT, "%s: field '%s' must be true or false", path, name);
    if (status == SL_OK && exact)
        run->exact = cJSON_IsTrue(exact);
    const cJSON *batches = sl__json_member(jr, "batches");
    snprintf(name, sizeof name, "runs[%d].batches", index);
    if (status == SL_OK)
        status = sl__json_expect(batches, cJSON_Array, path, name, err);
    if (status != SL_OK)
        return status;
    int n = cJSON_GetArraySize(batches);
    run->batches = calloc((size_t)(n ? n : 1), sizeof *run->batches);
    if (!run->batches)
        return sl_fail(err, SL_ENOMEM, "%s: out of memory for '%s'", path, name);
    const cJSON *jb;
    cJSON_ArrayForEach(jb, batches)
    {
        char prefix[96];
        snprintf(prefix, sizeof prefix, "runs[%d].batches[%lld]", index, (long long)run->nbatches);
        status = parse_batch(jb, &run->batches[run->nbatches++], path, prefix, err);
        if (status != SL_OK)
            return status;
    }
    return SL_OK;
}

sl_status sl_audit_load(const char *path, sl_audit **out, sl_err *err)
{
    *out = NULL;
    cJSON *root = NULL;
    sl_status status = sl__json_parse_file(path, &root, err);
    if (status != SL_OK)
        return status;
    char format[32] = "";
    int64_t version = 0;
    status = sl__json_text(sl__json_member(root, "format"), path, "format", format, sizeof format, err);
    if (status == SL_OK && strcmp(format, "sluice-audit") != 0)
        status = sl_fail(err, SL_EFORMAT, "%s: field 'format' is '%s': not a sluice audit manifest", path, format);
    if (status == SL_OK)
        status = sl__json_int64(sl__json_member(root, "version"), path, "version", &version, err);
    if (status == SL_OK && version != SL_AUDIT_VERSION)
        status = sl_fail(err, SL_EFORMAT, "%s: field 'version' is %lld, but this build reads audit version %d", path,
                         (long long)version, SL_AUDIT_VERSION);
    const cJSON *runs = sl__json_member(root, "runs");
    if (status == SL_OK)
        status = sl__json_expect(runs, cJSON_Array, path, "runs", err);
    sl_audit *audit = status == SL_OK ? sl_audit_new(NULL) : NULL;
    if (status == SL_OK && !audit)
        status = sl_fail(err, SL_ENOMEM, "%s: out of memory", path);
    const cJSON *settings = sl__json_member(root, "settings");
    if (status == SL_OK && settings) {
        int64_t v;
        if (sl__json_int64(sl__json_member(settings, "epochs"), path, "settings.epochs", &v, NULL) == SL_OK)
            audit->settings.epochs = (int)v;
        if (sl__json_int64(sl__json_member(settings, "batches_per_epoch"), path, "", &v, NULL) == SL_OK)
            audit->settings.batches_per_epoch = v;
        sl__json_text(sl__json_member(settings, "kernels"), path, "", audit->settings.kernels,
                      sizeof audit->settings.kernels, NULL);
    }
    const cJSON *jr;
    if (status == SL_OK) {
        int index = 0;
        cJSON_ArrayForEach(jr, runs)
        {
            audit_run *run = append_run(audit);
            if (!run) {
                status = sl_fail(err, SL_ENOMEM, "%s: out of memory", path);
                break;
            }
            status = parse_run(jr, run, path, index++, err);
            if (status != SL_OK)
                break;
        }
    }
    cJSON_Delete(root);
    if (status != SL_OK) {
        sl_audit_free(audit);
        return status;
    }
    *out = audit;
    return SL_OK;
}

/* --- comparison ------------------------------------------------------------ */

static const audit_run *find_run(const sl_audit *audit, const audit_run *like)
{
    for (int i = 0; i < audit->nruns; i++) {
        const audit_run *r = &audit->runs[i];
        if (strcmp(r->scenario, like->scenario) == 0 && strcmp(r->variant, like->variant) == 0 &&
            strcmp(r->adapter, like->adapter) == 0 && r->seed == like->seed)
            return r;
    }
    return NULL;
}

static const audit_batch *find_batch(const audit_run *run, int64_t epoch, int64_t index)
{
    for (int64_t b = 0; b < run->nbatches; b++)
        if (run->batches[b].epoch == epoch && run->batches[b].index == index)
            return &run->batches[b];
    return NULL;
}

/* The first row whose digest differs, or -1. */
static int64_t first_differing_row(const audit_field *fa, const audit_field *fb)
{
    for (int64_t r = 0; r < fa->rows; r++)
        if (fa->row_digests[r] != fb->row_digests[r])
            return r;
    return -1;
}

/* Every field's digest and every row's: a manifest whose row digest was
 * changed while its field digest was left alone still differs, naming the
 * row. */
static sl_status compare_batches(const audit_run *run, const audit_batch *x, const audit_batch *y, sl_err *err)
{
    char where[192];
    snprintf(where, sizeof where, "%s/%s on %s, seed %" PRIu64 ", epoch %lld, batch %lld", run->scenario, run->variant,
             run->adapter, run->seed, (long long)x->epoch, (long long)x->index);
    if (x->nfields != y->nfields)
        return sl_fail(err, SL_EMISMATCH, "%s: %d fields against %d", where, x->nfields, y->nfields);
    for (int f = 0; f < x->nfields; f++) {
        const audit_field *fa = &x->fields[f], *fb = &y->fields[f];
        if (strcmp(fa->name, fb->name) != 0)
            return sl_fail(err, SL_EMISMATCH, "%s: field %d is '%s' against '%s'", where, f, fa->name, fb->name);
        if (fa->rows != fb->rows)
            return sl_fail(err, SL_EMISMATCH, "%s, field '%s': %lld rows against %lld", where, fa->name,
                           (long long)fa->rows, (long long)fb->rows);
        int64_t r = first_differing_row(fa, fb);
        if (r >= 0)
            return sl_fail(err, SL_EMISMATCH, "%s, field '%s', row %lld: row digest %016" PRIx64 " against %016" PRIx64,
                           where, fa->name, (long long)r, fa->row_digests[r], fb->row_digests[r]);
        /* Same rows, yet another field digest: the field digest also covers
         * the shape, so either the element shape differs (the same bytes
         * laid out otherwise) or a manifest was altered. The digests cannot
         * tell which, and the message does not guess. */
        if (fa->digest != fb->digest)
            return sl_fail(err, SL_EMISMATCH,
                           "%s, field '%s': field digest %016" PRIx64 " against %016" PRIx64
                           " while every row digest matches: the element shape differs, or one manifest was altered",
                           where, fa->name, fa->digest, fb->digest);
    }
    return SL_OK;
}

/* Compares one run of a with its match in b, batch by batch. */
static sl_status compare_run(const audit_run *ra, const audit_run *rb, int64_t *batches, sl_err *err)
{
    for (int64_t k = 0; k < ra->nbatches; k++) {
        const audit_batch *xa = &ra->batches[k];
        const audit_batch *xb = find_batch(rb, xa->epoch, xa->index);
        if (!xb)
            return sl_fail(
                err, SL_EMISMATCH, "%s/%s on %s, seed %" PRIu64 ", epoch %lld, batch %lld: not in the second manifest",
                ra->scenario, ra->variant, ra->adapter, ra->seed, (long long)xa->epoch, (long long)xa->index);
        sl_status status = compare_batches(ra, xa, xb, err);
        if (status != SL_OK)
            return status;
        (*batches)++;
    }
    return SL_OK;
}

sl_status sl_audit_compare(const sl_audit *a, const sl_audit *b, sl_audit_comparison *result, sl_err *err)
{
    sl_audit_comparison scratch;
    if (!result)
        result = &scratch;
    memset(result, 0, sizeof *result);
    for (int i = 0; i < a->nruns; i++) {
        const audit_run *ra = &a->runs[i];
        const audit_run *rb = find_run(b, ra);
        if (!rb)
            return sl_fail(err, SL_EMISMATCH, "%s/%s on %s, seed %" PRIu64 ": in the first manifest, not in the second",
                           ra->scenario, ra->variant, ra->adapter, ra->seed);
        sl_err run_err = {0};
        int64_t batches = 0;
        sl_status status = compare_run(ra, rb, &batches, &run_err);
        result->batches += batches;
        if (status == SL_OK)
            continue;
        /* A run whose bits depend on the kernel table (docs/audit.md) is
         * held to its stated tolerance by the corpus tests, which a digest
         * cannot express: its difference is reported, not failed. */
        if (!ra->exact || !rb->exact) {
            if (result->table_dependent++ == 0)
                snprintf(result->table_dependent_first, sizeof result->table_dependent_first, "%s (tables %s and %s)",
                         run_err.msg, ra->kernels[0] ? ra->kernels : "?", rb->kernels[0] ? rb->kernels : "?");
            continue;
        }
        if (err)
            *err = run_err;
        return status;
    }
    return SL_OK;
}

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/json.h"
#include "sluice/core/digest.h"
#include "sluice/core/folder.h"
#include "sluice/records/golden.h"
#include "sluice/records/record.h"

#define GOLDEN_VERSION 1
/* How many leading values of each field in batch 0 a golden keeps, so that
 * a failure can show numbers and not only digests. */
#define STORED_VALUES  16

/* One captured batch: its row count, element ids and one digest per row and
 * field, all in one allocation (ids first, then each field's digests). */
typedef struct golden_batch {
    int64_t rows;
    int64_t *element_ids;
    uint64_t *row_digests[SL_MAX_FIELDS];
} golden_batch;

struct sl_golden {
    char scenario[32];
    char variant[64];
    uint64_t seed;
    uint64_t digest;
    /* The running digest while batches are added; NULL for a loaded golden,
     * whose digest is the stored one. */
    sl_digest *running;
    sl_schema schema; /* per-element field specs, fixed by batch 0 */
    int nvalues[SL_MAX_FIELDS];
    /* Stored values as their raw little-endian bits, which compare exactly
     * whatever the dtype (NaN payloads and -0.0 included). */
    uint64_t value_bits[SL_MAX_FIELDS][STORED_VALUES];
    int nbatches, capacity;
    golden_batch *batches;
};

sl_golden *sl_golden_new(const char *scenario, const char *variant, uint64_t seed)
{
    sl_golden *golden = calloc(1, sizeof *golden);
    if (!golden)
        return NULL;
    golden->running = sl_digest_new();
    if (!golden->running) {
        free(golden);
        return NULL;
    }
    sl__copy_string(golden->scenario, sizeof golden->scenario, scenario);
    sl__copy_string(golden->variant, sizeof golden->variant, variant);
    golden->seed = seed;
    golden->digest = sl_digest_value(golden->running);
    return golden;
}

void sl_golden_free(sl_golden *golden)
{
    if (!golden)
        return;
    for (int b = 0; b < golden->nbatches; b++)
        free(golden->batches[b].element_ids);
    free(golden->batches);
    sl_digest_free(golden->running);
    free(golden);
}

int sl_golden_batches(const sl_golden *golden)
{
    return golden->nbatches;
}

uint64_t sl_golden_digest(const sl_golden *golden)
{
    return golden->digest;
}

/* Appends an empty batch of `rows` rows for the golden's schema. */
static golden_batch *push_batch(sl_golden *golden, int64_t rows)
{
    if (golden->nbatches == golden->capacity) {
        int capacity = golden->capacity ? 2 * golden->capacity : 8;
        golden_batch *grown = realloc(golden->batches, (size_t)capacity * sizeof *grown);
        if (!grown)
            return NULL;
        golden->batches = grown;
        golden->capacity = capacity;
    }
    int nfields = golden->schema.nfields;
    int64_t *block = malloc((size_t)(rows ? rows : 1) * (size_t)(1 + nfields) * sizeof(uint64_t));
    if (!block)
        return NULL;
    golden_batch *batch = &golden->batches[golden->nbatches++];
    memset(batch, 0, sizeof *batch);
    batch->rows = rows;
    batch->element_ids = block;
    for (int f = 0; f < nfields; f++)
        batch->row_digests[f] = (uint64_t *)(block + (size_t)rows * (size_t)(1 + f));
    return batch;
}

static bool same_field(const sl_field_spec *a, const sl_field_spec *b)
{
    return strcmp(a->name, b->name) == 0 && a->dtype == b->dtype && sl_shape_equal(&a->shape, &b->shape);
}

static uint64_t value_bits(const void *data, sl_dtype dtype, int64_t index)
{
    uint64_t bits = 0;
    size_t size = sl_dtype_size(dtype);
    memcpy(&bits, (const char *)data + (size_t)index * size, size);
    return bits;
}

sl_status sl_golden_add_batch(sl_golden *golden, const sl_batch *batch, sl_err *err)
{
    if (!golden->running)
        return sl_fail(err, SL_ESTATE, "%s/%s: a golden read from a file cannot take more batches", golden->scenario,
                       golden->variant);
    const sl_schema *schema = &batch->schema;
    if (golden->nbatches == 0) {
        golden->schema = *schema;
    } else {
        bool same = schema->nfields == golden->schema.nfields;
        for (int f = 0; same && f < schema->nfields; f++)
            same = same_field(&schema->fields[f], &golden->schema.fields[f]);
        if (!same)
            return sl_fail(err, SL_EINVAL,
                           "%s/%s: batch %d has different fields (names, dtypes or shapes) than batch 0",
                           golden->scenario, golden->variant, golden->nbatches);
    }
    golden_batch *gb = push_batch(golden, batch->count);
    if (!gb)
        return sl_fail(err, SL_ENOMEM, "%s/%s: out of memory capturing batch %d", golden->scenario, golden->variant,
                       golden->nbatches);
    memcpy(gb->element_ids, batch->element_ids, (size_t)batch->count * sizeof *gb->element_ids);
    for (int f = 0; f < schema->nfields; f++) {
        /* Rows are as wide as this batch holds them: a batch op may have
         * narrowed the field within its schema's capacity (dynamic padding),
         * and then its rows lie packed at the narrower width. */
        const sl_tensor *t = &batch->fields[f];
        size_t row_bytes = batch->count ? sl_tensor_nbytes(t) / (size_t)batch->count : 0;
        const char *data = t->data;
        for (int64_t r = 0; r < batch->count; r++)
            gb->row_digests[f][r] = sl_digest_bytes(data + (size_t)r * row_bytes, row_bytes);
        if (golden->nbatches == 1) {
            int64_t numel = sl_shape_numel(&t->shape);
            golden->nvalues[f] = numel < STORED_VALUES ? (int)numel : STORED_VALUES;
            for (int i = 0; i < golden->nvalues[f]; i++)
                golden->value_bits[f][i] = value_bits(data, schema->fields[f].dtype, i);
        }
    }
    sl_digest_add_batch(golden->running, batch);
    golden->digest = sl_digest_value(golden->running);
    return SL_OK;
}

/* A stored value as a person reads it; "%.9g" is the shortest form that
 * always tells two different f32 values apart. */
static void format_value(sl_dtype dtype, uint64_t bits, char *buf, size_t size)
{
    switch (dtype) {
    case SL_U8: snprintf(buf, size, "%u", (unsigned)bits); break;
    case SL_I32: snprintf(buf, size, "%d", (int32_t)(uint32_t)bits); break;
    case SL_I64: snprintf(buf, size, "%" PRId64, (int64_t)bits); break;
    case SL_F32: {
        uint32_t u = (uint32_t)bits;
        float f;
        memcpy(&f, &u, sizeof f);
        snprintf(buf, size, "%.9g", (double)f);
        break;
    }
    default: snprintf(buf, size, "?"); break;
    }
}

/* NaN and infinity print as letters and have no JSON spelling; the golden
 * writes null for them and the bits still hold the exact value. */
static bool is_json_number(const char *text)
{
    return strspn(text, "-0123456789.e+") == strlen(text);
}

static cJSON *value_json(sl_dtype dtype, uint64_t bits)
{
    char text[40];
    format_value(dtype, bits, text, sizeof text);
    return is_json_number(text) ? cJSON_CreateRaw(text) : cJSON_CreateNull();
}

static cJSON *bits_json(sl_dtype dtype, uint64_t bits)
{
    char text[17];
    snprintf(text, sizeof text, "%0*" PRIx64, (int)(2 * sl_dtype_size(dtype)), bits);
    return cJSON_CreateString(text);
}

static cJSON *field_json(const sl_golden *golden, int f, bool *ok)
{
    const sl_field_spec *spec = &golden->schema.fields[f];
    cJSON *object = cJSON_CreateObject();
    if (!object)
        return NULL;
    sl__json_put(object, "name", cJSON_CreateString(spec->name), ok);
    sl__json_put(object, "dtype", cJSON_CreateString(sl_dtype_name(spec->dtype)), ok);
    cJSON *shape = cJSON_CreateArray();
    for (int d = 0; shape && d < spec->shape.rank; d++)
        sl__json_append(shape, cJSON_CreateNumber((double)spec->shape.dims[d]), ok);
    sl__json_put(object, "shape", shape, ok);
    cJSON *digests = cJSON_CreateArray();
    for (int b = 0; digests && b < golden->nbatches; b++) {
        cJSON *rows = cJSON_CreateArray();
        for (int64_t r = 0; rows && r < golden->batches[b].rows; r++)
            sl__json_append(rows, sl__json_hex64(golden->batches[b].row_digests[f][r]), ok);
        sl__json_append(digests, rows, ok);
    }
    sl__json_put(object, "row_digests", digests, ok);
    cJSON *values = cJSON_CreateArray(), *bits = cJSON_CreateArray();
    for (int i = 0; values && bits && i < golden->nvalues[f]; i++) {
        sl__json_append(values, value_json(spec->dtype, golden->value_bits[f][i]), ok);
        sl__json_append(bits, bits_json(spec->dtype, golden->value_bits[f][i]), ok);
    }
    sl__json_put(object, "values", values, ok);
    sl__json_put(object, "bits", bits, ok);
    return object;
}

static cJSON *golden_json(const sl_golden *golden)
{
    bool ok = true;
    cJSON *root = cJSON_CreateObject();
    if (!root)
        return NULL;
    sl__json_put(root, "golden_version", cJSON_CreateNumber(GOLDEN_VERSION), &ok);
    sl__json_put(root, "scenario", cJSON_CreateString(golden->scenario), &ok);
    sl__json_put(root, "variant", cJSON_CreateString(golden->variant), &ok);
    sl__json_put(root, "seed", sl__json_u64_text(golden->seed), &ok);
    sl__json_put(root, "batches", cJSON_CreateNumber(golden->nbatches), &ok);
    sl__json_put(root, "digest", sl__json_hex64(golden->digest), &ok);
    cJSON *ids = cJSON_CreateArray();
    for (int b = 0; ids && b < golden->nbatches; b++) {
        cJSON *rows = cJSON_CreateArray();
        for (int64_t r = 0; rows && r < golden->batches[b].rows; r++)
            sl__json_append(rows, cJSON_CreateNumber((double)golden->batches[b].element_ids[r]), &ok);
        sl__json_append(ids, rows, &ok);
    }
    sl__json_put(root, "element_ids", ids, &ok);
    cJSON *fields = cJSON_CreateArray();
    for (int f = 0; fields && f < golden->schema.nfields; f++)
        sl__json_append(fields, field_json(golden, f, &ok), &ok);
    sl__json_put(root, "fields", fields, &ok);
    if (!ok) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

sl_status sl_golden_save(const sl_golden *golden, const char *path, sl_err *err)
{
    return sl__json_save(golden_json(golden), path, err);
}

/* Loading. Every check names the file and the field, down to the array
 * index, so a damaged golden can be found and re-blessed. */

/* An array of exactly `count` entries (count < 0: any length). */
static sl_status expect_array(const cJSON *item, int count, const char *path, const char *name, sl_err *err)
{
    sl_status status = sl__json_expect(item, cJSON_Array, path, name, err);
    if (status == SL_OK && count >= 0 && cJSON_GetArraySize(item) != count)
        return sl_fail(err, SL_EFORMAT, "%s: field '%s' has %d entries, expected %d", path, name,
                       cJSON_GetArraySize(item), count);
    return status;
}

static sl_status load_header(const cJSON *root, sl_golden *golden, int *nbatches, const char *path, sl_err *err)
{
    int64_t version, count;
    sl_status status = sl__json_int64(sl__json_member(root, "golden_version"), path, "golden_version", &version, err);
    if (status == SL_OK && version != GOLDEN_VERSION)
        return sl_fail(err, SL_EFORMAT, "%s: field 'golden_version' is %lld, but this build reads version %d", path,
                       (long long)version, GOLDEN_VERSION);
    if (status == SL_OK)
        status = sl__json_text(sl__json_member(root, "scenario"), path, "scenario", golden->scenario,
                               sizeof golden->scenario, err);
    if (status == SL_OK)
        status = sl__json_text(sl__json_member(root, "variant"), path, "variant", golden->variant,
                               sizeof golden->variant, err);
    if (status == SL_OK)
        status = sl__json_u64_value(sl__json_member(root, "seed"), path, "seed", &golden->seed, err);
    if (status == SL_OK)
        status = sl__json_hex64_value(sl__json_member(root, "digest"), path, "digest", &golden->digest, err);
    if (status == SL_OK)
        status = sl__json_int64(sl__json_member(root, "batches"), path, "batches", &count, err);
    if (status == SL_OK && (count < 0 || count > 1 << 20))
        return sl_fail(err, SL_EFORMAT, "%s: field 'batches' must be between 0 and %d, found %lld", path, 1 << 20,
                       (long long)count);
    if (status == SL_OK)
        *nbatches = (int)count;
    return status;
}

static sl_status load_spec(const cJSON *field, sl_field_spec *spec, const char *where, const char *path, sl_err *err)
{
    char name[64], dtype[8];
    snprintf(name, sizeof name, "%s.name", where);
    sl_status status = sl__json_text(sl__json_member(field, "name"), path, name, spec->name, sizeof spec->name, err);
    snprintf(name, sizeof name, "%s.dtype", where);
    if (status == SL_OK)
        status = sl__json_text(sl__json_member(field, "dtype"), path, name, dtype, sizeof dtype, err);
    if (status == SL_OK && !sl_dtype_parse(dtype, &spec->dtype))
        return sl_fail(err, SL_EFORMAT, "%s: field '%s' must be u8, i32, i64 or f32, found \"%s\"", path, name, dtype);
    snprintf(name, sizeof name, "%s.shape", where);
    const cJSON *shape = sl__json_member(field, "shape");
    if (status == SL_OK)
        status = expect_array(shape, -1, path, name, err);
    /* A batch adds the leading row dimension, so an element has one less. */
    if (status == SL_OK && cJSON_GetArraySize(shape) > SL_MAX_RANK - 1)
        return sl_fail(err, SL_EFORMAT, "%s: field '%s' has rank %d, more than %d", path, name,
                       cJSON_GetArraySize(shape), SL_MAX_RANK - 1);
    for (int d = 0; status == SL_OK && d < cJSON_GetArraySize(shape); d++) {
        snprintf(name, sizeof name, "%s.shape[%d]", where, d);
        status = sl__json_int64(cJSON_GetArrayItem(shape, d), path, name, &spec->shape.dims[d], err);
        if (status == SL_OK && spec->shape.dims[d] < 0)
            return sl_fail(err, SL_EFORMAT, "%s: field '%s' is negative", path, name);
        spec->shape.rank = d + 1;
    }
    /* An element's values are counted as int64 and multiplied by rows
     * later; a shape whose product passes 2^40 values describes no element
     * a golden holds, and one past 2^63 once wrapped and was accepted. */
    snprintf(name, sizeof name, "%s.shape", where);
    if (status == SL_OK && !sl_shape_numel_checked(&spec->shape, 1, (int64_t)1 << 40, NULL))
        return sl_fail(err, SL_EFORMAT, "%s: field '%s' has more than 2^40 values per element", path, name);
    return status;
}

static sl_status load_schema(const cJSON *fields, sl_golden *golden, const char *path, sl_err *err)
{
    sl_status status = expect_array(fields, -1, path, "fields", err);
    int n = cJSON_GetArraySize(fields);
    if (status == SL_OK && (n < 1 || n > SL_MAX_FIELDS))
        return sl_fail(err, SL_EFORMAT, "%s: field 'fields' must list 1 to %d fields, found %d", path, SL_MAX_FIELDS,
                       n);
    for (int f = 0; status == SL_OK && f < n; f++) {
        char where[24];
        snprintf(where, sizeof where, "fields[%d]", f);
        const cJSON *field = cJSON_GetArrayItem(fields, f);
        status = sl__json_expect(field, cJSON_Object, path, where, err);
        if (status == SL_OK)
            status = load_spec(field, &golden->schema.fields[f], where, path, err);
        if (status == SL_OK && sl_schema_find(&golden->schema, golden->schema.fields[f].name) >= 0)
            return sl_fail(err, SL_EFORMAT, "%s: field '%s.name' repeats the name \"%s\"", path, where,
                           golden->schema.fields[f].name);
        golden->schema.nfields = f + 1;
    }
    return status;
}

static sl_status load_batches(const cJSON *root, sl_golden *golden, int nbatches, const char *path, sl_err *err)
{
    const cJSON *ids = sl__json_member(root, "element_ids");
    sl_status status = expect_array(ids, nbatches, path, "element_ids", err);
    for (int b = 0; status == SL_OK && b < nbatches; b++) {
        char name[48];
        snprintf(name, sizeof name, "element_ids[%d]", b);
        const cJSON *rows = cJSON_GetArrayItem(ids, b);
        status = expect_array(rows, -1, path, name, err);
        golden_batch *gb = status == SL_OK ? push_batch(golden, cJSON_GetArraySize(rows)) : NULL;
        if (status == SL_OK && !gb)
            return sl_fail(err, SL_ENOMEM, "%s: out of memory reading batch %d", path, b);
        for (int64_t r = 0; status == SL_OK && r < gb->rows; r++) {
            snprintf(name, sizeof name, "element_ids[%d][%lld]", b, (long long)r);
            status = sl__json_int64(cJSON_GetArrayItem(rows, (int)r), path, name, &gb->element_ids[r], err);
        }
    }
    return status;
}

static sl_status load_row_digests(const cJSON *field, sl_golden *golden, int f, const char *path, sl_err *err)
{
    char name[64];
    snprintf(name, sizeof name, "fields[%d].row_digests", f);
    const cJSON *digests = sl__json_member(field, "row_digests");
    sl_status status = expect_array(digests, golden->nbatches, path, name, err);
    for (int b = 0; status == SL_OK && b < golden->nbatches; b++) {
        golden_batch *gb = &golden->batches[b];
        const cJSON *rows = cJSON_GetArrayItem(digests, b);
        snprintf(name, sizeof name, "fields[%d].row_digests[%d]", f, b);
        status = expect_array(rows, (int)gb->rows, path, name, err);
        for (int64_t r = 0; status == SL_OK && r < gb->rows; r++) {
            snprintf(name, sizeof name, "fields[%d].row_digests[%d][%lld]", f, b, (long long)r);
            status = sl__json_hex64_value(cJSON_GetArrayItem(rows, (int)r), path, name, &gb->row_digests[f][r], err);
        }
    }
    return status;
}

static sl_status load_values(const cJSON *field, sl_golden *golden, int f, const char *path, sl_err *err)
{
    const sl_field_spec *spec = &golden->schema.fields[f];
    int64_t numel = 0;
    if (golden->nbatches && !sl_shape_numel_checked(&spec->shape, golden->batches[0].rows, INT64_MAX, &numel))
        return sl_fail(err, SL_EFORMAT, "%s: field '%s' of batch 0 has more values than fit in 64 bits", path,
                       spec->name);
    int n = numel < STORED_VALUES ? (int)numel : STORED_VALUES;
    int digits = (int)(2 * sl_dtype_size(spec->dtype));
    char name[64];
    const cJSON *values = sl__json_member(field, "values"), *bits = sl__json_member(field, "bits");
    snprintf(name, sizeof name, "fields[%d].values", f);
    sl_status status = expect_array(values, n, path, name, err);
    snprintf(name, sizeof name, "fields[%d].bits", f);
    if (status == SL_OK)
        status = expect_array(bits, n, path, name, err);
    for (int i = 0; status == SL_OK && i < n; i++) {
        const cJSON *hex = cJSON_GetArrayItem(bits, i), *value = cJSON_GetArrayItem(values, i);
        snprintf(name, sizeof name, "fields[%d].bits[%d]", f, i);
        status = sl__json_expect(hex, cJSON_String, path, name, err);
        if (status == SL_OK &&
            ((int)strlen(hex->valuestring) != digits || (int)strspn(hex->valuestring, "0123456789abcdef") != digits))
            return sl_fail(err, SL_EFORMAT, "%s: field '%s' must be %d lowercase hex digits, found \"%.24s\"", path,
                           name, digits, hex->valuestring);
        if (status != SL_OK)
            return status;
        golden->value_bits[f][i] = strtoull(hex->valuestring, NULL, 16);
        /* The number is for people and the bits are what compares; a file
         * where they disagree has been edited by hand or damaged. */
        snprintf(name, sizeof name, "fields[%d].values[%d]", f, i);
        char expected[40];
        format_value(spec->dtype, golden->value_bits[f][i], expected, sizeof expected);
        bool agree = is_json_number(expected) ? cJSON_IsNumber(value) && value->valuedouble == strtod(expected, NULL)
                                              : cJSON_IsNull(value);
        if (!agree)
            return sl_fail(err, SL_EFORMAT, "%s: field '%s' does not match its bits, which say %s", path, name,
                           expected);
    }
    golden->nvalues[f] = n;
    return status;
}

sl_status sl_golden_load(const char *path, sl_golden **out, sl_err *err)
{
    *out = NULL;
    cJSON *root;
    sl_status status = sl__json_parse_file(path, &root, err);
    if (status != SL_OK)
        return status;
    sl_golden *golden = calloc(1, sizeof *golden);
    if (!golden) {
        cJSON_Delete(root);
        return sl_fail(err, SL_ENOMEM, "%s: out of memory", path);
    }
    int nbatches = 0;
    const cJSON *fields = sl__json_member(root, "fields");
    status = load_header(root, golden, &nbatches, path, err);
    if (status == SL_OK)
        status = load_schema(fields, golden, path, err);
    if (status == SL_OK)
        status = load_batches(root, golden, nbatches, path, err);
    for (int f = 0; status == SL_OK && f < golden->schema.nfields; f++) {
        status = load_row_digests(cJSON_GetArrayItem(fields, f), golden, f, path, err);
        if (status == SL_OK)
            status = load_values(cJSON_GetArrayItem(fields, f), golden, f, path, err);
    }
    cJSON_Delete(root);
    if (status != SL_OK) {
        sl_golden_free(golden);
        return status;
    }
    *out = golden;
    return SL_OK;
}

/* Comparing. Every message starts with "<scenario>/<variant>: " and then
 * says what differs, most basic difference first. */

static sl_status compare_layout(const sl_golden *e, const sl_golden *a, sl_err *err)
{
    const char *s = e->scenario, *v = e->variant;
    if (strcmp(e->scenario, a->scenario) != 0 || strcmp(e->variant, a->variant) != 0)
        return sl_fail(err, SL_EMISMATCH, "%s/%s: compared with the output of %s/%s", s, v, a->scenario, a->variant);
    if (e->seed != a->seed)
        return sl_fail(err, SL_EMISMATCH, "%s/%s: the seed differs: expected %" PRIu64 ", actual %" PRIu64, s, v,
                       e->seed, a->seed);
    if (e->nbatches != a->nbatches)
        return sl_fail(err, SL_EMISMATCH, "%s/%s: the number of batches differs: expected %d, actual %d", s, v,
                       e->nbatches, a->nbatches);
    if (e->schema.nfields != a->schema.nfields)
        return sl_fail(err, SL_EMISMATCH, "%s/%s: the number of fields differs: expected %d, actual %d", s, v,
                       e->schema.nfields, a->schema.nfields);
    for (int f = 0; f < e->schema.nfields; f++) {
        const sl_field_spec *ef = &e->schema.fields[f], *af = &a->schema.fields[f];
        if (strcmp(ef->name, af->name) != 0)
            return sl_fail(err, SL_EMISMATCH, "%s/%s: field %d is named '%s', expected '%s'", s, v, f, af->name,
                           ef->name);
        if (ef->dtype != af->dtype)
            return sl_fail(err, SL_EMISMATCH, "%s/%s: field '%s' has dtype %s, expected %s", s, v, ef->name,
                           sl_dtype_name(af->dtype), sl_dtype_name(ef->dtype));
        if (!sl_shape_equal(&ef->shape, &af->shape)) {
            char want[96], got[96];
            sl_shape_format(&ef->shape, want, sizeof want);
            sl_shape_format(&af->shape, got, sizeof got);
            return sl_fail(err, SL_EMISMATCH, "%s/%s: field '%s' has element shape %s, expected %s", s, v, ef->name,
                           got, want);
        }
    }
    for (int b = 0; b < e->nbatches; b++)
        if (e->batches[b].rows != a->batches[b].rows)
            return sl_fail(err, SL_EMISMATCH, "%s/%s: batch %d has %lld rows, expected %lld", s, v, b,
                           (long long)a->batches[b].rows, (long long)e->batches[b].rows);
    return SL_OK;
}

/* Once the layouts match, both goldens store the same number of values:
 * it follows from batch 0's row count and the element shape. */
static int first_stored_difference(const sl_golden *e, const sl_golden *a, int f)
{
    for (int i = 0; i < e->nvalues[f]; i++)
        if (e->value_bits[f][i] != a->value_bits[f][i])
            return i;
    return -1;
}

/* "; first differing stored value: index 5, expected 0.5, actual 0.25", or
 * nothing when the stored values of field f agree. */
static void describe_stored(const sl_golden *e, const sl_golden *a, int f, char *buf, size_t size)
{
    buf[0] = '\0';
    int i = first_stored_difference(e, a, f);
    if (i < 0)
        return;
    char want[40], got[40];
    format_value(e->schema.fields[f].dtype, e->value_bits[f][i], want, sizeof want);
    format_value(e->schema.fields[f].dtype, a->value_bits[f][i], got, sizeof got);
    snprintf(buf, size, "; first differing stored value of batch 0: index %d, expected %s, actual %s", i, want, got);
}

static sl_status row_mismatch(const sl_golden *e, const sl_golden *a, int b, int f, int64_t row, int64_t ndiff,
                              sl_err *err)
{
    const golden_batch *eb = &e->batches[b], *ab = &a->batches[b];
    char id[80], stored[160] = "";
    if (eb->element_ids[row] == ab->element_ids[row])
        snprintf(id, sizeof id, "element id %lld", (long long)eb->element_ids[row]);
    else
        snprintf(id, sizeof id, "element id expected %lld, actual %lld", (long long)eb->element_ids[row],
                 (long long)ab->element_ids[row]);
    if (b == 0)
        describe_stored(e, a, f, stored, sizeof stored);
    int64_t per_row = sl_shape_numel(&e->schema.fields[f].shape);
    return sl_fail(err, SL_EMISMATCH,
                   "%s/%s: field '%s' differs in batch %d at row %lld (%s), flat indices [%lld, %lld) of the batch; "
                   "%lld of %lld rows of this batch differ%s",
                   e->scenario, e->variant, e->schema.fields[f].name, b, (long long)row, id, (long long)(row * per_row),
                   (long long)((row + 1) * per_row), (long long)ndiff, (long long)eb->rows, stored);
}

static sl_status compare_rows(const sl_golden *e, const sl_golden *a, sl_err *err)
{
    for (int b = 0; b < e->nbatches; b++) {
        const golden_batch *eb = &e->batches[b], *ab = &a->batches[b];
        for (int f = 0; f < e->schema.nfields; f++) {
            int64_t first = -1, ndiff = 0;
            for (int64_t r = 0; r < eb->rows; r++) {
                if (eb->row_digests[f][r] != ab->row_digests[f][r]) {
                    first = first < 0 ? r : first;
                    ndiff++;
                }
            }
            if (first >= 0)
                return row_mismatch(e, a, b, f, first, ndiff, err);
        }
        /* Equal content under different ids means the pipeline delivered
         * other elements that happen to look alike, or lost alignment. */
        for (int64_t r = 0; r < eb->rows; r++)
            if (eb->element_ids[r] != ab->element_ids[r])
                return sl_fail(err, SL_EMISMATCH,
                               "%s/%s: batch %d row %lld holds element id %lld, expected %lld (the contents match)",
                               e->scenario, e->variant, b, (long long)r, (long long)ab->element_ids[r],
                               (long long)eb->element_ids[r]);
    }
    return SL_OK;
}

sl_status sl_golden_compare(const sl_golden *expected, const sl_golden *actual, sl_err *err)
{
    sl_status status = compare_layout(expected, actual, err);
    if (status == SL_OK)
        status = compare_rows(expected, actual, err);
    if (status != SL_OK)
        return status;
    /* Rows that match while stored values or the overall digest do not can
     * only come from an edited or damaged golden file; still a mismatch. */
    for (int f = 0; f < expected->schema.nfields; f++) {
        if (first_stored_difference(expected, actual, f) >= 0) {
            char stored[160];
            describe_stored(expected, actual, f, stored, sizeof stored);
            return sl_fail(err, SL_EMISMATCH, "%s/%s: field '%s' rows match but its stored values do not%s",
                           expected->scenario, expected->variant, expected->schema.fields[f].name, stored);
        }
    }
    if (expected->digest != actual->digest)
        return sl_fail(err, SL_EMISMATCH,
                       "%s/%s: every row matches but the overall digest differs: expected %016" PRIx64
                       ", actual %016" PRIx64,
                       expected->scenario, expected->variant, expected->digest, actual->digest);
    return SL_OK;
}

sl_status sl_golden_load_blessed(const char *path, sl_golden **out, sl_err *err)
{
    *out = NULL;
    const char *slash = strrchr(path, '/');
    char dir[4096];
    if (!slash || (size_t)(slash - path) >= sizeof dir)
        return sl_fail(err, SL_EINVAL, "%s: a blessed golden's path names its golden set's folder", path);
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    sl_status status = sl_folder_check_member(dir, "goldens", slash + 1, err);
    return status != SL_OK ? status : sl_golden_load(path, out, err);
}

/* Checkpoints: an iterator's position, tied to its pipeline and sealed with a
 * checksum, so that a resumed run is bit-identical and a damaged or foreign
 * file is refused rather than silently resuming somewhere else. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <xxhash.h>

#include "pipeline_internal.h"
#include "sluice/record.h"

#define CHECKPOINT_FORMAT "sluice-checkpoint"
#define CHECKPOINT_VERSION 1

/* The checksum covers every field that decides where a run resumes. */
static uint64_t checkpoint_checksum(uint64_t fingerprint, int64_t epoch, int64_t batch, int64_t batches_per_epoch)
{
    char text[160];
    int n = snprintf(text, sizeof text, "%s/%d/%016" PRIx64 "/%lld/%lld/%lld", CHECKPOINT_FORMAT, CHECKPOINT_VERSION,
                     fingerprint, (long long)epoch, (long long)batch, (long long)batches_per_epoch);
    return XXH3_64bits(text, (size_t)n);
}

static void hex64(uint64_t v, char out[17])
{
    snprintf(out, 17, "%016" PRIx64, v);
}

sl_status sl_checkpoint_save(const sl_pipeline *p, sl_position position, const char *path, sl_err *err)
{
    if (position.epoch < 0 || position.batch < 0 || position.batch >= p->batches_per_epoch)
        return sl_fail(err, SL_EINVAL, "cannot checkpoint position epoch %lld batch %lld", (long long)position.epoch,
                       (long long)position.batch);
    char fingerprint[17], checksum[17];
    hex64(p->fingerprint, fingerprint);
    hex64(checkpoint_checksum(p->fingerprint, position.epoch, position.batch, p->batches_per_epoch), checksum);
    cJSON *root = cJSON_CreateObject();
    if (!root)
        return sl_fail(err, SL_ENOMEM, "cannot build checkpoint JSON for %s", path);
    cJSON_AddStringToObject(root, "format", CHECKPOINT_FORMAT);
    cJSON_AddNumberToObject(root, "version", CHECKPOINT_VERSION);
    cJSON_AddStringToObject(root, "pipeline_fingerprint", fingerprint);
    cJSON_AddNumberToObject(root, "epoch", (double)position.epoch);
    cJSON_AddNumberToObject(root, "batch", (double)position.batch);
    cJSON_AddNumberToObject(root, "batches_per_epoch", (double)p->batches_per_epoch);
    cJSON_AddStringToObject(root, "checksum", checksum);
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text)
        return sl_fail(err, SL_ENOMEM, "cannot serialize checkpoint %s", path);
    sl_status st = sl_write_file_atomic(path, text, strlen(text), err);
    cJSON_free(text);
    return st;
}

static sl_status get_string(const cJSON *root, const char *path, const char *field, const char **out, sl_err *err)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(root, field);
    if (!cJSON_IsString(item))
        return sl_fail(err, SL_EFORMAT, "checkpoint %s: field '%s' is %s", path, field,
                       item ? "not a string" : "missing");
    *out = item->valuestring;
    return SL_OK;
}

/* JSON numbers are doubles; positions are integers well below 2^53, and
 * anything else is a damaged file. */
static sl_status get_count(const cJSON *root, const char *path, const char *field, int64_t *out, sl_err *err)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(root, field);
    if (!cJSON_IsNumber(item))
        return sl_fail(err, SL_EFORMAT, "checkpoint %s: field '%s' is %s", path, field,
                       item ? "not a number" : "missing");
    double v = item->valuedouble;
    if (!(v >= 0 && v < 9007199254740992.0) || v != (double)(int64_t)v)
        return sl_fail(err, SL_EFORMAT, "checkpoint %s: field '%s' is not a non-negative integer", path, field);
    *out = (int64_t)v;
    return SL_OK;
}

static sl_status parse_checkpoint(const cJSON *root, const sl_pipeline *p, const char *path, sl_position *out,
                                  sl_err *err)
{
    const char *format = NULL, *fingerprint = NULL, *checksum = NULL;
    int64_t version = 0, epoch = 0, batch = 0, per_epoch = 0;
    sl_status st;
    if ((st = get_string(root, path, "format", &format, err)) != SL_OK)
        return st;
    if (strcmp(format, CHECKPOINT_FORMAT) != 0)
        return sl_fail(err, SL_EFORMAT, "checkpoint %s: field 'format' is '%s', not '%s'", path, format,
                       CHECKPOINT_FORMAT);
    if ((st = get_count(root, path, "version", &version, err)) != SL_OK)
        return st;
    if (version != CHECKPOINT_VERSION)
        return sl_fail(err, SL_EFORMAT, "checkpoint %s: version %lld is not supported (this build reads %d)", path,
                       (long long)version, CHECKPOINT_VERSION);
    if ((st = get_string(root, path, "pipeline_fingerprint", &fingerprint, err)) != SL_OK ||
        (st = get_count(root, path, "epoch", &epoch, err)) != SL_OK ||
        (st = get_count(root, path, "batch", &batch, err)) != SL_OK ||
        (st = get_count(root, path, "batches_per_epoch", &per_epoch, err)) != SL_OK ||
        (st = get_string(root, path, "checksum", &checksum, err)) != SL_OK)
        return st;
    char *end = NULL;
    uint64_t saved_fingerprint = strtoull(fingerprint, &end, 16);
    if (strlen(fingerprint) != 16 || *end)
        return sl_fail(err, SL_EFORMAT, "checkpoint %s: field 'pipeline_fingerprint' is not 16 hex digits", path);
    char expected[17];
    hex64(checkpoint_checksum(saved_fingerprint, epoch, batch, per_epoch), expected);
    if (strcmp(checksum, expected) != 0)
        return sl_fail(err, SL_EFORMAT, "checkpoint %s: field 'checksum' does not match the contents (corrupted)",
                       path);
    if (saved_fingerprint != p->fingerprint)
        return sl_fail(err, SL_ESTATE,
                       "checkpoint %s: field 'pipeline_fingerprint' %s was written by a different pipeline "
                       "(this one is %016" PRIx64 ")",
                       path, fingerprint, p->fingerprint);
    if (per_epoch != p->batches_per_epoch || batch >= per_epoch)
        return sl_fail(err, SL_ESTATE, "checkpoint %s: field 'batch' %lld does not fit %lld batches per epoch", path,
                       (long long)batch, (long long)p->batches_per_epoch);
    out->epoch = epoch;
    out->batch = batch;
    return SL_OK;
}

sl_status sl_checkpoint_load(const sl_pipeline *p, const char *path, sl_position *out, sl_err *err)
{
    char *text = NULL;
    size_t size = 0;
    sl_status st = sl_read_file(path, &text, &size, err);
    if (st)
        return st;
    cJSON *root = cJSON_ParseWithLength(text, size);
    if (!root) {
        free(text);
        return sl_fail(err, SL_EFORMAT, "checkpoint %s: not valid JSON (truncated or corrupted)", path);
    }
    st = parse_checkpoint(root, p, path, out, err);
    cJSON_Delete(root);
    free(text);
    return st;
}

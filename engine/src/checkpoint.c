/* Checkpoints: an iterator's position, tied to its pipeline and sealed with a
 * checksum, so that a resumed run is bit-identical and a damaged or foreign
 * file is refused rather than silently resuming somewhere else. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <xxhash.h>

#include "json.h"
#include "pipeline_internal.h"

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

sl_status sl_checkpoint_save(const sl_pipeline *p, sl_position position, const char *path, sl_err *err)
{
    if (position.epoch < 0 || position.epoch > SL_MAX_EPOCH || position.batch < 0 ||
        position.batch >= p->batches_per_epoch)
        return sl_fail(err, SL_EINVAL, "cannot checkpoint position epoch %lld batch %lld", (long long)position.epoch,
                       (long long)position.batch);
    uint64_t checksum = checkpoint_checksum(p->fingerprint, position.epoch, position.batch, p->batches_per_epoch);
    bool ok = true;
    cJSON *root = cJSON_CreateObject();
    if (!root)
        return sl_fail(err, SL_ENOMEM, "cannot build checkpoint JSON for %s", path);
    sl__json_put(root, "format", cJSON_CreateString(CHECKPOINT_FORMAT), &ok);
    sl__json_put(root, "version", cJSON_CreateNumber(CHECKPOINT_VERSION), &ok);
    sl__json_put(root, "pipeline_fingerprint", sl__json_hex64(p->fingerprint), &ok);
    sl__json_put(root, "epoch", cJSON_CreateNumber((double)position.epoch), &ok);
    sl__json_put(root, "batch", cJSON_CreateNumber((double)position.batch), &ok);
    sl__json_put(root, "batches_per_epoch", cJSON_CreateNumber((double)p->batches_per_epoch), &ok);
    sl__json_put(root, "checksum", sl__json_hex64(checksum), &ok);
    if (!ok) {
        cJSON_Delete(root);
        root = NULL;
    }
    return sl__json_save(root, path, err);
}

static sl_status get_count(const cJSON *root, const char *path, const char *field, int64_t *out, sl_err *err)
{
    sl_status st = sl__json_int64(sl__json_member(root, field), path, field, out, err);
    if (st == SL_OK && *out < 0)
        return sl_fail(err, SL_EFORMAT, "%s: field '%s' must not be negative", path, field);
    return st;
}

static sl_status parse_checkpoint(const cJSON *root, const sl_pipeline *p, const char *path, sl_position *out,
                                  sl_err *err)
{
    char format[32];
    int64_t version = 0, epoch = 0, batch = 0, per_epoch = 0;
    uint64_t fingerprint = 0, checksum = 0;
    sl_status st;
    if ((st = sl__json_text(sl__json_member(root, "format"), path, "format", format, sizeof format,
                            err)) != SL_OK)
        return st;
    if (strcmp(format, CHECKPOINT_FORMAT) != 0)
        return sl_fail(err, SL_EFORMAT, "%s: field 'format' is '%s', not '%s'", path, format, CHECKPOINT_FORMAT);
    if ((st = get_count(root, path, "version", &version, err)) != SL_OK)
        return st;
    if (version != CHECKPOINT_VERSION)
        return sl_fail(err, SL_EFORMAT, "%s: field 'version' is %lld; this build reads version %d", path,
                       (long long)version, CHECKPOINT_VERSION);
    if ((st = sl__json_hex64_value(sl__json_member(root, "pipeline_fingerprint"), path,
                                   "pipeline_fingerprint", &fingerprint, err)) != SL_OK ||
        (st = get_count(root, path, "epoch", &epoch, err)) != SL_OK ||
        (st = get_count(root, path, "batch", &batch, err)) != SL_OK ||
        (st = get_count(root, path, "batches_per_epoch", &per_epoch, err)) != SL_OK ||
        (st = sl__json_hex64_value(sl__json_member(root, "checksum"), path, "checksum", &checksum,
                                   err)) != SL_OK)
        return st;
    if (checksum != checkpoint_checksum(fingerprint, epoch, batch, per_epoch))
        return sl_fail(err, SL_EFORMAT, "%s: field 'checksum' does not match the contents (corrupted)", path);
    if (fingerprint != p->fingerprint)
        return sl_fail(err, SL_ESTATE,
                       "%s: field 'pipeline_fingerprint' %016" PRIx64 " was written by a different pipeline "
                       "(this one is %016" PRIx64 ")",
                       path, fingerprint, p->fingerprint);
    if (per_epoch != p->batches_per_epoch || batch >= per_epoch)
        return sl_fail(err, SL_ESTATE, "%s: field 'batch' %lld does not fit %lld batches per epoch", path,
                       (long long)batch, (long long)p->batches_per_epoch);
    /* The epoch keys the shuffle and every random draw through 32 bits of
     * the Philox counter: epoch 2^32 would silently replay epoch 0. */
    if (epoch > SL_MAX_EPOCH)
        return sl_fail(err, SL_EFORMAT, "%s: field 'epoch' %lld is past the last epoch a pipeline can run (%lld)",
                       path, (long long)epoch, (long long)SL_MAX_EPOCH);
    out->epoch = epoch;
    out->batch = batch;
    return SL_OK;
}

sl_status sl_checkpoint_load(const sl_pipeline *p, const char *path, sl_position *out, sl_err *err)
{
    cJSON *root;
    sl_status st = sl__json_parse_file(path, &root, err);
    if (st)
        return st;
    st = parse_checkpoint(root, p, path, out, err);
    cJSON_Delete(root);
    return st;
}

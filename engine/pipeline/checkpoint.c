/* Checkpoints: an iterator's position, tied to its pipeline and sealed with a
 * checksum, so that a resumed run is bit-identical and a damaged or foreign
 * file is refused rather than silently resuming somewhere else. Version 1
 * holds the position alone; version 2 adds a module's state (running
 * statistics carried across batches), the doubles as the hex of their bits
 * so that they come back exactly. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <xxhash.h>

#include "core/json.h"
#include "pipeline/internal.h"
#include "sluice/pipeline/module.h"

#define CHECKPOINT_FORMAT         "sluice-checkpoint"
#define CHECKPOINT_VERSION        1 /* a position */
#define CHECKPOINT_MODULE_VERSION 2 /* a position and a module's state */

/* What a version 2 file adds to the position. */
typedef struct module_part {
    char field[SL_NAME_MAX];
    sl_module_state state;
} module_part;

static void feed(XXH3_state_t *hash, const char *fmt, ...)
{
    char text[160];
    va_list args;
    va_start(args, fmt);
    int n = vsnprintf(text, sizeof text, fmt, args);
    va_end(args);
    XXH3_64bits_update(hash, text, (size_t)(n < (int)sizeof text ? n : (int)sizeof text - 1));
}

static uint64_t double_bits(double value)
{
    uint64_t bits;
    memcpy(&bits, &value, sizeof bits);
    return bits;
}

static double bits_double(uint64_t bits)
{
    double value;
    memcpy(&value, &bits, sizeof value);
    return value;
}

/* The checksum covers every field that decides where a run resumes and, in
 * version 2, the module's whole state, as text (so it does not depend on the
 * machine's byte order). Version 1's is unchanged, so its files still load. */
static uint64_t checkpoint_checksum(uint64_t fingerprint, int64_t epoch, int64_t batch, int64_t batches_per_epoch,
                                    const module_part *module)
{
    char text[160];
    int n = snprintf(text, sizeof text, "%s/%d/%016" PRIx64 "/%lld/%lld/%lld", CHECKPOINT_FORMAT,
                     module ? CHECKPOINT_MODULE_VERSION : CHECKPOINT_VERSION, fingerprint, (long long)epoch,
                     (long long)batch, (long long)batches_per_epoch);
    if (!module)
        return XXH3_64bits(text, (size_t)n);
    XXH3_state_t *hash = XXH3_createState();
    if (!hash)
        return 0;
    XXH3_64bits_reset(hash);
    XXH3_64bits_update(hash, text, (size_t)n);
    const sl_channel_stats *s = &module->state.stats;
    feed(hash, "/module/%s/%d/%lld/%lld", module->field, (int)s->channels, (long long)module->state.batches,
         (long long)s->count);
    for (int c = 0; c < s->channels && c < SL_MAX_CHANNELS; c++)
        feed(hash, "/%016" PRIx64 "/%016" PRIx64, double_bits(s->mean[c]), double_bits(s->m2[c]));
    uint64_t sum = XXH3_64bits_digest(hash);
    XXH3_freeState(hash);
    return sum;
}

static cJSON *doubles_json(const double *values, int n, bool *ok)
{
    cJSON *array = cJSON_CreateArray();
    if (!array) {
        *ok = false;
        return NULL;
    }
    for (int i = 0; i < n; i++)
        sl__json_append(array, sl__json_hex64(double_bits(values[i])), ok);
    return array;
}

static cJSON *module_json(const module_part *module, bool *ok)
{
    cJSON *object = cJSON_CreateObject();
    if (!object) {
        *ok = false;
        return NULL;
    }
    const sl_channel_stats *s = &module->state.stats;
    sl__json_put(object, "field", cJSON_CreateString(module->field), ok);
    sl__json_put(object, "channels", cJSON_CreateNumber(s->channels), ok);
    sl__json_put(object, "batches", cJSON_CreateNumber((double)module->state.batches), ok);
    sl__json_put(object, "count", cJSON_CreateNumber((double)s->count), ok);
    sl__json_put(object, "mean", doubles_json(s->mean, s->channels, ok), ok);
    sl__json_put(object, "m2", doubles_json(s->m2, s->channels, ok), ok);
    return object;
}

static sl_status save(const sl_pipeline *p, sl_position position, const module_part *module, const char *path,
                      sl_err *err)
{
    if (position.epoch < 0 || position.epoch > SL_MAX_EPOCH || position.batch < 0 ||
        position.batch >= p->batches_per_epoch)
        return sl_fail(err, SL_EINVAL, "cannot checkpoint position epoch %lld batch %lld", (long long)position.epoch,
                       (long long)position.batch);
    uint64_t checksum =
        checkpoint_checksum(p->fingerprint, position.epoch, position.batch, p->batches_per_epoch, module);
    bool ok = true;
    cJSON *root = cJSON_CreateObject();
    if (!root)
        return sl_fail(err, SL_ENOMEM, "cannot build checkpoint JSON for %s", path);
    sl__json_put(root, "format", cJSON_CreateString(CHECKPOINT_FORMAT), &ok);
    sl__json_put(root, "version", cJSON_CreateNumber(module ? CHECKPOINT_MODULE_VERSION : CHECKPOINT_VERSION), &ok);
    sl__json_put(root, "pipeline_fingerprint", sl__json_hex64(p->fingerprint), &ok);
    sl__json_put(root, "epoch", cJSON_CreateNumber((double)position.epoch), &ok);
    sl__json_put(root, "batch", cJSON_CreateNumber((double)position.batch), &ok);
    sl__json_put(root, "batches_per_epoch", cJSON_CreateNumber((double)p->batches_per_epoch), &ok);
    if (module)
        sl__json_put(root, "module", module_json(module, &ok), &ok);
    sl__json_put(root, "checksum", sl__json_hex64(checksum), &ok);
    if (!ok) {
        cJSON_Delete(root);
        root = NULL;
    }
    return sl__json_save(root, path, err);
}

sl_status sl_checkpoint_save(const sl_pipeline *p, sl_position position, const char *path, sl_err *err)
{
    return save(p, position, NULL, path, err);
}

sl_status sl_checkpoint_save_module(const sl_pipeline *p, sl_position position, const sl_module *module,
                                    const char *path, sl_err *err)
{
    if (sl_module_pipeline(module) != p && sl_pipeline_fingerprint(sl_module_pipeline(module)) != p->fingerprint)
        return sl_fail(err, SL_EINVAL, "cannot checkpoint %s: the module belongs to another pipeline", path);
    const sl_module_state *state = sl_module_state_of(module);
    if (state->next.epoch != position.epoch || state->next.batch != position.batch)
        return sl_fail(err, SL_ESTATE,
                       "cannot checkpoint %s at epoch %lld batch %lld: the module has folded the batches up to "
                       "epoch %lld batch %lld, and a resume would fold the difference twice or never",
                       path, (long long)position.epoch, (long long)position.batch, (long long)state->next.epoch,
                       (long long)state->next.batch);
    module_part part;
    memset(&part, 0, sizeof part);
    snprintf(part.field, sizeof part.field, "%s", sl_module_field(module));
    part.state = *state;
    return save(p, position, &part, path, err);
}

static sl_status get_count(const cJSON *root, const char *path, const char *field, int64_t *out, sl_err *err)
{
    sl_status st = sl__json_int64(sl__json_member(root, field), path, field, out, err);
    if (st == SL_OK && *out < 0)
        return sl_fail(err, SL_EFORMAT, "%s: field '%s' must not be negative", path, field);
    return st;
}

static sl_status get_doubles(const cJSON *object, const char *path, const char *name, int n, double *out, sl_err *err)
{
    char label[48];
    snprintf(label, sizeof label, "module.%s", name);
    const cJSON *array = sl__json_member(object, name);
    sl_status st = sl__json_expect(array, cJSON_Array, path, label, err);
    if (st)
        return st;
    if (cJSON_GetArraySize(array) != n)
        return sl_fail(err, SL_EFORMAT, "%s: field '%s' has %d entries for %d channels", path, label,
                       cJSON_GetArraySize(array), n);
    for (int i = 0; i < n; i++) {
        char item[64];
        snprintf(item, sizeof item, "%s[%d]", label, i);
        uint64_t bits;
        if ((st = sl__json_hex64_value(cJSON_GetArrayItem(array, i), path, item, &bits, err)) != SL_OK)
            return st;
        out[i] = bits_double(bits);
    }
    return SL_OK;
}

static sl_status parse_module(const cJSON *root, const char *path, module_part *out, sl_err *err)
{
    const cJSON *object = sl__json_member(root, "module");
    sl_status st = sl__json_expect(object, cJSON_Object, path, "module", err);
    if (st)
        return st;
    int64_t channels = 0;
    if ((st = sl__json_text(sl__json_member(object, "field"), path, "module.field", out->field, sizeof out->field,
                            err)) != SL_OK ||
        (st = get_count(object, path, "channels", &channels, err)) != SL_OK ||
        (st = get_count(object, path, "batches", &out->state.batches, err)) != SL_OK ||
        (st = get_count(object, path, "count", &out->state.stats.count, err)) != SL_OK)
        return st;
    if (channels < 1 || channels > SL_MAX_CHANNELS)
        return sl_fail(err, SL_EFORMAT, "%s: field 'module.channels' is %lld, not in [1, %d]", path,
                       (long long)channels, SL_MAX_CHANNELS);
    out->state.stats.channels = (int32_t)channels;
    if ((st = get_doubles(object, path, "mean", (int)channels, out->state.stats.mean, err)) != SL_OK ||
        (st = get_doubles(object, path, "m2", (int)channels, out->state.stats.m2, err)) != SL_OK)
        return st;
    return SL_OK;
}

static sl_status parse_checkpoint(const cJSON *root, const sl_pipeline *p, const char *path, sl_position *out,
                                  sl_module *module, sl_err *err)
{
    char format[32];
    int64_t version = 0, epoch = 0, batch = 0, per_epoch = 0;
    uint64_t fingerprint = 0, checksum = 0;
    sl_status st;
    if ((st = sl__json_text(sl__json_member(root, "format"), path, "format", format, sizeof format, err)) != SL_OK)
        return st;
    if (strcmp(format, CHECKPOINT_FORMAT) != 0)
        return sl_fail(err, SL_EFORMAT, "%s: field 'format' is '%s', not '%s'", path, format, CHECKPOINT_FORMAT);
    if ((st = get_count(root, path, "version", &version, err)) != SL_OK)
        return st;
    if (version != CHECKPOINT_VERSION && version != CHECKPOINT_MODULE_VERSION)
        return sl_fail(err, SL_EFORMAT, "%s: field 'version' is %lld; this build reads versions %d and %d", path,
                       (long long)version, CHECKPOINT_VERSION, CHECKPOINT_MODULE_VERSION);
    if ((st = sl__json_hex64_value(sl__json_member(root, "pipeline_fingerprint"), path, "pipeline_fingerprint",
                                   &fingerprint, err)) != SL_OK ||
        (st = get_count(root, path, "epoch", &epoch, err)) != SL_OK ||
        (st = get_count(root, path, "batch", &batch, err)) != SL_OK ||
        (st = get_count(root, path, "batches_per_epoch", &per_epoch, err)) != SL_OK ||
        (st = sl__json_hex64_value(sl__json_member(root, "checksum"), path, "checksum", &checksum, err)) != SL_OK)
        return st;
    module_part part;
    memset(&part, 0, sizeof part);
    bool has_module = version == CHECKPOINT_MODULE_VERSION;
    if (has_module && (st = parse_module(root, path, &part, err)) != SL_OK)
        return st;
    if (checksum != checkpoint_checksum(fingerprint, epoch, batch, per_epoch, has_module ? &part : NULL))
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
        return sl_fail(err, SL_EFORMAT, "%s: field 'epoch' %lld is past the last epoch a pipeline can run (%lld)", path,
                       (long long)epoch, (long long)SL_MAX_EPOCH);
    if (has_module && !module)
        return sl_fail(err, SL_ESTATE,
                       "%s: field 'module' holds the state of a module on '%s'; load it into that module "
                       "(sl_checkpoint_load_module), or the state would be lost",
                       path, part.field);
    if (module) {
        if (!has_module)
            return sl_fail(err, SL_ESTATE, "%s: field 'version' is %lld: the file holds no module state", path,
                           (long long)version);
        if (strcmp(part.field, sl_module_field(module)) != 0)
            return sl_fail(err, SL_ESTATE, "%s: field 'module.field' is '%s'; the module is on '%s'", path, part.field,
                           sl_module_field(module));
        part.state.next = (sl_position){epoch, batch};
        if ((st = sl_module_set_state(module, &part.state, err)) != SL_OK) {
            sl_fail_context(err, "%s: field 'module'", path);
            return st;
        }
    }
    out->epoch = epoch;
    out->batch = batch;
    return SL_OK;
}

static sl_status load(const sl_pipeline *p, const char *path, sl_position *out, sl_module *module, sl_err *err)
{
    cJSON *root;
    sl_status st = sl__json_parse_file(path, &root, err);
    if (st)
        return st;
    st = parse_checkpoint(root, p, path, out, module, err);
    cJSON_Delete(root);
    return st;
}

sl_status sl_checkpoint_load(const sl_pipeline *p, const char *path, sl_position *out, sl_err *err)
{
    return load(p, path, out, NULL, err);
}

sl_status sl_checkpoint_load_module(const sl_pipeline *p, const char *path, sl_position *out, sl_module *module,
                                    sl_err *err)
{
    return load(p, path, out, module, err);
}

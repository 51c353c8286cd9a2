/* JSON helpers shared inside libsluice (records, goldens, checkpoints). */
#ifndef SLUICE_JSON_H
#define SLUICE_JSON_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "sluice/core/status.h"

/* Builders: a failed allocation clears *ok so the caller refuses the whole
 * document instead of writing one with holes. */
void sl__json_put(cJSON *object, const char *key, cJSON *item, bool *ok);
void sl__json_append(cJSON *array, cJSON *item, bool *ok);
cJSON *sl__json_hex64(uint64_t value);
cJSON *sl__json_u64_text(uint64_t value);
/* Serializes root (NULL stands for an allocation that failed while building
 * it), writes it to path atomically and frees it. */
sl_status sl__json_save(cJSON *root, const char *path, sl_err *err);

/* The largest JSON document sluice reads: 256 MiB. */
#define SL__JSON_MAX_BYTES ((size_t)256 << 20)

/* Readers: each names the file (path) and the field (name) on failure. The
 * file must be a regular file of at most SL__JSON_MAX_BYTES. */
sl_status sl__json_parse_file(const char *path, cJSON **root, sl_err *err);
static inline const cJSON *sl__json_member(const cJSON *object, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(object, key);
}
sl_status sl__json_expect(const cJSON *item, int type, const char *path, const char *name, sl_err *err);
sl_status sl__json_int64(const cJSON *item, const char *path, const char *name, int64_t *out, sl_err *err);
sl_status sl__json_text(const cJSON *item, const char *path, const char *name, char *buf, size_t size, sl_err *err);
sl_status sl__json_hex64_value(const cJSON *item, const char *path, const char *name, uint64_t *out, sl_err *err);
sl_status sl__json_u64_value(const cJSON *item, const char *path, const char *name, uint64_t *out, sl_err *err);

#endif

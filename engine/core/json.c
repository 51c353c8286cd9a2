/* JSON helpers shared by records, goldens and checkpoints. Every reader
 * message starts with the file's path and names the field, so a person can
 * open the file and find the problem. */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/json.h"
#include "sluice/core/fileio.h"

/* A failed allocation anywhere while building a document clears ok, so the
 * writer refuses the whole document instead of writing one with holes. */
void sl__json_put(cJSON *object, const char *key, cJSON *item, bool *ok)
{
    if (!item || !cJSON_AddItemToObject(object, key, item)) {
        cJSON_Delete(item);
        *ok = false;
    }
}

void sl__json_append(cJSON *array, cJSON *item, bool *ok)
{
    if (!item || !cJSON_AddItemToArray(array, item)) {
        cJSON_Delete(item);
        *ok = false;
    }
}

cJSON *sl__json_hex64(uint64_t value)
{
    char text[17];
    snprintf(text, sizeof text, "%016" PRIx64, value);
    return cJSON_CreateString(text);
}

/* 64-bit seeds do not survive a trip through a JSON number (a double), so
 * they travel as decimal strings. */
cJSON *sl__json_u64_text(uint64_t value)
{
    char text[24];
    snprintf(text, sizeof text, "%" PRIu64, value);
    return cJSON_CreateString(text);
}

sl_status sl__json_save(cJSON *root, const char *path, sl_err *err)
{
    char *text = root ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    if (!text)
        return sl_fail(err, SL_ENOMEM, "cannot write %s: out of memory while building the JSON", path);
    sl_status status = sl_write_file_atomic(path, text, strlen(text), err);
    cJSON_free(text);
    return status;
}

/* Whether a text that failed to parse stops inside a string or with an
 * object or array still open: what a file cut short looks like, wherever
 * the cut fell. cJSON reports the position of the token it gave up on,
 * which for a cut inside a string or number is before the end. */
static bool ends_inside_a_value(const char *text, size_t size)
{
    int depth = 0;
    bool in_string = false;
    for (size_t i = 0; i < size; i++) {
        char c = text[i];
        if (in_string) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            depth--;
        }
    }
    return in_string || depth > 0;
}

/* Appends ".key" or "[index]" to a field's path in place; returns the old
 * length, to cut it back to. A path too long for the buffer ends in "...". */
static size_t path_push(char *where, size_t size, const char *key, int index)
{
    size_t len = strlen(where);
    int n = key ? snprintf(where + len, size - len, "%s%s", len ? "." : "", key)
                : snprintf(where + len, size - len, "[%d]", index);
    if (n < 0 || (size_t)n >= size - len)
        snprintf(where + (size > 4 ? size - 4 : 0), size > 4 ? 4 : size, "...");
    return len;
}

static int compare_keys(const void *a, const void *b)
{
    return strcmp((*(const cJSON *const *)a)->string, (*(const cJSON *const *)b)->string);
}

/* The first key that appears twice among an object's members, or NULL. A
 * few members are compared pairwise; many are sorted first, so that a file
 * of a million keys costs n log n, not n squared. */
static const char *repeated_key(const cJSON *object, sl_err *err, bool *no_memory)
{
    int n = cJSON_GetArraySize(object);
    if (n <= 32) {
        for (const cJSON *child = object->child; child; child = child->next)
            for (const cJSON *earlier = object->child; earlier != child; earlier = earlier->next)
                if (strcmp(earlier->string, child->string) == 0)
                    return child->string;
        return NULL;
    }
    const cJSON **members = malloc((size_t)n * sizeof *members);
    if (!members) {
        *no_memory = true;
        sl_fail(err, SL_ENOMEM, "out of memory checking an object of %d keys", n);
        return NULL;
    }
    int i = 0;
    for (const cJSON *child = object->child; child; child = child->next)
        members[i++] = child;
    qsort(members, (size_t)n, sizeof *members, compare_keys);
    const char *repeated = NULL;
    for (i = 1; i < n && !repeated; i++)
        if (strcmp(members[i - 1]->string, members[i]->string) == 0)
            repeated = members[i]->string;
    free(members);
    return repeated;
}

/* What cJSON accepts but sluice's readers must not: a key that appears twice
 * in one object (cJSON finds the first, Python's json keeps the last, so one
 * file would read two ways), and a string, key or value, that is not valid
 * UTF-8. The first one found fails the file, naming the field; `where` holds
 * the path of `item` ("fields[0].name") and is restored before returning. */
static sl_status check_document(const cJSON *item, char *where, size_t where_size, const char *path, sl_err *err)
{
    size_t at;
    const char *here = where[0] ? where : "(top level)";
    if (cJSON_IsString(item) && !sl__utf8_valid(item->valuestring, strlen(item->valuestring), &at))
        return sl_fail(err, SL_EFORMAT, "%s: field '%s' is not valid UTF-8 (byte %zu of the string)", path, here, at);
    if (!cJSON_IsObject(item) && !cJSON_IsArray(item))
        return SL_OK;
    if (cJSON_IsObject(item)) {
        for (const cJSON *child = item->child; child; child = child->next)
            if (!sl__utf8_valid(child->string, strlen(child->string), &at))
                return sl_fail(err, SL_EFORMAT, "%s: a key in '%s' is not valid UTF-8 (byte %zu of the key)", path,
                               here, at);
        bool no_memory = false;
        const char *repeated = repeated_key(item, err, &no_memory);
        if (no_memory)
            return SL_ENOMEM;
        if (repeated) {
            size_t len = path_push(where, where_size, repeated, 0);
            sl_status st = sl_fail(err, SL_EFORMAT,
                                   "%s: field '%s' appears twice in one object; a reader would have to guess which "
                                   "one is meant",
                                   path, where);
            where[len] = '\0';
            return st;
        }
    }
    int index = 0;
    for (const cJSON *child = item->child; child; child = child->next, index++) {
        size_t len = path_push(where, where_size, cJSON_IsObject(item) ? child->string : NULL, index);
        sl_status st = check_document(child, where, where_size, path, err);
        where[len] = '\0';
        if (st != SL_OK)
            return st;
    }
    return SL_OK;
}

sl_status sl__json_parse_file(const char *path, cJSON **root, sl_err *err)
{
    *root = NULL;
    char *data = NULL;
    size_t size = 0;
    /* Goldens, records, checkpoints, baselines and manifests are all far
     * below this; a larger file is not one of them. */
    sl_status status = sl__read_file_limited(path, SL__JSON_MAX_BYTES, true, &data, &size, err);
    if (status != SL_OK)
        return status;
    if (strlen(data) != size) {
        size_t nul = strlen(data);
        free(data);
        return sl_fail(err, SL_EFORMAT, "%s: not a text file: a NUL byte at byte %zu", path, nul);
    }
    /* cJSON's end-of-document check looks for the terminating NUL, so it
     * must lie inside the length it is given. */
    const char *end = NULL;
    cJSON *doc = cJSON_ParseWithLengthOpts(data, size + 1, &end, 1);
    size_t at = end ? (size_t)(end - data) : 0;
    bool cut_short = !doc && (at >= size || ends_inside_a_value(data, size));
    free(data);
    if (!doc) {
        if (cut_short)
            return sl_fail(err, SL_EFORMAT, "%s: the JSON ends early at byte %zu; the file is truncated", path, size);
        return sl_fail(err, SL_EFORMAT, "%s: not valid JSON at byte %zu of %zu", path, at, size);
    }
    if (!cJSON_IsObject(doc)) {
        cJSON_Delete(doc);
        return sl_fail(err, SL_EFORMAT, "%s: the top level must be a JSON object", path);
    }
    char where[256] = "";
    status = check_document(doc, where, sizeof where, path, err);
    if (status != SL_OK) {
        cJSON_Delete(doc);
        return status;
    }
    *root = doc;
    return SL_OK;
}

static const char *json_type_name(const cJSON *item)
{
    switch (item->type & 0xff) {
    case cJSON_False:
    case cJSON_True: return "a boolean";
    case cJSON_NULL: return "null";
    case cJSON_Number: return "a number";
    case cJSON_String: return "a string";
    case cJSON_Array: return "an array";
    case cJSON_Object: return "an object";
    }
    return "invalid";
}

sl_status sl__json_expect(const cJSON *item, int type, const char *path, const char *name, sl_err *err)
{
    static const struct {
        int type;
        const char *name;
    } wanted[] = {
        {cJSON_Number, "a number"},
        {cJSON_String, "a string"},
        {cJSON_Array, "an array"},
        {cJSON_Object, "an object"},
    };
    if (!item)
        return sl_fail(err, SL_EFORMAT, "%s: field '%s' is missing", path, name);
    if ((item->type & 0xff) == type)
        return SL_OK;
    const char *want = "?";
    for (size_t i = 0; i < sizeof wanted / sizeof wanted[0]; i++)
        if (wanted[i].type == type)
            want = wanted[i].name;
    return sl_fail(err, SL_EFORMAT, "%s: field '%s' must be %s, found %s", path, name, want, json_type_name(item));
}

sl_status sl__json_int64(const cJSON *item, const char *path, const char *name, int64_t *out, sl_err *err)
{
    sl_status status = sl__json_expect(item, cJSON_Number, path, name, err);
    if (status != SL_OK)
        return status;
    /* Beyond 2^53 a double no longer holds every integer, so such a value
     * cannot have been written by us and is refused as corrupt. */
    double v = item->valuedouble;
    if (v != floor(v) || fabs(v) > 9007199254740992.0)
        return sl_fail(err, SL_EFORMAT, "%s: field '%s' must be an integer below 2^53, found %.17g", path, name, v);
    *out = (int64_t)v;
    return SL_OK;
}

sl_status sl__json_text(const cJSON *item, const char *path, const char *name, char *buf, size_t size, sl_err *err)
{
    sl_status status = sl__json_expect(item, cJSON_String, path, name, err);
    if (status != SL_OK)
        return status;
    /* Truncating would hand back a different value than was written. */
    if (strlen(item->valuestring) >= size)
        return sl_fail(err, SL_EFORMAT, "%s: field '%s' is longer than %zu characters", path, name, size - 1);
    sl__copy_string(buf, size, item->valuestring);
    return SL_OK;
}

sl_status sl__json_hex64_value(const cJSON *item, const char *path, const char *name, uint64_t *out, sl_err *err)
{
    sl_status status = sl__json_expect(item, cJSON_String, path, name, err);
    if (status != SL_OK)
        return status;
    const char *s = item->valuestring;
    if (strlen(s) != 16 || strspn(s, "0123456789abcdef") != 16)
        return sl_fail(err, SL_EFORMAT, "%s: field '%s' must be 16 lowercase hex digits, found \"%.40s\"", path, name,
                       s);
    *out = strtoull(s, NULL, 16);
    return SL_OK;
}

sl_status sl__json_u64_value(const cJSON *item, const char *path, const char *name, uint64_t *out, sl_err *err)
{
    sl_status status = sl__json_expect(item, cJSON_String, path, name, err);
    if (status != SL_OK)
        return status;
    const char *s = item->valuestring;
    size_t n = strlen(s);
    /* 20 digits hold every 64-bit value; the comparison with the maximum's
     * digits catches overflow without relying on errno. */
    if (n == 0 || n > 20 || strspn(s, "0123456789") != n || (n == 20 && strcmp(s, "18446744073709551615") > 0))
        return sl_fail(err, SL_EFORMAT, "%s: field '%s' must be a decimal 64-bit unsigned integer, found \"%.40s\"",
                       path, name, s);
    *out = strtoull(s, NULL, 10);
    return SL_OK;
}

/* The tuned choice's cache (sluice/bench/kernel_tune.h): one small JSON file per
 * CPU and sluice build under $XDG_CACHE_HOME/sluice, and the tuned table a
 * program asks for once (sl_kernels_auto). A file that is not exactly what
 * this build would write for this CPU is refused, saying why in one line,
 * and measured over: a stale or foreign choice would still compute the
 * same bits, but its speed would be somebody else's. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "core/internal.h"
#include "core/json.h"
#include "sluice/bench/kernel_tune.h"
#include "sluice/core/fileio.h"
#include "sluice/records/record.h"
#include "sluice_config.h"

#define CACHE_FORMAT  "sluice kernel tuning"
#define CACHE_VERSION 1

/* --- the key ------------------------------------------------------------------------ */

static void cpu_identity(sl_kernel_tune_key *key)
{
    char *info = NULL;
    size_t len = 0;
    char vendor[32] = "unknown", family[16] = "?", model[16] = "?", stepping[16] = "?", name[128] = "unknown";
    sl__copy_string(key->microcode, sizeof key->microcode, "unknown");
    if (sl_read_file("/proc/cpuinfo", &info, &len, NULL) == SL_OK) {
        sl__cpuinfo_field(info, "vendor_id", vendor, sizeof vendor);
        sl__cpuinfo_field(info, "cpu family", family, sizeof family);
        sl__cpuinfo_field(info, "model", model, sizeof model);
        sl__cpuinfo_field(info, "stepping", stepping, sizeof stepping);
        sl__cpuinfo_field(info, "model name", name, sizeof name);
        sl__cpuinfo_field(info, "microcode", key->microcode, sizeof key->microcode);
        free(info);
    }
    /* A virtual machine often reports a generic model name ("Intel(R)
     * Xeon(R) Processor"), so the family, model and stepping say which
     * core it is. */
    snprintf(key->cpu, sizeof key->cpu, "%s %s/%s/%s %s", vendor, family, model, stepping, name);
}

void sl_kernel_tune_key_collect(sl_kernel_tune_key *key)
{
    memset(key, 0, sizeof *key);
    cpu_identity(key);
    char id[80];
    if (sl__build_id(id, sizeof id)) {
        snprintf(key->build, sizeof key->build, "build-id %s", id);
    } else {
        char what[512];
        snprintf(what, sizeof what, "%s|%s|%s|%s", SLUICE_VERSION, sl__build_git_commit(), SLUICE_COMPILER,
                 SLUICE_COMPILE_FLAGS);
        snprintf(key->build, sizeof key->build, "sluice %s commit %s xxh64 %016llx", SLUICE_VERSION,
                 sl__build_git_commit(), (unsigned long long)XXH64(what, strlen(what), 0));
    }
}

/* --- where ---------------------------------------------------------------------------- */

sl_status sl_kernel_tune_cache_dir(char *buf, size_t size, sl_err *err)
{
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    int n;
    if (xdg && xdg[0] == '/')
        n = snprintf(buf, size, "%s/sluice", xdg);
    else if (home && home[0])
        n = snprintf(buf, size, "%s/.cache/sluice", home);
    else
        return sl_fail(err, SL_ENOTFOUND, "neither XDG_CACHE_HOME (an absolute path) nor HOME is set");
    if (n < 0 || (size_t)n >= size)
        return sl_fail(err, SL_EINVAL, "the kernel cache folder's path is longer than %zu bytes", size - 1);
    return SL_OK;
}

void sl_kernel_tune_cache_file(const char *dir, const sl_kernel_tune_key *key, char *buf, size_t size)
{
    char text[sizeof key->cpu + sizeof key->microcode + sizeof key->build + 3];
    snprintf(text, sizeof text, "%s|%s|%s", key->cpu, key->microcode, key->build);
    snprintf(buf, size, "%s/kernels-%016llx.json", dir, (unsigned long long)XXH64(text, strlen(text), 0));
}

/* --- writing --------------------------------------------------------------------------- */

static cJSON *entry_json(const sl_kernel_tuning *t, int e, bool *ok)
{
    cJSON *entry = cJSON_CreateObject();
    if (!entry)
        return NULL;
    sl__json_put(entry, "choice", cJSON_CreateString(sl_kernel_table_at(t->choice.table[e])->name), ok);
    if (t->measured[e]) {
        cJSON *ns = cJSON_CreateObject();
        for (int k = 0; ns && k < SL_TABLE_COUNT; k++)
            if (t->score_ns[e][k] > 0.0)
                sl__json_put(ns, sl_kernel_table_at(k)->name, cJSON_CreateNumber(t->score_ns[e][k]), ok);
        sl__json_put(entry, "ns_per_call", ns, ok);
    }
    return entry;
}

sl_status sl_kernel_tune_cache_write(const char *path, const sl_kernel_tune_key *key, const sl_kernel_tuning *t,
                                     sl_err *err)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = '\0';
        sl_status st = sl_make_dirs(dir, err);
        if (st)
            return st;
    }
    bool ok = true;
    cJSON *root = cJSON_CreateObject();
    if (root) {
        sl__json_put(root, "format", cJSON_CreateString(CACHE_FORMAT), &ok);
        sl__json_put(root, "version", cJSON_CreateNumber(CACHE_VERSION), &ok);
        sl__json_put(root, "cpu", cJSON_CreateString(key->cpu), &ok);
        sl__json_put(root, "microcode", cJSON_CreateString(key->microcode), &ok);
        sl__json_put(root, "build", cJSON_CreateString(key->build), &ok);
        sl__json_put(root, "default", cJSON_CreateString(sl_kernel_table_at(t->default_table)->name), &ok);
        sl__json_put(root, "tuned_seconds", cJSON_CreateNumber(t->seconds), &ok);
        cJSON *entries = cJSON_CreateObject();
        for (int e = 0; entries && e < SL_KERNEL_ENTRY_COUNT; e++)
            sl__json_put(entries, sl_kernel_entry_name(e), entry_json(t, e, &ok), &ok);
        sl__json_put(root, "entries", entries, &ok);
    }
    if (!ok) {
        cJSON_Delete(root);
        root = NULL;
    }
    return sl__json_save(root, path, err);
}

/* --- reading ---------------------------------------------------------------------------- */

/* A registered table's id by name, or -1. */
static int table_named(const char *name)
{
    const sl_kernel_table *table = name ? sl_kernels_find(name) : NULL;
    return table ? (int)table->id : -1;
}

static int table_id(const cJSON *item)
{
    return cJSON_IsString(item) ? table_named(item->valuestring) : -1;
}

/* The key fields must be this machine's and build's, exactly. */
static sl_status check_key(const cJSON *root, const char *path, const sl_kernel_tune_key *key, sl_err *err)
{
    static const char *const what[] = {"cpu", "microcode", "build"};
    const char *want[] = {key->cpu, key->microcode, key->build};
    static const char *const whose[] = {"another CPU", "another microcode revision", "another sluice build"};
    for (int i = 0; i < 3; i++) {
        const cJSON *item = sl__json_member(root, what[i]);
        if (!cJSON_IsString(item))
            return sl_fail(err, SL_EFORMAT, "%s: no \"%s\"; not a kernel cache this sluice wrote", path, what[i]);
        if (strcmp(item->valuestring, want[i]) != 0)
            return sl_fail(err, SL_EMISMATCH, "%s: written for %s (%s \"%s\", this one \"%s\")", path, whose[i],
                           what[i], item->valuestring, want[i]);
    }
    return SL_OK;
}

static sl_status read_entry(const cJSON *entry, const char *path, int e, sl_kernel_tuning *out, sl_err *err)
{
    const char *name = sl_kernel_entry_name(e);
    if (!cJSON_IsObject(entry))
        return sl_fail(err, SL_EFORMAT, "%s: no entry \"%s\"; a cache of this build names every kernel entry", path,
                       name);
    const cJSON *choice = sl__json_member(entry, "choice");
    int id = table_id(choice);
    if (id < 0)
        return sl_fail(err, SL_EFORMAT, "%s: entry \"%s\" chooses %s%s%s, which is no kernel table of this build", path,
                       name, cJSON_IsString(choice) ? "\"" : "",
                       cJSON_IsString(choice) ? choice->valuestring : "nothing", cJSON_IsString(choice) ? "\"" : "");
    char reason[128];
    if (!sl_kernel_table_supported(sl_kernel_table_at(id), reason, sizeof reason))
        return sl_fail(err, SL_EUNSUPPORTED, "%s: entry \"%s\" chooses %s, which cannot run here: %s", path, name,
                       sl_kernel_table_at(id)->name, reason);
    out->choice.table[e] = (sl_kernel_table_id)id;
    const cJSON *ns = sl__json_member(entry, "ns_per_call");
    out->measured[e] = ns != NULL;
    for (const cJSON *item = ns ? ns->child : NULL; item; item = item->next) {
        int k = table_named(item->string);
        if (k < 0 || !cJSON_IsNumber(item) || !isfinite(item->valuedouble) || item->valuedouble <= 0.0)
            return sl_fail(err, SL_EFORMAT, "%s: entry \"%s\": \"%s\" is not a positive time of a kernel table", path,
                           name, item->string ? item->string : "");
        out->score_ns[e][k] = item->valuedouble;
    }
    return SL_OK;
}

sl_status sl_kernel_tune_cache_read(const char *path, const sl_kernel_tune_key *key, sl_kernel_tuning *out, sl_err *err)
{
    memset(out, 0, sizeof *out);
    cJSON *root = NULL;
    sl_status st = sl__json_parse_file(path, &root, err);
    if (st)
        return st;
    const cJSON *format = sl__json_member(root, "format"), *version = sl__json_member(root, "version");
    if (!cJSON_IsObject(root) || !cJSON_IsString(format) || strcmp(format->valuestring, CACHE_FORMAT) != 0)
        st = sl_fail(err, SL_EFORMAT, "%s: not a sluice kernel cache (no \"format\": \"%s\")", path, CACHE_FORMAT);
    else if (!cJSON_IsNumber(version) || version->valuedouble != CACHE_VERSION)
        st = sl_fail(err, SL_EFORMAT, "%s: kernel cache version %g; this sluice reads version %d", path,
                     cJSON_IsNumber(version) ? version->valuedouble : -1.0, CACHE_VERSION);
    if (st == SL_OK)
        st = check_key(root, path, key, err);
    int def = st == SL_OK ? table_id(sl__json_member(root, "default")) : 0;
    if (st == SL_OK && def < 0)
        st = sl_fail(err, SL_EFORMAT, "%s: \"default\" names no kernel table of this build", path);
    const cJSON *seconds = sl__json_member(root, "tuned_seconds");
    if (st == SL_OK && (!cJSON_IsNumber(seconds) || !(seconds->valuedouble >= 0.0)))
        st = sl_fail(err, SL_EFORMAT, "%s: \"tuned_seconds\" is not a non-negative number", path);
    const cJSON *entries = sl__json_member(root, "entries");
    if (st == SL_OK && !cJSON_IsObject(entries))
        st = sl_fail(err, SL_EFORMAT, "%s: no \"entries\" object", path);
    int count = 0;
    for (const cJSON *item = st == SL_OK ? entries->child : NULL; item && st == SL_OK; item = item->next, count++)
        if (sl_kernel_entry_find(item->string) < 0)
            st = sl_fail(err, SL_EFORMAT, "%s: entry \"%s\" is no kernel entry of this build", path, item->string);
    for (int e = 0; e < SL_KERNEL_ENTRY_COUNT && st == SL_OK; e++)
        st = read_entry(sl__json_member(entries, sl_kernel_entry_name(e)), path, e, out, err);
    if (st == SL_OK && count != SL_KERNEL_ENTRY_COUNT)
        st = sl_fail(err, SL_EFORMAT, "%s: %d entries for %d kernel entries (one named twice)", path, count,
                     SL_KERNEL_ENTRY_COUNT);
    if (st == SL_OK) {
        out->default_table = (sl_kernel_table_id)def;
        out->seconds = seconds->valuedouble;
    }
    cJSON_Delete(root);
    return st;
}

/* --- the tuned table -------------------------------------------------------------------- */

sl_status sl_kernels_auto(sl_kernel_table *table, sl_kernel_tuning *tuning, sl_kernels_auto_report *report, sl_err *err)
{
    sl_kernels_auto_report local_report;
    sl_kernel_tuning local_tuning;
    sl_kernels_auto_report *r = report ? report : &local_report;
    sl_kernel_tuning *t = tuning ? tuning : &local_tuning;
    memset(r, 0, sizeof *r);
    sl_kernel_tune_key key;
    sl_kernel_tune_key_collect(&key);
    char dir[900];
    sl_err dir_err = {0};
    bool have_dir = sl_kernel_tune_cache_dir(dir, sizeof dir, &dir_err) == SL_OK;
    if (have_dir) {
        sl_kernel_tune_cache_file(dir, &key, r->path, sizeof r->path);
        sl_err read_err = {0};
        sl_status st = sl_kernel_tune_cache_read(r->path, &key, t, &read_err);
        if (st == SL_OK && sl_kernels_assemble(&t->choice, SL_KERNELS_AUTO, table, &read_err) == SL_OK) {
            r->from_cache = true;
            return SL_OK;
        }
        if (st != SL_ENOTFOUND)
            sl__copy_string(r->refused, sizeof r->refused, read_err.msg);
    } else {
        snprintf(r->not_saved, sizeof r->not_saved, "no kernel cache folder: %s", dir_err.msg);
    }
    sl_kernel_tune_options options;
    sl_kernel_tune_options_init(&options);
    sl_status st = sl_kernel_tune(&options, t, NULL, err);
    if (st == SL_OK)
        st = sl_kernels_assemble(&t->choice, SL_KERNELS_AUTO, table, err);
    if (st == SL_OK && have_dir) {
        sl_err write_err = {0};
        if (sl_kernel_tune_cache_write(r->path, &key, t, &write_err) != SL_OK)
            sl__copy_string(r->not_saved, sizeof r->not_saved, write_err.msg);
    }
    return st;
}

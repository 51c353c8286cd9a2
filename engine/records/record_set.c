/* Reading a folder of records (sl_record_set). Every file named like a
 * record is read; one that cannot be read is reported by name and left out,
 * so one damaged file does not hide the rest of a run, and nothing on disk
 * is touched. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "sluice/records/record.h"

/* Records are named <scenario>__<variant>__<adapter>.json; anything else in
 * the folder (summary.md, a baseline's manifest, a temporary file) is not
 * one. */
static bool named_like_a_record(const char *name)
{
    size_t len = strlen(name);
    const char *first = strstr(name, "__");
    return len > 5 && strcmp(name + len - 5, ".json") == 0 && first && strstr(first + 2, "__") && name[0] != '.';
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

sl_status sl_record_set_load(const char *dir, sl_record_set *set, sl_record_error_fn on_error, void *user, sl_err *err)
{
    memset(set, 0, sizeof *set);
    DIR *d = opendir(dir);
    if (!d)
        return sl_fail(err, SL_EIO, "%s: cannot open the records folder: %s", dir, strerror(errno));
    char **names = NULL;
    int nnames = 0, capacity = 0;
    struct dirent *entry;
    while ((entry = readdir(d)) != NULL) {
        if (!named_like_a_record(entry->d_name))
            continue;
        if (nnames == capacity) {
            capacity = capacity ? 2 * capacity : 32;
            char **grown = realloc(names, (size_t)capacity * sizeof *grown);
            if (!grown)
                break;
            names = grown;
        }
        names[nnames] = strdup(entry->d_name);
        if (names[nnames])
            nnames++;
    }
    closedir(d);
    /* Sorted, so that every tool lists the same run in the same order. */
    if (nnames > 1)
        qsort(names, (size_t)nnames, sizeof *names, compare_names);
    set->records = calloc((size_t)(nnames ? nnames : 1), sizeof *set->records);
    set->environments = calloc((size_t)(nnames ? nnames : 1), sizeof *set->environments);
    set->paths = calloc((size_t)(nnames ? nnames : 1), sizeof *set->paths);
    if (!set->records || !set->environments || !set->paths) {
        for (int i = 0; i < nnames; i++)
            free(names[i]);
        free(names);
        sl_record_set_free(set);
        return sl_fail(err, SL_ENOMEM, "%s: out of memory for %d records", dir, nnames);
    }
    for (int i = 0; i < nnames; i++) {
        size_t size = strlen(dir) + strlen(names[i]) + 2;
        char *path = malloc(size);
        sl_err file_err = {0};
        if (path) {
            snprintf(path, size, "%s/%s", dir, names[i]);
            if (sl_record_read(path, &set->records[set->count], &set->environments[set->count], &file_err) == SL_OK) {
                set->paths[set->count++] = path;
                path = NULL;
            } else {
                set->nerrors++;
                if (on_error)
                    on_error(file_err.msg, user);
            }
        }
        free(path);
        free(names[i]);
    }
    free(names);
    return SL_OK;
}

void sl_record_set_free(sl_record_set *set)
{
    for (int i = 0; i < set->count; i++) {
        sl_record_release(&set->records[i]);
        free(set->paths[i]);
    }
    free(set->records);
    free(set->environments);
    free(set->paths);
    memset(set, 0, sizeof *set);
}

int sl_record_set_find(const sl_record_set *set, const char *scenario, const char *variant, const char *adapter)
{
    for (int i = 0; i < set->count; i++) {
        const sl_record *r = &set->records[i];
        if (strcmp(r->scenario, scenario) == 0 && strcmp(r->variant, variant) == 0 && strcmp(r->adapter, adapter) == 0)
            return i;
    }
    return -1;
}

sl_status sl_record_set_append_runs(sl_record_set *into, const sl_record_set *from, sl_err *err)
{
    for (int i = 0; i < from->count; i++) {
        const sl_record *src = &from->records[i];
        int j = sl_record_set_find(into, src->scenario, src->variant, src->adapter);
        if (j < 0 || src->outcome != SL_RECORD_OK || into->records[j].outcome != SL_RECORD_OK || !src->samples_ns)
            continue;
        sl_record *dst = &into->records[j];
        if (dst->measured_batches != src->measured_batches)
            return sl_fail(err, SL_EMISMATCH,
                           "%s and %s measured %lld and %lld batches a repetition; runs to pool "
                           "must measure the same number",
                           into->paths[j], from->paths[i], (long long)dst->measured_batches,
                           (long long)src->measured_batches);
        if (dst->repetitions + src->repetitions > SL_RECORD_MAX_REPETITIONS)
            return sl_fail(err, SL_EINVAL, "pooling %s into %s makes %d repetitions, more than the %d a record holds",
                           from->paths[i], into->paths[j], dst->repetitions + src->repetitions,
                           SL_RECORD_MAX_REPETITIONS);
        size_t have = (size_t)dst->repetitions * (size_t)dst->measured_batches;
        size_t add = (size_t)src->repetitions * (size_t)src->measured_batches;
        int64_t *grown = realloc(dst->samples_ns, (have + add) * sizeof *grown);
        if (!grown)
            return sl_fail(err, SL_ENOMEM, "out of memory pooling %s", from->paths[i]);
        memcpy(grown + have, src->samples_ns, add * sizeof *grown);
        dst->samples_ns = grown;
        /* The runs pooled are processes of their own: the first of src
         * follows the last of dst. */
        int next_process = dst->repetitions > 0 ? dst->repetition_process[dst->repetitions - 1] + 1 : 0;
        for (int r = 0; r < src->repetitions; r++) {
            dst->repetition_elements_per_s[dst->repetitions + r] = src->repetition_elements_per_s[r];
            dst->repetition_process[dst->repetitions + r] = next_process + src->repetition_process[r];
        }
        dst->repetitions += src->repetitions;
        dst->wall_ns += src->wall_ns;
        /* The pooled record speaks for the busiest of its runs, so that a
         * comparison knows the worst the machine was. */
        sl_environment *env = &into->environments[j];
        const sl_environment *more = &from->environments[i];
        env->load_start = more->load_start > env->load_start ? more->load_start : env->load_start;
        env->load_end = more->load_end > env->load_end ? more->load_end : env->load_end;
        env->steal_fraction = more->steal_fraction > env->steal_fraction ? more->steal_fraction : env->steal_fraction;
        /* A run whose wait is unknown makes the pool's unknown: it may
         * have been any wait. */
        env->cpu_wait_fraction =
            more->cpu_wait_fraction < 0.0 || env->cpu_wait_fraction < 0.0
                ? -1.0
                : (more->cpu_wait_fraction > env->cpu_wait_fraction ? more->cpu_wait_fraction : env->cpu_wait_fraction);
    }
    return SL_OK;
}

sl_status sl_record_set_load_runs(const char *const *dirs, int ndirs, sl_record_set *set, sl_record_error_fn on_error,
                                  void *user, sl_err *err)
{
    sl_status status = sl_record_set_load(dirs[0], set, on_error, user, err);
    for (int k = 1; k < ndirs && status == SL_OK; k++) {
        sl_record_set more;
        status = sl_record_set_load(dirs[k], &more, on_error, user, err);
        if (status == SL_OK) {
            set->nerrors += more.nerrors;
            /* A record only a later run holds has nothing to be pooled
             * into; it is left out, and said so, never dropped unseen. It
             * is not counted as an error: the runs read fine, they only
             * cover different rows. */
            for (int i = 0; on_error && i < more.count; i++) {
                const sl_record *r = &more.records[i];
                if (sl_record_set_find(set, r->scenario, r->variant, r->adapter) < 0) {
                    char message[SL_ERR_MAX + 64];
                    snprintf(message, sizeof message,
                             "%s: left out, since %s has no run of %s/%s on %s to pool it into", more.paths[i], dirs[0],
                             r->scenario, r->variant, r->adapter);
                    on_error(message, user);
                }
            }
            status = sl_record_set_append_runs(set, &more, err);
            sl_record_set_free(&more);
        }
    }
    return status;
}

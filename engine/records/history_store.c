/* The history folder (sluice/records/history.h): filing a run under its machine,
 * and reading every run back. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/internal.h"
#include "core/json.h"
#include "environment_json.h"
#include "sluice/core/cleanup.h"
#include "sluice/core/fileio.h"
#include "sluice/core/folder.h"
#include "sluice/records/history.h"

#define HISTORY_FORMAT "sluice-history"
#define MACHINE_FORMAT "sluice-history-machine"

/* dir/name into out, refused when it does not fit. */
static sl_status join(char *out, const char *dir, const char *name, sl_err *err)
{
    int n = snprintf(out, PATH_MAX, "%s/%s", dir, name);
    if (n < 0 || n >= PATH_MAX)
        return sl_fail(err, SL_EINVAL, "%s/%s: the path is longer than %d bytes", dir, name, PATH_MAX - 1);
    return SL_OK;
}

static bool exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* Whether dir holds nothing but "." and "..". */
static bool empty_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return false;
    struct dirent *entry;
    bool empty = true;
    while (empty && (entry = readdir(d)) != NULL)
        empty = strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0 ||
                strcmp(entry->d_name, SL_FOLDER_LOCK) == 0;
    closedir(d);
    return empty;
}

static sl_status check_format(const char *path, const char *format, sl_err *err)
{
    cJSON *root;
    sl_status status = sl__json_parse_file(path, &root, err);
    if (status != SL_OK)
        return status;
    char found[40];
    int64_t version;
    status = sl__json_text(sl__json_member(root, "format"), path, "format", found, sizeof found, err);
    if (status == SL_OK && strcmp(found, format) != 0)
        status = sl_fail(err, SL_EFORMAT, "%s: field 'format' is \"%s\", expected \"%s\"", path, found, format);
    if (status == SL_OK)
        status = sl__json_int64(sl__json_member(root, "version"), path, "version", &version, err);
    if (status == SL_OK && version != SL_HISTORY_VERSION)
        status = sl_fail(err, SL_EFORMAT, "%s: version %" PRId64 ", this sluice reads version %d", path, version,
                         SL_HISTORY_VERSION);
    cJSON_Delete(root);
    return status;
}

/* A new document of a history's file kind: its format and version. */
static cJSON *document(const char *format, bool *ok)
{
    cJSON *root = cJSON_CreateObject();
    if (!root) {
        *ok = false;
        return NULL;
    }
    sl__json_put(root, "format", cJSON_CreateString(format), ok);
    sl__json_put(root, "version", cJSON_CreateNumber(SL_HISTORY_VERSION), ok);
    return root;
}

/* Writes root (NULL or incomplete: refused) to path atomically. */
static sl_status save(cJSON *root, bool ok, const char *path, sl_err *err)
{
    if (!ok) {
        cJSON_Delete(root);
        root = NULL;
    }
    return sl__json_save(root, path, err);
}

/* Makes dir a history (creating it and its history.json) unless it is one;
 * a folder that holds other things is never taken over. */
static sl_status open_history(const char *dir, bool create, sl_err *err)
{
    char marker[PATH_MAX];
    sl_status status = join(marker, dir, "history.json", err);
    if (status != SL_OK)
        return status;
    if (exists(marker))
        return check_format(marker, HISTORY_FORMAT, err);
    if (!create)
        return sl_fail(err, SL_ENOTFOUND, "%s is not a sluice history: it has no history.json", dir);
    status = sl_history_check_target(dir, err);
    if (status != SL_OK)
        return status;
    status = sl_make_dirs(dir, err);
    if (status != SL_OK)
        return status;
    bool ok = true;
    return save(document(HISTORY_FORMAT, &ok), ok, marker, err);
}

static sl_status read_machine(const char *path, sl_history_machine *machine, sl_err *err)
{
    sl_status status = check_format(path, MACHINE_FORMAT, err);
    cJSON *root = NULL;
    if (status == SL_OK)
        status = sl__json_parse_file(path, &root, err);
    if (status == SL_OK)
        status = sl__json_text(sl__json_member(root, "id"), path, "id", machine->id, sizeof machine->id, err);
    if (status == SL_OK)
        status = sl__environment_from_json(root, &machine->environment, path, err);
    cJSON_Delete(root);
    if (status == SL_OK) {
        char id[24];
        sl_history_machine_id(&machine->environment, id, sizeof id);
        if (strcmp(id, machine->id) != 0)
            status = sl_fail(err, SL_EFORMAT, "%s: field 'id' is %s but its environment is machine %s", path,
                             machine->id, id);
    }
    return status;
}

/* The machine's folder and machine.json, written when the machine is new
 * and checked when it is not. */
static sl_status file_machine(const char *dir, const sl_history_run *run, sl_err *err)
{
    char path[PATH_MAX];
    sl_status status = join(path, dir, "machine.json", err);
    if (status != SL_OK)
        return status;
    if (exists(path)) {
        sl_history_machine machine;
        status = read_machine(path, &machine, err);
        if (status == SL_OK && strcmp(machine.id, run->machine) != 0)
            status = sl_fail(err, SL_EMISMATCH, "%s is machine %s, not %s", path, machine.id, run->machine);
        return status;
    }
    status = sl_make_dirs(dir, err);
    if (status != SL_OK)
        return status;
    /* A machine.json temporary of an add killed before its rename (D24). */
    sl_sweep_stale_temporaries(dir);
    bool ok = true;
    cJSON *root = document(MACHINE_FORMAT, &ok);
    if (root) {
        sl__json_put(root, "id", cJSON_CreateString(run->machine), &ok);
        char label[512];
        sl_history_machine_label(&run->environment, label, sizeof label);
        sl__json_put(root, "label", cJSON_CreateString(label), &ok);
        sl__json_put(root, "environment", sl__environment_to_json(&run->environment, &ok), &ok);
    }
    return save(root, ok, path, err);
}

/* A run's file name, "<position, 10 digits>-<commit>.json", split back;
 * false for a name that is not one (a temporary, a stray file). */
static bool parse_run_name(const char *name, int64_t *position, char *commit, size_t size)
{
    long long p;
    int used = 0;
    size_t len = strlen(name);
    if (len < 17 || strcmp(name + len - 5, ".json") != 0 || strstr(name, ".tmp."))
        return false;
    if (sscanf(name, "%lld-%n", &p, &used) != 1 || used != 11)
        return false;
    size_t n = len - 5 - (size_t)used;
    if (n + 1 > size)
        return false;
    memcpy(commit, name + used, n);
    commit[n] = '\0';
    *position = p;
    return true;
}

/* Refuses a run whose commit is filed already, or whose position another
 * commit holds; with was_filed, a commit filed already is not refused but
 * said there, its file's name in filed_name. */
static sl_status check_not_filed(const char *runs, const sl_history_run *run, bool *was_filed, char *filed_name,
                                 size_t filed_size, sl_err *err)
{
    DIR *d = opendir(runs);
    if (!d)
        return errno == ENOENT ? SL_OK
                               : sl_fail(err, SL_EIO, "%s: cannot read the runs folder: %s", runs, strerror(errno));
    sl_status status = SL_OK;
    struct dirent *entry;
    while (status == SL_OK && (entry = readdir(d)) != NULL) {
        int64_t position;
        char commit[64];
        if (!parse_run_name(entry->d_name, &position, commit, sizeof commit))
            continue;
        if (strcmp(commit, run->commit) == 0 && was_filed) {
            *was_filed = true;
            snprintf(filed_name, filed_size, "%s/%s", runs, entry->d_name);
            break;
        }
        if (strcmp(commit, run->commit) == 0)
            status = sl_fail(err, SL_ESTATE,
                             "commit %s on machine %s is filed already (%s/%s); a history keeps one run per commit "
                             "and machine",
                             run->commit, run->machine, runs, entry->d_name);
        else if (position == run->position)
            status = sl_fail(err, SL_ESTATE,
                             "position %" PRId64 " on machine %s holds commit %s already (%s/%s), not %s: is the "
                             "position from another branch's history?",
                             position, run->machine, commit, runs, entry->d_name, run->commit);
    }
    closedir(d);
    return status;
}

sl_status sl_history_check_target(const char *history_dir, sl_err *err)
{
    char marker[PATH_MAX];
    sl_status status = join(marker, history_dir, "history.json", err);
    if (status != SL_OK)
        return status;
    if (exists(marker))
        return check_format(marker, HISTORY_FORMAT, err);
    if (exists(history_dir) && !empty_dir(history_dir))
        return sl_fail(err, SL_EINVAL,
                       "%s is not a sluice history (no history.json) and is not empty; refusing to file runs into "
                       "it",
                       history_dir);
    return SL_OK;
}

sl_status sl_history_add(const char *history_dir, const sl_history_run *run, char *filed, size_t filed_size,
                         sl_err *err)
{
    return sl_history_add_unless_filed(history_dir, run, filed, filed_size, NULL, err);
}

sl_status sl_history_add_unless_filed(const char *history_dir, const sl_history_run *run, char *filed,
                                      size_t filed_size, bool *was_filed, sl_err *err)
{
    char filed_already[PATH_MAX + 300] = ""; /* the runs folder, a slash and a file name */
    if (was_filed)
        *was_filed = false;
    sl_status status = open_history(history_dir, true, err);
    if (status != SL_OK)
        return status;
    char machines[PATH_MAX], machine_dir[PATH_MAX], runs[PATH_MAX], path[PATH_MAX], name[128];
    snprintf(name, sizeof name, "%010" PRId64 "-%.40s.json", run->position, run->commit);
    status = join(machines, history_dir, "machines", err);
    if (status == SL_OK)
        status = join(machine_dir, machines, run->machine, err);
    if (status == SL_OK)
        status = join(runs, machine_dir, "runs", err);
    if (status == SL_OK)
        status = join(path, runs, name, err);
    if (status == SL_OK)
        status = check_not_filed(runs, run, was_filed, filed_already, sizeof filed_already, err);
    if (status == SL_OK && was_filed && *was_filed) {
        if (filed)
            sl__copy_string(filed, filed_size, filed_already);
        return SL_OK;
    }
    if (status == SL_OK)
        status = file_machine(machine_dir, run, err);
    if (status == SL_OK)
        status = sl_make_dirs(runs, err);
    if (status != SL_OK)
        return status;
    /* An add killed before its rename left a temporary here; its process is
     * gone, so it goes. */
    sl_sweep_stale_temporaries(runs);
    char *text = sl_history_run_to_json(run);
    if (!text)
        return sl_fail(err, SL_ENOMEM, "%s: out of memory while writing the run", path);
    status = sl_write_file_atomic(path, text, strlen(text), err);
    free(text);
    if (status == SL_OK && filed)
        sl__copy_string(filed, filed_size, path);
    return status;
}

/* --- reading ------------------------------------------------------------------- */

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The entries of dir accepted by keep, sorted by name. */
static sl_status list_dir(const char *dir, bool (*keep)(const char *), char ***names, int *count, sl_err *err)
{
    *names = NULL;
    *count = 0;
    DIR *d = opendir(dir);
    if (!d)
        return errno == ENOENT ? SL_OK : sl_fail(err, SL_EIO, "%s: cannot read it: %s", dir, strerror(errno));
    int capacity = 0;
    struct dirent *entry;
    sl_status status = SL_OK;
    while (status == SL_OK && (entry = readdir(d)) != NULL) {
        if (!keep(entry->d_name))
            continue;
        if (*count == capacity) {
            capacity = capacity ? 2 * capacity : 64;
            char **grown = realloc(*names, (size_t)capacity * sizeof *grown);
            if (!grown) {
                status = sl_fail(err, SL_ENOMEM, "%s: out of memory", dir);
                break;
            }
            *names = grown;
        }
        if (!((*names)[*count] = strdup(entry->d_name)))
            status = sl_fail(err, SL_ENOMEM, "%s: out of memory", dir);
        else
            (*count)++;
    }
    closedir(d);
    if (*count > 1)
        qsort(*names, (size_t)*count, sizeof **names, compare_names);
    return status;
}

static void free_names(char **names, int count)
{
    for (int i = 0; i < count; i++)
        free(names[i]);
    free(names);
}

/* A machine folder is named by its 16-hex-digit id. */
static bool is_machine_name(const char *name)
{
    return strlen(name) == 16 && strspn(name, "0123456789abcdef") == 16;
}

static bool is_run_name(const char *name)
{
    int64_t position;
    char commit[64];
    return parse_run_name(name, &position, commit, sizeof commit);
}

static void report(sl_history *history, sl_record_error_fn on_error, void *user, const sl_err *err)
{
    history->nerrors++;
    if (on_error)
        on_error(err->msg, user);
}

static sl_status append_run(sl_history *history, sl_history_run *run, int *capacity, sl_err *err)
{
    if (history->nruns == *capacity) {
        *capacity = *capacity ? 2 * *capacity : 64;
        sl_history_run *grown = realloc(history->runs, (size_t)*capacity * sizeof *grown);
        if (!grown)
            return sl_fail(err, SL_ENOMEM, "out of memory for %d runs", *capacity);
        history->runs = grown;
    }
    history->runs[history->nruns++] = *run;
    return SL_OK;
}

/* The runs of one machine, in position order (the names sort so). A run
 * whose file name does not say what the file holds is refused like a
 * damaged one. */
static sl_status load_runs(sl_history *history, const char *machine_dir, const char *id, int *capacity,
                           sl_record_error_fn on_error, void *user, sl_err *err)
{
    char runs[PATH_MAX];
    char **names = NULL;
    int count = 0;
    sl_status status = join(runs, machine_dir, "runs", err);
    if (status == SL_OK)
        status = list_dir(runs, is_run_name, &names, &count, err);
    for (int i = 0; status == SL_OK && i < count; i++) {
        char path[PATH_MAX], commit[64];
        int64_t position;
        status = join(path, runs, names[i], err);
        if (status != SL_OK)
            break;
        parse_run_name(names[i], &position, commit, sizeof commit);
        sl_history_run run;
        sl_err file_err = {0};
        if (sl_history_run_read(path, &run, &file_err) != SL_OK) {
            report(history, on_error, user, &file_err);
            continue;
        }
        if (strcmp(run.machine, id) != 0 || strcmp(run.commit, commit) != 0 || run.position != position) {
            sl_fail(&file_err, SL_EFORMAT,
                    "%s: holds commit %s at position %" PRId64 " of machine %s, which is not what its name and "
                    "folder say",
                    path, run.commit, run.position, run.machine);
            sl_history_run_free(&run);
            report(history, on_error, user, &file_err);
            continue;
        }
        status = append_run(history, &run, capacity, err);
        if (status != SL_OK)
            sl_history_run_free(&run);
    }
    free_names(names, count);
    return status;
}

sl_status sl_history_load(const char *history_dir, sl_history *history, sl_record_error_fn on_error, void *user,
                          sl_err *err)
{
    memset(history, 0, sizeof *history);
    sl_status status = open_history(history_dir, false, err);
    if (status != SL_OK)
        return status;
    char machines_dir[PATH_MAX];
    char **names = NULL;
    int count = 0;
    status = join(machines_dir, history_dir, "machines", err);
    if (status == SL_OK)
        status = list_dir(machines_dir, is_machine_name, &names, &count, err);
    if (status == SL_OK && count > 0 && !(history->machines = calloc((size_t)count, sizeof *history->machines)))
        status = sl_fail(err, SL_ENOMEM, "%s: out of memory for %d machines", machines_dir, count);
    int capacity = 0;
    for (int i = 0; status == SL_OK && i < count; i++) {
        char dir[PATH_MAX], path[PATH_MAX];
        status = join(dir, machines_dir, names[i], err);
        if (status == SL_OK)
            status = join(path, dir, "machine.json", err);
        if (status != SL_OK)
            break;
        sl_history_machine *machine = &history->machines[history->nmachines];
        sl_err file_err = {0};
        if (!exists(path)) {
            /* An add killed between making the machine's folder and renaming
             * its machine.json into place (D24). Its runs, if any, are whole
             * and each holds the machine's environment: the machine is taken
             * from them, so that none is left out; a folder with no run holds
             * nothing to lose and is passed over. */
            int first = history->nruns;
            memset(machine, 0, sizeof *machine);
            sl__copy_string(machine->id, sizeof machine->id, names[i]);
            status = load_runs(history, dir, machine->id, &capacity, on_error, user, err);
            if (status == SL_OK && history->nruns > first) {
                machine->environment = history->runs[first].environment;
                history->nmachines++;
            }
            continue;
        }
        if (read_machine(path, machine, &file_err) != SL_OK) {
            report(history, on_error, user, &file_err);
            continue;
        }
        if (strcmp(machine->id, names[i]) != 0) {
            sl_fail(&file_err, SL_EFORMAT, "%s: machine %s in the folder of machine %s", path, machine->id, names[i]);
            report(history, on_error, user, &file_err);
            continue;
        }
        history->nmachines++;
        status = load_runs(history, dir, machine->id, &capacity, on_error, user, err);
    }
    free_names(names, count);
    if (status != SL_OK)
        sl_history_free(history);
    return status;
}

void sl_history_free(sl_history *history)
{
    for (int i = 0; i < history->nruns; i++)
        sl_history_run_free(&history->runs[i]);
    free(history->runs);
    free(history->machines);
    memset(history, 0, sizeof *history);
}

int sl_history_find_machine(const sl_history *history, const char *id)
{
    for (int i = 0; i < history->nmachines; i++)
        if (strcmp(history->machines[i].id, id) == 0)
            return i;
    return -1;
}

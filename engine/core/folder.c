/* Folders written whole or not at all, their manifests, and the advisory
 * lock of a folder being written (sluice/core/folder.h). */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "cleanup_registry.h"
#include "core/internal.h"
#include "core/json.h"
#include "sluice/core/cleanup.h"
#include "sluice/core/fileio.h"
#include "sluice/core/folder.h"

#define MANIFEST_FORMAT  "sluice-folder"
#define MANIFEST_VERSION 1

/* --- paths ------------------------------------------------------------------------ */

/* The folder that holds path ("." for a bare name). */
static void parent_of(const char *path, char *parent, size_t size)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        sl__copy_string(parent, size, ".");
    else if (slash == path)
        sl__copy_string(parent, size, "/");
    else
        snprintf(parent, size, "%.*s", (int)(slash - path), path);
}

static bool join(char *out, size_t size, const char *dir, const char *name)
{
    return (size_t)snprintf(out, size, "%s/%s", dir, name) < size;
}

/* A name a manifest may list: a plain file name in the folder itself. */
static bool plain_name(const char *name)
{
    return name[0] != '\0' && name[0] != '.' && !strchr(name, '/');
}

static bool is_temporary(const char *name)
{
    pid_t pid;
    return sl__temporary_owner(name, &pid);
}

/* Syncs a folder's entries (a rename into it, the files created in it).
 * Some file systems refuse fsync on a directory; the data is safe then. */
static void sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

/* --- listing ---------------------------------------------------------------------- */

typedef struct name_list {
    char **names;
    int count;
} name_list;

static void names_free(name_list *list)
{
    for (int i = 0; i < list->count; i++)
        free(list->names[i]);
    free(list->names);
    memset(list, 0, sizeof *list);
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every entry of dir but ".", "..", and, with skip_own, the manifest and
 * temporaries; sorted. */
static sl_status list_dir(const char *dir, bool skip_own, name_list *out, sl_err *err)
{
    memset(out, 0, sizeof *out);
    DIR *d = opendir(dir);
    if (!d)
        return sl_fail(err, errno == ENOENT ? SL_ENOTFOUND : SL_EIO, "cannot read the folder %s: %s", dir,
                       strerror(errno));
    int capacity = 0;
    sl_status st = SL_OK;
    struct dirent *entry;
    while ((entry = readdir(d)) != NULL && st == SL_OK) {
        const char *name = entry->d_name;
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
            continue;
        if (skip_own && (strcmp(name, SL_FOLDER_MANIFEST) == 0 || is_temporary(name)))
            continue;
        if (out->count == capacity) {
            capacity = capacity ? 2 * capacity : 64;
            char **grown = realloc(out->names, (size_t)capacity * sizeof *grown);
            if (!grown) {
                st = sl_fail(err, SL_ENOMEM, "out of memory listing %s", dir);
                break;
            }
            out->names = grown;
        }
        if (!(out->names[out->count] = strdup(name)))
            st = sl_fail(err, SL_ENOMEM, "out of memory listing %s", dir);
        else
            out->count++;
    }
    closedir(d);
    if (st != SL_OK)
        names_free(out);
    else if (out->count > 1)
        qsort(out->names, (size_t)out->count, sizeof *out->names, compare_names);
    return st;
}

/* The XXH3-64 and size of a regular file, streamed. */
static sl_status digest_file(const char *path, uint64_t *digest, int64_t *bytes, sl_err *err)
{
    int fd;
    sl_status st = sl__open_readonly(path, &fd, err);
    if (st != SL_OK)
        return st;
    XXH3_state_t *state = XXH3_createState();
    unsigned char *buf = malloc(1 << 20);
    if (!state || !buf) {
        XXH3_freeState(state);
        free(buf);
        close(fd);
        return sl_fail(err, SL_ENOMEM, "out of memory reading %s", path);
    }
    XXH3_64bits_reset(state);
    int64_t total = 0;
    for (;;) {
        ssize_t n = read(fd, buf, 1 << 20);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            st = sl_fail(err, SL_EIO, "cannot read %s: %s", path, strerror(errno));
            break;
        }
        if (n == 0)
            break;
        XXH3_64bits_update(state, buf, (size_t)n);
        total += n;
    }
    *digest = XXH3_64bits_digest(state);
    *bytes = total;
    XXH3_freeState(state);
    free(buf);
    close(fd);
    return st;
}

/* --- the manifest ----------------------------------------------------------------- */

sl_status sl_folder_write_manifest(const char *dir, const char *kind, const sl_folder_origin *origin, sl_err *err)
{
    name_list list;
    sl_status st = list_dir(dir, true, &list, err);
    if (st != SL_OK)
        return st;
    bool ok = true;
    cJSON *root = cJSON_CreateObject();
    sl__json_put(root, "format", cJSON_CreateString(MANIFEST_FORMAT), &ok);
    sl__json_put(root, "version", cJSON_CreateNumber(MANIFEST_VERSION), &ok);
    sl__json_put(root, "kind", cJSON_CreateString(kind), &ok);
    cJSON *from = cJSON_CreateObject();
    sl__json_put(from, "commit", cJSON_CreateString(origin && origin->commit ? origin->commit : "unknown"), &ok);
    sl__json_put(from, "machine", cJSON_CreateString(origin && origin->machine ? origin->machine : "unknown"), &ok);
    sl__json_put(from, "command", cJSON_CreateString(origin && origin->command ? origin->command : "unknown"), &ok);
    sl__json_put(root, "origin", from, &ok);
    cJSON *files = cJSON_CreateArray();
    for (int i = 0; i < list.count && st == SL_OK; i++) {
        char path[PATH_MAX];
        struct stat info;
        if (!join(path, sizeof path, dir, list.names[i])) {
            st = sl_fail(err, SL_EINVAL, "%s/%s: the path is too long", dir, list.names[i]);
            break;
        }
        if (lstat(path, &info) != 0 || !S_ISREG(info.st_mode)) {
            st = sl_fail(err, SL_EIO, "%s: not a regular file; a sluice %s folder holds only files", path, kind);
            break;
        }
        uint64_t digest;
        int64_t bytes;
        st = digest_file(path, &digest, &bytes, err);
        cJSON *entry = cJSON_CreateObject();
        sl__json_put(entry, "name", cJSON_CreateString(list.names[i]), &ok);
        sl__json_put(entry, "bytes", cJSON_CreateNumber((double)bytes), &ok);
        sl__json_put(entry, "xxh3", sl__json_hex64(digest), &ok);
        sl__json_append(files, entry, &ok);
    }
    sl__json_put(root, "files", files, &ok);
    /* Last, so that a reader can tell a whole manifest from one cut short
     * even where the cut still parses. */
    sl__json_put(root, "count", cJSON_CreateNumber(list.count), &ok);
    names_free(&list);
    if (st != SL_OK) {
        cJSON_Delete(root);
        return st;
    }
    char path[PATH_MAX];
    if (!join(path, sizeof path, dir, SL_FOLDER_MANIFEST)) {
        cJSON_Delete(root);
        return sl_fail(err, SL_EINVAL, "%s: the path is too long for its manifest", dir);
    }
    return sl__json_save(ok ? root : (cJSON_Delete(root), NULL), path, err);
}

/* One file a manifest lists. */
typedef struct manifest_entry {
    const char *name;
    int64_t bytes;
    uint64_t xxh3;
} manifest_entry;

typedef struct manifest {
    cJSON *root;
    manifest_entry *files;
    int count;
} manifest;

static void manifest_free(manifest *m)
{
    cJSON_Delete(m->root);
    free(m->files);
    memset(m, 0, sizeof *m);
}

/* Reads and checks dir's manifest: whole, of this kind, every entry a plain
 * name listed once with a size and a digest. */
static sl_status manifest_load(const char *dir, const char *kind, manifest *m, sl_err *err)
{
    memset(m, 0, sizeof *m);
    char path[PATH_MAX];
    if (!join(path, sizeof path, dir, SL_FOLDER_MANIFEST))
        return sl_fail(err, SL_EINVAL, "%s: the path is too long", dir);
    struct stat info;
    if (stat(dir, &info) != 0)
        return sl_fail(err, SL_ENOTFOUND, "%s: no such %s folder", dir, kind);
    if (!S_ISDIR(info.st_mode))
        return sl_fail(err, SL_EFORMAT, "%s is not a folder; a sluice %s folder has a manifest", dir, kind);
    if (access(path, F_OK) != 0)
        return sl_fail(
            err, SL_EFORMAT,
            "%s has no %s: it is not a complete %s folder (its writing was interrupted, or it was made by hand "
            "or by an older sluice); write it again",
            dir, SL_FOLDER_MANIFEST, kind);
    sl_status st = sl__json_parse_file(path, &m->root, err);
    if (st != SL_OK)
        return st;
    char text[64];
    int64_t version = 0, count = -1;
    st = sl__json_text(sl__json_member(m->root, "format"), path, "format", text, sizeof text, err);
    if (st == SL_OK && strcmp(text, MANIFEST_FORMAT) != 0)
        st = sl_fail(err, SL_EFORMAT, "%s: field 'format' is \"%s\", not \"%s\"", path, text, MANIFEST_FORMAT);
    if (st == SL_OK)
        st = sl__json_int64(sl__json_member(m->root, "version"), path, "version", &version, err);
    if (st == SL_OK && version != MANIFEST_VERSION)
        st = sl_fail(err, SL_EFORMAT, "%s: field 'version' is %" PRId64 "; this sluice reads version %d", path, version,
                     MANIFEST_VERSION);
    if (st == SL_OK)
        st = sl__json_text(sl__json_member(m->root, "kind"), path, "kind", text, sizeof text, err);
    if (st == SL_OK && strcmp(text, kind) != 0)
        st = sl_fail(err, SL_EFORMAT, "%s: field 'kind' is \"%s\"; this folder was read as a sluice %s folder", path,
                     text, kind);
    const cJSON *files = sl__json_member(m->root, "files");
    if (st == SL_OK)
        st = sl__json_expect(files, cJSON_Array, path, "files", err);
    if (st == SL_OK)
        st = sl__json_int64(sl__json_member(m->root, "count"), path, "count", &count, err);
    if (st == SL_OK && count != cJSON_GetArraySize(files))
        st =
            sl_fail(err, SL_EFORMAT, "%s: field 'count' is %" PRId64 " but 'files' lists %d; the manifest is not whole",
                    path, count, cJSON_GetArraySize(files));
    if (st == SL_OK && !(m->files = calloc((size_t)count + 1, sizeof *m->files)))
        st = sl_fail(err, SL_ENOMEM, "%s: out of memory", path);
    const cJSON *item;
    cJSON_ArrayForEach(item, files)
    {
        if (st != SL_OK)
            break;
        char field[64];
        manifest_entry *e = &m->files[m->count];
        snprintf(field, sizeof field, "files[%d]", m->count);
        st = sl__json_expect(item, cJSON_Object, path, field, err);
        snprintf(field, sizeof field, "files[%d].name", m->count);
        if (st == SL_OK)
            st = sl__json_expect(sl__json_member(item, "name"), cJSON_String, path, field, err);
        if (st == SL_OK) {
            e->name = sl__json_member(item, "name")->valuestring;
            if (!plain_name(e->name) || strcmp(e->name, SL_FOLDER_MANIFEST) == 0)
                st = sl_fail(err, SL_EFORMAT, "%s: field '%s' is \"%.80s\", not a file name in the folder", path, field,
                             e->name);
        }
        for (int k = 0; st == SL_OK && k < m->count; k++)
            if (strcmp(m->files[k].name, e->name) == 0)
                st = sl_fail(err, SL_EFORMAT, "%s: field '%s' lists '%s' a second time", path, field, e->name);
        snprintf(field, sizeof field, "files[%d].bytes", m->count);
        if (st == SL_OK)
            st = sl__json_int64(sl__json_member(item, "bytes"), path, field, &e->bytes, err);
        if (st == SL_OK && e->bytes < 0)
            st = sl_fail(err, SL_EFORMAT, "%s: field '%s' is negative (%" PRId64 ")", path, field, e->bytes);
        snprintf(field, sizeof field, "files[%d].xxh3", m->count);
        if (st == SL_OK)
            st = sl__json_hex64_value(sl__json_member(item, "xxh3"), path, field, &e->xxh3, err);
        m->count++;
    }
    if (st != SL_OK)
        manifest_free(m);
    return st;
}

/* Whether the file a manifest entry names is there, as listed. */
static sl_status check_entry(const char *dir, const manifest_entry *e, bool digests, sl_err *err)
{
    char path[PATH_MAX];
    if (!join(path, sizeof path, dir, e->name))
        return sl_fail(err, SL_EINVAL, "%s/%s: the path is too long", dir, e->name);
    struct stat info;
    if (lstat(path, &info) != 0)
        return sl_fail(err, SL_EFORMAT, "%s: its manifest lists '%s', which is missing; the folder is not whole", dir,
                       e->name);
    if (!S_ISREG(info.st_mode))
        return sl_fail(err, SL_EFORMAT, "%s: '%s' is not a regular file", dir, e->name);
    if ((int64_t)info.st_size != e->bytes)
        return sl_fail(err, SL_EFORMAT, "%s: '%s' has %lld bytes, but its manifest says %" PRId64, dir, e->name,
                       (long long)info.st_size, e->bytes);
    if (!digests)
        return SL_OK;
    uint64_t digest;
    int64_t bytes;
    sl_status st = digest_file(path, &digest, &bytes, err);
    if (st == SL_OK && (digest != e->xxh3 || bytes != e->bytes))
        st = sl_fail(err, SL_EFORMAT,
                     "%s: '%s' has XXH3-64 %016" PRIx64 ", but its manifest says %016" PRIx64
                     "; the file changed after the folder was written",
                     dir, e->name, digest, e->xxh3);
    return st;
}

sl_status sl_folder_check(const char *dir, const char *kind, bool digests, sl_err *err)
{
    manifest m;
    sl_status st = manifest_load(dir, kind, &m, err);
    if (st != SL_OK)
        return st;
    for (int i = 0; i < m.count && st == SL_OK; i++)
        st = check_entry(dir, &m.files[i], digests, err);
    name_list present = {0};
    if (st == SL_OK)
        st = list_dir(dir, false, &present, err);
    for (int i = 0; st == SL_OK && i < present.count; i++) {
        const char *name = present.names[i];
        bool listed = strcmp(name, SL_FOLDER_MANIFEST) == 0;
        for (int k = 0; !listed && k < m.count; k++)
            listed = strcmp(m.files[k].name, name) == 0;
        if (!listed)
            st = sl_fail(err, SL_EFORMAT,
                         "%s holds '%s', which its manifest does not list; the folder is not the "
                         "one that was written",
                         dir, name);
    }
    names_free(&present);
    manifest_free(&m);
    return st;
}

sl_status sl_folder_check_member(const char *dir, const char *kind, const char *name, sl_err *err)
{
    manifest m;
    sl_status st = manifest_load(dir, kind, &m, err);
    if (st != SL_OK)
        return st;
    int found = -1;
    for (int i = 0; i < m.count && found < 0; i++)
        if (strcmp(m.files[i].name, name) == 0)
            found = i;
    if (found < 0)
        st = sl_fail(err, SL_ENOTFOUND, "%s: its manifest does not list '%s'", dir, name);
    else
        st = check_entry(dir, &m.files[found], true, err);
    manifest_free(&m);
    return st;
}

/* --- staging and committing ------------------------------------------------------ */

/* Whether an existing target may be replaced by a folder of this kind. */
static sl_status replaceable(const char *target, const char *kind, sl_folder_names_fn names, sl_err *err)
{
    struct stat info;
    if (lstat(target, &info) != 0)
        return errno == ENOENT ? SL_OK : sl_fail(err, SL_EIO, "cannot inspect %s: %s", target, strerror(errno));
    if (S_ISLNK(info.st_mode))
        return sl_fail(err, SL_EIO, "%s is a symbolic link; a sluice %s folder is written only as a real folder",
                       target, kind);
    if (!S_ISDIR(info.st_mode))
        return sl_fail(err, SL_EIO, "%s exists and is not a folder; remove it or choose another path", target);
    char path[PATH_MAX];
    if (!join(path, sizeof path, target, SL_FOLDER_MANIFEST))
        return sl_fail(err, SL_EINVAL, "%s: the path is too long", target);
    if (access(path, F_OK) == 0) {
        /* A manifest of another kind, or a damaged one, says the folder is
         * not ours to replace. */
        manifest m;
        sl_status st = manifest_load(target, kind, &m, err);
        if (st != SL_OK)
            return sl_fail_context(err, "refusing to replace %s", target);
        manifest_free(&m);
        return SL_OK;
    }
    name_list present;
    sl_status st = list_dir(target, false, &present, err);
    for (int i = 0; st == SL_OK && i < present.count; i++)
        if (!is_temporary(present.names[i]) && (!names || !names(present.names[i])))
            st = sl_fail(err, SL_EIO,
                         "%s holds '%s', which is not a file of a sluice %s folder; refusing to replace a folder that "
                         "may hold someone's files (remove it, or choose another name)",
                         target, present.names[i], kind);
    if (present.names)
        names_free(&present);
    return st;
}

sl_status sl_folder_stage(const char *target, const char *kind, sl_folder_names_fn names, sl_staged_folder *out,
                          sl_err *err)
{
    memset(out, 0, sizeof *out);
    size_t len = strlen(target);
    while (len > 1 && target[len - 1] == '/')
        len--;
    if (len == 0 || len >= sizeof out->target - 32)
        return sl_fail(err, SL_EINVAL, "'%s' is not a usable folder path", target);
    memcpy(out->target, target, len);
    out->target[len] = '\0';
    sl__copy_string(out->kind, sizeof out->kind, kind);
    const char *base = strrchr(out->target, '/') ? strrchr(out->target, '/') + 1 : out->target;
    if (strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
        return sl_fail(err, SL_EINVAL, "'%s' names no folder of its own; give the %s a name", target, kind);
    char parent[PATH_MAX];
    parent_of(out->target, parent, sizeof parent);
    sl_status st = sl_make_dirs(parent, err);
    if (st != SL_OK)
        return st;
    /* A killed writer's staged folder lies here; so may a killed
     * writer's file temporaries. */
    sl_sweep_stale_temporaries(parent);
    if ((st = replaceable(out->target, kind, names, err)) != SL_OK)
        return st;
    if ((size_t)snprintf(out->path, sizeof out->path, "%s.tmp.%ld.XXXXXX", out->target, (long)getpid()) >=
        sizeof out->path)
        return sl_fail(err, SL_EINVAL, "'%s' is too long a path to stage beside", target);
    if (!mkdtemp(out->path)) {
        int e = errno;
        out->path[0] = '\0';
        return sl_fail(err, SL_EIO, "cannot create a temporary folder beside %s: %s", out->target, strerror(e));
    }
    sl__cleanup_register(out->path, true);
    /* mkdtemp makes it 0700; the folder gets what mkdir(2) gives a new one,
     * 0777 less the umask, like the files in it. */
    if (chmod(out->path, 0777 & ~sl__current_umask()) != 0) {
        int e = errno;
        sl_folder_abandon(out);
        return sl_fail(err, SL_EIO, "cannot set the mode of a temporary folder beside %s: %s", out->target,
                       strerror(e));
    }
    return SL_OK;
}

void sl_folder_abandon(sl_staged_folder *staged)
{
    if (!staged->path[0])
        return;
    sl__remove_tree(staged->path);
    sl__cleanup_unregister_path(staged->path);
    staged->path[0] = '\0';
}

/* Puts the staged folder at the target's name. An existing target is
 * exchanged with it in one step (renameat2's RENAME_EXCHANGE), so the name
 * never points at nothing; where the file system cannot exchange, the old
 * folder is renamed aside first. Either way the old contents end up at a
 * temporary name, which is removed. */
static sl_status put_in_place(sl_staged_folder *s, sl_err *err)
{
    struct stat info;
    bool exists = lstat(s->target, &info) == 0;
    if (!exists) {
        if (rename(s->path, s->target) == 0)
            return SL_OK;
        return sl_fail(err, SL_EIO, "cannot rename %s to %s: %s", s->path, s->target, strerror(errno));
    }
    if (renameat2(AT_FDCWD, s->path, AT_FDCWD, s->target, RENAME_EXCHANGE) == 0) {
        /* s->path now holds the old contents. */
        sl__remove_tree(s->path);
        return SL_OK;
    }
    char aside[PATH_MAX];
    if ((size_t)snprintf(aside, sizeof aside, "%s.tmp.%ld.XXXXXX", s->target, (long)getpid()) >= sizeof aside ||
        !mkdtemp(aside))
        return sl_fail(err, SL_EIO, "cannot make room to move %s aside: %s", s->target, strerror(errno));
    int slot = sl__cleanup_register(aside, true);
    /* rename(2) replaces the empty folder just made. */
    if (rename(s->target, aside) != 0) {
        int e = errno;
        rmdir(aside);
        sl__cleanup_unregister(slot);
        return sl_fail(err, SL_EIO, "cannot move %s aside: %s", s->target, strerror(e));
    }
    if (rename(s->path, s->target) != 0) {
        int e = errno;
        /* Put the old folder back: the target keeps what it held. */
        (void)rename(aside, s->target);
        sl__cleanup_unregister(slot);
        return sl_fail(err, SL_EIO, "cannot rename %s to %s: %s", s->path, s->target, strerror(e));
    }
    sl__remove_tree(aside);
    sl__cleanup_unregister(slot);
    return SL_OK;
}

sl_status sl_folder_commit(sl_staged_folder *staged, sl_err *err)
{
    sl_status st = sl_folder_check(staged->path, staged->kind, false, err);
    if (st == SL_OK) {
        sync_dir(staged->path);
        st = put_in_place(staged, err);
    }
    if (st != SL_OK) {
        sl_folder_abandon(staged);
        return st;
    }
    sl__cleanup_unregister_path(staged->path);
    staged->path[0] = '\0';
    char parent[PATH_MAX];
    parent_of(staged->target, parent, sizeof parent);
    sync_dir(parent);
    return SL_OK;
}

/* Copies a regular file's bytes to a new file, synced. */
static sl_status copy_file(const char *from, const char *to, sl_err *err)
{
    int in;
    sl_status st = sl__open_readonly(from, &in, err);
    if (st != SL_OK)
        return st;
    int out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    char *buf = malloc(1 << 20);
    if (out < 0 || !buf) {
        st = sl_fail(err, SL_EIO, "cannot create %s: %s", to, out < 0 ? strerror(errno) : "out of memory");
        goto done;
    }
    for (;;) {
        ssize_t n = read(in, buf, 1 << 20);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            st = sl_fail(err, SL_EIO, "cannot read %s: %s", from, strerror(errno));
            break;
        }
        if (n == 0)
            break;
        for (ssize_t at = 0; at < n;) {
            ssize_t w = write(out, buf + at, (size_t)(n - at));
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                st = sl_fail(err, SL_EIO, "cannot write %s: %s", to, w < 0 ? strerror(errno) : "no progress");
                goto done;
            }
            at += w;
        }
    }
    if (st == SL_OK && fsync(out) != 0)
        st = sl_fail(err, SL_EIO, "cannot sync %s: %s", to, strerror(errno));
done:
    free(buf);
    if (out >= 0)
        close(out);
    close(in);
    return st;
}

sl_status sl_folder_carry(const sl_staged_folder *staged, sl_err *err)
{
    struct stat info;
    if (lstat(staged->target, &info) != 0 || !S_ISDIR(info.st_mode))
        return SL_OK;
    name_list list;
    sl_status st = list_dir(staged->target, true, &list, err);
    for (int i = 0; st == SL_OK && i < list.count; i++) {
        char from[PATH_MAX], to[PATH_MAX];
        if (!join(from, sizeof from, staged->target, list.names[i]) ||
            !join(to, sizeof to, staged->path, list.names[i])) {
            st = sl_fail(err, SL_EINVAL, "%s/%s: the path is too long", staged->target, list.names[i]);
            break;
        }
        if (lstat(from, &info) != 0 || !S_ISREG(info.st_mode))
            continue;
        /* Files here are only ever replaced by a rename, never changed in
         * place, so the old folder and the new may share them. */
        if (link(from, to) != 0)
            st = copy_file(from, to, err);
    }
    if (list.names)
        names_free(&list);
    return st;
}

/* --- the lock --------------------------------------------------------------------- */

sl_status sl_folder_lock(const char *dir, const char *what, int *fd, sl_err *err)
{
    *fd = -1;
    char path[PATH_MAX];
    if (!join(path, sizeof path, dir, SL_FOLDER_LOCK))
        return sl_fail(err, SL_EINVAL, "%s: the path is too long", dir);
    int f = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (f < 0)
        return sl_fail(err, SL_EIO, "cannot open the lock file %s: %s", path, strerror(errno));
    if (flock(f, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        char holder[64] = "";
        ssize_t n = pread(f, holder, sizeof holder - 1, 0);
        holder[n > 0 ? n : 0] = '\0';
        holder[strcspn(holder, "\n")] = '\0';
        close(f);
        if (e != EWOULDBLOCK)
            return sl_fail(err, SL_EIO, "cannot lock %s: %s", path, strerror(e));
        return sl_fail(err, SL_EBUSY,
                       "%s is being written by another %s (%s); two runs in one folder would mix their records. "
                       "Wait for it to finish, or give this one another folder",
                       dir, what, holder[0] ? holder : "its pid is not known yet");
    }
    /* Who holds it, for the message a second writer prints. */
    char holder[64];
    int n = snprintf(holder, sizeof holder, "pid %ld\n", (long)getpid());
    if (ftruncate(f, 0) != 0 || pwrite(f, holder, (size_t)n, 0) != n) {
        /* The lock holds without the note; the message only says less. */
    }
    *fd = f;
    return SL_OK;
}

void sl_folder_unlock(int fd)
{
    if (fd >= 0)
        close(fd);
}

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup_registry.h"
#include "core/internal.h"
#include "sluice/core/fileio.h"

static sl_status write_all(int fd, const char *data, size_t size)
{
    while (size > 0) {
        ssize_t n = write(fd, data, size);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            /* A zero-byte write makes no progress; treat it as the disk
             * being full rather than spin. */
            if (n == 0)
                errno = ENOSPC;
            return SL_EIO;
        }
        data += n;
        size -= (size_t)n;
    }
    return SL_OK;
}

/* Makes the rename itself durable: without it a crash can lose the new
 * directory entry even though the file's data reached the disk. Some file
 * systems refuse fsync on a directory; the data is already safe then, so
 * that refusal is not an error. */
static void sync_parent_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    if (!dir)
        return;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
    free(dir);
}

/* The process's umask, read without changing it: umask(2) can only be read
 * by setting it, which would race with threads creating files. */
mode_t sl__current_umask(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    unsigned int mask = 022;
    char line[128];
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "Umask: %o", &mask) == 1)
            break;
    if (f)
        fclose(f);
    return (mode_t)(mask & 0777);
}

sl_status sl_write_file_atomic(const char *path, const void *data, size_t size, sl_err *err)
{
    /* The temporary file sits beside the target so that rename stays within
     * one file system, which is what makes it atomic. */
    /* Only a regular file is replaced. A symbolic link (to /dev/null, or to
     * a file elsewhere) or a device, FIFO or directory at the path is
     * refused rather than followed or clobbered. */
    struct stat target;
    if (lstat(path, &target) == 0 && !S_ISREG(target.st_mode))
        return sl_fail(err, SL_EIO, "cannot write %s: it is %s, not a regular file; remove it or choose another path",
                       path,
                       S_ISLNK(target.st_mode)   ? "a symbolic link"
                       : S_ISDIR(target.st_mode) ? "a directory"
                                                 : "a special file");
    /* "<path>.tmp.<pid>.XXXXXX": recognizably ours, and whose, so that a
     * later run can remove it once this process is gone (SIGKILL). */
    size_t size_needed = strlen(path) + 64;
    char *tmp = malloc(size_needed);
    if (!tmp)
        return sl_fail(err, SL_ENOMEM, "cannot write %s: out of memory", path);
    snprintf(tmp, size_needed, "%s.tmp.%ld.XXXXXX", path, (long)getpid());

    int fd = mkstemp(tmp);
    if (fd < 0) {
        int e = errno;
        free(tmp);
        return sl_fail(err, SL_EIO, "cannot create a temporary file beside %s: %s", path, strerror(e));
    }
    int cleanup_slot = sl__cleanup_register(tmp, false);
    /* mkstemp creates the file 0600; the result gets what a new file gets
     * from open(2), 0666 less the umask (0644 as a rule). The mode of a file
     * being replaced is never copied: a setuid or world-writable file there
     * must not make a setuid or world-writable record. */
    mode_t mode = 0666 & ~sl__current_umask();

    const char *step = NULL;
    if (fchmod(fd, mode) != 0)
        step = "set the mode of";
    else if (write_all(fd, data, size) != SL_OK)
        step = "write";
    else if (fsync(fd) != 0)
        step = "sync";
    int e = errno;
    if (close(fd) != 0 && !step) {
        step = "close";
        e = errno;
    }
    if (!step && rename(tmp, path) != 0) {
        step = "rename into place";
        e = errno;
    }
    if (step)
        unlink(tmp);
    sl__cleanup_unregister(cleanup_slot);
    if (step) {
        free(tmp);
        return sl_fail(err, SL_EIO, "cannot %s %s (via temporary file): %s; the previous file, if any, is unchanged",
                       step, path, strerror(e));
    }
    free(tmp);
    sync_parent_dir(path);
    return SL_OK;
}

sl_status sl_read_file(const char *path, char **data, size_t *size, sl_err *err)
{
    return sl__read_file_limited(path, SIZE_MAX - 1, false, data, size, err);
}

sl_status sl__read_file_limited(const char *path, size_t max_bytes, bool regular_only, char **data, size_t *size,
                                sl_err *err)
{
    *data = NULL;
    *size = 0;
    /* O_NONBLOCK: opening a FIFO for reading would otherwise wait for a
     * writer that may never come. Reads from a regular file ignore it. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | (regular_only ? O_NONBLOCK : 0));
    if (fd < 0) {
        int e = errno;
        return sl_fail(err, e == ENOENT ? SL_ENOTFOUND : SL_EIO, "cannot open %s: %s", path, strerror(e));
    }
    /* st_size is only a first guess: files in /proc report 0 and a file may
     * grow while we read, so read until end of file. */
    struct stat st;
    bool have_stat = fstat(fd, &st) == 0;
    if (regular_only && (!have_stat || !S_ISREG(st.st_mode))) {
        close(fd);
        return sl_fail(err, SL_EFORMAT, "%s is not a regular file (a device, FIFO or directory); refusing to read it",
                       path);
    }
    if (have_stat && st.st_size > 0 && (uint64_t)st.st_size > max_bytes) {
        close(fd);
        return sl_fail(err, SL_EFORMAT, "%s is %lld bytes, more than the %zu this reader accepts", path,
                       (long long)st.st_size, max_bytes);
    }
    size_t cap = have_stat && st.st_size > 0 ? (size_t)st.st_size + 1 : 4096;
    char *buf = malloc(cap);
    size_t used = 0;
    for (;;) {
        if (!buf) {
            close(fd);
            return sl_fail(err, SL_ENOMEM, "cannot read %s: out of memory", path);
        }
        if (used > max_bytes) {
            free(buf);
            close(fd);
            return sl_fail(err, SL_EFORMAT, "%s grew past the %zu bytes this reader accepts", path, max_bytes);
        }
        if (used + 1 >= cap) {
            char *grown = realloc(buf, cap * 2);
            if (!grown)
                free(buf);
            buf = grown;
            cap *= 2;
            continue;
        }
        ssize_t n = read(fd, buf + used, cap - used - 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            free(buf);
            close(fd);
            return sl_fail(err, SL_EIO, "cannot read %s: %s", path, strerror(e));
        }
        if (n == 0)
            break;
        used += (size_t)n;
    }
    close(fd);
    buf[used] = '\0';
    *data = buf;
    *size = used;
    return SL_OK;
}

static sl_status make_one_dir(const char *dir, const char *path, sl_err *err)
{
    if (mkdir(dir, 0755) == 0)
        return SL_OK;
    int e = errno;
    struct stat st;
    if (e == EEXIST && stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
        return SL_OK;
    if (e == EEXIST)
        return sl_fail(err, SL_EIO, "cannot create directory %s: %s exists and is not a directory", path, dir);
    return sl_fail(err, SL_EIO, "cannot create directory %s: creating %s failed: %s", path, dir, strerror(e));
}

sl_status sl_make_dirs(const char *path, sl_err *err)
{
    if (!path || !*path)
        return sl_fail(err, SL_EINVAL, "cannot create a directory with an empty path");
    char *dir = strdup(path);
    if (!dir)
        return sl_fail(err, SL_ENOMEM, "cannot create directory %s: out of memory", path);
    sl_status status = SL_OK;
    /* Create each prefix that ends at a slash, then the whole path; a
     * leading slash and repeated slashes yield empty prefixes to skip. */
    for (char *p = dir + 1; *p && status == SL_OK; p++) {
        if (*p != '/' || p[-1] == '/')
            continue;
        *p = '\0';
        status = make_one_dir(dir, path, err);
        *p = '/';
    }
    if (status == SL_OK)
        status = make_one_dir(dir, path, err);
    free(dir);
    return status;
}

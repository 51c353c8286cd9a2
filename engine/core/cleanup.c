/* Temporaries: the registry the signal handlers empty, the sweep of those
 * left by killed processes, and work directories (see sluice/core/cleanup.h).
 *
 * The handler may run on any thread at any moment, so it takes no lock,
 * allocates nothing and calls only system calls: unlink, rmdir, open,
 * getdents64 and unlinkat (readdir is not async-signal-safe; the
 * getdents64 system call under it is). */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cleanup_registry.h"
#include "core/internal.h"
#include "sluice/core/cleanup.h"

/* A run holds a few work directories and one temporary file per writing
 * thread at a time. */
#define CLEANUP_SLOTS 64

enum { SLOT_FREE = 0, SLOT_FILLING, SLOT_READY };

typedef struct cleanup_slot {
    atomic_int state;
    bool directory;
    char path[PATH_MAX];
} cleanup_slot;

static cleanup_slot slots[CLEANUP_SLOTS];

int sl__cleanup_register(const char *path, bool directory)
{
    size_t len = strlen(path);
    if (len >= PATH_MAX)
        return -1;
    for (int i = 0; i < CLEANUP_SLOTS; i++) {
        int expected = SLOT_FREE;
        if (!atomic_compare_exchange_strong(&slots[i].state, &expected, SLOT_FILLING))
            continue;
        memcpy(slots[i].path, path, len + 1);
        slots[i].directory = directory;
        atomic_store(&slots[i].state, SLOT_READY);
        return i;
    }
    return -1;
}

void sl__cleanup_unregister(int slot)
{
    if (slot >= 0 && slot < CLEANUP_SLOTS)
        atomic_store(&slots[slot].state, SLOT_FREE);
}

void sl__cleanup_unregister_path(const char *path)
{
    for (int i = 0; i < CLEANUP_SLOTS; i++) {
        /* Holding the slot while comparing keeps another thread from
         * refilling its path under the comparison. */
        int expected = SLOT_READY;
        if (!atomic_compare_exchange_strong(&slots[i].state, &expected, SLOT_FILLING))
            continue;
        if (strcmp(slots[i].path, path) == 0) {
            atomic_store(&slots[i].state, SLOT_FREE);
            return;
        }
        atomic_store(&slots[i].state, SLOT_READY);
    }
}

/* The record getdents64 fills, as the kernel lays it out. */
struct kernel_dirent64 {
    uint64_t ino;
    int64_t off;
    unsigned short reclen;
    unsigned char type;
    char name[];
};

static bool is_dot_or_dotdot(const char *name)
{
    return name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'));
}

/* Removes a directory's flat entries and the directory, with system calls
 * only. Work directories hold no subdirectories. */
static void remove_directory_in_handler(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        _Alignas(8) char buf[4096];
        long n;
        while ((n = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0) {
            for (long at = 0; at < n;) {
                const struct kernel_dirent64 *entry = (const void *)(buf + at);
                if (!is_dot_or_dotdot(entry->name))
                    unlinkat(fd, entry->name, 0);
                at += entry->reclen;
            }
        }
        close(fd);
    }
    rmdir(path);
}

/* What the handler says on stderr before the process dies of the signal
 * (sl_cleanup_set_last_words); NULL: nothing. */
static _Atomic(const char *) last_words;

void sl_cleanup_set_last_words(const char *text)
{
    atomic_store(&last_words, text);
}

static void on_signal(int signo)
{
    int saved_errno = errno;
    const char *words = atomic_load(&last_words);
    if (words) {
        /* write(2) and a hand-counted length: both async-signal-safe. */
        size_t n = 0;
        while (words[n])
            n++;
        while (n > 0) {
            ssize_t done = write(STDERR_FILENO, words, n);
            if (done <= 0)
                break;
            words += done;
            n -= (size_t)done;
        }
    }
    for (int i = 0; i < CLEANUP_SLOTS; i++) {
        if (atomic_load(&slots[i].state) != SLOT_READY)
            continue;
        if (slots[i].directory)
            remove_directory_in_handler(slots[i].path);
        else
            unlink(slots[i].path);
    }
    errno = saved_errno;
    /* SA_RESETHAND put the default action back and SA_NODEFER left the
     * signal unblocked, so this ends the process with the signal's status. */
    raise(signo);
}

void sl_cleanup_on_signals(void)
{
    static const int signals[] = {SIGINT, SIGTERM, SIGHUP};
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_signal;
    action.sa_flags = SA_RESETHAND | SA_NODEFER;
    sigemptyset(&action.sa_mask);
    for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++) {
        /* A signal ignored at start stays ignored: a shell starts
         * background jobs with SIGINT ignored, and nohup does the same for
         * SIGHUP; those callers asked for the run to survive it. */
        struct sigaction current;
        if (sigaction(signals[i], NULL, &current) == 0 && current.sa_handler == SIG_IGN)
            continue;
        sigaction(signals[i], &action, NULL);
    }
}

const char *sl_temp_base(void)
{
    const char *base = getenv("TMPDIR");
    return base && base[0] ? base : "/tmp";
}

/* Parses the decimal pid in [s, end); false unless it is all digits and in
 * range. */
static bool parse_pid(const char *s, const char *end, pid_t *pid)
{
    if (s >= end || end - s > 10)
        return false;
    long long value = 0;
    for (const char *c = s; c < end; c++) {
        if (!isdigit((unsigned char)*c))
            return false;
        value = value * 10 + (*c - '0');
    }
    if (value <= 0 || value > INT_MAX)
        return false;
    *pid = (pid_t)value;
    return true;
}

/* "sluice-<what>-<pid>-XXXXXX": the pid is the field before the last. */
static bool workdir_owner(const char *name, pid_t *pid)
{
    size_t len = strlen(name);
    if (strncmp(name, "sluice-", 7) != 0 || len < 7 + 1 + 1 + 1 + 1 + 6 || name[len - 7] != '-')
        return false;
    const char *pid_end = name + len - 7;
    const char *pid_start = pid_end;
    while (pid_start > name + 7 && pid_start[-1] != '-')
        pid_start--;
    return pid_start > name + 8 && parse_pid(pid_start, pid_end, pid);
}

/* "<target>.tmp.<pid>.XXXXXX", a file being replaced or a folder being
 * staged (sluice/core/folder.h). */
bool sl__temporary_owner(const char *name, pid_t *pid)
{
    size_t len = strlen(name);
    if (len < 5 + 1 + 1 + 6 || name[len - 7] != '.')
        return false;
    const char *pid_end = name + len - 7;
    const char *pid_start = pid_end;
    while (pid_start > name && isdigit((unsigned char)pid_start[-1]))
        pid_start--;
    return pid_start - name >= 5 && strncmp(pid_start - 5, ".tmp.", 5) == 0 && parse_pid(pid_start, pid_end, pid);
}

static bool process_exists(pid_t pid)
{
    return kill(pid, 0) == 0 || errno == EPERM;
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if (type == FTW_DP)
        rmdir(path);
    else
        unlink(path);
    return 0;
}

void sl__remove_tree(const char *dir)
{
    /* Depth first, never through a symbolic link or into another file
     * system: only what lies inside the folder itself goes. */
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

int sl_sweep_stale_temporaries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int removed = 0;
    struct dirent *entry;
    while ((entry = readdir(d)) != NULL) {
        pid_t pid;
        bool is_workdir = workdir_owner(entry->d_name, &pid);
        if (!is_workdir && !sl__temporary_owner(entry->d_name, &pid))
            continue;
        if (pid == getpid() || process_exists(pid))
            continue;
        struct stat st;
        if (fstatat(dirfd(d), entry->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        char path[PATH_MAX];
        if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, entry->d_name) >= sizeof path)
            continue;
        /* A work directory, or a folder staged beside its target, or
         * an old one moved aside (sluice/core/folder.h). */
        if (S_ISDIR(st.st_mode)) {
            sl__remove_tree(path);
            removed++;
        } else if (!is_workdir && S_ISREG(st.st_mode) && unlink(path) == 0) {
            removed++;
        }
    }
    closedir(d);
    return removed;
}

sl_status sl_workdir_create(const char *base, const char *what, char *dir, size_t size, sl_err *err)
{
    if ((size_t)snprintf(dir, size, "%s/sluice-%s-%ld-XXXXXX", base, what, (long)getpid()) >= size)
        return sl_fail(err, SL_EINVAL, "a work directory under '%s' would be too long a path", base);
    if (!mkdtemp(dir))
        return sl_fail(err, SL_EIO, "cannot create a work directory under %s: %s", base, strerror(errno));
    sl__cleanup_register(dir, true);
    return SL_OK;
}

void sl_workdir_remove(const char *dir)
{
    sl__remove_tree(dir);
    sl__cleanup_unregister_path(dir);
}

/* A peer's processes: starting one with its pipes, reading its lines under a
 * deadline, ending it, and sweeping every process it left behind, including
 * those that left its process group with setsid() (sluice is their child
 * subreaper for the session, so they come back to it rather than to init). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "peer.h"
#include "sluice/core/timing.h"

extern char **environ;

#define TAIL_SHOWN     160
/* Room for the peer's PYTHONPATH entry: the peers folder and the caller's
 * PYTHONPATH. A longer one is refused, naming both (it used to be cut). */
#define PYTHONPATH_MAX 8192

/* The environment of a peer: the caller's, with the peers folder first on
 * PYTHONPATH, so that a loader outside peers/ can `import sluice_peer`. */
static char **peer_environment(char *pythonpath, size_t size)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + 2, sizeof *env);
    if (!env)
        return NULL;
    const char *old = getenv("PYTHONPATH");
    int n_written =
        snprintf(pythonpath, size, "PYTHONPATH=%s%s%s", sl__peer_dir(), old && *old ? ":" : "", old ? old : "");
    /* Cut, it would name another folder: empty tells the caller to refuse. */
    if (n_written < 0 || (size_t)n_written >= size)
        pythonpath[0] = '\0';
    size_t k = 0;
    env[k++] = pythonpath;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "PYTHONPATH=", 11) != 0)
            env[k++] = environ[i];
    env[k] = NULL;
    return env;
}

static void close_pair(int p[2])
{
    if (p[0] >= 0)
        close(p[0]);
    if (p[1] >= 0)
        close(p[1]);
}

sl_status sl__peer_spawn(sl__peer_child *c, const char *const *argv, bool want_stdin, int keep_fd, sl_err *err)
{
    memset(c, 0, sizeof *c);
    c->pid = -1;
    c->in = c->out = c->errfd = -1;
    int in[2] = {-1, -1}, out[2] = {-1, -1}, errp[2] = {-1, -1};
    if ((want_stdin && pipe2(in, O_CLOEXEC) != 0) || pipe2(out, O_CLOEXEC) != 0 || pipe2(errp, O_CLOEXEC) != 0) {
        int e = errno;
        close_pair(in);
        close_pair(out);
        close_pair(errp);
        return sl_fail(err, SL_EIO, "cannot make a pipe for the peer: %s", strerror(e));
    }
    char pythonpath[PYTHONPATH_MAX];
    char **env = peer_environment(pythonpath, sizeof pythonpath);
    if (!env) {
        close_pair(in);
        close_pair(out);
        close_pair(errp);
        return sl_fail(err, SL_ENOMEM, "no memory for the peer's environment");
    }
    if (pythonpath[0] == '\0') {
        free(env);
        close_pair(in);
        close_pair(out);
        close_pair(errp);
        return sl_fail(err, SL_EINVAL,
                       "the peer's PYTHONPATH (the peers folder %s, then $PYTHONPATH) is longer than %d bytes; "
                       "shorten PYTHONPATH or SLUICE_PEERS_DIR",
                       sl__peer_dir(), PYTHONPATH_MAX - 1);
    }
    /* fork and exec rather than posix_spawn, for one thing posix_spawn
     * cannot do: PR_SET_PDEATHSIG, so that the peer is killed when sluice
     * dies, even of SIGKILL, which no handler and no sweep of sluice's can
     * follow. Between fork and exec the child calls only async-signal-safe
     * functions. The signal follows the thread that forked; sluice starts
     * peers from the thread that runs the bench, which outlives them. */
    pid_t parent = getpid();
    int exec_errno[2] = {-1, -1};
    if (pipe2(exec_errno, O_CLOEXEC) != 0) {
        int e = errno;
        free(env);
        close_pair(in);
        close_pair(out);
        close_pair(errp);
        return sl_fail(err, SL_EIO, "cannot make a pipe for the peer: %s", strerror(e));
    }
    pid_t pid = fork();
    if (pid == 0) {
        sigset_t none;
        sigemptyset(&none);
        /* Its own process group, so killing it also kills its workers. */
        int failed = setpgid(0, 0) != 0 || prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0;
        /* sluice died before the request took effect: nothing will. */
        if (getppid() != parent)
            _exit(127);
        if (!failed && want_stdin)
            failed = dup2(in[0], 0) < 0;
        else if (!failed) {
            int null = open("/dev/null", O_RDONLY);
            failed = null < 0 || dup2(null, 0) < 0;
        }
        failed = failed || dup2(out[1], 1) < 0 || dup2(errp[1], 2) < 0;
        /* The ring's descriptor is passed by number: its close-on-exec flag
         * cleared in the child only. */
        if (!failed && keep_fd >= 0)
            failed = fcntl(keep_fd, F_SETFD, 0) != 0;
        failed = failed || sigprocmask(SIG_SETMASK, &none, NULL) != 0;
        if (!failed)
            execve(argv[0], (char *const *)argv, env);
        int e = errno;
        ssize_t ignored = write(exec_errno[1], &e, sizeof e);
        (void)ignored;
        _exit(127);
    }
    int rc = pid < 0 ? errno : 0;
    /* Also here, so that the group exists before anything is sent to it,
     * whichever process runs first (EACCES once it has exec'd: harmless). */
    if (pid > 0)
        setpgid(pid, pid);
    close(exec_errno[1]);
    if (pid > 0) {
        /* The pipe closes on exec; a number on it is why exec failed. */
        int e = 0;
        ssize_t got;
        while ((got = read(exec_errno[0], &e, sizeof e)) < 0 && errno == EINTR)
            continue;
        if (got == (ssize_t)sizeof e) {
            waitpid(pid, NULL, 0);
            rc = e;
        }
    }
    close(exec_errno[0]);
    c->pid = pid > 0 && rc == 0 ? pid : -1;
    free(env);
    if (want_stdin)
        close(in[0]);
    close(out[1]);
    close(errp[1]);
    if (rc != 0) {
        if (want_stdin)
            close(in[1]);
        close(out[0]);
        close(errp[0]);
        c->pid = -1;
        return sl_fail(err, SL_EIO, "cannot start %s: %s", argv[0], strerror(rc));
    }
    c->in = want_stdin ? in[1] : -1;
    c->out = out[0];
    c->errfd = errp[0];
    return SL_OK;
}

static void keep_tail(sl__peer_child *c, const char *data, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (c->tail_used == sizeof c->tail) {
            memmove(c->tail, c->tail + TAIL_SHOWN, sizeof c->tail - TAIL_SHOWN);
            c->tail_used -= TAIL_SHOWN;
        }
        /* No control character reaches a record, or a terminal. */
        unsigned char byte = (unsigned char)data[i];
        c->tail[c->tail_used++] = byte == '\n' ? ' ' : byte < 0x20 || byte == 0x7F ? '?' : data[i];
    }
}

const char *sl__peer_stderr_tail(const sl__peer_child *c, char *buf, size_t size)
{
    size_t n = c->tail_used < TAIL_SHOWN ? c->tail_used : TAIL_SHOWN;
    /* It starts at a character, not inside one. */
    while (n > 0 && ((unsigned char)c->tail[c->tail_used - n] & 0xC0) == 0x80)
        n--;
    snprintf(buf, size, "%.*s", (int)n, c->tail + c->tail_used - n);
    return n ? buf : "(empty)";
}

int sl__peer_read_line(sl__peer_child *c, int64_t deadline_ns)
{
    for (;;) {
        char *nl = memchr(c->line, '\n', c->used);
        if (nl) {
            *nl = '\0';
            return 1;
        }
        if (c->used == sizeof c->line - 1)
            return -2;
        if (c->out_eof)
            return 0;
        int64_t left = deadline_ns - sl_now_ns();
        if (left <= 0)
            return -1;
        struct pollfd fds[2] = {{c->out, POLLIN, 0}, {c->err_eof ? -1 : c->errfd, POLLIN, 0}};
        int ms = (int)(left / 1000000 + 1);
        if (poll(fds, 2, ms) < 0 && errno != EINTR)
            return 0;
        if (fds[1].revents) {
            char buf[1024];
            ssize_t n = read(c->errfd, buf, sizeof buf);
            if (n > 0)
                keep_tail(c, buf, (size_t)n);
            else
                c->err_eof = true;
        }
        if (fds[0].revents) {
            ssize_t n = read(c->out, c->line + c->used, sizeof c->line - 1 - c->used);
            if (n > 0)
                c->used += (size_t)n;
            else
                c->out_eof = true;
        }
    }
}

void sl__peer_drop_line(sl__peer_child *c)
{
    size_t len = strlen(c->line) + 1;
    memmove(c->line, c->line + len, c->used - len);
    c->used -= len;
}

static void drain_stderr(sl__peer_child *c)
{
    char buf[1024];
    ssize_t n;
    int flags = fcntl(c->errfd, F_GETFL);
    fcntl(c->errfd, F_SETFL, flags | O_NONBLOCK);
    while (!c->err_eof && (n = read(c->errfd, buf, sizeof buf)) > 0)
        keep_tail(c, buf, (size_t)n);
}

bool sl__peer_finish(sl__peer_child *c, int64_t grace_ns, bool *killed_out, char *how, size_t size)
{
    /* Its stdin closes first: a peer reading requests takes that as the end. */
    if (c->in >= 0) {
        close(c->in);
        c->in = -1;
    }
    int status = 0;
    pid_t got = 0;
    int64_t until = sl_now_ns() + grace_ns;
    while ((got = waitpid(c->pid, &status, WNOHANG)) == 0 && sl_now_ns() < until)
        usleep(2000);
    bool killed = got == 0;
    /* The group goes in any case: a peer's workers must not outlive it. */
    kill(-c->pid, SIGKILL);
    if (killed)
        waitpid(c->pid, &status, 0);
    drain_stderr(c);
    close(c->out);
    close(c->errfd);
    if (killed)
        snprintf(how, size, "was killed");
    else if (WIFSIGNALED(status))
        snprintf(how, size, "died of signal %d", WTERMSIG(status));
    else
        snprintf(how, size, "exited with status %d", WEXITSTATUS(status));
    if (killed_out)
        *killed_out = killed;
    return !killed && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* Process pid's parent and process group from /proc/<pid>/stat; false
 * when it is gone. */
static bool stat_of(pid_t pid, pid_t *parent, pid_t *group)
{
    char path[64], text[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    /* The command name is in parentheses and may hold anything; the fields
     * after its last ')' are the state, the parent and the group. */
    char *close_paren = strrchr(text, ')');
    int ppid = -1, pgrp = -1;
    char state;
    if (!close_paren || sscanf(close_paren + 1, " %c %d %d", &state, &ppid, &pgrp) != 3)
        return false;
    *parent = (pid_t)ppid;
    *group = (pid_t)pgrp;
    return true;
}

static pid_t parent_of(pid_t pid)
{
    pid_t parent, group;
    return stat_of(pid, &parent, &group) ? parent : -1;
}

static pid_t group_of(pid_t pid)
{
    pid_t parent, group;
    return stat_of(pid, &parent, &group) ? group : -1;
}

/* This process's children, up to max, into out; returns how many. */
static int children(pid_t *out, int max)
{
    DIR *proc = opendir("/proc");
    if (!proc)
        return 0;
    pid_t self = getpid();
    int n = 0;
    struct dirent *e;
    while ((e = readdir(proc)) != NULL && n < max) {
        char *end = NULL;
        long pid = strtol(e->d_name, &end, 10);
        if (!end || *end != '\0' || pid <= 0)
            continue;
        if (parent_of((pid_t)pid) == self)
            out[n++] = (pid_t)pid;
    }
    closedir(proc);
    return n;
}

/* Adds the nanoseconds process pid's threads have run on a CPU to the
 * sample, from each thread's /proc/<pid>/task/<tid>/schedstat (the
 * scheduler's own count, not the 10 ms ticks of /proc/<pid>/stat), and each
 * thread's own count, while there is room. */
/* The CPU time of the children process pid has reaped (waited for), from
 * /proc/<pid>/stat's cutime and cstime, in ns: a helper that exited and
 * was reaped by a process of the tree before the last sample took its own
 * count with it, and its parent's is where it went (D21, attack 4). Clock
 * ticks (10 ms at 100 Hz): coarse, but it keeps the work. 0 when gone. */
static int64_t reaped_children_ns(pid_t pid)
{
    char path[64], text[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    /* After the command's last ')': state (field 3), then fields 4 to 15,
     * then cutime (16) and cstime (17). */
    char *close_paren = strrchr(text, ')');
    long long cutime = 0, cstime = 0;
    if (!close_paren || sscanf(close_paren + 1, " %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %lld %lld",
                               &cutime, &cstime) != 2)
        return 0;
    long ticks = sysconf(_SC_CLK_TCK);
    return (int64_t)((cutime + cstime) * (1000000000LL / (ticks > 0 ? ticks : 100)));
}

static void add_process_cpu(pid_t pid, sl__peer_cpu_sample *sample)
{
    sample->total_ns += reaped_children_ns(pid);
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *tasks = opendir(path);
    if (!tasks)
        return;
    struct dirent *e;
    while ((e = readdir(tasks)) != NULL) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        char stat_path[320];
        snprintf(stat_path, sizeof stat_path, "/proc/%d/task/%s/schedstat", (int)pid, e->d_name);
        FILE *f = fopen(stat_path, "r");
        long long ns = 0;
        if (f) {
            if (fscanf(f, "%lld", &ns) == 1) {
                sample->total_ns += ns;
                if (sample->nthreads < SL__PEER_SAMPLED_THREADS) {
                    sample->tid[sample->nthreads] = (pid_t)atoi(e->d_name);
                    sample->ns[sample->nthreads++] = ns;
                }
            }
            fclose(f);
        }
    }
    closedir(tasks);
}

static bool kept_child(const sl__peer_reaper *reaper, pid_t pid);

/* Whether pid belongs to the peer's tree: in its process group, or a
 * descendant of this process through a child that was not there when the
 * session began (the peer, or a process of its tree that left the group
 * and session and came back to this process, the subreaper). The same
 * processes the sweep kills. */
static bool in_tree(pid_t pid, pid_t peer, const sl__peer_reaper *reaper, pid_t self)
{
    if (group_of(pid) == peer)
        return true;
    pid_t at = pid;
    for (int depth = 0; depth < 64 && at > 1; depth++) {
        pid_t parent = parent_of(at);
        if (parent == self)
            return !kept_child(reaper, at);
        at = parent;
    }
    return false;
}

void sl__peer_tree_cpu(pid_t peer, const sl__peer_reaper *reaper, sl__peer_cpu_sample *sample)
{
    sample->total_ns = 0;
    sample->nthreads = 0;
    DIR *proc = opendir("/proc");
    if (!proc)
        return;
    pid_t self = getpid();
    struct dirent *e;
    while ((e = readdir(proc)) != NULL) {
        char *end = NULL;
        long pid = strtol(e->d_name, &end, 10);
        if (!end || *end != '\0' || pid <= 0 || pid == self)
            continue;
        if (in_tree((pid_t)pid, peer, reaper, self))
            add_process_cpu((pid_t)pid, sample);
    }
    closedir(proc);
}

/* Appends the children of every thread of process pid (each thread's
 * /proc/<pid>/task/<tid>/children) to out[n..max); returns the new count. */
static int thread_children(pid_t pid, pid_t *out, int n, int max)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *tasks = opendir(path);
    if (!tasks)
        return n;
    struct dirent *e;
    while ((e = readdir(tasks)) != NULL && n < max) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        char file[320];
        snprintf(file, sizeof file, "/proc/%d/task/%s/children", (int)pid, e->d_name);
        FILE *f = fopen(file, "r");
        if (!f)
            continue;
        int child = 0;
        while (n < max && fscanf(f, "%d", &child) == 1)
            out[n++] = (pid_t)child;
        fclose(f);
    }
    closedir(tasks);
    return n;
}

void sl__peer_tree_cpu_walk(pid_t peer, const sl__peer_reaper *reaper, sl__peer_cpu_sample *sample)
{
    pid_t self = getpid();
    char probe[64];
    snprintf(probe, sizeof probe, "/proc/%d/task/%d/children", (int)self, (int)self);
    if (access(probe, R_OK) != 0) {
        sl__peer_tree_cpu(peer, reaper, sample);
        return;
    }
    sample->total_ns = 0;
    sample->nthreads = 0;
    pid_t found[SL__PEER_SAMPLED_THREADS];
    int n = thread_children(self, found, 0, SL__PEER_SAMPLED_THREADS), kept = 0;
    for (int i = 0; i < n; i++)
        if (!kept_child(reaper, found[i]))
            found[kept++] = found[i];
    n = kept;
    for (int at = 0; at < n; at++) {
        add_process_cpu(found[at], sample);
        n = thread_children(found[at], found, n, SL__PEER_SAMPLED_THREADS);
    }
}

void sl__peer_keep_missing_threads(const sl__peer_cpu_sample *before, sl__peer_cpu_sample *after)
{
    int seen = after->nthreads;
    for (int j = 0; j < before->nthreads && after->nthreads < SL__PEER_SAMPLED_THREADS; j++) {
        bool present = false;
        for (int i = 0; i < seen && !present; i++)
            present = after->tid[i] == before->tid[j];
        if (!present) {
            after->tid[after->nthreads] = before->tid[j];
            after->ns[after->nthreads++] = before->ns[j];
        }
    }
}

int64_t sl__peer_busiest_thread_ns(const sl__peer_cpu_sample *before, const sl__peer_cpu_sample *after)
{
    int64_t most = 0;
    for (int i = 0; i < after->nthreads; i++) {
        int64_t earlier = 0;
        for (int j = 0; j < before->nthreads; j++)
            if (before->tid[j] == after->tid[i]) {
                earlier = before->ns[j];
                break;
            }
        if (after->ns[i] - earlier > most)
            most = after->ns[i] - earlier;
    }
    return most;
}

void sl__peer_reaper_begin(sl__peer_reaper *reaper)
{
    memset(reaper, 0, sizeof *reaper);
    int was = 0;
    if (prctl(PR_GET_CHILD_SUBREAPER, &was, 0, 0, 0) == 0)
        reaper->was_subreaper = was != 0;
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    reaper->nkept = children(reaper->kept, (int)(sizeof reaper->kept / sizeof reaper->kept[0]));
}

static bool kept_child(const sl__peer_reaper *reaper, pid_t pid)
{
    for (int i = 0; i < reaper->nkept; i++)
        if (reaper->kept[i] == pid)
            return true;
    return false;
}

int sl__peer_reaper_end(sl__peer_reaper *reaper)
{
    int killed = 0;
    /* Each round kills and reaps the children found; their own children
     * then come back to this process, and the next round finds them. A tree
     * is gone within its depth in rounds; the bound only stops a process
     * that forks without end. */
    for (int round = 0; round < 64; round++) {
        pid_t found[256];
        int n = children(found, 256), swept = 0;
        for (int i = 0; i < n; i++) {
            if (kept_child(reaper, found[i]))
                continue;
            kill(found[i], SIGKILL);
            waitpid(found[i], NULL, 0);
            swept++;
        }
        killed += swept;
        if (swept == 0)
            break;
    }
    if (!reaper->was_subreaper)
        prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
    return killed;
}

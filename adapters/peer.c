/* Running a peer loader: export the pipeline once, spawn the peer on the
 * export, read its per-batch lines under time limits, check each digest
 * against the reference's, then hand the sink the (verified equal) reference
 * batches so the bench's own checks and byte counts apply unchanged. The
 * peer's latencies are its own measurements (docs/peers.md). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "adapters.h"
#include "peer.h"
#include "sluice/cleanup.h"
#include "sluice/export.h"
#include "sluice/npy.h"
#include "sluice/timing.h"
#include "sluice_config.h"

extern char **environ;

#define LINE_MAX_BYTES 4096
#define TAIL_BYTES 160

const char *sl__peer_python(void)
{
    const char *python = getenv("SLUICE_PYTHON");
    return python && *python ? python : "/usr/bin/python3";
}

const char *sl__peer_venv_python(void)
{
    const char *python = getenv("SLUICE_PEER_PYTHON");
    return python && *python ? python : SLUICE_SOURCE_ROOT "/.venv-peers/bin/python";
}

static const char *python_of(const sl__peer *peer)
{
    if (peer->python)
        return peer->python();
    return peer->venv ? sl__peer_venv_python() : sl__peer_python();
}

/* What the last peer run said in its hello, and whether its output was
 * checked statistically; runs are one at a time. */
static struct {
    const sl_adapter *adapter;
    char framework[96];
    bool statistical;
} last_hello;

void sl__peer_framework(const sl_adapter *adapter, char *out, size_t size)
{
    snprintf(out, size, "%s", last_hello.adapter == adapter ? last_hello.framework : "");
}

void sl_adapter_last_equivalence(const sl_adapter *adapter, char *out, size_t size)
{
    snprintf(out, size, "%s", last_hello.adapter == adapter && last_hello.statistical ? "statistical" : "");
}

const char *sl__peer_dir(void)
{
    const char *dir = getenv("SLUICE_PEERS_DIR");
    return dir && *dir ? dir : SLUICE_SOURCE_ROOT "/peers";
}

/* --- the export, made once per pipeline and batch count ------------------- */

static struct {
    const sl_pipeline *pipeline;
    uint64_t fingerprint;
    int64_t nbatches;
    char dir[512];
    bool registered;
} export_cache;

static void remove_export(void)
{
    if (export_cache.dir[0])
        sl_workdir_remove(export_cache.dir);
    export_cache.dir[0] = '\0';
    export_cache.pipeline = NULL;
}

/* A bench runs every repetition of every peer of an instance on the same
 * batches, so one export serves them all; a new pipeline replaces it. */
static sl_status ensure_export(const sl_pipeline *pipeline, int64_t nbatches, sl_err *err)
{
    uint64_t fp = sl_pipeline_fingerprint(pipeline);
    if (export_cache.dir[0] && export_cache.pipeline == pipeline && export_cache.fingerprint == fp &&
        export_cache.nbatches == nbatches)
        return SL_OK;
    remove_export();
    if (!export_cache.registered) {
        atexit(remove_export);
        export_cache.registered = true;
    }
    sl_status st = sl_workdir_create(sl_temp_base(), "peer", export_cache.dir, sizeof export_cache.dir, err);
    if (st) {
        export_cache.dir[0] = '\0';
        return st;
    }
    sl_export_meta meta = {.kernels = sl_kernels_reference()};
    st = sl_export_write(pipeline, &meta, nbatches, export_cache.dir, err);
    if (st) {
        remove_export();
        return sl_fail_context(err, "exporting the pipeline for the peer");
    }
    export_cache.pipeline = pipeline;
    export_cache.fingerprint = fp;
    export_cache.nbatches = nbatches;
    return SL_OK;
}

/* --- the child process ------------------------------------------------------ */

typedef struct child {
    pid_t pid;
    int out, errfd;
    char line[LINE_MAX_BYTES];
    size_t used;
    char tail[2 * TAIL_BYTES];
    size_t tail_used;
    bool out_eof, err_eof;
} child;

static sl_status spawn(child *c, const char *const *argv, sl_err *err)
{
    int out[2], errp[2];
    if (pipe2(out, O_CLOEXEC) != 0)
        return sl_fail(err, SL_EIO, "cannot make a pipe for the peer: %s", strerror(errno));
    if (pipe2(errp, O_CLOEXEC) != 0) {
        close(out[0]);
        close(out[1]);
        return sl_fail(err, SL_EIO, "cannot make a pipe for the peer: %s", strerror(errno));
    }
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_adddup2(&actions, errp[1], 2);
    posix_spawnattr_init(&attr);
    /* Its own process group, so killing it also kills its workers. */
    posix_spawnattr_setpgroup(&attr, 0);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
    int rc = posix_spawn(&c->pid, argv[0], &actions, &attr, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    close(out[1]);
    close(errp[1]);
    if (rc != 0) {
        close(out[0]);
        close(errp[0]);
        return sl_fail(err, SL_EIO, "cannot start %s: %s", argv[0], strerror(rc));
    }
    c->out = out[0];
    c->errfd = errp[0];
    return SL_OK;
}

static void keep_tail(child *c, const char *data, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (c->tail_used == sizeof c->tail) {
            memmove(c->tail, c->tail + TAIL_BYTES, sizeof c->tail - TAIL_BYTES);
            c->tail_used -= TAIL_BYTES;
        }
        c->tail[c->tail_used++] = data[i] == '\n' ? ' ' : data[i];
    }
}

/* The last bytes the peer wrote to stderr, for a failure message. */
static const char *stderr_tail(const child *c, char *buf, size_t size)
{
    size_t n = c->tail_used < TAIL_BYTES ? c->tail_used : TAIL_BYTES;
    snprintf(buf, size, "%.*s", (int)n, c->tail + c->tail_used - n);
    return n ? buf : "(empty)";
}

/* Waits until a whole line is in c->line (returns 1), stdout closes (0), the
 * line grows past LINE_MAX_BYTES (-2) or deadline_ns passes (-1). */
static int read_line(child *c, int64_t deadline_ns)
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

static void drop_line(child *c)
{
    size_t len = strlen(c->line) + 1;
    memmove(c->line, c->line + len, c->used - len);
    c->used -= len;
}

static void drain_stderr(child *c)
{
    char buf[1024];
    ssize_t n;
    int flags = fcntl(c->errfd, F_GETFL);
    fcntl(c->errfd, F_SETFL, flags | O_NONBLOCK);
    while (!c->err_eof && (n = read(c->errfd, buf, sizeof buf)) > 0)
        keep_tail(c, buf, (size_t)n);
}

/* Ends the child: kills its group unless it exited by itself within
 * grace_ns, and describes how it ended into how. Returns true when it exited
 * with status 0 of its own accord. */
static bool finish(child *c, int64_t grace_ns, char *how, size_t size)
{
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
    return !killed && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* --- the protocol ------------------------------------------------------------ */

static double limit_s(double own, const char *env, double fallback)
{
    if (own > 0)
        return own;
    const char *text = getenv(env);
    double v = text ? strtod(text, NULL) : 0.0;
    return v > 0 ? v : fallback;
}

typedef struct session {
    const sl__peer *peer;
    child c;
    int64_t nbatches;
    const uint64_t *reference;
    int64_t *latency_ns;
    bool statistical;            /* digests are not compared: the batches are */
    int64_t first_mismatch;
    int64_t mismatches;
    uint64_t mismatch_digest;
    char framework[96];
} session;

/* Reads the hello, then every batch line. Fails with a reason that starts
 * with "crashed", "timeout" or "protocol". */
static sl_status converse(session *s, sl_err *err)
{
    const sl__peer *peer = s->peer;
    const char *name = peer->adapter.name;
    int64_t start = sl_now_ns();
    int64_t total = start + (int64_t)(limit_s(peer->total_s, "SLUICE_PEER_TOTAL_S", 1800.0) * 1e9);
    double startup = limit_s(peer->startup_s, "SLUICE_PEER_STARTUP_S", 120.0);
    double per_batch = limit_s(peer->batch_s, "SLUICE_PEER_BATCH_S", 60.0);
    for (int64_t i = -1; i < s->nbatches; i++) {
        double limit = i < 0 ? startup : per_batch;
        int64_t deadline = sl_now_ns() + (int64_t)(limit * 1e9);
        bool total_binds = deadline > total;
        int got = read_line(&s->c, total_binds ? total : deadline);
        char what[48];
        if (i < 0)
            snprintf(what, sizeof what, "its hello");
        else
            snprintf(what, sizeof what, "batch %" PRId64 " of %" PRId64, i, s->nbatches);
        if (got == -1)
            return sl_fail(err, SL_EIO, "timeout: %s sent nothing for %.3g s (%s limit) while %s was due", name,
                           total_binds ? (double)(total - start) / 1e9 : limit,
                           total_binds ? "total" : i < 0 ? "startup" : "per-batch", what);
        if (got == 0)
            return sl_fail(err, SL_EIO, "crashed: %s closed its output while %s was due", name, what);
        if (got == -2)
            return sl_fail(err, SL_EFORMAT, "protocol: %s printed a line longer than %d bytes while %s was due",
                           name, LINE_MAX_BYTES, what);
        cJSON *line = cJSON_Parse(s->c.line);
        char shown[64];
        snprintf(shown, sizeof shown, "%.40s", s->c.line);
        drop_line(&s->c);
        bool ok = cJSON_IsObject(line);
        if (ok && i < 0) {
            const cJSON *hello = cJSON_GetObjectItemCaseSensitive(line, "hello");
            const cJSON *protocol = cJSON_GetObjectItemCaseSensitive(line, "protocol");
            const cJSON *framework = cJSON_GetObjectItemCaseSensitive(line, "framework");
            ok = cJSON_IsString(hello) && cJSON_IsNumber(protocol) && protocol->valuedouble == 1;
            if (ok && cJSON_IsString(framework))
                snprintf(s->framework, sizeof s->framework, "%s", framework->valuestring);
        } else if (ok) {
            const cJSON *batch = cJSON_GetObjectItemCaseSensitive(line, "batch");
            const cJSON *latency = cJSON_GetObjectItemCaseSensitive(line, "latency_ns");
            const cJSON *digest = cJSON_GetObjectItemCaseSensitive(line, "digest");
            char *end = NULL;
            uint64_t value = 0;
            ok = cJSON_IsNumber(batch) && batch->valuedouble == (double)i && cJSON_IsNumber(latency) &&
                 latency->valuedouble >= 0 && cJSON_IsString(digest) && strlen(digest->valuestring) == 16;
            if (ok) {
                value = strtoull(digest->valuestring, &end, 16);
                ok = end && *end == '\0';
            }
            if (ok) {
                s->latency_ns[i] = (int64_t)latency->valuedouble;
                if (!s->statistical && value != s->reference[i]) {
                    if (s->mismatches++ == 0) {
                        s->first_mismatch = i;
                        s->mismatch_digest = value;
                    }
                }
            }
        }
        cJSON_Delete(line);
        if (!ok)
            return sl_fail(err, SL_EFORMAT, "protocol: %s printed '%s' where %s was due", name, shown, what);
    }
    return SL_OK;
}

static sl_status load_reference(uint64_t **digests, int64_t nbatches, sl_err *err)
{
    char path[640];
    snprintf(path, sizeof path, "%s/digests.npy", export_cache.dir);
    sl_tensor t;
    sl_status st = sl_npy_load(path, &t, err);
    if (st)
        return st;
    if (t.dtype != SL_I64 || t.shape.rank != 1 || t.shape.dims[0] != nbatches) {
        free(t.data);
        return sl_fail(err, SL_EFORMAT, "%s does not hold %" PRId64 " digests", path, nbatches);
    }
    *digests = t.data;
    return SL_OK;
}

/* Hands the sink each batch, computed by the reference kernels: the peer's
 * digest of it was equal, so these are the bytes the peer produced. */
static sl_status feed_sink(const sl_pipeline *pipeline, int64_t nbatches, sl_batch_sink sink, void *user, sl_err *err)
{
    /* A caller that only times the run (a scenario's timed passes) passes
     * no sink, as it may to every adapter. */
    if (!sink)
        return SL_OK;
    sl_batch *batch = NULL;
    sl_status st = sl_batch_create(sl_pipeline_output_schema(pipeline), sl_pipeline_get_spec(pipeline)->batch_size,
                                   &batch, err);
    sl_position pos = {0, 0};
    for (int64_t i = 0; i < nbatches && !st; i++) {
        st = sl_pipeline_produce(pipeline, sl_kernels_reference(), pos, batch, err);
        if (!st && sink(batch, user))
            break;
        pos = sl_position_advance(pipeline, pos, 1);
    }
    sl_batch_free(batch);
    return st;
}

sl_status sl__peer_run(const sl_adapter *adapter, const sl_pipeline *pipeline, const sl_run_request *request,
                       sl_batch_sink sink, void *user, int64_t *latency_ns, sl_err *err)
{
    const sl__peer *peer = (const sl__peer *)adapter;
    if (request->start.epoch != 0 || request->start.batch != 0)
        return sl_fail(err, SL_EUNSUPPORTED, "%s runs from the start of epoch 0 only", adapter->name);
    sl_status st = ensure_export(pipeline, request->nbatches, err);
    if (st)
        return st;
    last_hello.adapter = adapter;
    last_hello.framework[0] = '\0';
    last_hello.statistical = false;
    /* A plan whose draws are not all exported cannot be compared by digest:
     * the peer also writes its batches, into a folder of this run's own,
     * for the statistical check. */
    bool statistical = !sl_export_decisions_exported(pipeline);
    session s = {.peer = peer, .nbatches = request->nbatches, .latency_ns = latency_ns, .statistical = statistical};
    uint64_t *reference = NULL;
    st = load_reference(&reference, request->nbatches, err);
    if (st)
        return st;
    s.reference = reference;
    char batches_dir[512] = "", batches_arg[600] = "";
    if (statistical) {
        st = sl_workdir_create(sl_temp_base(), "peer-batches", batches_dir, sizeof batches_dir, err);
        if (st) {
            free(reference);
            return st;
        }
        snprintf(batches_arg, sizeof batches_arg, "--batches-dir=%s", batches_dir);
    }

    char script[1024], workers[32];
    if (peer->script[0] == '/')
        snprintf(script, sizeof script, "%s", peer->script);
    else
        snprintf(script, sizeof script, "%s/%s", sl__peer_dir(), peer->script);
    snprintf(workers, sizeof workers, "--workers=%d", request->workers);
    const char *argv[] = {python_of(peer), script, export_cache.dir, peer->args ? peer->args : workers,
                          statistical ? batches_arg : NULL, NULL};
    st = spawn(&s.c, argv, err);
    if (st) {
        free(reference);
        if (statistical)
            sl_workdir_remove(batches_dir);
        return st;
    }
    sl_err talk = {0};
    sl_status talked = converse(&s, &talk);
    snprintf(last_hello.framework, sizeof last_hello.framework, "%s", s.framework);
    char how[64], tail[TAIL_BYTES + 1];
    /* A peer that delivered everything, or closed its output, has a moment
     * to exit by itself, so its exit status can be reported. */
    bool clean = finish(&s.c, talked == SL_OK || s.c.out_eof ? 5000000000LL : 0, how, sizeof how);
    bool agree = true;
    char why[384] = "";
    if (talked != SL_OK) {
        st = sl_fail(err, talked, "%s; it %s; stderr: %s", talk.msg, how, stderr_tail(&s.c, tail, sizeof tail));
    } else if (!clean) {
        st = sl_fail(err, SL_EIO, "crashed: %s %s after its last batch; stderr: %s", adapter->name, how,
                     stderr_tail(&s.c, tail, sizeof tail));
    } else if (s.mismatches) {
        st = sl_fail(err, SL_EMISMATCH,
                     "%s: %" PRId64 " of %" PRId64 " batches differ from the reference's; batch %" PRId64
                     " digest %016" PRIx64 ", the reference's %016" PRIx64,
                     adapter->name, s.mismatches, s.nbatches, s.first_mismatch, s.mismatch_digest,
                     reference[s.first_mismatch]);
    } else if (statistical &&
               (st = sl__peer_statistical_check(pipeline, request->nbatches, batches_dir, &agree, why, sizeof why,
                                                err)) == SL_OK &&
               !agree) {
        st = sl_fail(err, SL_EMISMATCH, "%s: statistically not the reference's work: %s", adapter->name, why);
    } else if (!st) {
        last_hello.statistical = statistical;
        /* The sink gets the reference's batches: for a statistical peer they
         * are what it was held to, not its own bytes (docs/peers.md). */
        st = feed_sink(pipeline, request->nbatches, sink, user, err);
    }
    if (statistical)
        sl_workdir_remove(batches_dir);
    free(reference);
    return st;
}

/* --- availability ---------------------------------------------------------- */

bool sl__peer_litdata_not_installable(char *reason, size_t size)
{
    snprintf(reason, size, "not installable: litdata 0.2.76 needs torch >= 2.4 (it uses torch.uint16); Debian's "
                           "torch is 1.13, PyPI's torch 2.x pulls CUDA libraries, and PyTorch's CPU wheel index is "
                           "not reachable (docs/peers.md)");
    return false;
}

bool sl__peer_ffcv_not_installable(char *reason, size_t size)
{
    snprintf(reason, size, "not installable: pip install ffcv==1.0.2 fails on Python 3.11: its setup.py finds no "
             "opencv4/opencv via pkg-config to build its C extension (docs/peers.md)");
    return false;
}

bool sl__peer_energon_not_installable(char *reason, size_t size)
{
    snprintf(reason, size, "not installed: megatron-energon 7.4.1 needs torch 2 (PyPI's pulls CUDA 13 libraries); "
             "Debian's torch 1.13 fails its import on Python 3.11 (docs/peers.md)");
    return false;
}

bool sl__peer_needs_gpu(char *reason, size_t size)
{
    snprintf(reason, size, "needs a GPU: its pipelines run on a CUDA device, and sluice's peers run on the CPU");
    return false;
}

bool sl__peer_python_has(const char *modules, char *reason, size_t size)
{
    return sl__peer_python_has_in(sl__peer_python(), modules, reason, size);
}

bool sl__peer_python_has_in(const char *python, const char *modules, char *reason, size_t size)
{
    /* Asked once per Python and module list: sluice list and every bench
     * record ask. */
    static struct {
        char python[256];
        const char *modules;
        bool ok;
        char reason[256];
    } cache[16];
    for (int i = 0; i < 16 && cache[i].modules; i++)
        if ((cache[i].modules == modules || strcmp(cache[i].modules, modules) == 0) &&
            strcmp(cache[i].python, python) == 0) {
            if (!cache[i].ok && reason && size)
                snprintf(reason, size, "%s", cache[i].reason);
            return cache[i].ok;
        }
    bool ok = false;
    char why[256] = "";
    if (access(python, X_OK) != 0) {
        snprintf(why, sizeof why, "no Python at %.120s (ci/install-peers.sh makes it, or set SLUICE_PYTHON, "
                 "SLUICE_PEER_PYTHON or SLUICE_DATARAX_PYTHON)", python);
    } else {
        char list[160];
        snprintf(list, sizeof list, "%s", modules);
        const char *argv[20] = {python, "-c",
                                "import importlib.util, sys\n"
                                "m = [x for x in sys.argv[1:] if importlib.util.find_spec(x) is None]\n"
                                "print(' '.join(m))\n",
                                NULL};
        int n = 3;
        for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok && n < 19; tok = strtok_r(NULL, ",", &save))
            argv[n++] = tok;
        argv[n] = NULL;
        child c = {0};
        sl_err err = {0};
        if (spawn(&c, argv, &err) != SL_OK) {
            snprintf(why, sizeof why, "%.150s", err.msg);
        } else {
            int got = read_line(&c, sl_now_ns() + 30000000000LL);
            char how[64];
            char missing[128] = "";
            if (got == 1)
                snprintf(missing, sizeof missing, "%.100s", c.line);
            ok = finish(&c, 30000000000LL, how, sizeof how) && got == 1 && missing[0] == '\0';
            if (!ok && missing[0])
                snprintf(why, sizeof why, "python module(s) missing: %s (ci/install-peers.sh installs them)",
                         missing);
            else if (!ok)
                snprintf(why, sizeof why, "%s could not check its modules: it %s", python, how);
        }
    }
    for (int i = 0; i < 16; i++)
        if (!cache[i].modules) {
            snprintf(cache[i].python, sizeof cache[i].python, "%s", python);
            cache[i].modules = modules;
            cache[i].ok = ok;
            snprintf(cache[i].reason, sizeof cache[i].reason, "%s", why);
            break;
        }
    if (!ok && reason && size)
        snprintf(reason, size, "%s", why);
    return ok;
}

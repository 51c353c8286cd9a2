/* One conversation with a peer (docs/peers.md, "The protocol"): sluice
 * asks for each batch on the peer's stdin, the peer writes the batch's
 * arrays into a slot of a shared-memory ring whose descriptor sluice passed
 * it and answers with a line that gives its own latency and the arrays'
 * shapes. sluice reads the batch from the ring itself, so what it checks is
 * what the peer produced, and it bounds each latency by the time it saw
 * between its request and the line. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "core/internal.h"
#include "peer.h"
#include "sluice/core/timing.h"

#define PROTOCOL      3
/* A latency must be an integer below 2^53: every such integer is exact in
 * the JSON number a peer writes and in the double cJSON reads. */
#define LATENCY_LIMIT 9007199254740992.0

static size_t align64(size_t n)
{
    return (n + 63) & ~(size_t)63;
}

sl_status sl__peer_ring_create(sl__peer_ring *ring, const sl_schema *schema, int64_t rows, int nslots, sl_err *err)
{
    memset(ring, 0, sizeof *ring);
    ring->fd = -1;
    size_t at = 0;
    for (int f = 0; f < schema->nfields; f++) {
        ring->offset[f] = at;
        ring->capacity[f] = (size_t)rows * sl_field_element_bytes(&schema->fields[f]);
        at = align64(at + ring->capacity[f]);
    }
    ring->slot_bytes = at > 0 ? at : 64;
    ring->nslots = nslots;
    size_t total = ring->slot_bytes * (size_t)nslots;
    ring->fd = memfd_create("sluice-peer-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (ring->fd < 0)
        return sl_fail(err, SL_EIO, "cannot make the peer's shared-memory ring: %s", strerror(errno));
    if (ftruncate(ring->fd, (off_t)total) != 0) {
        int e = errno;
        close(ring->fd);
        ring->fd = -1;
        return sl_fail(err, SL_ENOMEM, "cannot size the peer's ring to %zu bytes: %s", total, strerror(e));
    }
    /* Sealed at its size before the peer gets it (D28): a peer that
     * truncated the ring would make sluice's next read of a slot a SIGBUS,
     * which ended the whole bench with no record. With these seals its
     * ftruncate fails (EPERM) and the ring stays whole; F_SEAL_SEAL stops
     * it from removing them. */
    if (fcntl(ring->fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
        int e = errno;
        close(ring->fd);
        ring->fd = -1;
        return sl_fail(err, SL_EIO, "cannot seal the peer's ring at %zu bytes: %s", total, strerror(e));
    }
    void *base = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, ring->fd, 0);
    if (base == MAP_FAILED) {
        int e = errno;
        close(ring->fd);
        ring->fd = -1;
        return sl_fail(err, SL_ENOMEM, "cannot map the peer's ring of %zu bytes: %s", total, strerror(e));
    }
    ring->base = base;
    return SL_OK;
}

void sl__peer_ring_destroy(sl__peer_ring *ring)
{
    if (ring->base)
        munmap(ring->base, ring->slot_bytes * (size_t)ring->nslots);
    if (ring->fd >= 0)
        close(ring->fd);
    ring->base = NULL;
    ring->fd = -1;
}

/* The longest limit a SLUICE_PEER_*_S variable may set: a week, far past
 * any run, and far inside what nanoseconds in an int64_t hold. */
#define LIMIT_MOST_S (7.0 * 24 * 3600)

/* A limit in seconds: the peer's own when it has one, else the environment
 * variable's, else the fallback. The variable must be a whole decimal
 * number of seconds in (0, a week]: anything else (abc, -1, nan, 1e400,
 * "5s") is refused naming it (D25), where it used to give the fallback in
 * silence, or, for 1e400, undefined behaviour converting it to ns. */
static sl_status limit_s(double own, const char *env, double fallback, double *out, sl_err *err)
{
    *out = fallback;
    if (own > 0) {
        *out = own;
        return SL_OK;
    }
    const char *text = getenv(env);
    if (!text || !*text)
        return SL_OK;
    char *end = NULL;
    errno = 0;
    double v = strtod(text, &end);
    bool digits = text[0] >= '0' && text[0] <= '9';
    if (!digits || end == text || *end != '\0' || errno == ERANGE || !isfinite(v) || !(v > 0) || v > LIMIT_MOST_S)
        return sl_fail(err, SL_EINVAL,
                       "environment variable %s: '%s' is not a number of seconds above 0 and at most %.0f (a week)",
                       env, text, LIMIT_MOST_S);
    *out = v;
    return SL_OK;
}

typedef struct talk {
    const sl__peer_session_spec *spec;
    sl__peer_session_result *result;
    sl__peer_child c;
    sl__peer_ring ring;
    int64_t total_deadline;
    int64_t started;
    double startup_s, batch_s; /* the limits, checked once */
    const sl__peer_reaper *reaper;
} talk;

/* Reads one line within the limit; fails as the protocol says. */
static sl_status next_line(talk *t, double limit, const char *limit_name, const char *what, sl_err *err)
{
    int64_t deadline = sl_now_ns() + (int64_t)(limit * 1e9);
    bool total_binds = deadline > t->total_deadline;
    int got = sl__peer_read_line(&t->c, total_binds ? t->total_deadline : deadline);
    const char *name = t->spec->name;
    if (got == -1)
        return sl_fail(err, SL_EIO, "timeout: %s sent nothing for %.3g s (%s limit) while %s was due", name,
                       total_binds ? (double)(t->total_deadline - t->started) / 1e9 : limit,
                       total_binds ? "total" : limit_name, what);
    if (got == 0)
        return sl_fail(err, SL_EIO, "crashed: %s closed its output while %s was due", name, what);
    if (got == -2)
        return sl_fail(err, SL_EFORMAT, "protocol: %s printed a line longer than %zu bytes while %s was due", name,
                       sizeof t->c.line - 1, what);
    return SL_OK;
}

static sl_status protocol_error(const talk *t, const char *shown, const char *what, const char *detail, sl_err *err)
{
    return sl_fail(err, SL_EFORMAT, "protocol: %s printed '%s' where %s was due%s%s", t->spec->name, shown, what,
                   detail[0] ? ": " : "", detail);
}

/* The line just read, parsed (NULL when it is no JSON), its start kept in
 * shown for a message, and dropped from the buffer. */
static cJSON *take_line(talk *t, char *shown, size_t size)
{
    cJSON *line = cJSON_Parse(t->c.line);
    snprintf(shown, size, "%.40s", t->c.line);
    sl__peer_drop_line(&t->c);
    return line;
}

static sl_status read_hello(talk *t, sl_err *err)
{
    sl_status st = next_line(t, t->startup_s, "startup", "its hello", err);
    if (st)
        return st;
    char shown[64];
    cJSON *line = take_line(t, shown, sizeof shown);
    const cJSON *hello = cJSON_GetObjectItemCaseSensitive(line, "hello");
    const cJSON *protocol = cJSON_GetObjectItemCaseSensitive(line, "protocol");
    const cJSON *framework = cJSON_GetObjectItemCaseSensitive(line, "framework");
    char detail[256] = "";
    if (!cJSON_IsObject(line) || !cJSON_IsString(hello) || !cJSON_IsNumber(protocol))
        snprintf(detail, sizeof detail, "a hello is {\"hello\": NAME, \"framework\": TEXT, \"protocol\": %d}",
                 PROTOCOL);
    else if (protocol->valuedouble != PROTOCOL)
        snprintf(detail, sizeof detail,
                 "it speaks protocol %g, sluice speaks %d (peers/sluice_peer.py speaks it: the hello first, "
                 "then the plan, which sluice writes after the hello and announces with a line 'plan')",
                 protocol->valuedouble, PROTOCOL);
    else if (cJSON_IsString(framework)) {
        /* Cut at a character, and no control character for a terminal. */
        sl__copy_string(t->result->framework, sizeof t->result->framework, framework->valuestring);
        sl__text_printable(t->result->framework);
    }
    cJSON_Delete(line);
    return detail[0] ? protocol_error(t, shown, "its hello", detail, err) : SL_OK;
}

/* write(2) to a pipe whose reader is gone, without the SIGPIPE that would
 * end sluice: the signal is blocked in this thread for the write and a
 * pending one taken back before the mask is restored. */
static ssize_t write_no_sigpipe(int fd, const void *data, size_t n)
{
    sigset_t pipe_only, old;
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
    ssize_t w = write(fd, data, n);
    int saved = errno;
    if (w < 0 && errno == EPIPE) {
        struct timespec none = {0, 0};
        sigtimedwait(&pipe_only, NULL, &none);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = saved;
    return w;
}

/* A request line: batch i into slot, "end" for i = -1, or, for i = -2,
 * "plan" followed by batch 0's request (the plan is in the export now). */
static sl_status send_request(talk *t, int64_t i, int slot, sl_err *err)
{
    char text[64];
    int n = i == -1   ? snprintf(text, sizeof text, "end\n")
            : i == -2 ? snprintf(text, sizeof text, "plan\n0 0\n")
                      : snprintf(text, sizeof text, "%" PRId64 " %d\n", i, slot);
    ssize_t w = write_no_sigpipe(t->c.in, text, (size_t)n);
    if (w != n)
        return sl_fail(err, SL_EIO, "crashed: %s stopped reading its requests (%s)", t->spec->name,
                       w < 0 ? strerror(errno) : "short write");
    return SL_OK;
}

/* Sends a request; when the peer no longer reads (it exited), the line it
 * printed before exiting, if any, is what says why: a line that is no JSON
 * object is a protocol error, as it would have been had the request gone
 * through first (which of the two happens first is the scheduler's
 * choice). Otherwise the failed request is the diagnosis. */
static sl_status request(talk *t, int64_t i, int slot, sl_err *err)
{
    sl_status st = send_request(t, i, slot, err);
    if (st == SL_OK || sl__peer_read_line(&t->c, sl_now_ns() + 1000000000) <= 0)
        return st;
    char shown[64], what[64];
    cJSON *line = take_line(t, shown, sizeof shown);
    bool object = cJSON_IsObject(line);
    cJSON_Delete(line);
    snprintf(what, sizeof what, "batch %" PRId64 " of %" PRId64, i < 0 ? 0 : i, t->spec->nbatches);
    return object ? st : protocol_error(t, shown, what, "", err);
}

/* A latency the protocol accepts: an integer in [0, 2^53). */
static bool valid_latency(const cJSON *latency)
{
    if (!cJSON_IsNumber(latency))
        return false;
    double v = latency->valuedouble;
    return v >= 0.0 && v < LATENCY_LIMIT && v == floor(v);
}

/* The shapes of the line, checked against the schema and the ring, into
 * the batch's view. */
static bool read_shapes(const talk *t, const cJSON *shapes, int64_t slot, sl__peer_batch *b, char *detail, size_t size)
{
    const sl_schema *schema = t->spec->output;
    if (!cJSON_IsArray(shapes) || cJSON_GetArraySize(shapes) != schema->nfields) {
        snprintf(detail, size, "\"shapes\" must list the %d output fields' shapes", schema->nfields);
        return false;
    }
    b->view.schema = *schema;
    b->view.capacity = t->spec->rows;
    for (int f = 0; f < schema->nfields; f++) {
        const sl_field_spec *field = &schema->fields[f];
        const cJSON *shape = cJSON_GetArrayItem(shapes, f);
        int rank = cJSON_IsArray(shape) ? cJSON_GetArraySize(shape) : -1;
        if (rank != field->shape.rank + 1) {
            snprintf(detail, size, "field '%s' must have rank %d (rows first)", field->name, field->shape.rank + 1);
            return false;
        }
        sl_tensor *tensor = &b->view.fields[f];
        tensor->dtype = field->dtype;
        tensor->shape.rank = rank;
        for (int d = 0; d < rank; d++) {
            const cJSON *dim = cJSON_GetArrayItem(shape, d);
            int64_t most = d == 0 ? t->spec->rows : field->shape.dims[d - 1];
            if (!cJSON_IsNumber(dim) || dim->valuedouble < 0 || dim->valuedouble > (double)most ||
                dim->valuedouble != floor(dim->valuedouble)) {
                snprintf(detail, size, "field '%s' dim %d must be an integer in [0, %" PRId64 "]", field->name, d,
                         most);
                return false;
            }
            tensor->shape.dims[d] = (int64_t)dim->valuedouble;
        }
        if (f > 0 && tensor->shape.dims[0] != b->view.fields[0].shape.dims[0]) {
            snprintf(detail, size, "field '%s' has %" PRId64 " rows, field '%s' %" PRId64, field->name,
                     tensor->shape.dims[0], schema->fields[0].name, b->view.fields[0].shape.dims[0]);
            return false;
        }
        tensor->data = t->ring.base + (size_t)slot * t->ring.slot_bytes + t->ring.offset[f];
    }
    b->view.count = schema->nfields ? b->view.fields[0].shape.dims[0] : 0;
    return true;
}

/* Reads batch i's line, requested at requested_ns into slot. */
static sl_status read_batch(talk *t, int64_t i, int slot, int64_t requested_ns, double per_batch, sl__peer_batch *b,
                            sl_err *err)
{
    char what[64];
    snprintf(what, sizeof what, "batch %" PRId64 " of %" PRId64, i, t->spec->nbatches);
    sl_status st = next_line(t, per_batch, "per-batch", what, err);
    int64_t arrived = sl_now_ns();
    if (st)
        return st;
    char shown[64];
    cJSON *line = take_line(t, shown, sizeof shown);
    const cJSON *batch = cJSON_GetObjectItemCaseSensitive(line, "batch");
    const cJSON *latency = cJSON_GetObjectItemCaseSensitive(line, "latency_ns");
    char detail[200] = "";
    memset(b, 0, sizeof *b);
    b->index = i;
    b->observed_ns = arrived - requested_ns;
    if (!cJSON_IsObject(line) || !cJSON_IsNumber(batch) || batch->valuedouble != (double)i)
        snprintf(detail, sizeof detail,
                 "a batch line is {\"batch\": %" PRId64 ", \"latency_ns\": N, \"shapes\": [...]}", i);
    else if (!valid_latency(latency))
        snprintf(detail, sizeof detail, "latency_ns must be an integer in [0, 2^53)");
    else if (latency->valuedouble > (double)b->observed_ns)
        snprintf(detail, sizeof detail,
                 "its latency_ns %.0f is longer than the %" PRId64 " ns sluice saw between its request and this line",
                 latency->valuedouble, b->observed_ns);
    else
        read_shapes(t, cJSON_GetObjectItemCaseSensitive(line, "shapes"), slot, b, detail, sizeof detail);
    if (!detail[0])
        b->latency_ns = (int64_t)latency->valuedouble;
    cJSON_Delete(line);
    if (detail[0])
        return protocol_error(t, shown, what, detail, err);
    t->result->latency_ns[i] = b->latency_ns;
    t->result->observed_ns[i] = b->observed_ns;
    return SL_OK;
}

/* Batch i's window, just after its answer and before the next request:
 * the busiest thread's growth since the sample before its request. The
 * samples alternate between the two buffers at spare (the first window
 * starts from the hello's sample, which is kept). */
static void sample_window(talk *t, int64_t i, sl__peer_cpu_sample **before, sl__peer_cpu_sample **after,
                          sl__peer_cpu_sample *spare)
{
    int64_t start = sl_now_ns();
    sl__peer_tree_cpu_walk(t->c.pid, t->reaper, *after);
    t->result->window_busiest_ns[i] = sl__peer_busiest_thread_ns(*before, *after);
    sl__peer_keep_missing_threads(*before, *after);
    t->result->window_sampling_ns += sl_now_ns() - start;
    sl__peer_cpu_sample *next = *after == spare ? spare + 1 : spare;
    *before = *after;
    *after = next;
}

/* Every batch: request, line, the caller's look at the slot. With a
 * consumer that does nothing between batches, batch i+1 is requested as
 * soon as batch i's line is in, and batch i is looked at while the peer
 * works on the other slot; with a digesting one, batch i is looked at
 * first. */
static sl_status converse(talk *t, sl_err *err)
{
    const sl__peer_session_spec *spec = t->spec;
    double per_batch = t->batch_s;
    sl_status st = read_hello(t, err);
    if (st)
        return st;
    /* From its start: what it did before its hello (imports, and whatever
     * else) is in the record beside the batches' CPU. The plan is written
     * after this sample, so everything the peer computes from it is in the
     * CPU sluice holds to its clocks (docs/peers.md, "What is verified"). */
    sl__peer_cpu_sample *cpu_first = malloc(4 * sizeof *cpu_first);
    if (!cpu_first)
        return sl_fail(err, SL_ENOMEM, "no memory to sample the peer's CPU time");
    sl__peer_cpu_sample *cpu_last = cpu_first + 1;
    /* The window samples (when asked): the one before the current batch's
     * request, and the one taken after its answer. */
    sl__peer_cpu_sample *window_before = cpu_first, *window_after = cpu_first + 2;
    sl__peer_tree_cpu(t->c.pid, t->reaper, cpu_first);
    t->result->setup_cpu_ns = cpu_first->total_ns;
    int64_t revealing = sl_now_ns();
    if (spec->reveal)
        st = spec->reveal(spec->reveal_user, err);
    int64_t first = sl_now_ns(), requested = first;
    t->result->reveal_ns = first - revealing;
    /* The first batch's window holds the loader's setup over the plan
     * (building its data set, its pipeline): it has the startup limit when
     * that is the longer. */
    double first_limit = fmax(t->startup_s, per_batch);
    if (!st)
        st = request(t, -2, 0, err);
    for (int64_t i = 0; i < spec->nbatches && !st; i++) {
        int slot = (int)(i % t->ring.nslots);
        sl__peer_batch b;
        st = read_batch(t, i, slot, requested, i == 0 ? first_limit : per_batch, &b, err);
        if (st)
            break;
        if (t->result->window_busiest_ns)
            sample_window(t, i, &window_before, &window_after, cpu_first + 2);
        if (i == 0) {
            sl__peer_tree_cpu(t->c.pid, t->reaper, cpu_last);
            t->result->plan_setup_cpu_ns = cpu_last->total_ns - cpu_first->total_ns;
        }
        bool last = i + 1 == spec->nbatches;
        if (spec->digest_between && spec->on_batch)
            st = spec->on_batch(spec->user, &b, err);
        if (!st && !last) {
            requested = sl_now_ns();
            st = request(t, i + 1, (int)((i + 1) % t->ring.nslots), err);
        }
        if (!st && !spec->digest_between && spec->on_batch)
            st = spec->on_batch(spec->user, &b, err);
        if (last) {
            t->result->batches_ns = sl_now_ns() - first;
            sl__peer_tree_cpu(t->c.pid, t->reaper, cpu_last);
            t->result->cpu_ns = cpu_last->total_ns - cpu_first->total_ns;
            t->result->busiest_thread_ns = sl__peer_busiest_thread_ns(cpu_first, cpu_last);
        }
    }
    free(cpu_first);
    /* "end" asks it to exit (the end of its stdin alone means sluice is
     * gone); a peer that exited on its own after its last answer is not
     * reading any more, and its exit status says how it ended. */
    if (!st) {
        sl_err ignored = {0};
        send_request(t, -1, 0, &ignored);
    }
    return st;
}

sl_status sl__peer_session_run(const sl__peer_session_spec *spec, sl__peer_session_result *result, sl_err *err)
{
    talk t = {.spec = spec, .result = result};
    result->framework[0] = '\0';
    result->slow_exit[0] = '\0';
    result->batches_ns = 0;
    result->cpu_ns = 0;
    result->busiest_thread_ns = 0;
    result->window_sampling_ns = 0;
    result->setup_cpu_ns = 0;
    result->plan_setup_cpu_ns = 0;
    result->reveal_ns = 0;
    /* Every limit is read before anything starts, so a bad one fails the
     * run at once with its name. The exit grace's default depends on the
     * run (below); only the variable is checked here. */
    double total_s = 0, exit_s = 0;
    sl_status st = limit_s(spec->startup_s, "SLUICE_PEER_STARTUP_S", 120.0, &t.startup_s, err);
    if (!st)
        st = limit_s(spec->batch_s, "SLUICE_PEER_BATCH_S", 60.0, &t.batch_s, err);
    if (!st)
        st = limit_s(spec->total_s, "SLUICE_PEER_TOTAL_S", 1800.0, &total_s, err);
    if (!st)
        st = limit_s(spec->exit_s, "SLUICE_PEER_EXIT_S", 0.0, &exit_s, err);
    if (st)
        return st;
    st = sl__peer_ring_create(&t.ring, spec->output, spec->rows, 2, err);
    if (st)
        return st;
    char ring_fd[32], ring_slots[32], ring_bytes[48];
    snprintf(ring_fd, sizeof ring_fd, "--ring-fd=%d", t.ring.fd);
    snprintf(ring_slots, sizeof ring_slots, "--ring-slots=%d", t.ring.nslots);
    snprintf(ring_bytes, sizeof ring_bytes, "--ring-slot-bytes=%zu", t.ring.slot_bytes);
    const char *argv[12] = {spec->python, spec->script, spec->export_dir, ring_fd, ring_slots, ring_bytes};
    int n = 6;
    for (int i = 0; i < 4 && spec->args[i]; i++)
        argv[n++] = spec->args[i];
    argv[n] = NULL;
    sl__peer_reaper reaper;
    sl__peer_reaper_begin(&reaper);
    t.reaper = &reaper;
    t.started = sl_now_ns();
    t.total_deadline = t.started + (int64_t)(total_s * 1e9);
    st = sl__peer_spawn(&t.c, argv, true, t.ring.fd, err);
    if (st) {
        sl__peer_reaper_end(&reaper);
        sl__peer_ring_destroy(&t.ring);
        return st;
    }
    sl_err talk_err = {0};
    sl_status talked = converse(&t, &talk_err);
    /* A peer that delivered everything has a moment to exit by itself, so
     * its exit status can be reported: by default the larger of 5 s and
     * half the time its batches took, since a framework's shutdown (thread
     * pools, worker processes) grows with what it ran. */
    double grace = exit_s > 0 ? exit_s : fmax(5.0, 0.5 * (double)result->batches_ns / 1e9);
    bool delivered = talked == SL_OK;
    bool killed = false;
    char how[64], tail[200];
    bool clean = sl__peer_finish(&t.c, delivered || t.c.out_eof ? (int64_t)(grace * 1e9) : 0, &killed, how, sizeof how);
    int swept = sl__peer_reaper_end(&reaper);
    (void)swept;
    if (!delivered) {
        st = sl_fail(err, talked, "%s; it %s; stderr: %s", talk_err.msg, how,
                     sl__peer_stderr_tail(&t.c, tail, sizeof tail));
    } else if (killed) {
        snprintf(result->slow_exit, sizeof result->slow_exit,
                 "delivered every batch, then had not exited after sluice's exit grace of %.3g s (%s) and was "
                 "killed",
                 grace, spec->exit_s > 0 || getenv("SLUICE_PEER_EXIT_S") ? "set for this run" : "the default");
    } else if (!clean) {
        st = sl_fail(err, SL_EIO, "crashed: %s %s after its last batch; stderr: %s", spec->name, how,
                     sl__peer_stderr_tail(&t.c, tail, sizeof tail));
    }
    sl__peer_ring_destroy(&t.ring);
    return st;
}

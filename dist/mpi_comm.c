/* sl_comm over MPI: check-ins (a barrier that sleeps while it waits and
 * knows who is missing), a gather of variable-sized reports, both watched
 * by the watchdog, an abort, and Cartesian meshes (MPI_Cart_create). */
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

#include "dist/sluice_mpi.h"

/* What a rank sends when it checks in: enough for rank 0 to name it, with
 * its process, when it later falls silent. */
typedef struct checkin_note {
    int64_t pid;
    char host[56];
} checkin_note;

typedef struct mpi_state {
    MPI_Comm comm;
    bool owned; /* freed with the sl_comm (meshes), unlike MPI_COMM_WORLD */
    /* Rank 0's record of every rank's last check-in note (world entries),
     * allocated on first use. */
    checkin_note *seen;
} mpi_state;

/* Message tags of the check-ins; a communicator's tags are its own. */
enum { TAG_CHECKIN = 0x51c0, TAG_RELEASE = 0x51c1 };

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* A pause between two polls: a rank that waits must not take a core from a
 * rank still being measured, and 200 µs costs the last rank at most that. */
static void pause_briefly(void)
{
    struct timespec pause = {0, 200 * 1000};
    nanosleep(&pause, NULL);
}

static MPI_Comm handle(const sl_comm *comm)
{
    return ((const mpi_state *)comm->state)->comm;
}

/* An MPI error as a sluice error naming the call. */
static sl_status mpi_fail(sl_err *err, int code, const char *call)
{
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
        snprintf(text, sizeof text, "error %d", code);
    return sl_fail(err, SL_EIO, "%s failed: %s", call, text);
}

/* The ranks a poll is still waiting for, "1, 3 (pid 42 on node7)", at most
 * four of them by number with their last check-in's process, into buf;
 * returns how many there are. */
static int name_silent(const mpi_state *state, const bool *arrived, int others, char *buf, size_t size)
{
    size_t used = 0;
    int nsilent = 0;
    buf[0] = '\0';
    for (int r = 0; r < others; r++) {
        if (arrived[r] || nsilent++ >= 4 || used >= size)
            continue;
        used += (size_t)snprintf(buf + used, size - used, "%s%d", used ? ", " : "", r + 1);
        const checkin_note *last = state->seen ? &state->seen[r + 1] : NULL;
        if (last && last->pid > 0 && used < size)
            used += (size_t)snprintf(buf + used, size - used, " (pid %lld on %s)", (long long)last->pid, last->host);
    }
    return nsilent;
}

/* Rank 0 waits for one receive from each other rank, polled; past the
 * limit it fails with SL_ETIMEDOUT naming the ranks that did not `what`
 * ("check in at ...", "send its report in the gather"), rather than "a
 * rank" as a collective would. */
static sl_status receive_from_all(const sl_comm *comm, MPI_Request *requests, const char *what, sl_err *err)
{
    int others = comm->world - 1;
    int *indices = malloc((size_t)others * sizeof *indices);
    bool *arrived = calloc((size_t)others, sizeof *arrived);
    if (!indices || !arrived) {
        free(indices);
        free(arrived);
        return sl_fail(err, SL_ENOMEM, "no memory to wait for %d ranks", others);
    }
    sl_status st = SL_OK;
    int count = 0;
    double start = now_s();
    while (count < others) {
        int done = 0;
        int rc = MPI_Testsome(others, requests, &done, indices, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS) {
            st = mpi_fail(err, rc, what);
            break;
        }
        for (int i = 0; i < done && done != MPI_UNDEFINED; i++) {
            arrived[indices[i]] = true;
            count++;
        }
        if (count == others)
            break;
        if (comm->watchdog_s > 0 && now_s() - start > comm->watchdog_s) {
            char silent[SL_ERR_MAX / 2];
            int nsilent = name_silent(comm->state, arrived, others, silent, sizeof silent);
            st = sl_fail(err, SL_ETIMEDOUT,
                         "watchdog: rank%s %s%s of %d did not %s within %.0f s (SLUICE_DIST_TIMEOUT_S=%.0f): "
                         "stopped, frozen or stuck",
                         nsilent == 1 ? "" : "s", silent, nsilent > 4 ? " and more" : "", comm->world, what,
                         comm->watchdog_s, comm->watchdog_s);
            break;
        }
        pause_briefly();
    }
    /* On a timeout the job is about to be aborted; the receives still
     * posted go with it. */
    free(indices);
    free(arrived);
    return st;
}

/* Message tags of the gather, apart from the check-ins'. */
enum { TAG_GATHER_SIZE = 0x51c2, TAG_GATHER_GO = 0x51c3, TAG_GATHER_DATA = 0x51c4 };

/* Rank 0's side of the gather: every rank's report size, the go-ahead to
 * each, then every report, each a receive from a named rank, so that a rank
 * stopped in the gather is named as one stopped at a check-in is (D26). */
static sl_status gather_root(const sl_comm *comm, const void *data, size_t bytes, void **out, size_t *counts,
                             sl_err *err)
{
    int world = comm->world, others = world - 1;
    unsigned long long *sizes = calloc((size_t)world, sizeof *sizes);
    MPI_Request *requests = malloc((size_t)(others > 0 ? others : 1) * sizeof *requests);
    unsigned char *all = NULL;
    size_t *offsets = calloc((size_t)world, sizeof *offsets);
    if (!sizes || !requests || !offsets) {
        free(sizes);
        free(requests);
        free(offsets);
        return sl_fail(err, SL_ENOMEM, "cannot allocate the sizes of %d reports", world);
    }
    sl_status st = SL_OK;
    int rc = MPI_SUCCESS;
    sizes[0] = bytes;
    for (int r = 0; r < others && rc == MPI_SUCCESS; r++)
        rc = MPI_Irecv(&sizes[r + 1], 1, MPI_UNSIGNED_LONG_LONG, r + 1, TAG_GATHER_SIZE, handle(comm), &requests[r]);
    st = rc != MPI_SUCCESS ? mpi_fail(err, rc, "MPI_Irecv of a report size")
                           : receive_from_all(comm, requests, "send its report's size in the gather", err);
    /* Whether the reports fit and could be allocated is said to every rank
     * before anyone sends one, so that no rank waits on a send that will
     * never be received. */
    if (st == SL_OK) {
        unsigned long long total = 0;
        for (int r = 0; r < world; r++) {
            offsets[r] = (size_t)total;
            total += sizes[r];
        }
        if (total > INT_MAX)
            st = sl_fail(err, SL_EUNSUPPORTED, "the ranks' reports total %llu bytes; one gather takes at most %d",
                         total, INT_MAX);
        else if (!(all = malloc((size_t)total + 1)))
            st = sl_fail(err, SL_ENOMEM, "cannot allocate %llu bytes for the ranks' reports", total);
        char go = st == SL_OK;
        for (int r = 0; r < others && rc == MPI_SUCCESS; r++)
            rc = MPI_Send(&go, 1, MPI_BYTE, r + 1, TAG_GATHER_GO, handle(comm));
        if (rc != MPI_SUCCESS && st == SL_OK)
            st = mpi_fail(err, rc, "MPI_Send of the gather's go-ahead");
    }
    if (st == SL_OK) {
        memcpy(all, data, bytes);
        for (int r = 0; r < others && rc == MPI_SUCCESS; r++)
            rc = MPI_Irecv(all + offsets[r + 1], (int)sizes[r + 1], MPI_BYTE, r + 1, TAG_GATHER_DATA, handle(comm),
                           &requests[r]);
        st = rc != MPI_SUCCESS ? mpi_fail(err, rc, "MPI_Irecv of a report")
                               : receive_from_all(comm, requests, "send its report in the gather", err);
    }
    if (st == SL_OK) {
        for (int r = 0; r < world; r++)
            counts[r] = (size_t)sizes[r];
        *out = all;
        all = NULL;
    }
    free(all);
    free(sizes);
    free(requests);
    free(offsets);
    return st;
}

/* Waits for a rank other than 0's requests, polled, for twice the limit,
 * so that rank 0, which can name a silent rank, gives up first. */
static sl_status wait_on_root(const sl_comm *comm, int n, MPI_Request *requests, const char *what, sl_err *err)
{
    double start = now_s();
    for (;;) {
        int done = 0;
        int rc = MPI_Testall(n, requests, &done, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS)
            return mpi_fail(err, rc, what);
        if (done)
            return SL_OK;
        if (comm->watchdog_s > 0 && now_s() - start > 2 * comm->watchdog_s)
            return sl_fail(err, SL_ETIMEDOUT,
                           "watchdog: rank %d waited %.0f s for %s (twice SLUICE_DIST_TIMEOUT_S=%.0f): rank 0 is "
                           "stopped, frozen or stuck",
                           comm->rank, now_s() - start, what, comm->watchdog_s);
        pause_briefly();
    }
}

/* Another rank's side: its size, rank 0's go-ahead, then its report. */
static sl_status gather_other(const sl_comm *comm, const void *data, size_t bytes, sl_err *err)
{
    if (bytes > INT_MAX)
        return sl_fail(err, SL_EUNSUPPORTED, "a report of %zu bytes is too large to send", bytes);
    unsigned long long mine = bytes;
    char go = 0;
    MPI_Request request;
    int rc = MPI_Isend(&mine, 1, MPI_UNSIGNED_LONG_LONG, 0, TAG_GATHER_SIZE, handle(comm), &request);
    sl_status st = rc != MPI_SUCCESS ? mpi_fail(err, rc, "MPI_Isend of the report size")
                                     : wait_on_root(comm, 1, &request, "rank 0 to take its report's size", err);
    if (st == SL_OK) {
        rc = MPI_Irecv(&go, 1, MPI_BYTE, 0, TAG_GATHER_GO, handle(comm), &request);
        st = rc != MPI_SUCCESS ? mpi_fail(err, rc, "MPI_Irecv of the gather's go-ahead")
                               : wait_on_root(comm, 1, &request, "the gather's go-ahead", err);
    }
    if (st == SL_OK && !go)
        return sl_fail(err, SL_EIO, "rank 0 could not receive the reports");
    if (st == SL_OK) {
        rc = MPI_Isend(data, (int)bytes, MPI_BYTE, 0, TAG_GATHER_DATA, handle(comm), &request);
        st = rc != MPI_SUCCESS ? mpi_fail(err, rc, "MPI_Isend of the report")
                               : wait_on_root(comm, 1, &request, "rank 0 to take its report", err);
    }
    return st;
}

static sl_status mpi_gather(const sl_comm *comm, const void *data, size_t bytes, void **out, size_t *counts,
                            sl_err *err)
{
    /* Point to point rather than MPI_Igatherv: every step is polled under
     * the watchdog either way, but only a receive from a named rank can say
     * which rank stopped. */
    return comm->rank == 0 ? gather_root(comm, data, bytes, out, counts, err) : gather_other(comm, data, bytes, err);
}

/* Rank 0's side of a check-in: a receive from every other rank, polled;
 * past the limit, the ranks that have not arrived are named, with the
 * process they last checked in from. Then a release to each. */
static sl_status checkin_root(const sl_comm *comm, mpi_state *state, const char *step, sl_err *err)
{
    int others = comm->world - 1;
    MPI_Request *requests = malloc((size_t)others * sizeof *requests);
    checkin_note *notes = calloc((size_t)others, sizeof *notes);
    if (!state->seen)
        state->seen = calloc((size_t)comm->world, sizeof *state->seen);
    if (!requests || !notes || !state->seen) {
        free(requests);
        free(notes);
        return sl_fail(err, SL_ENOMEM, "no memory to check %d ranks in", comm->world);
    }
    int rc = MPI_SUCCESS;
    for (int r = 0; r < others && rc == MPI_SUCCESS; r++)
        rc = MPI_Irecv(&notes[r], (int)sizeof notes[r], MPI_BYTE, r + 1, TAG_CHECKIN, handle(comm), &requests[r]);
    char what[256];
    snprintf(what, sizeof what, "check in at %s", step);
    sl_status st =
        rc != MPI_SUCCESS ? mpi_fail(err, rc, "MPI_Irecv of a check-in") : receive_from_all(comm, requests, what, err);
    /* Each rank's note names it, with its process, if it later falls
     * silent. */
    if (st == SL_OK)
        memcpy(state->seen + 1, notes, (size_t)others * sizeof *notes);
    char release = 1;
    for (int r = 0; st == SL_OK && r < others; r++) {
        rc = MPI_Send(&release, 1, MPI_BYTE, r + 1, TAG_RELEASE, handle(comm));
        if (rc != MPI_SUCCESS)
            st = mpi_fail(err, rc, "MPI_Send of a release");
    }
    /* On a timeout the job is about to be aborted; the receives still
     * posted go with it. */
    free(requests);
    free(notes);
    return st;
}

/* Another rank's side: its note to rank 0, then rank 0's release, both
 * polled; it waits twice the limit, so that rank 0, which can name the
 * silent rank, gives up first. */
static sl_status checkin_other(const sl_comm *comm, const char *step, sl_err *err)
{
    checkin_note note = {.pid = (int64_t)getpid()};
    if (gethostname(note.host, sizeof note.host) != 0)
        snprintf(note.host, sizeof note.host, "unknown");
    note.host[sizeof note.host - 1] = '\0';
    MPI_Request requests[2];
    char release = 0;
    int rc = MPI_Isend(&note, (int)sizeof note, MPI_BYTE, 0, TAG_CHECKIN, handle(comm), &requests[0]);
    if (rc == MPI_SUCCESS)
        rc = MPI_Irecv(&release, 1, MPI_BYTE, 0, TAG_RELEASE, handle(comm), &requests[1]);
    if (rc != MPI_SUCCESS)
        return mpi_fail(err, rc, "posting a check-in");
    char what[256];
    snprintf(what, sizeof what, "rank 0's release after checking in at %s", step);
    return wait_on_root(comm, 2, requests, what, err);
}

static sl_status mpi_checkin(const sl_comm *comm, const char *step, sl_err *err)
{
    if (comm->world == 1)
        return SL_OK;
    mpi_state *state = comm->state;
    return comm->rank == 0 ? checkin_root(comm, state, step, err) : checkin_other(comm, step, err);
}

static void mpi_abort(const sl_comm *comm, int code, const char *message)
{
    fprintf(stderr, "sluice: rank %d: %s; ending the job\n", comm->rank, message);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, code);
}

static const sl_comm_ops mpi_ops;

static sl_status wrap(MPI_Comm c, bool owned, sl_comm **out, sl_err *err)
{
    sl_comm *comm = calloc(1, sizeof *comm);
    mpi_state *state = calloc(1, sizeof *state);
    if (!comm || !state) {
        free(comm);
        free(state);
        return sl_fail(err, SL_ENOMEM, "cannot allocate a communicator");
    }
    *state = (mpi_state){.comm = c, .owned = owned};
    *comm = (sl_comm){.ops = &mpi_ops, .ndims = 1, .state = state};
    MPI_Comm_rank(c, &comm->rank);
    MPI_Comm_size(c, &comm->world);
    comm->dims[0] = comm->world;
    comm->coords[0] = comm->rank;
    *out = comm;
    return SL_OK;
}

static sl_status mpi_mesh(const sl_comm *comm, sl_comm **out, sl_err *err)
{
    /* The parent's communicator itself, not MPI_Cart_create's: that is a
     * blocking collective no watchdog can bound (a rank stopped between the
     * mesh's check-in and it left every other rank waiting in it forever),
     * and with reordering off a Cartesian communicator holds the parent's
     * ranks in the parent's order. sluice uses a mesh for its coordinates,
     * which sl_comm_mesh computes, so nothing is lost. */
    return wrap(handle(comm), false, out, err);
}

static void mpi_release(sl_comm *comm)
{
    mpi_state *state = comm->state;
    if (state && state->owned)
        MPI_Comm_free(&state->comm);
    if (state)
        free(state->seen);
    free(state);
    free(comm);
}

static const sl_comm_ops mpi_ops = {
    .name = "mpi",
    .gather = mpi_gather,
    .checkin = mpi_checkin,
    .abort = mpi_abort,
    .mesh = mpi_mesh,
    .release = mpi_release,
};

sl_status sl_mpi_init(int *argc, char ***argv, sl_comm **world, sl_err *err)
{
    *world = NULL;
    int provided = 0;
    int rc = MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
    if (rc != MPI_SUCCESS)
        return sl_fail(err, SL_EIO, "MPI_Init_thread failed with error %d", rc);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (provided < MPI_THREAD_FUNNELED) {
        MPI_Finalize();
        return sl_fail(err, SL_EUNSUPPORTED, "this MPI provides thread level %d; sluice needs MPI_THREAD_FUNNELED",
                       provided);
    }
    sl_status st = wrap(MPI_COMM_WORLD, false, world, err);
    if (st != SL_OK)
        MPI_Finalize();
    return st;
}

void sl_mpi_finalize(sl_comm *world)
{
    sl_comm_free(world);
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized)
        MPI_Finalize();
}

void sl_mpi_library_version(char *buf, size_t size)
{
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int length = 0;
    if (MPI_Get_library_version(version, &length) != MPI_SUCCESS)
        length = 0;
    version[length < (int)sizeof version ? length : (int)sizeof version - 1] = '\0';
    /* The first line only ("Open MPI v4.1.4, package: ..."). */
    char *newline = strchr(version, '\n');
    if (newline)
        *newline = '\0';
    snprintf(buf, size, "%s", version);
}

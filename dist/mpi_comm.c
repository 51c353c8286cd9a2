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

/* Waits for a request, polling; past `limit` seconds (0: none) it fails
 * with SL_ETIMEDOUT naming what it waited for. */
static sl_status wait_request(const sl_comm *comm, MPI_Request *request, double limit, const char *what, sl_err *err)
{
    double start = now_s();
    for (;;) {
        int done = 0;
        int rc = MPI_Test(request, &done, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            return mpi_fail(err, rc, what);
        if (done)
            return SL_OK;
        if (limit > 0 && now_s() - start > limit)
            return sl_fail(err, SL_ETIMEDOUT,
                           "watchdog: rank %d waited %.0f s for %s, which did not complete; a rank stopped during it "
                           "(SLUICE_DIST_TIMEOUT_S=%.0f)",
                           comm->rank, now_s() - start, what, comm->watchdog_s);
        pause_briefly();
    }
}

static sl_status mpi_gather(const sl_comm *comm, const void *data, size_t bytes, void **out, size_t *counts,
                            sl_err *err)
{
    MPI_Comm c = handle(comm);
    /* Every step is non-blocking and polled, so that the watchdog bounds
     * it; the check-in before the gather has already named any rank that
     * never arrived. */
    double limit = comm->watchdog_s;
    MPI_Request request;
    unsigned long long mine = bytes;
    unsigned long long *sizes = NULL;
    int *recv_counts = NULL, *displs = NULL;
    unsigned char *all = NULL;
    sl_status st = SL_OK;
    int rc;
    if (comm->rank == 0 && !(sizes = malloc((size_t)comm->world * sizeof *sizes)))
        return sl_fail(err, SL_ENOMEM, "cannot allocate the sizes of %d reports", comm->world);
    rc = MPI_Igather(&mine, 1, MPI_UNSIGNED_LONG_LONG, sizes, 1, MPI_UNSIGNED_LONG_LONG, 0, c, &request);
    if (rc != MPI_SUCCESS) {
        free(sizes);
        return mpi_fail(err, rc, "MPI_Igather of the report sizes");
    }
    if ((st = wait_request(comm, &request, limit, "the gather of the report sizes", err)) != SL_OK) {
        free(sizes);
        return st;
    }
    /* MPI_Gatherv counts and displaces in int. Rank 0 says whether the
     * reports fit, and whether it could allocate them, before anyone sends:
     * every rank then takes the same path, and none waits on a send that
     * will never be received. */
    int go = 1;
    if (comm->rank == 0) {
        unsigned long long total = 0;
        for (int r = 0; r < comm->world; r++)
            total += sizes[r];
        recv_counts = malloc((size_t)comm->world * sizeof *recv_counts);
        displs = malloc((size_t)comm->world * sizeof *displs);
        all = malloc((size_t)total + 1);
        if (total > INT_MAX)
            st = sl_fail(err, SL_EUNSUPPORTED, "the ranks' reports total %llu bytes; one gather takes at most %d",
                         total, INT_MAX);
        else if (!recv_counts || !displs || !all)
            st = sl_fail(err, SL_ENOMEM, "cannot allocate %llu bytes for the ranks' reports", total);
        else {
            int offset = 0;
            for (int r = 0; r < comm->world; r++) {
                recv_counts[r] = (int)sizes[r];
                displs[r] = offset;
                offset += (int)sizes[r];
            }
        }
        go = st == SL_OK;
    }
    rc = MPI_Ibcast(&go, 1, MPI_INT, 0, c, &request);
    sl_status bcast = rc != MPI_SUCCESS ? mpi_fail(err, rc, "MPI_Ibcast of the gather's go-ahead")
                                        : wait_request(comm, &request, limit, "the gather's go-ahead", err);
    if (bcast == SL_ETIMEDOUT)
        st = bcast;
    else if (bcast != SL_OK && st == SL_OK)
        st = bcast;
    if (go && st == SL_OK) {
        if (bytes > INT_MAX)
            st = sl_fail(err, SL_EUNSUPPORTED, "a report of %zu bytes is too large to send", bytes);
        rc = MPI_Igatherv(data, (int)(bytes > INT_MAX ? 0 : bytes), MPI_BYTE, all, recv_counts, displs, MPI_BYTE, 0, c,
                          &request);
        sl_status gathered = rc != MPI_SUCCESS ? mpi_fail(err, rc, "MPI_Igatherv of the reports")
                                               : wait_request(comm, &request, limit, "the gather of the reports", err);
        if (gathered != SL_OK && (st == SL_OK || gathered == SL_ETIMEDOUT))
            st = gathered;
    } else if (!go && st == SL_OK) {
        st = sl_fail(err, SL_EIO, "rank 0 could not receive the reports");
    }
    if (st == SL_OK && comm->rank == 0) {
        for (int r = 0; r < comm->world; r++)
            counts[r] = (size_t)sizes[r];
        *out = all;
        all = NULL;
    }
    free(all);
    free(sizes);
    free(recv_counts);
    free(displs);
    return st;
}

/* Rank 0's side of a check-in: a receive from every other rank, polled;
 * past the limit, the ranks that have not arrived are named, with the
 * process they last checked in from. Then a release to each. */
static sl_status checkin_root(const sl_comm *comm, mpi_state *state, const char *step, sl_err *err)
{
    int others = comm->world - 1;
    MPI_Request *requests = malloc((size_t)others * sizeof *requests);
    checkin_note *notes = calloc((size_t)others, sizeof *notes);
    int *indices = malloc((size_t)others * sizeof *indices);
    bool *arrived = calloc((size_t)others, sizeof *arrived);
    if (!state->seen)
        state->seen = calloc((size_t)comm->world, sizeof *state->seen);
    if (!requests || !notes || !indices || !arrived || !state->seen) {
        free(requests);
        free(notes);
        free(indices);
        free(arrived);
        return sl_fail(err, SL_ENOMEM, "no memory to check %d ranks in", comm->world);
    }
    sl_status st = SL_OK;
    int rc = MPI_SUCCESS;
    for (int r = 0; r < others && rc == MPI_SUCCESS; r++)
        rc = MPI_Irecv(&notes[r], (int)sizeof notes[r], MPI_BYTE, r + 1, TAG_CHECKIN, handle(comm), &requests[r]);
    if (rc != MPI_SUCCESS)
        st = mpi_fail(err, rc, "MPI_Irecv of a check-in");
    int count = 0;
    double start = now_s();
    while (st == SL_OK && count < others) {
        int done = 0;
        rc = MPI_Testsome(others, requests, &done, indices, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS) {
            st = mpi_fail(err, rc, "MPI_Testsome of the check-ins");
            break;
        }
        for (int i = 0; i < done && done != MPI_UNDEFINED; i++) {
            arrived[indices[i]] = true;
            state->seen[indices[i] + 1] = notes[indices[i]];
            count++;
        }
        if (count == others)
            break;
        if (comm->watchdog_s > 0 && now_s() - start > comm->watchdog_s) {
            char silent[SL_ERR_MAX / 2] = "";
            size_t used = 0;
            int nsilent = 0;
            for (int r = 0; r < others; r++) {
                if (arrived[r] || nsilent++ >= 4 || used >= sizeof silent)
                    continue;
                const checkin_note *last = &state->seen[r + 1];
                used += (size_t)snprintf(silent + used, sizeof silent - used, "%s%d", used ? ", " : "", r + 1);
                if (last->pid > 0 && used < sizeof silent)
                    used += (size_t)snprintf(silent + used, sizeof silent - used, " (pid %lld on %s)",
                                             (long long)last->pid, last->host);
            }
            st = sl_fail(err, SL_ETIMEDOUT,
                         "watchdog: rank%s %s%s of %d did not check in at %s within %.0f s "
                         "(SLUICE_DIST_TIMEOUT_S=%.0f): stopped, frozen or stuck",
                         nsilent == 1 ? "" : "s", silent, nsilent > 4 ? " and more" : "", comm->world, step,
                         comm->watchdog_s, comm->watchdog_s);
            break;
        }
        pause_briefly();
    }
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
    free(indices);
    free(arrived);
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
    double start = now_s();
    for (;;) {
        int done = 0;
        rc = MPI_Testall(2, requests, &done, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS)
            return mpi_fail(err, rc, "MPI_Testall of a check-in");
        if (done)
            return SL_OK;
        if (comm->watchdog_s > 0 && now_s() - start > 2 * comm->watchdog_s)
            return sl_fail(err, SL_ETIMEDOUT,
                           "watchdog: rank %d checked in at %s but rank 0 did not release it within %.0f s "
                           "(twice SLUICE_DIST_TIMEOUT_S): rank 0 is stopped, frozen or stuck",
                           comm->rank, step, 2 * comm->watchdog_s);
        pause_briefly();
    }
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

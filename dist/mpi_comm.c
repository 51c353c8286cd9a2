/* sl_comm over MPI: a gather of variable-sized reports, a barrier that
 * sleeps while it waits, and Cartesian meshes (MPI_Cart_create). */
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#include "dist/sluice_mpi.h"

typedef struct mpi_state {
    MPI_Comm comm;
    bool owned; /* freed with the sl_comm (meshes), unlike MPI_COMM_WORLD */
} mpi_state;

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

static sl_status mpi_gather(const sl_comm *comm, const void *data, size_t bytes, void **out, size_t *counts,
                            sl_err *err)
{
    MPI_Comm c = handle(comm);
    unsigned long long mine = bytes;
    unsigned long long *sizes = NULL;
    int *recv_counts = NULL, *displs = NULL;
    unsigned char *all = NULL;
    sl_status st = SL_OK;
    int rc;
    if (comm->rank == 0 && !(sizes = malloc((size_t)comm->world * sizeof *sizes)))
        return sl_fail(err, SL_ENOMEM, "cannot allocate the sizes of %d reports", comm->world);
    rc = MPI_Gather(&mine, 1, MPI_UNSIGNED_LONG_LONG, sizes, 1, MPI_UNSIGNED_LONG_LONG, 0, c);
    if (rc != MPI_SUCCESS) {
        free(sizes);
        return mpi_fail(err, rc, "MPI_Gather of the report sizes");
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
    rc = MPI_Bcast(&go, 1, MPI_INT, 0, c);
    if (rc != MPI_SUCCESS && st == SL_OK)
        st = mpi_fail(err, rc, "MPI_Bcast of the gather's go-ahead");
    if (go && st == SL_OK) {
        if (bytes > INT_MAX)
            st = sl_fail(err, SL_EUNSUPPORTED, "a report of %zu bytes is too large to send", bytes);
        rc = MPI_Gatherv(data, (int)(bytes > INT_MAX ? 0 : bytes), MPI_BYTE, all, recv_counts, displs, MPI_BYTE, 0,
                         c);
        if (rc != MPI_SUCCESS && st == SL_OK)
            st = mpi_fail(err, rc, "MPI_Gatherv of the reports");
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

static sl_status mpi_barrier(const sl_comm *comm, sl_err *err)
{
    MPI_Request request;
    int rc = MPI_Ibarrier(handle(comm), &request);
    if (rc != MPI_SUCCESS)
        return mpi_fail(err, rc, "MPI_Ibarrier");
    /* MPI_Barrier would spin; a rank that finished first would then take
     * a core from a rank still being measured whenever ranks share cores.
     * Polling every 200 µs costs the last rank at most that much. */
    for (;;) {
        int done = 0;
        rc = MPI_Test(&request, &done, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            return mpi_fail(err, rc, "MPI_Test of a barrier");
        if (done)
            return SL_OK;
        struct timespec pause = {0, 200 * 1000};
        nanosleep(&pause, NULL);
    }
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
    *state = (mpi_state){c, owned};
    *comm = (sl_comm){.ops = &mpi_ops, .ndims = 1, .state = state};
    MPI_Comm_rank(c, &comm->rank);
    MPI_Comm_size(c, &comm->world);
    comm->dims[0] = comm->world;
    comm->coords[0] = comm->rank;
    *out = comm;
    return SL_OK;
}

static sl_status mpi_mesh(const sl_comm *comm, int ndims, const int *dims, sl_comm **out, sl_err *err)
{
    int periods[SL_MESH_MAX_DIMS] = {0};
    int shape[SL_MESH_MAX_DIMS];
    memcpy(shape, dims, (size_t)ndims * sizeof *shape);
    MPI_Comm cart;
    /* No reordering: rank r of the mesh is rank r of the world, so its
     * coordinates are row-major in its world rank, as sl_comm_local
     * computes them and as a hostfile's order places ranks. */
    int rc = MPI_Cart_create(handle(comm), ndims, shape, periods, 0, &cart);
    if (rc != MPI_SUCCESS)
        return mpi_fail(err, rc, "MPI_Cart_create");
    MPI_Comm_set_errhandler(cart, MPI_ERRORS_RETURN);
    sl_status st = wrap(cart, true, out, err);
    if (st != SL_OK) {
        MPI_Comm_free(&cart);
        return st;
    }
    sl_comm *mesh = *out;
    mesh->ndims = ndims;
    memcpy(mesh->dims, dims, (size_t)ndims * sizeof *dims);
    rc = MPI_Cart_coords(cart, mesh->rank, ndims, mesh->coords);
    if (rc != MPI_SUCCESS) {
        sl_comm_free(mesh);
        *out = NULL;
        return mpi_fail(err, rc, "MPI_Cart_coords");
    }
    return SL_OK;
}

static void mpi_release(sl_comm *comm)
{
    mpi_state *state = comm->state;
    if (state && state->owned)
        MPI_Comm_free(&state->comm);
    free(state);
    free(comm);
}

static const sl_comm_ops mpi_ops = {
    .name = "mpi",
    .gather = mpi_gather,
    .barrier = mpi_barrier,
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

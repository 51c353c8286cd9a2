/* The communicator interface and its single-process implementation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "sluice/bench/comm.h"

static sl_status local_gather(const sl_comm *comm, const void *data, size_t bytes, void **out, size_t *counts,
                              sl_err *err)
{
    if (comm->world != 1)
        return sl_fail(err, SL_EUNSUPPORTED,
                       "a local communicator (rank %d of %d) has no peers to gather from; run under mpirun", comm->rank,
                       comm->world);
    /* One byte more than asked, so that an empty contribution still
     * yields a pointer the caller can free. */
    void *copy = malloc(bytes + 1);
    if (!copy)
        return sl_fail(err, SL_ENOMEM, "cannot allocate %zu bytes for a gather", bytes);
    if (bytes)
        memcpy(copy, data, bytes);
    *out = copy;
    counts[0] = bytes;
    return SL_OK;
}

static sl_status local_checkin(const sl_comm *comm, const char *step, sl_err *err)
{
    if (comm->world != 1)
        return sl_fail(err, SL_EUNSUPPORTED, "a local communicator (rank %d of %d) has no peers to wait for at %s",
                       comm->rank, comm->world, step);
    return SL_OK;
}

static void local_abort(const sl_comm *comm, int code, const char *message)
{
    (void)comm;
    fprintf(stderr, "sluice: %s\n", message);
    exit(code);
}

static sl_status local_mesh(const sl_comm *comm, sl_comm **out, sl_err *err)
{
    return sl_comm_local(comm->rank, comm->world, out, err);
}

static void local_release(sl_comm *comm)
{
    free(comm);
}

static const sl_comm_ops local_ops = {
    .name = "local",
    .gather = local_gather,
    .checkin = local_checkin,
    .abort = local_abort,
    .mesh = local_mesh,
    .release = local_release,
};

sl_status sl_comm_local(int rank, int world, sl_comm **out, sl_err *err)
{
    *out = NULL;
    if (world < 1 || rank < 0 || rank >= world)
        return sl_fail(err, SL_EINVAL, "rank %d is not in [0, world %d)", rank, world);
    sl_comm *comm = calloc(1, sizeof *comm);
    if (!comm)
        return sl_fail(err, SL_ENOMEM, "cannot allocate a communicator");
    *comm = (sl_comm){.ops = &local_ops, .rank = rank, .world = world, .ndims = 1};
    comm->dims[0] = world;
    comm->coords[0] = rank;
    *out = comm;
    return SL_OK;
}

sl_status sl_comm_gather(const sl_comm *comm, const void *data, size_t bytes, void **out, size_t *counts, sl_err *err)
{
    *out = NULL;
    return comm->ops->gather(comm, data, bytes, out, counts, err);
}

sl_status sl_comm_barrier(const sl_comm *comm, sl_err *err)
{
    return comm->ops->checkin(comm, "a barrier", err);
}

sl_status sl_comm_checkin(const sl_comm *comm, const char *step, sl_err *err)
{
    return comm->ops->checkin(comm, step, err);
}

_Noreturn void sl_comm_abort(const sl_comm *comm, int code, const char *message)
{
    comm->ops->abort(comm, code, message);
    /* An implementation that returned did not end the job; this process
     * at least ends. */
    abort();
}

sl_status sl_comm_mesh(const sl_comm *comm, int ndims, const int *dims, sl_comm **out, sl_err *err)
{
    *out = NULL;
    if (ndims < 1 || ndims > SL_MESH_MAX_DIMS)
        return sl_fail(err, SL_EINVAL, "a mesh has 1 to %d axes, not %d", SL_MESH_MAX_DIMS, ndims);
    long long product = 1;
    for (int d = 0; d < ndims; d++) {
        if (dims[d] < 1)
            return sl_fail(err, SL_EINVAL, "mesh axis %d has size %d; every axis needs at least 1 rank", d, dims[d]);
        product *= dims[d];
    }
    if (product != comm->world)
        return sl_fail(err, SL_EINVAL, "a mesh of %lld ranks does not fit a world of %d", product, comm->world);
    sl_status st = comm->ops->mesh(comm, out, err);
    if (st != SL_OK)
        return st;
    /* Row-major: the last axis varies fastest, as MPI_Cart_coords places
     * ranks with reordering off; a mesh's rank r is its world's rank r. */
    sl_comm *mesh = *out;
    mesh->ndims = ndims;
    int rest = comm->rank;
    for (int d = ndims - 1; d >= 0; d--) {
        mesh->dims[d] = dims[d];
        mesh->coords[d] = rest % dims[d];
        rest /= dims[d];
    }
    mesh->watchdog_s = comm->watchdog_s;
    return SL_OK;
}

void sl_comm_free(sl_comm *comm)
{
    if (comm)
        comm->ops->release(comm);
}

sl_shard sl_comm_data_shard(const sl_comm *comm)
{
    if (!comm)
        return (sl_shard){0, 1};
    return (sl_shard){comm->coords[0], comm->dims[0]};
}

int sl_comm_launcher_world(char *what, size_t size)
{
    /* Open MPI's mpirun, then PMI-1/PMI-2 launchers (MPICH's Hydra, Slurm's
     * srun --mpi=pmi2); srun --mpi=pmix announces a rank but no size. */
    static const char *const sizes[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        const char *value = getenv(sizes[i]);
        if (value && *value) {
            sl__copy_string(what, size, sizes[i]);
            int world = atoi(value);
            return world > 0 ? world : -1;
        }
    }
    if (getenv("PMIX_RANK")) {
        sl__copy_string(what, size, "PMIX_RANK");
        return -1;
    }
    if (size)
        what[0] = '\0';
    return 0;
}

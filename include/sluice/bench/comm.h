/* Communicators: the few collective operations a distributed run needs (see
 * docs/distributed.md), behind a table of functions so that libsluice itself
 * never links MPI. libsluice ships the single-process communicator; the MPI
 * one lives in libsluice_mpi (dist/), built only where MPI is found. */
#ifndef SLUICE_COMM_H
#define SLUICE_COMM_H

#include <stddef.h>

#include "sluice/core/status.h"
#include "sluice/order/shuffle.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SL_MESH_MAX_DIMS 4

typedef struct sl_comm sl_comm;

/* What an implementation provides. Every collective must be called by every
 * rank of the communicator, in the same order, or the ranks wait on each
 * other forever: callers keep their collectives out of paths that only some
 * ranks take. */
typedef struct sl_comm_ops {
    const char *name; /* "local", "mpi" */
    /* Gathers each rank's `bytes` bytes at rank 0. On rank 0, *out is a
     * malloc'd concatenation in rank order and counts (world entries) holds
     * each rank's size; on the others *out is NULL and counts is untouched. */
    sl_status (*gather)(const sl_comm *comm, const void *data, size_t bytes, void **out, size_t *counts, sl_err *err);
    /* Returns once every rank has checked in at `step` (a barrier that
     * knows who is missing), waiting without spinning a CPU: a rank that
     * is done must not steal cycles from ranks still being measured on the
     * same cores. With a watchdog (comm->watchdog_s > 0), rank 0 gives up
     * after watchdog_s seconds with SL_ETIMEDOUT, naming the step and each
     * rank that has not checked in; the other ranks wait twice as long for
     * rank 0's release, so that rank 0, which knows who is silent, speaks
     * first. */
    sl_status (*checkin)(const sl_comm *comm, const char *step, sl_err *err);
    /* Ends the whole job (every rank) after printing message on stderr;
     * does not return. */
    void (*abort)(const sl_comm *comm, int code, const char *message);
    /* A communicator for a mesh over the same ranks in the same order,
     * made without a blocking collective (the watchdog cannot bound one);
     * sl_comm_mesh gives it its axes and this rank's row-major coordinates. */
    sl_status (*mesh)(const sl_comm *comm, sl_comm **out, sl_err *err);
    /* Releases what the implementation holds, and the comm itself. */
    void (*release)(sl_comm *comm);
} sl_comm_ops;

/* A flat communicator is a mesh of one axis: ndims 1, dims {world},
 * coords {rank}. Axis 0 of every mesh is the data axis, which the shard
 * follows; the other axes hold replicas of that shard (docs/distributed.md). */
struct sl_comm {
    const sl_comm_ops *ops;
    int rank;
    int world;
    int ndims;
    int dims[SL_MESH_MAX_DIMS];
    int coords[SL_MESH_MAX_DIMS];
    /* The watchdog's limit on any one wait of a collective step, in
     * seconds; 0: wait forever. Set by whoever creates the communicator
     * (`sluice bench`: SLUICE_DIST_TIMEOUT_S, docs/distributed.md); a mesh
     * inherits it. */
    double watchdog_s;
    void *state; /* the implementation's own */
};

/* Rank `rank` of `world` with no peers to talk to: a single process when
 * world is 1, and in tests a simulated rank of a larger world. Its gather
 * refuses a world above 1; its mesh computes coordinates as MPI_Cart_create
 * does with reordering off (row-major), so a simulated rank sits where an
 * MPI rank of the same number would. */
sl_status sl_comm_local(int rank, int world, sl_comm **out, sl_err *err);

sl_status sl_comm_gather(const sl_comm *comm, const void *data, size_t bytes, void **out, size_t *counts, sl_err *err);
sl_status sl_comm_barrier(const sl_comm *comm, sl_err *err);
/* Every rank checks in at `step` (a few words that say where the job is:
 * "the start of DIST-1/32x32 on fused"); see sl_comm_ops.checkin. */
sl_status sl_comm_checkin(const sl_comm *comm, const char *step, sl_err *err);
/* Ends the job with exit status `code` after printing message. */
_Noreturn void sl_comm_abort(const sl_comm *comm, int code, const char *message);
/* Checks ndims and dims (each at least 1, product equal to the world size)
 * before calling the implementation, so every implementation refuses the
 * same meshes with the same message, on every rank alike. */
sl_status sl_comm_mesh(const sl_comm *comm, int ndims, const int *dims, sl_comm **out, sl_err *err);
void sl_comm_free(sl_comm *comm);

/* The shard a rank loads: its coordinate along the data axis of its mesh
 * ({0, 1} for a NULL comm, one process). */
sl_shard sl_comm_data_shard(const sl_comm *comm);

/* The world size a launcher announced in the environment (Open MPI's
 * mpirun, Slurm's srun with PMI or PMIx, MPICH's Hydra), 0 when none did,
 * -1 when one did without saying how many. `what` receives the variable
 * that told. Lets a build without MPI refuse to run as one of many copies
 * that would each run the whole job. */
int sl_comm_launcher_world(char *what, size_t size);

#ifdef __cplusplus
}
#endif

#endif

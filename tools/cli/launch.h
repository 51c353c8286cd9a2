/* How a `sluice bench` process was started: alone, or as one rank of a job
 * that mpirun or srun launched. launch_mpi.c is built where MPI is found,
 * launch_none.c elsewhere; the bench calls the same two functions. */
#ifndef SLUICE_TOOLS_LAUNCH_H
#define SLUICE_TOOLS_LAUNCH_H

#include <stddef.h>

#include "sluice/bench/comm.h"

/* Joins the job when a launcher started this process: *world is its MPI
 * communicator and `note` says how many ranks and which MPI. Otherwise
 * *world is NULL. Fails when a launcher started several copies of a build
 * without MPI, each of which would run the whole job alone. */
sl_status sl__launch_start(sl_comm **world, char *note, size_t size, sl_err *err);
/* Leaves the job (MPI_Finalize) and frees world; nothing when NULL. */
void sl__launch_end(sl_comm *world);

#endif

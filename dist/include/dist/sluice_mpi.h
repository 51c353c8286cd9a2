/* libsluice_mpi: the sl_comm of an MPI job. Built only where meson finds
 * MPI, and linked only by programs (the sluice tool, the MPI test driver),
 * so that libsluice itself never depends on MPI (docs/distributed.md). */
#ifndef SLUICE_MPI_H
#define SLUICE_MPI_H

#include "sluice/bench/comm.h"
#include "sluice/core/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Initializes MPI (funneled: only the thread that called it makes MPI
 * calls; sluice's worker threads never do) and returns MPI_COMM_WORLD as a
 * communicator whose errors are returned, not fatal. */
sl_status sl_mpi_init(int *argc, char ***argv, sl_comm **world, sl_err *err);
/* Frees world and finalizes MPI. */
void sl_mpi_finalize(sl_comm *world);
/* "Open MPI v4.1.4, ..." (MPI_Get_library_version), for logs and records. */
void sl_mpi_library_version(char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif

/* Launch detection in a build with MPI: a process a launcher started
 * initializes MPI and runs as one rank of the job. */
#include <stdio.h>

#include "dist/sluice_mpi.h"
#include "launch.h"

sl_status sl__launch_start(sl_comm **world, char *note, size_t size, sl_err *err)
{
    *world = NULL;
    note[0] = '\0';
    char what[64];
    /* Initializing MPI in a process nobody launched would work (a
     * singleton) but costs a second and starts Open MPI's runtime for
     * nothing: a plain `sluice bench` stays a plain process. */
    if (sl_comm_launcher_world(what, sizeof what) == 0)
        return SL_OK;
    sl_status st = sl_mpi_init(NULL, NULL, world, err);
    if (st != SL_OK)
        return sl_fail_context(err, "joining the MPI job (%s is set)", what);
    char version[128];
    sl_mpi_library_version(version, sizeof version);
    snprintf(note, size, "MPI job of %d rank%s (%s)", (*world)->world, (*world)->world == 1 ? "" : "s", version);
    return SL_OK;
}

void sl__launch_end(sl_comm *world)
{
    if (!world)
        return;
    /* MPI_Finalize waits for every rank; a rank that stopped would hold
     * the others there forever, so they check in first, under the
     * watchdog. */
    sl_err err = {0};
    if (sl_comm_checkin(world, "the end of the job", &err) == SL_ETIMEDOUT)
        sl_comm_abort(world, 1, err.msg);
    sl_mpi_finalize(world);
}

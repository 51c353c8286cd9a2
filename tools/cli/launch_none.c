/* Launch detection in a build without MPI: one process is the whole job,
 * and several copies started by a launcher are refused. */
#include "launch.h"

sl_status sl__launch_start(sl_comm **world, char *note, size_t size, sl_err *err)
{
    *world = NULL;
    if (size)
        note[0] = '\0';
    char what[64];
    int ranks = sl_comm_launcher_world(what, sizeof what);
    /* mpirun -np 1 of this build is just one process: let it run. */
    if (ranks == 0 || ranks == 1)
        return SL_OK;
    return sl_fail(err, SL_EUNSUPPORTED,
                   "started as one of several ranks (%s is set), but this sluice was built without MPI: every copy "
                   "would run the whole job alone. Install libopenmpi-dev and rebuild (docs/distributed.md), or "
                   "run it without mpirun",
                   what);
}

void sl__launch_end(sl_comm *world)
{
    sl_comm_free(world);
}

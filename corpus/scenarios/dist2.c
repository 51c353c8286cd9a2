/* DIST-2: a device mesh. Ranks form a 1D mesh (data) or a 2D one (data x
 * model, the world's ranks row-major under mpirun); each loads the slice of
 * its data coordinate, and the replicas along the model axis load identical
 * batches. */
#include <stdio.h>

#include "common.h"

/* param: ranks along the model axis; 1 is the 1D mesh. */
static const sl_variant variants[] = {
    {"1d", "10k x 32x32x3 f32, bs 64, a 1D mesh of data ranks (2k at ci)", {2000, 10000}, {64, 64}, 1, false},
    {"2d", "the same on a data x model mesh of 2 model replicas", {2000, 10000}, {64, 64}, 2, false},
};

static int mesh(const sl_scenario *scenario, const sl_variant *variant, int world, int *dims, char *reason, size_t size)
{
    (void)scenario;
    int model = (int)variant->param;
    if (model <= 1) {
        dims[0] = world;
        return 1;
    }
    if (world % model != 0) {
        snprintf(reason, size, "a data x model mesh with %d model replicas needs a multiple of %d ranks; %d given",
                 model, model, world);
        return 0;
    }
    dims[0] = world / model;
    dims[1] = model;
    return 2;
}

const sl_scenario sl__scenario_dist2 = {
    .id = "DIST-2",
    .title = "device mesh",
    .property = "each rank loads its slice along the data axis; replicas along the model axis are identical",
    .variants = variants,
    .nvariants = sizeof variants / sizeof variants[0],
    .golden_batches = 2,
    .build = sl__scenario_dist_build,
    .metrics = sl__scenario_dist_metrics,
    .mesh = mesh,
};

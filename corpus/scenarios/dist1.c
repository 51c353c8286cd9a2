/* DIST-1: sharding across processes. Rank r of K loads global positions
 * r, r + K, ... of each epoch; its test shows the shards are disjoint, cover
 * the epoch and interleave to the same order for K = 1, 2 and 4. */
#include <stdio.h>

#include "common.h"

static const sl_variant variants[] = {
    {"32x32", "10k x 32x32x3 f32, bs 64, one shard per rank (2k at ci)", {2000, 10000}, {64, 64}, 0, false},
};

/* One axis: every rank is a data rank. */
static int mesh(const sl_scenario *scenario, const sl_variant *variant, int world, int *dims, char *reason, size_t size)
{
    (void)scenario;
    (void)variant;
    (void)reason;
    (void)size;
    dims[0] = world;
    return 1;
}

const sl_scenario sl__scenario_dist1 = {
    .id = "DIST-1",
    .title = "sharding across processes",
    .property = "shards disjoint, union is the epoch, global order independent of the rank count",
    .variants = variants,
    .nvariants = sizeof variants / sizeof variants[0],
    .golden_batches = 2,
    .build = sl__scenario_dist_build,
    .metrics = sl__scenario_dist_metrics,
    .mesh = mesh,
};

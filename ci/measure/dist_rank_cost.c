/* What one rank of a distributed DIST-1 run costs to start: the time its
 * scenario build takes (fixture, pipeline), the fixture rows and bytes it
 * generates, and how far its resident memory grew, for rank r of K
 * simulated in this process (the build is the same as under mpirun; only
 * the collectives are absent). batches_read 0 builds the whole fixture, as
 * every rank did before shard-only generation; otherwise only the rows a
 * run of that many batches reads. Run by ci/dist-memory.sh.
 *
 *   dist_rank_cost PROFILE(ci|full) K RANK BATCHES_READ */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/sluice.h"

static long long vmrss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long long kib = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %lld kB", &kib) == 1)
            break;
    if (f)
        fclose(f);
    return kib;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: dist_rank_cost ci|full K RANK BATCHES_READ\n");
        return 2;
    }
    sl_profile profile;
    if (!sl_profile_parse(argv[1], &profile)) {
        fprintf(stderr, "unknown profile %s\n", argv[1]);
        return 2;
    }
    int world = atoi(argv[2]), rank = atoi(argv[3]);
    sl_err err = {0};
    sl_comm *comm = NULL, *mesh = NULL;
    const int dims[1] = {world};
    if (sl_comm_local(rank, world, &comm, &err) != SL_OK || sl_comm_mesh(comm, 1, dims, &mesh, &err) != SL_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    const sl_scenario *scenario = sl_scenario_find("DIST-1");
    sl_build_options options;
    sl_build_options_init(&options, profile, 42);
    options.comm = mesh;
    options.batches_read = atoll(argv[4]);
    long long before = vmrss_kib();
    sl_scenario_instance *instance = NULL;
    if (sl_scenario_instantiate(scenario, &scenario->variants[0], &options, &instance, &err) != SL_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    long long after = vmrss_kib();
    int64_t rows = sl_fixture_rows_generated(instance->fixture);
    printf("K %d rank %d batches_read %s: build %.1f ms, %lld of %lld rows (%.1f MiB), resident +%.1f MiB\n", world,
           rank, argv[4], (double)instance->build_ns / 1e6, (long long)rows,
           (long long)sl_variant_n(&scenario->variants[0], &options), (double)rows * 32 * 32 * 3 * 4 / 1048576.0,
           (double)(after - before) / 1024.0);
    sl_scenario_instance_free(instance);
    sl_comm_free(mesh);
    sl_comm_free(comm);
    return 0;
}

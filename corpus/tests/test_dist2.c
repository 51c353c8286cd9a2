/* DIST-2, a device mesh: the standard checks of both variants (one
 * process); the mesh each variant asks of a world; row-major coordinates;
 * a simulated 2 x 2 mesh whose replicas load identical batches while its
 * data slices partition the epoch, and a check that notices a replica that
 * does not; and real jobs on meshes of 2 and 4 processes
 * (suite dist2_mpi, skipped with the reason in a build without MPI). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include <criterion/criterion.h>

#include "dist_support.h"
#include "harness.h"

SL_CORPUS_STANDARD_TESTS(dist2_1d, "DIST-2", "1d")
SL_CORPUS_STANDARD_TESTS(dist2_2d, "DIST-2", "2d")

enum { N = 2000, ROW_BYTES = 32 * 32 * 3 * 4 };

static int mesh_of(const char *scenario, const char *variant, int world, int *dims, char *reason, size_t size)
{
    const sl_scenario *s = sl_scenario_find(scenario);
    cr_assert_not_null(s);
    return sl_scenario_mesh(s, sl_scenario_variant(s, variant), world, dims, reason, size);
}

Test(dist2, each_variant_asks_its_mesh_of_a_world)
{
    int dims[SL_MESH_MAX_DIMS];
    char reason[256] = "";
    cr_expect_eq(mesh_of("DIST-2", "2d", 6, dims, reason, sizeof reason), 2);
    cr_expect(dims[0] == 3 && dims[1] == 2, "6 ranks: %d x %d, not 3 data x 2 model", dims[0], dims[1]);
    cr_expect_eq(mesh_of("DIST-2", "2d", 5, dims, reason, sizeof reason), 0);
    cr_expect(strstr(reason, "multiple of 2") != NULL, "%s", reason);
    cr_expect_eq(mesh_of("DIST-2", "1d", 5, dims, reason, sizeof reason), 1);
    cr_expect_eq(dims[0], 5);
    cr_expect_eq(mesh_of("DIST-1", "32x32", 4, dims, reason, sizeof reason), 1);
    cr_expect_eq(dims[0], 4);
    /* A scenario without a mesh is not distributed, and says so. */
    cr_expect_eq(mesh_of("CV-1", "32x32", 4, dims, reason, sizeof reason), 0);
    cr_expect(strstr(reason, "not a distributed scenario") != NULL, "%s", reason);
}

Test(dist2, mesh_coordinates_are_row_major_and_the_shard_follows_the_data_axis)
{
    int dims[2] = {3, 2};
    sl_err err = {0};
    for (int r = 0; r < 6; r++) {
        sl_comm *world, *mesh;
        cr_assert_eq(sl_comm_local(r, 6, &world, &err), SL_OK, "%s", err.msg);
        cr_assert_eq(sl_comm_mesh(world, 2, dims, &mesh, &err), SL_OK, "%s", err.msg);
        cr_expect(mesh->coords[0] == r / 2 && mesh->coords[1] == r % 2, "rank %d at (%d, %d)", r, mesh->coords[0],
                  mesh->coords[1]);
        sl_shard shard = sl_comm_data_shard(mesh);
        cr_expect(shard.rank == r / 2 && shard.world == 3);
        sl_comm_free(mesh);
        /* A mesh of another size than the world is refused by name. */
        int wrong[1] = {7};
        cr_expect_eq(sl_comm_mesh(world, 1, wrong, &mesh, &err), SL_EINVAL);
        cr_expect(strstr(err.msg, "does not fit a world of 6") != NULL, "%s", err.msg);
        sl_comm_free(world);
    }
}

Test(dist2, simulated_2x2_mesh_replicas_match_and_data_slices_partition)
{
    sl_scenario_instance *alone = harness_build("DIST-2", "2d");
    run_output whole;
    harness_run(alone, "reference", 0, 0, (sl_position){0, 0}, 0, &whole);
    int dims[2] = {2, 2};
    dist_rank ranks[4];
    run_output out[4];
    sl_dist_view view = {.world = 4, .ranks = calloc(4, sizeof(sl_rank_report))};
    cr_assert_not_null(view.ranks);
    sl_record ok;
    memset(&ok, 0, sizeof ok);
    ok.outcome = SL_RECORD_OK;
    for (int r = 0; r < 4; r++) {
        dist_rank_build("DIST-2", "2d", r, 4, 2, dims, &ranks[r]);
        harness_run(ranks[r].instance, "fused", 0, 0, (sl_position){0, 0}, 0, &out[r]);
        sl_err err = {0};
        cr_assert_eq(sl_dist_report_local(ranks[r].mesh, ranks[r].instance, &ok, &view.ranks[r], &err), SL_OK, "%s",
                     err.msg);
    }
    /* Ranks 2d and 2d + 1 share data coordinate d: the same batches. */
    for (int d = 0; d < 2; d++) {
        run_output *a = &out[2 * d], *b = &out[2 * d + 1];
        cr_assert_eq(a->rows, N / 2);
        cr_assert_eq(b->rows, a->rows);
        cr_expect(memcmp(a->ids, b->ids, (size_t)a->rows * sizeof *a->ids) == 0, "replicas of data %d differ in ids",
                  d);
        cr_expect(memcmp(a->bytes[0], b->bytes[0], a->size[0]) == 0, "replicas of data %d differ in bytes", d);
        cr_expect_eq(a->digest, b->digest);
        /* The data slice: global positions d, d + 2, ... of the epoch. */
        for (int64_t i = 0; i < a->rows; i++) {
            cr_assert_eq(a->ids[i], whole.ids[d + 2 * i]);
            cr_assert(memcmp(harness_row(a, 0, i), harness_row(&whole, 0, d + 2 * i), ROW_BYTES) == 0);
        }
    }
    sl_err err = {0};
    cr_assert_eq(sl_dist_check_shards(&view, ranks[0].instance->pipeline, &err), SL_OK, "%s", err.msg);
    /* A replica whose output for one element differs is named. */
    view.ranks[3].epoch_row_digests[7] ^= 1;
    cr_assert_eq(sl_dist_check_shards(&view, ranks[0].instance->pipeline, &err), SL_EMISMATCH);
    cr_expect(strstr(err.msg, "replica rank 3") != NULL, "%s", err.msg);
    view.ranks[3].epoch_row_digests[7] ^= 1;
    /* So is one that measured other batches. */
    view.ranks[1].record.output_digest ^= 1;
    cr_assert_eq(sl_dist_check_shards(&view, ranks[0].instance->pipeline, &err), SL_EMISMATCH);
    cr_expect(strstr(err.msg, "replica rank 1 measured") != NULL, "%s", err.msg);

    sl_dist_view_free(&view);
    for (int r = 0; r < 4; r++) {
        harness_release(&out[r]);
        dist_rank_free(&ranks[r]);
    }
    harness_release(&whole);
    sl_scenario_instance_free(alone);
}

/* --- real processes ------------------------------------------------------------------ */

Test(dist2_mpi, cartesian_meshes_across_processes, .timeout = 600)
{
    dist_require_mpi();
    sl_scenario_instance *alone = harness_build("DIST-2", "1d");
    run_output whole;
    harness_run(alone, "reference", 0, 0, (sl_position){0, 0}, 0, &whole);
    static const struct {
        const char *variant;
        int world, ndims, dims[2];
    } jobs[] = {
        {"2d", 2, 2, {1, 2}},
        {"2d", 4, 2, {2, 2}},
        {"1d", 4, 1, {4, 0}},
    };
    for (size_t j = 0; j < sizeof jobs / sizeof jobs[0]; j++) {
        cJSON *view = dist_driver_view(jobs[j].world, "DIST-2", jobs[j].variant);
        dist_expect_view(view, jobs[j].world, jobs[j].ndims, jobs[j].dims, &whole);
        cJSON_Delete(view);
    }
    harness_release(&whole);
    sl_scenario_instance_free(alone);
}

static double metric(const sl_record *record, const char *name)
{
    return harness_metric(record, name)->value;
}

static void read_record(const char *dir, sl_record *record)
{
    char path[160];
    snprintf(path, sizeof path, "%s/ci/DIST-2__2d__fused.json", dir);
    sl_err err = {0};
    cr_assert_eq(sl_record_read(path, record, NULL, &err), SL_OK, "%s", err.msg);
    remove(path);
    snprintf(path, sizeof path, "%s/ci/summary.md", dir);
    remove(path);
    snprintf(path, sizeof path, "%s/ci", dir);
    rmdir(path);
    rmdir(dir);
}

Test(dist2_mpi, bench_on_a_2d_mesh_and_a_world_that_does_not_fit_it, .timeout = 600)
{
    dist_require_mpi();
    static const int worlds[] = {4, 3};
    for (int w = 0; w < 2; w++) {
        char dir[64];
        dist_tempdir(dir, sizeof dir);
        const char *args[] = {dist_sluice(), "bench", "--scenarios",   "DIST-2",  "--variants",   "2d",
                              "--adapters",  "fused", "--repetitions", "1",       "--warmup",     "1",
                              "--batches",   "3",     "--no-probes",   "--quiet", "--output-dir", dir,
                              NULL};
        char *log = NULL;
        int status = dist_mpirun(worlds[w], args, 300, &log);
        cr_assert_eq(status, 0, "mpirun -np %d sluice bench exited with %d:\n%s", worlds[w], status, log);
        free(log);
        sl_record record;
        read_record(dir, &record);
        if (worlds[w] == 4) {
            cr_assert_eq(record.outcome, SL_RECORD_OK, "%s", record.reason);
            cr_expect_eq(metric(&record, "processes"), 4);
            cr_expect_eq(metric(&record, "mesh_data_ranks"), 2);
            cr_expect_eq(metric(&record, "mesh_replicas"), 2);
        } else {
            /* Three ranks make no data x 2 mesh: skipped, with the reason. */
            cr_expect_eq(record.outcome, SL_RECORD_SKIPPED);
            cr_expect(strstr(record.reason, "multiple of 2 ranks; 3 given") != NULL, "%s", record.reason);
        }
        sl_record_release(&record);
    }
}

/* The MPI test driver: `mpirun -np K dist_driver SCENARIO VARIANT OUT.json`.
 * Every rank joins the variant's mesh, builds the scenario on its shard,
 * runs a few measured batches with the fused adapter and loads epoch 0;
 * rank 0 gathers the reports (the same sl_dist_gather that `sluice bench`
 * uses) and writes them, unjudged, to OUT.json, so that the Criterion tests
 * check the shards with their own arithmetic. Built only with MPI.
 *
 * For the watchdog's tests: SLUICE_DIST_TIMEOUT_S sets its limit, as it
 * does for `sluice bench`, and DIST_DRIVER_STOP_IN_GATHER=R stops rank R
 * (SIGSTOP) after the last check-in, inside the gather, where only the
 * gather's own waits can name it. */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "dist/sluice_mpi.h"
#include "sluice/sluice.h"

static int fail(const char *what, const sl_err *err)
{
    fprintf(stderr, "dist_driver: %s: %s\n", what, err->msg);
    return 1;
}

static cJSON *hex(uint64_t value)
{
    char text[17];
    snprintf(text, sizeof text, "%016" PRIx64, value);
    return cJSON_CreateString(text);
}

static cJSON *int_array(const int *values, int n)
{
    cJSON *array = cJSON_CreateArray();
    for (int i = 0; i < n; i++)
        cJSON_AddItemToArray(array, cJSON_CreateNumber(values[i]));
    return array;
}

static cJSON *report_json(const sl_rank_report *report)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "rank", report->rank);
    cJSON_AddNumberToObject(o, "world", report->world);
    cJSON_AddItemToObject(o, "dims", int_array(report->dims, report->ndims));
    cJSON_AddItemToObject(o, "coords", int_array(report->coords, report->ndims));
    cJSON_AddNumberToObject(o, "pid", (double)report->pid);
    cJSON_AddStringToObject(o, "host", report->host);
    cJSON_AddStringToObject(o, "outcome", sl_record_outcome_name(report->record.outcome));
    cJSON_AddStringToObject(o, "reason", report->record.reason);
    cJSON_AddItemToObject(o, "output_digest", hex(report->record.output_digest));
    cJSON_AddNumberToObject(o, "measured_batches", (double)report->record.measured_batches);
    cJSON *ids = cJSON_CreateArray(), *digests = cJSON_CreateArray();
    for (int64_t i = 0; i < report->epoch_rows; i++) {
        cJSON_AddItemToArray(ids, cJSON_CreateNumber((double)report->epoch_ids[i]));
        cJSON_AddItemToArray(digests, hex(report->epoch_row_digests[i]));
    }
    cJSON_AddItemToObject(o, "ids", ids);
    cJSON_AddItemToObject(o, "row_digests", digests);
    return o;
}

static int write_view(const sl_dist_view *view, const char *path)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddNumberToObject(root, "world", view->world);
    cJSON *ranks = cJSON_AddArrayToObject(root, "ranks");
    for (int r = 0; r < view->world; r++)
        cJSON_AddItemToArray(ranks, report_json(&view->ranks[r]));
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    sl_err err = {0};
    sl_status st = text ? sl_write_file_atomic(path, text, strlen(text), &err) : SL_ENOMEM;
    free(text);
    return st == SL_OK ? 0 : fail(path, &err);
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: mpirun -np K dist_driver SCENARIO VARIANT OUT.json\n");
        return 2;
    }
    sl_err err = {0};
    sl_comm *world = NULL;
    if (sl_mpi_init(&argc, &argv, &world, &err) != SL_OK)
        return fail("joining the MPI job", &err);
    const sl_scenario *scenario = sl_scenario_find(argv[1]);
    const sl_variant *variant = scenario ? sl_scenario_variant(scenario, argv[2]) : NULL;
    int dims[SL_MESH_MAX_DIMS];
    char reason[256] = "";
    int ndims = variant ? sl_scenario_mesh(scenario, variant, world->world, dims, reason, sizeof reason) : 0;
    if (ndims == 0) {
        fprintf(stderr, "dist_driver: %s/%s: %s\n", argv[1], argv[2], variant ? reason : "no such variant");
        sl_mpi_finalize(world);
        return 2;
    }
    const char *limit = getenv("SLUICE_DIST_TIMEOUT_S");
    world->watchdog_s = limit ? atof(limit) : 0.0;
    sl_comm *mesh = NULL;
    if (sl_comm_mesh(world, ndims, dims, &mesh, &err) != SL_OK)
        return fail("arranging the mesh", &err);

    sl_build_options build;
    sl_build_options_init(&build, SL_PROFILE_CI, 42);
    build.comm = mesh;
    sl_scenario_instance *instance = NULL;
    if (sl_scenario_instantiate(scenario, variant, &build, &instance, &err) != SL_OK)
        return fail("building the scenario", &err);
    sl_bench_options options;
    sl_bench_options_init(&options, SL_PROFILE_CI, 42);
    options.repetitions = 1;
    options.warmup_batches = 1;
    options.measured_batches = 3;
    options.skip_probes = true;
    options.defer_scenario_metrics = true;
    sl_record record;
    if (sl_comm_barrier(mesh, &err) != SL_OK ||
        sl_bench_run(instance, sl_adapter_find("fused"), &options, &record, &err) != SL_OK)
        return fail("running the fused adapter", &err);
    sl_rank_report mine;
    if (sl_dist_report_local(mesh, instance, &record, &mine, &err) != SL_OK)
        return fail("loading epoch 0", &err);
    sl_dist_view view;
    int status = 0;
    const char *stop = getenv("DIST_DRIVER_STOP_IN_GATHER");
    sl_status st = sl_comm_barrier(mesh, &err);
    if (st == SL_OK && stop && atoi(stop) == mesh->rank)
        raise(SIGSTOP);
    if (st == SL_OK)
        st = sl_dist_gather(mesh, &mine, &view, &err);
    /* A rank the watchdog named will never arrive: the job ends here, as
     * `sluice bench` ends it, rather than waiting for it in MPI_Finalize. */
    if (st == SL_ETIMEDOUT)
        sl_comm_abort(mesh, 1, err.msg);
    if (st != SL_OK)
        status = fail("gathering the reports", &err);
    else if (mesh->rank == 0)
        status = write_view(&view, argv[3]);
    if (mesh->rank == 0)
        sl_dist_view_free(&view);
    sl_rank_report_release(&mine);
    sl_record_release(&record);
    sl_scenario_instance_free(instance);
    sl_comm_free(mesh);
    sl_mpi_finalize(world);
    return status;
}

/* Distributed runs: one rank per process, each loading its own shard, and
 * what rank 0 gathers from them to check the shards and to write one record
 * for the job (docs/distributed.md). Everything here goes through sl_comm,
 * so it runs unchanged over MPI (libsluice_mpi) or in one process. */
#ifndef SLUICE_DIST_H
#define SLUICE_DIST_H

#include <stdint.h>

#include "sluice/adapters/adapter.h"
#include "sluice/bench/bench.h"
#include "sluice/bench/comm.h"
#include "sluice/bench/scenario.h"
#include "sluice/records/record.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What one rank reports about its run of a scenario variant on an adapter:
 * where it ran, its own record, and the rows of epoch 0 it loaded. */
typedef struct sl_rank_report {
    int rank;
    int world;
    int ndims;
    int dims[SL_MESH_MAX_DIMS];
    int coords[SL_MESH_MAX_DIMS];
    int64_t pid;
    char host[64];
    /* Its record (latency_ns and samples_ns owned by the report). */
    sl_record record;
    /* Epoch 0 of its pipeline, computed once outside the timed region:
     * the element ids in its order and the XXH3-64 of each row's output,
     * every field. 0 rows when its run did not succeed. */
    int64_t epoch_rows;
    int64_t *epoch_ids;
    uint64_t *epoch_row_digests;
    /* What the rank's instance cost it: the build's time (the fixture's
     * rows, sources, pipeline) and the fixture's bytes it generated (its
     * shard's rows when it generated only those); 0 when it was not built.
     * Its memory at its peak is record.peak_rss_bytes. */
    int64_t startup_ns;
    int64_t fixture_bytes;
} sl_rank_report;

/* Every rank's report, in rank order: what rank 0 holds after a gather. */
typedef struct sl_dist_view {
    int world;
    sl_rank_report *ranks;
} sl_dist_view;

/* Fills this rank's report: its place in comm (rank 0 of 1 when NULL), its
 * pid and host, a copy of record and, when the record is ok, epoch 0 of
 * instance's pipeline. instance may be NULL for a rank whose build failed;
 * record then says why. */
sl_status sl_dist_report_local(const sl_comm *comm, const sl_scenario_instance *instance, const sl_record *record,
                               sl_rank_report *out, sl_err *err);
void sl_rank_report_release(sl_rank_report *report);

/* Gathers every rank's report at rank 0 of comm (collective). On rank 0 view
 * holds world reports; on the others view->world is 0. A report that does
 * not decode (a rank built from other code, say) is an error naming the
 * rank. */
sl_status sl_dist_gather(const sl_comm *comm, const sl_rank_report *mine, sl_dist_view *view, sl_err *err);
/* A view of one report (moved in; the view owns it): how a single process
 * sees itself. */
sl_status sl_dist_view_single(sl_rank_report *report, sl_dist_view *view, sl_err *err);
void sl_dist_view_free(sl_dist_view *view);

/* The job's record, composed on rank 0 (docs/records.md "Distributed
 * records"): the slowest rank's record (the one whose measured batches took
 * longest in all), with the output digest of every rank's digest in rank
 * order. A rank that did not run ok makes the job's record that rank's
 * outcome, its reason prefixed with the rank. out is released by the caller. */
sl_status sl_dist_merge(const sl_dist_view *view, sl_record *out, sl_err *err);
/* The rank whose kept measured batches took longest, and that time. */
int sl_dist_slowest_rank(const sl_dist_view *view, int64_t *wall_ns);

/* The sharding checks of DIST-1 and DIST-2, on a view of every rank of a
 * mesh whose axis 0 is the data axis: every rank reported epoch 0; the mesh
 * is whole (one rank per coordinate); the ranks at data coordinate d loaded
 * exactly global positions d, d + D, ... of the epoch's order (the keyed
 * permutation of pipeline's data set, computed here without the pipeline's
 * sharding), so that the shards are disjoint, their union is the epoch and
 * interleaving them gives the same order for every D; and replicas (ranks
 * that share a data coordinate) loaded the same ids with the same output
 * bytes and measured the same output digest. The message names the first
 * rank, position or element that breaks one. */
sl_status sl_dist_check_shards(const sl_dist_view *view, const sl_pipeline *pipeline, sl_err *err);

/* Per-rank figures as scenario metrics of record (docs/records.md): the
 * world and mesh, the distinct processes among the ranks, each rank's p50
 * batch latency (the first SL_DIST_RANK_METRICS ranks by name, all of them
 * through their minimum, median and maximum), the slowest rank and its
 * time, the job's elements/s, and what a rank costs: the least and most
 * peak memory of a rank, the longest start-up and the most fixture bytes
 * a rank generated. Eight named ranks keep the whole within the 32
 * metrics a record holds, beside the bench's own. */
#define SL_DIST_RANK_METRICS 8
void sl_dist_add_rank_metrics(const sl_dist_view *view, sl_record *record);

/* The metrics hook's view of a run: the gathered one when a distributed run
 * set instance->ranks, else a view of this process alone, made in scratch
 * from record and epoch 0 of instance's pipeline. The caller zeroes scratch
 * first and frees it afterwards (sl_dist_view_free) whichever it was. */
sl_status sl_dist_view_for(const sl_scenario_instance *instance, const sl_record *record, sl_dist_view *scratch,
                           const sl_dist_view **view, sl_err *err);

/* The end of a distributed run of one adapter, on every rank of comm
 * (collective): record holds this rank's record on entry (from
 * sl_bench_run with defer_scenario_metrics, or a record of why it could
 * not run, with instance NULL). Rank 0 gathers every rank's report, replaces
 * record with the job's (sl_dist_merge) and, when that is ok, runs the
 * scenario's metrics hook on it with instance->ranks pointing at the
 * gathered view (kernels: the run's optimized table, for the hook). Other
 * ranks keep their own record, which they do not write. Every rank first
 * checks in (sl_comm_checkin), so that a rank that stopped during its run
 * is named by the watchdog: SL_ETIMEDOUT, rank 0's record failed with the
 * watchdog's reason, and the caller ends the job. */
sl_status sl_dist_finish(const sl_comm *comm, sl_scenario_instance *instance, const sl_adapter *adapter,
                         const sl_kernel_table *kernels, sl_record *record, sl_err *err);

/* The watchdog's limit when SLUICE_DIST_TIMEOUT_S does not set one: the
 * longest a rank may wait at one collective step of a profile's runs. A
 * wait is at most the rest of the job, and a whole job of DIST-1 and DIST-2
 * on every adapter with 8 ranks on a loaded 2-core machine took 21 s at ci
 * sizes and 47 s at full (no single wait reached 2 s); the defaults, 120 s
 * and 900 s, leave room for machines and loads far worse
 * (docs/distributed.md). */
double sl_dist_watchdog_default_s(sl_profile profile);

/* The mesh a distributed scenario's variant asks of a world of `world`
 * ranks (sl_scenario.mesh): its number of axes, or 0 with the reason when
 * the world does not fit it (a 2D mesh of 2 model replicas needs an even
 * world). A scenario without a mesh hook is not distributed. */
int sl_scenario_mesh(const sl_scenario *scenario, const sl_variant *variant, int world, int *dims, char *reason,
                     size_t size);

#ifdef __cplusplus
}
#endif

#endif

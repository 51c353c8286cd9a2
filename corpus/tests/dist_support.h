/* What test_dist1.c and test_dist2.c share: simulated ranks in one process,
 * launching real MPI jobs (the sluice tool or the MPI test driver under
 * `mpirun --oversubscribe -np K`, with what mpirun needs as root in the
 * job's environment), and the checks of a gathered view of every rank. */
#ifndef SLUICE_CORPUS_DIST_SUPPORT_H
#define SLUICE_CORPUS_DIST_SUPPORT_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "harness.h"

/* Skips the calling test, with the reason, when this build has no MPI or
 * no mpirun: a test that cannot launch processes must not pass. */
void dist_require_mpi(void);

/* Paths of the programs a job runs (known when the build has MPI). */
const char *dist_driver(void);
const char *dist_sluice(void);

/* Runs `mpirun --oversubscribe -np ranks args...` (args NULL-terminated),
 * its output in a log the test prints on failure; kills it after timeout_s.
 * Returns its exit status (-1 when it could not start or timed out). The
 * returned log is malloc'd. */
int dist_mpirun(int ranks, const char *const *args, int timeout_s, char **log);

/* A job with more to it: variables added to its environment
 * ("NAME=value", NULL-terminated, or NULL), and a rank to SIGSTOP once the
 * job's output shows joined_marker (-1: none), as a frozen node would stop.
 * after_stop_s (when not NULL) gets the seconds from the stop to the job's
 * end, -1 when no rank was stopped; the stopped rank is SIGKILLed once the
 * job ends or times out. */
typedef struct dist_job {
    int ranks;
    const char *const *args;
    const char *const *env;
    int timeout_s;
    int stop_rank;
    const char *joined_marker;
    /* When set, the rank is signalled once this file exists rather than
     * once the log shows joined_marker. */
    const char *stop_when_file;
    /* The signal it gets: SIGSTOP (a frozen rank) when 0, or SIGKILL (a
     * rank killed by the machine). */
    int stop_signal;
} dist_job;
int dist_mpirun_job(const dist_job *job, char **log, double *after_stop_s);

/* Runs the driver on scenario/variant with `ranks` ranks and returns the
 * view it wrote, parsed, or fails the test with the job's log. */
cJSON *dist_driver_view(int ranks, const char *scenario, const char *variant);

/* A fresh private folder for a test's files. */
void dist_tempdir(char *buf, size_t size);

/* A simulated rank: rank `rank` of `world` on a mesh of ndims axes (a local
 * communicator, coordinates row-major as MPI_Cart_create's), and the
 * scenario built for it at ci size. Free with dist_rank_free. */
typedef struct dist_rank {
    sl_comm *world;
    sl_comm *mesh;
    sl_scenario_instance *instance;
} dist_rank;

void dist_rank_build(const char *scenario, const char *variant, int rank, int world, int ndims, const int *dims,
                     dist_rank *out);
void dist_rank_free(dist_rank *rank);

/* The output digest of one row as sl_dist_report_local computes it (each
 * field's bytes through XXH3-64, seeded by the previous field's), written
 * here from that definition for the row of a collected run. */
uint64_t dist_row_digest(const run_output *out, int64_t row);

/* Checks a view the driver wrote for a job of `world` ranks on the mesh
 * dims: one distinct process per rank (none of them this test's), each at
 * its row-major coordinates; ranks at data coordinate d hold global
 * positions d, d + D, ... of `whole` (the one-process epoch 0) with the
 * same output bytes; replicas identical; the data slices disjoint and
 * covering the epoch. */
void dist_expect_view(const cJSON *view, int world, int ndims, const int *dims, const run_output *whole);

#endif

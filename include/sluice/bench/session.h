/* A bench session: every selected scenario variant run on every selected
 * adapter, one record per run written into an output folder, the way
 * `sluice bench` runs them. The session decides nothing about presentation:
 * it reports each run as it starts, each note (a variant skipped, a run
 * that failed) and each record once written through callbacks, and the
 * caller prints what it likes.
 *
 * The bench layer sits below the scenario registry, so a session never
 * looks scenarios up: its caller resolves the selection into scenario and
 * variant pointers with their sizes at the profile (sl_variant_n,
 * sl_variant_batch_size) and hands in the registry's instantiate and free
 * functions. */
#ifndef SLUICE_SESSION_H
#define SLUICE_SESSION_H

#include <stdbool.h>
#include <stdint.h>

#include "sluice/adapters/adapter.h"
#include "sluice/bench/bench.h"
#include "sluice/bench/comm.h"
#include "sluice/bench/scenario.h"
#include "sluice/core/status.h"
#include "sluice/records/record.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One selected scenario variant with its sizes at the session's profile and
 * seed: n == 0 means it does not run at that size (it is reported, never
 * built); batch_size names the batch of the records of a variant that
 * could not be built. */
typedef struct sl_session_variant {
    const sl_scenario *scenario;
    const sl_variant *variant;
    int64_t n;
    int64_t batch_size;
    /* A point of a workers sweep (sluice bench --workers-sweep): its runs
     * take `workers` prefetch workers instead of the session's
     * bench.workers. */
    bool sets_workers;
    int workers;
} sl_session_variant;

/* A run about to start: run `index` (from 1) of the `total` the session
 * will make on this rank 0. */
typedef struct sl_session_step {
    const sl_scenario *scenario;
    const sl_variant *variant;
    const sl_adapter *adapter;
    int index;
    int total;
} sl_session_step;

typedef enum sl_session_note_kind {
    /* The variant has no size at the profile: not run, not counted. */
    SL_SESSION_NOT_AT_SIZE = 0,
    /* Not a distributed scenario, and the world has several ranks: left
     * out, since it would run whole on every rank. */
    SL_SESSION_NOT_IN_JOB,
    /* The variant could not be built, or is skipped (not an error: it would
     * not fit); each adapter still gets a record with the reason. */
    SL_SESSION_NOT_BUILT,
    /* The reference's digest, which every adapter is held to, could not be
     * computed; each adapter gets a failed record. */
    SL_SESSION_NO_REFERENCE,
    /* A distributed variant whose mesh does not fit the world (skipped, not
     * an error) or could not be made; each adapter gets a record with the
     * reason. */
    SL_SESSION_NO_MESH,
    /* A run failed, or a distributed run failed or mismatched: message is
     * whole, naming the scenario, variant and adapter. */
    SL_SESSION_RUN_FAILED,
} sl_session_note_kind;

/* Something a caller may want to tell its user about beyond the records.
 * The first two kinds are informational, the others errors unless the
 * variant was skipped; is_error says which. */
typedef struct sl_session_note {
    sl_session_note_kind kind;
    bool is_error;
    const sl_scenario *scenario;
    const sl_variant *variant;
    const sl_adapter *adapter; /* SL_SESSION_RUN_FAILED only, else NULL */
    const char *message;       /* the reason; "" for the first two kinds */
} sl_session_note;

/* What a session reports as it goes, on rank 0 only (the other ranks of a
 * job take part in the collectives and report nothing). Every callback may
 * be NULL; user is handed back to each. Pointers are valid during the call
 * only. */
typedef struct sl_session_callbacks {
    void *user;
    void (*on_step)(void *user, const sl_session_step *step);
    void (*on_note)(void *user, const sl_session_note *note);
    /* After the record's file was written: env is the environment it was
     * written with (the session's, with the load around the run), path is
     * where, or NULL when the write failed, with the reason in write_err (a
     * failure the caller must count: the run is not on disk for anyone to
     * check). */
    void (*on_record)(void *user, const sl_record *record, const sl_environment *env, const char *path,
                      const sl_err *write_err);
    /* After the last record of a variant was written, so that a caller can
     * show each variant's result as it completes rather than only at the
     * end. Not called for a variant left out (the first two note kinds). */
    void (*on_variant)(void *user, const sl_scenario *scenario, const sl_variant *variant);
} sl_session_callbacks;

/* Builds a variant's instance and frees it: sl_scenario_instantiate and
 * sl_scenario_instance_free, or a test's own. */
typedef sl_status (*sl_session_instantiate_fn)(const sl_scenario *scenario, const sl_variant *variant,
                                               const sl_build_options *options, sl_scenario_instance **out,
                                               sl_err *err);
typedef void (*sl_session_instance_free_fn)(sl_scenario_instance *instance);

typedef struct sl_session_options {
    /* How every run is made (sl_bench_run): profile, seed, repetitions,
     * batch counts, workers, threads, kernels and skip_probes. The fields
     * that belong to one instance are the session's to fill: it measures
     * the probes once per instance (unless skip_probes), holds every
     * adapter to the reference's digest, and defers a distributed run's
     * scenario metrics to the gathered record. */
    sl_bench_options bench;
    /* 0: each adapter's repetitions run back to back. N > 0: every record
     * of a variant runs N repetitions, one per round, and each round runs
     * the variant's adapters in turn (A B C, A B C, ...), so that the
     * machine's drift falls on every adapter alike and repetition r of two
     * records compares them moments apart (sl_record.rounds). Replaces
     * bench.repetitions. Distributed variants run back to back. */
    int rounds;
    /* Records go to <output_dir>/<profile name>/, which the session creates
     * on rank 0, sweeping temporaries a killed run left there. */
    const char *output_dir;
    /* What to run, in this order; borrowed for the session's life. */
    const sl_session_variant *variants;
    int nvariants;
    const sl_adapter *const *adapters;
    int nadapters;
    /* The job's ranks (MPI_COMM_WORLD under mpirun); NULL for one process.
     * Only rank 0 writes records and reports. In a world of several ranks
     * only the distributed scenarios run. Borrowed. */
    const sl_comm *world;
    sl_session_instantiate_fn instantiate;
    sl_session_instance_free_fn instance_free;
    sl_session_callbacks callbacks;
} sl_session_options;

typedef struct sl_session sl_session;

/* Defaults: sl_bench_options_init's run settings, output folder "records",
 * one process, nothing selected, no callbacks. The caller sets instantiate
 * and instance_free, which the bench layer cannot name. */
void sl_session_options_init(sl_session_options *options, sl_profile profile, uint64_t seed);

/* Checks the options and, on rank 0, creates the output folder, sweeps it
 * and collects the environment fingerprint the records carry. */
sl_status sl_session_create(const sl_session_options *options, sl_session **out, sl_err *err);

/* Runs every selected variant on every selected adapter, reporting as it
 * goes. A run that fails or a record that cannot be written is reported,
 * not returned: the status is an error only for a session that cannot run
 * at all. */
sl_status sl_session_run(sl_session *session, sl_err *err);

/* The folder the records go to: <output_dir>/<profile name>. */
const char *sl_session_dir(const sl_session *session);
/* The environment fingerprint the records carry (rank 0). */
const sl_environment *sl_session_environment(const sl_session *session);
/* The runs the session makes on rank 0: what sl_session_step.total says. */
int sl_session_total(const sl_session *session);

void sl_session_free(sl_session *session);

#ifdef __cplusplus
}
#endif

#endif

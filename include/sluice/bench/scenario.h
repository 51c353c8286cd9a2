/* What a scenario is (its variants, size profiles and the instance it
 * builds) and the goldens captured from one: the types the corpus's registry
 * (sluice/corpus/scenarios.h) fills, shared by the corpus tests and `sluice
 * bench`, so a test and a benchmark build the identical pipeline. */
#ifndef SLUICE_SCENARIO_H
#define SLUICE_SCENARIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice/core/status.h"
#include "sluice/fixtures/fixtures.h"
#include "sluice/pipeline/pipeline.h"
#include "sluice/source/source.h"

#ifdef __cplusplus
extern "C" {
#endif

struct sl_adapter;
struct sl_record;
struct sl_comm;
struct sl_dist_view;

typedef enum sl_profile { SL_PROFILE_CI = 0, SL_PROFILE_FULL, SL_PROFILE_GPU, SL_PROFILE_COUNT } sl_profile;

typedef struct sl_profile_settings {
    const char *name;
    int64_t warmup_batches;
    int64_t measured_batches;
    int repetitions;
    const char *backend; /* "cpu" or "cuda" */
    int size_profile;    /* which sizes it uses: SL_PROFILE_CI or SL_PROFILE_FULL */
} sl_profile_settings;

const sl_profile_settings *sl_profile_get(sl_profile profile);
bool sl_profile_parse(const char *name, sl_profile *out);

/* One size of a scenario. n and batch_size are per size profile; n == 0
 * means the variant does not run at that size. param is the variant's own
 * knob (PC-1's depth, IO-1's source kind, ...). */
typedef struct sl_variant {
    const char *name;
    const char *summary;
    int64_t n[2];
    int64_t batch_size[2];
    int64_t param;
    bool gate; /* run by the pull-request performance gate */
} sl_variant;

typedef struct sl_build_options {
    sl_profile profile;
    uint64_t seed;
    bool shuffle;           /* scenarios that test order may turn it off */
    int64_t n_override;     /* > 0 replaces the profile's n */
    int64_t batch_override; /* > 0 replaces the profile's batch size */
    const char *workdir;    /* for file-backed sources; NULL picks a temp dir */
    /* The mesh this rank belongs to in a distributed run: the pipeline
     * loads the shard of its data coordinate (sl_comm_data_shard). NULL:
     * one process, the whole data set. Borrowed: it must outlive the
     * instance. */
    const struct sl_comm *comm;
    /* > 0: the run reads only epoch 0 and the first batches_read batches
     * from the start of epoch 0 (warmup and measured batches of every
     * repetition, the reference's digest, the probes). A distributed
     * scenario then generates only the rows its rank reads (its shard),
     * not the whole fixture (docs/distributed.md). 0: everything. */
    int64_t batches_read;
} sl_build_options;

void sl_build_options_init(sl_build_options *options, sl_profile profile, uint64_t seed);

/* A built scenario: its fixture source, spec and pipeline. */
typedef struct sl_scenario_instance {
    const struct sl_scenario *scenario;
    const sl_variant *variant;
    sl_source *fixture; /* the generated data, in memory */
    sl_source *source;  /* what the pipeline reads (fixture, or files) */
    sl_pipeline_spec spec;
    sl_pipeline *pipeline;
    char workdir[256]; /* created by the build; removed on free */
    bool owns_workdir;
    const struct sl_comm *comm; /* the options' mesh, NULL in one process */
    int64_t build_ns;           /* how long the build took: fixture, sources and pipeline */
    /* Every rank's report, gathered by a distributed run on rank 0 while
     * that run's metrics hook runs (sl_dist_finish); NULL otherwise. */
    const struct sl_dist_view *ranks;
} sl_scenario_instance;

typedef struct sl_scenario {
    const char *id; /* "CV-1" */
    const char *title;
    const char *property; /* the property its test asserts */
    const sl_variant *variants;
    int nvariants;
    int golden_batches; /* K for the golden check */
    /* How far an optimized kernel table's output may be from the reference
     * kernels' (sl_values_match). 0, the default, demands bitwise equality
     * (DESIGN.md invariant 3). A scenario whose ops sum in a back end's own
     * order (MM-2's BLAS products) states its bound here, with its reasoning
     * in docs/determinism.md: f32 fields are then compared value by value
     * within it, every other field still bitwise, and runs on the same
     * kernel table must still agree bit for bit. */
    double tolerance;
    /* Fills the instance's fixture spec and pipeline spec. */
    sl_status (*build)(const struct sl_scenario *scenario, const sl_variant *variant, const sl_build_options *options,
                       sl_scenario_instance *instance, sl_err *err);
    /* Optional: adds the scenario's own named figures to an ok record once
     * its adapter's run is measured (sl_record_add_scenario_metric), e.g.
     * IO-4's cache speedup per epoch or NLP-2's padding waste. It may run
     * extra measured passes on the instance with that adapter; what it adds
     * appears in the record's metrics (scope "scenario") and in the summary.
     * An error fails the record with the message. kernels is the run's
     * optimized table, which its passes hand to the adapter. */
    sl_status (*metrics)(const sl_scenario_instance *instance, const struct sl_adapter *adapter,
                         const sl_kernel_table *kernels, struct sl_record *record, sl_err *err);
    /* Optional, and what makes a scenario distributed: the mesh its variant
     * arranges `world` ranks in (axis 0 the data axis, the rest replicas),
     * as the number of axes with their sizes in dims, or 0 with the reason
     * when the world does not fit. Under mpirun, `sluice bench` runs only
     * distributed scenarios (docs/distributed.md). */
    int (*mesh)(const struct sl_scenario *scenario, const sl_variant *variant, int world, int *dims, char *reason,
                size_t size);
} sl_scenario;

/* The committed goldens live in <source root>/golden unless a caller says
 * otherwise; one file per scenario and variant: <id>__<variant>.json. */
const char *sl_golden_default_dir(void);
void sl_golden_path(const char *dir, const sl_scenario *scenario, const sl_variant *variant, char *buf, size_t size);

struct sl_golden;
/* Runs the reference adapter over the scenario's first golden_batches batches
 * from the start of epoch 0 and captures them. The one way goldens are made:
 * `sluice bless` saves the result, the corpus tests compare against it. */
sl_status sl_scenario_capture_golden(const sl_scenario_instance *instance, struct sl_golden **out, sl_err *err);

/* The golden of a fixture generator: every row of a small fixture of that
 * kind (a fixed spec) in order. Pinned because a fixture promises the same
 * bytes on every machine: `sluice bless --fixtures` writes
 * <dir>/fixture__<kind>.json and test_fixtures compares against it. */
void sl_fixture_golden_path(const char *dir, sl_fixture_kind kind, char *buf, size_t size);
sl_status sl_fixture_capture_golden(sl_fixture_kind kind, uint64_t seed, struct sl_golden **out, sl_err *err);

#ifdef __cplusplus
}
#endif

#endif

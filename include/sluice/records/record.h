/* Timing records: one JSON document per scenario, variant and adapter run.
 * The schema is documented in docs/records.md; bump SL_RECORD_SCHEMA_VERSION
 * whenever a field changes meaning or disappears. */
#ifndef SLUICE_RECORD_H
#define SLUICE_RECORD_H

#include <stdbool.h>
#include <stdint.h>

#include "sluice/core/status.h"
#include "sluice/core/timing.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SL_RECORD_SCHEMA_VERSION  3
#define SL_RECORD_MAX_METRICS     40
#define SL_RECORD_MAX_REPETITIONS 32

/* Where and with what the numbers were taken. */
typedef struct sl_environment {
    char cpu_model[128];
    int cpu_cores;      /* online logical CPUs */
    char compiler[128]; /* "gcc 12.2.0" */
    char compile_flags[256];
    char library_versions[256]; /* "sluice 0.1.0; cJSON 1.7.15; xxHash 0.8.1; ..." */
    char git_commit[48];
    char kernel[128];  /* uname: sysname release machine */
    char time_utc[32]; /* ISO 8601, when the record was made */
    /* How busy the machine was around the run (docs/records.md): the
     * 1-minute load average when the run started and when it ended (-1
     * where /proc/loadavg cannot be read), the share of CPU time the
     * hypervisor gave other guests during the run, and the share of its
     * runnable time the run's own threads waited for a CPU that other work
     * held (-1 where unknown, for both). */
    double load_start, load_end;
    double steal_fraction;
    double cpu_wait_fraction;
    /* Pages and placement (docs/records.md): the transparent huge page
     * settings ("madvise", "always", "never", "unknown"), whether sluice
     * advised its large buffers ("advised", or "off" with
     * SLUICE_HUGEPAGES=0), the process's anonymous bytes on huge pages when
     * the run ended (AnonHugePages; -1 unknown), the machine's NUMA nodes
     * (-1 unknown) and how threads and memory were placed. Records written
     * before these existed read as "" and -1. */
    char thp_enabled[24];
    char thp_defrag[24];
    char huge_pages[8];
    double anon_huge_bytes;
    double numa_nodes;
    char placement[160];
} sl_environment;

/* Whether the machine was too busy for the run's speed to be ranked
 * against another's: a load average above the CPUs it has, more than
 * SL_BUSY_STEAL of its time stolen, or more than SL_BUSY_WAIT of the run's
 * runnable time spent waiting for a CPU (a tenth: its times may then be a
 * ninth longer than the code alone makes them). */
#define SL_BUSY_STEAL 0.05
#define SL_BUSY_WAIT  0.10
bool sl_environment_busy(const sl_environment *env);

/* Only `ok` records carry a speed that may be ranked. Later outcomes
 * (peers: crashed, timeout) are appended, never renumbered. */
typedef enum sl_record_outcome {
    SL_RECORD_OK = 0,
    SL_RECORD_EXCLUDED,    /* the adapter lacks a transform of the scenario */
    SL_RECORD_SKIPPED,     /* the variant does not run at this size or would not fit */
    SL_RECORD_FAILED,      /* the run failed; reason says how */
    SL_RECORD_MISMATCH,    /* it ran, but its output differs from the reference's */
    SL_RECORD_UNAVAILABLE, /* the adapter cannot run here (no GPU, peer not installed) */
    SL_RECORD_OUTCOME_COUNT
} sl_record_outcome;

const char *sl_record_outcome_name(sl_record_outcome outcome);

/* A named extra figure. Bench metrics ("p50_ns_per_stage",
 * "fraction_of_memcpy", ...) are computed the same way for every scenario;
 * scenario metrics are a scenario's own figures, added through its
 * `metrics` hook (IO-4's cache speedup, AUG-3's cost slope, ...), and the
 * summary lists them under the scenario. */
typedef enum sl_metric_scope { SL_METRIC_BENCH = 0, SL_METRIC_SCENARIO } sl_metric_scope;

typedef struct sl_record_metric {
    char name[48];
    double value;
    char unit[16];
    sl_metric_scope scope;
} sl_record_metric;

typedef struct sl_record {
    char scenario[16];
    char variant[32];
    char adapter[32];
    char profile[16];
    char backend_requested[16];
    char backend_active[16];
    sl_record_outcome outcome;
    char reason[256];     /* why excluded, skipped or failed; empty when ok */
    char transforms[256]; /* comma-separated transform names executed */
    char kernels[32];     /* kernel table used: "reference", "cpu-avx2", ..., "auto" (the tuned one) */
    /* Which registered table each kernel entry of `kernels` comes from, as
     * "entry=table" items joined by commas in SL_KERNEL_ENTRIES order
     * ("permute_strided=cpu-avx512,normalize_u8=cpu-avx2,..."): for "auto"
     * the measured choice, for a named table that table throughout. Empty
     * in a record from before it; the JSON then has no "kernel_choice". */
    char kernel_choice[1024];
    /* The table whose roofline probe was the fastest, which the record's
     * fraction_of_roofline is taken against (sl_probe_roofline_best);
     * empty without the probe. */
    char roofline_kernels[32];
    /* The framework and version a peer reported ("torch 2.1.2"); empty for
     * sluice's own adapters, and then absent from the JSON. */
    char framework[96];
    /* How a peer's batch times may be read (docs/peers.md, "Like with
     * like"): "per-batch" (each batch computed when asked: a cost),
     * "prefetching" (computed ahead on its own threads or processes, timed
     * with a consumer that does nothing between batches), "hand-over" (its
     * latencies add up to much less than the time sluice saw: never ranked
     * as a cost) or "throughput" (every batch in one call, a scan: compared
     * by throughput only). Empty for sluice's own adapters, and then absent
     * from the JSON. */
    char timing[16];
    /* What a reader should know about the run that is not a failure: a
     * peer killed after delivering every batch because it did not exit in
     * time, a hand-over's figures. Empty when there is nothing to say. */
    char note[256];
    /* The CUDA device of a "cuda" back-end adapter's run, when the machine
     * has one (docs/records.md): its name, compute capability ("9.0"), the
     * CUDA versions of driver and runtime ("13.0"), and the most device
     * memory in use during the run (-1 when not measured). device_name
     * empty means no device, and then the JSON has no "device" object. */
    char device_name[96];
    char device_compute_capability[8];
    char device_driver[16];
    char device_runtime[16];
    int64_t device_peak_memory_bytes;
    /* The record's own runs on that device (docs/records.md): the most
     * bytes their allocations held at once (the device's ledger: batch
     * buffers, decisions, op constants, a cache, a resident source; -1 when
     * none ran), whether the source was "resident" on the device (placed
     * once, each batch gathering its rows there) or "streamed" through
     * page-locked staging ("" when none ran), and the nanoseconds placing
     * it took (0 when streamed, -1 when none ran). */
    int64_t device_allocated_peak_bytes;
    char device_source[16];
    int64_t device_source_setup_ns;
    /* How the output was held to the reference's before the speed counted:
     * "bitwise", "within N ulp", "statistical" (a peer checked by the residual
     * test, docs/peers.md), "mismatch", or "not checked" (a record that
     * did not run, or a bench told not to check). */
    char equivalence[32];
    uint64_t seed;
    int64_t batch_size;
    int64_t workers; /* prefetch workers the adapter was asked to use */
    int64_t threads; /* threads that computed each batch (fused); 1 otherwise */
    int64_t warmup_batches;
    int64_t measured_batches;
    int repetitions;
    /* 0 when the repetitions ran back to back; otherwise each repetition
     * was one round of its variant's adapters run in turn (sluice bench
     * --rounds), so repetition r of two records of a variant was measured
     * moments apart and their ratio is a per-round ratio. */
    int rounds;
    int repetition_kept; /* index of the median repetition */
    double repetition_elements_per_s[SL_RECORD_MAX_REPETITIONS];
    /* Which process (one `sluice bench` run) each repetition ran in,
     * numbered from 0 in the order the runs were pooled: all 0 for one
     * run, 0 0 1 1 2 2 for three runs of two pooled (`check --records`,
     * `baseline save --from`). The gate's unit is the process: repetitions
     * of one process share its address-space layout and thread placement,
     * and agree far better than two processes do (docs/gate.md). In the
     * JSON only when the record holds more than one process. */
    int repetition_process[SL_RECORD_MAX_REPETITIONS];
    /* measured_batches entries, of the kept repetition. sl_record_read and
     * sl_bench_run allocate it and sl_record_release frees it; a caller that
     * points it at its own array must not call sl_record_release. */
    int64_t *latency_ns;
    /* repetitions x measured_batches entries, repetition-major: every
     * measured batch of every repetition, the pool that the median's
     * interval and the gate's tests use. Allocated and freed like
     * latency_ns; NULL in a record that measured nothing. */
    int64_t *samples_ns;
    int64_t elements;       /* elements in the measured batches */
    int64_t bytes;          /* output bytes of the measured batches */
    int64_t first_batch_ns; /* first batch of a fresh run, before warmup */
    /* The run's wall time: every repetition, warmup and measured batches,
     * and the checks against the reference; 0 for a run that never started. */
    int64_t wall_ns;
    int64_t peak_rss_bytes;
    char peak_rss_method[32];
    /* What the adapter itself made resident during a repetition, beyond the
     * fixture and program already resident (sl_rss_growth_bytes), the
     * largest over repetitions; -1 when the peak could not be reset. */
    int64_t adapter_memory_bytes;
    uint64_t output_digest; /* XXH3-64 of the measured batches' canonical bytes */
    int nmetrics;
    sl_record_metric metrics[SL_RECORD_MAX_METRICS];
} sl_record;

struct sl_median_ci;
struct sl_throughput;
struct sl_ratio;
/* The median batch latency over every repetition's measured batches and its
 * 95% interval (sluice/core/stats.h); false when the record has no samples. */
bool sl_record_latency_ci(const sl_record *record, struct sl_median_ci *out);

/* The headline figure (docs/records.md, "The headline figure"): elements
 * per second at the median batch time over every repetition's measured
 * batches (the kept repetition's when the record holds no samples), with
 * its interval, the mean beside it and whether it is noisy. False when the
 * record measured nothing. */
bool sl_record_throughput(const sl_record *record, struct sl_throughput *out);
/* a's headline throughput over b's with its interval (sl_ratio_of_medians):
 * per-round ratios join the interval when both ran the same repetitions of
 * the same batch count. False when either has no samples. */
bool sl_record_ratio(const sl_record *a, const sl_record *b, struct sl_ratio *out);

/* Derived figures, the same for every writer and reader: the headline
 * rate of elements and of output bytes (0 when nothing was measured). */
double sl_record_elements_per_s(const sl_record *record);
double sl_record_bytes_per_s(const sl_record *record);
/* Sets a metric, replacing one of the same name; a name beyond
 * SL_RECORD_MAX_METRICS distinct ones is dropped. */
void sl_record_add_metric(sl_record *record, const char *name, double value, const char *unit);
/* The same for a scenario's own figure (scope "scenario" in the record). */
void sl_record_add_scenario_metric(sl_record *record, const char *name, double value, const char *unit);

/* Serializes the record and environment and writes them to path via a
 * temporary file and rename. */
sl_status sl_record_write(const sl_record *record, const sl_environment *env, const char *path, sl_err *err);
/* Returns the JSON text (malloc'd) of a record, for tests and tools, or NULL
 * for a record the reader would refuse. */
char *sl_record_to_json(const sl_record *record, const sl_environment *env);

/* Reads a record back, validating schema version and every required field;
 * latency_ns is allocated (free it with sl_record_release). */
sl_status sl_record_read(const char *path, sl_record *record, sl_environment *env, sl_err *err);
void sl_record_release(sl_record *record);

/* Every record of a folder (files named <scenario>__<variant>__<adapter>.json),
 * in name order. A file that cannot be read is left out and its message,
 * which names the file and the problem, goes to on_error (may be NULL);
 * nerrors counts them. Fails only when the folder cannot be read. */
typedef void (*sl_record_error_fn)(const char *message, void *user);
typedef struct sl_record_set {
    int count;
    sl_record *records;
    sl_environment *environments;
    char **paths;
    int nerrors;
} sl_record_set;

sl_status sl_record_set_load(const char *dir, sl_record_set *set, sl_record_error_fn on_error, void *user, sl_err *err);
void sl_record_set_free(sl_record_set *set);
/* Pools the repetitions of another run of the same records into `into`
 * (samples and per-repetition throughputs appended, repetitions added), for
 * a gate that alternates runs of two builds (ABAB) and compares all of
 * each side's repetitions. Records only one side has are left as they are. */
sl_status sl_record_set_append_runs(sl_record_set *into, const sl_record_set *from, sl_err *err);
/* Loads the first folder and pools the repetitions of the others into it
 * (the runs of one side of an ABAB gate). nerrors counts the unreadable
 * files of every folder. A record only a later folder holds is left out
 * and named through on_error, without counting as an error. */
sl_status sl_record_set_load_runs(const char *const *dirs, int ndirs, sl_record_set *set, sl_record_error_fn on_error,
                                  void *user, sl_err *err);
/* Index of the record of that scenario, variant and adapter, or -1. */
int sl_record_set_find(const sl_record_set *set, const char *scenario, const char *variant, const char *adapter);

#ifdef __cplusplus
}
#endif

#endif

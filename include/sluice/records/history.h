/* A performance history (docs/history.md): the runs of `sluice bench`
 * filed by machine and commit, the series they make (one per machine and
 * scenario, variant and adapter, in commit order) and the steps found in
 * each series, each with its commit range, size, confidence and whether
 * the instruction counts confirm it.
 *
 * On disk a history is a folder:
 *
 *   HISTORY/history.json                        what the folder is
 *   HISTORY/machines/<id>/machine.json          the machine's fingerprint
 *   HISTORY/machines/<id>/runs/<position>-<commit>.json   one run
 *
 * Each file is written whole or not at all (sl_write_file_atomic): a run is
 * one file, so a run is filed or absent, never half filed. */
#ifndef SLUICE_HISTORY_H
#define SLUICE_HISTORY_H

#include <stdbool.h>
#include <stdint.h>

#include "sluice/core/changepoint.h"
#include "sluice/core/status.h"
#include "sluice/records/record.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The version of history.json, machine.json and the run files. */
#define SL_HISTORY_VERSION 1

/* The most `sluice bench` processes one run may hold. */
#define SL_HISTORY_MAX_PROCESSES 64

/* The headline figure of a record, as the history keeps it: the median
 * batch time over every repetition's measured batches with its 95%
 * interval, and the elements of one batch, which turn it into elements per
 * second at the median. sl_history_figure_of is the one place the history
 * takes it from a record. */
typedef struct sl_history_figure {
    double median_ns, low_ns, high_ns;
    double elements_per_batch;
} sl_history_figure;

/* False for a record that measured nothing (not ok, or no samples). */
bool sl_history_figure_of(const sl_record *record, sl_history_figure *out);
/* Elements per second at the median, and at the interval's ends (the low
 * rate from the high time); 0 for an empty figure. */
double sl_history_rate(const sl_history_figure *figure);
double sl_history_rate_low(const sl_history_figure *figure);
double sl_history_rate_high(const sl_history_figure *figure);

/* What a row measures: on one machine, the rows of one key over commits
 * make one series. */
typedef struct sl_history_key {
    char scenario[16];
    char variant[32];
    char adapter[32];
    char profile[16];
    char kernels[32];
    int64_t threads;
    int64_t workers;
} sl_history_key;

/* One row of a run: what it measured for one scenario, variant and adapter. */
typedef struct sl_history_row {
    sl_history_key key;
    int64_t batch_size;
    sl_record_outcome outcome;
    char reason[256];
    char equivalence[32];
    uint64_t output_digest;
    bool measured; /* figure and samples are set */
    sl_history_figure figure;
    int64_t nsamples;
    int64_t *samples_ns;  /* every measured batch of every repetition */
    int64_t instructions; /* callgrind's count inside sl_bench_run; -1 when not counted */
    /* Which of the commit's processes measured it: a run may hold several
     * `sluice bench` processes of one commit (`history add DIR1 DIR2 ...`),
     * each a figure of its own, because the level moves between processes
     * of one binary by far more than between repetitions of one. 0 for
     * the first, and in run files written before processes were kept. */
    int process;
    /* The record's kernel_choice ("normalize_u8=cpu-avx2,..."): which table
     * each kernel came from. With `auto` each build tunes its own choice,
     * so a change of it between runs is the tuner's, not the commit's:
     * the series is split there and the split flagged, never filed as a
     * step. Empty when the record did not say. */
    char kernel_choice[1024];
} sl_history_row;

/* One run: every row of one `sluice bench` run, at one commit on one
 * machine. */
typedef struct sl_history_run {
    char commit[48];      /* the records' git_commit */
    int64_t position;     /* the commit's place in commit order: larger is later */
    char commit_time[32]; /* ISO 8601, or empty when not known */
    char machine[24];     /* sl_history_machine_id of the environment */
    sl_environment environment;
    int nrows;
    sl_history_row *rows;
    char *path; /* the file it was read from, or NULL */
} sl_history_run;

/* The machine a run was measured on: 16 hex digits of XXH3-64 over the
 * parts of the environment that make a speed comparable (CPU model and
 * count, operating system kernel, compiler and flags, library versions
 * without sluice's own), and not over those that change from commit to
 * commit (the commit, the time). A new id starts a new series. */
void sl_history_machine_id(const sl_environment *env, char *id, size_t size);
/* "Intel(R) Xeon(R) Processor, 2 CPUs, Linux 6.1.0 x86_64, gcc 12.2.0". */
void sl_history_machine_label(const sl_environment *env, char *buf, size_t size);

/* Adds the rows of other, another process of the same commit on the same
 * machine (records_dir names it in a refusal), to run as its next process;
 * other's rows move into run and other is left empty. Refuses another
 * commit or machine. */
sl_status sl_history_run_add_process(sl_history_run *run, sl_history_run *other, const char *records_dir, sl_err *err);
/* How many processes the run holds (the largest process index plus 1). */
int sl_history_run_processes(const sl_history_run *run);

/* A run from the records of one bench run. Refuses, naming the records
 * folder and the file: no records, records of different commits or
 * machines, a commit that is not a hexadecimal commit id, a position below
 * 0. commit_time may be NULL. */
sl_status sl_history_run_from_records(const sl_record_set *set, const char *records_dir, int64_t position,
                                      const char *commit_time, sl_history_run *run, sl_err *err);
/* Adds instruction counts from a file of lines
 * "SCENARIO<TAB>VARIANT<TAB>ADAPTER<TAB>COUNT" (ci/count-instructions.sh;
 * a count "-" means valgrind failed and is skipped) to the rows they name.
 * Refuses a malformed line, naming the file and line. */
sl_status sl_history_run_add_instructions(sl_history_run *run, const char *path, sl_err *err);
void sl_history_run_free(sl_history_run *run);

/* The run as JSON (malloc'd), and back. The reader refuses, naming the file
 * and field, anything the writer would not have written. */
char *sl_history_run_to_json(const sl_history_run *run);
sl_status sl_history_run_read(const char *path, sl_history_run *run, sl_err *err);

/* Files a run into the history folder (created when missing, with its
 * history.json; a folder that holds anything else and no history.json is
 * refused). Refuses a run of that machine and commit already filed, and a
 * run whose position another commit of that machine holds. The run's file
 * is written atomically after the machine's, so an interrupted add leaves
 * the run filed or absent. filed (may be NULL) receives the run's path. */
sl_status sl_history_add(const char *history_dir, const sl_history_run *run, char *filed, size_t filed_size,
                         sl_err *err);
/* The same, except that a commit filed already on that machine is not
 * refused: nothing is written, *was_filed is true and filed receives the
 * filed run's path (for a scheduled job on an unchanged main). */
sl_status sl_history_add_unless_filed(const char *history_dir, const sl_history_run *run, char *filed,
                                      size_t filed_size, bool *was_filed, sl_err *err);

/* Whether runs may be filed into history_dir: a history, or a folder that
 * is missing or empty; else why not. Asked before anything is written
 * there, the lock included (D24: a refused add left its lock file in the
 * user's folder). */
sl_status sl_history_check_target(const char *history_dir, sl_err *err);

typedef struct sl_history_machine {
    char id[24];
    sl_environment environment;
} sl_history_machine;

/* Every run of a history, by machine, then position. A run file that
 * cannot be read is left out and its message goes to on_error (may be NULL);
 * nerrors counts them. Fails when the folder is not a history. */
typedef struct sl_history {
    int nmachines;
    sl_history_machine *machines;
    int nruns;
    sl_history_run *runs;
    int nerrors;
} sl_history;

sl_status sl_history_load(const char *history_dir, sl_history *history, sl_record_error_fn on_error, void *user,
                          sl_err *err);
void sl_history_free(sl_history *history);
/* Index of the machine with that id, or -1. */
int sl_history_find_machine(const sl_history *history, const char *id);

/* What the instruction counts say of a step. */
typedef enum sl_step_instructions {
    SL_STEP_NOT_COUNTED = 0, /* a side of the step has no count */
    SL_STEP_CONFIRMED,       /* the counts moved by the threshold or more, the way the time did */
    SL_STEP_UNCHANGED,       /* the counts moved by less: not a change in the code path */
    SL_STEP_CONTRADICTED     /* the counts moved the other way */
} sl_step_instructions;

const char *sl_step_instructions_name(sl_step_instructions value);

/* A step in a series: between points before and after (indices into the
 * series' points, the last measured point before the change and the first
 * after), its size as the relative change in elements per second with its
 * interval (the Hodges-Lehmann shift of the log rates of the segments on
 * either side, at most SL_HISTORY_STEP_WINDOW points each), and its
 * permutation p. */
#define SL_HISTORY_STEP_WINDOW 30

typedef struct sl_history_step {
    int before, after;
    double change, change_lo, change_hi, level;
    double p;
    sl_step_instructions instructions;
    double instructions_change; /* after's count over before's, less 1; 0 when not counted */
} sl_history_step;

/* One point of a series: a run and its row. */
typedef struct sl_history_point {
    int run;
    int row;
} sl_history_point;

/* One series: a machine and a scenario, variant, adapter, profile, kernel
 * table, thread and worker count, with its points in commit order
 * (every outcome, measured or not) and its steps. */
typedef struct sl_history_series {
    int machine;
    sl_history_key key;
    int npoints;
    sl_history_point *points;
    int nsteps;
    sl_history_step *steps;
    /* Where the measured rows' kernel_choice changed: the index of the
     * first point with the new choice. The series is searched for steps
     * between these splits only, never across one. */
    int nkernel_changes;
    int *kernel_changes;
    /* The measured points and commits, and whether any stretch between
     * kernel changes had enough of them to test (sl_changepoint_testable):
     * false is "too short to test", not "no step". */
    int measured_points, measured_commits;
    bool testable;
} sl_history_series;

typedef struct sl_history_options {
    sl_changepoint_options changepoint;
    /* A change smaller than this (relative, in elements/s) is not reported,
     * however significant: the gate's minimum effect, 5%. */
    double min_effect;
    /* The instruction counts confirm a step when they move by this much
     * (relative) the way the time moved: the gate's 1%. */
    double instructions_threshold;
} sl_history_options;

#define SL_HISTORY_MIN_EFFECT             0.05
#define SL_HISTORY_INSTRUCTIONS_THRESHOLD 0.01

void sl_history_defaults(sl_history_options *options);

/* Every series of the history, ordered by machine, then scenario, variant,
 * adapter, profile, kernels, threads and workers, with its steps. */
sl_status sl_history_analyze(const sl_history *history, const sl_history_options *options, sl_history_series **series,
                             int *nseries, sl_err *err);
void sl_history_series_free(sl_history_series *series, int nseries);
/* The point's row and run. */
const sl_history_row *sl_history_point_row(const sl_history *history, const sl_history_point *point);
const sl_history_run *sl_history_point_run(const sl_history *history, const sl_history_point *point);

#ifdef __cplusplus
}
#endif

#endif

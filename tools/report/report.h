/* The comparison of a folder of records, computed once and shown three
 * ways: the bench summary (summary.c), report.md and report.html
 * (cmd_report.c, with report_chart.c's gnuplot charts). One model, so that
 * every view ranks the same adapters with the same figures and ratios
 * (docs/records.md, "The headline figure"; docs/report.md). */
#ifndef SLUICE_TOOLS_REPORT_H
#define SLUICE_TOOLS_REPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "sluice/core/stats.h"
#include "sluice/records/record.h"

/* A ratio of two rows' headline throughputs, with its interval and call. */
typedef struct sl__report_ratio {
    bool has;          /* false: no such other row, or no samples */
    sl_ratio ratio;    /* this row's throughput over the other's */
    const char *other; /* the other row's adapter */
    bool unranked;     /* either row is noisy: shown, not ranked */
    bool interleaved;  /* both rows ran in the same rounds (sluice bench --rounds) */
} sl__report_ratio;

/* Where a row stands against the fastest row of its variant, the report's
 * colour: the fastest, a row the data cannot tell from it, or one behind
 * it; "-" for a row without a speed. */
typedef enum sl__standing {
    SL__STANDING_NONE = 0,
    SL__STANDING_FASTEST,
    SL__STANDING_TIED,
    SL__STANDING_BEHIND
} sl__standing;

typedef struct sl__report_row {
    const sl_record *record;
    const sl_environment *env;
    /* ok, verified and with samples: its speed may be compared. */
    bool ranked;
    sl_throughput t; /* the headline figure, when ranked */
    double p99_ns;   /* the kept repetition's */
    sl__report_ratio vs_reference;
    /* The fastest row's lead over the runner-up, for the fastest row;
     * every other row's ratio to the fastest. */
    sl__report_ratio vs_best;
    /* For sluice's own adapters, over the variant's best equivalent peer
     * (sluice/records/peer_rank.h). */
    sl__report_ratio vs_best_peer;
    sl__standing standing;
} sl__report_row;

/* The rows of one scenario variant, in the model's order: ranked rows
 * fastest first, then rows that ran without a rankable speed (mismatch,
 * failed), then those that did not run here (unavailable, excluded,
 * skipped), which the views fold into one line. */
typedef struct sl__report_variant {
    int first, end; /* rows[first..end) */
    int nranked;    /* the first nranked rows are ranked */
    int nfolded;    /* the last nfolded rows did not run here */
    int fastest;    /* index of the fastest ranked row, or -1 */
} sl__report_variant;

typedef struct sl__report {
    int nrows;
    sl__report_row *rows; /* grouped by variant, in record order of variants */
    int nvariants;
    sl__report_variant *variants;
    int nenvironments; /* distinct (CPU, commit) pairs among the records */
    const sl_environment *environments[8];
    int nbusy;           /* rows measured while the machine was busy (sl_environment_busy) */
    double busiest_load; /* the highest load average any ranked row saw */
    double most_steal;   /* the highest steal fraction any ranked row saw */
    double most_wait;    /* the highest CPU wait fraction any ranked row saw */
} sl__report;

/* Builds the model from records and their environments (a record set's
 * arrays); records must stay alive while the model is used. */
void sl__report_build(const sl_record *records, const sl_environment *environments, int count, sl__report *report);
void sl__report_free(sl__report *report);

const char *sl__standing_name(sl__standing standing);
/* "3.99x win", "1.02x cannot tell", "(4.30x) win" for a ratio shown but not
 * ranked (a noisy side), "-" without one; with_interval adds the interval
 * and the range of the per-round (or per-repetition) ratios it covers
 * ("3.99x [3.95, 4.03] win, rounds 3.96 to 4.01"). */
void sl__format_ratio(char *buf, size_t size, const sl__report_ratio *r, bool with_interval);
/* Three significant digits and an SI suffix: "1.72M", "486". */
void sl__format_rate(char *buf, size_t size, double value);
/* A device record's own runs, for a row's note: its allocations' device
 * memory at their peak and the path its source took ("device memory 3.1 MiB
 * at peak; source resident, placed in 2.0 ms"); "" for any other record. */
void sl__format_device_runs(char *buf, size_t size, const sl_record *record);
/* The adapters of a variant that did not run here, one phrase per reason:
 * "not run here: cuda, cuda-graph (unavailable: no NVIDIA driver)". */
void sl__report_folded_line(const sl__report *report, const sl__report_variant *v, char *buf, size_t size);

/* The adapter's colour ("#1f77b4") in every chart and table: fixed by its
 * name (a table for sluice's adapters, a digest of the name into a palette
 * for peers), never by its rank. */
const char *sl__adapter_colour(const char *adapter);

/* One environment fingerprint as a bullet list, escaped for HTML or
 * Markdown: CPU, compiler and flags, commit, kernel, libraries, time. */
void sl__write_environment(FILE *out, const sl_environment *env, bool html);

/* A chart's SVG (malloc'd text without the XML prolog), or false with the
 * reason when gnuplot is missing or fails. Every chart's labels come from
 * the records; no file path reaches the SVG. */
bool sl__chart_rates(const sl__report *report, const sl__report_variant *v, const char *workdir, char **svg,
                     char *reason, size_t size);
bool sl__chart_latency(const sl__report *report, const sl__report_variant *v, const char *workdir, char **svg,
                       char *reason, size_t size);
bool sl__chart_overview(const sl__report *report, const char *workdir, char **svg, char *reason, size_t size);
/* Time per element against batch size for every batch-size sweep among the
 * rows (variants named <variant>@bs<N>, sluice bench --batch-sizes): one
 * line per scenario, variant and adapter with two points or more; false
 * with the reason when there is none. */
bool sl__chart_batch_scaling(const sl__report *report, const char *workdir, char **svg, char *reason, size_t size);
/* Time per element against prefetch workers for every workers sweep among
 * the rows (variants whose name carries @w<N>, sluice bench
 * --workers-sweep): one line per scenario, variant (with its batch size,
 * if swept too) and adapter with two points or more. */
bool sl__chart_workers_scaling(const sl__report *report, const char *workdir, char **svg, char *reason, size_t size);

#endif

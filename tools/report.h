/* The comparison report: rows computed once from a records folder, then
 * rendered as Markdown and as a self-contained HTML page with gnuplot charts
 * (docs/report.md). */
#ifndef SLUICE_TOOLS_REPORT_H
#define SLUICE_TOOLS_REPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "sluice/record.h"

/* Ratios to the reference above STRENGTH are strengths, below GAP gaps. */
#define SL__REPORT_STRENGTH 1.2
#define SL__REPORT_GAP 0.8

typedef struct sl__report_row {
    const sl_record *record;
    bool ranked;                 /* ok, with samples: its speed may be compared */
    double throughput;           /* elements/s at the pooled median batch time */
    double throughput_lo, throughput_hi; /* from the median's 95% interval */
    double p50_ns, p99_ns;
    bool noisy;
    double vs_reference;         /* NAN when the reference did not run ok */
    double vs_best_other;        /* over the fastest other ranked adapter; NAN when none */
    const char *best_other;
    /* Over the variant's best equivalent peer (sluice/peer_rank.h), for
     * sluice's own adapters; NAN for a peer row or when no peer qualifies.
     * best_peer_unranked: either side is noisy, so it is shown, not ranked. */
    double vs_best_peer;
    const char *best_peer;
    bool best_peer_unranked;
    const char *classification;  /* strength, gap, parity, noisy, or "-" */
} sl__report_row;

typedef struct sl__report {
    int nrows;
    sl__report_row *rows;        /* in record order: scenario, variant, adapter */
    int nenvironments;           /* distinct (CPU, commit) pairs among the records */
    const sl_environment *environments[8];
} sl__report;

void sl__report_build(const sl_record_set *set, sl__report *report);
/* "1.23M", "456k", "12.3": a rate with three significant digits, for every
 * table that prints one. */
void sl__format_rate(char *buf, size_t size, double value);
void sl__report_free(sl__report *report);

/* Draws one SVG bar chart per scenario variant with gnuplot into `svg`
 * (malloc'd text). Returns false, with the reason, when gnuplot is missing
 * or fails: the report is then written without charts, saying why. */
bool sl__report_chart(const sl__report *report, int first, int end, const char *workdir, char **svg,
                      char *reason, size_t size);

#endif

/* The bench summary: the table `sluice bench` prints when its runs end and
 * writes to summary.md, and `sluice summary` prints for a records folder.
 * Its figures and ratios come from the report's model (report.h), so the
 * summary and the report rank alike. */
#ifndef SLUICE_TOOLS_SUMMARY_H
#define SLUICE_TOOLS_SUMMARY_H

#include <stdbool.h>
#include <stdio.h>

#include "cli.h"
#include "sluice/records/record.h"

typedef struct sl__summary {
    sl_record *records; /* owned copies, latencies and samples included */
    sl_environment *environments;
    int count, capacity;
    int failed, mismatched;
} sl__summary;

/* The value of a record's metric by name, or NULL when it has none. */
const double *sl__find_metric(const sl_record *record, const char *name);

/* Keeps a copy of the record and the environment it was measured in. */
void sl__summary_add(sl__summary *summary, const sl_record *record, const sl_environment *env);
void sl__summary_free(sl__summary *summary);

/* The result of one scenario variant in a line, fastest first, for the
 * progress output as each variant completes: "CV-1/32x32: fused 1.65M/s,
 * 1.30x over iter (win); iter 1.27M/s; reference 295k/s". */
void sl__summary_variant_line(const sl__summary *summary, const char *scenario, const char *variant, char *buf,
                              size_t size);

/* The table (ranked rows fastest first within each variant; adapters that
 * did not run here left out of it) and the scenario metrics table, NULL
 * when no run has any. */
sl__table *sl__summary_table(const sl__summary *summary);
sl__table *sl__summary_metrics_table(const sl__summary *summary);
/* The lines printed under the table: the adapters that did not run here,
 * one line for each reason whatever the number of variants, and a warning
 * when the machine was too busy to rank. prefix starts each line. */
void sl__summary_notes(const sl__summary *summary, FILE *out, const char *prefix);
/* The table, the scenario metrics and the notes, as a terminal shows them. */
void sl__summary_print(const sl__summary *summary, FILE *out);
/* summary.md, written atomically: how the run was made (the command line,
 * the first record's environment), the table, the notes and the legend.
 * False, with the error printed for `command`, when it cannot be written. */
bool sl__summary_write_markdown(const sl__summary *summary, const char *command, const char *title, int argc,
                                char **argv, const char *path);
/* What the columns mean, for summary.md. */
extern const char sl__summary_legend[];

#endif

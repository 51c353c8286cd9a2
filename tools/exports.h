/* Exports of a run's records in formats existing tools read: JUnit XML (CI
 * systems' test reports) and Google Benchmark's JSON (its compare.py and
 * the usual benchmark trackers). */
#ifndef SLUICE_TOOLS_EXPORTS_H
#define SLUICE_TOOLS_EXPORTS_H

#include <stdio.h>

#include "sluice/record.h"

/* One testcase per scenario, variant and adapter: a mismatch is a failure,
 * a failed run an error, excluded, unavailable and skipped runs skipped. */
void sl__export_junit(const sl_record *records, int count, FILE *out);
/* One "iteration" entry per repetition (its mean batch time) and a
 * "median" aggregate per record, in nanoseconds; only ok records. */
void sl__export_gbench(const sl_record *records, int count, const sl_environment *env, FILE *out);

#endif

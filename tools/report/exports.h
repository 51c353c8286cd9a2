/* Exports of a run's records in formats existing tools read: JUnit XML (CI
 * systems' test reports) and Google Benchmark's JSON (its compare.py and
 * the usual benchmark trackers). */
#ifndef SLUICE_TOOLS_EXPORTS_H
#define SLUICE_TOOLS_EXPORTS_H

#include <stdbool.h>
#include <stdio.h>

#include "sluice/records/record.h"

/* One testcase per scenario, variant and adapter: a mismatch is a failure,
 * a failed run an error, excluded, unavailable and skipped runs skipped.
 * A testcase's time is the run's wall time; the measured figures are its
 * <properties>. environments may be NULL. */
void sl__export_junit(const sl_record *records, const sl_environment *environments, int count, FILE *out);
/* The same, written atomically to path; false, with the error printed,
 * when it cannot be written. */
bool sl__export_junit_file(const sl_record *records, const sl_environment *environments, int count, const char *path);
/* Per ok record, one "iteration" entry per repetition, whose real_time is
 * that repetition's median batch time, then the mean, median, stddev and
 * cv aggregates over the repetitions as Google Benchmark writes them,
 * except that the median aggregate is sluice's headline figure (the median
 * over every batch of every repetition). */
void sl__export_gbench(const sl_record *records, int count, const sl_environment *env, FILE *out);

#endif

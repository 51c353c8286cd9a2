/* The parts of `sluice history` that write files: the static site and the
 * exports for other trackers (docs/history.md). */
#ifndef SLUICE_TOOLS_HISTORY_H
#define SLUICE_TOOLS_HISTORY_H

#include "sluice/records/history.h"

/* Writes the site into dir: index.html and one page per series under
 * rows/, each file atomically, the index last. Returns 0, or 1 after
 * naming on stderr what could not be written. */
int sl__history_publish(const sl_history *history, const sl_history_series *series, int nseries,
                        const sl_history_options *options, const char *dir);

/* The series' page name under rows/: "<machine>-<16 hex digits>.html",
 * from a digest of its key, so that no record string reaches a path. */
void sl__history_page_name(const sl_history *history, const sl_history_series *series, char *buf, size_t size);

/* Writes one JSON file per run into dir, in the format asv reads
 * (dir/benchmarks.json, dir/<machine>/machine.json and
 * dir/<machine>/<commit>-sluice.json) or the Bencher Metric Format
 * (dir/<machine>/<position>-<commit>.json). Returns 0 or 1. */
int sl__history_export_asv(const sl_history *history, const char *dir);
int sl__history_export_bencher(const sl_history *history, const char *dir);

#endif

/* What sluice leaves on disk when it is stopped: nothing it can avoid.
 *
 * Temporaries are named so that they are recognizably sluice's and say whose
 * they are: work directories `sluice-<what>-<pid>-XXXXXX` (IO-1's .npy
 * exports, the report's chart files) and files `<target>.tmp.<pid>.XXXXXX`
 * beside a file being replaced atomically. While the process runs they are
 * registered; SIGINT, SIGTERM and SIGHUP remove the registered ones before
 * the process dies of the signal. SIGKILL cannot be caught, so the next run
 * removes the temporaries of processes that no longer exist. */
#ifndef SLUICE_CLEANUP_H
#define SLUICE_CLEANUP_H

#include <stddef.h>

#include "sluice/core/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Installs handlers for SIGINT, SIGTERM and SIGHUP that remove every
 * registered temporary, then let the signal end the process as it would
 * have (the exit status still says which signal). A signal the process
 * started with ignored (a background job's SIGINT, nohup's SIGHUP) stays
 * ignored. For programs, such as the
 * `sluice` command; a library user keeps its own signal policy. */
void sl_cleanup_on_signals(void);

/* A message the handlers above write to stderr, as it is when the signal
 * comes, before the process dies of it (e.g. `sluice bench`: which runs
 * finished and where their records are). The text must stay alive and
 * unchanged while it is set: a caller that updates it fills another buffer
 * and sets that one. NULL: nothing is said. */
void sl_cleanup_set_last_words(const char *text);

/* Removes, from directory dir, sluice's temporaries (named as above) whose
 * process no longer exists, and returns how many it removed (0 when dir
 * cannot be read). Another live process's temporaries are never touched. */
int sl_sweep_stale_temporaries(const char *dir);

/* Creates a fresh work directory `<base>/sluice-<what>-<pid>-XXXXXX`,
 * registered for removal on a signal, writing its path to dir. */
sl_status sl_workdir_create(const char *base, const char *what, char *dir, size_t size, sl_err *err);
/* Removes a work directory made by sl_workdir_create (the flat files in it,
 * then itself) and forgets it. */
void sl_workdir_remove(const char *dir);

/* The base for work directories: $TMPDIR when set and not empty, else /tmp. */
const char *sl_temp_base(void);

#ifdef __cplusplus
}
#endif

#endif

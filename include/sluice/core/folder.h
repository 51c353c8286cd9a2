/* Folders written whole or not at all (DESIGN.md invariant 6): a baseline,
 * an export, a blessed golden set.
 *
 * A folder is written into a temporary sibling, `<target>.tmp.<pid>.XXXXXX`,
 * which ends with a manifest (MANIFEST.json: what the folder holds, each
 * file's size and XXH3-64, and where it came from: commit, machine,
 * command). Only then is it renamed into place, atomically exchanged with
 * the folder it replaces, whose old contents are removed afterwards. A
 * reader sees the old folder or the new one, never a mixture, and a folder
 * without a complete manifest is refused (sl_folder_check). A writer killed
 * before the rename leaves only the temporary, which the next command that
 * writes there sweeps (sl_sweep_stale_temporaries, sluice/core/cleanup.h). */
#ifndef SLUICE_FOLDER_H
#define SLUICE_FOLDER_H

#include <limits.h>
#include <stdbool.h>

#include "sluice/core/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The manifest's file name inside every such folder. */
#define SL_FOLDER_MANIFEST "MANIFEST.json"

/* Where a folder came from, for the person reading its manifest. */
typedef struct sl_folder_origin {
    const char *commit;  /* the sluice commit that wrote it */
    const char *machine; /* host name and CPU model */
    const char *command; /* the command line */
} sl_folder_origin;

/* Whether a file named `name` is one a folder of this kind holds: lets a
 * folder written before manifests existed be replaced, while a folder that
 * holds anything else (a user's files) is never removed. */
typedef bool (*sl_folder_names_fn)(const char *name);

typedef struct sl_staged_folder {
    char target[PATH_MAX];
    char path[PATH_MAX]; /* the temporary sibling to write into */
    char kind[32];
} sl_staged_folder;

/* Starts writing the folder `target` of kind `kind` ("baseline", "export",
 * "goldens"): creates its parent, sweeps the parent of temporaries that
 * dead processes left, and creates the temporary sibling (registered for
 * removal on SIGINT, SIGTERM and SIGHUP). Refuses, before writing anything,
 * a target that is a file or a link, a folder whose manifest names another
 * kind, and a folder without a manifest holding a file that `names` does
 * not accept (NULL: only an empty folder). */
sl_status sl_folder_stage(const char *target, const char *kind, sl_folder_names_fn names, sl_staged_folder *out,
                          sl_err *err);
/* Carries the files of the folder being replaced (if any) into the staged
 * one, as hard links where the file system allows and copies elsewhere:
 * for a writer that changes some files of a folder and keeps the rest (a
 * bless of some scenarios). */
sl_status sl_folder_carry(const sl_staged_folder *staged, sl_err *err);
/* Writes dir's manifest: every regular file in it (temporaries and the
 * manifest itself aside), sorted by name, with its size and XXH3-64. */
sl_status sl_folder_write_manifest(const char *dir, const char *kind, const sl_folder_origin *origin, sl_err *err);
/* Checks the staged folder's manifest against its files, syncs it and
 * renames it into place, exchanging it with the old folder, whose contents
 * are then removed. On failure the old folder is unchanged and the staged
 * one removed. */
sl_status sl_folder_commit(sl_staged_folder *staged, sl_err *err);
/* Removes the staged folder and everything in it (a write that failed). */
void sl_folder_abandon(sl_staged_folder *staged);

/* Whether dir is a complete folder of this kind: its manifest is whole and
 * of this kind, every file it lists is there with its size (and, with
 * digests, its XXH3-64), and the folder holds nothing it does not list.
 * Every refusal names the folder and the file or field. */
sl_status sl_folder_check(const char *dir, const char *kind, bool digests, sl_err *err);
/* Whether dir's manifest is whole and of this kind and lists `name` with the
 * size and XXH3-64 the file has: one file of a large folder (a golden of
 * the golden set) checked without reading the others. */
sl_status sl_folder_check_member(const char *dir, const char *kind, const char *name, sl_err *err);

/* Takes an advisory lock (flock) on dir for `what` ("sluice bench"): a
 * second writer is refused with a message naming the holder's pid, instead
 * of two runs mixing their files. The lock lives as long as *fd; release it
 * with sl_folder_unlock. */
/* The lock file's name in a held folder: readers of a folder pass over it. */
#define SL_FOLDER_LOCK ".sluice.lock"
sl_status sl_folder_lock(const char *dir, const char *what, int *fd, sl_err *err);
void sl_folder_unlock(int fd);

#ifdef __cplusplus
}
#endif

#endif

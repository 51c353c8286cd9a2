/* The registry of temporaries the signal handlers remove (see
 * sluice/core/cleanup.h). */
#ifndef SLUICE_CLEANUP_INTERNAL_H
#define SLUICE_CLEANUP_INTERNAL_H

#include <stdbool.h>
#include <sys/types.h>

/* Registers a file (removed with unlink) or a directory (its flat entries,
 * then itself) and returns its slot, or -1 when the path is too long or
 * every slot is taken: the temporary then is only swept by a later run. */
int sl__cleanup_register(const char *path, bool directory);
void sl__cleanup_unregister(int slot);
/* Unregisters the directory registered under path, if any. */
void sl__cleanup_unregister_path(const char *path);

/* Whether name is "<target>.tmp.<pid>.XXXXXX" (a file being replaced
 * atomically, or a folder being staged), and whose. */
bool sl__temporary_owner(const char *name, pid_t *pid);
/* Removes a folder and everything in it, depth first, following no
 * symbolic link and entering no other file system. Not for a signal
 * handler (the handler removes flat folders with system calls only). */
void sl__remove_tree(const char *dir);

#endif

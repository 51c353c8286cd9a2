/* Guarded file mappings: a read past the end of a mapped file that shrank
 * under it becomes a flag the source reports, not a SIGBUS that kills the
 * process before it can record or clean anything.
 *
 * A process-wide SIGBUS handler looks the faulting address up among the
 * registered mappings. Inside one, it replaces the mapping from the faulting
 * page to its end with anonymous zero pages (so the faulting read restarts
 * and reads zeros) and marks the mapping damaged; the engine checks the mark
 * after every batch and fails the run with the file's name. An address
 * outside every registered mapping goes to the handler that was there
 * before, or to the default action (the process dies with SIGBUS, as it
 * would have without sluice). */
#ifndef SLUICE_MAPGUARD_H
#define SLUICE_MAPGUARD_H

#include <stdbool.h>
#include <stddef.h>

/* Registers [start, start + length) and returns its slot, or -1 when every
 * slot is taken (the mapping then simply is not guarded). Installs the
 * handler on first use. */
int sl__mapguard_register(void *start, size_t length);
/* Registers a reserved mapping (address space whose pages are made
 * readable only where there is data, the rest PROT_NONE): a read outside
 * the readable pages is a SIGSEGV, which the guard turns into one zero page
 * and a damage flag, as it turns a shrunk file's SIGBUS into zeros. */
int sl__mapguard_register_reserved(void *start, size_t length);
/* Forgets a slot (before the mapping is unmapped); -1 is ignored. */
void sl__mapguard_unregister(int slot);
/* Whether a read inside the slot's mapping hit the end of its file, or,
 * for a reserved mapping, a page that holds no data. */
bool sl__mapguard_damaged(int slot);

#endif

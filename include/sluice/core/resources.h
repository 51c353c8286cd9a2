/* What this process may use of the machine: its CPUs and its memory. */
#ifndef SLUICE_RESOURCES_H
#define SLUICE_RESOURCES_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The CPUs this process may use (affinity mask, cgroup quota): the default
 * thread count of `sluice bench --threads`. */
int sl_available_cpus(void);
/* The bytes this process may still allocate: the least of MemAvailable,
 * the cgroup memory limit less its usage, and RLIMIT_AS less the address
 * space already mapped. Names the binding limit in *limit_name (when not
 * NULL). -1 when none is known. */
int64_t sl_memory_available(const char **limit_name);

#ifdef __cplusplus
}
#endif

#endif

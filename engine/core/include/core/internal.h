/* Declarations shared inside libsluice only (sl__ prefix). */
#ifndef SLUICE_INTERNAL_H
#define SLUICE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sluice/core/status.h"

/* The commit the library was built from ("unknown" outside a git checkout). */
const char *sl__build_git_commit(void);
/* The GNU build id of the object holding libsluice's code, in hex, into
 * buf; false, with buf empty, when the linker wrote none (or buf is too
 * small for it). */
bool sl__build_id(char *buf, size_t size);

/* The value of the first "field : value" line of /proc/cpuinfo's text
 * (info) named `field` ("model name", "microcode"), into buf; false, with
 * buf untouched, when there is none. */
bool sl__cpuinfo_field(const char *info, const char *field, char *buf, size_t size);

/* The L2 cache of one core of this machine, in bytes: the C library's
 * count (sysconf), else the kernel's (/sys/devices/system/cpu/cpu0/cache);
 * 0 when neither says. */
size_t sl__l2_cache_bytes(void);

/* Aligned allocation for sources, fixtures, batches and scratch buffers;
 * release with free(). A block of SL_HUGE_PAGE_BYTES or more starts on a
 * huge page and its whole huge pages are advised to be ones
 * (engine/core/alloc.c), unless SLUICE_HUGEPAGES=0. */
#define SL_HUGE_PAGE_BYTES ((size_t)2 << 20)
void *sl__aligned_alloc(size_t alignment, size_t size);
/* Keeps the compiler from proving a probe's stores dead: it must assume the
 * call reads all memory reachable from buffer, which nothing else does. */
static inline void sl__keep_stores(void *buffer)
{
#if defined(__GNUC__)
    __asm__ volatile("" : : "r"(buffer) : "memory");
#else
    volatile unsigned char sink = *(volatile unsigned char *)buffer;
    (void)sink;
#endif
}
/* Advises the whole huge pages inside [memory, memory + bytes) to be backed
 * by transparent huge pages (MADV_HUGEPAGE), for a block that cannot come
 * from sl__aligned_alloc (a cache's calloc, whose zero pages stay unmapped
 * until used); nothing below SL_HUGE_PAGE_BYTES, nothing with
 * SLUICE_HUGEPAGES=0, and a refusal is ignored: the advice never changes
 * what the memory holds. */
void sl__advise_huge(void *memory, size_t bytes);
/* Whether huge pages are asked for: true unless the environment variable
 * SLUICE_HUGEPAGES is "0" or "off" (the way to measure without them). */
bool sl__huge_pages_on(void);
/* The transparent huge page settings in force, each the selected word of
 * /sys/kernel/mm/transparent_hugepage/{enabled,defrag} ("madvise",
 * "always", "never"; "unknown" where absent). */
void sl__huge_pages_describe(char *enabled, char *defrag, size_t size);
/* The bytes of this process's anonymous memory on huge pages now
 * (AnonHugePages of /proc/self/smaps_rollup), or -1 where unknown. */
int64_t sl__anon_huge_bytes(void);
/* The machine's online NUMA nodes (/sys/devices/system/node/online), or
 * -1 where unknown. */
int sl__numa_nodes(void);
/* How this process's threads and memory are placed, in words: the CPUs
 * its affinity allows and the fused pool's policy (engine/exec/pool.c). */
void sl__describe_placement(char *buf, size_t size);
/* A "key: value kB" line of a /proc file, in bytes, or -1. */
int64_t sl__proc_kib_field(const char *path, const char *key);

/* Bounded copy that always terminates dst, and cuts, where it must, at the
 * start of a UTF-8 character, never inside one. */
void sl__copy_string(char *dst, size_t size, const char *src);
/* Replaces each control character of text (C0 and DEL) with '?', in place:
 * text from another program (a peer's hello, its stderr, a file's name)
 * that a terminal would otherwise obey (D22). */
void sl__text_printable(char *text);

/* Replaces every byte of text that does not start a valid UTF-8 sequence
 * with U+FFFD, in place, cutting at a character boundary what no longer
 * fits in size bytes. Returns how many were replaced (0 for valid text). */
int sl__utf8_sanitize(char *text, size_t size);

/* Callgrind's counts per batch (engine/core/instrument.c): whether this
 * build has valgrind's client requests, instrumentation on and counts
 * zeroed, the counts since the last mark dumped under label, and
 * instrumentation off. No-ops without valgrind. */
bool sl__instrument_available(void);
void sl__instrument_start(void);
void sl__instrument_mark(const char *label);
void sl__instrument_stop(void);

/* A sample of how busy the machine is: the 1-minute load average (-1 where
 * /proc/loadavg cannot be read), the CPU clock ticks of /proc/stat, and
 * this process's own scheduler figures (/proc/self/task/N/schedstat summed
 * over its threads): the time its threads ran and the time they were
 * runnable but waited for a CPU that another task held. */
typedef struct sl__machine_load {
    double load1;
    bool has_ticks;
    unsigned long long ticks_total, ticks_steal, ticks_idle;
    bool has_schedstat;
    unsigned long long task_run_ns, task_wait_ns;
    /* The sampling thread's CPU time and the monotonic clock, in ns: where
     * schedstat moved by nothing (a run shorter than a scheduler tick on a
     * kernel that accounts at ticks), the time the thread was off its CPU
     * bounds the wait from above. */
    bool has_clocks;
    long long thread_cpu_ns, monotonic_ns;
} sl__machine_load;

void sl__machine_sample(sl__machine_load *out);
/* The share of all CPU time between two samples that the hypervisor gave
 * to other guests; -1 when unknown (no /proc/stat, or no tick passed). */
double sl__machine_steal_fraction(const sl__machine_load *start, const sl__machine_load *end);
/* The share of its runnable time that this process spent waiting for a
 * CPU between two samples: wait / (run + wait), from schedstat; where
 * schedstat did not move, 1 - (the sampling thread's CPU time) / (the wall
 * time between the samples), which counts any time off the CPU (blocking
 * too) as waiting: an upper bound, never a zero that hides a wait. Other work on the machine
 * shows here directly, whatever the load average says (two busy processes
 * on two CPUs hold the load near 2 and take a third of a benchmark's
 * time). Threads that ended between the samples take their figures with
 * them, so for a run whose workers come and go it describes the threads
 * alive at the end. -1 when unknown: no schedstat and no clocks, or no
 * time passed. */
double sl__process_wait_fraction(const sl__machine_load *start, const sl__machine_load *end);

/* Reads a whole file as sl_read_file does, refusing one larger than
 * max_bytes and, with regular_only, anything but a regular file (a FIFO
 * would block, /dev/zero would never end). */
sl_status sl__read_file_limited(const char *path, size_t max_bytes, bool regular_only, char **data, size_t *size,
                                sl_err *err);

/* Whether text[0, size) is valid UTF-8 (RFC 3629: no overlong forms,
 * surrogates or code points past U+10FFFF); when not, *bad_at (if given) is
 * the offset of the first byte that is not. Every reader of text a user
 * hands sluice calls this one function. */
bool sl__utf8_valid(const char *text, size_t size, size_t *bad_at);

/* The process's umask, read from /proc without changing it (umask(2)
 * changes it, racing with threads that create files); 022 if unknown. */
mode_t sl__current_umask(void);

/* Opens path read-only; a missing file is SL_ENOTFOUND, other failures
 * SL_EIO, both naming path. */
sl_status sl__open_readonly(const char *path, int *fd, sl_err *err);

/* pread until nbytes arrive, retrying short reads and EINTR. End of file
 * before nbytes is an error naming path and offset. Safe from any thread. */
sl_status sl__pread_full(int fd, void *buf, size_t nbytes, off_t offset, const char *path, sl_err *err);

#endif

/* How many CPUs this process may use. Containers limit a process in two
 * ways that nproc's count of online CPUs ignores: an affinity mask (cpusets)
 * and a CPU quota (a cgroup's bandwidth limit). A thread count above either
 * only adds contention. */
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/internal.h"
#include "sluice/core/resources.h"

/* ceil(quota / period) from cgroup v2's cpu.max ("max 100000" when none) or
 * v1's cfs files; 0 when no quota is set or none can be read. */
static int cgroup_quota_cpus(void)
{
    long long quota = -1, period = 0;
    FILE *f = fopen("/sys/fs/cgroup/cpu.max", "r");
    if (f) {
        char text[32] = "";
        if (fscanf(f, "%31s %lld", text, &period) == 2 && strcmp(text, "max") != 0)
            sscanf(text, "%lld", &quota);
        fclose(f);
    } else {
        f = fopen("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "r");
        if (f) {
            if (fscanf(f, "%lld", &quota) != 1)
                quota = -1;
            fclose(f);
        }
        f = fopen("/sys/fs/cgroup/cpu/cpu.cfs_period_us", "r");
        if (f) {
            if (fscanf(f, "%lld", &period) != 1)
                period = 0;
            fclose(f);
        }
    }
    if (quota <= 0 || period <= 0)
        return 0;
    return (int)((quota + period - 1) / period);
}

int sl_available_cpus(void)
{
    cpu_set_t set;
    int cpus = 1;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        cpus = CPU_COUNT(&set);
    int quota = cgroup_quota_cpus();
    if (quota > 0 && quota < cpus)
        cpus = quota;
    return cpus > 0 ? cpus : 1;
}

bool sl__cpuinfo_field(const char *info, const char *field, char *buf, size_t size)
{
    size_t n = strlen(field);
    for (const char *line = info; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
        if (strncmp(line, field, n) != 0)
            continue;
        const char *p = line + n;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p != ':')
            continue;
        p++;
        while (*p == ' ' || *p == '\t')
            p++;
        size_t len = strcspn(p, "\n");
        snprintf(buf, size, "%.*s", (int)len, p);
        return true;
    }
    return false;
}

/* "0-3,8" as a count of CPUs or nodes; -1 when unreadable. */
static int count_list(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int count = 0, lo, hi;
    char sep;
    while (fscanf(f, "%d", &lo) == 1) {
        hi = lo;
        if (fscanf(f, "%c", &sep) == 1 && sep == '-' && fscanf(f, "%d", &hi) == 1)
            sep = (char)(fscanf(f, "%c", &sep) == 1 ? sep : '\n');
        count += hi - lo + 1;
    }
    fclose(f);
    return count > 0 ? count : -1;
}

int sl__numa_nodes(void)
{
    return count_list("/sys/devices/system/node/online");
}

void sl__describe_placement(char *buf, size_t size)
{
    cpu_set_t set;
    char cpus[64] = "unknown";
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        /* The allowed CPUs as ranges, "0-1" or "0,2-3". */
        size_t at = 0;
        cpus[0] = '\0';
        for (int c = 0; c < CPU_SETSIZE && at + 12 < sizeof cpus; c++) {
            if (!CPU_ISSET(c, &set) || (c > 0 && CPU_ISSET(c - 1, &set)))
                continue;
            int end = c;
            while (end + 1 < CPU_SETSIZE && CPU_ISSET(end + 1, &set))
                end++;
            at += (size_t)snprintf(cpus + at, sizeof cpus - at, at ? ",%d" : "%d", c);
            if (end > c)
                at += (size_t)snprintf(cpus + at, sizeof cpus - at, "-%d", end);
        }
    }
    /* What the fused pool does (engine/exec/pool.c): its workers are kept
     * off the CPU their creator was on, nothing is pinned further, and
     * memory goes where it is first touched. */
    snprintf(buf, size,
             "CPUs %s; fused workers kept off the caller's CPU, caller unpinned; memory first-touch, no NUMA binding",
             cpus);
}

/* The first index of cpu0's cache folder whose level is 2 and whose type is
 * not an instruction cache ("Unified" or "Data"); its size is "1024K". */
static size_t sysfs_l2_bytes(void)
{
    for (int index = 0; index < 8; index++) {
        char path[96], text[32];
        int level = 0;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", index);
        FILE *f = fopen(path, "r");
        if (!f)
            return 0;
        bool read = fscanf(f, "%d", &level) == 1;
        fclose(f);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", index);
        f = fopen(path, "r");
        read = read && f && fscanf(f, "%31s", text) == 1;
        if (f)
            fclose(f);
        if (!read || level != 2 || strcmp(text, "Instruction") == 0)
            continue;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", index);
        f = fopen(path, "r");
        unsigned long long size = 0;
        char unit = 0;
        int fields = f ? fscanf(f, "%llu%c", &size, &unit) : 0;
        if (f)
            fclose(f);
        if (fields < 1)
            return 0;
        return (size_t)size * (unit == 'K' ? 1024 : unit == 'M' ? 1024 * 1024 : 1);
    }
    return 0;
}

size_t sl__l2_cache_bytes(void)
{
#ifdef _SC_LEVEL2_CACHE_SIZE
    long bytes = sysconf(_SC_LEVEL2_CACHE_SIZE);
    if (bytes > 0)
        return (size_t)bytes;
#endif
    return sysfs_l2_bytes();
}

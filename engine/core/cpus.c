/* How many CPUs this process may use. Containers limit a process in two
 * ways that nproc's count of online CPUs ignores: an affinity mask (cpusets)
 * and a CPU quota (a cgroup's bandwidth limit). A thread count above either
 * only adds contention. */
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "core/internal.h"
#include "sluice/pipeline.h"

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

/* How much more memory this process may use: the least of what the machine
 * has available, what its cgroup still allows, and what its address-space
 * limit leaves. A variant that needs more is skipped with the binding limit
 * named; a prefetch queue is bounded by it. */
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "core/internal.h"
#include "sluice/core/resources.h"

int64_t sl__proc_kib_field(const char *path, const char *key)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[256];
    long long kib = -1;
    size_t key_len = strlen(key);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, key, key_len) == 0 && line[key_len] == ':' && sscanf(line + key_len + 1, "%lld", &kib) == 1)
            break;
    fclose(f);
    return kib < 0 ? -1 : (int64_t)kib * 1024;
}

/* One number from a cgroup file, or -1 when absent or "max". */
static int64_t cgroup_number(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    long long value = -1;
    char word[32] = "";
    if (fscanf(f, "%31s", word) == 1 && strcmp(word, "max") != 0)
        sscanf(word, "%lld", &value);
    fclose(f);
    return value;
}

/* What the cgroup still allows: v2's memory.max less memory.current, else
 * v1's limit less usage; -1 when there is no limit. A v1 "no limit" is a
 * huge number, which the minimum below ignores by itself. */
static int64_t cgroup_headroom(void)
{
    int64_t limit = cgroup_number("/sys/fs/cgroup/memory.max");
    int64_t used = cgroup_number("/sys/fs/cgroup/memory.current");
    if (limit < 0) {
        limit = cgroup_number("/sys/fs/cgroup/memory/memory.limit_in_bytes");
        used = cgroup_number("/sys/fs/cgroup/memory/memory.usage_in_bytes");
    }
    if (limit < 0)
        return -1;
    return used >= 0 && used < limit ? limit - used : limit;
}

/* What RLIMIT_AS leaves beyond the address space already mapped (VmSize);
 * -1 when unlimited. */
static int64_t address_space_headroom(void)
{
    struct rlimit limit;
    if (getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY)
        return -1;
    int64_t mapped = sl__proc_kib_field("/proc/self/status", "VmSize");
    int64_t cap = (int64_t)(limit.rlim_cur > (rlim_t)INT64_MAX ? INT64_MAX : limit.rlim_cur);
    return mapped >= 0 && mapped < cap ? cap - mapped : 0;
}

int64_t sl_memory_available(const char **limit_name)
{
    struct {
        const char *name;
        int64_t bytes;
    } limits[] = {
        {"MemAvailable", sl__proc_kib_field("/proc/meminfo", "MemAvailable")},
        {"the cgroup memory limit", cgroup_headroom()},
        {"RLIMIT_AS (ulimit -v)", address_space_headroom()},
    };
    int64_t least = -1;
    const char *name = "unknown";
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        if (limits[i].bytes >= 0 && (least < 0 || limits[i].bytes < least)) {
            least = limits[i].bytes;
            name = limits[i].name;
        }
    }
    if (limit_name)
        *limit_name = name;
    return least;
}

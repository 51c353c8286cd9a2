#include <cjson/cJSON.h>
#include <gnu/libc-version.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "core/internal.h"
#include "sluice/core/fileio.h"
#include "sluice/kernels/kernels.h"
#include "sluice/records/record.h"
#include "sluice_config.h"

/* The "model name" line of /proc/cpuinfo. Some architectures (many arm64
 * kernels) have none; "unknown" then says so rather than guess. */
static void cpu_model(sl_environment *env)
{
    sl__copy_string(env->cpu_model, sizeof env->cpu_model, "unknown");
    char *info = NULL;
    size_t len = 0;
    if (sl_read_file("/proc/cpuinfo", &info, &len, NULL) != SL_OK)
        return;
    sl__cpuinfo_field(info, "model name", env->cpu_model, sizeof env->cpu_model);
    free(info);
}

void sl_environment_collect(sl_environment *env)
{
    memset(env, 0, sizeof *env);
    cpu_model(env);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    env->cpu_cores = cores > 0 ? (int)cores : 0;
    sl__copy_string(env->compiler, sizeof env->compiler, SLUICE_COMPILER);
    sl__copy_string(env->compile_flags, sizeof env->compile_flags, SLUICE_COMPILE_FLAGS);

    unsigned xxh = XXH_versionNumber();
    /* The BLAS and its thread count belong to the fingerprint: MM-2's
     * products, their speed and their last bits depend on both. */
    char blas[128];
    sl_blas_describe(blas, sizeof blas);
    snprintf(env->library_versions, sizeof env->library_versions,
             "sluice %s; cJSON %s; xxHash %u.%u.%u; libc %s; BLAS %s", SLUICE_VERSION, cJSON_Version(), xxh / 10000,
             xxh / 100 % 100, xxh % 100, gnu_get_libc_version(), blas);
    sl__copy_string(env->git_commit, sizeof env->git_commit, sl__build_git_commit());

    struct utsname u;
    if (uname(&u) == 0)
        snprintf(env->kernel, sizeof env->kernel, "%.16s %.64s %.16s", u.sysname, u.release, u.machine);
    else
        sl__copy_string(env->kernel, sizeof env->kernel, "unknown");

    /* This moment's load, until a runner measures the run's own. */
    sl__machine_load load;
    sl__machine_sample(&load);
    env->load_start = load.load1;
    env->load_end = load.load1;
    env->steal_fraction = -1.0;
    env->cpu_wait_fraction = -1.0;

    /* The pages the machine offers and whether sluice asked for them; the
     * bytes it gave are measured when a run ends (bench/session.c). */
    sl__huge_pages_describe(env->thp_enabled, env->thp_defrag, sizeof env->thp_enabled);
    sl__copy_string(env->huge_pages, sizeof env->huge_pages, sl__huge_pages_on() ? "advised" : "off");
    env->anon_huge_bytes = (double)sl__anon_huge_bytes();
    env->numa_nodes = (double)sl__numa_nodes();
    sl__describe_placement(env->placement, sizeof env->placement);

    time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm))
        strftime(env->time_utc, sizeof env->time_utc, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

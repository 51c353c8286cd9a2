#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <xxhash.h>

#include "dist_support.h"
#include "sluice/sluice.h"

extern char **environ;

#ifndef SLUICE_HAVE_MPI
#define SLUICE_HAVE_MPI 0
#endif

void dist_require_mpi(void)
{
#if !SLUICE_HAVE_MPI
    cr_skip_test("this build has no MPI: meson found none (install libopenmpi-dev and openmpi-bin, as "
                 "ci/install-deps.sh does, and reconfigure), so no test can launch ranks");
#else
    if (access(SLUICE_MPIRUN, X_OK) != 0)
        cr_skip_test("MPI was found at configure time but %s cannot be run now", SLUICE_MPIRUN);
#endif
}

const char *dist_driver(void)
{
#if SLUICE_HAVE_MPI
    return SLUICE_DIST_DRIVER;
#else
    return NULL;
#endif
}

const char *dist_sluice(void)
{
#if SLUICE_HAVE_MPI
    return SLUICE_EXE;
#else
    return NULL;
#endif
}

/* The variable `name` of the test's environment with `more` appended
 * (':'-separated), as a "NAME=value" string in buf. */
#if SLUICE_HAVE_MPI
static char *extend(char *buf, size_t size, const char *name, const char *more)
{
    const char *value = getenv(name);
    snprintf(buf, size, "%s=%s%s%s", name, value ? value : "", value && *value ? ":" : "", more);
    return buf;
}

/* The test's environment plus what the job needs: Open MPI's consent to
 * run as root (containers, CI), and, for sanitizer builds, whole stacks and
 * named plugin frames so that lsan-mpi.supp silences Open MPI's own
 * allocations and nothing of sluice's. The sanitizer settings do nothing
 * to a build without sanitizers. */
static char **job_environment(const char *const *more)
{
    static char lsan[1024], asan[1024];
    static const char *const replaced[] = {"OMPI_ALLOW_RUN_AS_ROOT", "OMPI_MCA_mca_base_component_disable_dlclose",
                                           "LSAN_OPTIONS", "ASAN_OPTIONS"};
    const char *extra[] = {
        "OMPI_ALLOW_RUN_AS_ROOT=1",
        "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1",
        "OMPI_MCA_mca_base_component_disable_dlclose=1",
        extend(lsan, sizeof lsan, "LSAN_OPTIONS", "suppressions=" SLUICE_LSAN_MPI_SUPP ":print_suppressions=0"),
        extend(asan, sizeof asan, "ASAN_OPTIONS", "fast_unwind_on_malloc=0"),
    };
    size_t nextra = sizeof extra / sizeof extra[0], nmore = 0;
    while (more && more[nmore])
        nmore++;
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + nextra + nmore + 1, sizeof *env);
    cr_assert_not_null(env);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        bool keep = true;
        for (size_t r = 0; r < sizeof replaced / sizeof replaced[0]; r++)
            keep = keep && strncmp(environ[i], replaced[r], strlen(replaced[r])) != 0;
        if (keep)
            env[k++] = environ[i];
    }
    for (size_t e = 0; e < nextra; e++)
        env[k++] = (char *)extra[e];
    for (size_t e = 0; e < nmore; e++)
        env[k++] = (char *)more[e];
    env[k] = NULL;
    return env;
}

static char *slurp(const char *path)
{
    char *text = NULL;
    size_t size = 0;
    sl_err err = {0};
    if (sl_read_file(path, &text, &size, &err) != SL_OK)
        return strdup("(no output)");
    return text;
}
#endif

#if SLUICE_HAVE_MPI
static double seconds_since(const struct timespec *start)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - start->tv_sec) + (double)(now.tv_nsec - start->tv_nsec) * 1e-9;
}

/* The process of rank `rank` among mpirun's children (Open MPI starts the
 * ranks of one host as its children and tells each its rank in the
 * environment), or -1. */
static pid_t find_rank(pid_t launcher, int rank)
{
    char wanted[48];
    snprintf(wanted, sizeof wanted, "OMPI_COMM_WORLD_RANK=%d", rank);
    DIR *proc = opendir("/proc");
    pid_t found = -1;
    struct dirent *entry;
    while (proc && found < 0 && (entry = readdir(proc)) != NULL) {
        pid_t pid = (pid_t)atoi(entry->d_name);
        char path[64], stat_line[512];
        if (pid <= 0)
            continue;
        snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        bool child = false;
        if (fgets(stat_line, sizeof stat_line, f)) {
            /* The parent's pid is the second field after the command's
             * closing parenthesis. */
            const char *close = strrchr(stat_line, ')');
            int ppid = 0;
            child = close && sscanf(close + 1, " %*c %d", &ppid) == 1 && ppid == launcher;
        }
        fclose(f);
        if (!child)
            continue;
        snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
        char *env = NULL;
        size_t size = 0;
        sl_err err = {0};
        if (sl_read_file(path, &env, &size, &err) != SL_OK)
            continue;
        for (size_t at = 0; at < size; at += strlen(env + at) + 1)
            if (strcmp(env + at, wanted) == 0)
                found = pid;
        free(env);
    }
    if (proc)
        closedir(proc);
    return found;
}
#endif

int dist_mpirun_job(const dist_job *job, char **log, double *after_stop_s)
{
    *log = NULL;
    if (after_stop_s)
        *after_stop_s = -1.0;
#if !SLUICE_HAVE_MPI
    (void)job;
    *log = strdup("built without MPI");
    return -1;
#else
    char np[16];
    snprintf(np, sizeof np, "%d", job->ranks);
    const char *argv[64] = {SLUICE_MPIRUN, "--oversubscribe", "-np", np};
    int argc = 4;
    for (int i = 0; job->args[i] && argc < 63; i++)
        argv[argc++] = job->args[i];
    argv[argc] = NULL;

    char log_path[] = "/tmp/sluice-mpirun-log-XXXXXX";
    int fd = mkstemp(log_path);
    cr_assert_geq(fd, 0, "cannot create a log file: %s", strerror(errno));
    close(fd);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_path, O_WRONLY | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    char **env = job_environment(job->env);
    pid_t pid;
    int rc = posix_spawn(&pid, SLUICE_MPIRUN, &actions, NULL, (char *const *)argv, env);
    posix_spawn_file_actions_destroy(&actions);
    free(env);
    if (rc != 0) {
        unlink(log_path);
        *log = strdup(strerror(rc));
        return -1;
    }
    int status = 0;
    pid_t stopped = -1;
    struct timespec start, stop_time = {0}, pause = {0, 20 * 1000 * 1000};
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        pid_t done = waitpid(pid, &status, WNOHANG);
        if (done == pid)
            break;
        /* Once the job's rank 0 has said it joined (MPI_Init is behind
         * every rank then), the rank to stop is stopped, where a frozen
         * node or a rank stuck in I/O would stop. */
        if (job->stop_rank >= 0 && stopped < 0) {
            bool joined;
            if (job->stop_when_file) {
                joined = access(job->stop_when_file, F_OK) == 0;
            } else {
                char *text = slurp(log_path);
                joined = strstr(text, job->joined_marker) != NULL;
                free(text);
            }
            pid_t victim = joined ? find_rank(pid, job->stop_rank) : -1;
            if (victim > 0 && kill(victim, job->stop_signal ? job->stop_signal : SIGSTOP) == 0) {
                stopped = victim;
                clock_gettime(CLOCK_MONOTONIC, &stop_time);
            }
        }
        if (seconds_since(&start) > job->timeout_s) {
            /* mpirun forwards SIGTERM to its ranks and reaps them; a
             * stopped rank needs SIGKILL. */
            kill(pid, SIGTERM);
            if (stopped > 0)
                kill(stopped, SIGKILL);
            waitpid(pid, &status, 0);
            *log = slurp(log_path);
            unlink(log_path);
            return -1;
        }
        nanosleep(&pause, NULL);
    }
    if (stopped > 0) {
        if (after_stop_s)
            *after_stop_s = seconds_since(&stop_time);
        kill(stopped, SIGKILL);
    }
    *log = slurp(log_path);
    unlink(log_path);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
#endif
}

int dist_mpirun(int ranks, const char *const *args, int timeout_s, char **log)
{
    dist_job job = {.ranks = ranks, .args = args, .timeout_s = timeout_s, .stop_rank = -1};
    return dist_mpirun_job(&job, log, NULL);
}

void dist_tempdir(char *buf, size_t size)
{
    snprintf(buf, size, "/tmp/sluice-dist-test-XXXXXX");
    cr_assert_not_null(mkdtemp(buf), "cannot create a folder: %s", strerror(errno));
}

cJSON *dist_driver_view(int ranks, const char *scenario, const char *variant)
{
    char dir[64], out[128];
    dist_tempdir(dir, sizeof dir);
    snprintf(out, sizeof out, "%s/view.json", dir);
    const char *args[] = {dist_driver(), scenario, variant, out, NULL};
    char *log = NULL;
    int status = dist_mpirun(ranks, args, 240, &log);
    cr_assert_eq(status, 0, "mpirun -np %d dist_driver %s %s exited with %d:\n%s", ranks, scenario, variant, status,
                 log);
    free(log);
    char *text = NULL;
    size_t size = 0;
    sl_err err = {0};
    cr_assert_eq(sl_read_file(out, &text, &size, &err), SL_OK, "%s", err.msg);
    unlink(out);
    rmdir(dir);
    cJSON *view = cJSON_Parse(text);
    free(text);
    cr_assert_not_null(view, "the driver's view does not parse");
    return view;
}

void dist_rank_build(const char *scenario, const char *variant, int rank, int world, int ndims, const int *dims,
                     dist_rank *out)
{
    sl_err err = {0};
    cr_assert_eq(sl_comm_local(rank, world, &out->world, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(sl_comm_mesh(out->world, ndims, dims, &out->mesh, &err), SL_OK, "%s", err.msg);
    sl_build_options options;
    sl_build_options_init(&options, SL_PROFILE_CI, 42);
    options.comm = out->mesh;
    out->instance = harness_build_with(scenario, variant, &options);
}

void dist_rank_free(dist_rank *rank)
{
    sl_scenario_instance_free(rank->instance);
    sl_comm_free(rank->mesh);
    sl_comm_free(rank->world);
}

uint64_t dist_row_digest(const run_output *out, int64_t row)
{
    uint64_t h = 0;
    for (int f = 0; f < out->nfields; f++)
        h = XXH3_64bits_withSeed(harness_row(out, f, row), out->row_bytes[f], h);
    return h;
}

static int json_int(const cJSON *object, const char *key)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(object, key);
    cr_assert(cJSON_IsNumber(item), "the view has no number '%s'", key);
    return item->valueint;
}

static uint64_t json_hex(const cJSON *item)
{
    cr_assert(cJSON_IsString(item), "a digest in the view is not a string");
    return strtoull(item->valuestring, NULL, 16);
}

void dist_expect_view(const cJSON *view, int world, int ndims, const int *dims, const run_output *whole)
{
    cr_assert_eq(json_int(view, "world"), world);
    const cJSON *ranks = cJSON_GetObjectItemCaseSensitive(view, "ranks");
    cr_assert_eq(cJSON_GetArraySize(ranks), world);
    int64_t n = whole->rows;
    int *owner = malloc((size_t)n * sizeof *owner);
    double *pids = calloc((size_t)world, sizeof *pids);
    cr_assert(owner && pids);
    for (int64_t e = 0; e < n; e++)
        owner[e] = -1;
    /* Each element's row digest in the one-process run. */
    uint64_t *digest_of = malloc((size_t)n * sizeof *digest_of);
    cr_assert_not_null(digest_of);
    for (int64_t r = 0; r < whole->rows; r++)
        digest_of[whole->ids[r]] = dist_row_digest(whole, r);
    int data_ranks = dims[0];
    const cJSON *first_of[64] = {0};
    cr_assert_leq(data_ranks, 64);
    char places[512] = "";
    for (int r = 0; r < world; r++) {
        const cJSON *rank = cJSON_GetArrayItem(ranks, r);
        cr_assert_eq(json_int(rank, "rank"), r);
        cr_assert_str_eq(cJSON_GetObjectItemCaseSensitive(rank, "outcome")->valuestring, "ok");
        /* Row-major coordinates, the last axis fastest. */
        const cJSON *got_dims = cJSON_GetObjectItemCaseSensitive(rank, "dims");
        const cJSON *coords = cJSON_GetObjectItemCaseSensitive(rank, "coords");
        cr_assert_eq(cJSON_GetArraySize(got_dims), ndims);
        int rest = r, coord[8] = {0};
        for (int d = ndims - 1; d >= 0; d--) {
            coord[d] = rest % dims[d];
            rest /= dims[d];
        }
        for (int d = 0; d < ndims; d++) {
            cr_assert_eq(cJSON_GetArrayItem(got_dims, d)->valueint, dims[d]);
            cr_assert_eq(cJSON_GetArrayItem(coords, d)->valueint, coord[d], "rank %d axis %d: coordinate %d, not %d", r,
                         d, cJSON_GetArrayItem(coords, d)->valueint, coord[d]);
        }
        /* Several ranks are several processes, none of them this one. */
        pids[r] = cJSON_GetObjectItemCaseSensitive(rank, "pid")->valuedouble;
        cr_assert_neq((pid_t)pids[r], getpid(), "rank %d ran inside the test process", r);
        for (int s = 0; s < r; s++)
            cr_assert(pids[s] != pids[r] ||
                          strcmp(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(ranks, s), "host")->valuestring,
                                 cJSON_GetObjectItemCaseSensitive(rank, "host")->valuestring) != 0,
                      "ranks %d and %d are the same process (pid %.0f)", s, r, pids[r]);
        size_t used = strlen(places);
        snprintf(places + used, sizeof places - used, " %d:pid %.0f", r, pids[r]);

        const cJSON *ids = cJSON_GetObjectItemCaseSensitive(rank, "ids");
        const cJSON *digests = cJSON_GetObjectItemCaseSensitive(rank, "row_digests");
        int d = coord[0];
        int64_t rows = cJSON_GetArraySize(ids);
        /* ceil((n - d) / D) positions: d, d + D, ... below n. */
        cr_assert_eq(rows, (n - d + data_ranks - 1) / data_ranks, "rank %d holds %lld rows", r, (long long)rows);
        cr_assert_eq(cJSON_GetArraySize(digests), rows);
        for (int64_t i = 0; i < rows; i++) {
            int64_t id = (int64_t)cJSON_GetArrayItem(ids, (int)i)->valuedouble;
            int64_t position = d + i * data_ranks;
            cr_assert_eq(id, whole->ids[position],
                         "rank %d (data %d of %d) holds element %lld at %lld; the one-process epoch has %lld at global "
                         "position %lld",
                         r, d, data_ranks, (long long)id, (long long)i, (long long)whole->ids[position],
                         (long long)position);
            cr_assert_eq(json_hex(cJSON_GetArrayItem(digests, (int)i)), digest_of[id],
                         "rank %d's output for element %lld differs from the one-process run's", r, (long long)id);
            if (first_of[d] == NULL) {
                cr_assert_eq(owner[id], -1, "element %lld is in two data slices", (long long)id);
                owner[id] = d;
            }
        }
        if (first_of[d] == NULL) {
            first_of[d] = rank;
        } else {
            /* A replica: what the first rank of its data coordinate holds. */
            const cJSON *a = cJSON_GetObjectItemCaseSensitive(first_of[d], "output_digest");
            const cJSON *b = cJSON_GetObjectItemCaseSensitive(rank, "output_digest");
            cr_assert_str_eq(a->valuestring, b->valuestring, "replica rank %d measured other batches", r);
        }
    }
    for (int64_t e = 0; e < n; e++)
        cr_assert_geq(owner[e], 0, "element %lld is in no data slice", (long long)e);
    cr_log_info("%d ranks on a mesh of %d axes were processes%s (the test is pid %d)", world, ndims, places,
                (int)getpid());
    free(owner);
    free(pids);
    free(digest_of);
}

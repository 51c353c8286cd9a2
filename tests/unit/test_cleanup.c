/* Temporaries: a signal removes the registered ones, and a later run sweeps
 * those of processes that are gone, never a live process's. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "cleanup_registry.h"
#include "sluice/core/cleanup.h"
#include "support.h"

static char tmpdir[128];

static void make_tmpdir(void)
{
    test_tmpdir_create(tmpdir, sizeof tmpdir, "cleanup");
}

static void remove_tmpdir(void)
{
    test_tmpdir_remove(tmpdir);
}

TestSuite(cleanup, .init = make_tmpdir, .fini = remove_tmpdir);

static bool exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

static void touch(const char *path)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "cannot create %s", path);
    fputs("x", f);
    fclose(f);
}

/* The pid of a process that has exited and been reaped. */
static pid_t dead_pid(void)
{
    pid_t child = fork();
    cr_assert_geq(child, 0);
    if (child == 0)
        _exit(0);
    cr_assert_eq(waitpid(child, NULL, 0), child);
    cr_assert(kill(child, 0) != 0 && errno == ESRCH, "pid %d was reused at once", (int)child);
    return child;
}

Test(cleanup, sweep_removes_a_dead_process_temporaries_and_nothing_else)
{
    pid_t dead = dead_pid();
    char stale_dir[256], stale_file[300], stale_tmp[256], live_dir[256], own_dir[256], unrelated[256],
        unrelated_dir[256];
    snprintf(stale_dir, sizeof stale_dir, "%s/sluice-io1-%d-Ab3dEf", tmpdir, (int)dead);
    snprintf(stale_file, sizeof stale_file, "%s/image.npy", stale_dir);
    snprintf(stale_tmp, sizeof stale_tmp, "%s/CV-1__32x32__fused.json.tmp.%d.q1W2e3", tmpdir, (int)dead);
    /* pid 1 always exists, and this process's own are in use. */
    snprintf(live_dir, sizeof live_dir, "%s/sluice-io1-1-Ab3dEf", tmpdir);
    snprintf(own_dir, sizeof own_dir, "%s/sluice-report-%d-Zz9yYy", tmpdir, (int)getpid());
    snprintf(unrelated, sizeof unrelated, "%s/notes.json.tmp", tmpdir);
    snprintf(unrelated_dir, sizeof unrelated_dir, "%s/sluice-keep", tmpdir);
    cr_assert_eq(mkdir(stale_dir, 0700), 0);
    touch(stale_file);
    touch(stale_tmp);
    cr_assert_eq(mkdir(live_dir, 0700), 0);
    cr_assert_eq(mkdir(own_dir, 0700), 0);
    touch(unrelated);
    cr_assert_eq(mkdir(unrelated_dir, 0700), 0);

    cr_assert_eq(sl_sweep_stale_temporaries(tmpdir), 2);
    cr_assert_not(exists(stale_dir), "the dead process's work directory is left");
    cr_assert_not(exists(stale_tmp), "the dead process's temporary record is left");
    cr_assert(exists(live_dir) && exists(own_dir), "a live process's work directory was removed");
    cr_assert(exists(unrelated) && exists(unrelated_dir), "something not named as sluice's was removed");
    cr_assert_eq(sl_sweep_stale_temporaries(tmpdir), 0, "a second sweep found more");
    rmdir(live_dir);
    rmdir(own_dir);
}

Test(cleanup, a_missing_directory_sweeps_nothing)
{
    char missing[256];
    snprintf(missing, sizeof missing, "%s/none", tmpdir);
    cr_assert_eq(sl_sweep_stale_temporaries(missing), 0);
}

Test(cleanup, work_directories_are_named_with_the_pid_and_removed)
{
    char dir[512];
    sl_err err = {0};
    cr_assert_eq(sl_workdir_create(tmpdir, "io1", dir, sizeof dir, &err), SL_OK, "%s", err.msg);
    char prefix[256];
    snprintf(prefix, sizeof prefix, "%s/sluice-io1-%d-", tmpdir, (int)getpid());
    cr_assert(strncmp(dir, prefix, strlen(prefix)) == 0 && strlen(dir) == strlen(prefix) + 6, "%s", dir);
    char file[600];
    snprintf(file, sizeof file, "%s/image.npy", dir);
    touch(file);
    sl_workdir_remove(dir);
    cr_assert_not(exists(dir));
}

Test(cleanup, a_too_long_base_is_refused)
{
    char dir[64];
    sl_err err = {0};
    cr_assert_eq(sl_workdir_create(tmpdir, "a-name-long-enough-to-overflow-sixty-four-bytes", dir, sizeof dir, &err),
                 SL_EINVAL);
    cr_assert(strstr(err.msg, tmpdir), "%s", err.msg);
}

/* A child registers a work directory and a temporary file, then is sent
 * the signal: both must be gone, and the child must have died of that
 * signal (the handler re-raises it rather than exiting normally). */
static void check_signal_cleans(int signo)
{
    int ready[2];
    cr_assert_eq(pipe(ready), 0);
    char tmpfile[256];
    snprintf(tmpfile, sizeof tmpfile, "%s/record.json.tmp.0.abcdef", tmpdir);
    pid_t child = fork();
    cr_assert_geq(child, 0);
    if (child == 0) {
        /* A test run from nohup or a background job starts with SIGHUP or
         * SIGINT ignored, which sl_cleanup_on_signals rightly keeps; the
         * child starts from the default action so that the handler is the
         * one under test. */
        signal(signo, SIG_DFL);
        sl_cleanup_on_signals();
        char dir[512], file[600];
        sl_err err = {0};
        if (sl_workdir_create(tmpdir, "io1", dir, sizeof dir, &err) != SL_OK)
            _exit(3);
        snprintf(file, sizeof file, "%s/image.npy", dir);
        touch(file);
        touch(tmpfile);
        sl__cleanup_register(tmpfile, false);
        if (write(ready[1], dir, strlen(dir) + 1) < 0)
            _exit(4);
        for (;;)
            pause();
    }
    close(ready[1]);
    char dir[512] = "";
    cr_assert_gt(read(ready[0], dir, sizeof dir), 0);
    close(ready[0]);
    cr_assert(exists(dir) && exists(tmpfile));
    kill(child, signo);
    int status = 0;
    cr_assert_eq(waitpid(child, &status, 0), child);
    cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == signo, "the child did not die of signal %d (status %#x)",
              signo, status);
    cr_assert_not(exists(dir), "signal %d left the work directory %s", signo, dir);
    cr_assert_not(exists(tmpfile), "signal %d left the temporary file", signo);
}

Test(cleanup, sigint_removes_registered_temporaries)
{
    check_signal_cleans(SIGINT);
}
Test(cleanup, sigterm_removes_registered_temporaries)
{
    check_signal_cleans(SIGTERM);
}
Test(cleanup, sighup_removes_registered_temporaries)
{
    check_signal_cleans(SIGHUP);
}

/* Hostile loaders (issue 33): each attack of the review as a test peer of
 * the standard library alone (peers/testing/), and what sluice must do
 * about it. None of them can end a bench or outlive it: a peer that
 * truncates or grows the shared ring (D28), a daemon a user's loader starts
 * when it is imported, in the `--describe` probe and in the session (D20),
 * a loader whose sluice is SIGKILLed. Bad limits in the environment are
 * refused naming the variable (D25); `peer-check` of a missing file says so
 * as the bench does, and a long PYTHONPATH reaches the loader whole (D27). */
#include <criterion/criterion.h>

#include "peer_support.h"
#include "support.h"
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "peer.h"
#include "sluice/adapters/peer_check.h"
#include "sluice/bench/bench.h"
#include "sluice/bench/scenario.h"
#include "sluice/core/timing.h"
#include "sluice/records/export.h"
#include "sluice/records/peer_rank.h"

/* Whether process pid is gone (or a zombie: dead, not yet reaped). */
static bool gone(int pid)
{
    char path[64], text[256] = "";
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return true;
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    const char *paren = strrchr(text, ')');
    return paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X');
}

/* Waits up to 20 s for pid to go: a bound on waiting, not a speed. */
static bool goes_within_a_while(int pid)
{
    for (int i = 0; i < 2000 && !gone(pid); i++)
        usleep(10000);
    return gone(pid);
}

static int read_pid(const char *path)
{
    for (int i = 0; i < 1000 && access(path, R_OK) != 0; i++)
        usleep(10000);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s was written", path);
    int pid = 0;
    cr_assert_eq(fscanf(f, "%d", &pid), 1);
    fclose(f);
    cr_assert_gt(pid, 1);
    return pid;
}

TestSuite(peers_hostile, .init = peer_setup, .fini = peer_teardown, .timeout = 300);

/* --- D28: the ring ----------------------------------------------------------- */

Test(peers_hostile, the_ring_is_sealed_at_its_size_before_a_peer_gets_it)
{
    sl__peer_ring ring;
    sl_err err = {0};
    cr_assert_eq(sl__peer_ring_create(&ring, sl_pipeline_output_schema(peer_instance->pipeline), 8, 2, &err), SL_OK,
                 "%s", err.msg);
    int seals = fcntl(ring.fd, F_GET_SEALS);
    cr_assert_geq(seals, 0, "F_GET_SEALS: %s", strerror(errno));
    cr_expect(seals & F_SEAL_SHRINK, "sealed against shrinking");
    cr_expect(seals & F_SEAL_GROW, "against growing");
    cr_expect(seals & F_SEAL_SEAL, "and against removing the seals");
    errno = 0;
    cr_expect_eq(ftruncate(ring.fd, 0), -1, "a truncation of the ring is refused");
    cr_expect_eq(errno, EPERM);
    sl__peer_ring_destroy(&ring);
}

/* The review's D28: a peer that truncates the ring after writing each
 * batch used to end the bench with SIGBUS (exit 135, no record). */
Test(peers_hostile, a_peer_that_truncates_the_ring_cannot_end_the_bench)
{
    sl__peer peer = test_peer("peer:test-truncate-ring", "testing/truncate_ring.py", 0);
    sl_record record;
    peer_run(&peer.adapter, &record);
    /* The truncation was refused, so the batches it wrote are whole. */
    cr_assert_eq(record.outcome, SL_RECORD_OK, "%s", record.reason);
    cr_assert_str_eq(record.equivalence, "bitwise");
    sl_record_release(&record);
    peer.args = "--grow";
    peer_run(&peer.adapter, &record);
    cr_assert_eq(record.outcome, SL_RECORD_OK, "growing the ring: %s", record.reason);
    sl_record_release(&record);
    peer_run_carries_on();
}

/* --- D20 and dying with sluice ------------------------------------------------ */

/* The review's D20: a user's loader that starts a daemon when imported.
 * sluice imports it twice, to ask it what it implements and to run it; the
 * daemon of each must be gone when that ends. */
Test(peers_hostile, a_daemon_a_loader_starts_at_import_is_gone_after_describe_and_after_the_run)
{
    char dir[512], pidfile[600], second[640], name[1200];
    test_tmpdir_create(dir, sizeof dir, "daemon");
    snprintf(pidfile, sizeof pidfile, "%s/daemon.pid", dir);
    snprintf(second, sizeof second, "%s.2", pidfile);
    cr_assert_eq(setenv("SLUICE_TEST_PIDFILE", pidfile, 1), 0);
    snprintf(name, sizeof name, "peer:%s", peer_script(1, "testing/import_daemon.py"));
    sl_err err = {0};
    const sl_adapter *adapter = sl__user_peer(name, &err);
    cr_assert_not_null(adapter, "%s", err.msg);
    int pid = read_pid(pidfile);
    cr_assert(gone(pid), "the daemon of the --describe probe (pid %d) outlived it", pid);
    sl_record record;
    peer_run(adapter, &record);
    unsetenv("SLUICE_TEST_PIDFILE");
    cr_assert_eq(record.outcome, SL_RECORD_OK, "%s", record.reason);
    int pid2 = read_pid(second);
    cr_assert(gone(pid2), "the daemon of the session (pid %d) outlived it", pid2);
    sl_record_release(&record);
    test_tmpdir_remove(dir);
}

/* A loader whose sluice is SIGKILLed dies with it (PR_SET_PDEATHSIG, set by
 * sluice before the loader runs, so a loader that does not ask for it, as
 * peers/sluice_peer.py does, still gets it). hang.py says hello and sleeps
 * for an hour. */
Test(peers_hostile, a_loader_dies_with_sluice_even_when_sluice_is_sigkilled)
{
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    const char *hang = peer_script(2, "testing/hang.py");
    pid_t sluice = fork();
    cr_assert_geq(sluice, 0);
    if (sluice == 0) {
        close(fds[0]);
        const char *argv[] = {sl__peer_python(), hang, NULL};
        sl__peer_child c;
        sl_err err = {0};
        if (sl__peer_spawn(&c, argv, true, -1, &err) != SL_OK)
            _exit(3);
        int pid = (int)c.pid;
        if (write(fds[1], &pid, sizeof pid) != (ssize_t)sizeof pid)
            _exit(4);
        /* Wait for the hello, so the loader is surely running. */
        sl__peer_read_line(&c, sl_now_ns() + 60000000000LL);
        if (write(fds[1], &pid, sizeof pid) != (ssize_t)sizeof pid)
            _exit(4);
        pause();
        _exit(0);
    }
    close(fds[1]);
    int pid = 0, again = 0;
    cr_assert_eq(read(fds[0], &pid, sizeof pid), (ssize_t)sizeof pid, "the stand-in for sluice started the loader");
    cr_assert_eq(read(fds[0], &again, sizeof again), (ssize_t)sizeof again, "and the loader said hello");
    close(fds[0]);
    cr_assert_not(gone(pid), "the loader runs");
    kill(sluice, SIGKILL);
    waitpid(sluice, NULL, 0);
    bool died = goes_within_a_while(pid);
    if (!died)
        kill(pid, SIGKILL);
    cr_assert(died, "the loader (pid %d) outlived its SIGKILLed sluice", pid);
}

/* The samples taken between batches find the loader's tree by walking
 * down from sluice's children (sl__peer_tree_cpu_walk), the full scan of
 * /proc by process group and ancestry. On a tree of a loader with three
 * more threads, a child in its group and a setsid'd grandchild whose parent
 * exited (it came back to this process, the subreaper), both find the same
 * threads: the per-batch bound holds every thread the session bounds do. */
Test(peers_hostile, the_walk_between_batches_finds_the_threads_the_full_scan_finds)
{
    static const char code[] = "import os, threading, time\n"
                               "for _ in range(3):\n"
                               "    threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n"
                               "if os.fork() == 0:\n"
                               "    time.sleep(60)\n"
                               "    os._exit(0)\n"
                               "if os.fork() == 0:\n"
                               "    os.setsid()\n"
                               "    if os.fork() == 0:\n"
                               "        time.sleep(60)\n"
                               "    os._exit(0)\n"
                               "time.sleep(0.5)\n"
                               "print('ready', flush=True)\n"
                               "time.sleep(60)\n";
    const char *argv[] = {sl__peer_python(), "-c", code, NULL};
    sl__peer_reaper reaper;
    sl__peer_reaper_begin(&reaper);
    sl__peer_child c;
    sl_err err = {0};
    cr_assert_eq(sl__peer_spawn(&c, argv, true, -1, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(sl__peer_read_line(&c, sl_now_ns() + 60000000000LL), 1, "the tree is up");
    sl__peer_cpu_sample *scan = malloc(2 * sizeof *scan), *walk = scan + 1;
    cr_assert_not_null(scan);
    sl__peer_tree_cpu(c.pid, &reaper, scan);
    sl__peer_tree_cpu_walk(c.pid, &reaper, walk);
    bool killed = false;
    char how[64];
    sl__peer_finish(&c, 0, &killed, how, sizeof how);
    sl__peer_reaper_end(&reaper);
    /* The loader's 4 threads, its child and the grandchild, at least. */
    cr_expect_geq(scan->nthreads, 6, "the full scan found %d threads", scan->nthreads);
    cr_expect_eq(walk->nthreads, scan->nthreads, "the walk found %d threads, the scan %d", walk->nthreads,
                 scan->nthreads);
    for (int i = 0; i < scan->nthreads; i++) {
        bool found = false;
        for (int j = 0; j < walk->nthreads && !found; j++)
            found = walk->tid[j] == scan->tid[i];
        cr_expect(found, "thread %d, which the scan found, is not in the walk", (int)scan->tid[i]);
    }
    free(scan);
}

/* --- D25: limits from the environment ---------------------------------------- */

Test(peers_hostile, a_peer_limit_that_is_not_a_number_of_seconds_is_refused_naming_the_variable)
{
    const char *bad[] = {"abc", "-1", "nan", "1e400", "5s", "0", "inf", " 5"};
    sl__peer peer = test_peer("peer:test-plain", "testing/plain.py", 3);
    peer.batch_s = 0; /* the environment's, then */
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cr_assert_eq(setenv("SLUICE_PEER_BATCH_S", bad[i], 1), 0);
        sl_record record;
        peer_run(&peer.adapter, &record);
        cr_expect_eq(record.outcome, SL_RECORD_FAILED, "SLUICE_PEER_BATCH_S=%s was taken", bad[i]);
        cr_expect(strstr(record.reason, "SLUICE_PEER_BATCH_S") != NULL, "%s", record.reason);
        char quoted[32];
        snprintf(quoted, sizeof quoted, "'%s'", bad[i]);
        cr_expect(strstr(record.reason, quoted) != NULL, "the value is named: %s", record.reason);
        sl_record_release(&record);
    }
    /* A good one is taken. */
    cr_assert_eq(setenv("SLUICE_PEER_BATCH_S", "30", 1), 0);
    sl_record record;
    peer_run(&peer.adapter, &record);
    unsetenv("SLUICE_PEER_BATCH_S");
    cr_expect_eq(record.outcome, SL_RECORD_OK, "%s", record.reason);
    sl_record_release(&record);
}

/* --- D27 ---------------------------------------------------------------------- */

Test(peers_hostile, peer_check_of_a_missing_file_says_so_as_the_bench_does)
{
    sl_peer_check_result result;
    sl_err err = {0};
    cr_assert_neq(sl_peer_check(peer_instance->pipeline, "/nonexistent/sluice/loader.py", 3, 0.0, &result, &err),
                  SL_OK);
    cr_expect(strstr(err.msg, "no such loader file") != NULL, "%s", err.msg);
    cr_expect(strstr(err.msg, "crashed") == NULL, "%s", err.msg);
}

/* A module in the last folder of a PYTHONPATH of 3000 bytes is found: the
 * peer's PYTHONPATH used to be cut at 1,200 bytes without a word. One past
 * the limit is refused, naming PYTHONPATH. */
Test(peers_hostile, a_long_pythonpath_reaches_the_loader_whole_or_is_refused)
{
    char dir[512], module[600], loader[640], testing[1024], text[2048];
    test_tmpdir_create(dir, sizeof dir, "pythonpath");
    snprintf(module, sizeof module, "%s/far_module.py", dir);
    test_write_text(module, "FRAMEWORK = 'found at the end of a long PYTHONPATH'\n");
    snprintf(loader, sizeof loader, "%s/far_loader.py", dir);
    snprintf(text, sizeof text,
             "import sys\n"
             "sys.path.insert(0, '%s')\n"
             "import far_module\n"
             "import plain\n"
             "import sluice_peer\n"
             "if __name__ == '__main__':\n"
             "    sluice_peer.main('far', far_module.FRAMEWORK, plain.make_batches, plain.SUPPORTED)\n",
             test_peer_script(testing, sizeof testing, "testing"));
    test_write_text(loader, text);
    static char path[12000];
    size_t used = 0;
    while (used < 3000)
        used += (size_t)snprintf(path + used, sizeof path - used, "/nonexistent/folder%05zu:", used);
    snprintf(path + used, sizeof path - used, "%s", dir);
    char *old = getenv("PYTHONPATH") ? strdup(getenv("PYTHONPATH")) : NULL;
    cr_assert_eq(setenv("PYTHONPATH", path, 1), 0);
    sl__peer peer = test_peer("peer:test-far", "testing/plain.py", 3);
    peer.script = loader;
    sl_record record;
    peer_run(&peer.adapter, &record);
    cr_expect_eq(record.outcome, SL_RECORD_OK, "%s", record.reason);
    cr_expect_str_eq(record.framework, "found at the end of a long PYTHONPATH");
    sl_record_release(&record);

    while (used < 9000)
        used += (size_t)snprintf(path + used, sizeof path - used, "/nonexistent/folder%05zu:", used);
    snprintf(path + used, sizeof path - used, "%s", dir);
    cr_assert_eq(setenv("PYTHONPATH", path, 1), 0);
    peer_run(&peer.adapter, &record);
    if (old)
        setenv("PYTHONPATH", old, 1);
    else
        unsetenv("PYTHONPATH");
    free(old);
    cr_expect_eq(record.outcome, SL_RECORD_FAILED);
    cr_expect(strstr(record.reason, "PYTHONPATH") != NULL, "the variable is named: %s", record.reason);
    sl_record_release(&record);
    test_tmpdir_remove(dir);
}

/* --- D21: no loader ranked on work it did not do while timed ---------------- */

/* Attack 1: the plan is written after the loader's hello (protocol 3), so
 * before it a loader finds the data set's arrays and nothing of the plan:
 * no plan.json, no order, no decisions, no manifest. */
Test(peers_hostile, the_export_holds_no_plan_before_the_hello)
{
    char dir[512], path[700];
    test_tmpdir_create(dir, sizeof dir, "peek");
    snprintf(path, sizeof path, "%s/seen", dir);
    cr_assert_eq(setenv("SLUICE_TEST_PEEK", path, 1), 0);
    sl__peer peer = test_peer("peer:test-peek", "testing/peek.py", 0);
    sl_record record;
    /* Twice: the second run's folder held the first's plan. */
    for (int k = 0; k < 2; k++) {
        peer_run(&peer.adapter, &record);
        cr_assert_eq(record.outcome, SL_RECORD_OK, "run %d: %s", k, record.reason);
        cr_assert_str_eq(record.equivalence, "bitwise");
        sl_record_release(&record);
        char *seen = test_read_text(path);
        cr_expect(strstr(seen, ".npy") != NULL, "run %d: the data set is there before the hello: %s", k, seen);
        cr_expect(strstr(seen, "plan.json") == NULL, "run %d: no plan before the hello: %s", k, seen);
        cr_expect(strstr(seen, "order_e") == NULL, "run %d: no order before the hello: %s", k, seen);
        cr_expect(strstr(seen, "MANIFEST") == NULL, "run %d: no manifest before the hello: %s", k, seen);
        free(seen);
    }
    unsetenv("SLUICE_TEST_PEEK");
    test_tmpdir_remove(dir);
}

/* A loader of protocol 2 (the plan read before its hello) is refused at its
 * hello, naming both versions and what changed, and the bench goes on. */
Test(peers_hostile, a_protocol_2_loader_is_refused_at_its_hello_naming_both_versions)
{
    char dir[512], path[700];
    test_tmpdir_create(dir, sizeof dir, "protocol2");
    snprintf(path, sizeof path, "%s/old_loader.py", dir);
    test_write_text(path, "import json, sys\n"
                          "print(json.dumps({'hello': 'old', 'framework': 'none', 'protocol': 2}), flush=True)\n"
                          "sys.stdin.readline()\n");
    sl__peer peer = test_peer("peer:test-protocol-2", "testing/plain.py", 0);
    peer.script = path;
    sl_record record;
    peer_run(&peer.adapter, &record);
    cr_assert_eq(record.outcome, SL_RECORD_FAILED, "%s", record.reason);
    cr_expect(strstr(record.reason, "protocol 2, sluice speaks 3") != NULL, "both versions: %s", record.reason);
    cr_expect(strstr(record.reason, "plan") != NULL, "what changed: %s", record.reason);
    sl_record_release(&record);
    peer_run_carries_on();
    test_tmpdir_remove(dir);
}

/* Attack 1: a loader of the user's that computes every batch as soon as it
 * has the plan, clocks that as its first batch (so its CPU is held by its
 * clocks), and reports every later batch as its next() alone
 * (precompute.py) or just above what writing its bytes takes
 * (precompute_padded.py). Its setup grows with the batches: a hand-over,
 * never the best peer. */
Test(peers_hostile, a_loader_that_computes_every_batch_once_it_has_the_plan_is_a_hand_over)
{
    static const char *const files[] = {"testing/precompute.py", "testing/precompute_padded.py"};
    for (int k = 0; k < 2; k++) {
        sl__peer peer = test_peer("peer:test-precompute", files[k], k);
        peer.users_own = true;
        sl_record record;
        peer_run(&peer.adapter, &record);
        cr_assert_eq(record.outcome, SL_RECORD_OK, "%s: %s", files[k], record.reason);
        cr_assert_str_eq(record.equivalence, "bitwise");
        cr_expect_str_eq(record.timing, "hand-over", "%s: note: %s", files[k], record.note);
        cr_expect(strstr(record.note, "from a plan of 1 batch") != NULL, "%s: the note says why: %s", files[k],
                  record.note);
        cr_expect_not_null(peer_metric(&record, "peer_one_batch_session_cpu_ns"), "the one-batch session's CPU");
        const sl_record_metric *plan_setup = peer_metric(&record, "peer_plan_setup_cpu_ns");
        cr_assert_not_null(plan_setup);
        cr_expect_gt(plan_setup->value, 0.0, "the work from the plan to the first answer is counted");
        cr_expect_eq(peer_best_beside_fused(&record, 1.0, sl_record_elements_per_s(&record)), -1,
                     "%s: a hand-over is never the best peer", files[k]);
        sl_record_release(&record);
    }
    peer_run_carries_on();
}

/* The rule's other side: honest loaders of the user's, whose first batch
 * holds their setup (reading the data, building arrays), stay per-batch,
 * ranked and bitwise: the standard library's, the template's and numpy's. */
Test(peers_hostile, honest_users_loaders_stay_per_batch_and_ranked)
{
    static const char *const files[] = {"testing/plain.py", "template_peer.py", "numpy_peer.py"};
    for (int k = 0; k < 3; k++) {
        sl__peer peer = test_peer("peer:test-honest", files[k], k);
        peer.users_own = true;
        sl_record record;
        peer_run(&peer.adapter, &record);
        cr_assert_eq(record.outcome, SL_RECORD_OK, "%s: %s", files[k], record.reason);
        cr_expect_str_eq(record.equivalence, "bitwise", "%s", files[k]);
        cr_expect_str_eq(record.timing, "per-batch", "%s: note: %s", files[k], record.note);
        cr_expect(sl_timing_is_a_cost(record.timing), "%s", files[k]);
        sl_record_release(&record);
    }
}

/* Attack 3: batches kept on disk from an earlier run, replayed. Every
 * session of a loader of the user's has a plan of a fresh seed, so the
 * replay is a mismatch (a built-in peer runs the bench's plan: its code is
 * reviewed). */
Test(peers_hostile, batches_kept_from_an_earlier_run_and_replayed_are_a_mismatch)
{
    char dir[512];
    test_tmpdir_create(dir, sizeof dir, "replay");
    cr_assert_eq(setenv("SLUICE_TEST_STORE", dir, 1), 0);
    sl__peer peer = test_peer("peer:test-replay", "testing/replay.py", 0);
    peer.users_own = true;
    sl_record record;
    peer_run(&peer.adapter, &record);
    cr_assert_eq(record.outcome, SL_RECORD_OK, "the first run computes and stores: %s", record.reason);
    cr_assert_str_eq(record.equivalence, "bitwise");
    sl_record_release(&record);
    peer_run(&peer.adapter, &record);
    unsetenv("SLUICE_TEST_STORE");
    cr_assert_eq(record.outcome, SL_RECORD_MISMATCH, "the replay passed: %s %s", record.equivalence, record.reason);
    sl_record_release(&record);
    peer_run_carries_on();
    test_tmpdir_remove(dir);
}

/* Attack 3 on a plan no seed changes: PC-1/depth1 unshuffled, whose one op
 * (normalize) draws nothing, so each element's output is a function of its
 * input row alone, whatever the plan's seed. A loader of the user's that
 * kept each element's output under a hash of its row (replay_by_row.py)
 * replays them all on its second run, computing nothing; with a data set of
 * the session's own (a fresh seed's), no row it kept is there, and the
 * replay is a mismatch. An honest loader of the user's is still bitwise on
 * that data. */
Test(peers_hostile, outputs_kept_by_a_hash_of_each_row_are_a_mismatch_where_no_op_draws)
{
    sl_scenario_instance *shuffled = peer_instance;
    sl_bench_options shuffled_options = peer_options;
    test_bench_instance_unshuffled("PC-1", "depth1", 4, &peer_instance, &peer_options);
    cr_assert_not(sl_export_draws(peer_instance->pipeline), "PC-1/depth1's plan draws nothing");
    char dir[512];
    static char store[600];
    test_tmpdir_create(dir, sizeof dir, "replay-by-row");
    snprintf(store, sizeof store, "--store=%s", dir);
    sl__peer peer = test_peer("peer:test-replay-by-row", "testing/replay_by_row.py", 0);
    peer.users_own = true;
    peer.args = store;
    sl_record record;
    peer_run(&peer.adapter, &record);
    cr_assert_eq(record.outcome, SL_RECORD_OK, "the first run computes and keeps: %s", record.reason);
    cr_assert_str_eq(record.equivalence, "bitwise");
    sl_record_release(&record);
    peer_run(&peer.adapter, &record);
    cr_expect_eq(record.outcome, SL_RECORD_MISMATCH, "the replay passed: %s %s", record.equivalence, record.reason);
    sl_record_release(&record);
    sl__peer honest = test_peer("peer:test-honest", "testing/plain.py", 1);
    honest.users_own = true;
    peer_run(&honest.adapter, &record);
    cr_expect_eq(record.outcome, SL_RECORD_OK, "an honest loader on a fresh data set: %s", record.reason);
    cr_expect_str_eq(record.equivalence, "bitwise");
    cr_expect_str_eq(record.timing, "per-batch", "note: %s", record.note);
    sl_record_release(&record);
    peer_run_carries_on();
    sl_scenario_instance_free(peer_instance);
    peer_instance = shuffled;
    peer_options = shuffled_options;
    test_tmpdir_remove(dir);
}

/* Attack 4, first half: honest work, latencies under-reported by half, from
 * a loader of one thread. Its CPU can outrun its clocks by no more than the
 * threads it has; a bound of every CPU let it pass on a machine of two. */
Test(peers_hostile, a_single_threaded_loader_reporting_half_its_time_is_a_hand_over)
{
    sl__peer peer = test_peer("peer:test-half", "testing/underreport.py", 1);
    peer.args = "--half"; /* half its time, each batch 20 ms of CPU */
    sl_record record;
    peer_run(&peer.adapter, &record);
    cr_assert_eq(record.outcome, SL_RECORD_OK, "%s", record.reason);
    cr_expect_str_eq(record.timing, "hand-over", "note: %s", record.note);
    cr_expect_not(sl_timing_is_a_cost(record.timing));
    sl_record_release(&record);
}

/* Attack 4, rotating threads: a loader of the user's whose k threads take
 * the batches in turn, each batch computed alone on one thread inside its
 * window, reporting its latencies so that no bound over the whole session
 * fails (rotate.py: 100 ms of CPU a batch, each latency 0.7 of that CPU
 * time on PC-1's 5 batches, so a thread's CPU over the session is within
 * the latencies' sum). Batch by batch, its busiest thread ran 30 to 40 ms a
 * batch more than the latency, 160 to 200 ms in all (measured, at load 2
 * and beside stress-ng --cpu 2), eight times the 20 ms margin or more: a
 * hand-over, never the best peer. */
Test(peers_hostile, a_loader_whose_threads_take_the_batches_in_turn_is_a_hand_over)
{
    sl__peer peer = test_peer("peer:test-rotate", "testing/rotate.py", 0);
    peer.users_own = true;
    sl_record record;
    peer_run(&peer.adapter, &record);
    cr_assert_eq(record.outcome, SL_RECORD_OK, "%s", record.reason);
    cr_assert_str_eq(record.equivalence, "bitwise");
    cr_expect_str_eq(record.timing, "hand-over", "note: %s", record.note);
    cr_expect(strstr(record.note, "batch by batch, its busiest thread") != NULL, "the note says which bound: %s",
              record.note);
    const sl_record_metric *excess = peer_metric(&record, "peer_window_excess_ns");
    cr_assert_not_null(excess, "the windows' residual is in the record");
    cr_expect_gt(excess->value, 100e6, "five batches of 100 ms at 0.7 of their CPU: 150 ms or more past");
    cr_expect_eq(peer_best_beside_fused(&record, 1.0, sl_record_elements_per_s(&record)), -1,
                 "a hand-over is never the best peer");
    sl_record_release(&record);
    peer_run_carries_on();
}

/* The rule's other side: an honest loader of the user's that splits each
 * batch's 100 ms of CPU over 2 and over 4 threads at once (parallel.py,
 * true latencies) stays per-batch, ranked and bitwise; so does one thread
 * (plain.py's test above). */
Test(peers_hostile, an_honest_loader_that_splits_each_batch_over_threads_stays_per_batch)
{
    static const char *const threads[] = {"--threads=2", "--threads=4"};
    for (int k = 0; k < 2; k++) {
        sl__peer peer = test_peer("peer:test-parallel", "testing/parallel.py", 0);
        peer.users_own = true;
        peer.args = threads[k];
        sl_record record;
        peer_run(&peer.adapter, &record);
        cr_assert_eq(record.outcome, SL_RECORD_OK, "%s: %s", threads[k], record.reason);
        cr_expect_str_eq(record.equivalence, "bitwise", "%s", threads[k]);
        cr_expect_str_eq(record.timing, "per-batch", "%s: note: %s", threads[k], record.note);
        const sl_record_metric *excess = peer_metric(&record, "peer_window_excess_ns");
        cr_assert_not_null(excess, "%s: the windows were sampled", threads[k]);
        cr_expect_not_null(peer_metric(&record, "peer_window_busiest_thread_ns"), "%s", threads[k]);
        cr_expect_eq(peer_best_beside_fused(&record, 1.0, sl_record_elements_per_s(&record)), 1,
                     "%s: an honest per-batch loader can be the best peer", threads[k]);
        sl_record_release(&record);
    }
}

/* Attack 4, second half: the work done by a helper that left the loader's
 * process group and session; its CPU is the loader's. */
Test(peers_hostile, work_done_by_a_helper_outside_the_process_group_is_counted)
{
    sl__peer peer = test_peer("peer:test-offload", "testing/offload.py", 1);
    sl_record record;
    peer_run(&peer.adapter, &record);
    cr_assert_eq(record.outcome, SL_RECORD_OK, "%s", record.reason);
    cr_expect_str_eq(record.timing, "hand-over", "note: %s", record.note);
    cr_expect_not(sl_timing_is_a_cost(record.timing));
    sl_record_release(&record);
    peer_run_carries_on();
}

/* Attack 4, the helper that leaves early: a child of the loader computes
 * every batch and exits, reaped by the loader, before the first answer. Its
 * CPU time is in its parent's count of reaped children, which sluice adds:
 * without it the run was `per-batch` on the copies alone. */
Test(peers_hostile, work_done_by_a_helper_that_exited_and_was_reaped_is_counted)
{
    sl__peer peer = test_peer("peer:test-offload-exit", "testing/offload_exit.py", 1);
    sl_record record;
    peer_run(&peer.adapter, &record);
    cr_assert_eq(record.outcome, SL_RECORD_OK, "%s", record.reason);
    cr_assert_str_eq(record.equivalence, "bitwise");
    cr_expect_str_eq(record.timing, "hand-over", "note: %s", record.note);
    cr_expect_not(sl_timing_is_a_cost(record.timing));
    sl_record_release(&record);
}

/* Attack 2: a loader of the user's that computes everything before its
 * hello and says it prefetches, which skips the CPU check: shown as
 * `self-declared`, never the best peer unless asked. Its latencies are
 * padded above what writing its bytes could take. */
Test(peers_hostile, a_users_loader_that_declares_itself_prefetching_is_shown_and_not_ranked)
{
    char name[1100];
    snprintf(name, sizeof name, "peer:%s", peer_script(1, "testing/precompute_prefetching.py"));
    sl_err err = {0};
    const sl_adapter *adapter = sl__user_peer(name, &err);
    cr_assert_not_null(adapter, "%s", err.msg);
    sl_record record;
    peer_run(adapter, &record);
    cr_assert_eq(record.outcome, SL_RECORD_OK, "%s", record.reason);
    cr_expect_str_eq(record.timing, "self-declared", "note: %s", record.note);
    cr_expect_neq(peer_best_beside_fused(&record, 1.0, 1e12), 1, "a self-declared loader is not ranked");
    sl_record_release(&record);
    /* Asked for, it is timed and ranked as a prefetching peer. */
    cr_assert_eq(setenv("SLUICE_RANK_SELF_DECLARED", "1", 1), 0);
    peer_run(adapter, &record);
    unsetenv("SLUICE_RANK_SELF_DECLARED");
    cr_expect_str_eq(record.timing, "prefetching", "note: %s", record.note);
    sl_record_release(&record);
}

/* --- D22: strings from a loader ------------------------------------------------ */

/* A loader whose file name is cut inside a UTF-8 character in its adapter's
 * name, and whose framework name (with a terminal escape in it) is cut
 * inside one in the record: sluice must read back the record it wrote (it
 * used to refuse it, and count the run failed), and no control character
 * may reach it. */
Test(peers_hostile, names_cut_inside_a_character_or_holding_escapes_give_a_record_sluice_reads_back)
{
    char dir[512], path[800], testing[1024], text[2048], name[900], record_path[700];
    test_tmpdir_create(dir, sizeof dir, "utf8");
    /* 25 bytes, then a 2-byte character across the 26-byte cut. */
    snprintf(path, sizeof path, "%s/xxxxxxxxxxxxxxxxxxxxxxxxx\xc3\xa9_loader.py", dir);
    /* An escape, then 60 two-byte characters: cut at 95 bytes, inside one. */
    char framework[200] = "\\x1b[31mred";
    for (int i = 0; i < 60; i++)
        strcat(framework, "\xc3\xa9");
    snprintf(text, sizeof text,
             "import sys\n"
             "sys.path.insert(0, '%s')\n"
             "import plain\n"
             "import sluice_peer\n"
             "if __name__ == '__main__':\n"
             "    sluice_peer.main('utf8', '%s', plain.make_batches, plain.SUPPORTED)\n",
             test_peer_script(testing, sizeof testing, "testing"), framework);
    test_write_text(path, text);
    snprintf(name, sizeof name, "peer:%s", path);
    sl_err err = {0};
    const sl_adapter *adapter = sl__user_peer(name, &err);
    cr_assert_not_null(adapter, "%s", err.msg);
    sl_record record;
    peer_run(adapter, &record);
    cr_assert_eq(record.outcome, SL_RECORD_OK, "%s", record.reason);
    for (const char *p = record.framework; *p; p++)
        cr_expect((unsigned char)*p >= 0x20 && *p != 0x7F, "a control character in the framework: %s",
                  record.framework);
    sl_environment env;
    sl_environment_collect(&env);
    snprintf(record_path, sizeof record_path, "%s/record.json", dir);
    cr_assert_eq(sl_record_write(&record, &env, record_path, &err), SL_OK, "%s", err.msg);
    sl_record back;
    sl_environment back_env;
    cr_assert_eq(sl_record_read(record_path, &back, &back_env, &err), SL_OK, "sluice refuses its own record: %s",
                 err.msg);
    cr_expect_str_eq(back.adapter, record.adapter);
    cr_expect_str_eq(back.framework, record.framework);
    sl_record_release(&back);
    sl_record_release(&record);
    test_tmpdir_remove(dir);
}

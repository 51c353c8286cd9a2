/* The peer protocol with peers written with the standard library alone
 * (peers/testing/): an honest peer is equivalent bitwise; a peer that
 * crashes, hangs, prints garbage, returns wrong data or echoes the answers is
 * recorded as such with the reason; a peer whose clock leaves its work out
 * (latencies a hundredth of the truth) is flagged `hand-over` (one that
 * computes everything in its first batch: test_peers_hostile.c); latencies
 * out of range are protocol errors; a slow exit after correct work is `ok`
 * with a note; a process that left
 * the peer's group is gone after the run; a loader outside the tree is run
 * and ranked like the built-in ones. None of it needs numpy. */
#include <criterion/criterion.h>

#include "peer_support.h"
#include "support.h"
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "peer.h"
#include "sluice/adapters/peer_check.h"
#include "sluice/bench/bench.h"
#include "sluice/bench/scenario.h"
#include "sluice/pipeline/pipeline.h"
#include "sluice/records/export.h"
#include "sluice_config.h"

TestSuite(peers, .init = peer_setup, .fini = peer_teardown, .timeout = 300);

Test(peers, an_honest_peer_is_bitwise_its_latencies_bounded_and_its_time_a_cost)
{
    sl__peer peer = test_peer("peer:test-plain", "testing/plain.py", 0);
    sl_record record;
    peer_run(&peer.adapter, &record);
    cr_assert_eq(record.outcome, SL_RECORD_OK, "%s", record.reason);
    cr_assert_str_eq(record.equivalence, "bitwise");
    cr_assert_eq(record.output_digest, peer_options.reference_digest);
    cr_assert_eq(record.measured_batches, 4);
    for (int i = 0; i < 4; i++)
        cr_assert_gt(record.latency_ns[i], 0, "batch %d", i);
    cr_assert_str_eq(record.timing, "per-batch", "note: %s", record.note);
    /* A latency is never longer than what sluice saw; the CPU its process
     * used is in the record. */
    const sl_record_metric *clocked = peer_metric(&record, "peer_clocked_fraction");
    cr_assert_not_null(clocked);
    cr_assert_gt(clocked->value, 0.0);
    cr_assert_leq(clocked->value, 1.0, "clocked fraction %g", clocked->value);
    const sl_record_metric *cpu = peer_metric(&record, "peer_cpu_ns");
    cr_assert_not_null(cpu);
    cr_assert_gt(cpu->value, 0.0);
    cr_assert_eq(strncmp(record.framework, "python 3.", 9), 0, "framework '%s'", record.framework);
    sl_environment env;
    sl_environment_collect(&env);
    char *json = sl_record_to_json(&record, &env);
    cr_assert_not_null(json);
    cr_assert_not_null(strstr(json, "\"framework\""), "the record's JSON names its framework");
    cr_assert_not_null(strstr(json, "\"timing\""), "and how its times read");
    cr_assert_not_null(strstr(json, "\"per-batch\""), "and how its times read");
    free(json);
    sl_record_release(&record);
}

/* A scenario's timed passes (sl__scenario_time_pipelines) run an adapter
 * with no sink, as they may any adapter. */
Test(peers, a_peer_runs_without_a_sink)
{
    sl__peer peer = test_peer("peer:test-plain", "testing/plain.py", 0);
    int64_t latency[8] = {0};
    sl_run_request request = {.start = {0, 0}, .nbatches = 5};
    sl_err err = {0};
    cr_assert_eq(peer.adapter.run(&peer.adapter, peer_instance->pipeline, &request, NULL, NULL, latency, &err), SL_OK,
                 "%s", err.msg);
    for (int i = 0; i < 5; i++)
        cr_assert_gt(latency[i], 0, "batch %d has its latency", i);
}

Test(peers, sluices_own_adapters_name_no_framework)
{
    sl_record record;
    peer_run(sl_adapter_find("reference"), &record);
    cr_assert_eq(record.outcome, SL_RECORD_OK, "%s", record.reason);
    cr_assert_str_eq(record.framework, "");
    cr_assert_str_eq(record.timing, "");
    sl_environment env;
    sl_environment_collect(&env);
    char *json = sl_record_to_json(&record, &env);
    cr_assert_not_null(json);
    cr_assert_null(strstr(json, "\"framework\""));
    cr_assert_null(strstr(json, "\"timing\""));
    free(json);
    sl_record_release(&record);
}

Test(peers, a_crashing_peer_fails_with_its_stderr)
{
    sl__peer peer = test_peer("peer:test-crash", "testing/crash.py", 1);
    sl_record record;
    peer_run(&peer.adapter, &record);
    cr_assert_eq(record.outcome, SL_RECORD_FAILED);
    cr_assert(strstr(record.reason, "crashed") != NULL, "%s", record.reason);
    cr_assert(strstr(record.reason, "status 3") != NULL, "%s", record.reason);
    cr_assert(strstr(record.reason, "simulated crash") != NULL, "%s", record.reason);
    sl_record_release(&record);
    peer_run_carries_on();
}

Test(peers, a_hanging_peer_is_killed_at_the_batch_limit)
{
    sl__peer peer = test_peer("peer:test-hang", "testing/hang.py", 1);
    peer.batch_s = 2.0;
    sl_record record;
    peer_run(&peer.adapter, &record);
    cr_assert_eq(record.outcome, SL_RECORD_FAILED);
    cr_assert(strstr(record.reason, "timeout") != NULL, "%s", record.reason);
    cr_assert(strstr(record.reason, "per-batch") != NULL, "%s", record.reason);
    cr_assert(strstr(record.reason, "hanging on purpose") != NULL, "%s", record.reason);
    sl_record_release(&record);
    peer_run_carries_on();
}

Test(peers, a_peer_printing_garbage_fails)
{
    sl__peer peer = test_peer("peer:test-garbage", "testing/garbage.py", 1);
    sl_record record;
    peer_run(&peer.adapter, &record);
    cr_assert_eq(record.outcome, SL_RECORD_FAILED);
    cr_assert(strstr(record.reason, "protocol") != NULL, "%s", record.reason);
    cr_assert(strstr(record.reason, "this is not json") != NULL, "%s", record.reason);
    sl_record_release(&record);
    peer_run_carries_on();
}

Test(peers, a_peer_with_wrong_data_is_a_mismatch_that_names_the_first_difference)
{
    sl__peer peer = test_peer("peer:test-wrong", "testing/wrong.py", 1);
    sl_record record;
    peer_run(&peer.adapter, &record);
    cr_assert_eq(record.outcome, SL_RECORD_MISMATCH, "%s", record.reason);
    cr_assert_str_eq(record.equivalence, "mismatch");
    /* Every batch has the wrong data, so every batch differs; the first
     * byte of the first field is the first difference. */
    cr_assert(strstr(record.reason, "5 of 5 batches differ") != NULL, "%s", record.reason);
    cr_assert(strstr(record.reason, "row 0 value 0") != NULL, "%s", record.reason);
    sl_record_release(&record);
    peer_run_carries_on();
}

/* A peer that echoes the reference's digests (here from a user's export of
 * the answers, which the bench never hands a peer) and computes nothing
 * fails: sluice reads the batches from the bytes. */
Test(peers, an_echo_peer_that_computes_nothing_is_a_mismatch)
{
    char dir[512], answers[600];
    test_tmpdir_create(dir, sizeof dir, "echo");
    snprintf(answers, sizeof answers, "%s/answers.npy", dir);
    sl_err err = {0};
    sl_export_meta meta = {.kernels = sl_kernels_reference(), .digests_path = answers};
    char export_dir[600];
    snprintf(export_dir, sizeof export_dir, "%s/export", dir);
    cr_assert_eq(sl_export_write(peer_instance->pipeline, &meta, 5, export_dir, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(setenv("SLUICE_TEST_ANSWERS", answers, 1), 0);
    sl__peer peer = test_peer("peer:test-echo", "testing/echo.py", 1);
    sl_record record;
    peer_run(&peer.adapter, &record);
    unsetenv("SLUICE_TEST_ANSWERS");
    cr_assert_eq(record.outcome, SL_RECORD_MISMATCH, "%s", record.reason);
    cr_assert(strstr(record.reason, "5 of 5 batches differ") != NULL, "%s", record.reason);
    sl_record_release(&record);
    test_tmpdir_remove(dir);
}

Test(peers, a_peer_that_reports_a_hundredth_of_its_time_is_a_hand_over)
{
    sl__peer peer = test_peer("peer:test-underreport", "testing/underreport.py", 3);
    sl_record record;
    peer_run(&peer.adapter, &record);
    cr_assert_eq(record.outcome, SL_RECORD_OK, "%s", record.reason);
    cr_assert_str_eq(record.timing, "hand-over", "note: %s", record.note);
    /* Its process used a hundred times the CPU its clocks hold. */
    const sl_record_metric *cpu = peer_metric(&record, "peer_cpu_ns");
    cr_assert_not_null(cpu);
    double clocked = 0.0;
    for (int64_t i = 0; i < record.measured_batches; i++)
        clocked += (double)record.latency_ns[i];
    cr_assert_gt(cpu->value, 10.0 * clocked, "CPU %g ns, latencies %g ns", cpu->value, clocked);
    sl_record_release(&record);
}

/* latency_ns must be an integer in [0, 2^53) and no longer than what
 * sluice saw between its request and the line. */
Test(peers, latencies_out_of_range_are_protocol_errors)
{
    static const char *const values[] = {"1e19", "1e300", "-5", "1.5", "9007199254740992", "\"12\"", "60000000000"};
    static const char *const args[] = {
        "--latency=1e19",   "--latency=1e300",      "--latency=-5", "--latency=1.5", "--latency=9007199254740992",
        "--latency=\"12\"", "--latency=60000000000"};
    for (size_t k = 0; k < sizeof values / sizeof values[0]; k++) {
        sl__peer peer = test_peer("peer:test-latency", "testing/underreport.py", 3);
        peer.args = args[k];
        sl_record record;
        peer_run(&peer.adapter, &record);
        cr_assert_eq(record.outcome, SL_RECORD_FAILED, "latency %s: %s", values[k], record.reason);
        cr_assert(strncmp(record.reason, "protocol:", 9) == 0, "latency %s: %s", values[k], record.reason);
        cr_assert(strstr(record.reason, "latency_ns") != NULL, "latency %s: %s", values[k], record.reason);
        sl_record_release(&record);
    }
    peer_run_carries_on();
}

Test(peers, a_correct_peer_slow_to_exit_is_ok_with_a_note)
{
    sl__peer peer = test_peer("peer:test-slow-exit", "testing/slow_exit.py", 4);
    peer.exit_s = 1.0;
    sl_record record;
    peer_run(&peer.adapter, &record);
    cr_assert_eq(record.outcome, SL_RECORD_OK, "%s", record.reason);
    cr_assert_str_eq(record.equivalence, "bitwise");
    cr_assert(strstr(record.note, "exit grace of 1 s") != NULL, "%s", record.note);
    cr_assert(strstr(record.note, "killed") != NULL, "%s", record.note);
    sl_record_release(&record);
}

/* A process that left the peer's process group and session (setsid) would
 * outlive the run and compete with the next measurement: it is gone. */
Test(peers, a_setsid_grandchild_is_gone_after_the_run)
{
    char dir[512], pidfile[600];
    test_tmpdir_create(dir, sizeof dir, "setsid");
    snprintf(pidfile, sizeof pidfile, "%s/grandchild.pid", dir);
    cr_assert_eq(setenv("SLUICE_TEST_PIDFILE", pidfile, 1), 0);
    sl__peer peer = test_peer("peer:test-setsid", "testing/setsid_child.py", 5);
    sl_record record;
    peer_run(&peer.adapter, &record);
    unsetenv("SLUICE_TEST_PIDFILE");
    cr_assert_eq(record.outcome, SL_RECORD_OK, "%s", record.reason);
    FILE *f = fopen(pidfile, "r");
    cr_assert_not_null(f, "the grandchild wrote its pid");
    int pid = 0;
    cr_assert_eq(fscanf(f, "%d", &pid), 1);
    fclose(f);
    cr_assert_gt(pid, 1);
    errno = 0;
    cr_assert_eq(kill(pid, 0), -1, "process %d outlived the run", pid);
    cr_assert_eq(errno, ESRCH);
    sl_record_release(&record);
    test_tmpdir_remove(dir);
}

/* A loader written outside peers/ (as a user writes one), named as
 * `peer:<path>`, runs under the same protocol, checks and ranking. */
Test(peers, a_loader_outside_the_tree_is_run_and_ranked)
{
    char dir[512], path[600];
    test_tmpdir_create(dir, sizeof dir, "byo");
    snprintf(path, sizeof path, "%s/my_loader.py", dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    /* Only sluice_peer (on the PYTHONPATH sluice sets) and the standard
     * library: the batch's rows, normalized in float32. */
    fputs("import array\n"
          "import sluice_peer\n"
          "\n"
          "def make_batches(plan, options):\n"
          "    descr, shape, data = plan.raw_source('x')\n"
          "    row = 4\n"
          "    for d in shape[1:]:\n"
          "        row *= d\n"
          "    ops = {op['kind']: op for op in plan.ops}\n"
          "    p = ops['normalize']['params']\n"
          "    m, s = array.array('f', p['mean'])[0], array.array('f', p['inv_std'])[0]\n"
          "    for i in range(len(plan.batches)):\n"
          "        ids = plan.batch_ids(i)\n"
          "        x = array.array('f', b''.join(bytes(data[k * row:(k + 1) * row]) for k in ids))\n"
          "        x = array.array('f', [v - m for v in x])\n"
          "        x = array.array('f', [v * s for v in x])\n"
          "        yield {'x': ((len(ids),) + tuple(shape[1:]), x)}\n"
          "\n"
          "if __name__ == '__main__':\n"
          "    sluice_peer.main('my-loader', 'my framework 0.1', make_batches, {'normalize'})\n",
          f);
    fclose(f);
    char name[700];
    snprintf(name, sizeof name, "peer:%s", path);
    const sl_adapter *adapter = sl_adapter_find(name);
    cr_assert_not_null(adapter, "peer:<path> names a loader of one's own");
    cr_assert_str_eq(adapter->name, "peer:my_loader.py");
    cr_assert_eq(sl_adapter_find(name), adapter, "made once");
    sl_record record;
    peer_run(adapter, &record);
    cr_assert_eq(record.outcome, SL_RECORD_OK, "%s", record.reason);
    cr_assert_str_eq(record.equivalence, "bitwise");
    cr_assert_str_eq(record.framework, "my framework 0.1");
    cr_assert_str_eq(record.timing, "per-batch", "%s", record.note);
    cr_assert_eq(peer_best_beside_fused(&record, 1e9, sl_record_elements_per_s(&record)), 1,
                 "the user's loader is ranked");
    sl_record_release(&record);
    test_tmpdir_remove(dir);
}

Test(peers, a_loader_that_cannot_describe_itself_is_refused_with_the_reason)
{
    char dir[512], path[600], name[700];
    test_tmpdir_create(dir, sizeof dir, "byo-bad");
    snprintf(path, sizeof path, "%s/not_a_loader.py", dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs("print('hello')\n", f);
    fclose(f);
    snprintf(name, sizeof name, "peer:%s", path);
    sl_err err = {0};
    cr_assert_null(sl__user_peer(name, &err));
    cr_assert(strstr(err.msg, "--describe") != NULL, "%s", err.msg);
    cr_assert_null(sl__user_peer("peer:/nonexistent/sluice/loader.py", &err));
    cr_assert(strstr(err.msg, "no such loader file") != NULL, "%s", err.msg);
    test_tmpdir_remove(dir);
}

/* The bench's export for a peer holds inputs and decisions only. */
Test(peers, the_export_a_peer_reads_holds_no_answer)
{
    char dir[512];
    test_tmpdir_create(dir, sizeof dir, "noanswers");
    sl_err err = {0};
    uint64_t digests[5] = {0};
    sl_export_meta meta = {.kernels = sl_kernels_reference(), .digests = digests};
    cr_assert_eq(sl_export_write(peer_instance->pipeline, &meta, 5, dir, &err), SL_OK, "%s", err.msg);
    cr_assert_neq(digests[0], 0u, "the caller gets the digests");
    char path[700];
    snprintf(path, sizeof path, "%s/digests.npy", dir);
    cr_assert_neq(access(path, F_OK), 0, "no digests.npy beside the plan");
    snprintf(path, sizeof path, "%s/plan.json", dir);
    char *plan = test_read_text(path);
    cr_assert_null(strstr(plan, "digest"), "plan.json names no digest");
    char hex[32];
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)digests[0]);
    cr_assert_null(strstr(plan, hex));
    free(plan);
    test_tmpdir_remove(dir);
}

/* The seeds of the plans each session of a peer was given, from
 * testing/seeds.py's file; returns how many (at most 8). */
static int seeds_seen(const sl__peer *peer, unsigned long long seeds[8])
{
    char dir[512], path[700];
    test_tmpdir_create(dir, sizeof dir, "seeds");
    snprintf(path, sizeof path, "%s/seeds.txt", dir);
    setenv("SLUICE_TEST_SEEDS", path, 1);
    for (int run = 0; run < 2; run++) {
        sl_record record;
        peer_run(&peer->adapter, &record);
        cr_assert_eq(record.outcome, SL_RECORD_OK, "%s: %s", peer->adapter.name, record.reason);
        cr_assert_str_eq(record.equivalence, "bitwise");
        sl_record_release(&record);
    }
    unsetenv("SLUICE_TEST_SEEDS");
    char *text = test_read_text(path);
    int n = 0;
    for (char *line = strtok(text, "\n"); line && n < 8; line = strtok(NULL, "\n"))
        seeds[n++] = strtoull(line, NULL, 10);
    free(text);
    test_tmpdir_remove(dir);
    return n;
}

/* A built-in peer (reviewed code) runs the plan sluice's own adapters run,
 * the bench's seed, in every session; a loader of the user's gets a fresh
 * seed in each (D21, attack 3), so no two of its sessions share a plan. */
Test(peers, built_in_peers_run_the_benchs_plan_and_users_loaders_a_fresh_one_each_session)
{
    unsigned long long bench_seed = sl_pipeline_get_spec(peer_instance->pipeline)->seed;
    unsigned long long seeds[8];
    sl__peer built_in = test_peer("peer:test-seeds", "testing/seeds.py", 0);
    int n = seeds_seen(&built_in, seeds);
    cr_assert_geq(n, 2, "two runs, a session each at least");
    for (int i = 0; i < n; i++)
        cr_expect_eq(seeds[i], bench_seed, "built-in session %d: seed %llu, the bench's %llu", i, seeds[i], bench_seed);
    sl__peer users = test_peer("peer:test-seeds", "testing/seeds.py", 1);
    users.users_own = true;
    n = seeds_seen(&users, seeds);
    cr_assert_geq(n, 2);
    for (int i = 0; i < n; i++) {
        cr_expect_neq(seeds[i], bench_seed, "user's session %d ran the bench's seed", i);
        for (int j = 0; j < i; j++)
            cr_expect_neq(seeds[i], seeds[j], "user's sessions %d and %d shared seed %llu", j, i, seeds[i]);
    }
}

/* The numpy peers (tuned and idiomatic), where the system's Python has numpy. */
Test(peers, the_numpy_peers_are_bitwise)
{
    char reason[256] = "";
    if (!sl__peer_python_has("numpy", reason, sizeof reason))
        cr_skip_test("needs numpy in the system's Python (ci/install-peers.sh numpy): %s", reason);
    const sl_adapter *both[] = {&sl__peer_numpy.adapter, &sl__peer_numpy_idiomatic.adapter};
    for (int i = 0; i < 2; i++) {
        sl_record record;
        peer_run(both[i], &record);
        cr_assert_eq(record.outcome, SL_RECORD_OK, "%s: %s", both[i]->name, record.reason);
        cr_assert_str_eq(record.equivalence, "bitwise");
        cr_assert_eq(strncmp(record.framework, "numpy ", 6), 0, "framework '%s'", record.framework);
        sl_record_release(&record);
    }
}

/* Every registered peer is available or says why not. */
Test(peers_listed, every_peer_is_registered_and_says_why_when_unavailable)
{
    for (int i = 0; i < sl__peer_count; i++) {
        const sl_adapter *adapter = &sl__peers[i]->adapter;
        cr_assert_eq(sl_adapter_find(adapter->name), adapter, "%s is registered", adapter->name);
        char reason[256] = "";
        bool available = sl_adapter_is_available(adapter, reason, sizeof reason);
        cr_assert(available || reason[0] != '\0', "%s is unavailable with no reason", adapter->name);
    }
}

/* What peers/ops.txt declares for each script, as the Python side reads it
 * (sluice_peer.read_ops_table, what the scripts' SUPPORTED come from), at
 * most 64 lines of "script op op ...". */
typedef struct declared_ops {
    int count;
    char script[64][64];
    sl_transform_set ops[64];
    bool used[64];
} declared_ops;

static void read_declared_ops(declared_ops *out)
{
    char peers[4096], command[8192];
    test_peer_script(peers, sizeof peers, "");
    snprintf(command, sizeof command,
             "%s -c 'import sys; sys.path.insert(0, sys.argv[1]); import sluice_peer\n"
             "for script, ops in sorted(sluice_peer.read_ops_table().items()): print(script, *sorted(ops))' %s",
             sl__peer_python(), peers);
    FILE *p = popen(command, "r");
    cr_assert_not_null(p, "cannot run %s", command);
    memset(out, 0, sizeof *out);
    char line[4096];
    while (fgets(line, sizeof line, p)) {
        cr_assert_lt(out->count, 64, "more than 64 scripts in peers/ops.txt");
        char *save = NULL;
        const char *script = strtok_r(line, " \n", &save);
        cr_assert_not_null(script);
        snprintf(out->script[out->count], sizeof out->script[out->count], "%s", script);
        for (const char *name = strtok_r(NULL, " \n", &save); name; name = strtok_r(NULL, " \n", &save)) {
            sl_op_kind kind;
            cr_assert(sl_op_kind_parse(name, &kind), "peers/ops.txt: %s names '%s', no sluice op", script, name);
            out->ops[out->count] |= SL_TRANSFORM(kind);
        }
        out->count++;
    }
    cr_assert_eq(pclose(p), 0, "%s failed", command);
    cr_assert_gt(out->count, 0, "peers/ops.txt declares no script");
}

/* Each built-in peer runs exactly the ops peers/ops.txt declares for its
 * script, the set its Python reads as SUPPORTED, and every script declared
 * there is run by a built-in peer: the C table and the Python agree. */
Test(peers_listed, each_peer_runs_the_ops_its_script_declares_in_peers_ops_txt)
{
    declared_ops declared;
    read_declared_ops(&declared);
    for (int i = 0; i < sl__peer_count; i++) {
        const sl__peer *peer = sl__peers[i];
        int line = -1;
        for (int k = 0; k < declared.count; k++)
            if (strcmp(declared.script[k], peer->script) == 0)
                line = k;
        cr_assert_geq(line, 0, "%s runs %s, which peers/ops.txt does not declare", peer->adapter.name, peer->script);
        sl_transform_set c_side = sl_adapter_transforms(&peer->adapter);
        sl_transform_set extra = c_side & ~declared.ops[line], missing = declared.ops[line] & ~c_side;
        char extra_names[512] = "", missing_names[512] = "";
        sl_transform_set_format(extra, extra_names, sizeof extra_names);
        sl_transform_set_format(missing, missing_names, sizeof missing_names);
        cr_expect_eq(c_side, declared.ops[line],
                     "%s: adapters/peers.c has [%s] beyond peers/ops.txt's %s and lacks [%s]", peer->adapter.name,
                     extra_names, peer->script, missing_names);
        declared.used[line] = true;
    }
    for (int k = 0; k < declared.count; k++)
        cr_expect(declared.used[k], "peers/ops.txt declares %s, which no built-in peer runs", declared.script[k]);
}

Test(peers_listed, a_missing_module_makes_a_peer_unavailable_with_the_reason)
{
    char reason[256] = "";
    cr_assert_not(sl__peer_python_has("no_such_module_for_sluice", reason, sizeof reason));
    cr_assert(strstr(reason, "no_such_module_for_sluice") != NULL || strstr(reason, "no Python") != NULL, "%s", reason);
}

/* A peer with a Python of its own (Datarax, PyTorch 2, Hugging Face
 * Datasets, WebDataset, Energon, DALI) is unavailable without it and names the
 * Python it looked for. */
Test(peers_listed, peers_name_their_own_python_when_it_is_missing)
{
    static const struct {
        const char *var, *peer;
    } own[] = {{"SLUICE_DATARAX_PYTHON", "peer:datarax"}, {"SLUICE_DATARAX_PYTHON", "peer:datarax-scan"},
               {"SLUICE_TORCH_PYTHON", "peer:torch"},     {"SLUICE_TORCH_PYTHON", "peer:litdata"},
               {"SLUICE_TORCH_PYTHON", "peer:energon"},   {"SLUICE_HF_PYTHON", "peer:hf-datasets"},
               {"SLUICE_WDS_PYTHON", "peer:webdataset"},  {"SLUICE_DALI_PYTHON", "peer:dali"}};
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++) {
        char missing[128];
        snprintf(missing, sizeof missing, "/nonexistent/sluice-test/%zu/bin/python", i);
        cr_assert_eq(setenv(own[i].var, missing, 1), 0);
        const sl_adapter *adapter = sl_adapter_find(own[i].peer);
        cr_assert_not_null(adapter, "%s is registered", own[i].peer);
        char reason[256] = "";
        cr_assert_not(sl_adapter_is_available(adapter, reason, sizeof reason), "%s", own[i].peer);
        cr_assert(strstr(reason, missing) != NULL, "%s: '%s'", own[i].peer, reason);
        unsetenv(own[i].var);
    }
}

/* sluice peer-check: an honest loader is bitwise; a wrong one is told the
 * first batch, field, row and value that differ, with both numbers. */
Test(peers, peer_check_says_bitwise_or_names_the_first_difference)
{
    sl_peer_check_result result;
    sl_err err = {0};
    cr_assert_eq(sl_peer_check(peer_instance->pipeline, peer_script(6, "testing/plain.py"), 3, 0.0, &result, &err),
                 SL_OK, "%s", err.msg);
    cr_assert_str_eq(result.equivalence, "bitwise");
    cr_assert_eq(result.first_batch, -1);
    cr_assert_eq(sl_peer_check(peer_instance->pipeline, peer_script(7, "testing/wrong.py"), 3, 0.0, &result, &err),
                 SL_OK, "%s", err.msg);
    cr_assert_str_eq(result.equivalence, "mismatch");
    cr_assert_eq(result.first_batch, 0);
    /* wrong.py flips the first byte of the first value: its float differs
     * from the reference's in the low byte of its bits. */
    cr_assert(strstr(result.detail, "batch 0: field 'x' row 0 value 0") != NULL, "%s", result.detail);
    cr_assert(strstr(result.detail, "the peer has") != NULL && strstr(result.detail, "the reference") != NULL, "%s",
              result.detail);
}

/* Without SLUICE_TORCH_PYTHON and without .venv-torch, the PyTorch peers run
 * with the system's Python (SLUICE_PYTHON, else /usr/bin/python3), where
 * `ci/install-peers.sh torch` puts Debian's CPU-only torch: the README's
 * main job and the tests then use the one Python the numpy peers use. */
Test(peers_listed, the_torch_peers_use_the_systems_python_without_their_venv)
{
    char venv[1024];
    snprintf(venv, sizeof venv, "%s/.venv-torch/bin/python", SLUICE_SOURCE_ROOT);
    if (access(venv, X_OK) == 0)
        cr_skip_test("%s exists, and is used before the system's Python", venv);
    cr_assert_eq(unsetenv("SLUICE_TORCH_PYTHON"), 0);
    cr_assert_eq(setenv("SLUICE_PYTHON", "/nonexistent/sluice-test/system/python3", 1), 0);
    cr_assert_str_eq(sl__peer_torch_python(), "/nonexistent/sluice-test/system/python3");
    char reason[256] = "";
    cr_assert_not(sl_adapter_is_available(sl_adapter_find("peer:torch"), reason, sizeof reason));
    cr_assert(strstr(reason, "/nonexistent/sluice-test/system/python3") != NULL, "'%s'", reason);
    unsetenv("SLUICE_PYTHON");
    cr_assert_str_eq(sl__peer_torch_python(), "/usr/bin/python3");
}

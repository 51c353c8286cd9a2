/* The peer protocol with peers written with the standard library and numpy
 * alone (peers/numpy_peer.py and peers/testing/): a good peer is equivalent
 * bitwise, and a peer that crashes, hangs, prints garbage or returns wrong
 * data is recorded as such with the reason, and the run carries on. */
#include <criterion/criterion.h>

#include "support.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "peer.h"
#include "sluice/bench.h"
#include "sluice/scenario.h"

static char script_path[4][1024];

static const char *script(int slot, const char *name)
{
    const char *root = getenv("SLUICE_SOURCE_ROOT");
    snprintf(script_path[slot], sizeof script_path[slot], "%s/peers/%s", root ? root : ".", name);
    return script_path[slot];
}

static sl__peer test_peer(const char *name, const char *file, int slot)
{
    sl__peer peer = sl__peer_numpy;
    peer.adapter.name = name;
    peer.script = script(slot, file);
    peer.startup_s = 60.0;
    peer.batch_s = 2.0;
    peer.total_s = 120.0;
    return peer;
}

static sl_scenario_instance *instance;
static sl_bench_options options;

static void setup(void)
{
    char reason[256] = "";
    if (!sl__peer_python_has("numpy,xxhash", reason, sizeof reason))
        cr_skip_test("the protocol tests need the peers' Python with numpy and xxhash: %s", reason);
    test_bench_instance("PC-1", "depth1", 4, &instance, &options);
}

static void teardown(void)
{
    sl_scenario_instance_free(instance);
    instance = NULL;
}

static void run(const sl_adapter *adapter, sl_record *record)
{
    sl_err err = {0};
    sl_bench_run(instance, adapter, &options, record, &err);
}

/* After every failing peer, the reference adapter still runs and is ok. */
static void assert_run_carries_on(void)
{
    sl_record record;
    run(sl_adapter_find("reference"), &record);
    cr_assert_eq(record.outcome, SL_RECORD_OK, "%s", record.reason);
    sl_record_release(&record);
}

TestSuite(peers, .init = setup, .fini = teardown, .timeout = 300);

Test(peers, numpy_peer_is_bitwise_equivalent_and_its_latencies_are_its_own)
{
    sl_record record;
    run(&sl__peer_numpy.adapter, &record);
    cr_assert_eq(record.outcome, SL_RECORD_OK, "%s", record.reason);
    cr_assert_str_eq(record.equivalence, "bitwise");
    cr_assert_eq(record.output_digest, options.reference_digest);
    cr_assert_eq(record.measured_batches, 4);
    for (int i = 0; i < 4; i++)
        cr_assert_gt(record.latency_ns[i], 0, "batch %d", i);
    /* The framework is the peer's hello: "numpy" and a version with dots. */
    cr_assert_eq(strncmp(record.framework, "numpy ", 6), 0, "framework '%s'", record.framework);
    cr_assert_not_null(strchr(record.framework + 6, '.'), "framework '%s'", record.framework);
    sl_environment env;
    sl_environment_collect(&env);
    char *json = sl_record_to_json(&record, &env);
    cr_assert_not_null(json);
    cr_assert_not_null(strstr(json, "\"framework\""), "the record's JSON names its framework");
    free(json);
    sl_record_release(&record);
}

/* A scenario's timed passes (sl__scenario_time_pipelines) run an adapter
 * with no sink, as they may any adapter; a peer used to call the missing
 * sink once its digests matched, and crashed. */
Test(peers, a_peer_runs_without_a_sink)
{
    int64_t latency[8] = {0};
    sl_run_request request = {.start = {0, 0}, .nbatches = 5};
    sl_err err = {0};
    const sl_adapter *adapter = &sl__peer_numpy.adapter;
    cr_assert_eq(adapter->run(adapter, instance->pipeline, &request, NULL, NULL, latency, &err), SL_OK, "%s",
                 err.msg);
    for (int i = 0; i < 5; i++)
        cr_assert_gt(latency[i], 0, "batch %d has its latency", i);
}

Test(peers, sluices_own_adapters_name_no_framework)
{
    sl_record record;
    run(sl_adapter_find("reference"), &record);
    cr_assert_eq(record.outcome, SL_RECORD_OK, "%s", record.reason);
    cr_assert_str_eq(record.framework, "");
    sl_environment env;
    sl_environment_collect(&env);
    char *json = sl_record_to_json(&record, &env);
    cr_assert_not_null(json);
    cr_assert_null(strstr(json, "\"framework\""));
    free(json);
    sl_record_release(&record);
}

/* Datarax's other peers are listed, each registered; one without a peer
 * script is unavailable with its reason (a bench records it skipped with that
 * reason rather than leaving it out), and one with a script, when its
 * framework is missing, says why. */
Test(peers_listed, every_listed_peer_is_unavailable_with_a_reason)
{
    static const char *const whys[] = {"needs a GPU", "not installable:", "not installed:"};
    for (int i = 0; i < SL__PEER_LISTED_COUNT; i++) {
        const sl__peer *peer = &sl__peer_listed[i];
        const sl_adapter *adapter = &peer->adapter;
        cr_assert_eq(sl_adapter_find(adapter->name), adapter, "%s is registered", adapter->name);
        char reason[256] = "";
        bool available = sl_adapter_is_available(adapter, reason, sizeof reason);
        if (peer->script[0] != '\0') {
            cr_assert(available || reason[0] != '\0', "%s is unavailable with no reason", adapter->name);
            continue;
        }
        cr_assert_not(available, "%s", adapter->name);
        bool known = false;
        for (size_t k = 0; k < sizeof whys / sizeof *whys; k++)
            known = known || strncmp(reason, whys[k], strlen(whys[k])) == 0;
        cr_assert(known, "%s: '%s'", adapter->name, reason);
        if (strcmp(adapter->name, "peer:dali") == 0)
            cr_assert_eq(strncmp(reason, "needs a GPU", 11), 0, "%s", reason);
    }
}

Test(peers, a_crashing_peer_fails_with_its_stderr)
{
    sl__peer peer = test_peer("peer:test-crash", "testing/crash.py", 0);
    sl_record record;
    run(&peer.adapter, &record);
    cr_assert_eq(record.outcome, SL_RECORD_FAILED);
    cr_assert(strstr(record.reason, "crashed") != NULL, "%s", record.reason);
    cr_assert(strstr(record.reason, "status 3") != NULL, "%s", record.reason);
    cr_assert(strstr(record.reason, "simulated crash") != NULL, "%s", record.reason);
    sl_record_release(&record);
    assert_run_carries_on();
}

Test(peers, a_hanging_peer_is_killed_at_the_batch_limit)
{
    sl__peer peer = test_peer("peer:test-hang", "testing/hang.py", 1);
    sl_record record;
    run(&peer.adapter, &record);
    cr_assert_eq(record.outcome, SL_RECORD_FAILED);
    cr_assert(strstr(record.reason, "timeout") != NULL, "%s", record.reason);
    cr_assert(strstr(record.reason, "per-batch") != NULL, "%s", record.reason);
    cr_assert(strstr(record.reason, "hanging on purpose") != NULL, "%s", record.reason);
    sl_record_release(&record);
    assert_run_carries_on();
}

Test(peers, a_peer_printing_garbage_fails)
{
    sl__peer peer = test_peer("peer:test-garbage", "testing/garbage.py", 2);
    sl_record record;
    run(&peer.adapter, &record);
    cr_assert_eq(record.outcome, SL_RECORD_FAILED);
    cr_assert(strstr(record.reason, "protocol") != NULL, "%s", record.reason);
    cr_assert(strstr(record.reason, "this is not json") != NULL, "%s", record.reason);
    sl_record_release(&record);
    assert_run_carries_on();
}

Test(peers, a_peer_with_wrong_data_is_a_mismatch_never_ranked)
{
    sl__peer peer = test_peer("peer:test-wrong", "testing/wrong.py", 3);
    sl_record record;
    run(&peer.adapter, &record);
    cr_assert_eq(record.outcome, SL_RECORD_MISMATCH, "%s", record.reason);
    cr_assert_str_eq(record.equivalence, "mismatch");
    /* Every batch has the wrong data, so every batch's digest differs. */
    cr_assert(strstr(record.reason, "5 of 5 batches differ") != NULL, "%s", record.reason);
    sl_record_release(&record);
    assert_run_carries_on();
}

Test(peers, a_missing_module_makes_a_peer_unavailable_with_the_reason)
{
    char reason[256] = "";
    cr_assert_not(sl__peer_python_has("numpy,no_such_module_for_sluice", reason, sizeof reason));
    cr_assert(strstr(reason, "no_such_module_for_sluice") != NULL, "%s", reason);
}

/* Datarax runs with a Python of its own (SLUICE_DATARAX_PYTHON, else
 * .venv-datarax): without it both Datarax peers are unavailable and say
 * which Python they looked for; the other peers' Python is not consulted. */
Test(peers_listed, datarax_peers_name_their_own_python_when_it_is_missing)
{
    const char *missing = "/nonexistent/sluice-test/datarax/bin/python";
    cr_assert_eq(setenv("SLUICE_DATARAX_PYTHON", missing, 1), 0);
    cr_assert_str_eq(sl__peer_datarax_python(), missing);
    const sl_adapter *both[] = {&sl__peer_datarax.adapter, &sl__peer_datarax_scan.adapter};
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(sl_adapter_find(both[i]->name), both[i], "%s is registered", both[i]->name);
        char reason[256] = "";
        cr_assert_not(sl_adapter_is_available(both[i], reason, sizeof reason), "%s", both[i]->name);
        cr_assert(strstr(reason, missing) != NULL, "%s: '%s'", both[i]->name, reason);
    }
    unsetenv("SLUICE_DATARAX_PYTHON");
}

/* Hugging Face Datasets and WebDataset run with a Python each of their own
 * (SLUICE_HF_PYTHON else .venv-hf, SLUICE_WDS_PYTHON else .venv-wds):
 * without it the peer is unavailable and names the Python it looked for. */
Test(peers_listed, hf_and_webdataset_peers_name_their_own_python_when_it_is_missing)
{
    const char *vars[] = {"SLUICE_HF_PYTHON", "SLUICE_WDS_PYTHON"};
    const char *missing[] = {"/nonexistent/sluice-test/hf/bin/python", "/nonexistent/sluice-test/wds/bin/python"};
    const sl_adapter *peers[] = {&sl__peer_hf_datasets.adapter, &sl__peer_webdataset.adapter};
    const char *(*python[])(void) = {sl__peer_hf_python, sl__peer_wds_python};
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(setenv(vars[i], missing[i], 1), 0);
        cr_assert_str_eq(python[i](), missing[i]);
        cr_assert_eq(sl_adapter_find(peers[i]->name), peers[i], "%s is registered", peers[i]->name);
        char reason[256] = "";
        cr_assert_not(sl_adapter_is_available(peers[i], reason, sizeof reason), "%s", peers[i]->name);
        cr_assert(strstr(reason, missing[i]) != NULL, "%s: '%s'", peers[i]->name, reason);
        unsetenv(vars[i]);
    }
}

/* The ops the storage peers (LitData, Energon, Hugging Face Datasets, ...)
 * run on their framework's batches: peer:numpy's tuned code through
 * numpy_peer.BatchOps (docs/peers.md, "The storage peers' ops"). A
 * stand-in storage peer (peers/testing/storage.py) hands it each batch's
 * stored rows, read-only as a framework's own buffers may be, or writable
 * as SPDL's and Ray Data's stages make them; on scenarios whose ops are
 * all tuned (CV-1, PR-2, IO-1), partly tuned (PC-1, TAB-1: integer data
 * the tuned code hands on) or none (NLP-1, NLP-2, CV-2), its batches must
 * be bitwise the reference's, and a read-only batch must come back
 * unwritten (the stand-in refuses a batch the ops changed). Skipped where
 * the system's Python has no numpy. */
#include <criterion/criterion.h>

#include "support.h"
#include <stdio.h>
#include <string.h>

#include "peer.h"
#include "sluice/bench/bench.h"
#include "sluice/bench/scenario.h"
#include "sluice/records/record.h"

static void need_numpy(void)
{
    char reason[256] = "";
    if (!sl__peer_python_has("numpy", reason, sizeof reason))
        cr_skip_test("needs numpy in the system's Python (ci/install-peers.sh numpy): %s", reason);
}

TestSuite(peer_storage_ops, .init = need_numpy, .timeout = 600);

static void check_storage_ops_bitwise(const char *args)
{
    static const char *const variants[][2] = {
        {"CV-1", "32x32"}, {"PR-2", "64x64"}, {"IO-1", "memory"},  {"PC-1", "depth1"},
        {"TAB-1", "10k"},  {"NLP-1", "128"},  {"NLP-2", "padded"}, {"CV-2", "32x32x32"},
    };
    char path[1024];
    test_peer_script(path, sizeof path, "testing/storage.py");
    for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
        sl_scenario_instance *instance = NULL;
        sl_bench_options options;
        test_bench_instance(variants[v][0], variants[v][1], 3, &instance, &options);
        sl__peer peer = sl__peer_numpy;
        peer.adapter.name = "peer:test-storage";
        peer.script = path;
        peer.args = args;
        sl_record record;
        sl_err err = {0};
        sl_bench_run(instance, &peer.adapter, &options, &record, &err);
        cr_assert_eq(record.outcome, SL_RECORD_OK, "%s %s (%s): %s", variants[v][0], variants[v][1],
                     args ? args : "read-only", record.reason);
        cr_assert_str_eq(record.equivalence, "bitwise", "%s %s", variants[v][0], variants[v][1]);
        sl_record_release(&record);
        sl_scenario_instance_free(instance);
    }
}

Test(peer_storage_ops, read_only_batches_are_bitwise_and_left_unwritten)
{
    check_storage_ops_bitwise(NULL);
}

Test(peer_storage_ops, writable_batches_are_bitwise)
{
    check_storage_ops_bitwise("--writable");
}

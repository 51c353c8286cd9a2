/* The peer tests' shared harness (peer_support.h). */
#include "peer_support.h"

#include <criterion/criterion.h>
#include <string.h>
#include <unistd.h>

#include "sluice/records/peer_rank.h"
#include "support.h"

sl_scenario_instance *peer_instance;
sl_bench_options peer_options;

static char script_path[8][1024];

const char *peer_script(int slot, const char *relative)
{
    cr_assert(slot >= 0 && slot < 8, "a script slot is 0 to 7, got %d", slot);
    return test_peer_script(script_path[slot], sizeof script_path[slot], relative);
}

sl__peer test_peer(const char *name, const char *file, int slot)
{
    sl__peer peer = sl__peer_numpy;
    peer.adapter.name = name;
    peer.adapter.transforms = SL_TRANSFORM(SL_OP_NORMALIZE);
    peer.adapter.available = NULL;
    peer.script = peer_script(slot, file);
    peer.args = NULL;
    peer.startup_s = 60.0;
    peer.batch_s = 20.0;
    peer.total_s = 200.0;
    peer.exit_s = 10.0;
    return peer;
}

void peer_setup(void)
{
    if (access(sl__peer_python(), X_OK) != 0)
        cr_skip_test("the protocol tests need the system's Python at %s", sl__peer_python());
    test_bench_instance("PC-1", "depth1", 4, &peer_instance, &peer_options);
}

void peer_teardown(void)
{
    sl_scenario_instance_free(peer_instance);
    peer_instance = NULL;
}

void peer_run(const sl_adapter *adapter, sl_record *record)
{
    sl_err err = {0};
    sl_bench_run(peer_instance, adapter, &peer_options, record, &err);
}

void peer_run_carries_on(void)
{
    sl_record record;
    peer_run(sl_adapter_find("reference"), &record);
    cr_assert_eq(record.outcome, SL_RECORD_OK, "%s", record.reason);
    sl_record_release(&record);
}

const sl_record_metric *peer_metric(const sl_record *record, const char *name)
{
    for (int i = 0; i < record->nmetrics; i++)
        if (strcmp(record->metrics[i].name, name) == 0)
            return &record->metrics[i];
    return NULL;
}

int peer_best_beside_fused(const sl_record *record, double fused_per_s, double peer_per_s)
{
    sl_rank_entry e[2] = {
        {.scenario = "PC-1",
         .variant = "depth1",
         .adapter = "fused",
         .equivalence = "bitwise",
         .outcome = SL_RECORD_OK,
         .elements_per_s = fused_per_s},
        {.scenario = "PC-1",
         .variant = "depth1",
         .adapter = record->adapter,
         .equivalence = record->equivalence,
         .outcome = record->outcome,
         .elements_per_s = peer_per_s,
         .timing = record->timing},
    };
    return sl_best_peer(e, 2, "PC-1", "depth1", NULL);
}

/* The harness the peer protocol's tests share (test_peers.c,
 * test_peers_hostile.c): PC-1/depth1 with 4 measured batches as the bench's
 * scenario, a peer of the test's own on the system's Python with short
 * limits, a run, and the check that the bench carries on after a peer. */
#ifndef SLUICE_TEST_PEER_SUPPORT_H
#define SLUICE_TEST_PEER_SUPPORT_H

#include "peer.h"
#include "sluice/bench/bench.h"
#include "sluice/bench/scenario.h"
#include "sluice/records/record.h"

/* The scenario peer_setup made, and its bench options. */
extern sl_scenario_instance *peer_instance;
extern sl_bench_options peer_options;

/* The path of a script under peers/, kept in slot (0 to 7) for as long as
 * a peer names it. */
const char *peer_script(int slot, const char *relative);
/* A peer of the test's own on script `file` (under peers/, its path in
 * slot): peer:numpy's settings, normalize alone, the system's Python. */
sl__peer test_peer(const char *name, const char *file, int slot);

/* A suite's init and fini: skip when the system's Python is missing, else
 * make the scenario; free it. */
void peer_setup(void);
void peer_teardown(void);
/* Runs adapter through the bench on the scenario, into record. */
void peer_run(const sl_adapter *adapter, sl_record *record);
/* The record's metric of that name, or NULL. */
const sl_record_metric *peer_metric(const sl_record *record, const char *name);
/* Whether record's peer is the best peer of PC-1/depth1 beside fused at
 * fused_per_s elements/s, the peer at peer_per_s: sl_best_peer over the
 * two (1: the peer, 0: fused, -1: none). */
int peer_best_beside_fused(const sl_record *record, double fused_per_s, double peer_per_s);
/* After a failing or hostile peer, the reference adapter still runs ok. */
void peer_run_carries_on(void);

#endif

/* Peer adapters: another loader, run as a child process on an export of the
 * pipeline, speaking the protocol of docs/peers.md. */
#ifndef SLUICE_ADAPTERS_PEER_H
#define SLUICE_ADAPTERS_PEER_H

#include "sluice/adapter.h"

/* A peer. adapter comes first: the run function finds the peer from the
 * adapter it is given, so tests can declare peers of their own. */
typedef struct sl__peer {
    sl_adapter adapter;        /* name "peer:<name>", run = sl__peer_run */
    const char *script;        /* relative to the peers folder, or absolute */
    const char *args;          /* one extra argument ("--workers=2"), or NULL */
    /* Time limits in seconds; 0 takes SLUICE_PEER_{STARTUP,BATCH,TOTAL}_S
     * from the environment, else 120, 60 and 1800. */
    double startup_s, batch_s, total_s;
} sl__peer;

sl_status sl__peer_run(const sl_adapter *adapter, const sl_pipeline *pipeline, const sl_run_request *request,
                       sl_batch_sink sink, void *user, int64_t *latency_ns, sl_err *err);

/* Whether the peers' Python has every module of the comma-separated list
 * (importlib.util.find_spec, so nothing is imported); else the reason. */
bool sl__peer_python_has(const char *modules, char *reason, size_t size);

/* The Python that runs peers: $SLUICE_PYTHON, else /usr/bin/python3. */
const char *sl__peer_python(void);
/* The folder of the peer scripts: $SLUICE_PEERS_DIR, else <source>/peers. */
const char *sl__peer_dir(void);

/* The registered peers (peers.c). */
extern const sl__peer sl__peer_numpy;
extern const sl__peer sl__peer_torch;
extern const sl__peer sl__peer_torch_w2;

#endif

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
    /* Runs with the peers' virtual environment's Python (sl__peer_venv_python)
     * rather than the system's (sl__peer_python): frameworks that PyPI has
     * and Debian does not. */
    bool venv;
    /* The Python that runs it when not NULL, before venv: a framework with its
     * own pinned virtual environment (Datarax pins its own jax and grain). */
    const char *(*python)(void);
    /* Time limits in seconds; 0 takes SLUICE_PEER_{STARTUP,BATCH,TOTAL}_S
     * from the environment, else 120, 60 and 1800. */
    double startup_s, batch_s, total_s;
} sl__peer;

sl_status sl__peer_run(const sl_adapter *adapter, const sl_pipeline *pipeline, const sl_run_request *request,
                       sl_batch_sink sink, void *user, int64_t *latency_ns, sl_err *err);

/* Whether the peers' Python has every module of the comma-separated list
 * (importlib.util.find_spec, so nothing is imported); else the reason. */
bool sl__peer_python_has(const char *modules, char *reason, size_t size);
/* The same for a given Python. */
bool sl__peer_python_has_in(const char *python, const char *modules, char *reason, size_t size);

/* The Python that runs peers: $SLUICE_PYTHON, else /usr/bin/python3. */
const char *sl__peer_python(void);
/* The Python of the peers' virtual environment: $SLUICE_PEER_PYTHON, else
 * <source>/.venv-peers/bin/python (made by ci/install-peers.sh). */
const char *sl__peer_venv_python(void);
/* Writes the framework the adapter's last run reported in its hello (the
 * adapter's framework hook). */
void sl__peer_framework(const sl_adapter *adapter, char *out, size_t size);
/* Says a peer of Datarax's set is not run here and why (its available hook
 * for peers that are listed but not implemented). */
bool sl__peer_litdata_not_installable(char *reason, size_t size);
bool sl__peer_needs_gpu(char *reason, size_t size);
bool sl__peer_ffcv_not_installable(char *reason, size_t size);
bool sl__peer_energon_not_installable(char *reason, size_t size);

/* Writes "statistical" when the adapter's last run was checked
 * statistically (its plan's draws are not exported), else "" (the bench's
 * own digest check applies): the adapter's equivalence hook. */
void sl__peer_equivalence(const sl_adapter *adapter, char *out, size_t size);

/* The statistical check (peer_stat.c, docs/peers.md "Equivalence"). */
typedef struct sl__moments {
    double n, sum, sum2, sum4;
} sl__moments;
void sl__moments_add(sl__moments *m, double x);
/* How many standard errors a statistic may stray: a false alarm under the
 * hypothesis is below 1e-8 per statistic for normal residuals. */
#define SL__PEER_STAT_K 6.0
/* Whether residual e has the distribution of the null residual e0 (two
 * independent honest draws' difference): means and mean squares within k
 * standard errors. Else why says which statistic failed and by how much. */
bool sl__residuals_agree(const sl__moments *e, const sl__moments *e0, double k, char *why, size_t size);
/* Compares the peer's batches (dir/batch<k>_<field>.npy for the first
 * nbatches batches) with the reference statistically; *agree, else why. */
sl_status sl__peer_statistical_check(const sl_pipeline *pipeline, int64_t nbatches, const char *dir, bool *agree,
                                     char *why, size_t size, sl_err *err);

/* The folder of the peer scripts: $SLUICE_PEERS_DIR, else <source>/peers. */
const char *sl__peer_dir(void);

/* The registered peers (peers.c). */
extern const sl__peer sl__peer_numpy;
extern const sl__peer sl__peer_torch;
extern const sl__peer sl__peer_torch_w2;
extern const sl__peer sl__peer_grain;
extern const sl__peer sl__peer_grain_t2;
extern const sl__peer sl__peer_tfdata;
extern const sl__peer sl__peer_jax;
extern const sl__peer sl__peer_datarax;
extern const sl__peer sl__peer_datarax_scan;
/* Datarax's virtual environment's Python: $SLUICE_DATARAX_PYTHON, else
 * <source>/.venv-datarax/bin/python (made by ci/install-peers.sh). */
const char *sl__peer_datarax_python(void);
/* Hugging Face Datasets and WebDataset, each with a Python of its own:
 * $SLUICE_HF_PYTHON, else <source>/.venv-hf/bin/python, and
 * $SLUICE_WDS_PYTHON, else <source>/.venv-wds/bin/python (made by
 * ci/install-peers.sh). */
extern const sl__peer sl__peer_hf_datasets;
extern const sl__peer sl__peer_webdataset;
const char *sl__peer_hf_python(void);
const char *sl__peer_wds_python(void);
/* Datarax's other peers, listed as unavailable with the reason. */
#define SL__PEER_LISTED_COUNT 8
extern const sl__peer sl__peer_listed[SL__PEER_LISTED_COUNT];

#endif

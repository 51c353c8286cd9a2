/* Peer adapters: another loader, run as a child process on an export of the
 * pipeline, speaking the protocol of docs/peers.md. */
#ifndef SLUICE_ADAPTERS_PEER_H
#define SLUICE_ADAPTERS_PEER_H

#include <sys/types.h>

#include "sluice/adapters/adapter.h"
#include "sluice/core/tensor.h"

/* How a peer's batch times may be read (docs/peers.md, "Like with like").
 * A per-batch peer computes each batch when asked; a prefetching one
 * computes ahead on threads or processes of its own, so it is timed with a
 * consumer that does nothing between batches, and its figure with a digest
 * between batches is reported beside; a batch-all-at-once peer (a scan)
 * computes every batch in one call and is compared by throughput only. */
typedef enum sl__peer_kind {
    SL__PEER_PER_BATCH = 0,
    SL__PEER_PREFETCHING,
    SL__PEER_ALL_AT_ONCE,
} sl__peer_kind;

/* A peer. adapter comes first: the run function finds the peer from the
 * adapter it is given, so tests can declare peers of their own. */
typedef struct sl__peer {
    sl_adapter adapter; /* name "peer:<name>", run = sl__peer_run */
    const char *script; /* relative to the peers folder, or absolute */
    const char *args;   /* one extra argument ("--workers=2"), or NULL */
    /* Runs with the peers' virtual environment's Python (sl__peer_venv_python)
     * rather than the system's (sl__peer_python): frameworks that PyPI has
     * and Debian does not. */
    bool venv;
    /* The Python that runs it when not NULL, before venv: a framework with its
     * own pinned virtual environment (Datarax pins its own jax and grain). */
    const char *(*python)(void);
    /* Time limits in seconds; 0 takes SLUICE_PEER_{STARTUP,BATCH,TOTAL,EXIT}_S
     * from the environment, else 120, 60, 1800 and, for the exit, the larger
     * of 5 s and half the time its batches took. */
    double startup_s, batch_s, total_s, exit_s;
    sl__peer_kind kind;
    /* A loader of the user's (`peer:<path>`), whose kind is its own word
     * (--describe): one that says it prefetches is timed so, and shown as
     * `self-declared`, not ranked (docs/peers.md, "What is verified"). */
    bool users_own;
} sl__peer;

sl_status sl__peer_run(const sl_adapter *adapter, const sl_pipeline *pipeline, const sl_run_request *request,
                       sl_batch_sink sink, void *user, int64_t *latency_ns, sl_err *err);
/* Writes the framework its last run reported in its hello (the adapter's
 * framework hook). */
void sl__peer_framework(const sl_adapter *adapter, char *out, size_t size);
/* Fills a record from the adapter's last run: the framework of its hello,
 * how its batch times may be read (record->timing), a note (a slow exit,
 * the hand-over figures) and its metrics. The adapter's annotate hook. */
void sl__peer_annotate(const sl_adapter *adapter, struct sl_record *record);

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
/* The Python that runs this peer (its own, its venv's or the system's). */
const char *sl__peer_python_of(const sl__peer *peer);

/* --- the shared-memory ring the peer writes its batches into --------------- */

/* nslots slots of slot_bytes each in one memory file; in a slot, output
 * field f's data starts at offset[f] (a multiple of 64, fields in schema
 * order, each with room for the batch size's rows at the schema's dims). */
typedef struct sl__peer_ring {
    int fd;
    unsigned char *base;
    int nslots;
    size_t slot_bytes;
    size_t offset[SL_MAX_FIELDS];
    size_t capacity[SL_MAX_FIELDS];
} sl__peer_ring;

sl_status sl__peer_ring_create(sl__peer_ring *ring, const sl_schema *schema, int64_t rows, int nslots, sl_err *err);
void sl__peer_ring_destroy(sl__peer_ring *ring);

/* --- one conversation with a peer process ---------------------------------- */

/* One batch as the peer handed it over: the fields with the shapes its line
 * declared, their data in the ring (valid until the callback returns), the
 * peer's own latency and the time sluice saw from its request to the line. */
typedef struct sl__peer_batch {
    int64_t index;
    int64_t latency_ns;
    int64_t observed_ns;
    sl_batch view; /* schema, count and fields; element_ids and storage NULL */
} sl__peer_batch;

typedef sl_status (*sl__peer_batch_fn)(void *user, const sl__peer_batch *batch, sl_err *err);

typedef struct sl__peer_session_spec {
    const char *name; /* for messages: "peer:numpy" */
    const char *python, *script, *export_dir;
    const char *args[4]; /* extra arguments, NULL-terminated */
    const sl_schema *output;
    int64_t rows; /* the batch size: a slot's room */
    int64_t nbatches;
    double startup_s, batch_s, total_s, exit_s;
    /* A consumer that digests between batches: each batch is handed to
     * on_batch before the next is requested. Otherwise the next request goes
     * out as soon as a batch's line arrives, and on_batch runs while the peer
     * computes the next one (into the other slot). */
    bool digest_between;
    sl__peer_batch_fn on_batch;
    void *user;
    /* Called after the peer's hello, before sluice tells it "plan": writes
     * the plan into export_dir (the bench's peer runs), so that no batch
     * can be computed before sluice counts the peer's CPU. NULL: the plan
     * is there already (peer-check, tests). */
    sl_status (*reveal)(void *reveal_user, sl_err *err);
    void *reveal_user;
} sl__peer_session_spec;

typedef struct sl__peer_session_result {
    char framework[96];
    int64_t *latency_ns;       /* nbatches entries, the caller's */
    int64_t *observed_ns;      /* nbatches entries, the caller's */
    int64_t batches_ns;        /* from the plan's reveal to the last line */
    int64_t cpu_ns;            /* the peer's tree's CPU time from its hello to the last line */
    int64_t busiest_thread_ns; /* the most CPU time one of its threads used over that span */
    /* When not NULL (nbatches entries, the caller's): for each batch's
     * window, from the sample before its request (batch 0: the hello) to the
     * one after its answer, the most CPU time any one thread of the tree
     * used. Samples are taken between an answer and the next request, never
     * inside a loader's clock (docs/peers.md, "What is verified"). */
    int64_t *window_busiest_ns;
    int64_t window_sampling_ns; /* sluice's time taking those samples, all of them */
    int64_t setup_cpu_ns;       /* the peer's tree's CPU time from its start to its hello */
    /* From the plan's reveal to the first batch's line: the loader's own
     * setup over the plan, which its first batch's clock holds. */
    int64_t plan_setup_cpu_ns;
    /* How long sluice took to write the plan after the hello, while the
     * peer waited: its CPU is counted (an honest loader's threads may still
     * spin from their start, OpenBLAS's for up to about 0.1 s), and so this
     * time is allowed it as if clocked. */
    int64_t reveal_ns;
    /* Set when the peer delivered every batch but had to be killed after
     * its exit grace: what happened, for the record's note. */
    char slow_exit[192];
} sl__peer_session_result;

/* Runs the peer through every batch. Fails with a reason that starts with
 * "crashed:", "timeout:" or "protocol:" (and the tail of its stderr), or
 * with on_batch's error. Every process the peer started is gone when it
 * returns, including those that left its process group. */
sl_status sl__peer_session_run(const sl__peer_session_spec *spec, sl__peer_session_result *result, sl_err *err);

/* How a peer's times read, from one session's latencies, the times sluice
 * saw and the CPU time the peer used (docs/peers.md, "Nothing handed"):
 * "throughput" for a batch-all-at-once peer; "hand-over" when its latencies
 * add up to less than writing its batches' bytes could take, or (a peer
 * that computes when asked) when its processes used more CPU than its
 * clocks could hold on every CPU plus the protocol's own cost; else
 * "prefetching" or "per-batch" as its kind says. *fraction (may be NULL)
 * gets the latencies' share of the time seen, *observed (may be NULL) that
 * time. */
const char *sl__peer_timing_of(sl__peer_kind kind, const sl__peer_session_result *r, int64_t n, int64_t bytes,
                               double *fraction, double *observed);

/* --- processes --------------------------------------------------------------- */

/* Makes this process the child subreaper for the session (orphans of the
 * peer's tree come back to it, not to init) and notes the children it has
 * already, which the sweep leaves alone. */
typedef struct sl__peer_reaper {
    bool was_subreaper;
    int nkept;
    pid_t kept[16];
} sl__peer_reaper;
void sl__peer_reaper_begin(sl__peer_reaper *reaper);
/* Kills and reaps every child of this process that was not there at
 * begin, and their children as they come back, until none is left; then
 * restores the subreaper setting. Returns how many it killed. */
int sl__peer_reaper_end(sl__peer_reaper *reaper);

/* A child process with pipes for its stdin, stdout and stderr. */
typedef struct sl__peer_child {
    pid_t pid;
    int in, out, errfd; /* our ends; in is -1 when not asked for */
    char line[4096];
    size_t used;
    char tail[320];
    size_t tail_used;
    bool out_eof, err_eof;
} sl__peer_child;

/* Starts argv in its own process group with stdout and stderr piped, stdin
 * piped when want_stdin (else /dev/null), keep_fd (>= 0) inherited, and the
 * peers folder on PYTHONPATH. */
sl_status sl__peer_spawn(sl__peer_child *c, const char *const *argv, bool want_stdin, int keep_fd, sl_err *err);
/* Waits until a whole line is in c->line (1), stdout closes (0), the line
 * is too long (-2) or deadline_ns passes (-1). */
int sl__peer_read_line(sl__peer_child *c, int64_t deadline_ns);
void sl__peer_drop_line(sl__peer_child *c);
/* Ends the child: kills its group unless it exited by itself within
 * grace_ns, describes how it ended into how; true when it exited with status
 * 0 of its own accord. *killed tells whether it had to be killed. */
bool sl__peer_finish(sl__peer_child *c, int64_t grace_ns, bool *killed, char *how, size_t size);
/* The last bytes the peer wrote to stderr, or "(empty)". */
const char *sl__peer_stderr_tail(const sl__peer_child *c, char *buf, size_t size);

/* The CPU time (ns) the live processes of the peer's tree have used so
 * far, every thread counted: its process group (a peer and its workers)
 * and every process that left the group but is a descendant of this one
 * through a child the reaper did not keep (setsid'd helpers come back to
 * this process, the subreaper). Each thread's own count is kept too (the
 * first SL__PEER_SAMPLED_THREADS), to find the busiest thread. */
#define SL__PEER_SAMPLED_THREADS 1024
typedef struct sl__peer_cpu_sample {
    int64_t total_ns;
    int nthreads;
    pid_t tid[SL__PEER_SAMPLED_THREADS];
    int64_t ns[SL__PEER_SAMPLED_THREADS];
} sl__peer_cpu_sample;
void sl__peer_tree_cpu(pid_t peer, const sl__peer_reaper *reaper, sl__peer_cpu_sample *sample);
/* The same sample, its processes found by walking down from this
 * process's children (each thread's /proc/<pid>/task/<tid>/children)
 * rather than by reading every process of /proc: a tenth of the time or
 * less on a machine of a hundred processes, for the samples taken between
 * batches (docs/peers.md, "What is verified"). The tree is the same (the
 * descendants of the children the reaper did not keep); a process forked
 * or reparented while the walk runs may be missed, and is found by the
 * next one. The full scan where the kernel lists no children. */
void sl__peer_tree_cpu_walk(pid_t peer, const sl__peer_reaper *reaper, sl__peer_cpu_sample *sample);
/* The most CPU time any one thread used from one sample to a later one. */
int64_t sl__peer_busiest_thread_ns(const sl__peer_cpu_sample *before, const sl__peer_cpu_sample *after);
/* Adds to after, with their counts in before, the threads before has and
 * after lacks (while there is room): a thread one walk missed keeps its
 * count, so the next window does not count its whole life as its growth. */
void sl__peer_keep_missing_threads(const sl__peer_cpu_sample *before, sl__peer_cpu_sample *after);

/* --- equivalence ------------------------------------------------------------- */

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
/* The peer's batches as sluice copied them from the ring, for the checks
 * that need every value (statistical, within a tolerance). */
typedef struct sl__peer_batches {
    int64_t count;
    sl_batch **batches;
} sl__peer_batches;
sl_status sl__peer_batches_keep(sl__peer_batches *kept, const sl_batch *view, sl_err *err);
void sl__peer_batches_free(sl__peer_batches *kept);
/* Compares the peer's first nbatches batches with the reference
 * statistically; *agree, else why. */
sl_status sl__peer_statistical_check(const sl_pipeline *pipeline, const sl__peer_batches *kept, bool *agree, char *why,
                                     size_t size, sl_err *err);
/* Compares the peer's batches with the reference's value by value: equal
 * bit for bit, or (tolerance > 0) within tolerance of each value's
 * magnitude as the bench's check does; else why names the first differing
 * batch, field, row, index and both values. */
sl_status sl__peer_values_check(const sl_pipeline *pipeline, const sl__peer_batches *kept, double tolerance,
                                bool *agree, double *worst, char *why, size_t size, sl_err *err);
/* Names the first difference between two batches of the same schema (the
 * peer's and the reference's): field, row, index within the row and both
 * values. False when they are equal (within tolerance). */
bool sl__peer_first_difference(const sl_batch *peer, const sl_batch *reference, double tolerance, double *worst,
                               char *why, size_t size);

/* The folder of the peer scripts: $SLUICE_PEERS_DIR, else <source>/peers. */
const char *sl__peer_dir(void);
/* Where a built-in peer's script is: its absolute path, or its name in the
 * peers folder. */
void sl__peer_script_path(const sl__peer *peer, char *path, size_t size);

/* The registered peers (peers.c): every framework in its tuned form (the
 * plain name) and, where the two differ, its idiomatic form ("-idiomatic"),
 * listed in sl__peers in the order `sluice list` shows them. */
extern const sl__peer *const sl__peers[];
extern const int sl__peer_count;
extern const sl__peer sl__peer_numpy;
extern const sl__peer sl__peer_numpy_idiomatic;
/* Datarax's virtual environment's Python: $SLUICE_DATARAX_PYTHON, else
 * <source>/.venv-datarax/bin/python (made by ci/install-peers.sh). */
const char *sl__peer_datarax_python(void);
/* Hugging Face Datasets and WebDataset, each with a Python of its own:
 * $SLUICE_HF_PYTHON, else <source>/.venv-hf/bin/python, and
 * $SLUICE_WDS_PYTHON, else <source>/.venv-wds/bin/python. */
const char *sl__peer_hf_python(void);
const char *sl__peer_wds_python(void);
/* PyTorch 2's environment (torch peers, LitData, Energon):
 * $SLUICE_TORCH_PYTHON, else <source>/.venv-torch/bin/python. */
const char *sl__peer_torch_python(void);

/* A loader of the user's, `peer:<path to a .py file>` (user_peer.c): an
 * adapter made on first use and kept for the process's life, or NULL with
 * err set when the file cannot be a peer. */
const sl_adapter *sl__user_peer(const char *name, sl_err *err);
/* Whether path names a loader file (a regular file), its absolute path
 * into resolved; else "<path>: no such loader file". `peer:<path>` and
 * `sluice peer-check` both ask it first, so both say the same (D27). */
sl_status sl__peer_loader_file(const char *path, char *resolved, size_t size, sl_err *err);
/* The user's loaders made so far, which the registry lists after the
 * peers. */
int sl__user_peer_count(void);
const sl_adapter *sl__user_peer_at(int index);

#endif

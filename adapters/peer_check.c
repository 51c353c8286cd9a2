/* sluice peer-check: a loader held to the reference batch by batch, with the
 * first difference named (sluice/adapters/peer_check.h). The same export, protocol
 * and checks as a bench run of a peer; the reference batches are made as the
 * peer's arrive, since nothing is timed here. */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "peer.h"
#include "sluice/adapters/peer_check.h"
#include "sluice/core/cleanup.h"
#include "sluice/records/export.h"

typedef struct checker {
    const sl_pipeline *pipeline;
    double tolerance;
    bool statistical;
    sl_batch *reference;
    sl_position position;
    sl__peer_batches kept;
    sl_peer_check_result *out;
    double worst;
    int64_t bytes;
} checker;

static sl_status check_batch(void *user, const sl__peer_batch *b, sl_err *err)
{
    checker *c = user;
    sl_status st = SL_OK;
    for (int f = 0; f < b->view.schema.nfields; f++)
        c->bytes += (int64_t)sl_tensor_nbytes(&b->view.fields[f]);
    if (c->statistical) {
        st = sl__peer_batches_keep(&c->kept, &b->view, err);
    } else if (c->out->first_batch < 0) {
        st = sl_pipeline_produce(c->pipeline, sl_kernels_reference(), c->position, c->reference, err);
        char detail[400];
        if (!st && sl__peer_first_difference(&b->view, c->reference, c->tolerance, &c->worst, detail, sizeof detail)) {
            c->out->first_batch = b->index;
            snprintf(c->out->detail, sizeof c->out->detail, "batch %" PRId64 ": %s", b->index, detail);
        }
    }
    c->position = sl_position_advance(c->pipeline, c->position, 1);
    return st;
}

/* What peer-check runs: a built-in peer by its adapter name (peer:numpy,
 * with its own script, Python and arguments, as the bench runs it), else a
 * loader file, named as a path or as the bench's peer:PATH. */
typedef struct checked_loader {
    char script[PATH_MAX];
    const char *python;
    const char *args;
    sl__peer_kind kind;
} checked_loader;

static sl_status resolve_loader(const char *name, checked_loader *out, sl_err *err)
{
    for (int i = 0; i < sl__peer_count; i++) {
        const sl__peer *peer = sl__peers[i];
        if (strcmp(peer->adapter.name, name) != 0)
            continue;
        sl__peer_script_path(peer, out->script, sizeof out->script);
        out->python = sl__peer_python_of(peer);
        out->args = peer->args ? peer->args : "--workers=0";
        out->kind = peer->kind;
        return SL_OK;
    }
    bool prefixed = strncmp(name, "peer:", 5) == 0;
    const char *path = prefixed ? name + 5 : name;
    out->python = sl__peer_python();
    out->args = "--workers=0";
    out->kind = SL__PEER_PER_BATCH;
    sl_status st = sl__peer_loader_file(path, out->script, sizeof out->script, err);
    if (st && prefixed && !strchr(path, '/'))
        return sl_fail(err, st, "%s is neither a built-in peer (sluice list shows them) nor a loader file", name);
    return st;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The plan, written after the loader's hello as the bench writes it
 * (protocol 3), so that a loader that passes here runs in the bench. */
typedef struct check_plan {
    const sl_pipeline *pipeline;
    int64_t nbatches;
    const char *dir;
} check_plan;

static sl_status write_plan(void *user, sl_err *err)
{
    const check_plan *plan = user;
    sl_export_meta meta = {.kernels = sl_kernels_reference(), .plan_only = true};
    return sl_export_write(plan->pipeline, &meta, plan->nbatches, plan->dir, err);
}

sl_status sl_peer_check(const sl_pipeline *pipeline, const char *script, int64_t nbatches, double tolerance,
                        sl_peer_check_result *out, sl_err *err)
{
    memset(out, 0, sizeof *out);
    out->first_batch = -1;
    out->nbatches = nbatches;
    /* A missing file is said so, as the bench says it, not run and then
     * reported as a loader that crashed. */
    checked_loader loader;
    sl_status st = resolve_loader(script, &loader, err);
    if (st)
        return st;
    char dir[512];
    st = sl_workdir_create(sl_temp_base(), "peer-check", dir, sizeof dir, err);
    if (st)
        return st;
    sl_export_meta meta = {.kernels = sl_kernels_reference(), .data_only = true};
    st = sl_export_write(pipeline, &meta, nbatches, dir, err);
    check_plan plan = {.pipeline = pipeline, .nbatches = nbatches, .dir = dir};
    int64_t *latency = calloc((size_t)nbatches, sizeof *latency);
    int64_t *observed = calloc((size_t)nbatches, sizeof *observed);
    checker c = {.pipeline = pipeline,
                 .tolerance = tolerance,
                 .statistical = !sl_export_decisions_exported(pipeline),
                 .out = out};
    sl__peer_session_result result = {0};
    if (!st && (!latency || !observed))
        st = sl_fail(err, SL_ENOMEM, "no memory for %" PRId64 " batches' times", nbatches);
    if (!st)
        st = sl_batch_create(sl_pipeline_output_schema(pipeline), sl_pipeline_get_spec(pipeline)->batch_size,
                             &c.reference, err);
    if (!st) {
        sl__peer_session_spec spec = {.name = script,
                                      .python = loader.python,
                                      .script = loader.script,
                                      .export_dir = dir,
                                      .args = {loader.args, NULL},
                                      .output = sl_pipeline_output_schema(pipeline),
                                      .rows = sl_pipeline_get_spec(pipeline)->batch_size,
                                      .nbatches = nbatches,
                                      .digest_between = true,
                                      .on_batch = check_batch,
                                      .user = &c,
                                      .reveal = write_plan,
                                      .reveal_user = &plan};
        result = (sl__peer_session_result){.latency_ns = latency, .observed_ns = observed};
        st = sl__peer_session_run(&spec, &result, err);
        snprintf(out->framework, sizeof out->framework, "%s", result.framework);
    }
    if (!st && c.statistical) {
        bool agree = false;
        st = sl__peer_statistical_check(pipeline, &c.kept, &agree, out->detail, sizeof out->detail, err);
        snprintf(out->equivalence, sizeof out->equivalence, "%s", agree ? "statistical" : "mismatch");
    } else if (!st) {
        if (out->first_batch >= 0)
            snprintf(out->equivalence, sizeof out->equivalence, "mismatch");
        else if (c.worst > 0.0) {
            snprintf(out->equivalence, sizeof out->equivalence, "within %.3g", tolerance);
            out->largest_difference = c.worst;
        } else
            snprintf(out->equivalence, sizeof out->equivalence, "bitwise");
    }
    if (!st && nbatches > 1) {
        snprintf(out->timing, sizeof out->timing, "%s",
                 sl__peer_timing_of(loader.kind, &result, nbatches, c.bytes, NULL, NULL));
        qsort(latency + 1, (size_t)(nbatches - 1), sizeof *latency, cmp_i64);
        out->median_latency_ns = (double)latency[1 + (nbatches - 1) / 2];
    }
    sl_batch_free(c.reference);
    sl__peer_batches_free(&c.kept);
    free(latency);
    free(observed);
    sl_workdir_remove(dir);
    return st;
}

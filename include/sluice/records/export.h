/* What a peer loader needs to do a scenario's work: `sluice export` and the
 * peer adapters write it (docs/peers.md describes every file). */
#ifndef SLUICE_EXPORT_H
#define SLUICE_EXPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "sluice/core/folder.h"
#include "sluice/core/status.h"
#include "sluice/kernels/kernels.h"
#include "sluice/pipeline/pipeline.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The version of plan.json; a peer refuses a plan of another version.
 * Version 2 no longer carries the reference's digests: a peer is never
 * handed the answers (docs/peers.md). */
#define SL_EXPORT_VERSION 2

/* Labels the plan carries for people and peers; any may be NULL. */
typedef struct sl_export_meta {
    const char *scenario;
    const char *variant;
    const char *profile;
    int64_t warmup_batches; /* the batches a peer's steady state excludes */
    /* The table the exported batches, digests and decisions are computed
     * with: sl_kernels_reference(), the oracle a peer is held to. */
    const sl_kernel_table *kernels;
    /* The answers, never in dir: when digests is not NULL it receives the
     * reference's XXH3-64 of each of the nbatches batches' canonical bytes
     * (digest.h), which is how the bench holds a peer to the reference
     * without letting it read them; when digests_path is not NULL they are
     * also written there as an i64 .npy (u64 bits), for a user who checks a
     * loader of their own outside sluice. */
    uint64_t *digests;
    const char *digests_path;
    /* Where the export came from, for its manifest; NULL: unknown. */
    const sl_folder_origin *origin;
    /* The source's <field>.npy files are in dir already, from an export of
     * a pipeline over the same source: only the plan (plan.json, the
     * orders, the decisions) and the manifest are written again. The bench
     * writes a plan of a fresh seed for every run of a peer this way,
     * without copying the data again (docs/peers.md, "What is verified"). */
    bool plan_only;
    /* Only the source's <field>.npy files are written: no plan, no
     * manifest. The bench writes these before it starts a peer, and the
     * plan (which its fresh seed keys) with plan_only after the peer's
     * hello, so that no batch can be computed before sluice counts the
     * peer's work (docs/peers.md, "What is verified"). */
    bool data_only;
} sl_export_meta;

/* Writes into dir (created when missing), as flat files: the pipeline
 * source's fields as <field>.npy, order_e<E>.npy (each epoch's element ids
 * in batch order, i64) for every epoch the first nbatches batches from the
 * start of epoch 0 touch, decisions_op<I>_e<E>.npy (i32 [dataset size,
 * columns], indexed by element id) for every op whose per-element random
 * decisions can be exported, decisions_op<I>_batches.npy (f32 [nbatches,
 * columns]) and decisions_op<I>_partners.npy (i32 [nbatches, batch size])
 * for a batch op's per-batch decisions (mixup, cutmix), plan.json, and last
 * the folder's manifest (sluice/core/folder.h, kind "export"), so that a folder
 * with a whole manifest is a whole export. Nothing in dir tells a peer what
 * its output should be: the reference digests go where meta says, never
 * into dir. `sluice export` writes into a staged folder and renames it into
 * place, so an export replaced or interrupted is never a mixture of two. */
sl_status sl_export_write(const sl_pipeline *pipeline, const sl_export_meta *meta, int64_t nbatches, const char *dir,
                          sl_err *err);

/* Whether every random op of the pipeline has its decisions exported (the
 * plan's "decisions_exported"); when not, peers are compared statistically
 * (docs/peers.md, Equivalence). */
bool sl_export_decisions_exported(const sl_pipeline *pipeline);

/* Whether any op of the pipeline draws random numbers. When none does,
 * each element's output is a function of its input row alone, whatever the
 * seed and the order: outputs kept by element, or by a hash of the row,
 * from an earlier run apply to any later run on the same data set. */
bool sl_export_draws(const sl_pipeline *pipeline);

/* The same pipeline with the draws that cannot be exported (gaussian
 * noise's values, dropout's masks) keyed anew by `salt` (> 0), every other
 * op, decision and the element order unchanged: another honest sample of
 * what a peer that draws its own noise produces. */
sl_status sl_export_rekeyed(const sl_pipeline *pipeline, uint32_t salt, sl_pipeline **out, sl_err *err);

#ifdef __cplusplus
}
#endif

#endif

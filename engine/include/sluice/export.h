/* What a peer loader needs to do a scenario's work: `sluice export` and the
 * peer adapters write it (docs/peers.md describes every file). */
#ifndef SLUICE_EXPORT_H
#define SLUICE_EXPORT_H

#include <stdint.h>

#include "sluice/pipeline.h"
#include "sluice/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The version of plan.json; a peer refuses a plan of another version. */
#define SL_EXPORT_VERSION 1

/* Labels the plan carries for people and peers; any may be NULL. */
typedef struct sl_export_meta {
    const char *scenario;
    const char *variant;
    const char *profile;
    int64_t warmup_batches;    /* the batches a peer's steady state excludes */
} sl_export_meta;

/* Writes into dir (created when missing), as flat files: the pipeline
 * source's fields as <field>.npy, order_e<E>.npy (each epoch's element ids
 * in batch order, i64) for every epoch the first nbatches batches from the
 * start of epoch 0 touch, decisions_op<I>_e<E>.npy (i32 [dataset size,
 * columns], indexed by element id) for every op whose per-element random
 * decisions can be exported, decisions_op<I>_batches.npy (f32 [nbatches,
 * columns]) and decisions_op<I>_partners.npy (i32 [nbatches, batch size])
 * for a batch op's per-batch decisions (mixup, cutmix), digests.npy (u64 [nbatches], the reference
 * kernels' XXH3-64 of each batch's canonical bytes, digest.h) and plan.json,
 * written last, so a directory with a plan is complete. */
sl_status sl_export_write(const sl_pipeline *pipeline, const sl_export_meta *meta, int64_t nbatches, const char *dir,
                          sl_err *err);

#ifdef __cplusplus
}
#endif

#endif

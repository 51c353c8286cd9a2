/* Checking a loader of one's own against sluice's reference, batch by batch
 * (`sluice peer-check`, docs/peers.md "Bring your own loader"). */
#ifndef SLUICE_PEER_CHECK_H
#define SLUICE_PEER_CHECK_H

#include <stdbool.h>
#include <stdint.h>

#include "sluice/core/status.h"
#include "sluice/pipeline/pipeline.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sl_peer_check_result {
    int64_t nbatches;
    /* "bitwise", "within <tolerance>", "statistical" or "mismatch". */
    char equivalence[32];
    /* The first batch that differs, -1 when none does. */
    int64_t first_batch;
    /* Where and how it differs: the field, row, index within the row and
     * both values (or the statistic that failed). */
    char detail[512];
    /* Within a tolerance: the largest difference from the reference over
     * every value checked, so a user sees how much of the bound is used. */
    double largest_difference;
    char framework[96];
    /* How its times read (sluice/records/record.h's timing) and its median latency
     * over the batches after the first. */
    char timing[16];
    double median_latency_ns;
} sl_peer_check_result;

/* Runs the Python loader `script` (a file, with $SLUICE_PYTHON, else
 * /usr/bin/python3; or a built-in peer's adapter name such as "peer:numpy",
 * with the Python and arguments the bench gives it) on the pipeline's first nbatches batches under the peer
 * protocol and holds every batch to the reference kernels' (within
 * tolerance when > 0; statistically when the plan's draws are not exported).
 * Fails only when the check could not be made (the loader crashed, hung or
 * broke the protocol: err says how). */
sl_status sl_peer_check(const sl_pipeline *pipeline, const char *script, int64_t nbatches, double tolerance,
                        sl_peer_check_result *out, sl_err *err);

#ifdef __cplusplus
}
#endif

#endif

/* Epoch orders (order.c): the element at each position of an epoch, for
 * the pipeline layer above. */
#ifndef SLUICE_ORDER_ORDER_H
#define SLUICE_ORDER_ORDER_H

#include <stdbool.h>
#include <stdint.h>

#include <xxhash.h>

#include "sluice/kernels/kernels.h"
#include "sluice/pipeline/pipeline.h"

/* The epoch's order, prepared once when the pipeline is built (order.c):
 * the whole-set shuffle, a block shuffle, or a mixture. */
typedef enum sl__order_kind { SL__ORDER_WHOLE = 0, SL__ORDER_BLOCKS, SL__ORDER_MIX } sl__order_kind;

typedef struct sl__order {
    sl__order_kind kind;
    uint64_t seed;
    bool shuffle;
    /* Positions of an epoch before sharding: the rows or packed sequences
     * given at init, or a mixture's epoch length. */
    int64_t dataset_size;
    /* Blocks: block_rows per block, window blocks per window; the last of
     * nblocks blocks has last_rows rows (block_rows when the rows divide). */
    int64_t block_rows;
    int64_t window;
    int64_t nblocks;
    int64_t last_rows;
    /* Mixture: part s holds part_rows[s] rows from first_row[s] of the
     * source, and a position takes it when its draw is below threshold[s]
     * and at or above threshold[s - 1]. per_epoch[s] positions of an epoch
     * take it, and prefix[b * nparts + s] of the positions before 64 b. */
    int nparts;
    int64_t part_rows[SL_MAX_PARTS];
    int64_t first_row[SL_MAX_PARTS];
    uint64_t threshold[SL_MAX_PARTS];
    int64_t per_epoch[SL_MAX_PARTS];
    uint32_t *prefix;
} sl__order;

/* Validates the spec's order (block shuffle, mixture) against the source
 * and prepares it. dataset_size is the positions of an epoch before the
 * order (the source's rows, or its packed sequences when packed); a mixture
 * sets its own epoch length in o->dataset_size. Errors name the spec field. */
sl_status sl__order_init(sl__order *o, const sl_pipeline_spec *spec, const sl_source *source, bool packed,
                         int64_t dataset_size, sl_err *err);
void sl__order_release(sl__order *o);
/* ids[i] = the element at global position first + i * stride of epoch,
 * the whole-set shuffle's by the kernel table's permute_strided (NULL: the
 * portable path, for a single position). */
void sl__order_ids(const sl__order *o, const sl_kernel_table *kernels, int64_t epoch, uint64_t first, uint64_t stride,
                   int64_t count, int64_t *ids);
/* Feeds the order's parameters into a fingerprint; nothing for the
 * whole-set shuffle, whose fingerprint predates the others. */
void sl__order_fingerprint(const sl__order *o, const sl_pipeline_spec *spec, XXH3_state_t *state);

#endif

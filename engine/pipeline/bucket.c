/* Length bucketing in the sampler. A batch's ids are a function of (seed,
 * epoch, batch index) and the lengths alone, like every order in sluice, so
 * workers, prefetch, execution mode and resume points see the same batches.
 *
 * Window w holds the rank-local positions [w W B, (w + 1) W B) of the
 * shuffled epoch (W batches of B), cut at the epoch's end (or at the last
 * full batch with drop_last, so that the rows dropped are the shuffle's,
 * not the longest). Its elements are sorted by length with a counting
 * sort, which keeps equal lengths in shuffled order, and cut into chunks of
 * B. The window's full chunks go to its batches in an order drawn by
 * Fisher-Yates from Philox keyed by (seed, op id), counter (window, epoch);
 * a short last chunk, which only the epoch's last window can have, stays
 * the last batch, where sl_pipeline_batch_rows expects it. Nothing is
 * shared between threads: a caller computing consecutive batches on one
 * thread may keep the last sorted window (sl__bucket_cache, as fused does);
 * any other sorts the window again for each of its batches, which costs
 * about the ids of window_batches batches. */
#include <stdlib.h>
#include <string.h>

#include "pipeline/bucket.h"
#include "pipeline/op_desc.h"
#include "sluice/core/philox.h"
#include "sluice/order/shuffle.h"

/* Which chunk of its window batch k (0-based within the window) takes,
 * among nfull full chunks. */
static int64_t chunk_for(const sl_pipeline *p, const sl__compiled_op *c, int64_t window, int64_t epoch, int64_t k,
                         int64_t nfull, int64_t *order)
{
    if (k >= nfull)
        return k;
    for (int64_t i = 0; i < nfull; i++)
        order[i] = i;
    sl_philox_key key = sl_philox_key_for(p->spec.seed, c->op->op_id);
    sl_philox_ctr r = {{0, 0, 0, 0}};
    for (int64_t i = nfull - 1, n = 0; i > 0; i--, n++) {
        if (n % 4 == 0)
            r = sl_philox4x32_10(sl_philox_ctr_for((uint64_t)window, (uint32_t)epoch, (uint32_t)(n / 4)), key);
        int64_t j = sl_u32_below(r.v[n % 4], (uint32_t)(i + 1));
        int64_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    return order[k];
}

/* Sorts window `window` of the epoch into sorted (room for n ids). */
static sl_status sort_window(const sl_pipeline *p, const sl__bucket_state *state, int64_t epoch, int64_t start,
                             int64_t n, int64_t *sorted, sl_err *err)
{
    int64_t range = (int64_t)state->max_length - state->min_length + 1;
    int64_t *window_ids = malloc((size_t)n * sizeof *window_ids);
    int64_t *counts = calloc((size_t)range + 1, sizeof *counts);
    if (!window_ids || !counts) {
        free(window_ids);
        free(counts);
        return sl_fail(err, SL_ENOMEM, "bucket_by_length: cannot allocate a window of %lld elements", (long long)n);
    }
    sl_permutation perm;
    sl_permutation_init(&perm, (uint64_t)p->dataset_size, p->spec.seed, (uint64_t)epoch, p->spec.shuffle);
    sl_permutation_apply_strided(&perm, sl_shard_global_position(p->spec.shard, (uint64_t)start),
                                 (uint64_t)p->spec.shard.world, n, window_ids);
    /* counts[v + 1] counts length min + v; its prefix sums are where each
     * length's run starts. */
    for (int64_t i = 0; i < n; i++)
        counts[state->lengths[window_ids[i]] - state->min_length + 1]++;
    for (int64_t v = 1; v <= range; v++)
        counts[v] += counts[v - 1];
    for (int64_t i = 0; i < n; i++)
        sorted[counts[state->lengths[window_ids[i]] - state->min_length]++] = window_ids[i];
    free(window_ids);
    free(counts);
    return SL_OK;
}

sl_status sl__bucket_batch_ids(const sl_pipeline *p, sl_position position, int64_t *ids, sl__bucket_cache *cache,
                               sl_err *err)
{
    const sl__compiled_op *c = p->bucket;
    const sl__bucket_state *state = c->state;
    int64_t bs = p->spec.batch_size, per_window = state->window_batches;
    int64_t window = position.batch / per_window;
    int64_t start = window * per_window * bs;
    int64_t limit = p->spec.drop_last ? p->batches_per_epoch * bs : p->epoch_size;
    int64_t end = start + per_window * bs < limit ? start + per_window * bs : limit;
    int64_t n = end - start;

    int64_t *order = malloc((size_t)per_window * sizeof *order);
    int64_t *sorted = NULL, *owned = NULL;
    sl_status st = SL_OK;
    if (!order) {
        st = sl_fail(err, SL_ENOMEM, "bucket_by_length: cannot allocate a window order of %lld batches",
                     (long long)per_window);
        goto done;
    }
    if (cache && cache->filled && cache->epoch == position.epoch && cache->window == window) {
        sorted = cache->sorted;
    } else {
        if (cache && !cache->sorted)
            cache->sorted = malloc((size_t)(per_window * bs) * sizeof *cache->sorted);
        sorted = cache ? cache->sorted : (owned = malloc((size_t)n * sizeof *owned));
        if (!sorted) {
            st = sl_fail(err, SL_ENOMEM, "bucket_by_length: cannot allocate a window of %lld elements", (long long)n);
            goto done;
        }
        if (cache)
            cache->filled = false;
        st = sort_window(p, state, position.epoch, start, n, sorted, err);
        if (st)
            goto done;
        if (cache)
            *cache = (sl__bucket_cache){true, position.epoch, window, n, cache->sorted};
    }
    int64_t k = position.batch - window * per_window;
    int64_t chunk = chunk_for(p, c, window, position.epoch, k, n / bs, order);
    int64_t first = chunk * bs;
    int64_t rows = n - first < bs ? n - first : bs;
    memcpy(ids, sorted + first, (size_t)rows * sizeof *ids);
done:
    free(order);
    free(owned);
    return st;
}

void sl__bucket_cache_release(sl__bucket_cache *cache)
{
    free(cache->sorted);
    *cache = (sl__bucket_cache){0};
}

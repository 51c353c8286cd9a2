/* Epoch orders: the element at each position of an epoch. Three kinds, all
 * stateless functions of (seed, epoch, position) that compute any position
 * alone (DESIGN.md invariant 2):
 *
 * - the whole-set shuffle: one keyed Feistel permutation of [0, n);
 * - the block shuffle (IO-2): blocks of consecutive rows in a keyed order,
 *   windows of consecutive blocks of that order, and a keyed order of the
 *   rows inside each window, so that a streaming source needs only a
 *   window's blocks at a time;
 * - the mixture (IO-3): a keyed draw per position chooses a part of a
 *   concatenated source, and the k-th position that chooses part s gets the
 *   k-th element of part s's own endless stream of passes.
 *
 * Sharding takes global positions r, r + W, ... of whichever order, so the
 * global order never depends on the world size. */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "order/order.h"
#include "sluice/core/philox.h"
#include "sluice/kernels/kernels.h"
#include "sluice/order/shuffle.h"
#include "sluice/source/source.h"

/* Positions per entry of the mixture's prefix counts. */
#define MIX_BLOCK      64
#define MIX_WEIGHT_MAX ((uint32_t)1 << 24)
/* An epoch's count for a part times the epoch (< 2^32) must stay below
 * 2^63, so a mixture's epoch is shorter than 2^31 positions. */
#define MIX_LENGTH_MAX ((int64_t)1 << 31)

/* ---- Block shuffle ------------------------------------------------------ */

static sl_status init_blocks(sl__order *o, const sl_pipeline_spec *spec, bool packed, sl_err *err)
{
    const sl_block_shuffle *b = &spec->blocks;
    if (b->rows < 0)
        return sl_fail(err, SL_EINVAL, "spec.blocks.rows must not be negative, got %lld", (long long)b->rows);
    if (b->rows == 0) {
        if (b->window != 0)
            return sl_fail(err, SL_EINVAL, "spec.blocks.window is %lld but spec.blocks.rows is 0 (no block shuffle)",
                           (long long)b->window);
        return SL_OK;
    }
    if (b->window < 1)
        return sl_fail(err, SL_EINVAL, "spec.blocks.window must be at least 1 block, got %lld", (long long)b->window);
    if (packed)
        return sl_fail(
            err, SL_EINVAL,
            "spec.blocks orders rows, but token packing makes sequences of the stream; use one or the other");
    int64_t n = o->dataset_size;
    o->block_rows = b->rows;
    o->nblocks = n == 0 ? 0 : (n - 1) / b->rows + 1;
    /* A window of every block is one window whatever its nominal size, and
     * capping it keeps window x rows from overflowing. */
    o->window = b->window < o->nblocks ? b->window : (o->nblocks > 0 ? o->nblocks : 1);
    o->last_rows = n - (o->nblocks - 1) * b->rows;
    if ((o->nblocks - 1) / o->window >= (int64_t)UINT32_MAX)
        return sl_fail(err, SL_EINVAL, "spec.blocks makes more than 2^32 windows; use larger blocks or windows");
    if (spec->shuffle && n > 1)
        o->kind = SL__ORDER_BLOCKS;
    return SL_OK;
}

typedef struct block_epoch {
    sl_permutation blocks; /* slot -> block */
    int64_t short_slot;    /* slot of the short last block, or -1 */
    int64_t short_window;
    int64_t deficit;     /* rows the short block lacks */
    int64_t window_rows; /* rows of a full window */
} block_epoch;

static int64_t window_start(const block_epoch *be, int64_t w)
{
    return w * be->window_rows - (be->short_slot >= 0 && w > be->short_window ? be->deficit : 0);
}

static int64_t window_size(const sl__order *o, const block_epoch *be, int64_t w)
{
    int64_t blocks = o->nblocks - w * o->window;
    if (blocks > o->window)
        blocks = o->window;
    return blocks * o->block_rows - (w == be->short_window ? be->deficit : 0);
}

static void block_ids(const sl__order *o, int64_t epoch, uint64_t first, uint64_t stride, int64_t count, int64_t *ids)
{
    const int64_t rows = o->block_rows;
    block_epoch be = {
        .short_slot = -1, .short_window = -1, .deficit = rows - o->last_rows, .window_rows = o->window * rows};
    sl_permutation_init_keyed(&be.blocks, (uint64_t)o->nblocks, o->seed, SL_STREAM_SHUFFLE, (uint64_t)epoch, 0, true);
    /* Windows after the one holding the short block start earlier by what
     * it lacks, so finding a position's window needs that block's slot. */
    if (be.deficit > 0) {
        be.short_slot = (int64_t)sl_permutation_invert(&be.blocks, (uint64_t)(o->nblocks - 1));
        be.short_window = be.short_slot / o->window;
    }
    int64_t cached = -1, start = 0;
    sl_permutation inside;
    for (int64_t i = 0; i < count; i++) {
        int64_t position = (int64_t)(first + (uint64_t)i * stride);
        int64_t w = position / be.window_rows;
        if (position - window_start(&be, w) >= window_size(o, &be, w))
            w++;
        if (w != cached) {
            cached = w;
            start = window_start(&be, w);
            sl_permutation_init_keyed(&inside, (uint64_t)window_size(o, &be, w), o->seed, SL_STREAM_BLOCK_WINDOW,
                                      (uint64_t)epoch, (uint32_t)w, true);
        }
        int64_t q = (int64_t)sl_permutation_apply(&inside, (uint64_t)(position - start));
        /* The window's rows are its blocks' rows in slot order; the short
         * block, if it is here, holds fewer. */
        int64_t k, row;
        int64_t short_local = w == be.short_window ? be.short_slot - w * o->window : -1;
        if (short_local < 0 || q < short_local * rows) {
            k = q / rows;
            row = q % rows;
        } else if (q - short_local * rows < o->last_rows) {
            k = short_local;
            row = q - short_local * rows;
        } else {
            int64_t after = q - short_local * rows - o->last_rows;
            k = short_local + 1 + after / rows;
            row = after % rows;
        }
        ids[i] = (int64_t)sl_permutation_apply(&be.blocks, (uint64_t)(w * o->window + k)) * rows + row;
    }
}

/* ---- Mixture ------------------------------------------------------------ */

/* The 32-bit draw of a position: one Philox block serves four positions. */
typedef struct mix_draws {
    sl_philox_key key;
    uint64_t block; /* position / 4 of ctr, or UINT64_MAX */
    sl_philox_ctr ctr;
} mix_draws;

static uint32_t mix_word(mix_draws *d, uint64_t position)
{
    if (position / 4 != d->block) {
        d->block = position / 4;
        d->ctr = sl_philox4x32_10(sl_philox_ctr_for(d->block, 0, 0), d->key);
    }
    return d->ctr.v[position % 4];
}

static int mix_part(const sl__order *o, uint32_t word)
{
    int s = 0;
    while (word >= o->threshold[s])
        s++;
    return s;
}

static mix_draws mix_draws_for(const sl__order *o)
{
    return (mix_draws){sl_philox_key_for(o->seed, SL_STREAM_MIX_CHOICE), UINT64_MAX, {{0}}};
}

static sl_status init_mix(sl__order *o, const sl_pipeline_spec *spec, const sl_source *source, bool packed, sl_err *err)
{
    const sl_mixture *m = &spec->mix;
    if (m->nparts == 0) {
        if (m->epoch_length != 0)
            return sl_fail(err, SL_EINVAL, "spec.mix.epoch_length is %lld but spec.mix.nparts is 0 (no mixture)",
                           (long long)m->epoch_length);
        return SL_OK;
    }
    if (spec->blocks.rows != 0)
        return sl_fail(err, SL_EINVAL, "spec.mix and spec.blocks are exclusive: a mixture orders each part itself");
    if (packed)
        return sl_fail(
            err, SL_EINVAL,
            "spec.mix interleaves rows, but token packing makes sequences of the stream; use one or the other");
    int64_t rows[SL_MAX_PARTS];
    int nparts = sl_source_parts(source, rows, SL_MAX_PARTS);
    if (m->nparts != nparts)
        return sl_fail(err, SL_EINVAL,
                       "spec.mix.nparts is %d but the source has %d part%s (a mixture interleaves the parts of a "
                       "concatenation)",
                       m->nparts, nparts, nparts == 1 ? "" : "s");
    uint64_t total = 0;
    for (int s = 0; s < nparts; s++) {
        if (m->weights[s] < 1 || m->weights[s] > MIX_WEIGHT_MAX)
            return sl_fail(err, SL_EINVAL, "spec.mix.weights[%d] is %u; weights are 1 to 2^24", s, m->weights[s]);
        if (rows[s] < 1)
            return sl_fail(err, SL_EINVAL, "part %d of the mixture has no rows to draw", s);
        total += m->weights[s];
    }
    int64_t length = m->epoch_length > 0 ? m->epoch_length : sl_source_rows(source);
    if (m->epoch_length < 0 || length >= MIX_LENGTH_MAX)
        return sl_fail(err, SL_EINVAL, "spec.mix.epoch_length is %lld; a mixture's epoch is 1 to 2^31 - 1 positions",
                       (long long)(m->epoch_length < 0 ? m->epoch_length : length));
    /* Exact integer thresholds: part s takes the draws in
     * [2^32 cum(s - 1) / total, 2^32 cum(s) / total), the same on every
     * machine. cum <= 2^27, so the shift cannot overflow. */
    uint64_t cumulative = 0;
    int64_t first = 0;
    for (int s = 0; s < nparts; s++) {
        cumulative += m->weights[s];
        o->threshold[s] = (cumulative << 32) / total;
        o->part_rows[s] = rows[s];
        o->first_row[s] = first;
        first += rows[s];
    }
    o->nparts = nparts;
    size_t entries = (size_t)(length / MIX_BLOCK + 1) * (size_t)nparts;
    o->prefix = calloc(entries, sizeof *o->prefix);
    if (!o->prefix)
        return sl_fail(err, SL_ENOMEM, "cannot allocate the mixture's %zu prefix counts", entries);
    /* One pass over the epoch's draws: the counts before every 64th
     * position, and the epoch's total per part. */
    mix_draws draws = mix_draws_for(o);
    int64_t counts[SL_MAX_PARTS] = {0};
    for (int64_t q = 0; q < length; q++) {
        if (q % MIX_BLOCK == 0)
            for (int s = 0; s < nparts; s++)
                o->prefix[(size_t)(q / MIX_BLOCK) * (size_t)nparts + (size_t)s] = (uint32_t)counts[s];
        counts[mix_part(o, mix_word(&draws, (uint64_t)q))]++;
    }
    memcpy(o->per_epoch, counts, sizeof counts);
    o->kind = SL__ORDER_MIX;
    o->dataset_size = length;
    return SL_OK;
}

/* The positions of [0, position) that chose part s, from the prefix count
 * of its 64-position block and the draws before it in the block. */
static int64_t mix_rank(const sl__order *o, mix_draws *draws, int64_t position, int s)
{
    int64_t block = position / MIX_BLOCK;
    int64_t rank = o->prefix[(size_t)block * (size_t)o->nparts + (size_t)s];
    for (int64_t q = block * MIX_BLOCK; q < position; q++)
        rank += mix_part(o, mix_word(draws, (uint64_t)q)) == s;
    return rank;
}

/* Each part's order for the pass in use, kept across a call's positions. */
typedef struct part_orders {
    int64_t pass[SL_MAX_PARTS];
    sl_permutation perm[SL_MAX_PARTS];
} part_orders;

/* Element k of part s's stream: pass k / rows, in that pass's own order. */
static int64_t mix_element(const sl__order *o, part_orders *orders, int s, int64_t epoch, int64_t rank)
{
    int64_t k = epoch * o->per_epoch[s] + rank;
    int64_t pass = k / o->part_rows[s];
    if (orders->pass[s] != pass) {
        orders->pass[s] = pass;
        sl_permutation_init_keyed(&orders->perm[s], (uint64_t)o->part_rows[s], o->seed,
                                  SL_STREAM_MIX_PART + (uint64_t)s, (uint64_t)pass & UINT32_MAX,
                                  (uint32_t)((uint64_t)pass >> 32), o->shuffle);
    }
    return o->first_row[s] + (int64_t)sl_permutation_apply(&orders->perm[s], (uint64_t)(k % o->part_rows[s]));
}

static void mix_ids(const sl__order *o, int64_t epoch, uint64_t first, uint64_t stride, int64_t count, int64_t *ids)
{
    mix_draws draws = mix_draws_for(o);
    part_orders orders;
    for (int s = 0; s < o->nparts; s++)
        orders.pass[s] = -1;
    if (stride != 1) {
        /* A shard's positions are far apart: rank each one alone. */
        for (int64_t i = 0; i < count; i++) {
            int64_t position = (int64_t)(first + (uint64_t)i * stride);
            int s = mix_part(o, mix_word(&draws, (uint64_t)position));
            ids[i] = mix_element(o, &orders, s, epoch, mix_rank(o, &draws, position, s));
        }
        return;
    }
    /* Consecutive positions: rank the first for every part, then count. */
    int64_t rank[SL_MAX_PARTS];
    for (int s = 0; s < o->nparts; s++)
        rank[s] = mix_rank(o, &draws, (int64_t)first, s);
    for (int64_t i = 0; i < count; i++) {
        int s = mix_part(o, mix_word(&draws, first + (uint64_t)i));
        ids[i] = mix_element(o, &orders, s, epoch, rank[s]++);
    }
}

/* ---- Dispatch ----------------------------------------------------------- */

sl_status sl__order_init(sl__order *o, const sl_pipeline_spec *spec, const sl_source *source, bool packed,
                         int64_t dataset_size, sl_err *err)
{
    memset(o, 0, sizeof *o);
    o->kind = SL__ORDER_WHOLE;
    o->seed = spec->seed;
    o->shuffle = spec->shuffle;
    o->dataset_size = dataset_size;
    sl_status st = init_blocks(o, spec, packed, err);
    if (st == SL_OK)
        st = init_mix(o, spec, source, packed, err);
    return st;
}

void sl__order_release(sl__order *o)
{
    free(o->prefix);
    o->prefix = NULL;
}

/* An epoch's permutation takes five Philox blocks to key, as much as the
 * ids of a small batch (NLP-1's 32 rows), and every batch of the epoch
 * needs the same one. Each thread keeps the last one it keyed. The key of
 * the memo is every input of sl_permutation_init, so a hit returns exactly
 * what keying afresh would: the ids cannot depend on which thread computed
 * them or what it computed before. */
static const sl_permutation *epoch_permutation(const sl__order *o, int64_t epoch)
{
    static _Thread_local struct {
        bool valid;
        uint64_t n, seed, epoch;
        bool shuffle;
        sl_permutation perm;
    } memo;
    uint64_t n = (uint64_t)o->dataset_size;
    if (!memo.valid || memo.n != n || memo.seed != o->seed || memo.epoch != (uint64_t)epoch ||
        memo.shuffle != o->shuffle) {
        sl_permutation_init(&memo.perm, n, o->seed, (uint64_t)epoch, o->shuffle);
        memo.n = n;
        memo.seed = o->seed;
        memo.epoch = (uint64_t)epoch;
        memo.shuffle = o->shuffle;
        memo.valid = true;
    }
    return &memo.perm;
}

void sl__order_ids(const sl__order *o, const sl_kernel_table *kernels, int64_t epoch, uint64_t first, uint64_t stride,
                   int64_t count, int64_t *ids)
{
    switch (o->kind) {
    case SL__ORDER_BLOCKS: block_ids(o, epoch, first, stride, count, ids); return;
    case SL__ORDER_MIX: mix_ids(o, epoch, first, stride, count, ids); return;
    case SL__ORDER_WHOLE: break;
    }
    const sl_permutation *perm = epoch_permutation(o, epoch);
    if (kernels)
        kernels->permute_strided(perm, first, stride, count, ids);
    else
        sl_permutation_apply_strided(perm, first, stride, count, ids);
}

void sl__order_fingerprint(const sl__order *o, const sl_pipeline_spec *spec, XXH3_state_t *state)
{
    if (spec->blocks.rows != 0) {
        static const char tag[] = "blocks";
        int64_t values[2] = {spec->blocks.rows, spec->blocks.window};
        XXH3_64bits_update(state, tag, sizeof tag);
        XXH3_64bits_update(state, values, sizeof values);
    }
    if (spec->mix.nparts != 0) {
        static const char tag[] = "mix";
        XXH3_64bits_update(state, tag, sizeof tag);
        int64_t values[2 + 2 * SL_MAX_PARTS] = {o->nparts, o->dataset_size};
        for (int s = 0; s < o->nparts; s++) {
            values[2 + 2 * s] = spec->mix.weights[s];
            values[3 + 2 * s] = o->part_rows[s];
        }
        XXH3_64bits_update(state, values, sizeof values);
    }
}

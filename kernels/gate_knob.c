/* The gate's test knob, for measuring what the performance gate detects
 * (docs/gate.md). Built into every library but active only in a build
 * configured with -Dgate_knob=true, and then only when asked, by
 * environment variables read once when the tables are filled:
 *   - SLUICE_TEST_KERNEL_WORK_PCT=P repeats the normalize kernels of every
 *     optimized CPU table over the first P percent of each call's pixels:
 *     P percent more real work of the same instructions and memory access
 *     (the repeated part is in cache, so its time grows by up to P
 *     percent), which is what a real slowdown of one kernel looks like to
 *     both of the gate's signals, unlike a spin or a stretched sample;
 *   - SLUICE_TEST_KERNEL_REFACTOR=1 calls the same kernels through one
 *     more call level, a function that only forwards (as a helper that was
 *     inlined and no longer is): the code's shape changes, its work does
 *     not, a harmless refactor the gate must not flag;
 *     SLUICE_TEST_KERNEL_REFACTOR=2 also splits each call in two halves
 *     (two loop prologues and remainders where there was one), a refactor
 *     that adds a little per-call work.
 * The output is unchanged either way (the repeated pixels are written with
 * the same values), so every equivalence check still holds. The reference
 * table, the oracle, is never wrapped. */
#include <stdlib.h>

#include "gate_knob.h"
#include "sluice_config.h"

#if SLUICE_GATE_KNOB
/* The wrapped kernels, per table: a function pointer cannot carry its
 * table, so each table has its own wrappers reading its own originals. */
static sl_normalize_u8_fn original_u8[SL_TABLE_COUNT];
static sl_normalize_f32_fn original_f32[SL_TABLE_COUNT];
static double work_fraction;
static bool wrapped;
static bool split_calls;

static int64_t extra_pixels(int64_t pixels)
{
    return (int64_t)((double)pixels * work_fraction + 0.5);
}

#define KNOB_WRAPPERS(id)                                                                                              \
    static void normalize_u8_##id(const uint8_t *src, float *dst, int64_t pixels, const sl_normalize_consts *k)        \
    {                                                                                                                  \
        if (split_calls && pixels > 1) {                                                                               \
            int64_t half = pixels / 2;                                                                                 \
            original_u8[id](src, dst, half, k);                                                                        \
            original_u8[id](src + half * k->channels, dst + half * k->channels, pixels - half, k);                     \
        } else {                                                                                                       \
            original_u8[id](src, dst, pixels, k);                                                                      \
        }                                                                                                              \
        if (work_fraction > 0.0)                                                                                       \
            original_u8[id](src, dst, extra_pixels(pixels), k);                                                        \
    }                                                                                                                  \
    static void normalize_f32_##id(const float *src, float *dst, int64_t pixels, const sl_normalize_consts *k)         \
    {                                                                                                                  \
        if (split_calls && pixels > 1) {                                                                               \
            int64_t half = pixels / 2;                                                                                 \
            original_f32[id](src, dst, half, k);                                                                       \
            original_f32[id](src + half * k->channels, dst + half * k->channels, pixels - half, k);                    \
        } else {                                                                                                       \
            original_f32[id](src, dst, pixels, k);                                                                     \
        }                                                                                                              \
        /* In place, a second pass would normalize its own output. */                                                  \
        if (work_fraction > 0.0 && src != dst)                                                                         \
            original_f32[id](src, dst, extra_pixels(pixels), k);                                                       \
    }

/* The harmless refactor: forwarding, nothing else on the path. */
#define FORWARDERS(id)                                                                                                 \
    static void forward_u8_##id(const uint8_t *src, float *dst, int64_t pixels, const sl_normalize_consts *k)          \
    {                                                                                                                  \
        original_u8[id](src, dst, pixels, k);                                                                          \
    }                                                                                                                  \
    static void forward_f32_##id(const float *src, float *dst, int64_t pixels, const sl_normalize_consts *k)           \
    {                                                                                                                  \
        original_f32[id](src, dst, pixels, k);                                                                         \
    }

KNOB_WRAPPERS(1)
KNOB_WRAPPERS(2)
KNOB_WRAPPERS(3)
KNOB_WRAPPERS(4)
FORWARDERS(1)
FORWARDERS(2)
FORWARDERS(3)
FORWARDERS(4)

static void wrap(sl_kernel_table *table, sl_normalize_u8_fn u8, sl_normalize_f32_fn f32)
{
    original_u8[table->id] = table->normalize_u8;
    original_f32[table->id] = table->normalize_f32;
    table->normalize_u8 = u8;
    table->normalize_f32 = f32;
}

void sl__gate_knob_apply(sl_kernel_table *tables, int count)
{
    _Static_assert(SL_TABLE_GENERIC == 1 && SL_TABLE_AVX2 == 2 && SL_TABLE_AVX512_256 == 3 && SL_TABLE_AVX512 == 4,
                   "the wrappers above are numbered by table id");
    const char *work = getenv("SLUICE_TEST_KERNEL_WORK_PCT");
    const char *refactor = getenv("SLUICE_TEST_KERNEL_REFACTOR");
    double pct = work ? strtod(work, NULL) : 0.0;
    work_fraction = pct > 0.0 && pct <= 100.0 ? pct / 100.0 : 0.0;
    wrapped = refactor && (refactor[0] == '1' || refactor[0] == '2');
    split_calls = refactor && refactor[0] == '2';
    if (work_fraction == 0.0 && !wrapped)
        return;
    /* Only forwarding is the refactor of level 1; extra work or split
     * calls take the full wrappers. */
    bool forward_only = work_fraction == 0.0 && !split_calls;
    for (int i = 0; i < count; i++) {
        if (tables[i].id == SL_TABLE_GENERIC)
            wrap(&tables[i], forward_only ? forward_u8_1 : normalize_u8_1,
                 forward_only ? forward_f32_1 : normalize_f32_1);
        else if (tables[i].id == SL_TABLE_AVX2)
            wrap(&tables[i], forward_only ? forward_u8_2 : normalize_u8_2,
                 forward_only ? forward_f32_2 : normalize_f32_2);
        else if (tables[i].id == SL_TABLE_AVX512_256)
            wrap(&tables[i], forward_only ? forward_u8_3 : normalize_u8_3,
                 forward_only ? forward_f32_3 : normalize_f32_3);
        else if (tables[i].id == SL_TABLE_AVX512)
            wrap(&tables[i], forward_only ? forward_u8_4 : normalize_u8_4,
                 forward_only ? forward_f32_4 : normalize_f32_4);
    }
}
#else
void sl__gate_knob_apply(sl_kernel_table *tables, int count)
{
    (void)tables;
    (void)count;
}
#endif

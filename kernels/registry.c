/* The named kernel tables. Each is filled reference-first, then its own
 * optimized entries override, so an op without an optimized version runs
 * the reference. Which table stands behind SL_KERNELS_BEST is the fastest
 * one this CPU supports, unless SLUICE_KERNELS or sl_kernels_select names
 * another: the way tests and audits run the generic kernels on a machine
 * that has AVX2, and the way a user rules a table out. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cpu/cpu.h"
#include "ref/ref.h"
#include "sluice/kernels.h"

static void fill_reference(sl_kernel_table *table)
{
    table->name = "reference";
    table->normalize_u8 = sl__ref_normalize_u8;
    table->normalize_f32 = sl__ref_normalize_f32;
    table->ew_chain = sl__ref_ew_chain;
    table->crop_pad = sl__ref_crop_pad;
    table->hflip = sl__ref_hflip;
    table->pack = sl__ref_pack;
    table->moments = sl__ref_moments;
    table->channel_moments = sl__ref_channel_moments;
    table->crop3d = sl__ref_crop3d;
    table->flip3d = sl__ref_flip3d;
    table->one_hot = sl__ref_one_hot;
    table->blend = sl__ref_blend;
    table->paste_box = sl__ref_paste_box;
    table->resize_u8 = sl__ref_resize_u8;
    table->resize_f32 = sl__ref_resize_f32;
    table->log_mel = sl__ref_log_mel;
    table->trig_rounds = sl__ref_trig_rounds;
    table->log1p = sl__ref_log1p;
    table->hash_ids = sl__ref_hash_ids;
    table->bag_offsets = sl__ref_bag_offsets;
    table->pad_rows = sl__ref_pad_rows;
    table->length_mask = sl__ref_length_mask;
    table->affine_f32 = sl__ref_affine_f32;
    table->dropout = sl__ref_dropout;
    table->mul_channels = sl__ref_mul_channels;
    table->affine_grads = sl__ref_affine_grads;
    table->rot90 = sl__ref_rot90;
}

/* The arithmetic kernels of one instruction set: each file's fill for it. */
#define ISA_FILLS(isa)                                                                                                \
    {                                                                                                                 \
        sl__cpu_normalize_##isa, sl__cpu_elementwise_##isa, sl__cpu_moments_##isa, sl__cpu_blend_##isa,               \
            sl__cpu_resize_##isa, sl__cpu_trig_rounds_##isa, sl__cpu_log1p_##isa, sl__cpu_affine_##isa,              \
            sl__cpu_dropout_##isa                                                                                     \
    }
#define NFILLS 9

/* The optimized entries shared by every CPU table, then the arithmetic of
 * one instruction set. */
static void fill_cpu(sl_kernel_table *table, const char *name, const sl_cpu_variant_fill fills[NFILLS])
{
    sl_cpu_variant arith = {0};
    fill_reference(table);
    table->name = name;
    for (int i = 0; i < NFILLS; i++)
        fills[i](&arith);
    table->normalize_u8 = arith.normalize_u8;
    table->normalize_f32 = arith.normalize_f32;
    table->ew_chain = arith.ew_chain;
    table->moments = arith.moments;
    table->channel_moments = arith.channel_moments;
    table->blend = arith.blend;
    table->affine_f32 = arith.affine_f32;
    table->dropout = arith.dropout;
    table->crop_pad = sl__cpu_crop_pad;
    table->hflip = sl__cpu_hflip;
    table->pack = sl__cpu_pack;
    table->crop3d = sl__cpu_crop3d;
    table->flip3d = sl__cpu_flip3d;
    table->paste_box = sl__cpu_paste_box;
    table->resize_u8 = arith.resize_u8;
    table->resize_f32 = arith.resize_f32;
    table->trig_rounds = arith.trig_rounds;
    sl__cpu_log_mel(&table->log_mel);
    table->log1p = arith.log1p;
    table->hash_ids = sl__cpu_hash_ids;
    table->pad_rows = sl__cpu_pad_rows;
    table->length_mask = sl__cpu_length_mask;
    table->rot90 = sl__cpu_rot90;
}

static void fill_generic(sl_kernel_table *table)
{
    static const sl_cpu_variant_fill fills[NFILLS] = ISA_FILLS(generic);
    fill_cpu(table, "cpu-generic", fills);
}

static void fill_avx2(sl_kernel_table *table)
{
    static const sl_cpu_variant_fill fills[NFILLS] = ISA_FILLS(avx2);
    fill_cpu(table, "cpu-avx2", fills);
}

static void fill_avx512(sl_kernel_table *table)
{
    static const sl_cpu_variant_fill fills[NFILLS] = ISA_FILLS(avx512);
    fill_cpu(table, "cpu-avx512", fills);
}

static bool cpu_has(const char *feature, char *reason, size_t size)
{
#if SL_HAVE_AVX2_CLONES
    __builtin_cpu_init();
    bool has = strcmp(feature, "avx2") == 0      ? __builtin_cpu_supports("avx2")
               : strcmp(feature, "avx512") == 0 ? __builtin_cpu_supports("avx512f") &&
                                                       __builtin_cpu_supports("avx512bw") &&
                                                       __builtin_cpu_supports("avx512vl")
                                                 : false;
    if (!has && reason && size)
        snprintf(reason, size, "this CPU lacks %s", strcmp(feature, "avx512") == 0 ? "AVX-512 F/BW/VL" : "AVX2");
    return has;
#else
    if (reason && size)
        snprintf(reason, size, "%s instances are built only for x86-64 with GCC or Clang", feature);
    return false;
#endif
}

static bool has_avx2(char *reason, size_t size)
{
    return cpu_has("avx2", reason, size);
}

static bool has_avx512(char *reason, size_t size)
{
    return cpu_has("avx512", reason, size);
}

/* Slowest first: the best supported table is the last supported one.
 * Adding a table (a CUDA back end's host mirror, another ISA) is one line. */
static const struct {
    void (*fill)(sl_kernel_table *table);
    bool (*supported)(char *reason, size_t size);
} entries[] = {
    {fill_reference, NULL},
    {fill_generic, NULL},
    {fill_avx2, has_avx2},
    {fill_avx512, has_avx512},
};
#define NTABLES ((int)(sizeof entries / sizeof entries[0]))

static sl_kernel_table tables[NTABLES];
static int best_supported;
static _Atomic(const sl_kernel_table *) selected;
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static void fill_tables(void)
{
    for (int i = 0; i < NTABLES; i++) {
        entries[i].fill(&tables[i]);
        if (!entries[i].supported || entries[i].supported(NULL, 0))
            best_supported = i;
    }
    /* An environment choice that names no usable table is ignored here; the
     * sluice command checks SLUICE_KERNELS first and refuses it by name. */
    const char *env = getenv("SLUICE_KERNELS");
    const sl_kernel_table *chosen = &tables[best_supported];
    if (env && *env) {
        for (int i = 0; i < NTABLES; i++)
            if (strcasecmp(env, tables[i].name) == 0 && (!entries[i].supported || entries[i].supported(NULL, 0)))
                chosen = &tables[i];
    }
    atomic_store(&selected, chosen);
}

int sl_kernel_table_count(void)
{
    pthread_once(&tables_once, fill_tables);
    return NTABLES;
}

const sl_kernel_table *sl_kernel_table_at(int index)
{
    pthread_once(&tables_once, fill_tables);
    return index >= 0 && index < NTABLES ? &tables[index] : NULL;
}

bool sl_kernel_table_supported(const sl_kernel_table *table, char *reason, size_t size)
{
    pthread_once(&tables_once, fill_tables);
    for (int i = 0; i < NTABLES; i++)
        if (table == &tables[i])
            return !entries[i].supported || entries[i].supported(reason, size);
    if (reason && size)
        snprintf(reason, size, "not a registered kernel table");
    return false;
}

const sl_kernel_table *sl_kernels_find(const char *name)
{
    pthread_once(&tables_once, fill_tables);
    for (int i = 0; i < NTABLES; i++)
        if (strcasecmp(name, tables[i].name) == 0)
            return &tables[i];
    return NULL;
}

sl_status sl_kernels_select(const char *name, sl_err *err)
{
    const sl_kernel_table *table = sl_kernels_find(name);
    if (!table) {
        char names[160] = "";
        for (int i = 0; i < NTABLES; i++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "", tables[i].name);
        return sl_fail(err, SL_ENOTFOUND, "unknown kernel table '%s'; the tables are %s", name, names);
    }
    char reason[128];
    if (!sl_kernel_table_supported(table, reason, sizeof reason))
        return sl_fail(err, SL_EUNSUPPORTED, "kernel table '%s' cannot run here: %s", table->name, reason);
    atomic_store(&selected, table);
    return SL_OK;
}

const sl_kernel_table *sl_kernels_reference(void)
{
    pthread_once(&tables_once, fill_tables);
    return &tables[0];
}

const sl_kernel_table *sl_kernels_best(void)
{
    pthread_once(&tables_once, fill_tables);
    return atomic_load(&selected);
}

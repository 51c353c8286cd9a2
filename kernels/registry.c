/* The named kernel tables. Each is filled reference-first, then its own
 * optimized entries override, so an op without an optimized version runs
 * the reference. The registry holds no choice: sl_kernels_choose returns a
 * table, and its caller hands it down as a value. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "cpu/cpu.h"
#include "gate_knob.h"
#include "ref/ref.h"
#include "sluice/kernels/kernels.h"
#include "sluice_config.h"

static const char *const entry_names[SL_KERNEL_ENTRY_COUNT] = {
#define SL__ENTRY_NAME(entry) #entry,
    SL_KERNEL_ENTRIES(SL__ENTRY_NAME)
#undef SL__ENTRY_NAME
};

const char *sl_kernel_entry_name(int entry)
{
    return entry >= 0 && entry < SL_KERNEL_ENTRY_COUNT ? entry_names[entry] : NULL;
}

int sl_kernel_entry_count(void)
{
    return SL_KERNEL_ENTRY_COUNT;
}

int sl_kernel_entry_find(const char *name)
{
    for (int e = 0; name && e < SL_KERNEL_ENTRY_COUNT; e++)
        if (strcasecmp(name, entry_names[e]) == 0)
            return e;
    return -1;
}

/* A registered table's entries are all its own. */
static void set_origin(sl_kernel_table *table)
{
    for (int e = 0; e < SL_KERNEL_ENTRY_COUNT; e++)
        table->origin[e] = table->id;
}

static void fill_reference(sl_kernel_table *table)
{
    table->name = "reference";
    table->id = SL_TABLE_REFERENCE;
    table->cpu_features = 0;
    table->permute_strided = sl__ref_permute_strided;
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
    set_origin(table);
}

/* The arithmetic kernels of one instruction set: each file's fill for it. */
#define ISA_FILLS(isa)                                                                                                 \
    {                                                                                                                  \
        sl__cpu_normalize_##isa, sl__cpu_elementwise_##isa, sl__cpu_moments_##isa, sl__cpu_blend_##isa,                \
            sl__cpu_resize_##isa, sl__cpu_trig_rounds_##isa, sl__cpu_log1p_##isa, sl__cpu_affine_##isa,                \
            sl__cpu_dropout_##isa                                                                                      \
    }
#define NFILLS 9

/* The optimized entries shared by every CPU table, then the arithmetic of
 * one instruction set. */
static void fill_cpu(sl_kernel_table *table, const char *name, sl_kernel_table_id id, unsigned features,
                     const sl_cpu_variant_fill fills[NFILLS], sl_permute_strided_fn permute_strided)
{
    sl_cpu_variant arith = {0};
    fill_reference(table);
    table->name = name;
    table->id = id;
    table->cpu_features = features;
    table->permute_strided = permute_strided;
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
    set_origin(table);
}

static void fill_generic(sl_kernel_table *table)
{
    static const sl_cpu_variant_fill fills[NFILLS] = ISA_FILLS(generic);
    fill_cpu(table, "cpu-generic", SL_TABLE_GENERIC, 0, fills, sl__ref_permute_strided);
}

static void fill_avx2(sl_kernel_table *table)
{
    static const sl_cpu_variant_fill fills[NFILLS] = ISA_FILLS(avx2);
    fill_cpu(table, "cpu-avx2", SL_TABLE_AVX2, SL_CPU_AVX2, fills, sl__cpu_permute_strided_avx2);
}

static void fill_avx512(sl_kernel_table *table)
{
    static const sl_cpu_variant_fill fills[NFILLS] = ISA_FILLS(avx512);
    fill_cpu(table, "cpu-avx512", SL_TABLE_AVX512, SL_CPU_AVX2 | SL_CPU_AVX512, fills, sl__cpu_permute_strided_avx512);
}

/* The AVX-512 instances compiled for 256-bit vectors (kernels/cpu/cpu.h),
 * where the build has them; dropout's is the 512-bit one, whose intrinsics
 * a preferred width does not change. Without that build (not x86-64) the
 * table is never supported here, and holds the 512-bit instances. */
static void fill_avx512_256(sl_kernel_table *table)
{
#if SLUICE_HAVE_AVX512_256
    static const sl_cpu_variant_fill fills[NFILLS] = {
        sl__cpu_normalize_avx512_256, sl__cpu_elementwise_avx512_256, sl__cpu_moments_avx512_256,
        sl__cpu_blend_avx512_256,     sl__cpu_resize_avx512_256,      sl__cpu_trig_rounds_avx512_256,
        sl__cpu_log1p_avx512_256,     sl__cpu_affine_avx512_256,      sl__cpu_dropout_avx512,
    };
#else
    static const sl_cpu_variant_fill fills[NFILLS] = ISA_FILLS(avx512);
#endif
    fill_cpu(table, "cpu-avx512-256", SL_TABLE_AVX512_256, SL_CPU_AVX2 | SL_CPU_AVX512, fills,
             sl__cpu_permute_strided_avx512);
}

/* In sl_kernel_table_id order: the default is the last supported one.
 * Adding a table (another ISA) is one line. */
static void (*const fills[SL_TABLE_COUNT])(sl_kernel_table *table) = {
    [SL_TABLE_REFERENCE] = fill_reference,   [SL_TABLE_GENERIC] = fill_generic, [SL_TABLE_AVX2] = fill_avx2,
    [SL_TABLE_AVX512_256] = fill_avx512_256, [SL_TABLE_AVX512] = fill_avx512,
};

static sl_kernel_table tables[SL_TABLE_COUNT];
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static void fill_tables(void)
{
    for (int i = 0; i < SL_TABLE_COUNT; i++)
        fills[i](&tables[i]);
    sl__gate_knob_apply(tables, SL_TABLE_COUNT);
}

int sl_kernel_table_count(void)
{
    return SL_TABLE_COUNT;
}

const sl_kernel_table *sl_kernel_table_at(int index)
{
    pthread_once(&tables_once, fill_tables);
    return index >= 0 && index < SL_TABLE_COUNT ? &tables[index] : NULL;
}

static const char *feature_names(unsigned missing)
{
    if (missing & SL_CPU_AVX512)
        return "AVX-512 F/BW/VL/DQ";
    return "AVX2";
}

bool sl_kernel_table_supported(const sl_kernel_table *table, char *reason, size_t size)
{
#if !SL_HAVE_AVX2_CLONES
    if (table->cpu_features) {
        if (reason && size)
            snprintf(reason, size, "%s is built only for x86-64 with GCC or Clang", table->name);
        return false;
    }
#endif
    unsigned missing = table->cpu_features & ~sl_cpu_features();
    if (missing && reason && size)
        snprintf(reason, size, "this CPU lacks %s", feature_names(missing));
    return missing == 0;
}

const sl_kernel_table *sl_kernels_find(const char *name)
{
    pthread_once(&tables_once, fill_tables);
    for (int i = 0; i < SL_TABLE_COUNT; i++)
        if (strcasecmp(name, tables[i].name) == 0)
            return &tables[i];
    return NULL;
}

const sl_kernel_table *sl_kernels_reference(void)
{
    pthread_once(&tables_once, fill_tables);
    return &tables[SL_TABLE_REFERENCE];
}

const sl_kernel_table *sl_kernels_default(void)
{
    pthread_once(&tables_once, fill_tables);
    int best = SL_TABLE_REFERENCE;
    for (int i = 0; i < SL_TABLE_COUNT; i++)
        if (sl_kernel_table_supported(&tables[i], NULL, 0))
            best = i;
    return &tables[best];
}

sl_status sl_kernels_choose(const char *name, const sl_kernel_table **out, sl_err *err)
{
    *out = NULL;
    if (!name || !*name) {
        *out = sl_kernels_default();
        return SL_OK;
    }
    const sl_kernel_table *table = sl_kernels_find(name);
    if (!table) {
        char names[160] = "";
        for (int i = 0; i < SL_TABLE_COUNT; i++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "", tables[i].name);
        return sl_fail(err, SL_ENOTFOUND, "unknown kernel table '%s'; the tables are %s", name, names);
    }
    char reason[128];
    if (!sl_kernel_table_supported(table, reason, sizeof reason))
        return sl_fail(err, SL_EUNSUPPORTED, "kernel table '%s' cannot run here: %s", table->name, reason);
    *out = table;
    return SL_OK;
}

sl_status sl_kernels_assemble(const sl_kernel_assembly *choice, const char *name, sl_kernel_table *out, sl_err *err)
{
    pthread_once(&tables_once, fill_tables);
    sl_kernel_table table = {.name = name, .id = SL_TABLE_ASSEMBLED};
    for (int e = 0; e < SL_KERNEL_ENTRY_COUNT; e++) {
        int id = (int)choice->table[e];
        if (id < 0 || id >= SL_TABLE_COUNT)
            return sl_fail(err, SL_EINVAL, "kernel choice for %s: %d names no kernel table", entry_names[e], id);
        char reason[128];
        if (!sl_kernel_table_supported(&tables[id], reason, sizeof reason))
            return sl_fail(err, SL_EUNSUPPORTED, "kernel choice for %s: %s cannot run here: %s", entry_names[e],
                           tables[id].name, reason);
        table.cpu_features |= tables[id].cpu_features;
        table.origin[e] = (sl_kernel_table_id)id;
    }
#define SL__TAKE_ENTRY(entry) table.entry = tables[table.origin[SL_ENTRY_##entry]].entry;
    SL_KERNEL_ENTRIES(SL__TAKE_ENTRY)
#undef SL__TAKE_ENTRY
    *out = table;
    return SL_OK;
}

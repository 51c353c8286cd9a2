/* Fills kernel tables reference-first, then lets optimized versions override
 * entries once a runtime check says the CPU can run them. */
#include <pthread.h>

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
}

static void override_cpu(sl_kernel_table *table)
{
    sl_cpu_variant arith;
    table->name = "cpu-generic";
    sl__cpu_normalize_generic(&arith);
    sl__cpu_elementwise_generic(&arith);
#if SL_HAVE_AVX2_CLONES
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2")) {
        sl__cpu_normalize_avx2(&arith);
        sl__cpu_elementwise_avx2(&arith);
        table->name = "cpu-avx2";
    }
#endif
    table->normalize_u8 = arith.normalize_u8;
    table->normalize_f32 = arith.normalize_f32;
    table->ew_chain = arith.ew_chain;
    table->crop_pad = sl__cpu_crop_pad;
    table->hflip = sl__cpu_hflip;
    table->pack = sl__cpu_pack;
}

static sl_kernel_table reference_table;
static sl_kernel_table best_table;
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static void fill_tables(void)
{
    fill_reference(&reference_table);
    fill_reference(&best_table);
    override_cpu(&best_table);
}

const sl_kernel_table *sl_kernels_reference(void)
{
    pthread_once(&tables_once, fill_tables);
    return &reference_table;
}

const sl_kernel_table *sl_kernels_best(void)
{
    pthread_once(&tables_once, fill_tables);
    return &best_table;
}

/* The one CPU feature probe (as dav1d's src/cpu.c): every table's support
 * check reads it, and a test can mask features to see what a machine
 * without them would choose. */
#include <stdatomic.h>

#include "cpu/cpu.h"
#include "sluice/kernels/kernels.h"

static atomic_uint mask = ~0u;

static unsigned detect(void)
{
#if SL_HAVE_AVX2_CLONES
    __builtin_cpu_init();
    unsigned flags = 0;
    if (__builtin_cpu_supports("avx2"))
        flags |= SL_CPU_AVX2;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512dq"))
        flags |= SL_CPU_AVX512;
    return flags;
#else
    return 0;
#endif
}

unsigned sl_cpu_features(void)
{
    /* cpuid answers the same every time: probing on each call costs a few
     * hundred cycles and needs no once-guard. Tables ask at selection only. */
    return detect() & atomic_load(&mask);
}

void sl_cpu_features_mask(unsigned new_mask)
{
    atomic_store(&mask, new_mask);
}

/* The kernel table a test binary runs its optimized kernels with: the one
 * the environment variable SLUICE_KERNELS names (meson runs the kernel
 * tests once per table that way), else the CPU's default. A name that is
 * unknown or that this CPU cannot run fails the test rather than quietly
 * testing another table. */
#ifndef SLUICE_TESTS_KERNELS_UNDER_TEST_H
#define SLUICE_TESTS_KERNELS_UNDER_TEST_H

#include <stdlib.h>

#include <criterion/criterion.h>

#include "sluice/kernels/kernels.h"

static inline const sl_kernel_table *sl_test_kernels(void)
{
    const sl_kernel_table *table = NULL;
    sl_err err = {0};
    if (sl_kernels_choose(getenv("SLUICE_KERNELS"), &table, &err) != SL_OK)
        cr_assert_fail("SLUICE_KERNELS: %s", err.msg);
    return table;
}

#endif

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>

#include <criterion/criterion.h>

#include "support.h"

void test_tmpdir_create(char *dir, size_t size, const char *tag)
{
    snprintf(dir, size, "/tmp/sluice-%s-XXXXXX", tag);
    cr_assert_not_null(mkdtemp(dir), "cannot create a temporary directory");
}

static int remove_entry(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
    (void)sb, (void)type, (void)ftw;
    return remove(path);
}

void test_tmpdir_remove(const char *dir)
{
    /* Depth first, without following links, so only what the test made goes. */
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>

#include <criterion/criterion.h>

#include "sluice/sluice.h"

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

void test_write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "cannot write %s", path);
    fputs(text, f);
    cr_assert_eq(fclose(f), 0, "cannot write %s", path);
}

char *test_read_text(const char *path)
{
    char *data;
    size_t size;
    sl_err err = {0};
    cr_assert_eq(sl_read_file(path, &data, &size, &err), SL_OK, "%s", err.msg);
    return data;
}

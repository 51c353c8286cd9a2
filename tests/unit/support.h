/* Helpers the unit tests share. */
#ifndef SLUICE_TEST_SUPPORT_H
#define SLUICE_TEST_SUPPORT_H

#include <stddef.h>

/* Creates a fresh directory /tmp/sluice-<tag>-XXXXXX and writes its path to
 * dir, or fails the test. */
void test_tmpdir_create(char *dir, size_t size, const char *tag);
/* Removes dir and everything below it. */
void test_tmpdir_remove(const char *dir);

#endif

/* What every fuzz target asserts beyond "no crash, no sanitizer report": a
 * refused input gets a message that names the file, as a user's bad file
 * would. abort() is how a libFuzzer target reports a failed property. */
#ifndef SLUICE_FUZZ_CHECK_H
#define SLUICE_FUZZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/core/status.h"

static inline void fuzz_expect_named_refusal(sl_status st, const sl_err *err, const char *path)
{
    if (st == SL_OK)
        return;
    if (!strstr(err->msg, path)) {
        fprintf(stderr, "a refusal (status %d) does not name the file %s: '%s'\n", (int)st, path, err->msg);
        abort();
    }
}

#endif

/* What the executors ask of a source beyond reading it. */
#ifndef SLUICE_SOURCE_CHECK_H
#define SLUICE_SOURCE_CHECK_H

#include "sluice/core/status.h"

struct sl_source;
/* SL_OK, or the error of a source whose bytes can no longer be trusted.
 * Executors call it once per batch, after the batch's reads, so a file that
 * shrank under a mapping fails the run instead of feeding it zeros. */
sl_status sl__source_check(const struct sl_source *source, sl_err *err);

#endif

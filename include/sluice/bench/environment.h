/* The environment fingerprint a record carries, collected by the bench
 * layer because it names the BLAS the kernels link. */
#ifndef SLUICE_ENVIRONMENT_H
#define SLUICE_ENVIRONMENT_H

#include "sluice/records/record.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Collects the fingerprint; the load fields describe this moment (start and
 * end both now, steal unknown) until a runner sets them around a run. */
void sl_environment_collect(sl_environment *env);

#ifdef __cplusplus
}
#endif

#endif

/* Status codes and error detail shared by every sluice function. */
#ifndef SLUICE_STATUS_H
#define SLUICE_STATUS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Functions return 0 on success and a negative code on failure; the detail
 * that a person needs (which file, field or argument, and what was wrong)
 * goes into an sl_err passed by the caller, so library code never prints. */
typedef enum sl_status {
    SL_OK = 0,
    SL_EINVAL = -1,       /* an argument or specification is invalid */
    SL_ENOMEM = -2,       /* an allocation failed */
    SL_EIO = -3,          /* a read, write, map or rename failed */
    SL_EFORMAT = -4,      /* a file is malformed, truncated or corrupted */
    SL_EMISMATCH = -5,    /* data differs from what was expected */
    SL_ENOTFOUND = -6,    /* a named scenario, variant, adapter or file is unknown */
    SL_EUNSUPPORTED = -7, /* the request needs something this build lacks */
    SL_ESTATE = -8,       /* a checkpoint or state does not fit this pipeline */
    SL_ETHREAD = -9,      /* a worker thread could not be created */
    SL_ESKIPPED = -10,    /* a run was skipped on purpose; the reason is recorded */
    SL_EBUSY = -11,       /* another process holds what this one needs (a locked records folder) */
    SL_ETIMEDOUT = -12    /* a rank of a distributed run went silent past its limit */
} sl_status;

#define SL_ERR_MAX 512

/* Caller-owned error detail. Zero-initialize it; functions fill it on failure. */
typedef struct sl_err {
    sl_status status;
    char msg[SL_ERR_MAX];
} sl_err;

/* A short, static description of a status code. */
const char *sl_strerror(sl_status status);

/* Records status and a printf-style message in err (when err is not NULL)
 * and returns status, so that failure paths read `return sl_fail(...)`. */
sl_status sl_fail(sl_err *err, sl_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Prefixes the message already in err with more context ("while loading X: "). */
sl_status sl_fail_context(sl_err *err, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#ifdef __cplusplus
}
#endif

#endif

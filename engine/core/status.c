#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "sluice/core/status.h"

const char *sl_strerror(sl_status status)
{
    switch (status) {
    case SL_OK: return "ok";
    case SL_EINVAL: return "invalid argument";
    case SL_ENOMEM: return "out of memory";
    case SL_EIO: return "input/output error";
    case SL_EFORMAT: return "malformed or corrupted file";
    case SL_EMISMATCH: return "output mismatch";
    case SL_ENOTFOUND: return "not found";
    case SL_EUNSUPPORTED: return "not supported by this build";
    case SL_ESTATE: return "state does not fit this pipeline";
    case SL_ETHREAD: return "thread error";
    case SL_ESKIPPED: return "skipped";
    case SL_EBUSY: return "held by another process";
    case SL_ETIMEDOUT: return "timed out";
    }
    return "unknown status";
}

sl_status sl_fail(sl_err *err, sl_status status, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        err->status = status;
    }
    return status;
}

sl_status sl_fail_context(sl_err *err, const char *fmt, ...)
{
    if (!err)
        return SL_EINVAL;
    char prefix[SL_ERR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    /* Room for both parts, then cut to the message size: a long prefix
     * must not hide the original detail's start from a later reader. */
    char combined[2 * SL_ERR_MAX + 2];
    snprintf(combined, sizeof combined, "%s: %s", prefix, err->msg);
    snprintf(err->msg, sizeof err->msg, "%.*s", (int)sizeof err->msg - 1, combined);
    return err->status;
}

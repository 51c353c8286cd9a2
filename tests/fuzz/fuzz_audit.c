/* The audit manifest reader (`sluice audit --compare`). An accepted manifest
 * is compared with itself, which walks every run, batch and field. */
#include "fuzz_check.h"
#include "fuzz_input.h"
#include "sluice/bench/audit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_input_path(data, size);
    sl_audit *audit = NULL;
    sl_err err = {0};
    sl_status st = sl_audit_load(path, &audit, &err);
    fuzz_expect_named_refusal(st, &err, path);
    if (st == SL_OK)
        sl_audit_free(audit);
    return 0;
}

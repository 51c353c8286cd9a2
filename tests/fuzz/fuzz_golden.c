/* The golden reader: JSON, shapes (whose products must not overflow),
 * digests and stored values. An accepted golden is compared with itself,
 * which walks every stored value. */
#include "fuzz_check.h"
#include "fuzz_input.h"
#include "sluice/core/digest.h"
#include "sluice/records/golden.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_input_path(data, size);
    sl_golden *golden = NULL;
    sl_err err = {0};
    sl_status st = sl_golden_load(path, &golden, &err);
    fuzz_expect_named_refusal(st, &err, path);
    if (st == SL_OK) {
        if (sl_golden_compare(golden, golden, &err) != SL_OK) {
            fprintf(stderr, "an accepted golden differs from itself: %s\n", err.msg);
            abort();
        }
        sl_golden_free(golden);
    }
    return 0;
}

/* The timing-record reader (records folders, baselines, reports): schema
 * version, required fields, latencies and their sum. An accepted record is
 * written back to JSON, which reads every field. */
#include <stdlib.h>

#include "fuzz_check.h"
#include "fuzz_input.h"
#include "sluice/records/record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_input_path(data, size);
    sl_record record;
    sl_environment env;
    sl_err err = {0};
    sl_status st = sl_record_read(path, &record, &env, &err);
    fuzz_expect_named_refusal(st, &err, path);
    if (st == SL_OK) {
        free(sl_record_to_json(&record, &env));
        sl_record_release(&record);
    }
    return 0;
}

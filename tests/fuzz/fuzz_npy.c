/* The .npy reader: header parsing (dtype, order, shape, padding) and the
 * data's size against the header. An accepted array's bytes are all read,
 * so ASan sees any allocation too small for its shape. */
#include <stdlib.h>

#include "fuzz_check.h"
#include "fuzz_input.h"
#include "sluice/npy.h"
#include "sluice/tensor.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_input_path(data, size);
    sl_tensor tensor = {0};
    sl_err err = {0};
    sl_status st = sl_npy_load(path, &tensor, &err);
    fuzz_expect_named_refusal(st, &err, path);
    if (st == SL_OK) {
        size_t bytes = sl_tensor_nbytes(&tensor);
        if (bytes > size) {
            fprintf(stderr, "an accepted array claims %zu bytes from a %zu-byte file\n", bytes, size);
            abort();
        }
        volatile unsigned char sink = 0;
        for (size_t i = 0; i < bytes; i++)
            sink ^= ((const unsigned char *)tensor.data)[i];
        (void)sink;
        free(tensor.data);
    }
    return 0;
}

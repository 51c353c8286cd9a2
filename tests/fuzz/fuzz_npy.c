/* The .npy reader: header parsing (dtype, order, shape, padding) and the
 * data's size against the header, then the same file through every file
 * source (mmap, pread, eager, stream) and one batch of a pipeline. An accepted array's bytes are
 * all read, so ASan sees any allocation too small for its shape. */
#include <stdlib.h>

#include "fuzz_check.h"
#include "fuzz_input.h"
#include "sluice/core/npy.h"
#include "sluice/core/tensor.h"
#include "sluice/exec/executors.h"
#include "sluice/pipeline/pipeline.h"
#include "sluice/source/source.h"

/* Opens the file as a source of one field "x" and produces its first batch
 * (up to 4 rows). The sources must agree with the loader on whether the
 * file is acceptable. */
static void through_a_source(const char *path, sl_source_kind kind, const sl_tensor *loaded)
{
    const char *name = "x";
    sl_source *source = NULL;
    sl_err err = {0};
    sl_status st = sl_source_file_create(kind, 1, &name, &path, &source, &err);
    fuzz_expect_named_refusal(st, &err, path);
    if (st != SL_OK) {
        fprintf(stderr, "the %s source refuses what sl_npy_load accepted: %s\n", sl_source_kind_name(kind), err.msg);
        abort();
    }
    int64_t rows = sl_source_rows(source);
    if (rows != loaded->shape.dims[0]) {
        fprintf(stderr, "the %s source sees %lld rows, the loader %lld\n", sl_source_kind_name(kind), (long long)rows,
                (long long)loaded->shape.dims[0]);
        abort();
    }
    if (rows > 0) {
        sl_pipeline_spec spec;
        sl_pipeline_spec_init(&spec, source, rows < 4 ? rows : 4, 42);
        sl_pipeline *pipeline = NULL;
        sl_batch *batch = NULL;
        if (sl_pipeline_create(&spec, &pipeline, &err) == SL_OK &&
            sl_batch_create(sl_pipeline_output_schema(pipeline), spec.batch_size, &batch, &err) == SL_OK &&
            sl_pipeline_produce(pipeline, sl_kernels_default(), (sl_position){0, 0}, batch, &err) != SL_OK) {
            fprintf(stderr, "one batch of an accepted file failed: %s\n", err.msg);
            abort();
        }
        sl_batch_free(batch);
        sl_pipeline_free(pipeline);
    }
    sl_source_free(source);
}

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
        if (tensor.shape.rank >= 1) {
            through_a_source(path, SL_SOURCE_MMAP, &tensor);
            through_a_source(path, SL_SOURCE_PREAD, &tensor);
            through_a_source(path, SL_SOURCE_EAGER, &tensor);
            through_a_source(path, SL_SOURCE_STREAM, &tensor);
        }
        free(tensor.data);
    }
    return 0;
}

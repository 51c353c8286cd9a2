#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "kernels/device.h"
#include "sluice/sluice.h"

#include "support.h"

sl_source *test_image_fixture(int64_t n, int side)
{
    sl_fixture_spec spec = {.kind = SL_FIXTURE_IMAGES, .n = n, .h = side, .w = side, .c = 3, .classes = 10};
    sl_source *src;
    sl_err err = {0};
    cr_assert_eq(sl_fixture_build(&spec, 42, &src, &err), SL_OK, "%s", err.msg);
    return src;
}

const sl_device *test_cuda_device_or_skip(const char *what)
{
    char reason[256] = "";
    const sl_device *dev = sl_device_cuda(reason, sizeof reason);
    if (!dev)
        cr_skip_test("no CUDA device %s: %s", what, reason);
    return dev;
}

void test_tmpdir_create(char *dir, size_t size, const char *tag)
{
    snprintf(dir, size, "/tmp/sluice-%s-XXXXXX", tag);
    cr_assert_not_null(mkdtemp(dir), "cannot create a temporary directory");
}

static int remove_entry(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
    (void)sb, (void)type, (void)ftw;
    return remove(path);
}

void test_tmpdir_remove(const char *dir)
{
    /* Depth first, without following links, so only what the test made goes. */
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

const char *test_peer_script(char *out, size_t size, const char *relative)
{
    const char *root = getenv("SLUICE_SOURCE_ROOT");
    snprintf(out, size, "%s/peers/%s", root ? root : ".", relative);
    return out;
}

void test_write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "cannot write %s", path);
    fputs(text, f);
    cr_assert_eq(fclose(f), 0, "cannot write %s", path);
}

char *test_read_text(const char *path)
{
    char *data;
    size_t size;
    sl_err err = {0};
    cr_assert_eq(sl_read_file(path, &data, &size, &err), SL_OK, "%s", err.msg);
    return data;
}

static void bench_instance(const char *scenario_id, const char *variant, int measured, bool shuffle,
                           sl_scenario_instance **instance, sl_bench_options *options)
{
    const sl_scenario *scenario = sl_scenario_find(scenario_id);
    cr_assert_not_null(scenario, "no scenario %s", scenario_id);
    sl_build_options build;
    sl_build_options_init(&build, SL_PROFILE_CI, 42);
    build.shuffle = shuffle;
    sl_err err = {0};
    cr_assert_eq(sl_scenario_instantiate(scenario, sl_scenario_variant(scenario, variant), &build, instance, &err),
                 SL_OK, "%s", err.msg);
    sl_bench_options_init(options, SL_PROFILE_CI, 42);
    options->repetitions = 1;
    options->warmup_batches = 1;
    options->measured_batches = measured;
    options->skip_probes = true;
    options->check_against_reference = true;
    cr_assert_eq(sl_bench_reference_digest(*instance, options, &options->reference_digest, &err), SL_OK, "%s", err.msg);
}

void test_bench_instance(const char *scenario_id, const char *variant, int measured, sl_scenario_instance **instance,
                         sl_bench_options *options)
{
    bench_instance(scenario_id, variant, measured, true, instance, options);
}

void test_bench_instance_unshuffled(const char *scenario_id, const char *variant, int measured,
                                    sl_scenario_instance **instance, sl_bench_options *options)
{
    bench_instance(scenario_id, variant, measured, false, instance, options);
}

sl_source *test_source_x(sl_dtype dtype, int64_t h, int64_t w, int64_t n, void *data)
{
    sl_schema schema;
    memset(&schema, 0, sizeof schema);
    schema.nfields = 1;
    strcpy(schema.fields[0].name, "x");
    schema.fields[0].dtype = dtype;
    schema.fields[0].shape = (sl_shape){.rank = 2, .dims = {h, w}};
    void *fields[1] = {data};
    sl_source *src;
    sl_err err = {0};
    cr_assert_eq(sl_source_memory_create(&schema, n, fields, SL_BORROW, &src, &err), SL_OK, "%s", err.msg);
    return src;
}

/* Where test_run_adapter_field0 appends its batches. */
typedef struct field0_sink {
    unsigned char *out;
    size_t row_bytes;
    int64_t rows;
} field0_sink;

static int append_field0(const sl_batch *batch, void *user)
{
    field0_sink *sink = user;
    memcpy(sink->out + (size_t)sink->rows * sink->row_bytes, batch->fields[0].data,
           sl_tensor_nbytes(&batch->fields[0]));
    sink->rows += batch->count;
    return 0;
}

int64_t test_run_adapter_field0(const char *adapter, const sl_pipeline *p, void *out, size_t row_bytes)
{
    const sl_adapter *a = sl_adapter_find(adapter);
    cr_assert_not_null(a, "no adapter %s", adapter);
    int64_t batches = sl_pipeline_batches_per_epoch(p);
    int64_t *latency = calloc((size_t)batches, sizeof *latency);
    field0_sink sink = {out, row_bytes, 0};
    sl_err err = {0};
    cr_assert_eq(a->run(a, p, &(sl_run_request){.start = {0, 0}, .nbatches = batches, .threads = 1}, append_field0,
                        &sink, latency, &err),
                 SL_OK, "%s: %s", adapter, err.msg);
    free(latency);
    return sink.rows;
}

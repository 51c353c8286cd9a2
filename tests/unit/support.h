/* Helpers the unit tests share. */
#ifndef SLUICE_TEST_SUPPORT_H
#define SLUICE_TEST_SUPPORT_H

#include <stddef.h>

#include "kernels_under_test.h"
#include "sluice/sluice.h"

/* Creates a fresh directory /tmp/sluice-<tag>-XXXXXX and writes its path to
 * dir, or fails the test. */
void test_tmpdir_create(char *dir, size_t size, const char *tag);
/* n images of side x side x 3 u8 with an i32 label of 10 classes each, in
 * memory (the images fixture, seed 42). */
sl_source *test_image_fixture(int64_t n, int side);
/* The CUDA device (kernels/device.h), or the test skipped with the probe's
 * reason (`what` says what the device was wanted for). */
struct sl_device;
const struct sl_device *test_cuda_device_or_skip(const char *what);
/* Removes dir and everything below it. */
void test_tmpdir_remove(const char *dir);

/* Writes text to path (replacing it), or fails the test. */
void test_write_text(const char *path, const char *text);
/* The whole of path as a NUL-terminated string the caller frees, or fails
 * the test naming the file. */
char *test_read_text(const char *path);

/* The path of a file under peers/ in the source tree (SLUICE_SOURCE_ROOT,
 * which meson sets, or the current directory), written to out. */
const char *test_peer_script(char *out, size_t size, const char *relative);

/* A memory source of n elements of one field "x" of dtype [h, w], reading
 * data (borrowed: the caller keeps it alive), or fails the test. */
sl_source *test_source_x(sl_dtype dtype, int64_t h, int64_t w, int64_t n, void *data);

/* Runs the adapter named `adapter` over epoch 0 of p on one thread and
 * appends each batch's field 0 to out (row_bytes per row); returns the rows
 * it handed over, or fails the test. */
int64_t test_run_adapter_field0(const char *adapter, const sl_pipeline *p, void *out, size_t row_bytes);

/* Builds the ci-profile instance of scenario/variant (seed 42) and bench
 * options for one repetition of 1 warmup and `measured` batches, without
 * probes, checked against the reference, whose digest it computes; or fails
 * the test. */
void test_bench_instance(const char *scenario, const char *variant, int measured, sl_scenario_instance **instance,
                         sl_bench_options *options);
/* The same with the scenario's order unshuffled (the ci profile, seed 42):
 * a plan that no seed changes when none of its ops draws. */
void test_bench_instance_unshuffled(const char *scenario, const char *variant, int measured,
                                    sl_scenario_instance **instance, sl_bench_options *options);

#endif

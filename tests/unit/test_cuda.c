/* The CUDA back end as far as each machine allows.
 *
 * Everywhere: the probe either finds a device or says why not, the cuda
 * adapters agree with it and never claim a device they lack, and a record's
 * device fields survive a round trip. Every launcher of the device table
 * (kernels/device.h) runs on the host emulation against the reference
 * kernels, with awkward values (NaN, infinities, denormals) and sizes that
 * are multiples of nothing; with a CUDA device the same checks run on it,
 * and without one they are skipped with the probe's reason, never passed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "kernels/bodies.h"
#include "kernels/cuda.h"
#include "kernels/device.h"
#include "sluice/adapters/adapter.h"
#include "sluice/bench/scenario.h"
#include "sluice/core/compare.h"
#include "sluice/core/philox.h"
#include "sluice/kernels/kernels.h"
#include "sluice/records/record.h"
#include "sluice_config.h"
#include "support.h"

Test(cuda, the_probe_finds_a_device_or_says_why_not)
{
    sl_cuda_device_info info;
    bool available = sl_cuda_probe(&info, SL_CUDA_MIN_FREE_BYTES);
    cr_expect_eq(available, info.available);
    cr_expect_eq(info.built, (bool)HAVE_CUDA, "the probe says built=%d in a build with HAVE_CUDA=%d", info.built,
                 HAVE_CUDA);
    char why[256] = "";
    cr_expect_eq(sl_device_cuda(why, sizeof why) != NULL, available,
                 "the CUDA device table exists exactly when the "
                 "probe finds a device (%s)",
                 why);
    if (available) {
        cr_expect_neq(info.name[0], '\0', "an available device has a name");
        cr_expect_geq(info.cc_major, 7, "CUDA 13 runs on compute capability 7.5 and later, found %d.%d", info.cc_major,
                      info.cc_minor);
        cr_expect_geq(info.driver_version, info.runtime_version);
        cr_expect_geq(info.free_bytes, SL_CUDA_MIN_FREE_BYTES);
        cr_expect_leq(info.free_bytes, info.total_bytes);
    } else {
        cr_expect_neq(info.reason[0], '\0', "an unavailable device must say why");
    }
}

Test(cuda, a_device_needing_more_memory_than_any_has_is_refused_with_the_amount)
{
    sl_cuda_device_info info;
    /* 2^60 bytes: no device has an exabyte. */
    cr_expect_not(sl_cuda_probe(&info, (int64_t)1 << 60));
    cr_expect_neq(info.reason[0], '\0');
    if (info.device_count > 0)
        cr_expect(strstr(info.reason, "GB of device memory free") != NULL, "reason: %s", info.reason);
}

Test(cuda, versions_read_as_major_dot_minor)
{
    char text[16];
    sl_cuda_version_string(13000, text, sizeof text);
    cr_expect_str_eq(text, "13.0");
    sl_cuda_version_string(12040, text, sizeof text);
    cr_expect_str_eq(text, "12.4");
    sl_cuda_version_string(0, text, sizeof text);
    cr_expect_str_eq(text, "none");
}

Test(cuda, the_cuda_adapters_are_available_exactly_when_the_probe_says_so)
{
    sl_cuda_device_info info;
    bool available = sl_cuda_probe(&info, SL_CUDA_MIN_FREE_BYTES);
    const char *names[] = {"cuda", "cuda-graph"};
    for (int i = 0; i < 2; i++) {
        const sl_adapter *adapter = sl_adapter_find(names[i]);
        cr_assert_not_null(adapter, "adapter %s is not registered", names[i]);
        cr_expect_str_eq(adapter->backend, "cuda");
        char reason[256] = "";
        cr_expect_eq(sl_adapter_is_available(adapter, reason, sizeof reason), available, "%s", names[i]);
        if (!available)
            cr_expect_str_eq(reason, info.reason, "%s gives another reason than the probe", names[i]);
    }
}

Test(cuda, a_record_keeps_its_device_and_a_cpu_record_has_none)
{
    sl_record record;
    memset(&record, 0, sizeof record);
    strcpy(record.scenario, "CV-1");
    strcpy(record.variant, "32x32");
    strcpy(record.adapter, "cuda");
    strcpy(record.profile, "gpu");
    strcpy(record.backend_requested, "cuda");
    strcpy(record.backend_active, "cuda");
    strcpy(record.equivalence, "not checked");
    strcpy(record.peak_rss_method, "none");
    strcpy(record.reason, "no CUDA device");
    record.outcome = SL_RECORD_UNAVAILABLE;
    sl_environment env;
    sl_environment_collect(&env);

    char *json = sl_record_to_json(&record, &env);
    cr_assert_not_null(json);
    cr_expect_null(strstr(json, "\"device\""), "a record without a device has no device object");
    free(json);

    strcpy(record.device_name, "NVIDIA H100 80GB HBM3");
    strcpy(record.device_compute_capability, "9.0");
    strcpy(record.device_driver, "13.0");
    strcpy(record.device_runtime, "13.0");
    record.device_peak_memory_bytes = 123456789;
    record.device_allocated_peak_bytes = 98765432;
    strcpy(record.device_source, "resident");
    record.device_source_setup_ns = 4242;
    char dir[256];
    test_tmpdir_create(dir, sizeof dir, "cuda-record");
    char path[320];
    snprintf(path, sizeof path, "%s/r.json", dir);
    sl_err err = {0};
    cr_assert_eq(sl_record_write(&record, &env, path, &err), SL_OK, "%s", err.msg);
    sl_record back;
    cr_assert_eq(sl_record_read(path, &back, NULL, &err), SL_OK, "%s", err.msg);
    cr_expect_str_eq(back.device_name, "NVIDIA H100 80GB HBM3");
    cr_expect_str_eq(back.device_compute_capability, "9.0");
    cr_expect_str_eq(back.device_driver, "13.0");
    cr_expect_str_eq(back.device_runtime, "13.0");
    cr_expect_eq(back.device_peak_memory_bytes, 123456789);
    cr_expect_eq(back.device_allocated_peak_bytes, 98765432);
    cr_expect_str_eq(back.device_source, "resident");
    cr_expect_eq(back.device_source_setup_ns, 4242);
    sl_record_release(&back);

    /* A record whose runs never ran has no source, and reads back so. */
    record.device_allocated_peak_bytes = -1;
    record.device_source[0] = '\0';
    cr_assert_eq(sl_record_write(&record, &env, path, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(sl_record_read(path, &back, NULL, &err), SL_OK, "%s", err.msg);
    cr_expect_eq(back.device_allocated_peak_bytes, -1);
    cr_expect_str_eq(back.device_source, "");
    cr_expect_eq(back.device_source_setup_ns, -1);
    sl_record_release(&back);

    /* A path other than the two is refused by the field's name. */
    strcpy(record.device_source, "teleported");
    cr_assert_eq(sl_record_write(&record, &env, path, &err), SL_OK, "%s", err.msg);
    cr_expect_eq(sl_record_read(path, &back, NULL, &err), SL_EFORMAT);
    cr_expect(strstr(err.msg, "device.source") && strstr(err.msg, "teleported"), "message: %s", err.msg);
    test_tmpdir_remove(dir);
}

/* ---- Every launcher against the reference kernels ------------------------ */

/* Host data on the device, and back once the device is done. */
static void *up(const sl_device *dev, const void *host, size_t bytes)
{
    void *ptr = NULL;
    cr_assert_eq(dev->alloc(&ptr, bytes ? bytes : 8), 0, "%s: allocating %zu bytes", dev->name, bytes);
    if (host)
        cr_assert_eq(dev->copy(ptr, host, bytes, SL_DEVICE_HOST_TO_DEVICE, NULL), 0);
    else
        cr_assert_eq(dev->memset0(ptr, bytes ? bytes : 8, NULL), 0);
    return ptr;
}

static void down(const sl_device *dev, void *host, const void *ptr, size_t bytes)
{
    cr_assert_eq(dev->stream_sync(NULL), 0);
    cr_assert_eq(dev->copy(host, ptr, bytes, SL_DEVICE_DEVICE_TO_HOST, NULL), 0);
    cr_assert_eq(dev->stream_sync(NULL), 0);
}

/* Bitwise, except that a NaN matches any NaN: a GPU returns its canonical
 * NaN where x86 keeps the input's payload (docs/determinism.md). */
static void expect_same_f32(const sl_device *dev, const float *want, const float *got, int64_t n, const char *what)
{
    for (int64_t i = 0; i < n; i++) {
        uint32_t a, b;
        memcpy(&a, &want[i], 4);
        memcpy(&b, &got[i], 4);
        if (isnan(want[i]) && isnan(got[i]))
            continue;
        cr_assert_eq(a, b, "%s on %s: value %lld is %08x, %08x in the reference", what, dev->name, (long long)i, b, a);
    }
}

static void expect_same_bytes(const sl_device *dev, const void *want, const void *got, size_t bytes, const char *what)
{
    const unsigned char *a = want, *b = got;
    size_t i = 0;
    while (i < bytes && a[i] == b[i])
        i++;
    cr_assert_eq(i, bytes, "%s on %s: byte %zu of %zu differs from the reference", what, dev->name, i, bytes);
}

/* Values a kernel must carry through: signed zeros, NaN, infinities,
 * denormals, the extremes, then random bit patterns and ordinary values. */
static void fill_awkward(float *x, int64_t n)
{
    static const uint32_t special[] = {0x00000000u, 0x80000000u, 0x7fc00000u, 0x7f800000u, 0xff800000u,
                                       0x00000001u, 0x807fffffu, 0x00800000u, 0x7f7fffffu, 0xff7fffffu};
    sl_philox_key key = sl_philox_key_for(5, 5);
    for (int64_t i = 0; i < n; i++) {
        uint32_t r = sl_philox4x32_10(sl_philox_ctr_for((uint64_t)i, 0, 0), key).v[0];
        if (i < 10)
            memcpy(&x[i], &special[i], 4);
        else if (i % 2)
            memcpy(&x[i], &r, 4);
        else
            x[i] = -300.0f + 600.0f * sl_u32_to_unit_float(r);
    }
}

/* Per-row decisions as the executor lays them out: `stride` columns per
 * row, the op's starting at `first`. */
static sl_device_rows_i32 decisions_up(const sl_device *dev, const int32_t *table, int64_t rows, int stride, int first)
{
    return (sl_device_rows_i32){up(dev, table, (size_t)rows * (size_t)stride * sizeof(int32_t)), stride, first};
}

static void check_element_wise(const sl_device *dev)
{
    const sl_kernel_table *ref = sl_kernels_reference();
    enum { N = 3 * 100003 };
    float *x = malloc(N * 4), *want = malloc(N * 4), *got = malloc(N * 4);
    uint8_t *u8 = malloc(N);
    fill_awkward(x, N);
    for (int i = 0; i < N; i++)
        u8[i] = (uint8_t)(i * 37);
    float *dx = up(dev, x, N * 4), *dy = up(dev, NULL, N * 4);
    uint8_t *du8 = up(dev, u8, N);

    const float mean[3] = {0.485f * 255, 0.456f * 255, 0.406f * 255};
    const float sd[3] = {0.229f * 255, 0.224f * 255, 0.225f * 255};
    sl_normalize_consts nk;
    sl_err err = {0};
    cr_assert_eq(sl_normalize_consts_init(&nk, 3, mean, sd, &err), SL_OK);
    sl_device_channels ch = {.channels = 3};
    for (int c = 0; c < 3; c++)
        ch.a[c] = nk.mean[c], ch.b[c] = nk.inv_std[c];
    ref->normalize_u8(u8, want, N / 3, &nk);
    cr_assert_eq(dev->normalize_u8(du8, dy, N, &ch, NULL), 0);
    down(dev, got, dy, N * 4);
    expect_same_f32(dev, want, got, N, "normalize u8");
    ref->normalize_f32(x, want, N / 3, &nk);
    cr_assert_eq(dev->normalize_f32(dx, dy, N, &ch, NULL), 0);
    down(dev, got, dy, N * 4);
    expect_same_f32(dev, want, got, N, "normalize f32");

    sl_affine_consts ak;
    const float scale[3] = {0.5f, -3.25f, 1e-3f}, bias[3] = {1.0f, 0.0f, -7.5f};
    cr_assert_eq(sl_affine_consts_init(&ak, 3, scale, bias, &err), SL_OK);
    sl_device_channels ach = {.channels = 3};
    for (int c = 0; c < 3; c++)
        ach.a[c] = scale[c], ach.b[c] = bias[c];
    ref->affine_f32(x, want, N / 3, &ak);
    cr_assert_eq(dev->affine_f32(dx, dy, N, &ach, NULL), 0);
    down(dev, got, dy, N * 4);
    expect_same_f32(dev, want, got, N, "affine");
    sl_affine_consts_release(&ak);

    sl_device_chain chain = {5,
                             {{.kind = SL_EW_NORMALIZE, .a = 0.5f, .b = 4.0f},
                              {.kind = SL_EW_MULTIPLY, .a = 2.0f},
                              {.kind = SL_EW_CLIP, .a = 0.0f, .b = 1.0f},
                              {.kind = SL_EW_ADD, .a = 0.1f},
                              {.kind = SL_EW_MULTIPLY, .a = 0.9f}}};
    memcpy(want, x, N * 4);
    ref->ew_chain(want, N, chain.steps, chain.nsteps);
    cr_assert_eq(dev->copy(dy, x, N * 4, SL_DEVICE_HOST_TO_DEVICE, NULL), 0);
    cr_assert_eq(dev->ew_chain(dy, N, &chain, NULL), 0);
    down(dev, got, dy, N * 4);
    expect_same_f32(dev, want, got, N, "fused element-wise chain");

    ref->normalize_u8(u8, want, N / 3, &nk);
    ref->ew_chain(want, N, chain.steps, chain.nsteps);
    cr_assert_eq(dev->normalize_u8_chain(du8, dy, N, &ch, &chain, NULL), 0);
    down(dev, got, dy, N * 4);
    expect_same_f32(dev, want, got, N, "normalize u8 fused with a chain");

    /* The same steps per row from a row table: 3 rows of N / 3 values,
     * each its own noise counter and brightness, against the reference's
     * chain row by row; the table has a column before the chain's. */
    enum { ROWS = 3, VALUES = N / ROWS, RS = 3 };
    sl_ew_step table[ROWS * RS];
    for (int r = 0; r < ROWS; r++) {
        table[r * RS] = (sl_ew_step){.kind = SL_EW_MULTIPLY, .a = 1e30f};
        table[r * RS + 1] = (sl_ew_step){.kind = SL_EW_GAUSSIAN_NOISE, .a = 0.3f};
        table[r * RS + 1].key = sl_philox_key_for(42, 11);
        table[r * RS + 1].ctr = sl_philox_ctr_for((uint64_t)(1000 + r), 2, 0);
        table[r * RS + 2] = (sl_ew_step){.kind = SL_EW_ADD, .a = 0.1f * (float)r};
        memcpy(want + r * VALUES, x + r * VALUES, VALUES * 4);
        ref->ew_chain(want + r * VALUES, VALUES, &table[r * RS + 1], 2);
    }
    sl_ew_step *dtable = up(dev, table, sizeof table);
    cr_assert_eq(dev->copy(dy, x, N * 4, SL_DEVICE_HOST_TO_DEVICE, NULL), 0);
    cr_assert_eq(dev->ew_chain_rows(dy, ROWS * VALUES, VALUES, dtable, RS, 1, 2, NULL), 0);
    down(dev, got, dy, ROWS * VALUES * 4);
    expect_same_f32(dev, want, got, ROWS * VALUES, "chain with per-row steps");

    ref->normalize_u8(u8, want, N / 3, &nk);
    for (int r = 0; r < ROWS; r++)
        ref->ew_chain(want + r * VALUES, VALUES, &table[r * RS + 1], 2);
    cr_assert_eq(dev->normalize_u8_chain_rows(du8, dy, N, &ch, VALUES, dtable, RS, 1, 2, NULL), 0);
    down(dev, got, dy, N * 4);
    expect_same_f32(dev, want, got, N, "normalize u8 with per-row steps");
    dev->release(dtable);
    sl_normalize_consts_release(&nk);

    /* Dropout of rows keyed by their element ids and the batch's epoch. */
    int64_t ids[ROWS] = {17, 0x100000005ll, 4};
    sl_device_batch batch = {.epoch = 3, .index = 1};
    sl_philox_key key = sl_philox_key_for(42, 7);
    const uint32_t threshold = 1288490189u;
    const float keep_scale = 1.0f / 0.7f;
    for (int r = 0; r < ROWS; r++) {
        sl_dropout_key d = {key, (uint64_t)ids[r], (uint32_t)batch.epoch, threshold, keep_scale};
        ref->dropout(x + r * VALUES, want + r * VALUES, VALUES, &d);
    }
    int64_t *dids = up(dev, ids, sizeof ids);
    sl_device_batch *dbatch = up(dev, &batch, sizeof batch);
    cr_assert_eq(dev->dropout_rows(dx, dy, ROWS, VALUES, dids, dbatch, key, threshold, keep_scale, NULL), 0);
    down(dev, got, dy, ROWS * VALUES * 4);
    expect_same_f32(dev, want, got, ROWS * VALUES, "dropout");

    /* zscore: each row's moments in double in the reference's order. */
    float *finite = malloc(N * 4);
    for (int i = 0; i < N; i++)
        finite[i] = isfinite(x[i]) && fabsf(x[i]) < 1e30f ? x[i] : (float)(i % 7);
    for (int r = 0; r < ROWS; r++) {
        double m, v;
        ref->moments(finite + r * VALUES, VALUES, &m, &v);
        sl_ew_step step = {.kind = SL_EW_NORMALIZE};
        sl__body_zscore_constants(m, v, &step.a, &step.b);
        memcpy(want + r * VALUES, finite + r * VALUES, VALUES * 4);
        ref->ew_chain(want + r * VALUES, VALUES, &step, 1);
    }
    float *dfinite = up(dev, finite, N * 4);
    double *scratch = up(dev, NULL, SL_DEVICE_ZSCORE_SCRATCH(ROWS) * sizeof(double));
    cr_assert_eq(dev->zscore_rows(dfinite, dy, ROWS, VALUES, scratch, NULL), 0);
    down(dev, got, dy, N * 4);
    expect_same_f32(dev, want, got, N, "zscore");

    ref->log1p(x, want, N);
    cr_assert_eq(dev->log1p(dx, dy, N, NULL), 0);
    down(dev, got, dy, N * 4);
    expect_same_f32(dev, want, got, N, "log1p");

    /* trig_rounds on a length that is a multiple of no vector width. */
    enum { TRIG = 1031 };
    ref->trig_rounds(finite, want, TRIG, 5);
    cr_assert_eq(dev->trig_rounds(dfinite, dy, TRIG, 5, NULL), 0);
    down(dev, got, dy, TRIG * 4);
    expect_same_f32(dev, want, got, TRIG, "trig_rounds");

    ref->blend(want, x, x + 1, N - 1, 0.3f, 0.7f);
    cr_assert_eq(dev->blend(dy, dx, dx + 1, N - 1, 0.3f, 0.7f, NULL), 0);
    down(dev, got, dy, (N - 1) * 4);
    expect_same_f32(dev, want, got, N - 1, "blend");

    dev->release(dx);
    dev->release(dy);
    dev->release(du8);
    dev->release(dids);
    dev->release(dbatch);
    dev->release(dfinite);
    dev->release(scratch);
    free(x);
    free(want);
    free(got);
    free(u8);
    free(finite);
}

static void check_movement(const sl_device *dev)
{
    const sl_kernel_table *ref = sl_kernels_reference();
    enum { ROWS = 3, H = 61, W = 67, PB = 3, STRIDE = 4 };
    const size_t image = (size_t)H * W * PB, bytes = ROWS * image;
    uint8_t *src = malloc(bytes), *want = malloc(bytes), *got = malloc(bytes);
    for (size_t i = 0; i < bytes; i++)
        src[i] = (uint8_t)(i * 131 + 7);
    uint8_t *dsrc = up(dev, src, bytes), *ddst = up(dev, NULL, bytes);
    /* Column 1 of 4 holds each op's first decision; 0 and 3 belong to
     * other ops. */
    int32_t table[ROWS * STRIDE] = {-9, 7, 9, -9, -9, 0, 0, -9, -9, 21, 17, -9};
    sl_device_rows_i32 offsets = decisions_up(dev, table, ROWS, STRIDE, 1);
    for (int r = 0; r < ROWS; r++)
        ref->crop_pad(src + r * image, want + r * image, H, W, PB, 40, 50, table[r * STRIDE + 1],
                      table[r * STRIDE + 2]);
    cr_assert_eq(dev->crop_pad_rows(dsrc, ddst, ROWS, H, W, PB, 40, 50, offsets, NULL), 0);
    down(dev, got, ddst, bytes);
    expect_same_bytes(dev, want, got, bytes, "random_crop's crop_pad");

    int32_t flips[ROWS * STRIDE] = {-9, 1, -9, -9, -9, 0, -9, -9, -9, 1, -9, -9};
    sl_device_rows_i32 flip = decisions_up(dev, flips, ROWS, STRIDE, 1);
    memcpy(want, src, bytes);
    for (int r = 0; r < ROWS; r++)
        if (flips[r * STRIDE + 1])
            ref->hflip(want + r * image, H, W, PB);
    cr_assert_eq(dev->hflip_rows(dsrc, ddst, ROWS, H, W, PB, flip, NULL), 0);
    down(dev, got, ddst, bytes);
    expect_same_bytes(dev, want, got, bytes, "hflip");

    /* Every number of turns, on square rows of side H. */
    const size_t square = (size_t)H * H * PB;
    int32_t turns[4 * STRIDE] = {-9, 0, -9, -9, -9, 1, -9, -9, -9, 2, -9, -9, -9, 3, -9, -9};
    uint8_t *sq = malloc(4 * square), *sq_want = malloc(4 * square), *sq_got = malloc(4 * square);
    for (size_t i = 0; i < 4 * square; i++)
        sq[i] = (uint8_t)(i * 29 + 3);
    uint8_t *dsq = up(dev, sq, 4 * square), *dsq_out = up(dev, NULL, 4 * square);
    for (int r = 0; r < 4; r++)
        ref->rot90(sq + r * square, sq_want + r * square, H, PB, turns[r * STRIDE + 1]);
    sl_device_rows_i32 turn = decisions_up(dev, turns, 4, STRIDE, 1);
    cr_assert_eq(dev->rot90_rows(dsq, dsq_out, 4, H, PB, turn, NULL), 0);
    down(dev, sq_got, dsq_out, 4 * square);
    expect_same_bytes(dev, sq_want, sq_got, 4 * square, "rot90");

    /* Volumes: every combination of flipped axes, and patches. */
    enum { D = 7, VROWS = 8 };
    const size_t volume = (size_t)D * H * W * PB;
    uint8_t *vsrc = malloc(VROWS * volume), *vwant = malloc(VROWS * volume), *vgot = malloc(VROWS * volume);
    for (size_t i = 0; i < VROWS * volume; i++)
        vsrc[i] = (uint8_t)(i * 61 + 3);
    int32_t axes[VROWS];
    memcpy(vwant, vsrc, VROWS * volume);
    for (int r = 0; r < VROWS; r++) {
        axes[r] = r;
        ref->flip3d(vwant + r * volume, D, H, W, PB, (unsigned)r);
    }
    uint8_t *dvsrc = up(dev, vsrc, VROWS * volume), *dvdst = up(dev, NULL, VROWS * volume);
    sl_device_rows_i32 flipped_axes = decisions_up(dev, axes, VROWS, 1, 0);
    cr_assert_eq(dev->flip3d_rows(dvsrc, dvdst, VROWS, D, H, W, PB, flipped_axes, NULL), 0);
    down(dev, vgot, dvdst, VROWS * volume);
    expect_same_bytes(dev, vwant, vgot, VROWS * volume, "flip3d");
    const size_t patch = (size_t)4 * 30 * 40 * PB;
    int32_t corners[2 * 3] = {2, 11, 20, 3, 31, 27};
    for (int r = 0; r < 2; r++)
        ref->crop3d(vsrc + r * volume, vwant + r * patch, D, H, W, PB, 4, 30, 40, corners[3 * r], corners[3 * r + 1],
                    corners[3 * r + 2]);
    sl_device_rows_i32 corner = decisions_up(dev, corners, 2, 3, 0);
    cr_assert_eq(dev->crop3d_rows(dvsrc, dvdst, 2, D, H, W, PB, 4, 30, 40, corner, NULL), 0);
    down(dev, vgot, dvdst, 2 * patch);
    expect_same_bytes(dev, vwant, vgot, 2 * patch, "crop3d");

    /* Whole rows: gather, scatter, select, and CutMix's paste. */
    int64_t index[ROWS] = {2, 0, 1};
    for (int r = 0; r < ROWS; r++)
        memcpy(want + r * image, src + (size_t)index[r] * image, image);
    int64_t *dindex = up(dev, index, sizeof index);
    cr_assert_eq(dev->gather_rows(ddst, dsrc, ROWS, image, dindex, NULL), 0);
    down(dev, got, ddst, bytes);
    expect_same_bytes(dev, want, got, bytes, "gather_rows");
    for (int r = 0; r < ROWS; r++)
        memcpy(want + (size_t)index[r] * image, src + r * image, image);
    cr_assert_eq(dev->scatter_rows(ddst, dsrc, ROWS, image, dindex, NULL), 0);
    down(dev, got, ddst, bytes);
    expect_same_bytes(dev, want, got, bytes, "scatter_rows");
    for (int r = 0; r < ROWS; r++)
        memcpy(want + r * image, flips[r * STRIDE + 1] ? src + r * image : sq + r * image, image);
    uint8_t *dother = up(dev, sq, bytes);
    cr_assert_eq(dev->select_rows(ddst, dsrc, dother, ROWS, image, flip, NULL), 0);
    down(dev, got, ddst, bytes);
    expect_same_bytes(dev, want, got, bytes, "select_rows");
    const float box[4] = {5.0f, 33.0f, 0.0f, 67.0f};
    int64_t partner[ROWS] = {1, 2, 0};
    memcpy(want, src, bytes);
    for (int r = 0; r < ROWS; r++)
        ref->paste_box(want + r * image, src + (size_t)partner[r] * image, H, W, PB, 5, 33, 0, 67);
    float *dbox = up(dev, box, sizeof box);
    int64_t *dpartner = up(dev, partner, sizeof partner);
    cr_assert_eq(dev->paste_rows(ddst, dsrc, ROWS, H, W, PB, dpartner, dbox, NULL), 0);
    down(dev, got, ddst, bytes);
    expect_same_bytes(dev, want, got, bytes, "cutmix's paste_rows");

    /* MixUp's blend with partners, weights in device memory. */
    enum { VALUES = 1001 };
    float fx[ROWS * VALUES], fwant[ROWS * VALUES], fgot[ROWS * VALUES];
    fill_awkward(fx, ROWS * VALUES);
    const float w[2] = {0.625f, 0.375f};
    for (int r = 0; r < ROWS; r++)
        ref->blend(fwant + r * VALUES, fx + r * VALUES, fx + partner[r] * VALUES, VALUES, w[0], w[1]);
    float *dfx = up(dev, fx, sizeof fx), *dfy = up(dev, NULL, sizeof fx), *dw = up(dev, w, sizeof w);
    cr_assert_eq(dev->mix_rows(dfy, dfx, ROWS, VALUES, dpartner, dw, NULL), 0);
    down(dev, fgot, dfy, sizeof fgot);
    expect_same_f32(dev, fwant, fgot, ROWS * VALUES, "mixup's mix_rows");

    void *buffers[] = {dsrc,
                       ddst,
                       dsq,
                       dsq_out,
                       dvsrc,
                       dvdst,
                       dindex,
                       dother,
                       dbox,
                       dpartner,
                       dfx,
                       dfy,
                       dw,
                       (void *)offsets.table,
                       (void *)flip.table,
                       (void *)turn.table,
                       (void *)flipped_axes.table,
                       (void *)corner.table};
    for (size_t i = 0; i < sizeof buffers / sizeof buffers[0]; i++)
        dev->release(buffers[i]);
    free(src);
    free(want);
    free(got);
    free(sq);
    free(sq_want);
    free(sq_got);
    free(vsrc);
    free(vwant);
    free(vgot);
}

static void check_integers_and_sequences(const sl_device *dev)
{
    const sl_kernel_table *ref = sl_kernels_reference();
    enum { ROWS = 1000, COLS = 3 };
    static int64_t ids[ROWS * COLS], want_ids[ROWS * COLS], got_ids[ROWS * COLS];
    for (int i = 0; i < ROWS * COLS; i++)
        ids[i] = i % 11 == 0 ? -1 : (int64_t)i * 2654435761ll - 1000;
    const int64_t sizes[COLS] = {1, 1000, (int64_t)1 << 31};
    sl_hash_consts hk;
    sl_err err = {0};
    cr_assert_eq(sl_hash_consts_init(&hk, COLS, sizes, &err), SL_OK);
    ref->hash_ids(ids, want_ids, ROWS, &hk);
    int64_t *dids = up(dev, ids, sizeof ids), *dout = up(dev, NULL, sizeof ids);
    cr_assert_eq(dev->hash_ids(dids, dout, ROWS, &hk, NULL), 0);
    down(dev, got_ids, dout, sizeof ids);
    expect_same_bytes(dev, want_ids, got_ids, sizeof ids, "hash_ids");

    ref->bag_offsets(ids, want_ids, ROWS, COLS);
    cr_assert_eq(dev->bag_offsets(dids, dout, ROWS, COLS, NULL), 0);
    down(dev, got_ids, dout, sizeof ids);
    expect_same_bytes(dev, want_ids, got_ids, sizeof ids, "bag_offsets");

    /* one_hot, padding and masks, with labels and lengths out of range. */
    enum { COUNT = 300, CLASSES = 10, WIDTH = 24, CAPACITY = 40, LENGTH = 17 };
    static int32_t labels[COUNT], lengths[COUNT], tokens[COUNT * CAPACITY];
    for (int i = 0; i < COUNT; i++)
        labels[i] = i % 13 - 1, lengths[i] = i % 50 - 5;
    for (int i = 0; i < COUNT * CAPACITY; i++)
        tokens[i] = i % 23 == 22 ? 2 : 1000 + i;
    static float want_oh[COUNT * CLASSES], got_oh[COUNT * CLASSES];
    int32_t *dlabels = up(dev, labels, sizeof labels), *dlengths = up(dev, lengths, sizeof lengths);
    int32_t *dtokens = up(dev, tokens, sizeof tokens), *dpadded = up(dev, NULL, sizeof tokens);
    float *doh = up(dev, NULL, sizeof want_oh);
    ref->one_hot(labels, want_oh, COUNT, CLASSES);
    cr_assert_eq(dev->one_hot(dlabels, doh, COUNT, CLASSES, NULL), 0);
    down(dev, got_oh, doh, sizeof got_oh);
    expect_same_bytes(dev, want_oh, got_oh, sizeof got_oh, "one_hot");

    /* pad_tokens: the reference is the op's own rule, written out here:
     * the tokens before the first end token (2), at most LENGTH - 1, the
     * end token, then pads (0). */
    static int32_t want_tok[COUNT * CAPACITY], got_tok[COUNT * CAPACITY];
    for (int r = 0; r < COUNT; r++) {
        const int32_t *in = tokens + r * CAPACITY;
        int32_t *out = want_tok + r * LENGTH;
        int content = 0;
        while (content < CAPACITY && in[content] != 2)
            content++;
        int keep = content < LENGTH - 1 ? content : LENGTH - 1;
        for (int t = 0; t < LENGTH; t++)
            out[t] = t < keep ? in[t] : 0;
        out[keep] = 2;
    }
    cr_assert_eq(dev->pad_tokens(dtokens, dpadded, COUNT, CAPACITY, LENGTH, 2, 0, NULL), 0);
    down(dev, got_tok, dpadded, (size_t)COUNT * LENGTH * sizeof(int32_t));
    expect_same_bytes(dev, want_tok, got_tok, (size_t)COUNT * LENGTH * sizeof(int32_t), "pad_tokens");

    const int64_t width = WIDTH;
    int64_t *dwidth = up(dev, &width, sizeof width);
    memcpy(want_tok, tokens, sizeof tokens);
    ref->pad_rows(want_tok, lengths, COUNT, CAPACITY, WIDTH, -1);
    cr_assert_eq(dev->pad_rows(dpadded, dtokens, dlengths, COUNT, CAPACITY, dwidth, -1, NULL), 0);
    down(dev, got_tok, dpadded, (size_t)COUNT * WIDTH * sizeof(int32_t));
    expect_same_bytes(dev, want_tok, got_tok, (size_t)COUNT * WIDTH * sizeof(int32_t), "pad_rows");

    static uint8_t want_mask[COUNT * WIDTH], got_mask[COUNT * WIDTH];
    uint8_t *dmask = up(dev, NULL, (size_t)COUNT * CAPACITY);
    ref->length_mask(want_mask, lengths, COUNT, WIDTH);
    cr_assert_eq(dev->length_mask(dmask, dlengths, COUNT, CAPACITY, dwidth, NULL), 0);
    down(dev, got_mask, dmask, sizeof got_mask);
    expect_same_bytes(dev, want_mask, got_mask, sizeof got_mask, "attention mask");

    void *buffers[] = {dids, dout, dlabels, dlengths, dtokens, dpadded, doh, dwidth, dmask};
    for (size_t i = 0; i < sizeof buffers / sizeof buffers[0]; i++)
        dev->release(buffers[i]);
}

/* Bilinear resize, whole images and each row's box, from u8 and f32. */
static void check_resize(const sl_device *dev)
{
    const sl_kernel_table *ref = sl_kernels_reference();
    enum { ROWS = 2 };
    const int in_h = 97, in_w = 131, out_h = 64, out_w = 80, c = 3;
    const size_t n_in = (size_t)in_h * in_w * c, n_out = (size_t)out_h * out_w * c;
    void *storage = aligned_alloc(64, (sl_resize_plan_bytes(out_h, out_w, c) + 63) / 64 * 64);
    uint8_t *u8 = malloc(ROWS * n_in);
    float *f = malloc(ROWS * n_in * 4), *want = malloc(ROWS * n_out * 4), *got = malloc(ROWS * n_out * 4);
    for (size_t i = 0; i < ROWS * n_in; i++)
        u8[i] = (uint8_t)(i * 29 + 1);
    fill_awkward(f, (int64_t)(ROWS * n_in));
    uint8_t *du8 = up(dev, u8, ROWS * n_in);
    float *df = up(dev, f, ROWS * n_in * 4), *dout = up(dev, NULL, ROWS * n_out * 4);
    sl_resize_plan plan;
    sl_resize_plan_init(&plan, storage, in_h, in_w, out_h, out_w, c);
    float *kernel_scratch = malloc(sl_resize_scratch_values(&plan) * 4 + 4);
    for (int r = 0; r < ROWS; r++)
        ref->resize_u8(u8 + r * n_in, (int64_t)in_w * c, want + r * n_out, &plan, kernel_scratch);
    cr_assert_eq(dev->resize_rows(du8, true, dout, ROWS, in_h, in_w, c, out_h, out_w, NULL), 0);
    down(dev, got, dout, ROWS * n_out * 4);
    expect_same_f32(dev, want, got, (int64_t)(ROWS * n_out), "resize u8");
    for (int r = 0; r < ROWS; r++)
        ref->resize_f32(f + r * n_in, (int64_t)in_w * c, want + r * n_out, &plan, kernel_scratch);
    cr_assert_eq(dev->resize_rows(df, false, dout, ROWS, in_h, in_w, c, out_h, out_w, NULL), 0);
    down(dev, got, dout, ROWS * n_out * 4);
    expect_same_f32(dev, want, got, (int64_t)(ROWS * n_out), "resize f32");

    /* Boxes (y, x, h, w) of odd sizes, one the whole image. */
    int32_t boxes[ROWS * 4] = {3, 7, 41, 77, 0, 0, in_h, in_w};
    for (int r = 0; r < ROWS; r++) {
        const int32_t *b = boxes + 4 * r;
        sl_resize_plan_init(&plan, storage, b[2], b[3], out_h, out_w, c);
        float *box_scratch = malloc(sl_resize_scratch_values(&plan) * 4 + 4);
        ref->resize_u8(u8 + r * n_in + ((size_t)b[0] * in_w + (size_t)b[1]) * c, (int64_t)in_w * c, want + r * n_out,
                       &plan, box_scratch);
        free(box_scratch);
    }
    sl_device_rows_i32 box = decisions_up(dev, boxes, ROWS, 4, 0);
    cr_assert_eq(dev->resized_crop_rows(du8, true, dout, ROWS, in_h, in_w, c, out_h, out_w, box, NULL), 0);
    down(dev, got, dout, ROWS * n_out * 4);
    expect_same_f32(dev, want, got, (int64_t)(ROWS * n_out), "random_resized_crop");

    dev->release((void *)box.table);
    dev->release(du8);
    dev->release(df);
    dev->release(dout);
    free(storage);
    free(kernel_scratch);
    free(u8);
    free(f);
    free(want);
    free(got);
}

/* log_mel of a batch of waveforms: the emulation's ordered products are the
 * reference's bit for bit; a device's BLAS is held to MM-2's tolerance
 * (docs/determinism.md). */
static void check_log_mel(const sl_device *dev, double tolerance)
{
    if (!dev->log_mel_rows)
        cr_skip_test("%s has no BLAS for log_mel: %s", dev->name, dev->log_mel_missing);
    const sl_kernel_table *ref = sl_kernels_reference();
    enum { ROWS = 3, SAMPLES = 4000 };
    sl_melspec_consts k;
    sl_err err = {0};
    cr_assert_eq(sl_melspec_consts_init(&k, SAMPLES, 16000, 400, 160, 400, 80, &err), SL_OK, "%s", err.msg);
    float *wave = malloc(ROWS * SAMPLES * 4);
    for (int i = 0; i < ROWS * SAMPLES; i++)
        wave[i] = 0.5f * sl_u32_to_unit_float(
                             sl_philox4x32_10(sl_philox_ctr_for((uint64_t)i, 0, 0), sl_philox_key_for(9, 9)).v[0]) -
                  0.25f;
    const int64_t values = (int64_t)k.frames * k.mels;
    float *want = malloc((size_t)(ROWS * values) * 4), *got = malloc((size_t)(ROWS * values) * 4);
    float *scratch = malloc(sl_melspec_scratch_values(&k) * 4);
    for (int r = 0; r < ROWS; r++)
        ref->log_mel(wave + r * SAMPLES, want + r * values, &k, scratch);
    sl_melspec_consts on_device = k;
    const size_t dft_bytes = (size_t)k.frame * 2 * (size_t)k.bins * 4, filter_bytes = (size_t)k.bins * k.mels * 4;
    on_device.dft = up(dev, k.dft, dft_bytes);
    on_device.filters = up(dev, k.filters, filter_bytes);
    float *dwave = up(dev, wave, ROWS * SAMPLES * 4), *dout = up(dev, NULL, (size_t)(ROWS * values) * 4);
    void *dscratch = up(dev, NULL, dev->log_mel_scratch(&on_device, ROWS));
    cr_assert_eq(dev->log_mel_rows(dwave, dout, ROWS, &on_device, dscratch, NULL), 0);
    down(dev, got, dout, (size_t)(ROWS * values) * 4);
    double worst = 0;
    size_t first = 0;
    cr_expect(sl_values_match(SL_F32, want, got, (size_t)(ROWS * values), tolerance, &worst, &first),
              "log_mel on %s: value %zu is off by %g, beyond %g", dev->name, first, worst, tolerance);
    cr_log_info("log_mel on %s: largest difference from the reference %g (tolerance %g)", dev->name, worst, tolerance);
    void *buffers[] = {on_device.dft, on_device.filters, dwave, dout, dscratch};
    for (size_t i = 0; i < sizeof buffers / sizeof buffers[0]; i++)
        dev->release(buffers[i]);
    sl_melspec_consts_release(&k);
    free(wave);
    free(want);
    free(got);
    free(scratch);
}

/* The launchers that draw a batch's decisions and chain steps by rule, and
 * pack a token stream's windows, against the draws and the packing written
 * out here from their definitions (kernels/decide.h) and the reference's
 * random_resized_crop box and pack kernel. Element ids past 2^32 reach the
 * counter's upper word; the last element's window runs past the stream's
 * end. */
static void check_rules_and_packing(const sl_device *dev)
{
    enum { ROWS = 37, STRIDE = 8, STEPS = 4, SEQ = 8, TOKENS = 103 };
    int64_t ids[ROWS];
    for (int r = 0; r < ROWS; r++)
        ids[r] = r % 3 == 0 ? ((int64_t)1 << 33) + 7 * r : 12 - r % 13;
    const sl_device_batch batch = {3, 5};
    const sl_philox_key key = sl_philox_key_for(11, 4);

    sl_device_rules rules = {.nrules = 4};
    rules.rules[0] = (sl_decide_rule){.key = key, .kind = SL_DECIDE_BELOW, .columns = 2, .bound = {5, 1000003}};
    rules.rules[1] =
        (sl_decide_rule){.key = key, .kind = SL_DECIDE_BITS, .columns = 3, .bound = {1, 2, 4}, .p = 0.3f, .first = 2};
    rules.rules[2] = (sl_decide_rule){
        .key = key, .kind = SL_DECIDE_BITS, .columns = 1, .bound = {1}, .p = 0.5f, .invert = 1, .first = 3};
    sl_op crop = sl_op_random_resized_crop("image", 4, 8, 8, 0.08f, 1.0f, 4.0f / 3.0f);
    rules.rules[3] = (sl_decide_rule){.key = sl_philox_key_for(11, crop.op_id),
                                      .kind = SL_DECIDE_RESIZED_CROP,
                                      .columns = 4,
                                      .bound = {32, 24},
                                      .lo = 0.08f,
                                      .hi = 1.0f,
                                      .ratio = 4.0f / 3.0f,
                                      .first = 4};
    int32_t want[ROWS * STRIDE], got[ROWS * STRIDE];
    for (int r = 0; r < ROWS; r++) {
        int32_t *row = want + r * STRIDE;
        sl_philox_ctr w = sl_philox4x32_10(sl_philox_ctr_for((uint64_t)ids[r], 3, 0), key);
        row[0] = (int32_t)(((uint64_t)w.v[0] * 5) >> 32);
        row[1] = (int32_t)(((uint64_t)w.v[1] * 1000003) >> 32);
        row[2] = 0;
        for (int a = 0; a < 3; a++)
            row[2] |= (int32_t)((w.v[a] >> 8) * 0x1p-24f < 0.3f) << a;
        row[3] = !((w.v[0] >> 8) * 0x1p-24f < 0.5f);
        sl_crop_box box = sl_random_resized_crop_box(&crop, 11, 3, ids[r], 32, 24);
        const int32_t fields[4] = {box.y, box.x, box.h, box.w};
        memcpy(row + 4, fields, sizeof fields);
    }
    void *dev_ids = up(dev, ids, sizeof ids), *dev_batch = up(dev, &batch, sizeof batch);
    void *table = up(dev, NULL, sizeof got);
    cr_assert_eq(dev->decide_rows(dev_ids, dev_batch, &rules, table, STRIDE, ROWS, NULL), 0);
    down(dev, got, table, sizeof got);
    expect_same_bytes(dev, want, got, sizeof got, "decide_rows");

    sl_step_rule steps[STEPS] = {
        {.base = {.kind = SL_EW_CLIP, .a = -1.0f, .b = 1.0f}, .kind = SL_STEP_CONST},
        {.base = {.kind = SL_EW_GAUSSIAN_NOISE, .a = 0.25f, .key = key}, .kind = SL_STEP_NOISE},
        {.base = {.kind = SL_EW_ADD, .a = 0.2f, .key = key}, .kind = SL_STEP_CENTRED},
        {.base = {.kind = SL_EW_MULTIPLY, .key = key}, .kind = SL_STEP_UNIFORM, .lo = 0.5f, .hi = 2.0f},
    };
    sl_ew_step want_steps[ROWS * STEPS], got_steps[ROWS * STEPS];
    memset(want_steps, 0, sizeof want_steps);
    for (int r = 0; r < ROWS; r++) {
        sl_ew_step *row = want_steps + r * STEPS;
        uint32_t w = sl_philox4x32_10(sl_philox_ctr_for((uint64_t)ids[r], 3, 0), key).v[0];
        row[0] = (sl_ew_step){.kind = SL_EW_CLIP, .a = -1.0f, .b = 1.0f};
        row[1] = (sl_ew_step){
            .kind = SL_EW_GAUSSIAN_NOISE, .a = 0.25f, .key = key, .ctr = sl_philox_ctr_for((uint64_t)ids[r], 3, 0)};
        row[2] = (sl_ew_step){.kind = SL_EW_ADD, .a = 0.2f * ((float)((int32_t)(w >> 8) - (1 << 23)) * 0x1p-23f)};
        float f = 0.5f + 1.5f * ((w >> 8) * 0x1p-24f);
        row[3] = (sl_ew_step){.kind = SL_EW_MULTIPLY, .a = f > 2.0f ? 2.0f : f};
    }
    void *dev_rules = up(dev, steps, sizeof steps), *dev_steps = up(dev, NULL, sizeof got_steps);
    cr_assert_eq(dev->step_rows(dev_ids, dev_batch, dev_rules, dev_steps, STEPS, ROWS, NULL), 0);
    down(dev, got_steps, dev_steps, sizeof got_steps);
    for (int i = 0; i < ROWS * STEPS; i++) {
        const sl_ew_step *a = &want_steps[i], *b = &got_steps[i];
        cr_assert(a->kind == b->kind && memcmp(&a->a, &b->a, 4) == 0 && memcmp(&a->b, &b->b, 4) == 0 &&
                      memcmp(&a->key, &b->key, sizeof a->key) == 0 && memcmp(&a->ctr, &b->ctr, sizeof a->ctr) == 0,
                  "step_rows on %s: row %d's step %d differs from its rule's", dev->name, i / STEPS, i % STEPS);
    }

    int32_t tokens[TOKENS], want_rows[ROWS * SEQ], got_rows[ROWS * SEQ];
    for (int t = 0; t < TOKENS; t++)
        tokens[t] = 1000 + t;
    int64_t windows[ROWS];
    for (int r = 0; r < ROWS; r++) {
        windows[r] = (TOKENS + SEQ - 1) / SEQ - 1 - r % ((TOKENS + SEQ - 1) / SEQ);
        int64_t first = windows[r] * SEQ, available = TOKENS - first < SEQ ? TOKENS - first : SEQ;
        sl_kernels_reference()->pack(want_rows + r * SEQ, tokens + first, available, SEQ, -7);
    }
    void *dev_tokens = up(dev, tokens, sizeof tokens), *dev_windows = up(dev, windows, sizeof windows);
    void *dev_rows = up(dev, NULL, sizeof got_rows);
    cr_assert_eq(dev->pack_rows(dev_rows, dev_tokens, ROWS, SEQ, TOKENS, dev_windows, -7, NULL), 0);
    down(dev, got_rows, dev_rows, sizeof got_rows);
    expect_same_bytes(dev, want_rows, got_rows, sizeof got_rows, "pack_rows");

    void *blocks[] = {dev_ids, dev_batch, table, dev_rules, dev_steps, dev_tokens, dev_windows, dev_rows};
    for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; i++)
        dev->release(blocks[i]);
}

Test(device_emulation, element_wise_launchers_match_the_reference)
{
    check_element_wise(sl_device_emulation());
}

Test(device_emulation, movement_launchers_match_the_reference)
{
    check_movement(sl_device_emulation());
}

Test(device_emulation, integer_and_sequence_launchers_match_the_reference)
{
    check_integers_and_sequences(sl_device_emulation());
}

Test(device_emulation, rule_and_packing_launchers_match_their_definitions)
{
    check_rules_and_packing(sl_device_emulation());
}

Test(device_emulation, resize_launchers_match_the_reference)
{
    check_resize(sl_device_emulation());
}

Test(device_emulation, log_mel_matches_the_reference_bit_for_bit)
{
    check_log_mel(sl_device_emulation(), 0.0);
}

/* ---- On a CUDA device --------------------------------------------------- */

static const sl_device *cuda_device(void)
{
    return test_cuda_device_or_skip("to run the kernels on");
}

Test(device_cuda, element_wise_launchers_match_the_reference)
{
    check_element_wise(cuda_device());
}

Test(device_cuda, movement_launchers_match_the_reference)
{
    check_movement(cuda_device());
}

Test(device_cuda, integer_and_sequence_launchers_match_the_reference)
{
    check_integers_and_sequences(cuda_device());
}

Test(device_cuda, rule_and_packing_launchers_match_their_definitions)
{
    check_rules_and_packing(cuda_device());
}

Test(device_cuda, resize_launchers_match_the_reference)
{
    check_resize(cuda_device());
}

Test(device_cuda, log_mel_is_within_mm2s_tolerance)
{
    const sl_scenario *mm2 = sl_scenario_find("MM-2");
    cr_assert_not_null(mm2);
    check_log_mel(cuda_device(), mm2->tolerance);
}

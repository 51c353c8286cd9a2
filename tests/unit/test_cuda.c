/* The CUDA back end as far as each machine allows.
 *
 * Everywhere: the probe either finds a device or says why not, the cuda
 * adapters agree with it and never claim a device they lack, and a record's
 * device fields survive a round trip. With a device: every launcher of
 * kernels/cuda runs on it and matches the reference kernels; without one
 * those tests are skipped with the probe's reason, never passed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "kernels/cuda.h"
#include "sluice/adapter.h"
#include "sluice/kernels.h"
#include "sluice/philox.h"
#include "sluice/record.h"
#include "sluice_config.h"
#include "support.h"

#if HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

Test(cuda, the_probe_finds_a_device_or_says_why_not)
{
    sl_cuda_device_info info;
    bool available = sl_cuda_probe(&info, SL_CUDA_MIN_FREE_BYTES);
    cr_expect_eq(available, info.available);
    cr_expect_eq(info.built, (bool)HAVE_CUDA, "the probe says built=%d in a build with HAVE_CUDA=%d", info.built,
                 HAVE_CUDA);
    cr_expect_eq(sl_cuda_kernels() != NULL, (bool)HAVE_CUDA, "a launcher table exists exactly when CUDA is built");
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
    sl_record_release(&back);
    test_tmpdir_remove(dir);
}

/* ---- On the device ----------------------------------------------------- */

static void require_device(void)
{
    sl_cuda_device_info info;
    if (!sl_cuda_probe(&info, SL_CUDA_MIN_FREE_BYTES))
        cr_skip_test("no CUDA device to run the kernels on: %s", info.reason);
}

#if HAVE_CUDA
static void *to_device(const void *host, size_t bytes)
{
    void *dev = NULL;
    cr_assert_eq(cudaMalloc(&dev, bytes ? bytes : 1), cudaSuccess);
    if (host)
        cr_assert_eq(cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice), cudaSuccess);
    return dev;
}

static void from_device(void *host, const void *dev, size_t bytes)
{
    cr_assert_eq(cudaDeviceSynchronize(), cudaSuccess);
    cr_assert_eq(cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
}

/* Bitwise, except that a NaN matches any NaN: a GPU returns its canonical
 * NaN where x86 keeps the input's payload (docs/determinism.md). */
static void expect_same_f32(const float *want, const float *got, int64_t n, const char *what)
{
    for (int64_t i = 0; i < n; i++) {
        uint32_t a, b;
        memcpy(&a, &want[i], 4);
        memcpy(&b, &got[i], 4);
        if (isnan(want[i]) && isnan(got[i]))
            continue;
        cr_assert_eq(a, b, "%s: value %lld is %08x on the device, %08x in the reference", what, (long long)i, b, a);
    }
}

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
#endif

Test(cuda, element_wise_kernels_on_the_device_match_the_reference, .init = require_device)
{
#if HAVE_CUDA
    const sl_cuda_kernel_table *cu = sl_cuda_kernels();
    const sl_kernel_table *ref = sl_kernels_reference();
    enum { N = 3 * 100003 };
    float *x = malloc(N * 4), *want = malloc(N * 4), *got = malloc(N * 4);
    uint8_t *u8 = malloc(N);
    fill_awkward(x, N);
    for (int i = 0; i < N; i++)
        u8[i] = (uint8_t)(i * 37);
    float *dx = to_device(x, N * 4), *dy = to_device(NULL, N * 4);
    uint8_t *du8 = to_device(u8, N);

    const float mean[3] = {0.485f * 255, 0.456f * 255, 0.406f * 255};
    const float sd[3] = {0.229f * 255, 0.224f * 255, 0.225f * 255};
    sl_normalize_consts nk;
    sl_err err = {0};
    cr_assert_eq(sl_normalize_consts_init(&nk, 3, mean, sd, &err), SL_OK);
    sl_cuda_channels ch;
    sl_cuda_channels_from_normalize(&nk, &ch);
    ref->normalize_u8(u8, want, N / 3, &nk);
    cr_assert_eq(cu->normalize_u8(du8, dy, N, &ch, NULL), 0);
    from_device(got, dy, N * 4);
    expect_same_f32(want, got, N, "normalize u8");
    ref->normalize_f32(x, want, N / 3, &nk);
    cr_assert_eq(cu->normalize_f32(dx, dy, N, &ch, NULL), 0);
    from_device(got, dy, N * 4);
    expect_same_f32(want, got, N, "normalize f32");
    sl_normalize_consts_release(&nk);

    sl_cuda_chain chain = {5,
                           {{.kind = SL_EW_NORMALIZE, .a = 0.5f, .b = 4.0f},
                            {.kind = SL_EW_MULTIPLY, .a = 2.0f},
                            {.kind = SL_EW_CLIP, .a = 0.0f, .b = 1.0f},
                            {.kind = SL_EW_ADD, .a = 0.1f},
                            {.kind = SL_EW_MULTIPLY, .a = 0.9f}}};
    memcpy(want, x, N * 4);
    ref->ew_chain(want, N, chain.steps, chain.nsteps);
    cr_assert_eq(cudaMemcpy(dy, x, N * 4, cudaMemcpyHostToDevice), cudaSuccess);
    cr_assert_eq(cu->ew_chain(dy, N, &chain, NULL), 0);
    from_device(got, dy, N * 4);
    expect_same_f32(want, got, N, "fused element-wise chain");

    cr_assert_eq(sl_normalize_consts_init(&nk, 3, mean, sd, &err), SL_OK);
    ref->normalize_u8(u8, want, N / 3, &nk);
    ref->ew_chain(want, N, chain.steps, chain.nsteps);
    cr_assert_eq(cu->normalize_u8_chain(du8, dy, N, &ch, &chain, NULL), 0);
    from_device(got, dy, N * 4);
    expect_same_f32(want, got, N, "normalize u8 fused with a chain");
    sl_normalize_consts_release(&nk);

    /* gaussian_noise: one element of N values. */
    sl_cuda_chain noisy = {3,
                           {{.kind = SL_EW_MULTIPLY, .a = 0.5f},
                            {.kind = SL_EW_GAUSSIAN_NOISE, .a = 0.3f},
                            {.kind = SL_EW_CLIP, .a = -2.0f, .b = 2.0f}}};
    noisy.steps[1].key = sl_philox_key_for(42, 11);
    noisy.steps[1].ctr = sl_philox_ctr_for(12345, 2, 0);
    memcpy(want, x, N * 4);
    ref->ew_chain(want, N, noisy.steps, noisy.nsteps);
    cr_assert_eq(cudaMemcpy(dy, x, N * 4, cudaMemcpyHostToDevice), cudaSuccess);
    cr_assert_eq(cu->ew_chain(dy, N, &noisy, NULL), 0);
    from_device(got, dy, N * 4);
    expect_same_f32(want, got, N, "chain with gaussian_noise");

    /* The same steps per row from a row table: 3 rows of N / 3 values, each
     * row its own noise counter and brightness, against the reference's
     * chain row by row. */
    enum { ROWS = 3, VALUES = N / ROWS, RS = 2 };
    sl_ew_step table[ROWS * RS];
    for (int r = 0; r < ROWS; r++) {
        table[r * RS] = noisy.steps[1];
        table[r * RS].ctr = sl_philox_ctr_for((uint64_t)(1000 + r), 2, 0);
        table[r * RS + 1] = (sl_ew_step){.kind = SL_EW_ADD, .a = 0.1f * (float)r};
        memcpy(want + r * VALUES, x + r * VALUES, VALUES * 4);
        ref->ew_chain(want + r * VALUES, VALUES, &table[r * RS], RS);
    }
    sl_ew_step *dtable = to_device(table, sizeof table);
    cr_assert_eq(cudaMemcpy(dy, x, N * 4, cudaMemcpyHostToDevice), cudaSuccess);
    cr_assert_eq(cu->ew_chain_rows(dy, ROWS * VALUES, VALUES, dtable, RS, 0, RS, NULL), 0);
    from_device(got, dy, ROWS * VALUES * 4);
    expect_same_f32(want, got, ROWS * VALUES, "chain with per-row steps");
    cudaFree(dtable);

    sl_dropout_key d = {sl_philox_key_for(42, 7), 0x100000005ull, 3, 1288490189u, 1.0f / 0.7f};
    ref->dropout(x, want, N, &d);
    cr_assert_eq(cu->dropout(dx, dy, N, &d, NULL), 0);
    from_device(got, dy, N * 4);
    expect_same_f32(want, got, N, "dropout");

    ref->log1p(x, want, N);
    cr_assert_eq(cu->log1p(dx, dy, N, NULL), 0);
    from_device(got, dy, N * 4);
    expect_same_f32(want, got, N, "log1p");

    ref->blend(want, x, x + 1, N - 1, 0.3f, 0.7f);
    cr_assert_eq(cu->blend(dy, dx, dx + 1, N - 1, 0.3f, 0.7f, NULL), 0);
    from_device(got, dy, (N - 1) * 4);
    expect_same_f32(want, got, N - 1, "blend");

    cudaFree(dx);
    cudaFree(dy);
    cudaFree(du8);
    free(x);
    free(want);
    free(got);
    free(u8);
#endif
}

Test(cuda, movement_and_integer_kernels_on_the_device_match_the_reference, .init = require_device)
{
#if HAVE_CUDA
    const sl_cuda_kernel_table *cu = sl_cuda_kernels();
    const sl_kernel_table *ref = sl_kernels_reference();
    enum { H = 61, W = 67, PB = 3 };
    size_t bytes = (size_t)H * W * PB;
    uint8_t *src = malloc(bytes), *want = malloc(bytes), *got = malloc(bytes);
    for (size_t i = 0; i < bytes; i++)
        src[i] = (uint8_t)(i * 131 + 7);
    uint8_t *dsrc = to_device(src, bytes), *ddst = to_device(NULL, bytes);

    ref->crop_pad(src, want, H, W, PB, 40, 50, 7, 9);
    cr_assert_eq(cu->crop_pad(dsrc, ddst, H, W, PB, 40, 50, 7, 9, NULL), 0);
    from_device(got, ddst, bytes);
    cr_expect(memcmp(want, got, bytes) == 0, "crop_pad differs on the device");

    memcpy(want, src, bytes);
    ref->hflip(want, H, W, PB);
    cr_assert_eq(cu->hflip(dsrc, ddst, H, W, PB, NULL), 0);
    from_device(got, ddst, bytes);
    cr_expect(memcmp(want, got, bytes) == 0, "hflip differs on the device");

    for (int k = 0; k < 4; k++) {
        size_t sq = (size_t)H * H * PB;
        ref->rot90(src, want, H, PB, k);
        cr_assert_eq(cu->rot90(dsrc, ddst, H, PB, k, NULL), 0);
        from_device(got, ddst, sq);
        cr_expect(memcmp(want, got, sq) == 0, "rot90 by %d differs on the device", k);
    }

    enum { ROWS = 1000, COLS = 3 };
    int64_t ids[ROWS * COLS], want_ids[ROWS * COLS], got_ids[ROWS * COLS];
    for (int i = 0; i < ROWS * COLS; i++)
        ids[i] = (int64_t)i * 2654435761ll - 1000;
    const int64_t sizes[COLS] = {1, 1000, (int64_t)1 << 31};
    sl_hash_consts hk;
    sl_err err = {0};
    cr_assert_eq(sl_hash_consts_init(&hk, COLS, sizes, &err), SL_OK);
    ref->hash_ids(ids, want_ids, ROWS, &hk);
    int64_t *dids = to_device(ids, sizeof ids), *dout = to_device(NULL, sizeof ids);
    cr_assert_eq(cu->hash_ids(dids, dout, ROWS, &hk, NULL), 0);
    from_device(got_ids, dout, sizeof ids);
    cr_expect(memcmp(want_ids, got_ids, sizeof ids) == 0, "hash_ids differs on the device");

    enum { D = 7 };
    size_t vbytes = (size_t)D * H * W * PB;
    uint8_t *vsrc = malloc(vbytes), *vwant = malloc(vbytes), *vgot = malloc(vbytes);
    for (size_t i = 0; i < vbytes; i++)
        vsrc[i] = (uint8_t)(i * 61 + 3);
    uint8_t *dvsrc = to_device(vsrc, vbytes), *dvdst = to_device(NULL, vbytes);
    for (unsigned axes = 0; axes < 8; axes++) {
        memcpy(vwant, vsrc, vbytes);
        ref->flip3d(vwant, D, H, W, PB, axes);
        cr_assert_eq(cu->flip3d(dvsrc, dvdst, D, H, W, PB, axes, NULL), 0);
        from_device(vgot, dvdst, vbytes);
        cr_expect(memcmp(vwant, vgot, vbytes) == 0, "flip3d of axes %u differs on the device", axes);
    }
    size_t pbytes = (size_t)4 * 30 * 40 * PB;
    ref->crop3d(vsrc, vwant, D, H, W, PB, 4, 30, 40, 2, 11, 20);
    cr_assert_eq(cu->crop3d(dvsrc, dvdst, H, W, PB, 4, 30, 40, 2, 11, 20, NULL), 0);
    from_device(vgot, dvdst, pbytes);
    cr_expect(memcmp(vwant, vgot, pbytes) == 0, "crop3d differs on the device");

    /* one_hot, pack, pad_rows and the attention mask, with lengths and
     * labels outside their ranges. */
    enum { COUNT = 300, CLASSES = 10, WIDTH = 24, STRIDE = 40 };
    int32_t labels[COUNT], lengths[COUNT], tokens[COUNT * STRIDE];
    for (int i = 0; i < COUNT; i++)
        labels[i] = i % 13 - 1, lengths[i] = i % 50 - 5;
    for (int i = 0; i < COUNT * STRIDE; i++)
        tokens[i] = i;
    static float want_oh[COUNT * CLASSES], got_oh[COUNT * CLASSES];
    int32_t *dlabels = to_device(labels, sizeof labels), *dlengths = to_device(lengths, sizeof lengths);
    int32_t *dtokens = to_device(tokens, sizeof tokens), *dpadded = to_device(NULL, sizeof tokens);
    float *doh = to_device(NULL, sizeof want_oh);
    ref->one_hot(labels, want_oh, COUNT, CLASSES);
    cr_assert_eq(cu->one_hot(dlabels, doh, COUNT, CLASSES, NULL), 0);
    from_device(got_oh, doh, sizeof got_oh);
    cr_expect(memcmp(want_oh, got_oh, sizeof got_oh) == 0, "one_hot differs on the device");

    static int32_t want_tok[COUNT * STRIDE], got_tok[COUNT * STRIDE];
    ref->pack(want_tok, tokens, 100, 256, -3);
    cr_assert_eq(cu->pack(dpadded, dtokens, 100, 256, -3, NULL), 0);
    from_device(got_tok, dpadded, 256 * sizeof(int32_t));
    cr_expect(memcmp(want_tok, got_tok, 256 * sizeof(int32_t)) == 0, "pack differs on the device");

    memcpy(want_tok, tokens, sizeof tokens);
    ref->pad_rows(want_tok, lengths, COUNT, STRIDE, WIDTH, 0);
    cr_assert_eq(cu->pad_rows(dpadded, dtokens, dlengths, COUNT, STRIDE, WIDTH, 0, NULL), 0);
    from_device(got_tok, dpadded, (size_t)COUNT * WIDTH * sizeof(int32_t));
    cr_expect(memcmp(want_tok, got_tok, (size_t)COUNT * WIDTH * sizeof(int32_t)) == 0,
              "pad_rows differs on the device");

    static uint8_t want_mask[COUNT * WIDTH], got_mask[COUNT * WIDTH];
    uint8_t *dmask = to_device(NULL, sizeof want_mask);
    ref->length_mask(want_mask, lengths, COUNT, WIDTH);
    cr_assert_eq(cu->length_mask(dmask, dlengths, COUNT, WIDTH, NULL), 0);
    from_device(got_mask, dmask, sizeof got_mask);
    cr_expect(memcmp(want_mask, got_mask, sizeof got_mask) == 0, "attention mask differs on the device");

    cudaFree(dsrc);
    cudaFree(ddst);
    cudaFree(dids);
    cudaFree(dout);
    cudaFree(dvsrc);
    cudaFree(dvdst);
    cudaFree(dlabels);
    cudaFree(dlengths);
    cudaFree(dtokens);
    cudaFree(dpadded);
    cudaFree(doh);
    cudaFree(dmask);
    free(src);
    free(want);
    free(got);
    free(vsrc);
    free(vwant);
    free(vgot);
#endif
}

Test(cuda, bilinear_resize_on_the_device_matches_the_reference, .init = require_device)
{
#if HAVE_CUDA
    const sl_cuda_kernel_table *cu = sl_cuda_kernels();
    const sl_kernel_table *ref = sl_kernels_reference();
    const int in_h = 97, in_w = 131, out_h = 64, out_w = 80, c = 3;
    size_t n_in = (size_t)in_h * in_w * c, n_out = (size_t)out_h * out_w * c;
    sl_resize_plan plan, dev_plan;
    void *storage = aligned_alloc(64, (sl_resize_plan_bytes(out_h, out_w, c) + 63) / 64 * 64);
    sl_resize_plan_init(&plan, storage, in_h, in_w, out_h, out_w, c);
    float *scratch = malloc(sl_resize_scratch_values(&plan) * 4 + 4);
    uint8_t *u8 = malloc(n_in);
    float *f = malloc(n_in * 4), *want = malloc(n_out * 4), *got = malloc(n_out * 4);
    for (size_t i = 0; i < n_in; i++)
        u8[i] = (uint8_t)(i * 29 + 1);
    fill_awkward(f, (int64_t)n_in);
    cr_assert_eq(sl_cuda_resize_plan_upload(&plan, &dev_plan), 0);
    uint8_t *du8 = to_device(u8, n_in);
    float *df = to_device(f, n_in * 4), *dout = to_device(NULL, n_out * 4);

    ref->resize_u8(u8, (int64_t)in_w * c, want, &plan, scratch);
    cr_assert_eq(cu->resize_u8(du8, (int64_t)in_w * c, dout, &dev_plan, NULL), 0);
    from_device(got, dout, n_out * 4);
    expect_same_f32(want, got, (int64_t)n_out, "resize u8");
    ref->resize_f32(f, (int64_t)in_w * c, want, &plan, scratch);
    cr_assert_eq(cu->resize_f32(df, (int64_t)in_w * c, dout, &dev_plan, NULL), 0);
    from_device(got, dout, n_out * 4);
    expect_same_f32(want, got, (int64_t)n_out, "resize f32");

    sl_cuda_resize_plan_free(&dev_plan);
    cudaFree(du8);
    cudaFree(df);
    cudaFree(dout);
    free(storage);
    free(scratch);
    free(u8);
    free(f);
    free(want);
    free(got);
#endif
}

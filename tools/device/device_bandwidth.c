/* sluice-device-bandwidth: how close sluice's device kernels come to the
 * device's own copy bandwidth, and its page-locked host-to-device copies to
 * the bus (ci/gpu-check.sh prints this in its summary).
 *
 * Each figure is bytes moved (read plus written) per second, the median of
 * seven trials of ten launches on a buffer far larger than any cache, timed
 * on the host around a synchronised stream. The kernels are the device
 * table's own (kernels/device.h), so this measures what a batch runs. With
 * --emulate it runs the host emulation instead, which is how the program is
 * tested on machines without a GPU; those figures are the CPU's.
 *
 * It also runs log_mel on a batch of MM-2's waveforms (16000 samples, 80
 * mels, bs 16) through the device's BLAS and prints the largest difference
 * from the reference kernels beside MM-2's stated tolerance: the figure
 * docs/determinism.md quotes for the device. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/device.h"
#include "sluice/bench/scenario.h"
#include "sluice/core/compare.h"
#include "sluice/core/philox.h"
#include "sluice/core/timing.h"
#include "sluice/corpus/scenarios.h"
#include "sluice/pipeline/op_consts.h"

#define TRIALS   7
#define LAUNCHES 10

typedef int (*launch_fn)(const sl_device *dev, void *a, void *b, int64_t n);

static int copy_d2d(const sl_device *dev, void *a, void *b, int64_t n)
{
    return dev->copy(b, a, (size_t)n * sizeof(float), SL_DEVICE_DEVICE_TO_DEVICE, NULL);
}

static int copy_h2d(const sl_device *dev, void *a, void *b, int64_t n)
{
    return dev->copy(b, a, (size_t)n * sizeof(float), SL_DEVICE_HOST_TO_DEVICE, NULL);
}

static int normalize_u8(const sl_device *dev, void *a, void *b, int64_t n)
{
    sl_device_channels k = {.channels = 3, .a = {123.675f, 116.28f, 103.53f}, .b = {0.0171f, 0.0175f, 0.0174f}};
    return dev->normalize_u8(a, b, n, &k, NULL);
}

static int chain4(const sl_device *dev, void *a, void *b, int64_t n)
{
    (void)a;
    sl_device_chain chain = {4,
                             {{.kind = SL_EW_MULTIPLY, .a = 0.5f},
                              {.kind = SL_EW_ADD, .a = 0.25f},
                              {.kind = SL_EW_CLIP, .a = -1.0f, .b = 1.0f},
                              {.kind = SL_EW_MULTIPLY, .a = 3.0f}}};
    return dev->ew_chain(b, n, &chain, NULL);
}

static int compare_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* A bandwidth in GB/s with three significant digits and no exponent
 * (2986, 55.0, 0.0421): an emulation under a sanitizer moves a few MB/s,
 * which one decimal would print as 0.0, as if nothing moved. */
static const char *gbs_text(double gbs, char *text, size_t size)
{
    int decimals = gbs >= 100.0 ? 0 : gbs >= 10.0 ? 1 : gbs >= 1.0 ? 2 : gbs > 0.0 ? 2 - (int)floor(log10(gbs)) : 1;
    snprintf(text, size, "%.*f", decimals, gbs);
    return text;
}

/* Median GB/s of `launch` moving `bytes` per launch. */
static double measure(const sl_device *dev, launch_fn launch, void *a, void *b, int64_t n, double bytes, int *error)
{
    int64_t took[TRIALS];
    for (int t = 0; t < TRIALS && !*error; t++) {
        int64_t start = sl_now_ns();
        for (int l = 0; l < LAUNCHES && !*error; l++)
            *error = launch(dev, a, b, n);
        if (!*error)
            *error = dev->stream_sync(NULL);
        took[t] = sl_now_ns() - start;
    }
    if (*error)
        return 0.0;
    qsort(took, TRIALS, sizeof took[0], compare_i64);
    return bytes * LAUNCHES / (double)took[TRIALS / 2];
}

/* log_mel of MM-2's shape on the device against the reference kernels:
 * the largest absolute difference over a batch, or a negative error. */
static int log_mel_difference(const sl_device *dev, double *worst)
{
    enum { ROWS = 16, SAMPLES = 16000 };
    sl_melspec_consts k;
    sl_err err = {0};
    if (sl_melspec_consts_init(&k, SAMPLES, 16000, 400, 160, 400, 80, &err))
        return SL_DEVICE_EUNSUPPORTED;
    const int64_t values = (int64_t)k.frames * k.mels;
    const size_t wave_bytes = (size_t)ROWS * SAMPLES * sizeof(float),
                 out_bytes = (size_t)(ROWS * values) * sizeof(float);
    const size_t dft_bytes = (size_t)k.frame * 2 * (size_t)k.bins * sizeof(float);
    const size_t filter_bytes = (size_t)k.bins * (size_t)k.mels * sizeof(float);
    float *wave = malloc(wave_bytes), *want = malloc(out_bytes), *got = malloc(out_bytes);
    float *scratch = malloc(sl_melspec_scratch_values(&k) * sizeof(float));
    sl_melspec_consts on_device = k;
    on_device.dft = on_device.filters = NULL;
    void *dwave = NULL, *dout = NULL, *dscratch = NULL;
    int e = wave && want && got && scratch ? 0 : SL_DEVICE_ENOMEM;
    sl_philox_key key = sl_philox_key_for(42, 2);
    for (int64_t i = 0; !e && i < (int64_t)ROWS * SAMPLES; i++)
        wave[i] = sl_u32_to_unit_float(sl_philox4x32_10(sl_philox_ctr_for((uint64_t)i, 0, 0), key).v[0]) - 0.5f;
    for (int r = 0; !e && r < ROWS; r++)
        sl_kernels_reference()->log_mel(wave + (size_t)r * SAMPLES, want + r * values, &k, scratch);
    if (!e)
        e = dev->alloc((void **)&on_device.dft, dft_bytes);
    if (!e)
        e = dev->alloc((void **)&on_device.filters, filter_bytes);
    if (!e)
        e = dev->alloc(&dwave, wave_bytes);
    if (!e)
        e = dev->alloc(&dout, out_bytes);
    if (!e)
        e = dev->alloc(&dscratch, dev->log_mel_scratch(&k, ROWS));
    if (!e)
        e = dev->copy(on_device.dft, k.dft, dft_bytes, SL_DEVICE_HOST_TO_DEVICE, NULL);
    if (!e)
        e = dev->copy(on_device.filters, k.filters, filter_bytes, SL_DEVICE_HOST_TO_DEVICE, NULL);
    if (!e)
        e = dev->copy(dwave, wave, wave_bytes, SL_DEVICE_HOST_TO_DEVICE, NULL);
    if (!e)
        e = dev->log_mel_rows(dwave, dout, ROWS, &on_device, dscratch, NULL);
    if (!e)
        e = dev->copy(got, dout, out_bytes, SL_DEVICE_DEVICE_TO_HOST, NULL);
    if (!e)
        e = dev->stream_sync(NULL);
    if (!e)
        sl_values_match(SL_F32, want, got, (size_t)(ROWS * values), 1e30, worst, NULL);
    void *buffers[] = {on_device.dft, on_device.filters, dwave, dout, dscratch};
    for (size_t i = 0; i < sizeof buffers / sizeof buffers[0]; i++)
        if (buffers[i])
            dev->release(buffers[i]);
    sl_melspec_consts_release(&k);
    free(wave);
    free(want);
    free(got);
    free(scratch);
    return e;
}

int main(int argc, char **argv)
{
    bool emulate = argc > 1 && strcmp(argv[1], "--emulate") == 0;
    if (argc > 2 || (argc == 2 && !emulate)) {
        fprintf(stderr, "usage: sluice-device-bandwidth [--emulate]\n");
        return 2;
    }
    char reason[256] = "";
    const sl_device *dev = emulate ? sl_device_emulation() : sl_device_cuda(reason, sizeof reason);
    if (!dev) {
        printf("no device: %s\n", reason);
        return 0;
    }
    /* 256 MiB of floats on the device; the emulation's 16 MiB keep a CPU
     * run short and still far beyond its caches. */
    const int64_t n = emulate ? (int64_t)4 << 20 : (int64_t)64 << 20;
    void *a = NULL, *b = NULL, *pinned = NULL;
    int error = dev->alloc(&a, (size_t)n * sizeof(float));
    if (!error)
        error = dev->alloc(&b, (size_t)n * sizeof(float));
    if (!error)
        error = dev->host_alloc(&pinned, (size_t)n * sizeof(float));
    if (!error)
        error = dev->memset0(a, (size_t)n * sizeof(float), NULL);
    if (!error)
        memset(pinned, 1, (size_t)n * sizeof(float));
    double copy = 0, h2d = 0, normalize = 0, chain = 0;
    if (!error)
        copy = measure(dev, copy_d2d, a, b, n, 2.0 * 4.0 * (double)n, &error);
    if (!error)
        h2d = measure(dev, copy_h2d, pinned, b, n, 4.0 * (double)n, &error);
    if (!error)
        normalize = measure(dev, normalize_u8, a, b, n, 5.0 * (double)n, &error);
    if (!error)
        chain = measure(dev, chain4, a, b, n, 8.0 * (double)n, &error);
    if (error) {
        fprintf(stderr, "sluice-device-bandwidth: the %s device failed: %s\n", dev->name, dev->error_string(error));
        return 1;
    }
    printf("| on the %s device, %lld values | GB/s (read + written) | of the device-to-device copy |\n", dev->name,
           (long long)n);
    printf("| --- | --- | --- |\n");
    char text[4][32];
    printf("| device-to-device copy | %s | 1.00 |\n", gbs_text(copy, text[0], sizeof text[0]));
    printf("| normalize u8 to f32 (1 B in, 4 B out) | %s | %.2f |\n", gbs_text(normalize, text[1], sizeof text[1]),
           normalize / copy);
    printf("| element-wise chain of 4 steps, in place | %s | %.2f |\n", gbs_text(chain, text[2], sizeof text[2]),
           chain / copy);
    printf("| page-locked host-to-device copy | %s | (the bus) |\n", gbs_text(h2d, text[3], sizeof text[3]));
    if (!dev->log_mel_rows) {
        printf("\nlog_mel on the %s device: %s\n", dev->name, dev->log_mel_missing);
    } else {
        double worst = 0.0;
        const sl_scenario *mm2 = sl_scenario_find("MM-2");
        error = log_mel_difference(dev, &worst);
        if (error) {
            fprintf(stderr, "sluice-device-bandwidth: log_mel on the %s device failed: %s\n", dev->name,
                    dev->error_string(error));
            return 1;
        }
        printf("\nlog_mel on the %s device (MM-2's shape, 16 rows): largest difference from the reference %.3g, "
               "MM-2's tolerance %.3g\n",
               dev->name, worst, mm2 ? mm2->tolerance : 0.0);
    }
    dev->release(a);
    dev->release(b);
    dev->host_release(pinned);
    return 0;
}

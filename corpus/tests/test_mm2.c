/* MM-2, audio-text pairs: the standard checks (the optimized table held to
 * the scenario's stated tolerance, docs/determinism.md); a pure tone peaks
 * in the mel bin the mel scale formula puts it in; the reference spectrogram
 * agrees with one computed here in double from the definitions (DFT, Hann
 * window, HTK triangles, Whisper's log); transcripts are cut or padded to
 * 128; and the records carry the spectrogram's GEMM rate. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "harness.h"

SL_CORPUS_STANDARD_TESTS(mm2, "MM-2", "16k")

enum {
    SAMPLES = 16000,
    RATE = 16000,
    FRAME = 400,
    HOP = 160,
    MELS = 80,
    FRAMES = 98,
    BINS = 201,
    CAPACITY = 160,
    TOKENS = 128
};

static double hz_to_mel(double f)
{
    return 2595.0 * log10(1.0 + f / 700.0);
}

static double mel_to_hz(double m)
{
    return 700.0 * (pow(10.0, m / 2595.0) - 1.0);
}

/* The peak of filter m: the (m + 1)th of 82 points evenly spaced in mel
 * from 0 Hz to the Nyquist frequency. */
static double filter_centre(int m)
{
    return mel_to_hz(hz_to_mel(RATE / 2.0) * (m + 1) / (MELS + 1));
}

/* Runs the scenario's own ops over n waveforms given here (with empty
 * transcripts) through the named adapter; returns the spectrograms. */
static float *run_scenario_ops(const float *waves, int64_t n, const char *adapter)
{
    sl_scenario_instance *instance = harness_build("MM-2", "16k");
    sl_schema schema = {.nfields = 2};
    strcpy(schema.fields[0].name, "wave");
    schema.fields[0].dtype = SL_F32;
    schema.fields[0].shape = (sl_shape){.rank = 1, .dims = {SAMPLES}};
    strcpy(schema.fields[1].name, "text");
    schema.fields[1].dtype = SL_I32;
    schema.fields[1].shape = (sl_shape){.rank = 1, .dims = {CAPACITY}};
    int32_t *texts = calloc((size_t)n * CAPACITY, sizeof *texts);
    for (int64_t i = 0; i < n; i++)
        texts[i * CAPACITY] = SL_TOKEN_EOD;
    void *data[2] = {(void *)waves, texts};
    sl_source *source;
    sl_err err = {0};
    cr_assert_eq(sl_source_memory_create(&schema, n, data, SL_BORROW, &source, &err), SL_OK, "%s", err.msg);
    sl_pipeline_spec spec = instance->spec;
    spec.source = source;
    spec.shuffle = false;
    spec.batch_size = n;
    sl_scenario_instance probe = *instance;
    cr_assert_eq(sl_pipeline_create(&spec, &probe.pipeline, &err), SL_OK, "%s", err.msg);
    run_output out;
    harness_run(&probe, adapter, 0, 0, (sl_position){0, 0}, 1, &out);
    float *mel = malloc(out.size[0]);
    memcpy(mel, out.bytes[0], out.size[0]);
    harness_release(&out);
    sl_pipeline_free(probe.pipeline);
    sl_source_free(source);
    free(texts);
    sl_scenario_instance_free(instance);
    return mel;
}

Test(log_mel, a_pure_tone_peaks_in_the_right_mel_bin)
{
    /* Tones at the peaks of filters from 20 (about 500 Hz) to 78 (about
     * 7.6 kHz), where a filter is at least as wide as the DFT's 40 Hz
     * resolution; below that, filters narrower than a DFT bin cannot
     * resolve a tone. At its own filter's peak a tone is at the zero of both
     * neighbours, so the window's leakage (a main lobe of +-80 Hz) favours
     * it, whatever the amplitude. */
    static const int targets[] = {20, 33, 47, 60, 71, 78};
    enum { N = sizeof targets / sizeof targets[0] };
    float *waves = malloc(sizeof(float) * N * SAMPLES);
    for (int i = 0; i < N; i++) {
        double f = filter_centre(targets[i]);
        for (int s = 0; s < SAMPLES; s++)
            waves[i * SAMPLES + s] = (float)(0.5 * sin(2.0 * M_PI * f * s / RATE + 0.3 * i));
    }
    static const char *const adapters[] = {"reference", "fused"};
    for (int a = 0; a < 2; a++) {
        float *mel = run_scenario_ops(waves, N, adapters[a]);
        for (int i = 0; i < N; i++)
            for (int t = 0; t < FRAMES; t++) {
                const float *row = mel + ((size_t)i * FRAMES + (size_t)t) * MELS;
                int peak = 0;
                for (int m = 1; m < MELS; m++)
                    peak = row[m] > row[peak] ? m : peak;
                cr_assert_eq(peak, targets[i], "%s: a %.1f Hz tone peaks in bin %d at frame %d, not %d", adapters[a],
                             filter_centre(targets[i]), peak, t, targets[i]);
            }
        free(mel);
    }
    free(waves);
}

/* Whisper's log-mel of one waveform, in double, from the definitions: the
 * periodic Hann window, the DFT by its sum, the power, HTK triangles of
 * peak 1, log10 floored at 1e-10 and at 8 decades below the loudest, then
 * (y + 4) / 4. */
static void log_mel_double(const float *wave, double *out)
{
    static double filters[BINS][MELS];
    double edges[MELS + 2];
    for (int i = 0; i < MELS + 2; i++)
        edges[i] = mel_to_hz(hz_to_mel(RATE / 2.0) * i / (MELS + 1));
    for (int k = 0; k < BINS; k++) {
        double f = (double)k * RATE / FRAME;
        for (int m = 0; m < MELS; m++) {
            double w =
                fmin((f - edges[m]) / (edges[m + 1] - edges[m]), (edges[m + 2] - f) / (edges[m + 2] - edges[m + 1]));
            filters[k][m] = w > 0 ? w : 0;
        }
    }
    double loudest = -1e300;
    for (int t = 0; t < FRAMES; t++) {
        double power[BINS];
        for (int k = 0; k < BINS; k++) {
            double re = 0, im = 0;
            for (int n = 0; n < FRAME; n++) {
                double x = wave[t * HOP + n] * (0.5 - 0.5 * cos(2 * M_PI * n / FRAME));
                re += x * cos(2 * M_PI * k * n / FRAME);
                im -= x * sin(2 * M_PI * k * n / FRAME);
            }
            power[k] = re * re + im * im;
        }
        for (int m = 0; m < MELS; m++) {
            double e = 0;
            for (int k = 0; k < BINS; k++)
                e += power[k] * filters[k][m];
            out[t * MELS + m] = log10(fmax(e, 1e-10));
            loudest = fmax(loudest, out[t * MELS + m]);
        }
    }
    for (int i = 0; i < FRAMES * MELS; i++)
        out[i] = (fmax(out[i], loudest - 8) + 4) / 4;
}

Test(log_mel, spectrograms_match_one_computed_in_double)
{
    /* Both back ends' products are float sums (the reference's in a fixed
     * order, the BLAS's in its own); against exact sums each is within the
     * scenario's tolerance (docs/determinism.md), which is what lets their
     * difference be held to it. */
    sl_scenario_instance *instance = harness_build("MM-2", "16k");
    static const char *const adapters[] = {"reference", "fused"};
    double *want = malloc(sizeof(double) * FRAMES * MELS);
    for (int a = 0; a < 2; a++) {
        run_output out;
        harness_run(instance, adapters[a], 0, 0, (sl_position){0, 0}, 1, &out);
        double worst = 0;
        for (int64_t r = 0; r < 4; r++) {
            const float *wave = sl_source_map(instance->fixture, 0, (size_t)out.ids[r] * SAMPLES * 4, SAMPLES * 4);
            cr_assert_not_null(wave);
            log_mel_double(wave, want);
            const float *got = harness_row(&out, 0, r);
            for (int i = 0; i < FRAMES * MELS; i++)
                worst = fmax(worst, fabs(got[i] - want[i]));
        }
        cr_log_info("%s: largest difference from double %.3g", adapters[a], worst);
        cr_expect_leq(worst, instance->scenario->tolerance, "%s: largest difference from the double computation %.3g",
                      adapters[a], worst);
        cr_expect_gt(worst, 0.0, "%s: float sums equal double ones everywhere: the comparison is not looking",
                     adapters[a]);
        harness_release(&out);
    }
    free(want);
    sl_scenario_instance_free(instance);
}

Test(mm2, transcripts_are_cut_or_padded_to_128)
{
    sl_scenario_instance *instance = harness_build("MM-2", "16k");
    run_output out;
    harness_run(instance, "fused", 0, 0, (sl_position){0, 0}, 0, &out);
    int cut = 0;
    for (int64_t r = 0; r < out.rows; r++) {
        const int32_t *text = harness_row(&out, 1, r);
        size_t row_bytes = CAPACITY * sizeof(int32_t);
        const int32_t *source = sl_source_map(instance->fixture, 1, (size_t)out.ids[r] * row_bytes, row_bytes);
        int content = 0;
        while (content < CAPACITY && source[content] != SL_TOKEN_EOD)
            content++;
        int keep = content < TOKENS - 1 ? content : TOKENS - 1;
        cut += content > TOKENS - 1;
        for (int k = 0; k < TOKENS; k++)
            cr_assert_eq(text[k], k < keep ? source[k] : (k == keep ? SL_TOKEN_EOD : SL_TOKEN_PAD), "row %lld token %d",
                         (long long)r, k);
    }
    /* Content of 3 to 130 tokens, uniform: about 4 in 128 are cut. */
    cr_expect_gt(cut, 0, "no transcript of %lld was cut", (long long)out.rows);
    harness_release(&out);
    sl_scenario_instance_free(instance);
}

Test(mm2, records_carry_the_spectrogram_gemm_rate)
{
    sl_scenario_instance *instance = harness_build("MM-2", "16k");
    sl_bench_options options;
    sl_bench_options_init(&options, SL_PROFILE_CI, 42);
    options.repetitions = 1;
    options.warmup_batches = 1;
    options.measured_batches = 2;
    options.skip_probes = true;
    sl_err err = {0};
    cr_assert_eq(sl_bench_reference_digest(instance, &options, &options.reference_digest, &err), SL_OK, "%s", err.msg);
    options.check_against_reference = true;
    sl_record record;
    cr_assert_eq(sl_bench_run(instance, sl_adapter_find("fused"), &options, &record, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(record.outcome, SL_RECORD_OK, "%s", record.reason);
    /* Not the reference's bits (a BLAS sums in its own order) but within
     * the tolerance; without a BLAS the table runs the reference's sums. */
    char blas[160];
    sl_blas_describe(blas, sizeof blas);
    if (strstr(blas, "no BLAS"))
        cr_expect_str_eq(record.equivalence, "bitwise");
    else
        cr_expect_str_eq(record.equivalence, "within 0.00025");
    const sl_record_metric *rate = NULL, *blas_rate = NULL;
    for (int i = 0; i < record.nmetrics; i++) {
        if (strcmp(record.metrics[i].name, "spectrogram_gemm_gflop_per_s") == 0)
            rate = &record.metrics[i];
        if (strcmp(record.metrics[i].name, "openblas_sgemm_gflop_per_s") == 0)
            blas_rate = &record.metrics[i];
    }
    cr_assert_not_null(rate, "no spectrogram_gemm_gflop_per_s metric");
    cr_expect_eq(rate->scope, SL_METRIC_SCENARIO);
    /* 2 x 98 x 400 x 402 + 2 x 98 x 201 x 80 flops per element, over the
     * measured latencies. */
    double ns = 0;
    for (int64_t b = 0; b < record.measured_batches; b++)
        ns += (double)record.latency_ns[b];
    double flops = (2.0 * 98 * 400 * 402 + 2.0 * 98 * 201 * 80) * (double)record.elements;
    cr_expect(fabs(rate->value - flops / ns) <= 1e-9 * rate->value, "rate %g, expected %g", rate->value, flops / ns);
    if (!strstr(blas, "no BLAS"))
        cr_expect(blas_rate && blas_rate->value > 0, "no OpenBLAS rate beside it");
    sl_record_release(&record);
    sl_scenario_instance_free(instance);
}

/* MM-2: audio-text pairs, as a speech recognizer's loader feeds them. Each
 * element is a 16 kHz waveform of one second and a tokenized transcript.
 * The waveform becomes an 80-bin log-mel spectrogram (frames of 400 samples
 * every 160, Whisper's recipe; its DFT and mel projection are two matrix
 * products that the optimized table runs through OpenBLAS's sgemm), and the
 * transcript is cut or padded to 128 tokens with MM-1's op. Its test shows a
 * pure tone peaks in the mel bin the mel scale formula predicts; its
 * records carry the spectrogram products' GFLOP/s. */
#include <stdio.h>

#include "common.h"
#include "sluice/adapters/adapter.h"
#include "sluice/corpus/scenarios.h"
#include "sluice/records/record.h"

enum {
    MM2_SAMPLES = 16000, /* one second at 16 kHz */
    MM2_RATE = 16000,
    MM2_FRAME = 400, /* 25 ms */
    MM2_HOP = 160,   /* 10 ms */
    MM2_N_FFT = 400,
    MM2_MELS = 80,
    MM2_TOKENS = 128,
    MM2_VOCAB = 51865, /* Whisper's multilingual vocabulary */
    MM2_CAPACITY = 160,
    MM2_MEAN_TRANSCRIPT = 64, /* content lengths uniform in [1, 128]: a few are cut */
};

static const sl_variant variants[] = {
    {"16k", "256 x (16000 f32 samples + 160 tokens), bs 16", {256, 5000}, {16, 16}, 0, false},
};

static sl_status build(const sl_scenario *scenario, const sl_variant *variant, const sl_build_options *options,
                       sl_scenario_instance *instance, sl_err *err)
{
    (void)scenario;
    sl_fixture_spec fixture = {.kind = SL_FIXTURE_AUDIO_TEXT,
                               .n = sl_variant_n(variant, options),
                               .samples = MM2_SAMPLES,
                               .vocab = MM2_VOCAB,
                               .mean_doc_len = MM2_MEAN_TRANSCRIPT,
                               .seq_capacity = MM2_CAPACITY};
    sl_status st = sl__scenario_make_fixture(instance, &fixture, options->seed, err);
    if (st)
        return st;
    sl__scenario_begin_spec(instance, options);
    st = sl_pipeline_spec_add(&instance->spec, sl_op_log_mel("wave", MM2_RATE, MM2_FRAME, MM2_HOP, MM2_N_FFT, MM2_MELS),
                              err);
    if (!st)
        st = sl_pipeline_spec_add(&instance->spec, sl_op_pad_tokens("text", MM2_TOKENS, SL_TOKEN_EOD, SL_TOKEN_PAD),
                                  err);
    return st;
}

/* The two products of one element, as the op runs them: frames x frame
 * times frame x 2 bins, then frames x bins times bins x mels. */
enum {
    MM2_FRAMES = 1 + (MM2_SAMPLES - MM2_FRAME) / MM2_HOP,
    MM2_BINS = MM2_N_FFT / 2 + 1,
};

static double gemm_flops_per_element(void)
{
    return 2.0 * MM2_FRAMES * MM2_FRAME * 2.0 * MM2_BINS + 2.0 * MM2_FRAMES * MM2_BINS * MM2_MELS;
}

/* The spectrogram's matrix products expressed as a rate: their floating-
 * point operations in the measured batches over the measured time, so the
 * figure includes what the loader spends around them (framing, the power,
 * the log, the text). Beside it, OpenBLAS's own sgemm at the same two
 * shapes on operands in cache, and the ratio: how much of the BLAS's speed
 * the whole pipeline keeps. */
static sl_status metrics(const sl_scenario_instance *instance, const sl_adapter *adapter,
                         const sl_kernel_table *kernels, sl_record *record, sl_err *err)
{
    (void)instance;
    (void)adapter;
    (void)kernels;
    (void)err;
    int64_t total_ns = 0;
    for (int64_t b = 0; b < record->measured_batches; b++)
        total_ns += record->latency_ns[b];
    if (total_ns <= 0)
        return SL_OK;
    double gflops = gemm_flops_per_element() * (double)record->elements / (double)total_ns;
    sl_record_add_scenario_metric(record, "spectrogram_gemm_gflop_per_s", gflops, "GFLOP/s");
    double dft_ns = sl_blas_sgemm_probe_ns(MM2_FRAMES, 2 * MM2_BINS, MM2_FRAME, 21);
    double mel_ns = sl_blas_sgemm_probe_ns(MM2_FRAMES, MM2_MELS, MM2_BINS, 21);
    if (dft_ns > 0.0 && mel_ns > 0.0) {
        double blas = gemm_flops_per_element() / (dft_ns + mel_ns);
        sl_record_add_scenario_metric(record, "openblas_sgemm_gflop_per_s", blas, "GFLOP/s");
        sl_record_add_scenario_metric(record, "gemm_fraction_of_openblas", gflops / blas, "ratio");
    }
    return SL_OK;
}

const sl_scenario sl__scenario_mm2 = {
    .id = "MM-2",
    .title = "audio-text (ASR)",
    .property = "a pure tone peaks in the right mel bin",
    .variants = variants,
    .nvariants = sizeof variants / sizeof variants[0],
    .golden_batches = 2,
    /* The BLAS sums its products in its own blocked order: outputs within
     * SL_LOG_MEL_TOLERANCE (2.5e-4 in the spectrogram's units: 0.23 % of a
     * mel energy, twice the difference measured) of the reference's;
     * docs/determinism.md says why. */
    .tolerance = SL_LOG_MEL_TOLERANCE,
    .build = build,
    .metrics = metrics,
};

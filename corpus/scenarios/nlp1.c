/* NLP-1: LLM pretraining tokens. One token stream cut into fixed-length
 * sequences; the stream stops a quarter sequence short of a multiple of the
 * length so the last sequence exercises padding. */
#include "common.h"
#include "sluice/corpus/scenarios.h"

static const sl_variant variants[] = {
    {"128", "10k sequences x 128 i32, bs 32", {10000, 10000}, {32, 32}, 128, true},
    {"2048", "100k sequences x 2048 i32, bs 16", {0, 100000}, {0, 16}, 2048, false},
};

static sl_status build(const sl_scenario *scenario, const sl_variant *variant, const sl_build_options *options,
                       sl_scenario_instance *instance, sl_err *err)
{
    (void)scenario;
    int32_t seq_len = (int32_t)variant->param;
    sl_fixture_spec fixture = {.kind = SL_FIXTURE_TOKENS,
                               .n = sl_variant_n(variant, options) * seq_len - seq_len / 4,
                               .vocab = 32000,
                               .mean_doc_len = 200};
    sl_status st = sl__scenario_make_fixture(instance, &fixture, options->seed, err);
    if (st)
        return st;
    sl__scenario_begin_spec(instance, options);
    return sl_pipeline_spec_add(&instance->spec, sl_op_pack_tokens("tokens", seq_len, SL_TOKEN_PAD), err);
}

const sl_scenario sl__scenario_nlp1 = {
    .id = "NLP-1",
    .title = "LLM pretraining tokens",
    .property = "unshuffled, batches concatenate back to the stream; shuffled, they are a permutation of its "
                "sequences",
    .variants = variants,
    .nvariants = sizeof variants / sizeof variants[0],
    .golden_batches = 2,
    .build = build,
};

/* NLP-2: variable-length text. Sequences of 10 to 512 tokens, held in a
 * capacity of 512 with a length field, are padded per batch to the
 * smallest multiple of 128 that holds the batch's longest sequence, with an
 * attention mask beside them; the `bucketed` variant first groups
 * sequences of similar length into batches. The padding waste of a whole
 * epoch is each record's scenario metric. */
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "sluice/adapters/adapter.h"
#include "sluice/corpus/scenarios.h"
#include "sluice/records/record.h"

enum {
    NLP2_MIN_LEN = 10,
    NLP2_CAPACITY = 512,
    NLP2_MULTIPLE = 128,
    NLP2_VOCAB = 32000,
    /* Stable op id: the key of the bucketed batch order. */
    NLP2_BUCKET_OP = 1,
    /* Batches per bucketing window: 512 sequences at bs 32, sorted by
     * length, so a batch spans about 1/16 of the length range. */
    NLP2_WINDOW_BATCHES = 16,
};

/* param: 1 with length bucketing. */
static const sl_variant variants[] = {
    {"padded",
     "5k sequences of U[10, 512] tokens (100k at full), bs 32, padded per batch to a multiple of 128",
     {5000, 100000},
     {32, 32},
     0,
     false},
    {"bucketed", "the same, with length bucketing in windows of 16 batches", {5000, 100000}, {32, 32}, 1, false},
};

static sl_status build(const sl_scenario *scenario, const sl_variant *variant, const sl_build_options *options,
                       sl_scenario_instance *instance, sl_err *err)
{
    (void)scenario;
    sl_fixture_spec fixture = {.kind = SL_FIXTURE_SEQUENCES,
                               .n = sl_variant_n(variant, options),
                               .vocab = NLP2_VOCAB,
                               .min_len = NLP2_MIN_LEN,
                               .max_len = NLP2_CAPACITY};
    sl_status st = sl__scenario_make_fixture(instance, &fixture, options->seed, err);
    if (st)
        return st;
    sl__scenario_begin_spec(instance, options);
    if (variant->param)
        st = sl_pipeline_spec_add(&instance->spec,
                                  sl_op_bucket_by_length("length", NLP2_BUCKET_OP, NLP2_WINDOW_BATCHES), err);
    if (st == SL_OK)
        st = sl_pipeline_spec_add(&instance->spec,
                                  sl_op_pad_to_multiple("tokens", "length", NLP2_MULTIPLE, SL_TOKEN_PAD), err);
    if (st == SL_OK)
        st = sl_pipeline_spec_add(&instance->spec, sl_op_attention_mask("tokens", "length", "mask"), err);
    return st;
}

/* Token positions and real tokens over the batches a sink has seen. */
typedef struct waste_count {
    int tokens_field, mask_field;
    int64_t positions;
    int64_t real;
} waste_count;

static int count_batch(const sl_batch *batch, void *user)
{
    waste_count *w = user;
    const sl_tensor *mask = &batch->fields[w->mask_field];
    int64_t n = sl_shape_numel(&mask->shape);
    const uint8_t *m = mask->data;
    for (int64_t i = 0; i < n; i++)
        w->real += m[i];
    w->positions += sl_shape_numel(&batch->fields[w->tokens_field].shape);
    return 0;
}

/* One epoch through the adapter: the fraction of token positions that are
 * padding. It depends on the order and the padding rule only, so every
 * adapter reports the same figure; running it through each adapter is the
 * check that each pads alike. Also the waste padding every sequence to the
 * capacity would have, the baseline dynamic padding is measured against. */
static sl_status metrics(const sl_scenario_instance *instance, const struct sl_adapter *adapter,
                         const sl_kernel_table *kernels, struct sl_record *record, sl_err *err)
{
    const sl_pipeline *p = instance->pipeline;
    const sl_schema *schema = sl_pipeline_output_schema(p);
    waste_count w = {sl_schema_find(schema, "tokens"), sl_schema_find(schema, "mask"), 0, 0};
    int64_t nbatches = sl_pipeline_batches_per_epoch(p);
    int64_t *latency = malloc((size_t)nbatches * sizeof *latency);
    if (!latency)
        return sl_fail(err, SL_ENOMEM, "NLP-2 metrics: cannot allocate %lld latencies", (long long)nbatches);
    sl_run_request request = {.start = {0, 0}, .nbatches = nbatches, .threads = 1, .kernels = kernels};
    sl_status st = adapter->run(adapter, p, &request, count_batch, &w, latency, err);
    free(latency);
    if (st)
        return st;
    if (w.positions == 0)
        return sl_fail(err, SL_EINVAL, "NLP-2 metrics: the epoch held no token positions");
    sl_record_add_scenario_metric(record, "padding_waste_fraction", 1.0 - (double)w.real / (double)w.positions,
                                  "ratio");
    double capacity_positions = (double)sl_pipeline_epoch_size(p) * NLP2_CAPACITY;
    sl_record_add_scenario_metric(record, "capacity_padding_waste_fraction", 1.0 - (double)w.real / capacity_positions,
                                  "ratio");
    return SL_OK;
}

const sl_scenario sl__scenario_nlp2 = {
    .id = "NLP-2",
    .title = "variable-length text",
    .property = "mask sums equal lengths; pads equal the pad id; no token is lost over an epoch",
    .variants = variants,
    .nvariants = sizeof variants / sizeof variants[0],
    .golden_batches = 2,
    .build = build,
    .metrics = metrics,
};

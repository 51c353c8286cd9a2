/* NLP-1, pretraining tokens: the standard checks, and that packing loses and
 * invents nothing: unshuffled batches concatenate back to the stream, and
 * shuffled ones hold exactly its sequences. */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "harness.h"

SL_CORPUS_STANDARD_TESTS(nlp1, "NLP-1", "128")

Test(nlp1, unshuffled_batches_concatenate_to_the_stream)
{
    sl_build_options options;
    sl_build_options_init(&options, SL_PROFILE_CI, 42);
    options.shuffle = false;
    sl_scenario_instance *instance = harness_build_with("NLP-1", "128", &options);
    run_output out;
    harness_run(instance, "iter", 0, 0, (sl_position){0, 0}, 0, &out);
    int64_t tokens = sl_source_rows(instance->fixture);
    const int32_t *stream = sl_source_map(instance->fixture, 0, 0, (size_t)tokens * sizeof(int32_t));
    cr_assert_not_null(stream);
    const int32_t *packed = (const int32_t *)out.bytes[0];
    int64_t packed_tokens = (int64_t)(out.size[0] / sizeof(int32_t));
    /* 10k sequences of 128 with the stream a quarter sequence short. */
    cr_assert_eq(packed_tokens, 10000 * 128);
    cr_assert_eq(tokens, 10000 * 128 - 32);
    for (int64_t i = 0; i < tokens; i++)
        cr_assert_eq(packed[i], stream[i], "token %lld: %d, stream has %d", (long long)i, packed[i], stream[i]);
    for (int64_t i = tokens; i < packed_tokens; i++)
        cr_assert_eq(packed[i], SL_TOKEN_PAD, "tail token %lld is %d, not the pad id", (long long)i, packed[i]);
    harness_release(&out);
    sl_scenario_instance_free(instance);
}

static int compare_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static uint64_t *sorted_sequence_digests(const run_output *out)
{
    uint64_t *d = malloc((size_t)out->rows * sizeof *d);
    for (int64_t r = 0; r < out->rows; r++)
        d[r] = sl_digest_bytes(harness_row(out, 0, r), out->row_bytes[0]);
    qsort(d, (size_t)out->rows, sizeof *d, compare_u64);
    return d;
}

Test(nlp1, shuffled_batches_are_a_permutation_of_the_sequences)
{
    sl_build_options options;
    sl_build_options_init(&options, SL_PROFILE_CI, 42);
    options.shuffle = false;
    sl_scenario_instance *plain = harness_build_with("NLP-1", "128", &options);
    sl_scenario_instance *shuffled = harness_build("NLP-1", "128");
    run_output a, b;
    harness_run(plain, "reference", 0, 0, (sl_position){0, 0}, 0, &a);
    /* The rest of epoch 0 from batch 1, to compare with the whole epoch. */
    int64_t per_epoch = sl_pipeline_batches_per_epoch(shuffled->pipeline);
    harness_run(shuffled, "fused", 0, 0, (sl_position){0, 1}, per_epoch - 1, &b);
    run_output whole;
    harness_run(shuffled, "fused", 0, 0, (sl_position){0, 0}, 0, &whole);
    cr_assert_eq(whole.rows, a.rows);
    uint64_t *da = sorted_sequence_digests(&a), *dw = sorted_sequence_digests(&whole);
    cr_expect(memcmp(da, dw, (size_t)a.rows * sizeof *da) == 0, "the shuffled epoch holds other sequences");
    cr_expect(memcmp(a.bytes[0], whole.bytes[0], a.size[0]) != 0, "the shuffled epoch is in stream order");
    /* Starting at batch 1 yields exactly the rest of the full epoch. */
    cr_expect(memcmp(b.bytes[0], whole.bytes[0] + whole.row_bytes[0] * 32, b.size[0]) == 0);
    free(da);
    free(dw);
    harness_release(&a);
    harness_release(&b);
    harness_release(&whole);
    sl_scenario_instance_free(plain);
    sl_scenario_instance_free(shuffled);
}

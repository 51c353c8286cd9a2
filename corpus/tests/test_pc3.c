/* PC-3, differentiable rebatching: the standard checks, then the property.
 * Each 256-row batch of epoch 0 (the last one 232 rows) is produced without
 * the rebatch op and split into micro-batches of 32: as views they hold the
 * batch's own rows at the right places, as copies they are batches of their
 * own with the same bytes, and concatenated they give the batch back, bit
 * for bit. The pipeline with the rebatch op outputs exactly the pipeline
 * without it under every adapter. The VJP is the identity: a random
 * cotangent (with signed zeros, subnormals, infinities and NaN payloads, so
 * that only an exact copy passes) goes through the VJP of the concatenation
 * and of the split and comes back bit for bit, and the autodiff tape of the
 * pipeline gives the cotangent through normalize alone. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "harness.h"

SL_CORPUS_STANDARD_TESTS(pc3, "PC-3", "256to32")

enum { SIDE = 64, CHANNELS = 3, VALUES = SIDE * SIDE * CHANNELS, BATCH = 256, MICRO = 32 };
#define ROW_BYTES ((size_t)VALUES * sizeof(float))

static const float pc3_mean[3] = {0.5f, 0.45f, 0.55f};
static const float pc3_std[3] = {0.29f, 0.3f, 0.28f};

/* The scenario's pipeline without its last op (the rebatch): what the
 * rebatch op receives. */
static sl_pipeline *without_rebatch(const sl_scenario_instance *instance)
{
    sl_pipeline_spec spec = instance->spec;
    cr_assert_eq(spec.ops[spec.nops - 1].kind, SL_OP_REBATCH, "the scenario's last op is the rebatch");
    spec.nops--;
    sl_pipeline *p;
    sl_err err = {0};
    cr_assert_eq(sl_pipeline_create(&spec, &p, &err), SL_OK, "%s", err.msg);
    return p;
}

/* Micro-batch sizes written out by hand: 8 x 32 for a full batch, and for
 * the last batch of 1000 elements (232 rows), 7 x 32 and 8. */
static int64_t expected_parts(int64_t rows, int64_t *sizes)
{
    int64_t n = 0;
    for (int64_t left = rows; left > 0; left -= MICRO)
        sizes[n++] = left < MICRO ? left : MICRO;
    return n;
}

static bool inside(const void *p, const sl_batch *b)
{
    const char *lo = b->fields[0].data, *hi = lo + (size_t)b->capacity * ROW_BYTES;
    return (const char *)p >= lo && (const char *)p < hi;
}

Test(pc3, rebatched_output_concatenates_to_the_input)
{
    sl_scenario_instance *instance = harness_build("PC-3", "256to32");
    sl_pipeline *plain = without_rebatch(instance);
    int64_t nbatches = sl_pipeline_batches_per_epoch(plain);
    cr_assert_eq(nbatches, 4, "1000 elements make 3 batches of 256 and one of 232");
    sl_err err = {0};
    sl_batch *in, *back;
    cr_assert_eq(sl_batch_create(sl_pipeline_output_schema(plain), BATCH, &in, &err), SL_OK);
    cr_assert_eq(sl_batch_create(sl_pipeline_output_schema(plain), BATCH, &back, &err), SL_OK);
    for (int64_t k = 0; k < nbatches; k++) {
        cr_assert_eq(sl_pipeline_produce(plain, sl_kernels_reference(), (sl_position){0, k}, in, &err), SL_OK, "%s",
                     err.msg);
        int64_t sizes[16];
        int64_t n = expected_parts(in->count, sizes);
        cr_assert_eq(n, 8, "batch %lld of %lld rows", (long long)k, (long long)in->count);
        cr_assert_eq(sl_rebatch_count(in->count, MICRO), n);

        /* Views: the batch's own rows, in order, nothing copied. */
        sl_batch views[16];
        cr_assert_eq(sl_batch_split_views(in, MICRO, views, n, &err), SL_OK, "%s", err.msg);
        int64_t first = 0;
        for (int64_t j = 0; j < n; j++) {
            const sl_batch *v = &views[j];
            cr_assert_eq(v->count, sizes[j], "batch %lld view %lld", (long long)k, (long long)j);
            cr_assert_eq(v->epoch, 0);
            cr_assert_eq(v->index, k, "a micro-batch keeps its batch's index");
            cr_assert_eq(v->fields[0].shape.dims[0], sizes[j]);
            cr_assert_eq(v->fields[0].data, (char *)in->fields[0].data + (size_t)first * ROW_BYTES,
                         "view %lld must point at rows [%lld, ...) of its batch", (long long)j, (long long)first);
            cr_assert(memcmp(v->element_ids, in->element_ids + first, (size_t)sizes[j] * sizeof(int64_t)) == 0);
            cr_assert_null(v->storage, "a view owns nothing");
            first += sizes[j];
        }
        cr_assert_eq(first, in->count);

        /* Copies: batches of their own with the same rows and ids. */
        sl_batch *parts[16];
        cr_assert_eq(sl_batch_split_copies(in, MICRO, parts, n, &err), SL_OK, "%s", err.msg);
        first = 0;
        for (int64_t j = 0; j < n; j++) {
            cr_assert_eq(parts[j]->count, sizes[j]);
            cr_assert_not(inside(parts[j]->fields[0].data, in), "a copied micro-batch must not borrow the batch");
            cr_assert(memcmp(parts[j]->fields[0].data, (char *)in->fields[0].data + (size_t)first * ROW_BYTES,
                             (size_t)sizes[j] * ROW_BYTES) == 0,
                      "batch %lld micro-batch %lld differs from its rows", (long long)k, (long long)j);
            cr_assert(memcmp(parts[j]->element_ids, in->element_ids + first, (size_t)sizes[j] * sizeof(int64_t)) == 0);
            first += sizes[j];
        }

        /* Concatenated into a fresh batch: the input, bit for bit. */
        memset(back->fields[0].data, 0xA5, (size_t)BATCH * ROW_BYTES);
        cr_assert_eq(sl_batch_concat((const sl_batch *const *)parts, n, back, &err), SL_OK, "%s", err.msg);
        cr_assert_eq(back->count, in->count);
        cr_assert_eq(back->epoch, in->epoch);
        cr_assert_eq(back->index, in->index);
        cr_assert(memcmp(back->element_ids, in->element_ids, (size_t)in->count * sizeof(int64_t)) == 0);
        cr_assert(memcmp(back->fields[0].data, in->fields[0].data, (size_t)in->count * ROW_BYTES) == 0,
                  "batch %lld: the concatenated micro-batches differ from the batch", (long long)k);
        for (int64_t j = 0; j < n; j++)
            sl_batch_free(parts[j]);

        /* The views concatenated back into their own batch: a no-op. */
        uint64_t before = sl_digest_bytes(in->fields[0].data, (size_t)in->count * ROW_BYTES);
        const sl_batch *view_ptrs[16];
        for (int64_t j = 0; j < n; j++)
            view_ptrs[j] = &views[j];
        cr_assert_eq(sl_batch_concat(view_ptrs, n, in, &err), SL_OK, "%s", err.msg);
        cr_assert_eq(sl_digest_bytes(in->fields[0].data, (size_t)in->count * ROW_BYTES), before);
    }
    sl_batch_free(in);
    sl_batch_free(back);
    sl_pipeline_free(plain);
    sl_scenario_instance_free(instance);
}

Test(pc3, the_rebatch_op_outputs_its_input_under_every_adapter)
{
    /* The op's output is its input concatenated back: the scenario equals
     * the scenario without its rebatch op, over two epochs, whatever runs
     * it; and the rows are the normalized fixture rows, recomputed here. */
    sl_scenario_instance *instance = harness_build("PC-3", "256to32");
    sl_pipeline *plain = without_rebatch(instance);
    sl_scenario_instance bare = *instance;
    bare.pipeline = plain;
    int64_t batches = 2 * sl_pipeline_batches_per_epoch(plain);
    run_output expected;
    harness_run(&bare, "reference", 0, 0, (sl_position){0, 0}, batches, &expected);
    const char *adapters[] = {"reference", "iter", "fused"};
    for (int a = 0; a < 3; a++) {
        run_output got;
        harness_run(instance, adapters[a], a == 1 ? 2 : 0, 0, (sl_position){0, 0}, batches, &got);
        cr_assert_eq(got.rows, expected.rows);
        cr_assert(memcmp(got.ids, expected.ids, (size_t)got.rows * sizeof(int64_t)) == 0, "%s: ids", adapters[a]);
        cr_assert(memcmp(got.bytes[0], expected.bytes[0], got.size[0]) == 0,
                  "%s: the rebatched output differs from its input", adapters[a]);
        harness_release(&got);
    }
    for (int64_t r = 0; r < expected.rows; r += 97) {
        const float *x = sl_source_map(instance->fixture, 0, (size_t)expected.ids[r] * ROW_BYTES, ROW_BYTES);
        const float *y = harness_row(&expected, 0, r);
        for (int i = 0; i < VALUES; i++) {
            int c = i % CHANNELS;
            cr_assert_eq(y[i], (x[i] - pc3_mean[c]) * (1.0f / pc3_std[c]), "row %lld value %d", (long long)r, i);
        }
    }
    harness_release(&expected);
    sl_pipeline_free(plain);
    sl_scenario_instance_free(instance);
}

/* A cotangent of rows x VALUES floats: Philox bit patterns of every kind
 * (normal numbers of both signs, and among them some chosen specials). */
static float *random_cotangent(int64_t rows, uint32_t stream)
{
    size_t n = (size_t)rows * VALUES;
    float *g = malloc(n * sizeof *g);
    sl_philox_key key = sl_philox_key_for(7, stream);
    for (size_t i = 0; i < n; i += 4) {
        sl_philox_ctr r = sl_philox4x32_10(sl_philox_ctr_for(i / 4, 0, 0), key);
        for (size_t j = 0; j < 4 && i + j < n; j++)
            g[i + j] = (sl_u32_to_unit_float(r.v[j]) - 0.5f) * 8.0f;
    }
    const uint32_t specials[] = {0x80000000u, 0x00000001u, 0x807fffffu, 0x7f800000u,
                                 0xff800000u, 0x7fc12345u, 0xffa00001u};
    for (size_t s = 0; s < sizeof specials / sizeof specials[0]; s++)
        memcpy(&g[(s * 7919 + 13) % n], &specials[s], sizeof(float));
    return g;
}

static sl_tensor cotangent_tensor(float *data, int64_t rows)
{
    return (sl_tensor){SL_F32, {4, {rows, SIDE, SIDE, CHANNELS}}, data};
}

Test(pc3, vjp_of_split_and_concat_is_the_identity)
{
    sl_err err = {0};
    const int64_t row_counts[] = {BATCH, 232};
    for (int t = 0; t < 2; t++) {
        int64_t rows = row_counts[t], sizes[16];
        int64_t n = expected_parts(rows, sizes);
        float *g = random_cotangent(rows, (uint32_t)t);
        float *parts_data = malloc((size_t)rows * ROW_BYTES), *back = malloc((size_t)rows * ROW_BYTES);
        memset(parts_data, 0xCC, (size_t)rows * ROW_BYTES);
        memset(back, 0xCC, (size_t)rows * ROW_BYTES);
        sl_tensor whole = cotangent_tensor(g, rows), result = cotangent_tensor(back, rows), parts[16];
        int64_t first = 0;
        /* The parts live in their own buffer, in reverse order, so that a
         * VJP that ignored where each part is would be caught. */
        size_t at = (size_t)rows * ROW_BYTES;
        for (int64_t j = 0; j < n; j++) {
            at -= (size_t)sizes[j] * ROW_BYTES;
            parts[j] = cotangent_tensor((float *)((char *)parts_data + at), sizes[j]);
        }
        /* The forward pass splits, then concatenates: its VJP is the
         * concatenation's VJP (a split of the cotangent), then the split's
         * (a concatenation). */
        cr_assert_eq(sl_rebatch_concat_vjp(&whole, MICRO, parts, n, &err), SL_OK, "%s", err.msg);
        for (int64_t j = 0; j < n; j++) {
            cr_assert(memcmp(parts[j].data, (char *)g + (size_t)first * ROW_BYTES, (size_t)sizes[j] * ROW_BYTES) == 0,
                      "%lld rows: micro-batch %lld's cotangent is not its rows of the cotangent", (long long)rows,
                      (long long)j);
            first += sizes[j];
        }
        cr_assert_eq(sl_rebatch_split_vjp(parts, n, &result, &err), SL_OK, "%s", err.msg);
        cr_assert(memcmp(back, g, (size_t)rows * ROW_BYTES) == 0,
                  "%lld rows: the VJP of split and concatenate is not the identity", (long long)rows);
        /* And the other way round (concatenate, then split). */
        memset(back, 0xCC, (size_t)rows * ROW_BYTES);
        cr_assert_eq(sl_rebatch_split_vjp(parts, n, &result, &err), SL_OK, "%s", err.msg);
        memset(parts_data, 0xCC, (size_t)rows * ROW_BYTES);
        cr_assert_eq(sl_rebatch_concat_vjp(&result, MICRO, parts, n, &err), SL_OK, "%s", err.msg);
        cr_assert_eq(sl_rebatch_split_vjp(parts, n, &whole, &err), SL_OK, "%s", err.msg);
        cr_assert(memcmp(whole.data, back, (size_t)rows * ROW_BYTES) == 0);
        free(g);
        free(parts_data);
        free(back);
    }
}

Test(pc3, the_pipeline_vjp_is_the_rebatch_identity_then_normalize)
{
    /* Through the autodiff tape: with the rebatch op alone on the raw
     * fixture, the input cotangent is the output cotangent bit for bit;
     * with the scenario's normalize before it, it is the cotangent times
     * 1 / std per channel, one rounding, as computed here. */
    sl_scenario_instance *instance = harness_build("PC-3", "256to32");
    sl_err err = {0};
    sl_pipeline_spec alone = instance->spec;
    alone.ops[0] = alone.ops[1];
    alone.nops = 1;
    sl_pipeline *pipelines[2];
    cr_assert_eq(sl_pipeline_create(&alone, &pipelines[0], &err), SL_OK, "%s", err.msg);
    pipelines[1] = instance->pipeline;
    const sl_position positions[] = {{0, 0}, {1, 3}};
    for (int which = 0; which < 2; which++)
        for (int k = 0; k < 2; k++) {
            sl_pipeline *p = pipelines[which];
            sl_batch *b;
            cr_assert_eq(sl_batch_create(sl_pipeline_output_schema(p), BATCH, &b, &err), SL_OK);
            sl_tape *tape;
            cr_assert_eq(sl_tape_forward(p, sl_test_kernels(), positions[k], b, &tape, &err), SL_OK, "%s", err.msg);
            int64_t rows = b->count;
            cr_assert_eq(rows, k == 0 ? BATCH : 232);
            float *g = random_cotangent(rows, 10u + (uint32_t)k);
            float *dx = malloc((size_t)rows * ROW_BYTES);
            cr_assert_eq(sl_tape_backward(tape, "x", g, dx, NULL, &err), SL_OK, "%s", err.msg);
            for (int64_t i = 0; i < rows * VALUES; i++) {
                float expected = which == 0 ? g[i] : g[i] * (1.0f / pc3_std[i % CHANNELS]);
                /* Only a NaN times 1 / std may come back with another payload. */
                bool same =
                    memcmp(&dx[i], &expected, sizeof(float)) == 0 || (which == 1 && isnan(dx[i]) && isnan(expected));
                cr_assert(same, "%s pipeline, value %lld: %a, expected %a", which == 0 ? "rebatch-only" : "PC-3",
                          (long long)i, (double)dx[i], (double)expected);
            }
            free(g);
            free(dx);
            sl_tape_free(tape);
            sl_batch_free(b);
        }
    sl_pipeline_free(pipelines[0]);
    sl_scenario_instance_free(instance);
}

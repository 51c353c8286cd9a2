/* NNX-1, stateful operator modules: the standard checks, then the module
 * against the plain function. The outputs are identical through every
 * execution mode, worker and thread count; the state after an epoch is the
 * per-channel statistics of the epoch's outputs, computed directly from the
 * fixture and the ops' definitions (within the bound of
 * docs/determinism.md), and exactly what the stated accumulation order
 * gives; the state resumes exactly from a checkpoint; and the records
 * carry the per-batch cost of the state. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "harness.h"

SL_CORPUS_STANDARD_TESTS(nnx1, "NNX-1", "64x64")

enum { SIDE = 64, CHANNELS = 3, CROP = 56, BORDER = (SIDE - CROP) / 2, PIXELS = SIDE * SIDE };
enum { VALUES = PIXELS * CHANNELS, N = 1000, BATCH = 128, CROP_OP = 1 };
static const float mean[3] = {0.485f, 0.456f, 0.406f};
static const float stddev[3] = {0.229f, 0.224f, 0.225f};

/* A run through an adapter that folds every batch into a module, as the
 * consumer of a loader would, and keeps the output for comparison. */
typedef struct folding {
    sl_module *module;
    run_output *out;
    sl_digest *digest;
} folding;

static int fold_and_keep(const sl_batch *b, void *user)
{
    folding *f = user;
    sl_err err = {0};
    cr_assert_eq(sl_module_update(f->module, b, &err), SL_OK, "%s", err.msg);
    run_output *out = f->out;
    size_t n = sl_tensor_nbytes(&b->fields[0]);
    out->bytes[0] = realloc(out->bytes[0], out->size[0] + n);
    memcpy(out->bytes[0] + out->size[0], b->fields[0].data, n);
    out->size[0] += n;
    out->ids = realloc(out->ids, (size_t)(out->rows + b->count) * sizeof *out->ids);
    memcpy(out->ids + out->rows, b->element_ids, (size_t)b->count * sizeof *out->ids);
    out->rows += b->count;
    out->batches++;
    sl_digest_add_batch(f->digest, b);
    return 0;
}

/* nbatches from start through the adapter with a module folding them. */
static sl_module *run_module(const sl_scenario_instance *instance, const char *adapter_name, int workers, int threads,
                             sl_position start, int64_t nbatches, sl_module *module, run_output *out)
{
    memset(out, 0, sizeof *out);
    out->nfields = 1;
    out->row_bytes[0] = VALUES * sizeof(float);
    sl_err err = {0};
    if (!module)
        cr_assert_eq(sl_module_create(instance->pipeline, sl_test_kernels(), "x", start, &module, &err), SL_OK, "%s",
                     err.msg);
    const sl_adapter *adapter = sl_adapter_find(adapter_name);
    cr_assert_not_null(adapter);
    sl_run_request request = {.start = start, .nbatches = nbatches, .workers = workers, .threads = threads};
    int64_t *latency = calloc((size_t)nbatches, sizeof *latency);
    folding f = {module, out, sl_digest_new()};
    cr_assert_eq(adapter->run(adapter, instance->pipeline, &request, fold_and_keep, &f, latency, &err), SL_OK, "%s",
                 err.msg);
    out->digest = sl_digest_value(f.digest);
    sl_digest_free(f.digest);
    free(latency);
    return module;
}

static void expect_same_state(const sl_module_state *a, const sl_module_state *b, const char *what)
{
    cr_assert(a->batches == b->batches && a->stats.count == b->stats.count && a->next.epoch == b->next.epoch &&
                  a->next.batch == b->next.batch,
              "%s: %lld batches, %lld values vs %lld, %lld", what, (long long)a->batches, (long long)a->stats.count,
              (long long)b->batches, (long long)b->stats.count);
    for (int c = 0; c < CHANNELS; c++)
        cr_assert(a->stats.mean[c] == b->stats.mean[c] && a->stats.m2[c] == b->stats.m2[c],
                  "%s: channel %d: %.17g %.17g vs %.17g %.17g", what, c, a->stats.mean[c], a->stats.m2[c],
                  b->stats.mean[c], b->stats.m2[c]);
}

Test(nnx1, module_and_plain_function_give_identical_outputs_and_states_in_every_mode)
{
    sl_scenario_instance *instance = harness_build("NNX-1", "64x64");
    int64_t batches = 2 * sl_pipeline_batches_per_epoch(instance->pipeline);
    run_output plain, with;
    harness_run(instance, "reference", 0, 0, (sl_position){0, 0}, batches, &plain);
    sl_module *first = run_module(instance, "reference", 0, 1, (sl_position){0, 0}, batches, NULL, &with);
    cr_assert_eq(with.digest, plain.digest, "the module changed the reference's output");
    harness_release(&with);
    static const struct {
        const char *adapter;
        int workers, threads;
    } runs[] = {
        {"iter", 0, 1}, {"iter", 2, 1}, {"fused", 0, 1}, {"fused", 0, 2}, {"per-element", 0, 1}, {"per-element", 2, 1},
    };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        char what[64];
        snprintf(what, sizeof what, "%s, %d workers, %d threads", runs[i].adapter, runs[i].workers, runs[i].threads);
        sl_module *m = run_module(instance, runs[i].adapter, runs[i].workers, runs[i].threads, (sl_position){0, 0},
                                  batches, NULL, &with);
        cr_assert_eq(with.rows, plain.rows, "%s", what);
        cr_assert(memcmp(with.bytes[0], plain.bytes[0], plain.size[0]) == 0, "%s: outputs differ", what);
        expect_same_state(sl_module_state_of(first), sl_module_state_of(m), what);
        sl_module_free(m);
        harness_release(&with);
    }
    sl_module_free(first);
    harness_release(&plain);
    sl_scenario_instance_free(instance);
}

/* Neumaier's compensated sum, for the direct statistics: its error is a few
 * units in the last place whatever the order, far inside the module's
 * bound, and it needs no long double. */
typedef struct compensated {
    double sum, carry;
} compensated;

static void add(compensated *s, double x)
{
    double t = s->sum + x;
    s->carry += fabs(s->sum) >= fabs(x) ? (s->sum - t) + x : (x - t) + s->sum;
    s->sum = t;
}

static double total(const compensated *s)
{
    return s->sum + s->carry;
}

/* Element e's output in epoch 0, from its fixture values and the ops'
 * definitions: normalize as (x - mean) * (1.0f / std) in float, then the
 * 56x56 window at the keyed offset (docs/determinism.md: word 0 the row,
 * word 1 the column, (word * 9) >> 32) moved to the centre of zeros. */
static void output_of(const float *image, int64_t element, float *out)
{
    sl_philox_ctr r = sl_philox4x32_10(sl_philox_ctr_for((uint64_t)element, 0, 0), sl_philox_key_for(42, CROP_OP));
    int oy = (int)(((uint64_t)r.v[0] * (SIDE - CROP + 1)) >> 32);
    int ox = (int)(((uint64_t)r.v[1] * (SIDE - CROP + 1)) >> 32);
    for (int y = 0; y < SIDE; y++)
        for (int x = 0; x < SIDE; x++)
            for (int c = 0; c < CHANNELS; c++) {
                int cy = y - BORDER, cx = x - BORDER;
                bool inside = cy >= 0 && cy < CROP && cx >= 0 && cx < CROP;
                out[(y * SIDE + x) * CHANNELS + c] =
                    inside ? (image[((cy + oy) * SIDE + (cx + ox)) * CHANNELS + c] - mean[c]) * (1.0f / stddev[c])
                           : 0.0f;
            }
}

Test(nnx1, state_after_an_epoch_equals_the_statistics_computed_directly)
{
    sl_scenario_instance *instance = harness_build("NNX-1", "64x64");
    int64_t batches = sl_pipeline_batches_per_epoch(instance->pipeline);
    run_output out;
    sl_module *m = run_module(instance, "fused", 0, 1, (sl_position){0, 0}, batches, NULL, &out);
    const sl_module_state *s = sl_module_state_of(m);
    cr_assert_eq(out.rows, N);
    cr_assert_eq(s->stats.count, (int64_t)N * PIXELS, "every value of every element of the epoch, once");

    /* Directly: every element's output rebuilt from the fixture, in element
     * order (not the epoch's), two passes with compensated sums. */
    static float element_out[VALUES];
    compensated sum[CHANNELS] = {{0}}, abs_sum[CHANNELS] = {{0}}, squares[CHANNELS] = {{0}};
    for (int pass = 0; pass < 2; pass++)
        for (int64_t e = 0; e < N; e++) {
            const float *image =
                sl_source_map(instance->fixture, 0, (size_t)e * VALUES * sizeof(float), VALUES * sizeof(float));
            output_of(image, e, element_out);
            for (int i = 0; i < VALUES; i++) {
                int c = i % CHANNELS;
                if (pass == 0) {
                    add(&sum[c], element_out[i]);
                    add(&abs_sum[c], fabs(element_out[i]));
                } else {
                    double d = (double)element_out[i] - total(&sum[c]) / ((double)N * PIXELS);
                    add(&squares[c], d * d);
                }
            }
        }
    double var[CHANNELS];
    sl_channel_stats_variance(&s->stats, var);
    for (int c = 0; c < CHANNELS; c++) {
        double count = (double)N * PIXELS;
        double m_direct = total(&sum[c]) / count, var_direct = total(&squares[c]) / count;
        double mean_abs = total(&abs_sum[c]) / count;
        /* docs/determinism.md: both within (n_e / 8 + 3 + 6 (E + B)) u of
         * exact, relative to the mean absolute value and to the variance,
         * 7.3e-13 here; 1e-11 is about 14 times that bound. */
        cr_expect(fabs(s->stats.mean[c] - m_direct) <= 1e-11 * mean_abs, "channel %d mean %.17g vs direct %.17g", c,
                  s->stats.mean[c], m_direct);
        cr_expect(fabs(var[c] - var_direct) <= 1e-11 * var_direct, "channel %d variance %.17g vs direct %.17g", c,
                  var[c], var_direct);
        /* A check that the statistics are the outputs', not the inputs':
         * an eighth of the values are padding zeros, and uniform [0, 1)
         * pixels normalized have variance (1/12) / std^2 inside. */
        double inside = (double)CROP * CROP / PIXELS;
        cr_expect(fabs(var_direct - inside * (1.0 / 12) / ((double)stddev[c] * stddev[c]) -
                       inside * (1 - inside) * pow((0.5 - mean[c]) / stddev[c], 2)) < 0.02,
                  "channel %d: variance %g is not that of the cropped, normalized outputs", c, var_direct);
    }
    sl_module_free(m);
    harness_release(&out);
    sl_scenario_instance_free(instance);
}

/* Chan's update as docs/determinism.md states it, on one channel. */
static void merge(double *n, double *mean, double *m2, double nb, double mean_b, double m2_b)
{
    if (*n == 0) {
        *n = nb;
        *mean = mean_b;
        *m2 = m2_b;
        return;
    }
    double total_n = *n + nb, d = mean_b - *mean;
    *mean = *mean + d * (nb / total_n);
    *m2 = *m2 + m2_b + d * d * (*n * nb / total_n);
    *n = total_n;
}

Test(nnx1, state_is_exactly_the_stated_accumulation_order)
{
    /* docs/determinism.md's order, written out here: per element and
     * channel, pixel p into partial p mod 8, the partials added as
     * ((p0 + p1) + (p2 + p3)) + ((p4 + p5) + (p6 + p7)), two passes; the
     * elements of a batch merged in row order by Chan's update, then the
     * batches merged in order the same way. */
    sl_scenario_instance *instance = harness_build("NNX-1", "64x64");
    int64_t batches = sl_pipeline_batches_per_epoch(instance->pipeline);
    run_output out;
    sl_module *m = run_module(instance, "iter", 2, 1, (sl_position){0, 0}, batches, NULL, &out);
    double n_all[CHANNELS] = {0}, mean_all[CHANNELS] = {0}, m2_all[CHANNELS] = {0};
    for (int64_t b = 0; b < batches; b++) {
        int64_t rows = b + 1 < batches ? BATCH : N - (batches - 1) * BATCH;
        for (int c = 0; c < CHANNELS; c++) {
            double n_batch = 0, mean_batch = 0, m2_batch = 0;
            for (int64_t r = 0; r < rows; r++) {
                const float *x = (const float *)harness_row(&out, 0, b * BATCH + r);
                double p[8] = {0}, q[8] = {0};
                for (int64_t i = 0; i < PIXELS; i++)
                    p[i % 8] += (double)x[i * CHANNELS + c];
                double me = (((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]))) / (double)PIXELS;
                for (int64_t i = 0; i < PIXELS; i++)
                    q[i % 8] += ((double)x[i * CHANNELS + c] - me) * ((double)x[i * CHANNELS + c] - me);
                double m2e = ((q[0] + q[1]) + (q[2] + q[3])) + ((q[4] + q[5]) + (q[6] + q[7]));
                merge(&n_batch, &mean_batch, &m2_batch, (double)PIXELS, me, m2e);
            }
            merge(&n_all[c], &mean_all[c], &m2_all[c], n_batch, mean_batch, m2_batch);
        }
    }
    const sl_module_state *s = sl_module_state_of(m);
    for (int c = 0; c < CHANNELS; c++)
        cr_expect(s->stats.mean[c] == mean_all[c] && s->stats.m2[c] == m2_all[c],
                  "channel %d: %.17g %.17g vs the stated order's %.17g %.17g", c, s->stats.mean[c], s->stats.m2[c],
                  mean_all[c], m2_all[c]);
    sl_module_free(m);
    harness_release(&out);
    sl_scenario_instance_free(instance);
}

Test(nnx1, state_survives_a_checkpoint_and_resumes_exactly)
{
    sl_scenario_instance *instance = harness_build("NNX-1", "64x64");
    int64_t per_epoch = sl_pipeline_batches_per_epoch(instance->pipeline), total_batches = 2 * per_epoch;
    cr_assert_eq(per_epoch, 8);
    run_output whole_out, part, rest;
    sl_module *whole = run_module(instance, "iter", 0, 1, (sl_position){0, 0}, total_batches, NULL, &whole_out);
    char dir[256];
    sl_err err = {0};
    cr_assert_eq(sl_workdir_create(sl_temp_base(), "nnx1", dir, sizeof dir, &err), SL_OK, "%s", err.msg);
    /* k = 8 resumes exactly at the epoch boundary. */
    const int64_t ks[] = {1, 3, 7, 8, 11};
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
        int64_t k = ks[i];
        sl_module *m = run_module(instance, "fused", 0, 1, (sl_position){0, 0}, k, NULL, &part);
        char path[320];
        snprintf(path, sizeof path, "%s/k%lld.json", dir, (long long)k);
        sl_position at = sl_position_advance(instance->pipeline, (sl_position){0, 0}, k);
        cr_assert_eq(sl_checkpoint_save_module(instance->pipeline, at, m, path, &err), SL_OK, "%s", err.msg);

        /* A fresh instance and module, as a restarted process builds them. */
        sl_scenario_instance *fresh = harness_build("NNX-1", "64x64");
        sl_module *resumed;
        cr_assert_eq(sl_module_create(fresh->pipeline, sl_test_kernels(), "x", (sl_position){0, 0}, &resumed, &err),
                     SL_OK);
        sl_position pos;
        cr_assert_eq(sl_checkpoint_load_module(fresh->pipeline, path, &pos, resumed, &err), SL_OK, "%s", err.msg);
        cr_assert(pos.epoch == at.epoch && pos.batch == at.batch);
        run_module(fresh, "iter", 2, 1, pos, total_batches - k, resumed, &rest);
        char what[48];
        snprintf(what, sizeof what, "resumed after %lld batches", (long long)k);
        expect_same_state(sl_module_state_of(whole), sl_module_state_of(resumed), what);
        cr_assert(memcmp(rest.bytes[0], whole_out.bytes[0] + part.size[0], rest.size[0]) == 0,
                  "%s: the continuation's outputs differ", what);
        sl_module_free(resumed);
        sl_module_free(m);
        harness_release(&part);
        harness_release(&rest);
        sl_scenario_instance_free(fresh);
    }
    sl_workdir_remove(dir);
    sl_module_free(whole);
    harness_release(&whole_out);
    sl_scenario_instance_free(instance);
}

Test(nnx1, records_carry_the_per_batch_cost_of_the_state)
{
    sl_scenario_instance *instance = harness_build("NNX-1", "64x64");
    sl_bench_options options;
    sl_bench_options_init(&options, SL_PROFILE_CI, 42);
    options.repetitions = 1;
    options.warmup_batches = 1;
    options.measured_batches = 3;
    options.skip_probes = true;
    sl_record record;
    sl_err err = {0};
    cr_assert_eq(sl_bench_run(instance, sl_adapter_find("iter"), &options, &record, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(record.outcome, SL_RECORD_OK, "%s", record.reason);
    const sl_record_metric *update = harness_metric(&record, "module_update_ns_per_batch");
    const sl_record_metric *plain = harness_metric(&record, "plain_p50_ns_per_batch");
    const sl_record_metric *fraction = harness_metric(&record, "module_overhead_fraction");
    cr_expect_gt(update->value, 0.0);
    cr_expect_gt(plain->value, 0.0);
    cr_expect(fabs(fraction->value - update->value / plain->value) <= 1e-12 * fraction->value);
    cr_expect_eq(fraction->scope, SL_METRIC_SCENARIO);
    cr_expect_str_eq(update->unit, "ns");
    sl_record_release(&record);
    sl_scenario_instance_free(instance);
}

/* PC-5, end-to-end differentiable: the standard checks for both modes, then
 * the property, each part against a computation of the test's own:
 * - eval disables dropout: the eval output is the affine output (the
 *   pipeline without its dropout op), bit for bit;
 * - in training every value is dropped exactly where a re-implementation of
 *   the keyed draws says (docs/determinism.md) and scaled by 1 / (1 - p)
 *   elsewhere; the dropped fraction is within 5 sd of p; the mask changes
 *   with the epoch and not with the batch size or the workers;
 * - the gradients of a mean squared error that the autodiff tape gives, for
 *   the input and for the six affine parameters, match central finite
 *   differences of the same loss computed in double from the fixture by a
 *   model written here (the bound is derived below);
 * - a few SGD steps lower the loss: monotonically on one batch in eval mode,
 *   and on a held-out batch after steps on fresh batches in training mode. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "harness.h"

SL_CORPUS_STANDARD_TESTS(pc5_train, "PC-5", "train")
SL_CORPUS_STANDARD_TESTS(pc5_eval, "PC-5", "eval")

enum { SIDE = 32, CHANNELS = 3, VALUES = SIDE * SIDE * CHANNELS, BATCH = 32, DROPOUT_OP = 1, AFFINE = 1 };
#define ROW_BYTES ((size_t)VALUES * sizeof(float))
#define DROP      0.1f
/* 2^-24, a float's unit roundoff. */
#define U24       (1.0 / 16777216.0)

static const float pc5_mean[3] = {0.5f, 0.45f, 0.55f};
static const float pc5_std[3] = {0.29f, 0.3f, 0.28f};

/* The scenario's pipeline with its last op (dropout) removed. */
static sl_pipeline *without_dropout(const sl_scenario_instance *instance)
{
    sl_pipeline_spec spec = instance->spec;
    cr_assert_eq(spec.ops[spec.nops - 1].kind, SL_OP_DROPOUT);
    spec.nops--;
    sl_pipeline *p;
    sl_err err = {0};
    cr_assert_eq(sl_pipeline_create(&spec, &p, &err), SL_OK, "%s", err.msg);
    return p;
}

static void run_pipeline(const sl_scenario_instance *instance, sl_pipeline *p, const char *adapter, int workers,
                         int64_t batches, run_output *out)
{
    sl_scenario_instance view = *instance;
    view.pipeline = p;
    harness_run(&view, adapter, workers, 0, (sl_position){0, 0}, batches, out);
}

/* Whether value v of element e is kept in epoch ep, from the table in
 * docs/determinism.md: word v mod 4 of the Philox block keyed by (seed, op
 * id) with counter (e, ep, v / 4), dropped when below ceil(p 2^32). */
static bool kept(int64_t element, int64_t epoch, int64_t v)
{
    static const uint32_t threshold = 429496736u; /* ceil(0.1f x 2^32): 0.1f x 2^32 is that integer */
    sl_philox_ctr r = sl_philox4x32_10(sl_philox_ctr_for((uint64_t)element, (uint32_t)epoch, (uint32_t)(v / 4)),
                                       sl_philox_key_for(42, DROPOUT_OP));
    return r.v[v % 4] >= threshold;
}

Test(pc5, the_drop_threshold_is_p_times_2_pow_32_rounded_up)
{
    double scaled = (double)DROP * 4294967296.0;
    cr_assert_eq((uint32_t)ceil(scaled), 429496736u, "0.1f x 2^32 = %.3f", scaled);
}

Test(pc5, eval_mode_disables_dropout)
{
    sl_scenario_instance *eval = harness_build("PC-5", "eval");
    sl_pipeline *affine = without_dropout(eval);
    int64_t batches = 2 * sl_pipeline_batches_per_epoch(affine);
    run_output a, e;
    run_pipeline(eval, affine, "reference", 0, batches, &a);
    harness_run(eval, "fused", 0, 0, (sl_position){0, 0}, batches, &e);
    cr_assert_eq(a.size[0], e.size[0]);
    cr_assert(memcmp(a.bytes[0], e.bytes[0], a.size[0]) == 0, "eval output differs from the affine output");
    /* And the affine output is normalize then affine, one rounding per
     * operation, recomputed from the fixture for a sample of rows. */
    const float scale[3] = {1.5f, 0.75f, 1.25f}, bias[3] = {0.1f, -0.2f, 0.05f};
    for (int64_t r = 0; r < a.rows; r += 61) {
        const float *x = sl_source_map(eval->fixture, 0, (size_t)a.ids[r] * ROW_BYTES, ROW_BYTES);
        const float *y = harness_row(&a, 0, r);
        for (int i = 0; i < VALUES; i++) {
            int c = i % CHANNELS;
            float n = (x[i] - pc5_mean[c]) * (1.0f / pc5_std[c]);
            cr_assert_eq(y[i], n * scale[c] + bias[c], "row %lld value %d", (long long)r, i);
        }
    }
    harness_release(&a);
    harness_release(&e);
    sl_pipeline_free(affine);
    sl_scenario_instance_free(eval);
}

Test(pc5, training_drops_the_keyed_values_and_scales_the_rest)
{
    sl_scenario_instance *train = harness_build("PC-5", "train");
    sl_pipeline *affine = without_dropout(train);
    int64_t per_epoch = sl_pipeline_batches_per_epoch(affine);
    run_output a, t;
    run_pipeline(train, affine, "reference", 0, 2 * per_epoch, &a);
    harness_run(train, "fused", 0, 0, (sl_position){0, 0}, 2 * per_epoch, &t);
    cr_assert_eq(a.rows, t.rows);
    const float keep_scale = 1.0f / (1.0f - DROP);
    int64_t dropped = 0, total = 0, changed_with_epoch = 0;
    int64_t epoch_rows = t.rows / 2;
    for (int64_t r = 0; r < t.rows; r++) {
        int64_t epoch = r / epoch_rows;
        const float *y = harness_row(&t, 0, r), *x = harness_row(&a, 0, r);
        for (int64_t v = 0; v < VALUES; v++) {
            bool keep = kept(t.ids[r], epoch, v);
            if (keep)
                cr_assert_eq(y[v], x[v] * keep_scale, "element %lld value %lld: kept, yet %a is not %a x %a",
                             (long long)t.ids[r], (long long)v, (double)y[v], (double)x[v], (double)keep_scale);
            else
                cr_assert(y[v] == 0.0f && !signbit(y[v]), "element %lld epoch %lld value %lld: dropped, yet %a",
                          (long long)t.ids[r], (long long)epoch, (long long)v, (double)y[v]);
            dropped += !keep;
            total++;
            if (epoch == 0)
                changed_with_epoch += keep != kept(t.ids[r], 1, v);
        }
    }
    /* Binomial: the dropped fraction is within 5 sd of p (0.1f x 2^32 is a
     * whole number, so the threshold makes the probability exactly p). */
    double fraction = (double)dropped / (double)total, sd = sqrt(DROP * (1.0 - DROP) / (double)total);
    cr_assert(fabs(fraction - DROP) <= 5 * sd, "dropped %.6f of %lld values, p = 0.1 +- %.6f", fraction,
              (long long)total, 5 * sd);
    /* Two independent masks disagree on 2 p (1 - p) = 18% of the values. */
    double disagree = (double)changed_with_epoch / (double)(total / 2);
    cr_assert(fabs(disagree - 0.18) < 0.01, "the masks of epochs 0 and 1 disagree on %.4f of the values", disagree);
    harness_release(&a);
    harness_release(&t);
    sl_pipeline_free(affine);
    sl_scenario_instance_free(train);
}

Test(pc5, the_mask_does_not_depend_on_batch_size_or_workers)
{
    sl_build_options options;
    sl_build_options_init(&options, SL_PROFILE_CI, 42);
    options.batch_override = 20;
    sl_scenario_instance *at32 = harness_build("PC-5", "train");
    sl_scenario_instance *at20 = harness_build_with("PC-5", "train", &options);
    run_output a, b;
    harness_run(at32, "reference", 0, 0, (sl_position){0, 0}, 0, &a);
    harness_run(at20, "iter", 2, 3, (sl_position){0, 0}, 0, &b);
    cr_assert_eq(a.rows, b.rows);
    for (int64_t r = 0; r < b.rows; r++) {
        int64_t at = harness_find_element(&a, b.ids[r], 0, a.rows);
        cr_assert_geq(at, 0);
        cr_assert(memcmp(harness_row(&a, 0, at), harness_row(&b, 0, r), ROW_BYTES) == 0,
                  "element %lld differs between bs 32 and bs 20 with 2 workers", (long long)b.ids[r]);
    }
    harness_release(&a);
    harness_release(&b);
    sl_scenario_instance_free(at32);
    sl_scenario_instance_free(at20);
}

/* --- gradients against central finite differences in double -------------- */

/* The scenario's model in double: normalize with the op's float mean and
 * std, the affine with parameters theta (scale[0..3), bias[0..3)), and the
 * dropout mask of the keyed draws scaled by 1 / (1 - p). */
typedef struct model {
    double theta[2 * CHANNELS];
    bool train;
    int64_t count;
    const float *x;   /* count x VALUES inputs, from the fixture */
    const bool *keep; /* count x VALUES mask (all true in eval) */
    const double *target;
} model;

static double model_y(const model *m, int64_t i, double x)
{
    int c = (int)(i % CHANNELS);
    double n = (x - (double)pc5_mean[c]) / (double)pc5_std[c];
    double a = n * m->theta[c] + m->theta[CHANNELS + c];
    return !m->train ? a : m->keep[i] ? a / (1.0 - (double)DROP) : 0.0;
}

/* L = 1/2 mean((y - t)^2) over the batch. */
static double model_loss(const model *m)
{
    int64_t n = m->count * VALUES;
    double sum = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = model_y(m, i, m->x[i]) - m->target[i];
        sum += d * d;
    }
    return 0.5 * sum / (double)n;
}

/* The batch at position through the tape, with the model of it. */
typedef struct grad_case {
    sl_batch *batch;
    sl_tape *tape;
    float *x;
    bool *keep;
    double *target;
    model m;
} grad_case;

static void grad_case_init(grad_case *g, const sl_scenario_instance *instance, const sl_kernel_table *kernels,
                           sl_position position)
{
    sl_err err = {0};
    const sl_pipeline *p = instance->pipeline;
    cr_assert_eq(sl_batch_create(sl_pipeline_output_schema(p), BATCH, &g->batch, &err), SL_OK);
    cr_assert_eq(sl_tape_forward(p, kernels, position, g->batch, &g->tape, &err), SL_OK, "%s", err.msg);
    int64_t count = g->batch->count, n = count * VALUES;
    g->x = malloc((size_t)n * sizeof *g->x);
    g->keep = malloc((size_t)n * sizeof *g->keep);
    g->target = malloc((size_t)n * sizeof *g->target);
    bool train = sl_pipeline_get_spec(p)->mode == SL_MODE_TRAIN;
    sl_philox_key key = sl_philox_key_for(1234, 5);
    for (int64_t r = 0; r < count; r++) {
        int64_t element = g->batch->element_ids[r];
        memcpy(g->x + r * VALUES, sl_source_map(instance->fixture, 0, (size_t)element * ROW_BYTES, ROW_BYTES),
               ROW_BYTES);
        for (int64_t v = 0; v < VALUES; v++) {
            int64_t i = r * VALUES + v;
            g->keep[i] = !train || kept(element, position.epoch, v);
            /* A target unrelated to the output: uniform in [-1, 1). */
            uint32_t word = sl_philox4x32_10(sl_philox_ctr_for((uint64_t)i, 0, 0), key).v[0];
            g->target[i] = 2.0 * sl_u32_to_unit_float(word) - 1.0;
        }
    }
    const sl_op *affine = &sl_pipeline_get_spec(p)->ops[AFFINE];
    for (int c = 0; c < CHANNELS; c++) {
        g->m.theta[c] = affine->u.affine.scale[c];
        g->m.theta[CHANNELS + c] = affine->u.affine.bias[c];
    }
    g->m.train = train;
    g->m.count = count;
    g->m.x = g->x;
    g->m.keep = g->keep;
    g->m.target = g->target;
}

static void grad_case_release(grad_case *g)
{
    sl_tape_free(g->tape);
    sl_batch_free(g->batch);
    free(g->x);
    free(g->keep);
    free(g->target);
}

/* dL/dy at the pipeline's own (float) output, rounded to float: the
 * cotangent a training loop would feed. */
static float *mse_cotangent(const grad_case *g)
{
    int64_t n = g->batch->count * VALUES;
    const float *y = g->batch->fields[0].data;
    float *dy = malloc((size_t)n * sizeof *dy);
    for (int64_t i = 0; i < n; i++)
        dy[i] = (float)(((double)y[i] - g->target[i]) / (double)n);
    return dy;
}

/* The bound. The engine's gradient of each quantity is a sum over values j
 * of dy_j times a chain of at most three float factors (1 / (1 - p), the
 * scale, 1 / std) or, for the scale, times the normalized input (two float
 * roundings from x); dy_j is the float output (three roundings from x)
 * minus the target, rounded once. Against the double model, each term
 * carries at most about 10 roundings of 2^-24 relative to
 * (|y_j| + |t_j|) / N x |dy_j/dtheta| (the float constants 1 / std and
 * 1 / (1 - p) differ from their double values by one rounding each, which
 * is among them). Summed in double (the parameter gradients) that stays
 * within 16 u of A = sum_j (|y_j| + |t_j|) / N x |dy_j/dtheta|: the error is
 * bounded by 2^-20 A. The loss is quadratic in every coordinate, so a
 * central difference has no truncation error at any step; steps of 2^-2
 * (parameters) and 2^-4 (inputs) keep the double rounding of L (a sum of N
 * terms, relative error below N 2^-53) divided by the step below 1e-10 A.
 * The relative error is then at most 2^-20 kappa, kappa = A / |gradient|,
 * the condition of the sum: about 1.3 to 1.6 for the scales and 9 to 18 for
 * the biases on these batches (asserted below 32), so relative errors below
 * 2e-5 at worst; the observed ones are below 3e-7. */
#define GRAD_BOUND (1.0 / 1048576.0)

static void check_gradients(const char *variant, sl_position position)
{
    sl_scenario_instance *instance = harness_build("PC-5", variant);
    grad_case g;
    grad_case_init(&g, instance, sl_kernels_reference(), position);
    int64_t n = g.batch->count * VALUES;
    float *dy = mse_cotangent(&g), *dx = malloc((size_t)n * sizeof *dx);
    sl_grads *grads;
    sl_err err = {0};
    cr_assert_eq(sl_grads_create(instance->pipeline, &grads, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(grads->count, 2 * CHANNELS, "only the affine op has parameters");
    cr_assert_eq(sl_tape_backward(g.tape, "x", dy, dx, grads, &err), SL_OK, "%s", err.msg);
    const double *dtheta = grads->values + grads->offset[AFFINE];
    const double keep_scale = g.m.train ? 1.0 / (1.0 - (double)DROP) : 1.0;

    /* Parameters: every one, by central differences of the whole loss. */
    for (int k = 0; k < 2 * CHANNELS; k++) {
        int c = k % CHANNELS;
        const double h = 0.25;
        model plus = g.m, minus = g.m;
        plus.theta[k] += h;
        minus.theta[k] -= h;
        double fd = (model_loss(&plus) - model_loss(&minus)) / (2 * h);
        double magnitude = 0;
        for (int64_t i = c; i < n; i += CHANNELS) {
            double y = model_y(&g.m, i, g.x[i]);
            double n_i = ((double)g.x[i] - (double)pc5_mean[c]) / (double)pc5_std[c];
            double dy_dtheta = (g.keep[i] ? keep_scale : 0.0) * (k < CHANNELS ? n_i : 1.0);
            magnitude += (fabs(y) + fabs(g.target[i])) / (double)n * fabs(dy_dtheta);
        }
        double error = fabs(dtheta[k] - fd);
        cr_log_info("%s epoch %lld batch %lld: d%s[%d] = %.9g, central difference %.9g, relative error %.2g, "
                    "kappa %.2f",
                    variant, (long long)position.epoch, (long long)position.batch, k < CHANNELS ? "scale" : "bias", c,
                    dtheta[k], fd, error / fabs(fd), magnitude / fabs(fd));
        cr_assert(error <= GRAD_BOUND * magnitude, "%s: d%s[%d] = %.9g, finite differences %.9g (error %.3g > %.3g)",
                  variant, k < CHANNELS ? "scale" : "bias", c, dtheta[k], fd, error, GRAD_BOUND * magnitude);
        /* The bound is a relative error of at most 2^-20 kappa; kappa is
         * below 20 on these batches (the biases' sums cancel most). */
        cr_assert(magnitude <= 32 * fabs(fd), "%s: d%s[%d]: kappa %.3g leaves the bound meaningless", variant,
                  k < CHANNELS ? "scale" : "bias", c, magnitude / fabs(fd));
    }

    /* Inputs: every value against the derivative of the model, and a
     * sample of 256 by central differences of the whole loss. */
    sl_philox_key key = sl_philox_key_for(99, 3);
    for (int64_t i = 0; i < n; i++) {
        int c = (int)(i % CHANNELS);
        double y = model_y(&g.m, i, g.x[i]);
        double dy_dx = (g.keep[i] ? keep_scale : 0.0) * g.m.theta[c] / (double)pc5_std[c];
        double exact = (y - g.target[i]) / (double)n * dy_dx;
        double magnitude = (fabs(y) + fabs(g.target[i])) / (double)n * fabs(dy_dx);
        if (!g.keep[i]) {
            cr_assert(dx[i] == 0.0f, "%s: value %lld is dropped, so its cotangent is 0, not %a", variant, (long long)i,
                      (double)dx[i]);
            continue;
        }
        cr_assert(fabs(dx[i] - exact) <= GRAD_BOUND * magnitude, "%s: dx[%lld] = %.9g, the model's derivative %.9g",
                  variant, (long long)i, (double)dx[i], exact);
    }
    for (int s = 0; s < 256; s++) {
        int64_t i =
            (int64_t)sl_u32_below(sl_philox4x32_10(sl_philox_ctr_for((uint64_t)s, 0, 0), key).v[0], (uint32_t)n);
        const double h = 0.0625;
        float saved = g.x[i];
        /* The model reads x through g.x; perturb it in double by
         * evaluating the loss with the one value replaced. */
        double losses[2];
        for (int side = 0; side < 2; side++) {
            double xi = (double)saved + (side ? -h : h);
            double sum = 0;
            for (int64_t j = 0; j < n; j++) {
                double d = model_y(&g.m, j, j == i ? xi : (double)g.x[j]) - g.target[j];
                sum += d * d;
            }
            losses[side] = 0.5 * sum / (double)n;
        }
        double fd = (losses[0] - losses[1]) / (2 * h);
        int c = (int)(i % CHANNELS);
        double y = model_y(&g.m, i, saved);
        double magnitude = (fabs(y) + fabs(g.target[i])) / (double)n *
                           fabs((g.keep[i] ? keep_scale : 0.0) * g.m.theta[c] / (double)pc5_std[c]);
        cr_assert(fabs(dx[i] - fd) <= GRAD_BOUND * magnitude + 1e-10 * fabs(fd) + 1e-16,
                  "%s: dx[%lld] = %.9g, finite differences %.9g", variant, (long long)i, (double)dx[i], fd);
    }
    free(dy);
    free(dx);
    sl_grads_free(grads);
    grad_case_release(&g);
    sl_scenario_instance_free(instance);
}

Test(pc5, training_gradients_match_central_finite_differences)
{
    check_gradients("train", (sl_position){0, 3});
    check_gradients("train", (sl_position){1, 0});
}

Test(pc5, eval_gradients_match_central_finite_differences)
{
    check_gradients("eval", (sl_position){0, 3});
}

Test(pc5, the_tape_is_the_pipeline_and_every_kernel_table_differentiates_alike)
{
    /* The tape's forward pass is sl_pipeline_produce bit for bit, and the
     * backward pass with the best kernels is the reference's bit for bit. */
    sl_scenario_instance *instance = harness_build("PC-5", "train");
    sl_err err = {0};
    sl_batch *produced;
    cr_assert_eq(sl_batch_create(sl_pipeline_output_schema(instance->pipeline), BATCH, &produced, &err), SL_OK);
    cr_assert_eq(sl_pipeline_produce(instance->pipeline, sl_kernels_reference(), (sl_position){2, 7}, produced, &err),
                 SL_OK, "%s", err.msg);
    grad_case ref, best;
    grad_case_init(&ref, instance, sl_kernels_reference(), (sl_position){2, 7});
    grad_case_init(&best, instance, sl_test_kernels(), (sl_position){2, 7});
    size_t bytes = (size_t)produced->count * ROW_BYTES;
    cr_assert(memcmp(ref.batch->fields[0].data, produced->fields[0].data, bytes) == 0);
    cr_assert(memcmp(best.batch->fields[0].data, produced->fields[0].data, bytes) == 0);
    float *dy = mse_cotangent(&ref), *dx[2] = {malloc(bytes), malloc(bytes)};
    sl_grads *grads[2];
    grad_case *cases[2] = {&ref, &best};
    for (int k = 0; k < 2; k++) {
        cr_assert_eq(sl_grads_create(instance->pipeline, &grads[k], &err), SL_OK);
        cr_assert_eq(sl_tape_backward(cases[k]->tape, "x", dy, dx[k], grads[k], &err), SL_OK, "%s", err.msg);
    }
    cr_assert(memcmp(dx[0], dx[1], bytes) == 0, "input cotangents differ between kernel tables");
    cr_assert(memcmp(grads[0]->values, grads[1]->values, (size_t)grads[0]->count * sizeof(double)) == 0,
              "parameter gradients differ between kernel tables");
    for (int k = 0; k < 2; k++) {
        free(dx[k]);
        sl_grads_free(grads[k]);
    }
    free(dy);
    grad_case_release(&ref);
    grad_case_release(&best);
    sl_batch_free(produced);
    sl_scenario_instance_free(instance);
}

/* --- SGD on a toy loss ------------------------------------------------------ */

/* One forward and backward pass of L = 1/2 mean((y - t)^2) at position, t
 * being the normalized input (so scale 1 and bias 0 fit it exactly): the
 * loss, and the gradients into grads when not NULL. */
static double toy_step(const sl_scenario_instance *instance, const sl_pipeline_spec *spec, sl_position position,
                       sl_grads **grads)
{
    sl_err err = {0};
    sl_pipeline *p;
    cr_assert_eq(sl_pipeline_create(spec, &p, &err), SL_OK, "%s", err.msg);
    sl_batch *b;
    cr_assert_eq(sl_batch_create(sl_pipeline_output_schema(p), BATCH, &b, &err), SL_OK);
    sl_tape *tape;
    cr_assert_eq(sl_tape_forward(p, sl_test_kernels(), position, b, &tape, &err), SL_OK, "%s", err.msg);
    int64_t n = b->count * VALUES;
    const float *y = b->fields[0].data;
    float *dy = malloc((size_t)n * sizeof *dy);
    double loss = 0;
    for (int64_t r = 0; r < b->count; r++) {
        const float *x = sl_source_map(instance->fixture, 0, (size_t)b->element_ids[r] * ROW_BYTES, ROW_BYTES);
        for (int64_t v = 0; v < VALUES; v++) {
            int c = (int)(v % CHANNELS);
            double t = ((double)x[v] - (double)pc5_mean[c]) / (double)pc5_std[c];
            double d = (double)y[r * VALUES + v] - t;
            loss += 0.5 * d * d / (double)n;
            dy[r * VALUES + v] = (float)(d / (double)n);
        }
    }
    if (grads) {
        cr_assert_eq(sl_grads_create(p, grads, &err), SL_OK);
        cr_assert_eq(sl_tape_backward(tape, "x", dy, NULL, *grads, &err), SL_OK, "%s", err.msg);
    }
    free(dy);
    sl_tape_free(tape);
    sl_batch_free(b);
    sl_pipeline_free(p);
    return loss;
}

Test(pc5, sgd_steps_lower_a_toy_loss_monotonically_in_eval_mode)
{
    /* The same batch each step: a convex quadratic whose curvature along
     * each parameter is about 1/3 (mean n^2 over a third of the values), so
     * a step of 1 contracts every direction and the loss falls each step. */
    sl_scenario_instance *instance = harness_build("PC-5", "eval");
    sl_pipeline_spec spec = instance->spec;
    double losses[6];
    sl_err err = {0};
    for (int step = 0; step < 6; step++) {
        sl_grads *grads = NULL;
        losses[step] = toy_step(instance, &spec, (sl_position){0, 0}, step < 5 ? &grads : NULL);
        if (step > 0)
            cr_assert_lt(losses[step], losses[step - 1], "step %d: loss %.6g after %.6g", step, losses[step],
                         losses[step - 1]);
        if (grads) {
            cr_assert_eq(sl_sgd_step(&spec, grads, 1.0, &err), SL_OK, "%s", err.msg);
            sl_grads_free(grads);
        }
    }
    cr_assert_lt(losses[5], 0.1 * losses[0], "five steps took the loss from %.6g only to %.6g", losses[0], losses[5]);
    /* The parameters head for the fit: scale 1, bias 0. */
    for (int c = 0; c < CHANNELS; c++) {
        cr_assert_lt(fabs(spec.ops[AFFINE].u.affine.scale[c] - 1.0f),
                     fabs(instance->spec.ops[AFFINE].u.affine.scale[c] - 1.0f));
        cr_assert_lt(fabs(spec.ops[AFFINE].u.affine.bias[c]), fabs(instance->spec.ops[AFFINE].u.affine.bias[c]));
    }
    sl_scenario_instance_free(instance);
}

Test(pc5, sgd_steps_with_dropout_lower_the_loss_on_a_held_out_batch)
{
    /* Ten steps in training mode on ten fresh batches, dropout on; the loss
     * is measured before and after in eval mode on a batch none of the
     * steps saw. */
    sl_scenario_instance *instance = harness_build("PC-5", "train");
    sl_pipeline_spec spec = instance->spec, held_out;
    sl_err err = {0};
    held_out = spec;
    held_out.mode = SL_MODE_EVAL;
    double before = toy_step(instance, &held_out, (sl_position){0, 20}, NULL);
    for (int64_t step = 0; step < 10; step++) {
        sl_grads *grads;
        toy_step(instance, &spec, (sl_position){0, step}, &grads);
        cr_assert_eq(sl_sgd_step(&spec, grads, 0.5, &err), SL_OK, "%s", err.msg);
        sl_grads_free(grads);
    }
    held_out = spec;
    held_out.mode = SL_MODE_EVAL;
    double after = toy_step(instance, &held_out, (sl_position){0, 20}, NULL);
    cr_assert_lt(after, 0.5 * before, "held-out loss %.6g before ten steps, %.6g after", before, after);
    sl_scenario_instance_free(instance);
}

/* The mixing ops' keyed decisions: lambda follows Beta(alpha, alpha) within
 * stated statistical bounds (the libm-free Johnk sampler of
 * docs/determinism.md), sits on the 2^-24 grid, and depends on the batch's
 * key only; the partners are uniform permutations; and the ops refuse what
 * they cannot mix, naming the op and the field. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "mix.h"
#include "sluice/fixtures/fixtures.h"
#include "sluice/pipeline/pipeline.h"

static const float mean3[3] = {120.0f, 110.0f, 100.0f};
static const float std3[3] = {60.0f, 61.0f, 62.0f};

typedef struct mix_fixture {
    sl_source *source;
    sl_pipeline *pipeline;
} mix_fixture;

/* Images, normalized, labels one-hot, then the mixing op (index 2). */
static sl_status build(mix_fixture *m, sl_op mix, sl_err *err)
{
    sl_fixture_spec spec = {.kind = SL_FIXTURE_IMAGES, .n = 16, .h = 4, .w = 5, .c = 3, .classes = 4};
    cr_assert_eq(sl_fixture_build(&spec, 42, &m->source, err), SL_OK, "%s", err->msg);
    sl_pipeline_spec p;
    sl_pipeline_spec_init(&p, m->source, 8, 42);
    cr_assert_eq(sl_pipeline_spec_add(&p, sl_op_normalize("image", 3, mean3, std3), err), SL_OK);
    cr_assert_eq(sl_pipeline_spec_add(&p, sl_op_one_hot("label", 4), err), SL_OK);
    cr_assert_eq(sl_pipeline_spec_add(&p, mix, err), SL_OK);
    m->pipeline = NULL;
    return sl_pipeline_create(&p, &m->pipeline, err);
}

static void release(mix_fixture *m)
{
    sl_pipeline_free(m->pipeline);
    sl_source_free(m->source);
}

static float lambda_at(const mix_fixture *m, int64_t epoch, int64_t index)
{
    sl__op_ctx ctx = {m->pipeline, sl_kernels_reference(), epoch};
    sl_batch batch;
    memset(&batch, 0, sizeof batch);
    batch.epoch = epoch;
    batch.index = index;
    batch.count = 8;
    return sl__mix_lambda(&ctx, &m->pipeline->compiled[2], &batch);
}

/* Beta(a, a)'s CDF at x <= 1/2, by the substitution t = s^(1/a), which
 * removes the density's singularity at 0: the integrand becomes
 * (1 - s^(1/a))^(a - 1) / a, smooth on [0, x^a]. Simpson's rule, libm
 * allowed here: the test is the independent side. */
static double beta_cdf(double a, double x)
{
    const int n = 20000;
    double top = pow(x, a), h = top / n, sum = 0;
    for (int k = 0; k <= n; k++) {
        double s = k * h, f = pow(1 - pow(s, 1 / a), a - 1) / a;
        sum += (k == 0 || k == n ? 1 : (k % 2 ? 4 : 2)) * f;
    }
    double beta = tgamma(a) * tgamma(a) / tgamma(2 * a);
    return sum * h / 3 / beta;
}

/* N draws of each alpha against the distribution's mean 1/2, variance
 * 1 / (4 (2a + 1)) and mass below 0.05, each within five standard errors:
 * the mean's is sqrt(var / N); the sample variance's is
 * sqrt((mu4 - var^2) / N) with mu4 = var^2 (3 + excess kurtosis), whose
 * excess is -6 / (2a + 3) for Beta(a, a); the mass's is binomial. */
static void expect_beta(float alpha, int64_t n)
{
    mix_fixture m;
    sl_err err = {0};
    cr_assert_eq(build(&m, sl_op_mixup("image", "label", 5, alpha), &err), SL_OK, "%s", err.msg);
    double a = alpha, var = 1.0 / (4 * (2 * a + 1)), kurtosis = -6.0 / (2 * a + 3);
    double tail = beta_cdf(a, 0.05);
    double sum = 0, sq = 0;
    int64_t below = 0, low_tail = 0;
    for (int64_t k = 0; k < n; k++) {
        float lam = lambda_at(&m, k / 1000, k % 1000);
        cr_assert(lam >= 0.0f && lam <= 1.0f, "lambda %g", lam);
        double scaled = (double)lam * 16777216.0;
        cr_assert_eq(scaled, floor(scaled), "lambda %.9g is off the 2^-24 grid", lam);
        sum += lam;
        sq += (double)lam * lam;
        below += lam < 0.5f;
        low_tail += lam < 0.05f;
    }
    double mean = sum / n, v = sq / n - mean * mean;
    double mean_bound = 5 * sqrt(var / n), var_bound = 5 * sqrt(var * var * (2 + kurtosis) / n);
    double tail_bound = 5 * sqrt(tail * (1 - tail) / n);
    cr_expect(fabs(mean - 0.5) < mean_bound, "alpha %g: mean %.5f, expected 0.5 +- %.5f", a, mean, mean_bound);
    cr_expect(fabs(v - var) < var_bound, "alpha %g: variance %.5f, expected %.5f +- %.5f", a, v, var, var_bound);
    cr_expect(fabs((double)low_tail / n - tail) < tail_bound,
              "alpha %g: P(lambda < 0.05) = %.5f, expected %.5f +- %.5f", a, (double)low_tail / n, tail, tail_bound);
    double half_bound = 5 * sqrt(0.25 / n);
    cr_expect(fabs((double)below / n - 0.5) < half_bound, "alpha %g: %.4f of the draws are below 1/2", a,
              (double)below / n);
    release(&m);
}

Test(mix, lambda_follows_beta_0_4)
{
    /* Variance 1 / (4 x 1.8) = 0.13889, bound 5 x 0.00020 at N = 200k. */
    expect_beta(0.4f, 200000);
}

Test(mix, lambda_follows_beta_for_other_supported_alphas)
{
    expect_beta(1.0f, 50000); /* uniform: variance 1/12 */
    expect_beta(2.0f, 50000); /* variance 1/20, acceptance only 1/6 */
    expect_beta(0.2f, 50000); /* m = 10: no square root at all */
}

Test(mix, lambda_depends_on_the_batch_key_only)
{
    mix_fixture m, other_op;
    sl_err err = {0};
    cr_assert_eq(build(&m, sl_op_mixup("image", "label", 5, 0.4f), &err), SL_OK, "%s", err.msg);
    cr_assert_eq(build(&other_op, sl_op_mixup("image", "label", 6, 0.4f), &err), SL_OK, "%s", err.msg);
    cr_expect_eq(lambda_at(&m, 3, 7), lambda_at(&m, 3, 7));
    int same_epoch = 0, same_index = 0, same_op = 0;
    for (int k = 0; k < 100; k++) {
        same_epoch += lambda_at(&m, 0, k) == lambda_at(&m, 1, k);
        same_index += lambda_at(&m, 0, k) == lambda_at(&m, 0, k + 100);
        same_op += lambda_at(&m, 0, k) == lambda_at(&other_op, 0, k);
    }
    cr_expect_eq(same_epoch + same_index + same_op, 0, "%d %d %d draws repeated across keys", same_epoch, same_index,
                 same_op);
    release(&m);
    release(&other_op);
}

Test(mix, partners_are_uniform_permutations)
{
    mix_fixture m;
    sl_err err = {0};
    cr_assert_eq(build(&m, sl_op_mixup("image", "label", 5, 0.4f), &err), SL_OK, "%s", err.msg);
    sl__op_ctx ctx = {m.pipeline, sl_kernels_reference(), 0};
    sl_batch batch;
    memset(&batch, 0, sizeof batch);
    const int64_t counts[] = {1, 2, 7, 128, 1000};
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        int64_t n = counts[c], partner[1000];
        bool seen[1000] = {false};
        batch.count = n;
        sl__mix_partners(&ctx, &m.pipeline->compiled[2], &batch, partner);
        for (int64_t i = 0; i < n; i++) {
            cr_assert(partner[i] >= 0 && partner[i] < n && !seen[partner[i]], "count %lld: not a permutation",
                      (long long)n);
            seen[partner[i]] = true;
        }
    }
    /* All 24 orders of four rows over 24000 batches: each a Binomial(24000,
     * 1/24) count, 1000 +- 5 x 31. */
    int counts4[256] = {0};
    batch.count = 4;
    for (int64_t k = 0; k < 24000; k++) {
        int64_t p[4];
        batch.epoch = k / 1000;
        batch.index = k % 1000;
        sl__mix_partners(&ctx, &m.pipeline->compiled[2], &batch, p);
        counts4[p[0] * 64 + p[1] * 16 + p[2] * 4 + p[3]]++;
    }
    int orders = 0;
    for (int code = 0; code < 256; code++) {
        if (!counts4[code])
            continue;
        orders++;
        cr_expect(abs(counts4[code] - 1000) < 155, "order %d drawn %d times of 24000", code, counts4[code]);
    }
    cr_expect_eq(orders, 24);
    release(&m);
}

static void expect_refused(sl_op mix, const char *needle)
{
    mix_fixture m;
    sl_err err = {0};
    cr_assert_eq(build(&m, mix, &err), SL_EINVAL, "expected a refusal mentioning %s", needle);
    cr_expect(strstr(err.msg, needle) != NULL, "message lacks \"%s\": %s", needle, err.msg);
    cr_expect(strstr(err.msg, "op 2") != NULL, "message does not name the op: %s", err.msg);
    release(&m);
}

Test(mix, unsupported_alphas_and_labels_are_refused)
{
    cr_expect_eq(sl__mix_half_power(0.4f), 5);
    cr_expect_eq(sl__mix_half_power(1.0f), 2);
    cr_expect_eq(sl__mix_half_power(0.3f), 0);
    cr_expect_eq(sl__mix_half_power(0.0f), 0);
    cr_expect_eq(sl__mix_half_power(NAN), 0);
    expect_refused(sl_op_mixup("image", "label", 5, 0.3f), "alpha 0.3");
    expect_refused(sl_op_cutmix("image", "label", 5, 5.0f), "alpha 5");
    expect_refused(sl_op_mixup("image", "target", 5, 0.4f), "label field 'target'");
    expect_refused(sl_op_mixup("image", "image", 5, 0.4f), "f32 [classes]");
}

Test(mix, a_label_that_is_not_one_hot_is_refused)
{
    sl_fixture_spec spec = {.kind = SL_FIXTURE_IMAGES, .n = 16, .h = 4, .w = 5, .c = 3, .classes = 4};
    sl_source *src;
    sl_err err = {0};
    cr_assert_eq(sl_fixture_build(&spec, 42, &src, &err), SL_OK);
    sl_pipeline_spec p;
    sl_pipeline_spec_init(&p, src, 8, 42);
    sl_pipeline_spec_add(&p, sl_op_normalize("image", 3, mean3, std3), &err);
    sl_pipeline_spec_add(&p, sl_op_cutmix("image", "label", 5, 0.4f), &err);
    sl_pipeline *pipeline = NULL;
    cr_assert_eq(sl_pipeline_create(&p, &pipeline, &err), SL_EINVAL);
    cr_expect(strstr(err.msg, "one_hot it first") && strstr(err.msg, "i32"), "%s", err.msg);
    /* And a one-hot of an f32 field is refused too. */
    p.nops = 1;
    sl_pipeline_spec_add(&p, sl_op_one_hot("image", 4), &err);
    cr_assert_eq(sl_pipeline_create(&p, &pipeline, &err), SL_EINVAL);
    cr_expect(strstr(err.msg, "op 1: one_hot takes an i32 scalar label, field 'image' is f32"), "%s", err.msg);
    sl_source_free(src);
}

/* CV-3, batch mixing: the standard checks for MixUp and CutMix, then each
 * mixed batch explained from the unmixed one. For MixUp, every row's partner
 * is found by least squares over its pixels, which also recovers lambda from
 * the pixels alone; for CutMix, the box is found as the pixels that changed
 * and every row's partner as the image whose pixels fill it. The partners
 * must form a permutation of the batch, and the labels must sum to 1 and
 * carry exactly the pixel mix ratio: lambda for MixUp, the box's share of
 * the pixels for CutMix. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "harness.h"

SL_CORPUS_STANDARD_TESTS(cv3_mixup, "CV-3", "mixup")
SL_CORPUS_STANDARD_TESTS(cv3_cutmix, "CV-3", "cutmix")

enum { SIDE = 64, CHANNELS = 3, VALUES = SIDE * SIDE * CHANNELS, CLASSES = 10, EPOCHS = 2 };
/* 2^-24: a float's unit roundoff. */
#define U24 (1.0 / 16777216.0)

/* A mixed run and the same batches before mixing: the scenario's pipeline
 * without its last op, produced at the same positions. */
typedef struct mixed_run {
    sl_scenario_instance *instance;
    run_output mixed, plain;
    int64_t batch_size;
} mixed_run;

static void run_both(const char *variant, mixed_run *m)
{
    m->instance = harness_build("CV-3", variant);
    const sl_pipeline *p = m->instance->pipeline;
    int64_t batches = EPOCHS * sl_pipeline_batches_per_epoch(p);
    harness_run(m->instance, "fused", 0, 0, (sl_position){0, 0}, batches, &m->mixed);
    sl_pipeline_spec spec = m->instance->spec;
    spec.nops--;
    sl_pipeline *unmixed;
    sl_err err = {0};
    cr_assert_eq(sl_pipeline_create(&spec, &unmixed, &err), SL_OK, "%s", err.msg);
    m->batch_size = spec.batch_size;
    sl_batch *b;
    cr_assert_eq(sl_batch_create(sl_pipeline_output_schema(unmixed), spec.batch_size, &b, &err), SL_OK);
    memset(&m->plain, 0, sizeof m->plain);
    m->plain.nfields = 2;
    for (int f = 0; f < 2; f++) {
        m->plain.size[f] = m->mixed.size[f];
        m->plain.row_bytes[f] = m->mixed.row_bytes[f];
        m->plain.bytes[f] = malloc(m->plain.size[f]);
    }
    m->plain.ids = malloc((size_t)m->mixed.rows * sizeof *m->plain.ids);
    sl_position pos = {0, 0};
    for (int64_t k = 0; k < batches; k++, pos = sl_position_advance(unmixed, pos, 1)) {
        cr_assert_eq(sl_pipeline_produce(unmixed, sl_kernels_reference(), pos, b, &err), SL_OK, "%s", err.msg);
        for (int f = 0; f < 2; f++)
            memcpy(m->plain.bytes[f] + (size_t)m->plain.rows * m->plain.row_bytes[f], b->fields[f].data,
                   (size_t)b->count * m->plain.row_bytes[f]);
        memcpy(m->plain.ids + m->plain.rows, b->element_ids, (size_t)b->count * sizeof *b->element_ids);
        m->plain.rows += b->count;
    }
    cr_assert_eq(m->plain.rows, m->mixed.rows);
    cr_assert(memcmp(m->plain.ids, m->mixed.ids, (size_t)m->plain.rows * sizeof *m->plain.ids) == 0,
              "mixing must not change which elements a batch holds");
    cr_assert_eq(m->mixed.row_bytes[0], VALUES * sizeof(float));
    cr_assert_eq(m->mixed.row_bytes[1], CLASSES * sizeof(float));
    sl_batch_free(b);
    sl_pipeline_free(unmixed);
}

static void release_both(mixed_run *m)
{
    harness_release(&m->mixed);
    harness_release(&m->plain);
    sl_scenario_instance_free(m->instance);
}

/* Walks the run's batches: each epoch's rows split at the batch size, the
 * last batch of an epoch maybe short. */
typedef struct batch_span {
    int64_t first, count;
} batch_span;

static bool next_batch(const mixed_run *m, batch_span *span)
{
    int64_t per_epoch = m->mixed.rows / EPOCHS;
    int64_t first = span->first + span->count;
    if (first >= m->mixed.rows)
        return false;
    int64_t epoch_end = (first / per_epoch + 1) * per_epoch;
    span->first = first;
    span->count = first + m->batch_size < epoch_end ? m->batch_size : epoch_end - first;
    return true;
}

static const float *image(const run_output *out, int64_t row)
{
    return harness_row(out, 0, row);
}

static const float *label(const run_output *out, int64_t row)
{
    return harness_row(out, 1, row);
}

/* The class of an unmixed one-hot label. */
static int class_of(const float *onehot)
{
    int found = -1;
    for (int k = 0; k < CLASSES; k++) {
        cr_assert(onehot[k] == 0.0f || onehot[k] == 1.0f, "unmixed labels are one-hot");
        if (onehot[k] == 1.0f) {
            cr_assert_eq(found, -1, "two classes in a one-hot label");
            found = k;
        }
    }
    cr_assert_geq(found, 0, "a one-hot label without a class");
    return found;
}

/* Least squares of out = lam a + (1 - lam) b over the first n values: lam
 * and the residual's root mean square. With a == b any lam fits; then the
 * residual is that of out against a, and lam is NaN. */
static double fit(const float *out, const float *a, const float *b, int n, double *lam)
{
    double ed = 0, dd = 0;
    for (int k = 0; k < n; k++) {
        double d = (double)a[k] - b[k], e = (double)out[k] - b[k];
        ed += e * d;
        dd += d * d;
    }
    *lam = dd > 0 ? ed / dd : NAN;
    double l = dd > 0 ? *lam : 1.0, rr = 0;
    for (int k = 0; k < n; k++) {
        double r = (double)out[k] - (l * a[k] + (1 - l) * b[k]);
        rr += r * r;
    }
    return sqrt(rr / n);
}

/* Float rounding of lam a + (1 - lam) b on values of this size (|v| < 3)
 * leaves a residual below 1e-6; a wrong partner leaves one near
 * (1 - lam) x 1.4, so 1e-5 separates them unless 1 - lam < 1e-5. */
#define FIT_TOLERANCE 1e-5

/* Each row's partner by least squares: the one image of the batch whose
 * blend with the row's own image gives the mixed row, with that blend's
 * lambda in row_lam. A row several images fit is left at -1 for
 * settle_partners. */
static void fit_partners(const mixed_run *m, const batch_span *span, int64_t batch, int64_t *partner, double *row_lam)
{
    int64_t first = span->first, count = span->count;
    for (int64_t i = 0; i < count; i++) {
        const float *out = image(&m->mixed, first + i), *own = image(&m->plain, first + i);
        /* Screen every row of the batch on 192 values, then fit the
         * survivors on all of them. */
        int matches = 0;
        partner[i] = -1;
        for (int64_t j = 0; j < count; j++) {
            double lam;
            if (fit(out, own, image(&m->plain, first + j), 192, &lam) > FIT_TOLERANCE)
                continue;
            if (fit(out, own, image(&m->plain, first + j), VALUES, &lam) > FIT_TOLERANCE)
                continue;
            matches++;
            partner[i] = j;
            row_lam[i] = lam;
        }
        cr_assert_geq(matches, 1, "batch %lld row %lld is no blend of its image with any in the batch",
                      (long long)batch, (long long)i);
        /* A row whose partner is itself is its own image again, which a
         * free lambda near 1 fits with any partner: decided below, once
         * the batch's lambda is known. */
        if (matches > 1)
            partner[i] = -1;
    }
}

/* One lambda per batch: every row whose partner is another image gives the
 * same estimate. */
static double batch_lambda(const batch_span *span, int64_t batch, const int64_t *partner, const double *row_lam)
{
    double lam = NAN;
    for (int64_t i = 0; i < span->count; i++)
        if (partner[i] >= 0 && partner[i] != i && !isnan(row_lam[i])) {
            if (isnan(lam))
                lam = row_lam[i];
            cr_assert(fabs(row_lam[i] - lam) < 1e-5, "batch %lld: rows give lambda %.7f and %.7f", (long long)batch,
                      lam, row_lam[i]);
        }
    cr_assert(!isnan(lam), "batch %lld: no row shows its lambda", (long long)batch);
    return lam;
}

/* The rows fit_partners left undecided: with the batch's lambda fixed,
 * exactly one image must fit each. Returns how many rows are their own
 * partner. */
static int64_t settle_partners(const mixed_run *m, const batch_span *span, int64_t batch, double lam, int64_t *partner)
{
    int64_t first = span->first, count = span->count, fixed_points = 0;
    for (int64_t i = 0; i < count; i++) {
        if (partner[i] >= 0)
            continue;
        const float *out = image(&m->mixed, first + i), *own = image(&m->plain, first + i);
        int matches = 0;
        for (int64_t j = 0; j < count; j++) {
            const float *other = image(&m->plain, first + j);
            double rr = 0;
            for (int k = 0; k < VALUES; k++) {
                double r = (double)out[k] - (lam * own[k] + (1 - lam) * other[k]);
                rr += r * r;
            }
            if (sqrt(rr / VALUES) <= FIT_TOLERANCE) {
                matches++;
                partner[i] = j;
            }
        }
        cr_assert_eq(matches, 1, "batch %lld row %lld: %d partners fit lambda %.7f", (long long)batch, (long long)i,
                     matches, lam);
        fixed_points += partner[i] == i;
    }
    return fixed_points;
}

/* Every mixed label sums to 1 and carries lambda of the row's own class
 * and 1 - lambda of its partner's, and no row is the partner of two: the
 * partners form a permutation of the batch. */
static void check_mixup_labels(const mixed_run *m, const batch_span *span, int64_t batch, double lam,
                               const int64_t *partner)
{
    int64_t first = span->first, count = span->count;
    bool *taken = calloc((size_t)count, 1);
    for (int64_t i = 0; i < count; i++) {
        const float *mixed = label(&m->mixed, first + i);
        double sum = 0;
        for (int k = 0; k < CLASSES; k++)
            sum += mixed[k];
        /* lam is a multiple of 2^-24, so lam + (1 - lam) is exactly 1. */
        cr_assert_eq(sum, 1.0, "batch %lld row %lld: label sums to 1 %+.3g", (long long)batch, (long long)i, sum - 1);
        if (partner[i] < 0)
            continue;
        cr_assert_not(taken[partner[i]], "batch %lld: row %lld is the partner of two rows", (long long)batch,
                      (long long)partner[i]);
        taken[partner[i]] = true;
        int own = class_of(label(&m->plain, first + i)), other = class_of(label(&m->plain, first + partner[i]));
        for (int k = 0; k < CLASSES; k++) {
            double expected = (k == own ? lam : 0.0) + (k == other ? 1 - lam : 0.0);
            cr_assert(fabs(mixed[k] - expected) < 1e-5, "batch %lld row %lld class %d: label %.7f, the pixels say %.7f",
                      (long long)batch, (long long)i, k, mixed[k], expected);
        }
    }
    for (int64_t j = 0; j < count; j++)
        cr_assert(taken[j], "batch %lld: row %lld is nobody's partner", (long long)batch, (long long)j);
    free(taken);
}

/* The two epochs mix differently: lambda is keyed by the epoch too. */
static void expect_epochs_draw_other_lambdas(const double *lambdas, int64_t batches)
{
    int64_t per_epoch = batches / EPOCHS, same = 0;
    for (int64_t k = 0; k < per_epoch; k++)
        same += lambdas[k] == lambdas[k + per_epoch];
    cr_expect_eq(same, 0, "%lld batches drew the same lambda in both epochs", (long long)same);
}

Test(cv3_mixup, labels_carry_the_pixel_mix_ratio_and_partners_form_a_permutation)
{
    mixed_run m;
    run_both("mixup", &m);
    int64_t fixed_points = 0, batches = 0;
    double lambdas[64];
    batch_span span = {0};
    while (next_batch(&m, &span)) {
        int64_t batch = batches++;
        int64_t *partner = malloc((size_t)span.count * sizeof *partner);
        double *row_lam = malloc((size_t)span.count * sizeof *row_lam);
        fit_partners(&m, &span, batch, partner, row_lam);
        double lam = batch_lambda(&span, batch, partner, row_lam);
        lambdas[batch] = lam;
        fixed_points += settle_partners(&m, &span, batch, lam, partner);
        check_mixup_labels(&m, &span, batch, lam, partner);
        free(partner);
        free(row_lam);
    }
    /* A uniform permutation has one fixed point on average: about 16 in 16
     * batches, so none at all would mean the partners avoid the row itself. */
    cr_expect_gt(fixed_points, 0, "no row was its own partner in %lld batches", (long long)batches);
    expect_epochs_draw_other_lambdas(lambdas, batches);
    release_both(&m);
}

/* The bounding box of the pixels where any row of the batch differs from its
 * own image; false when none does. */
static bool changed_box(const mixed_run *m, int64_t first, int64_t count, int box[4], bool *changed)
{
    memset(changed, 0, SIDE * SIDE);
    for (int64_t i = 0; i < count; i++) {
        const float *out = image(&m->mixed, first + i), *own = image(&m->plain, first + i);
        for (int p = 0; p < SIDE * SIDE; p++)
            changed[p] |= memcmp(out + p * CHANNELS, own + p * CHANNELS, CHANNELS * sizeof(float)) != 0;
    }
    box[0] = box[2] = SIDE;
    box[1] = box[3] = 0;
    for (int y = 0; y < SIDE; y++)
        for (int x = 0; x < SIDE; x++)
            if (changed[y * SIDE + x]) {
                box[0] = y < box[0] ? y : box[0];
                box[1] = y + 1 > box[1] ? y + 1 : box[1];
                box[2] = x < box[2] ? x : box[2];
                box[3] = x + 1 > box[3] ? x + 1 : box[3];
            }
    return box[1] > 0;
}

/* Whether row out equals img inside the box, bit for bit. */
static bool fills_box(const float *out, const float *img, const int box[4])
{
    for (int y = box[0]; y < box[1]; y++) {
        size_t at = ((size_t)y * SIDE + (size_t)box[2]) * CHANNELS;
        if (memcmp(out + at, img + at, (size_t)(box[3] - box[2]) * CHANNELS * sizeof(float)) != 0)
            return false;
    }
    return true;
}

Test(cv3_cutmix, label_weight_is_the_box_area_and_partners_form_a_permutation)
{
    mixed_run m;
    run_both("cutmix", &m);
    static bool changed[SIDE * SIDE];
    int64_t batches = 0, boxes = 0;
    batch_span span = {0};
    while (next_batch(&m, &span)) {
        int64_t first = span.first, count = span.count, batch = batches++;
        int box[4];
        bool any = changed_box(&m, first, count, box, changed);
        int64_t area = any ? (int64_t)(box[1] - box[0]) * (box[3] - box[2]) : 0;
        /* The changed pixels fill their bounding box: one rectangle per
         * batch, and outside it every row is its own image. */
        int64_t changed_pixels = 0;
        for (int p = 0; p < SIDE * SIDE; p++)
            changed_pixels += changed[p];
        cr_assert_eq(changed_pixels, area, "batch %lld: %lld pixels changed, not a %dx%d box", (long long)batch,
                     (long long)changed_pixels, box[1] - box[0], box[3] - box[2]);
        boxes += area > 0;
        double share = (double)area / (SIDE * SIDE);
        bool *taken = calloc((size_t)count, 1);
        for (int64_t i = 0; i < count; i++) {
            const float *out = image(&m.mixed, first + i), *mixed = label(&m.mixed, first + i);
            int own = class_of(label(&m.plain, first + i));
            double sum = 0;
            for (int k = 0; k < CLASSES; k++)
                sum += mixed[k];
            /* Two correctly rounded weights: their sum is 1 within 2^-24. */
            cr_assert(fabs(sum - 1) <= U24, "batch %lld row %lld: label sums to 1 %+.3g", (long long)batch,
                      (long long)i, sum - 1);
            int64_t partner = -1;
            int matches = 0;
            for (int64_t j = 0; j < count && area > 0; j++)
                if (fills_box(out, image(&m.plain, first + j), box)) {
                    matches++;
                    partner = j;
                }
            if (area == 0) {
                cr_assert_eq(mixed[own], 1.0f, "batch %lld row %lld: no box, yet the label is mixed", (long long)batch,
                             (long long)i);
                continue;
            }
            cr_assert_eq(matches, 1, "batch %lld row %lld: %d images fill the box", (long long)batch, (long long)i,
                         matches);
            cr_assert_not(taken[partner], "batch %lld: row %lld is the partner of two rows", (long long)batch,
                          (long long)partner);
            taken[partner] = true;
            int other = class_of(label(&m.plain, first + partner));
            for (int k = 0; k < CLASSES; k++) {
                /* Each weight is its exact share, correctly rounded to float. */
                double expected = (k == own ? 1 - share : 0.0) + (k == other ? share : 0.0);
                cr_assert(fabs(mixed[k] - expected) <= U24 * expected,
                          "batch %lld row %lld class %d: label %.9g, the box's share says %.9g", (long long)batch,
                          (long long)i, k, mixed[k], expected);
            }
        }
        if (area > 0)
            for (int64_t j = 0; j < count; j++)
                cr_assert(taken[j], "batch %lld: row %lld is nobody's partner", (long long)batch, (long long)j);
        free(taken);
    }
    cr_expect_geq(boxes, batches - 2, "only %lld of %lld batches pasted a box", (long long)boxes, (long long)batches);
    release_both(&m);
}

Test(cv3_mixup, a_resumed_run_mixes_its_batches_as_the_whole_run_does)
{
    /* Batch ops are keyed by (epoch, batch index), so starting at batch 5
     * with two prefetch workers and crossing into epoch 1 must give the
     * very bytes the run from the start gave for those batches. */
    sl_scenario_instance *instance = harness_build("CV-3", "mixup");
    int64_t per_epoch = sl_pipeline_batches_per_epoch(instance->pipeline);
    run_output whole, resumed;
    harness_run(instance, "fused", 0, 0, (sl_position){0, 0}, 2 * per_epoch, &whole);
    harness_run(instance, "iter", 2, 3, (sl_position){0, 5}, per_epoch, &resumed);
    int64_t skipped = 5 * 128;
    cr_assert_eq(resumed.rows, whole.rows / 2);
    for (int f = 0; f < 2; f++)
        cr_assert(memcmp(resumed.bytes[f], whole.bytes[f] + (size_t)skipped * whole.row_bytes[f], resumed.size[f]) == 0,
                  "field %d differs after resuming at batch 5", f);
    harness_release(&whole);
    harness_release(&resumed);
    sl_scenario_instance_free(instance);
}

/* The export's random decisions reproduce the reference's batches: for each
 * exportable random op, a pipeline without the op gives the batch before
 * it, the exported decisions are applied to it by an independent
 * computation written here from the formats of docs/peers.md (not the
 * engine's kernels), and the result must equal, bit for bit, what the
 * reference kernels produce with the op. Ops whose draws are values say so
 * in the plan. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "sluice/core/npy.h"
#include "sluice/fixtures/fixtures.h"
#include "sluice/pipeline/pipeline.h"
#include "sluice/records/export.h"
#include "support.h"

#define N        20 /* elements: batches of 8, 8 and 4 per epoch */
#define BS       8
#define SIDE     4
#define CH       2
#define CLASSES  4
#define NBATCHES 5 /* two epochs, the second one partly */
#define VALUES   (SIDE * SIDE * CH)

typedef struct fixture {
    sl_source *source;
    sl_pipeline *plain; /* the ops before the one under test */
    sl_pipeline *full;  /* with it */
    char dir[256];
} fixture;

/* f32 images x [4, 4, 2] and labels, one-hot when `one_hot`; `ops` are
 * added to the full pipeline only. */
static void build(fixture *f, bool one_hot, const sl_op *ops, int nops, const char *tag)
{
    sl_err err = {0};
    sl_fixture_spec spec = {.kind = SL_FIXTURE_FLOATS, .n = N, .h = SIDE, .w = SIDE, .c = CH, .classes = CLASSES};
    cr_assert_eq(sl_fixture_build(&spec, 7, &f->source, &err), SL_OK, "%s", err.msg);
    sl_pipeline_spec plain, full;
    sl_pipeline_spec_init(&plain, f->source, BS, 99);
    if (one_hot)
        cr_assert_eq(sl_pipeline_spec_add(&plain, sl_op_one_hot("label", CLASSES), &err), SL_OK, "%s", err.msg);
    full = plain;
    for (int i = 0; i < nops; i++)
        cr_assert_eq(sl_pipeline_spec_add(&full, ops[i], &err), SL_OK, "%s", err.msg);
    cr_assert_eq(sl_pipeline_create(&plain, &f->plain, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(sl_pipeline_create(&full, &f->full, &err), SL_OK, "%s", err.msg);
    test_tmpdir_create(f->dir, sizeof f->dir, tag);
    sl_export_meta meta = {.scenario = "TEST", .variant = tag, .profile = "ci", .kernels = sl_kernels_reference()};
    cr_assert_eq(sl_export_write(f->full, &meta, NBATCHES, f->dir, &err), SL_OK, "%s", err.msg);
}

static void release(fixture *f)
{
    test_tmpdir_remove(f->dir);
    sl_pipeline_free(f->plain);
    sl_pipeline_free(f->full);
    sl_source_free(f->source);
}

static sl_tensor load(const fixture *f, const char *name, sl_dtype dtype)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", f->dir, name);
    sl_tensor t;
    sl_err err = {0};
    cr_assert_eq(sl_npy_load(path, &t, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(t.dtype, dtype, "%s has the documented dtype", name);
    return t;
}

static char *plan_text(const fixture *f)
{
    char path[512];
    snprintf(path, sizeof path, "%s/plan.json", f->dir);
    FILE *in = fopen(path, "rb");
    cr_assert(in, "plan.json exists");
    char *text = calloc(1, 1 << 20);
    size_t n = fread(text, 1, (1 << 20) - 1, in);
    fclose(in);
    cr_assert(n > 0);
    return text;
}

/* Batch k of the plan, by both pipelines, with the reference kernels. */
static void produce(const fixture *f, int64_t k, sl_batch **plain, sl_batch **full)
{
    sl_err err = {0};
    int64_t per_epoch = sl_pipeline_batches_per_epoch(f->full);
    sl_position pos = {k / per_epoch, k % per_epoch};
    cr_assert_eq(sl_batch_create(sl_pipeline_output_schema(f->plain), BS, plain, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(sl_batch_create(sl_pipeline_output_schema(f->full), BS, full, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(sl_pipeline_produce(f->plain, sl_kernels_reference(), pos, *plain, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(sl_pipeline_produce(f->full, sl_kernels_reference(), pos, *full, &err), SL_OK, "%s", err.msg);
    cr_assert_eq((*plain)->count, (*full)->count);
}

static float *field_f32(sl_batch *b, const char *name)
{
    const sl_tensor *t = sl_batch_field(b, name);
    cr_assert(t && t->dtype == SL_F32, "field %s is f32", name);
    return t->data;
}

static void expect_bitwise(const float *want, const float *got, size_t n, const char *what, int64_t k)
{
    cr_expect(memcmp(want, got, n * sizeof *want) == 0, "%s of batch %lld: the decisions applied give the reference's",
              what, (long long)k);
}

/* --- batch ops ---------------------------------------------------------------- */

/* Checks a partner row: a permutation of the batch's rows, -1 past them. */
static void expect_permutation(const int32_t *partner, int64_t count)
{
    bool seen[BS] = {false};
    for (int64_t i = 0; i < BS; i++) {
        if (i >= count) {
            cr_expect_eq(partner[i], -1, "past a short batch's rows");
            continue;
        }
        cr_assert(partner[i] >= 0 && partner[i] < count, "partner %d of row %lld", partner[i], (long long)i);
        cr_expect_not(seen[partner[i]], "each row is one row's partner");
        seen[partner[i]] = true;
    }
}

static void check_mix(bool cutmix)
{
    sl_op op = cutmix ? sl_op_cutmix("x", "label", 5, 1.0f) : sl_op_mixup("x", "label", 5, 0.4f);
    fixture f;
    build(&f, true, &op, 1, cutmix ? "cutmix" : "mixup");
    char *plan = plan_text(&f);
    cr_expect(strstr(plan, "\"decisions_exported\":\ttrue"), "a plan with only exported draws says so");
    cr_expect(strstr(plan, cutmix ? "lambda,y0,y1,x0,x1,w_own,w_partner" : "lambda,w_own,w_partner"));
    free(plan);
    /* Op 1 of the spec (one_hot is op 0). */
    sl_tensor values = load(&f, "decisions_op1_batches.npy", SL_F32);
    sl_tensor partners = load(&f, "decisions_op1_partners.npy", SL_I32);
    int cols = cutmix ? 7 : 3;
    cr_assert_eq(values.shape.rank, 2);
    cr_assert_eq(values.shape.dims[0], NBATCHES);
    cr_assert_eq(values.shape.dims[1], cols);
    cr_assert_eq(partners.shape.dims[0], NBATCHES);
    cr_assert_eq(partners.shape.dims[1], BS);
    bool any_moved = false;
    for (int64_t k = 0; k < NBATCHES; k++) {
        const float *v = (const float *)values.data + k * cols;
        const int32_t *partner = (const int32_t *)partners.data + k * BS;
        sl_batch *plain, *full;
        produce(&f, k, &plain, &full);
        int64_t n = plain->count;
        expect_permutation(partner, n);
        float lambda = v[0];
        cr_expect(lambda >= 0.0f && lambda <= 1.0f);
        cr_expect_eq(lambda * 16777216.0f, floorf(lambda * 16777216.0f), "lambda is on the 2^-24 grid");
        const float *x = field_f32(plain, "x"), *label = field_f32(plain, "label");
        float *want_x = malloc((size_t)n * VALUES * sizeof *want_x);
        float *want_label = malloc((size_t)n * CLASSES * sizeof *want_label);
        float w_own, w_partner;
        if (cutmix) {
            int y0 = (int)v[1], y1 = (int)v[2], x0 = (int)v[3], x1 = (int)v[4];
            cr_assert(0 <= y0 && y0 <= y1 && y1 <= SIDE && 0 <= x0 && x0 <= x1 && x1 <= SIDE);
            /* The partner's share of the labels is the box's share of the
             * pixels, rounded once from the exact fraction. */
            double share = (double)((y1 - y0) * (x1 - x0)) / (SIDE * SIDE);
            cr_expect_eq(v[6], (float)share);
            cr_expect_eq(v[5], (float)(1.0 - share));
            w_own = v[5];
            w_partner = v[6];
            for (int64_t i = 0; i < n; i++)
                for (int y = 0; y < SIDE; y++)
                    for (int xx = 0; xx < SIDE; xx++)
                        for (int c = 0; c < CH; c++) {
                            bool in_box = y >= y0 && y < y1 && xx >= x0 && xx < x1;
                            int64_t from = in_box ? partner[i] : i;
                            size_t at = ((size_t)y * SIDE + (size_t)xx) * CH + (size_t)c;
                            want_x[i * VALUES + (int64_t)at] = x[from * VALUES + (int64_t)at];
                        }
        } else {
            cr_expect_eq(v[1], lambda);
            cr_expect_eq(v[2], 1.0f - lambda);
            w_own = v[1];
            w_partner = v[2];
            for (int64_t i = 0; i < n; i++)
                for (int j = 0; j < VALUES; j++) {
                    float own = x[i * VALUES + j] * w_own;
                    float other = x[partner[i] * VALUES + j] * w_partner;
                    want_x[i * VALUES + j] = own + other;
                }
        }
        for (int64_t i = 0; i < n; i++) {
            any_moved = any_moved || partner[i] != i;
            for (int j = 0; j < CLASSES; j++) {
                float own = label[i * CLASSES + j] * w_own;
                float other = label[partner[i] * CLASSES + j] * w_partner;
                want_label[i * CLASSES + j] = own + other;
            }
        }
        expect_bitwise(want_x, field_f32(full, "x"), (size_t)(n * VALUES), "x", k);
        expect_bitwise(want_label, field_f32(full, "label"), (size_t)(n * CLASSES), "label", k);
        free(want_x);
        free(want_label);
        sl_batch_free(plain);
        sl_batch_free(full);
    }
    cr_expect(any_moved, "some row has another row as its partner: the test can fail");
    free(values.data);
    free(partners.data);
    release(&f);
}

Test(export, mixup_lambdas_and_partners_reproduce_the_reference)
{
    check_mix(false);
}

Test(export, cutmix_boxes_weights_and_partners_reproduce_the_reference)
{
    check_mix(true);
}

/* --- per-element ops ------------------------------------------------------------ */

/* One quarter turn counter-clockwise, numpy's rot90(image, 1): out[y][x] =
 * in[x][side - 1 - y]; k turns are k of these. */
static void turn_once(const float *in, float *out)
{
    for (int y = 0; y < SIDE; y++)
        for (int x = 0; x < SIDE; x++)
            for (int c = 0; c < CH; c++)
                out[(y * SIDE + x) * CH + c] = in[(x * SIDE + (SIDE - 1 - y)) * CH + c];
}

static float brightness_offset(float delta, int32_t u24)
{
    float v = (float)(u24 - (1 << 23)) * 0x1p-23f;
    return delta * v;
}

static float scale_factor(float lo, float hi, int32_t u24)
{
    float u = (float)u24 * 0x1p-24f;
    float f = lo + (hi - lo) * u;
    return f > hi ? hi : f;
}

/* Applies element e's decisions of the ops under test to its values. */
typedef void (*apply_fn)(const sl_tensor *dec, int64_t e, float *x);

static float DELTA = 0.25f, LO = 0.5f, HI = 1.5f;

static const int32_t *row_of(const sl_tensor *dec, int64_t e)
{
    return (const int32_t *)dec->data + e * dec->shape.dims[1];
}

static void apply_rot90(const sl_tensor *dec, int64_t e, float *x)
{
    int32_t k = row_of(&dec[0], e)[0];
    cr_assert(k >= 0 && k < 4);
    float tmp[VALUES];
    for (int t = 0; t < k; t++) {
        turn_once(x, tmp);
        memcpy(x, tmp, sizeof tmp);
    }
}

static void apply_brightness(const sl_tensor *dec, int64_t e, float *x)
{
    float d = brightness_offset(DELTA, row_of(&dec[0], e)[0]);
    for (int j = 0; j < VALUES; j++)
        x[j] = x[j] + d;
}

static void apply_scale(const sl_tensor *dec, int64_t e, float *x)
{
    float f = scale_factor(LO, HI, row_of(&dec[0], e)[0]);
    for (int j = 0; j < VALUES; j++)
        x[j] = x[j] * f;
}

/* random_apply (op 0) owning random_brightness (op 1). */
static void apply_random_apply(const sl_tensor *dec, int64_t e, float *x)
{
    int32_t apply = row_of(&dec[0], e)[0];
    cr_assert(apply == 0 || apply == 1);
    if (apply)
        apply_brightness(&dec[1], e, x);
}

/* random_choice (op 0): branch a random_brightness (op 1), branch b
 * random_scale (op 2). */
static void apply_random_choice(const sl_tensor *dec, int64_t e, float *x)
{
    int32_t branch = row_of(&dec[0], e)[0];
    cr_assert(branch == 0 || branch == 1);
    if (branch == 0)
        apply_brightness(&dec[1], e, x);
    else
        apply_scale(&dec[2], e, x);
}

static void check_elements(const sl_op *ops, int nops, const char *columns, apply_fn apply, const char *tag)
{
    fixture f;
    build(&f, false, ops, nops, tag);
    char *plan = plan_text(&f);
    cr_expect(strstr(plan, "\"decisions_exported\":\ttrue"));
    cr_expect(strstr(plan, columns), "the plan names the columns %s", columns);
    free(plan);
    int64_t per_epoch = sl_pipeline_batches_per_epoch(f.full);
    int64_t epochs = (NBATCHES + per_epoch - 1) / per_epoch;
    for (int64_t epoch = 0; epoch < epochs; epoch++) {
        sl_tensor dec[3];
        for (int i = 0; i < nops; i++) {
            char name[64];
            snprintf(name, sizeof name, "decisions_op%d_e%lld.npy", i, (long long)epoch);
            dec[i] = load(&f, name, SL_I32);
            cr_assert_eq(dec[i].shape.dims[0], N, "indexed by element id");
        }
        for (int64_t k = epoch * per_epoch; k < NBATCHES && k < (epoch + 1) * per_epoch; k++) {
            sl_batch *plain, *full;
            produce(&f, k, &plain, &full);
            float *x = field_f32(plain, "x");
            for (int64_t r = 0; r < plain->count; r++)
                apply(dec, plain->element_ids[r], x + r * VALUES);
            expect_bitwise(x, field_f32(full, "x"), (size_t)(plain->count * VALUES), tag, k);
            sl_batch_free(plain);
            sl_batch_free(full);
        }
        /* The decisions differ between elements (both outcomes of a pick,
         * different offsets of a brightness), so a constant decision would
         * fail the test. */
        bool varies = false;
        for (int64_t e = 1; e < N && !varies; e++)
            varies = row_of(&dec[0], e)[0] != row_of(&dec[0], 0)[0];
        cr_expect(varies, "%s: its decisions vary between elements", tag);
        for (int i = 0; i < nops; i++)
            free(dec[i].data);
    }
    release(&f);
}

Test(export, rot90_turns_reproduce_the_reference)
{
    sl_op op = sl_op_rot90("x", 3);
    check_elements(&op, 1, "\"k\"", apply_rot90, "rot90");
}

Test(export, random_brightness_offsets_reproduce_the_reference)
{
    sl_op op = sl_op_random_brightness("x", 3, DELTA);
    check_elements(&op, 1, "\"u24\"", apply_brightness, "brightness");
}

Test(export, random_scale_factors_reproduce_the_reference)
{
    sl_op op = sl_op_random_scale("x", 3, LO, HI);
    check_elements(&op, 1, "\"u24\"", apply_scale, "scale");
}

Test(export, random_apply_picks_and_its_ops_decisions_reproduce_the_reference)
{
    sl_op ops[2] = {sl_op_random_apply("x", 3, 0.5f, 1), sl_op_random_brightness("x", 4, DELTA)};
    check_elements(ops, 2, "\"apply\"", apply_random_apply, "apply");
}

Test(export, random_choice_branches_reproduce_the_reference)
{
    sl_op ops[3] = {sl_op_random_choice("x", 3, 0.5f, 1, 1), sl_op_random_brightness("x", 4, DELTA),
                    sl_op_random_scale("x", 5, LO, HI)};
    check_elements(ops, 3, "\"branch\"", apply_random_choice, "choice");
}

/* dropout's mask is as large as the data, so no file holds it, but it is
 * keyed by nothing a peer lacks: the plan documents the keying, counts the
 * op as exported (a peer is then held to the reference bitwise) and says
 * the mode, without which a peer cannot tell whether dropout drops. */
Test(export, keyed_draws_are_exported_by_their_keying_with_the_mode)
{
    sl_op op = sl_op_dropout("x", 3, 0.25f);
    fixture f;
    build(&f, false, &op, 1, "dropout");
    char *plan = plan_text(&f);
    cr_expect(strstr(plan, "\"decisions_exported\":\ttrue"));
    cr_expect(strstr(plan, "\"keyed\":\t\"Philox4x32-10"), "the plan says how the mask is keyed");
    cr_expect(strstr(plan, "\"mode\":\t\"train\""));
    free(plan);
    char path[512];
    snprintf(path, sizeof path, "%s/decisions_op0_e0.npy", f.dir);
    FILE *none = fopen(path, "rb");
    cr_expect_null(none, "no decisions file for a mask recomputed from its keying");
    if (none)
        fclose(none);
    release(&f);
}

Test(export, value_draws_are_not_exported_and_the_plan_says_why)
{
    sl_op op = sl_op_gaussian_noise("x", 3, 0.1f);
    fixture f;
    build(&f, false, &op, 1, "noise");
    char *plan = plan_text(&f);
    cr_expect(strstr(plan, "\"decisions_exported\":\tfalse"));
    cr_expect(strstr(plan, "its draws are values, not decisions"));
    free(plan);
    char path[512];
    snprintf(path, sizeof path, "%s/decisions_op0_e0.npy", f.dir);
    FILE *none = fopen(path, "rb");
    cr_expect_null(none, "no decisions file for an op whose draws are values");
    if (none)
        fclose(none);
    release(&f);
}

/* Whether a plan draws (docs/peers.md: a loader of the user's gets a data
 * set of its own where none does): normalize and one_hot draw nothing, a
 * flip and gaussian noise do, and one drawing op among others is enough. */
Test(export, a_plan_draws_when_any_of_its_ops_does)
{
    sl_op flip = sl_op_random_hflip("x", 3, 0.5f);
    fixture f;
    build(&f, true, &flip, 1, "draws");
    cr_expect_not(sl_export_draws(f.plain), "one_hot draws nothing");
    cr_expect(sl_export_draws(f.full), "a flip draws");
    release(&f);
    sl_op noise = sl_op_gaussian_noise("x", 4, 0.1f);
    build(&f, false, &noise, 1, "noise-draws");
    cr_expect_not(sl_export_draws(f.plain), "no op draws nothing");
    cr_expect(sl_export_draws(f.full), "noise draws");
    release(&f);
}

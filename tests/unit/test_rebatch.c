/* Rebatching (sluice/pipeline/rebatch.h): micro-batch counts, views and copies of a
 * batch whose fields have narrowed per-batch shapes, concatenation back, and
 * every refusal naming what was wrong; the rebatch op refuses micro-batch
 * sizes outside [1, batch size]. PC-3's test checks the property on the
 * scenario's own batches. */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "sluice/fixtures/fixtures.h"
#include "sluice/pipeline/pipeline.h"
#include "sluice/pipeline/rebatch.h"

Test(rebatch, counts_micro_batches_rounding_up)
{
    cr_expect_eq(sl_rebatch_count(256, 32), 8);
    cr_expect_eq(sl_rebatch_count(232, 32), 8);
    cr_expect_eq(sl_rebatch_count(224, 32), 7);
    cr_expect_eq(sl_rebatch_count(1, 32), 1);
    cr_expect_eq(sl_rebatch_count(10, 1), 10);
    cr_expect_eq(sl_rebatch_count(0, 32), 0);
    cr_expect_eq(sl_rebatch_count(5, 0), 0);
    cr_expect_eq(sl_rebatch_count(5, -1), 0);
}

/* A batch of 10 rows: "a" f32 [4] narrowed to [2] for this batch (as
 * dynamic padding leaves it, rows compacted), "b" i32 []. Row r of "a" is
 * (10 r, 10 r + 1), of "b" 100 + r; element ids 1000 + r. */
static sl_batch *narrowed_batch(void)
{
    sl_schema schema = {2, {{"a", SL_F32, {1, {4}}}, {"b", SL_I32, {0, {0}}}}};
    sl_batch *b;
    sl_err err = {0};
    cr_assert_eq(sl_batch_create(&schema, 12, &b, &err), SL_OK, "%s", err.msg);
    sl_batch_set_count(b, 10);
    b->epoch = 3;
    b->index = 5;
    b->fields[0].shape.dims[1] = 2;
    float *a = b->fields[0].data;
    int32_t *v = b->fields[1].data;
    for (int r = 0; r < 10; r++) {
        a[2 * r] = (float)(10 * r);
        a[2 * r + 1] = (float)(10 * r + 1);
        v[r] = 100 + r;
        b->element_ids[r] = 1000 + r;
    }
    return b;
}

Test(rebatch, views_and_copies_keep_narrowed_shapes_and_concatenate_back)
{
    sl_batch *b = narrowed_batch();
    sl_err err = {0};
    sl_batch views[4], *parts[4];
    cr_assert_eq(sl_batch_split_views(b, 3, views, 4, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(sl_batch_split_copies(b, 3, parts, 4, &err), SL_OK, "%s", err.msg);
    const int64_t sizes[4] = {3, 3, 3, 1};
    for (int k = 0; k < 4; k++) {
        const sl_batch *batches[2] = {&views[k], parts[k]};
        for (int w = 0; w < 2; w++) {
            const sl_batch *p = batches[w];
            cr_assert_eq(p->count, sizes[k]);
            cr_assert_eq(p->epoch, 3);
            cr_assert_eq(p->index, 5);
            cr_assert_eq(p->fields[0].shape.dims[0], sizes[k]);
            cr_assert_eq(p->fields[0].shape.dims[1], 2, "the narrowed shape travels with the rows");
            for (int64_t r = 0; r < p->count; r++) {
                int64_t row = 3 * k + r;
                cr_assert_eq(((const float *)p->fields[0].data)[2 * r + 1], (float)(10 * row + 1));
                cr_assert_eq(((const int32_t *)p->fields[1].data)[r], 100 + row);
                cr_assert_eq(p->element_ids[r], 1000 + row);
            }
        }
    }
    sl_batch *back;
    cr_assert_eq(sl_batch_create(&b->schema, 10, &back, &err), SL_OK);
    cr_assert_eq(sl_batch_concat((const sl_batch *const *)parts, 4, back, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(back->count, 10);
    cr_assert_eq(back->fields[0].shape.dims[1], 2);
    cr_assert(memcmp(back->fields[0].data, b->fields[0].data, 20 * sizeof(float)) == 0);
    cr_assert(memcmp(back->fields[1].data, b->fields[1].data, 10 * sizeof(int32_t)) == 0);
    cr_assert(memcmp(back->element_ids, b->element_ids, 10 * sizeof(int64_t)) == 0);
    for (int k = 0; k < 4; k++)
        sl_batch_free(parts[k]);
    sl_batch_free(back);
    sl_batch_free(b);
}

Test(rebatch, refusals_name_what_is_wrong)
{
    sl_batch *b = narrowed_batch();
    sl_err err = {0};
    sl_batch view, views[4], *parts[4];
    cr_expect_eq(sl_batch_view(b, 8, 3, &view, &err), SL_EINVAL);
    cr_expect(strstr(err.msg, "[8, 11)") && strstr(err.msg, "10 rows"), "%s", err.msg);
    cr_expect_eq(sl_batch_view(b, -1, 2, &view, &err), SL_EINVAL);
    cr_expect_eq(sl_batch_view(b, 0, 0, &view, &err), SL_EINVAL);
    cr_expect_eq(sl_batch_split_views(b, 0, views, 4, &err), SL_EINVAL);
    cr_expect(strstr(err.msg, "at least one row"), "%s", err.msg);
    cr_expect_eq(sl_batch_split_copies(b, 3, parts, 3, &err), SL_EINVAL);
    cr_expect(strstr(err.msg, "into 4 micro-batches of 3, not 3"), "%s", err.msg);
    for (int k = 0; k < 3; k++)
        cr_expect_null(parts[k], "a refused split leaves no parts");

    /* Concatenation: capacity, schema, per-batch shapes, overlap. */
    sl_batch *small;
    cr_assert_eq(sl_batch_create(&b->schema, 9, &small, &err), SL_OK);
    const sl_batch *whole[1] = {b};
    cr_expect_eq(sl_batch_concat(whole, 1, small, &err), SL_EINVAL);
    cr_expect(strstr(err.msg, "capacity of 9"), "%s", err.msg);
    sl_schema other = b->schema;
    strcpy(other.fields[1].name, "c");
    sl_batch *renamed;
    cr_assert_eq(sl_batch_create(&other, 10, &renamed, &err), SL_OK);
    cr_expect_eq(sl_batch_concat(whole, 1, renamed, &err), SL_EINVAL);
    cr_expect(strstr(err.msg, "field 1 ('b') is not the output's 'c'"), "%s", err.msg);
    cr_assert_eq(sl_batch_split_views(b, 5, views, 2, &err), SL_OK);
    views[1].fields[0].shape.dims[1] = 3;
    sl_batch *out;
    cr_assert_eq(sl_batch_create(&b->schema, 10, &out, &err), SL_OK);
    const sl_batch *two[2] = {&views[0], &views[1]};
    cr_expect_eq(sl_batch_concat(two, 2, out, &err), SL_EINVAL);
    cr_expect(strstr(err.msg, "another per-batch shape"), "%s", err.msg);
    /* The second half of b concatenated to the start of b itself would
     * overwrite rows it has yet to read from elsewhere: refused, and b is
     * left as it was. */
    cr_assert_eq(sl_batch_split_views(b, 5, views, 2, &err), SL_OK);
    const sl_batch *swapped[2] = {&views[1], &views[0]};
    cr_expect_eq(sl_batch_concat(swapped, 2, b, &err), SL_EINVAL);
    cr_expect(strstr(err.msg, "overlaps the output at another place"), "%s", err.msg);
    cr_expect_eq(((const int32_t *)b->fields[1].data)[0], 100);
    cr_expect_eq(sl_batch_concat(NULL, 0, out, &err), SL_EINVAL);

    /* VJPs: rows and shapes must add up. */
    float g[12] = {0}, p0[8], p1[4];
    sl_tensor whole_t = {SL_F32, {2, {6, 2}}, g};
    sl_tensor part_t[2] = {{SL_F32, {2, {4, 2}}, p0}, {SL_F32, {2, {2, 2}}, p1}};
    cr_expect_eq(sl_rebatch_concat_vjp(&whole_t, 4, part_t, 3, &err), SL_EINVAL);
    cr_expect(strstr(err.msg, "6 rows splits into 2 micro-batches of 4, not 3"), "%s", err.msg);
    part_t[1].shape.dims[0] = 1;
    cr_expect_eq(sl_rebatch_concat_vjp(&whole_t, 4, part_t, 2, &err), SL_EINVAL);
    cr_expect(strstr(err.msg, "cotangent 1 must be 2 rows"), "%s", err.msg);
    cr_expect_eq(sl_rebatch_split_vjp(part_t, 2, &whole_t, &err), SL_EINVAL);
    cr_expect(strstr(err.msg, "hold 5 rows, the batch's cotangent 6"), "%s", err.msg);
    part_t[1].shape.dims[0] = 2;
    part_t[1].dtype = SL_I32;
    cr_expect_eq(sl_rebatch_split_vjp(part_t, 2, &whole_t, &err), SL_EINVAL);
    cr_expect(strstr(err.msg, "cotangent 1 has another dtype"), "%s", err.msg);

    sl_batch_free(small);
    sl_batch_free(renamed);
    sl_batch_free(out);
    sl_batch_free(b);
}

Test(rebatch, the_op_refuses_micro_batches_outside_the_batch)
{
    sl_fixture_spec fixture = {.kind = SL_FIXTURE_FLOATS, .n = 10, .h = 2, .w = 2, .c = 1};
    sl_source *source;
    sl_err err = {0};
    cr_assert_eq(sl_fixture_build(&fixture, 42, &source, &err), SL_OK, "%s", err.msg);
    const int32_t bad[] = {0, -3, 9};
    for (int k = 0; k < 3; k++) {
        sl_pipeline_spec spec;
        sl_pipeline_spec_init(&spec, source, 8, 42);
        cr_assert_eq(sl_pipeline_spec_add(&spec, sl_op_scale("x", 2.0f), &err), SL_OK);
        cr_assert_eq(sl_pipeline_spec_add(&spec, sl_op_rebatch("x", bad[k]), &err), SL_OK);
        sl_pipeline *p = NULL;
        cr_expect_eq(sl_pipeline_create(&spec, &p, &err), SL_EINVAL);
        cr_expect(strstr(err.msg, "op 1: rebatch") && strstr(err.msg, "batch size 8"), "%s", err.msg);
        cr_expect_null(p);
    }
    sl_source_free(source);
}

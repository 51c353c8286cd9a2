/* Digests of batches and golden outputs. The hash is checked against the
 * xxHash project's published XXH3-64 vectors, the canonical bytes against a
 * buffer this test builds by hand, and golden mismatches against messages a
 * person could act on. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sluice/core/digest.h"
#include "sluice/core/tensor.h"
#include "sluice/records/record.h"

#include "support.h"

static char dir[64];

static void make_scratch(void)
{
    test_tmpdir_create(dir, sizeof dir, "golden");
}

static void remove_scratch(void)
{
    test_tmpdir_remove(dir);
}

TestSuite(golden, .init = make_scratch, .fini = remove_scratch);

/* XXH3-64, seed 0. */

/* xxHash's sanity buffer (tests/sanity_test_vectors.h and xsum_sanity_check.c):
 * byte i is the top byte of PRIME32 * PRIME64^i. */
static void sanity_buffer(unsigned char *buf, size_t len)
{
    uint64_t gen = 2654435761U;
    for (size_t i = 0; i < len; i++) {
        buf[i] = (unsigned char)(gen >> 56);
        gen *= 11400714785074694797ULL;
    }
}

Test(digest, xxh3_matches_the_published_vectors)
{
    static const struct {
        size_t len;
        uint64_t hash;
    } vectors[] = {
        {0, 0x2D06800538D394C2ULL},    {1, 0xC44BDFF4074EECDBULL},    {6, 0x27B56A84CD2D7325ULL},
        {12, 0xA713DAF0DFBB77E7ULL},   {24, 0xA3FE70BF9D3510EBULL},   {48, 0x397DA259ECBA1F11ULL},
        {80, 0xBCDEFBBB2C47C90AULL},   {195, 0xCD94217EE362EC3AULL},  {403, 0xCDEB804D65C6DEA4ULL},
        {512, 0x617E49599013CB6BULL},  {2048, 0xDD59E2C3A5F038E0ULL}, {2099, 0xC6B9D9B3FC9AC765ULL},
        {2240, 0x6E73A90539CF2948ULL}, {2367, 0xCB37AEB9E5D361EDULL},
    };
    static unsigned char buf[2367];
    sanity_buffer(buf, sizeof buf);
    for (size_t i = 0; i < sizeof vectors / sizeof vectors[0]; i++)
        cr_expect_eq(sl_digest_bytes(buf, vectors[i].len), vectors[i].hash, "length %zu: %016llx", vectors[i].len,
                     (unsigned long long)sl_digest_bytes(buf, vectors[i].len));
    cr_assert_eq(sl_digest_bytes(NULL, 0), 0x2D06800538D394C2ULL);
    sl_digest *empty = sl_digest_new();
    cr_assert_eq(sl_digest_value(empty), 0x2D06800538D394C2ULL, "no batch is the empty input");
    sl_digest_free(empty);
}

/* A two-field batch: "x" u8 per-element [3], "y" f32 per-element []. */
static sl_batch *small_batch(const char *yname, sl_dtype ydtype)
{
    sl_schema schema = {.nfields = 2};
    strcpy(schema.fields[0].name, "x");
    schema.fields[0].dtype = SL_U8;
    schema.fields[0].shape = (sl_shape){1, {3}};
    strcpy(schema.fields[1].name, yname);
    schema.fields[1].dtype = ydtype;
    schema.fields[1].shape = (sl_shape){0, {0}};
    sl_batch *batch;
    sl_err err = {0};
    cr_assert_eq(sl_batch_create(&schema, 2, &batch, &err), SL_OK, "%s", err.msg);
    unsigned char *x = batch->fields[0].data;
    for (int i = 0; i < 6; i++)
        x[i] = (unsigned char)(10 + i);
    const float y[2] = {1.5f, -2.0f};
    memcpy(batch->fields[1].data, y, sizeof y);
    batch->element_ids[0] = 7;
    batch->element_ids[1] = 3;
    return batch;
}

static uint64_t digest_of(const sl_batch *batch)
{
    sl_digest *d = sl_digest_new();
    cr_assert_not_null(d);
    sl_digest_add_batch(d, batch);
    uint64_t v = sl_digest_value(d);
    sl_digest_free(d);
    return v;
}

static size_t put_le(unsigned char *p, int64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)((uint64_t)v >> (8 * i));
    return 8;
}

Test(digest, batch_digest_is_xxh3_of_the_canonical_bytes)
{
    sl_batch *batch = small_batch("y", SL_F32);
    unsigned char buf[256];
    size_t n = 0;
    memcpy(buf + n, "x\0u8\0", 5), n += 5; /* name and dtype, each with its NUL */
    n += put_le(buf + n, 2);               /* rank, with the row dimension */
    n += put_le(buf + n, 2);
    n += put_le(buf + n, 3);
    for (int i = 0; i < 6; i++)
        buf[n++] = (unsigned char)(10 + i);
    memcpy(buf + n, "y\0f32\0", 6), n += 6;
    n += put_le(buf + n, 1);
    n += put_le(buf + n, 2);
    /* 1.5f and -2.0f, little-endian. */
    static const unsigned char y[8] = {0x00, 0x00, 0xc0, 0x3f, 0x00, 0x00, 0x00, 0xc0};
    memcpy(buf + n, y, 8), n += 8;
    cr_assert_eq(digest_of(batch), sl_digest_bytes(buf, n));

    /* Streaming two batches is the digest of both canonical forms in turn. */
    unsigned char twice[512];
    memcpy(twice, buf, n);
    memcpy(twice + n, buf, n);
    sl_digest *d = sl_digest_new();
    sl_digest_add_batch(d, batch);
    sl_digest_add_batch(d, batch);
    cr_assert_eq(sl_digest_value(d), sl_digest_bytes(twice, 2 * n));
    sl_digest_free(d);
    sl_batch_free(batch);
}

Test(digest, any_change_of_content_shape_dtype_or_name_changes_it)
{
    sl_batch *batch = small_batch("y", SL_F32);
    uint64_t base = digest_of(batch);
    /* Every single bit of every data byte. */
    for (int f = 0; f < 2; f++) {
        unsigned char *data = batch->fields[f].data;
        size_t size = sl_tensor_nbytes(&batch->fields[f]);
        for (size_t i = 0; i < size; i++) {
            for (int bit = 0; bit < 8; bit++) {
                data[i] ^= (unsigned char)(1u << bit);
                cr_assert_neq(digest_of(batch), base, "field %d byte %zu bit %d", f, i, bit);
                data[i] ^= (unsigned char)(1u << bit);
            }
        }
    }
    cr_assert_eq(digest_of(batch), base);

    /* Element ids are not content. */
    batch->element_ids[0] = 1000;
    cr_assert_eq(digest_of(batch), base);

    /* The same six bytes of "x" seen as one row of 6 instead of two of 3. */
    batch->fields[0].shape = (sl_shape){2, {1, 6}};
    cr_assert_neq(digest_of(batch), base);
    sl_batch_free(batch);

    sl_batch *as_i32 = small_batch("y", SL_I32);
    memcpy(as_i32->fields[1].data, (const float[2]){1.5f, -2.0f}, 8);
    cr_assert_neq(digest_of(as_i32), base, "same bytes, other dtype");
    sl_batch_free(as_i32);

    sl_batch *renamed = small_batch("z", SL_F32);
    cr_assert_neq(digest_of(renamed), base, "same bytes, other field name");
    sl_batch_free(renamed);
}

/* Golden outputs. Batches of "image" (f32, per-element [2, 3]) and "label"
 * (i32, scalar); image value j of element id e is (6 e + j) / 4. */

static sl_batch *image_batch(int64_t count, int64_t first_id)
{
    sl_schema schema = {.nfields = 2};
    strcpy(schema.fields[0].name, "image");
    schema.fields[0].dtype = SL_F32;
    schema.fields[0].shape = (sl_shape){2, {2, 3}};
    strcpy(schema.fields[1].name, "label");
    schema.fields[1].dtype = SL_I32;
    schema.fields[1].shape = (sl_shape){0, {0}};
    sl_batch *batch;
    sl_err err = {0};
    cr_assert_eq(sl_batch_create(&schema, count, &batch, &err), SL_OK, "%s", err.msg);
    float *image = batch->fields[0].data;
    int32_t *label = batch->fields[1].data;
    for (int64_t r = 0; r < count; r++) {
        int64_t id = first_id + r;
        batch->element_ids[r] = id;
        label[r] = (int32_t)(id % 10);
        for (int j = 0; j < 6; j++)
            image[r * 6 + j] = (float)(6 * id + j) / 4.0f;
    }
    return batch;
}

#define NBATCHES 3
static const int64_t batch_rows[NBATCHES] = {4, 4, 3};

/* A golden of the three standard batches; edit, when given, changes batch b
 * before it is added. */
static sl_golden *make_golden(uint64_t seed, void (*edit)(sl_batch *batch, int b))
{
    sl_golden *golden = sl_golden_new("CV-1", "32x32", seed);
    cr_assert_not_null(golden);
    int64_t id = 0;
    for (int b = 0; b < NBATCHES; b++) {
        sl_batch *batch = image_batch(batch_rows[b], id);
        id += batch_rows[b];
        if (edit)
            edit(batch, b);
        sl_err err = {0};
        cr_assert_eq(sl_golden_add_batch(golden, batch, &err), SL_OK, "%s", err.msg);
        sl_batch_free(batch);
    }
    return golden;
}

static void expect_mismatch(const sl_golden *expected, const sl_golden *actual, const char *const *needles)
{
    sl_err err = {0};
    cr_assert_eq(sl_golden_compare(expected, actual, &err), SL_EMISMATCH, "the difference went unnoticed");
    cr_assert_eq(strncmp(err.msg, "CV-1/32x32: ", 12), 0, "message must start with the scenario: %s", err.msg);
    for (; *needles; needles++)
        cr_assert_not_null(strstr(err.msg, *needles), "message lacks \"%s\": %s", *needles, err.msg);
}

Test(golden, save_and_load_round_trip)
{
    sl_golden *golden = make_golden(42, NULL);
    cr_assert_eq(sl_golden_batches(golden), NBATCHES);

    /* The overall digest is the batch digest of the same batches. */
    sl_digest *d = sl_digest_new();
    int64_t id = 0;
    for (int b = 0; b < NBATCHES; b++) {
        sl_batch *batch = image_batch(batch_rows[b], id);
        id += batch_rows[b];
        sl_digest_add_batch(d, batch);
        sl_batch_free(batch);
    }
    cr_assert_eq(sl_golden_digest(golden), sl_digest_value(d));
    sl_digest_free(d);

    char path[128], again[128];
    snprintf(path, sizeof path, "%s/CV-1__32x32.json", dir);
    snprintf(again, sizeof again, "%s/again.json", dir);
    sl_err err = {0};
    cr_assert_eq(sl_golden_save(golden, path, &err), SL_OK, "%s", err.msg);
    sl_golden *loaded = NULL;
    cr_assert_eq(sl_golden_load(path, &loaded, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(sl_golden_batches(loaded), NBATCHES);
    cr_assert_eq(sl_golden_digest(loaded), sl_golden_digest(golden));
    cr_assert_eq(sl_golden_compare(loaded, golden, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(sl_golden_compare(golden, loaded, &err), SL_OK, "%s", err.msg);

    /* Saving what was loaded gives the same bytes: the form is stable. */
    cr_assert_eq(sl_golden_save(loaded, again, &err), SL_OK, "%s", err.msg);
    char *a = NULL, *b = NULL;
    size_t na, nb;
    cr_assert_eq(sl_read_file(path, &a, &na, &err), SL_OK);
    cr_assert_eq(sl_read_file(again, &b, &nb, &err), SL_OK);
    cr_assert_eq(na, nb);
    cr_assert_str_eq(a, b);

    /* The file says what docs/golden.md promises. */
    cJSON *root = cJSON_Parse(a);
    cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(root, "seed")), "42");
    cr_assert_eq(cJSON_GetObjectItem(root, "batches")->valuedouble, 3.0);
    const cJSON *image = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "fields"), 0);
    cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(image, "dtype")), "f32");
    const cJSON *values = cJSON_GetObjectItem(image, "values");
    cr_assert_eq(cJSON_GetArraySize(values), 16);
    cr_assert_eq(cJSON_GetArrayItem(values, 9)->valuedouble, 2.25); /* (6 * 1 + 3) / 4 */
    /* 2.25f is 0x40100000. */
    cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetArrayItem(cJSON_GetObjectItem(image, "bits"), 9)), "40100000");
    const cJSON *digests = cJSON_GetObjectItem(image, "row_digests");
    cr_assert_eq(cJSON_GetArraySize(digests), 3);
    cr_assert_eq(cJSON_GetArraySize(cJSON_GetArrayItem(digests, 2)), 3);
    /* Row 1 of batch 2 is element 9: its 6 floats (54..59) / 4. */
    float row[6];
    for (int j = 0; j < 6; j++)
        row[j] = (float)(54 + j) / 4.0f;
    char hex[17];
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)sl_digest_bytes(row, sizeof row));
    cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetArrayItem(cJSON_GetArrayItem(digests, 2), 1)), hex);
    const cJSON *label = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "fields"), 1);
    cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(label, "values")), 4, "batch 0 has only 4 labels");
    cr_assert_eq(cJSON_GetArrayItem(cJSON_GetArrayItem(cJSON_GetObjectItem(root, "element_ids"), 1), 0)->valuedouble,
                 4.0);
    cJSON_Delete(root);
    free(a);
    free(b);
    sl_golden_free(loaded);
    sl_golden_free(golden);
}

static void flip_batch1_row2(sl_batch *batch, int b)
{
    if (b == 1)
        ((float *)batch->fields[0].data)[2 * 6 + 4] += 1.0f;
}

Test(golden, changed_row_names_field_batch_row_and_element)
{
    sl_golden *expected = make_golden(42, NULL);
    sl_golden *actual = make_golden(42, flip_batch1_row2);
    /* Batch 1 starts at element 4, so row 2 is element 6; a row of "image"
     * has 6 values, so row 2 covers flat indices 12 to 17. */
    static const char *const needles[] = {
        "'image'", "batch 1", "row 2", "element id 6", "[12, 18)", "1 of 4 rows", NULL,
    };
    expect_mismatch(expected, actual, needles);
    sl_golden_free(actual);
    sl_golden_free(expected);
}

static void change_value_9(sl_batch *batch, int b)
{
    if (b == 0)
        ((float *)batch->fields[0].data)[9] = 7.5f;
}

Test(golden, changed_stored_value_names_its_index)
{
    sl_golden *expected = make_golden(42, NULL);
    sl_golden *actual = make_golden(42, change_value_9);
    /* Index 9 of batch 0 is row 1 (element 1), value (6 + 3) / 4. */
    static const char *const needles[] = {
        "'image'", "batch 0", "row 1", "element id 1", "index 9", "expected 2.25", "actual 7.5", NULL,
    };
    expect_mismatch(expected, actual, needles);
    sl_golden_free(actual);
    sl_golden_free(expected);
}

static void change_label_and_id(sl_batch *batch, int b)
{
    if (b == 2) {
        ((int32_t *)batch->fields[1].data)[0] += 1;
        batch->element_ids[0] = 99;
    }
}

static void change_id_only(sl_batch *batch, int b)
{
    if (b == 2)
        batch->element_ids[1] = 77;
}

Test(golden, element_ids_are_compared_and_shown)
{
    sl_golden *expected = make_golden(42, NULL);
    sl_golden *relabelled = make_golden(42, change_label_and_id);
    static const char *const both[] = {"'label'", "batch 2", "row 0", "expected 8, actual 99", NULL};
    expect_mismatch(expected, relabelled, both);
    sl_golden *moved = make_golden(42, change_id_only);
    static const char *const ids[] = {"batch 2", "row 1", "77", "expected 9", NULL};
    expect_mismatch(expected, moved, ids);
    sl_golden_free(moved);
    sl_golden_free(relabelled);
    sl_golden_free(expected);
}

static void reshape_image(sl_batch *batch, int b)
{
    (void)b;
    batch->schema.fields[0].shape = (sl_shape){2, {3, 2}};
}

static void retype_label(sl_batch *batch, int b)
{
    (void)b;
    batch->schema.fields[1].dtype = SL_F32;
    batch->fields[1].dtype = SL_F32;
}

static void rename_label(sl_batch *batch, int b)
{
    (void)b;
    strcpy(batch->schema.fields[1].name, "target");
}

Test(golden, layout_differences_are_named_first)
{
    sl_golden *expected = make_golden(42, NULL);
    struct {
        sl_golden *actual;
        const char *needles[4];
    } cases[] = {
        {make_golden(43, NULL), {"seed", "expected 42, actual 43", NULL}},
        {make_golden(42, reshape_image), {"'image'", "[3, 2]", "[2, 3]", NULL}},
        {make_golden(42, retype_label), {"'label'", "f32", "i32", NULL}},
        {make_golden(42, rename_label), {"'target'", "'label'", NULL}},
        {sl_golden_new("CV-1", "32x32", 42), {"batches", "expected 3, actual 0", NULL}},
        {sl_golden_new("CV-2", "32x32", 42), {"CV-2/32x32", NULL}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        expect_mismatch(expected, cases[i].actual, cases[i].needles);
        sl_golden_free(cases[i].actual);
    }
    sl_golden_free(expected);
}

Test(golden, a_batch_with_other_fields_is_refused)
{
    sl_golden *golden = make_golden(42, NULL);
    sl_batch *other = small_batch("y", SL_F32);
    sl_err err = {0};
    cr_assert_eq(sl_golden_add_batch(golden, other, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.msg, "CV-1/32x32"), "%s", err.msg);
    cr_assert_not_null(strstr(err.msg, "batch 3"), "%s", err.msg);
    sl_batch_free(other);
    sl_golden_free(golden);
}

static void nan_and_negative_zero(sl_batch *batch, int b)
{
    if (b == 0) {
        ((float *)batch->fields[0].data)[0] = NAN;
        ((float *)batch->fields[0].data)[1] = -0.0f;
    }
}

Test(golden, non_finite_and_signed_zero_values_survive_exactly)
{
    sl_golden *golden = make_golden(42, nan_and_negative_zero);
    char path[128];
    snprintf(path, sizeof path, "%s/nan.json", dir);
    sl_err err = {0};
    cr_assert_eq(sl_golden_save(golden, path, &err), SL_OK, "%s", err.msg);
    sl_golden *loaded = NULL;
    cr_assert_eq(sl_golden_load(path, &loaded, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(sl_golden_compare(loaded, golden, &err), SL_OK, "%s", err.msg);
    /* +0.0 differs from -0.0 in its bits, and the golden must see it. */
    sl_golden *plain = make_golden(42, NULL);
    static const char *const needles[] = {"'image'", "batch 0", "row 0", "index 0", NULL};
    expect_mismatch(loaded, plain, needles);
    sl_golden_free(plain);
    sl_golden_free(loaded);
    sl_golden_free(golden);
}

/* Damaged golden files. */

/* Saves the standard golden to path and returns its parsed JSON. */
static cJSON *saved_json(const char *path)
{
    sl_golden *golden = make_golden(42, NULL);
    sl_err err = {0};
    cr_assert_eq(sl_golden_save(golden, path, &err), SL_OK, "%s", err.msg);
    sl_golden_free(golden);
    char *text = NULL;
    size_t size;
    cr_assert_eq(sl_read_file(path, &text, &size, &err), SL_OK);
    cJSON *root = cJSON_Parse(text);
    free(text);
    cr_assert_not_null(root);
    return root;
}

static void write_json(const char *path, cJSON *root)
{
    char *text = cJSON_Print(root);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
    free(text);
}

static void expect_refused(const char *path, const char *field)
{
    static int sentinel;
    sl_golden *golden = (sl_golden *)&sentinel; /* must come back NULL */
    sl_err err = {0};
    cr_assert_neq(sl_golden_load(path, &golden, &err), SL_OK, "a damaged golden was accepted (%s)",
                  field ? field : "-");
    cr_assert_null(golden);
    cr_assert_not_null(strstr(err.msg, path), "message does not name the file: %s", err.msg);
    if (field) {
        char quoted[96];
        snprintf(quoted, sizeof quoted, "'%s'", field);
        cr_assert_not_null(strstr(err.msg, quoted), "message does not name %s: %s", quoted, err.msg);
    }
}

static cJSON *field0(cJSON *root)
{
    return cJSON_GetArrayItem(cJSON_GetObjectItem(root, "fields"), 0);
}

Test(golden, truncated_and_malformed_files_are_refused)
{
    char path[128];
    snprintf(path, sizeof path, "%s/g.json", dir);
    cJSON_Delete(saved_json(path));
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(truncate(path, st.st_size - 10), 0);
    expect_refused(path, NULL);
    FILE *f = fopen(path, "w");
    fputs("{\"golden_version\": 1,, }", f);
    fclose(f);
    expect_refused(path, NULL);
    f = fopen(path, "w");
    fclose(f);
    expect_refused(path, NULL);
}

Test(golden, each_damaged_field_is_named)
{
    char path[128];
    snprintf(path, sizeof path, "%s/g.json", dir);
    for (int c = 0;; c++) {
        cJSON *root = saved_json(path);
        cJSON *f0 = field0(root);
        cJSON *label = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "fields"), 1);
        const char *field = NULL;
        switch (c) {
        case 0:
            cJSON_DeleteItemFromObject(root, "digest");
            field = "digest";
            break;
        case 1:
            cJSON_ReplaceItemInObject(root, "digest", cJSON_CreateString("0123456789abcdeg"));
            field = "digest";
            break;
        case 2:
            cJSON_ReplaceItemInObject(root, "batches", cJSON_CreateString("3"));
            field = "batches";
            break;
        case 3:
            cJSON_ReplaceItemInObject(root, "golden_version", cJSON_CreateNumber(2));
            field = "golden_version";
            break;
        case 4:
            cJSON_ReplaceItemInObject(root, "seed", cJSON_CreateNumber(42));
            field = "seed";
            break;
        case 5:
            cJSON_DeleteItemFromObject(f0, "row_digests");
            field = "fields[0].row_digests";
            break;
        case 6:
            cJSON_ReplaceItemInArray(cJSON_GetArrayItem(cJSON_GetObjectItem(f0, "row_digests"), 1), 2,
                                     cJSON_CreateString("not hex at all!!"));
            field = "fields[0].row_digests[1][2]";
            break;
        case 7:
            cJSON_DeleteItemFromArray(cJSON_GetArrayItem(cJSON_GetObjectItem(f0, "row_digests"), 2), 0);
            field = "fields[0].row_digests[2]";
            break;
        case 8:
            cJSON_ReplaceItemInArray(cJSON_GetObjectItem(f0, "bits"), 3, cJSON_CreateString("4010"));
            field = "fields[0].bits[3]";
            break;
        case 9:
            cJSON_ReplaceItemInArray(cJSON_GetObjectItem(f0, "values"), 3, cJSON_CreateNumber(123.0));
            field = "fields[0].values[3]";
            break;
        case 10:
            cJSON_ReplaceItemInObject(label, "dtype", cJSON_CreateString("f16"));
            field = "fields[1].dtype";
            break;
        case 11:
            cJSON_ReplaceItemInObject(f0, "shape", cJSON_CreateString("[2, 3]"));
            field = "fields[0].shape";
            break;
        case 12:
            cJSON_DeleteItemFromArray(cJSON_GetObjectItem(root, "element_ids"), 2);
            field = "element_ids";
            break;
        case 13:
            cJSON_ReplaceItemInArray(cJSON_GetArrayItem(cJSON_GetObjectItem(root, "element_ids"), 0), 1,
                                     cJSON_CreateString("1"));
            field = "element_ids[0][1]";
            break;
        case 14:
            cJSON_ReplaceItemInObject(label, "name", cJSON_CreateString("image"));
            field = "fields[1].name";
            break;
        case 15:
            cJSON_DeleteItemFromObject(root, "fields");
            field = "fields";
            break;
        case 16: {
            /* 8589934593 x 2147483648 wraps a 64-bit product to 2^31; such
             * a golden was once accepted (UBSan saw the overflow). */
            cJSON *shape = cJSON_CreateArray();
            cJSON_AddItemToArray(shape, cJSON_CreateNumber(8589934593.0));
            cJSON_AddItemToArray(shape, cJSON_CreateNumber(2147483648.0));
            cJSON_ReplaceItemInObject(f0, "shape", shape);
            field = "fields[0].shape";
            break;
        }
        default: cJSON_Delete(root); return;
        }
        write_json(path, root);
        cJSON_Delete(root);
        expect_refused(path, field);
    }
}

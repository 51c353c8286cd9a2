/* Audit manifests: a manifest compares equal to itself after a round trip
 * through its file, a changed row is named down to its batch, field and
 * row (whether or not its field digest changed with it), a changed field
 * digest alone is not explained by a guess, a table-dependent run's
 * difference is reported but not failed, and damaged or foreign files are
 * refused by name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <criterion/criterion.h>

#include "sluice/bench/audit.h"
#include "sluice/sluice.h"
#include "support.h"

static char dir[64];

static void make_scratch(void)
{
    test_tmpdir_create(dir, sizeof dir, "audit");
}

static void remove_scratch(void)
{
    test_tmpdir_remove(dir);
}

TestSuite(audit, .init = make_scratch, .fini = remove_scratch);

static void scratch_path(char *buf, size_t size, const char *name)
{
    snprintf(buf, size, "%s/%s", dir, name);
}

static sl_audit *audit_nlp1(void)
{
    sl_build_options options;
    sl_build_options_init(&options, SL_PROFILE_CI, 42);
    options.n_override = 1024;
    const sl_scenario *scenario = sl_scenario_find("NLP-1");
    sl_scenario_instance *instance;
    sl_err err = {0};
    cr_assert_eq(sl_scenario_instantiate(scenario, &scenario->variants[0], &options, &instance, &err), SL_OK, "%s",
                 err.msg);
    sl_audit_settings settings = {.epochs = 2, .batches_per_epoch = 3, .threads = 1};
    sl_audit *audit = sl_audit_new(&settings);
    cr_assert_eq(sl_audit_add_run(audit, instance, sl_adapter_find("fused"), 42, &err), SL_OK, "%s", err.msg);
    sl_scenario_instance_free(instance);
    return audit;
}

Test(audit, a_manifest_equals_itself_after_a_round_trip)
{
    char path[256];
    scratch_path(path, sizeof path, "a.json");
    sl_audit *audit = audit_nlp1();
    sl_err err = {0};
    cr_assert_eq(sl_audit_save(audit, NULL, path, &err), SL_OK, "%s", err.msg);
    sl_audit *loaded = NULL;
    cr_assert_eq(sl_audit_load(path, &loaded, &err), SL_OK, "%s", err.msg);
    sl_audit_comparison result;
    cr_expect_eq(sl_audit_compare(audit, loaded, &result, &err), SL_OK, "%s", err.msg);
    cr_expect_eq(result.batches, 6, "2 epochs of 3 batches");
    cr_expect_eq(result.table_dependent, 0);
    sl_audit_free(loaded);
    sl_audit_free(audit);
}

/* Flips one hex digit of row 5 of epoch 1, batch 2 (the sixth batch). */
Test(audit, a_changed_row_is_named_by_batch_field_and_row)
{
    char path[256];
    scratch_path(path, sizeof path, "a.json");
    sl_audit *audit = audit_nlp1();
    sl_err err = {0};
    cr_assert_eq(sl_audit_save(audit, NULL, path, &err), SL_OK, "%s", err.msg);
    char *text = test_read_text(path);
    cJSON *root = cJSON_Parse(text);
    free(text);
    cJSON *batch =
        cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(root, "runs"), 0), "batches"), 5);
    cJSON *field = cJSON_GetArrayItem(cJSON_GetObjectItem(batch, "fields"), 0);
    cJSON *digest = cJSON_GetObjectItem(field, "digest");
    cJSON *rows = cJSON_GetObjectItem(field, "rows");
    char *changed = strdup(rows->valuestring);
    changed[5 * 16 + 3] = changed[5 * 16 + 3] == '0' ? '1' : '0';
    cJSON_SetValuestring(rows, changed);
    cJSON_SetValuestring(digest, "0000000000000001");
    free(changed);
    text = cJSON_Print(root);
    cJSON_Delete(root);
    test_write_text(path, text);
    free(text);

    sl_audit *loaded = NULL;
    cr_assert_eq(sl_audit_load(path, &loaded, &err), SL_OK, "%s", err.msg);
    cr_expect_eq(sl_audit_compare(audit, loaded, NULL, &err), SL_EMISMATCH);
    cr_expect(strstr(err.msg, "NLP-1/128 on fused, seed 42, epoch 1, batch 2, field 'tokens', row 5"),
              "the message names where: %s", err.msg);
    sl_audit_free(loaded);
    sl_audit_free(audit);
}

Test(audit, damaged_or_foreign_manifests_are_refused_by_name)
{
    char path[256];
    scratch_path(path, sizeof path, "a.json");
    sl_audit *loaded = NULL;
    sl_err err = {0};
    test_write_text(path, "{\"format\": \"sluice-audit\", \"version\": 1, \"runs\": [");
    cr_expect_neq(sl_audit_load(path, &loaded, &err), SL_OK);
    cr_expect(strstr(err.msg, path) && strstr(err.msg, "truncated"), "%s", err.msg);
    test_write_text(path, "{\"schema_version\": 2, \"scenario\": \"CV-1\"}");
    cr_expect_neq(sl_audit_load(path, &loaded, &err), SL_OK);
    cr_expect(strstr(err.msg, "'format'"), "a record is not a manifest: %s", err.msg);
    test_write_text(path, "{\"format\": \"sluice-audit\", \"version\": 9, \"runs\": []}");
    cr_expect_neq(sl_audit_load(path, &loaded, &err), SL_OK);
    cr_expect(strstr(err.msg, "'version'"), "%s", err.msg);
    test_write_text(path,
                    "{\"format\": \"sluice-audit\", \"version\": 1, \"runs\": [{\"scenario\": \"CV-1\", \"variant\": "
                    "\"32x32\", \"adapter\": \"iter\", \"seed\": \"42\", \"batches\": [{\"epoch\": 0, \"batch\": 0, "
                    "\"fields\": [{\"name\": \"image\", \"digest\": \"0123456789abcdef\", \"rows\": \"12zz\"}]}]}]}");
    cr_expect_neq(sl_audit_load(path, &loaded, &err), SL_OK);
    cr_expect(strstr(err.msg, "runs[0].batches[0].fields[0].rows"), "%s", err.msg);
    cr_expect_null(loaded);
}

/* Saves the NLP-1 audit, lets edit change the first run's sixth batch's
 * first field, and loads the result. */
static sl_audit *edited_copy(const sl_audit *audit, void (*edit)(cJSON *run, cJSON *field))
{
    char path[256];
    scratch_path(path, sizeof path, "edited.json");
    sl_err err = {0};
    cr_assert_eq(sl_audit_save(audit, NULL, path, &err), SL_OK, "%s", err.msg);
    char *text = test_read_text(path);
    cJSON *root = cJSON_Parse(text);
    free(text);
    cJSON *run = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "runs"), 0);
    cJSON *batch = cJSON_GetArrayItem(cJSON_GetObjectItem(run, "batches"), 5);
    edit(run, cJSON_GetArrayItem(cJSON_GetObjectItem(batch, "fields"), 0));
    text = cJSON_Print(root);
    cJSON_Delete(root);
    test_write_text(path, text);
    free(text);
    sl_audit *loaded = NULL;
    cr_assert_eq(sl_audit_load(path, &loaded, &err), SL_OK, "%s", err.msg);
    return loaded;
}

static void flip_row_7(cJSON *run, cJSON *field)
{
    (void)run;
    cJSON *rows = cJSON_GetObjectItem(field, "rows");
    char *changed = strdup(rows->valuestring);
    changed[7 * 16] = changed[7 * 16] == 'a' ? 'b' : 'a';
    cJSON_SetValuestring(rows, changed);
    free(changed);
}

/* The review's reproducer: one row digest changed, the field digest left
 * as it was. Comparing field digests alone called these identical. */
Test(audit, a_changed_row_digest_alone_is_found_and_named)
{
    sl_audit *audit = audit_nlp1();
    sl_audit *loaded = edited_copy(audit, flip_row_7);
    sl_err err = {0};
    cr_expect_eq(sl_audit_compare(audit, loaded, NULL, &err), SL_EMISMATCH);
    cr_expect(strstr(err.msg, "epoch 1, batch 2, field 'tokens', row 7"), "the message names the row: %s", err.msg);
    sl_audit_free(loaded);
    sl_audit_free(audit);
}

static void damage_field_digest(cJSON *run, cJSON *field)
{
    (void)run;
    cJSON_SetValuestring(cJSON_GetObjectItem(field, "digest"), "00000000000000ff");
}

/* A field digest that differs while every row agrees: the digests cannot
 * say whether the shape changed or the file was altered, and the message
 * says both rather than guessing "different shape". */
Test(audit, a_damaged_field_digest_is_reported_without_a_guess)
{
    sl_audit *audit = audit_nlp1();
    sl_audit *loaded = edited_copy(audit, damage_field_digest);
    sl_err err = {0};
    cr_expect_eq(sl_audit_compare(audit, loaded, NULL, &err), SL_EMISMATCH);
    cr_expect(strstr(err.msg, "every row digest matches") && strstr(err.msg, "altered"), "%s", err.msg);
    sl_audit_free(loaded);
    sl_audit_free(audit);
}

static void flip_row_7_of_an_inexact_run(cJSON *run, cJSON *field)
{
    flip_row_7(run, field);
    cJSON_ReplaceItemInObject(run, "exact", cJSON_CreateFalse());
}

/* A run marked table-dependent ("exact": false, as MM-2's log-mel on a
 * BLAS table) that differs is counted and described, not failed; the same
 * difference in an exact run fails (the test above). */
Test(audit, a_table_dependent_run_that_differs_is_reported_not_failed)
{
    sl_audit *audit = audit_nlp1();
    sl_audit *loaded = edited_copy(audit, flip_row_7_of_an_inexact_run);
    sl_audit_comparison result;
    sl_err err = {0};
    cr_expect_eq(sl_audit_compare(audit, loaded, &result, &err), SL_OK, "%s", err.msg);
    cr_expect_eq(result.table_dependent, 1);
    cr_expect(strstr(result.table_dependent_first, "row 7"), "%s", result.table_dependent_first);
    sl_audit_free(loaded);
    sl_audit_free(audit);
}

/* Which runs are table-dependent is the audit's to say: MM-2 on fused with
 * an optimized table is, on the reference adapter it is not, and a
 * scenario without a tolerance never is. */
Test(audit, mm2_on_an_optimized_table_is_marked_table_dependent)
{
    sl_build_options options;
    sl_build_options_init(&options, SL_PROFILE_CI, 42);
    options.n_override = 32;
    const sl_scenario *scenario = sl_scenario_find("MM-2");
    sl_scenario_instance *instance;
    sl_err err = {0};
    cr_assert_eq(sl_scenario_instantiate(scenario, &scenario->variants[0], &options, &instance, &err), SL_OK, "%s",
                 err.msg);
    sl_audit_settings settings = {.epochs = 1, .batches_per_epoch = 1, .threads = 1};
    sl_audit *audit = sl_audit_new(&settings);
    cr_assert_eq(sl_audit_add_run(audit, instance, sl_adapter_find("reference"), 42, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(sl_audit_add_run(audit, instance, sl_adapter_find("fused"), 42, &err), SL_OK, "%s", err.msg);
    sl_scenario_instance_free(instance);
    char path[256];
    scratch_path(path, sizeof path, "mm2.json");
    cr_assert_eq(sl_audit_save(audit, NULL, path, &err), SL_OK, "%s", err.msg);
    char *text = test_read_text(path);
    cJSON *root = cJSON_Parse(text);
    free(text);
    cJSON *runs = cJSON_GetObjectItem(root, "runs");
    cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(runs, 0), "exact")), "reference: exact");
    bool optimized = sl_kernels_default() != sl_kernels_reference();
    cr_expect_eq(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(runs, 1), "exact")), !optimized, "fused on %s",
                 sl_kernels_default()->name);
    cJSON_Delete(root);
    sl_audit_free(audit);
}

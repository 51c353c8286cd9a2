/* Audit manifests: a manifest compares equal to itself after a round trip
 * through its file, a changed row is named down to its batch, field and
 * row, and damaged or foreign files are refused by name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <criterion/criterion.h>

#include "sluice/sluice.h"
#include "sluice/audit.h"
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
    int64_t compared = 0;
    cr_expect_eq(sl_audit_compare(audit, loaded, &compared, &err), SL_OK, "%s", err.msg);
    cr_expect_eq(compared, 6, "2 epochs of 3 batches");
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
    cJSON *batch = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(root, "runs"), 0),
                                                          "batches"),
                                      5);
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
    test_write_text(path, "{\"format\": \"sluice-audit\", \"version\": 1, \"runs\": [{\"scenario\": \"CV-1\", \"variant\": "
                     "\"32x32\", \"adapter\": \"iter\", \"seed\": \"42\", \"batches\": [{\"epoch\": 0, \"batch\": 0, "
                     "\"fields\": [{\"name\": \"image\", \"digest\": \"0123456789abcdef\", \"rows\": \"12zz\"}]}]}]}");
    cr_expect_neq(sl_audit_load(path, &loaded, &err), SL_OK);
    cr_expect(strstr(err.msg, "runs[0].batches[0].fields[0].rows"), "%s", err.msg);
    cr_expect_null(loaded);
}

/* TAB-2: sparse features, as DLRM reads Criteo's click logs. 13 dense
 * heavy-tailed counts go through log1p; 26 categorical raw ids (63-bit,
 * some missing) are hashed into their embedding tables; and the batch gets
 * the CSR offsets of one embedding bag per categorical column. */
#include "common.h"
#include "sluice/corpus/scenarios.h"

enum { TAB2_DENSE = 13, TAB2_CATEGORICAL = 26 };

/* The 26 embedding table sizes of DLRM's Criteo Kaggle preprocessing, in
 * column order, so the hash lands in tables of real, very unequal sizes
 * (3 rows to 10 million). */
static const int64_t table_sizes[TAB2_CATEGORICAL] = {
    1460, 583,   10131227, 2202608, 305,  24,   12517, 633,     3,  93145, 5683,   8351593, 3194,
    27,   14992, 5461306,  10,      5652, 2173, 4,     7046547, 18, 15,    286181, 105,     142572,
};

static const sl_variant variants[] = {
    {"criteo",
     "13 dense f32 + 26 categorical i64 per row, 50k rows at ci and 1M at full, bs 1024",
     {50000, 1000000},
     {1024, 1024},
     0,
     false},
};

static sl_status build(const sl_scenario *scenario, const sl_variant *variant, const sl_build_options *options,
                       sl_scenario_instance *instance, sl_err *err)
{
    (void)scenario;
    sl_fixture_spec fixture = {.kind = SL_FIXTURE_SPARSE,
                               .n = sl_variant_n(variant, options),
                               .features = TAB2_DENSE,
                               .categorical = TAB2_CATEGORICAL};
    sl_status st = sl__scenario_make_fixture(instance, &fixture, options->seed, err);
    if (st)
        return st;
    sl__scenario_begin_spec(instance, options);
    st = sl_pipeline_spec_add(&instance->spec, sl_op_log1p("dense"), err);
    if (st == SL_OK)
        st = sl_pipeline_spec_add(&instance->spec, sl_op_hash_ids("sparse", TAB2_CATEGORICAL, table_sizes), err);
    if (st == SL_OK)
        st = sl_pipeline_spec_add(&instance->spec, sl_op_bag_offsets("sparse", "offsets"), err);
    return st;
}

const sl_scenario sl__scenario_tab2 = {
    .id = "TAB-2",
    .title = "sparse features (DLRM)",
    .property = "offsets increase by each bag's length and end at the id count; hashed ids are below their table "
                "size; log1p within its stated bound",
    .variants = variants,
    .nvariants = sizeof variants / sizeof variants[0],
    /* One batch of 1024 rows already pins every op on 1024 elements; a
     * second would double the golden's size for no new kind of check. */
    .golden_batches = 1,
    .build = build,
};

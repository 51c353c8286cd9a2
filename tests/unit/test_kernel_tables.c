/* Kernel tables are values: every table fills every entry, and an executor
 * runs the table it is handed, its shuffle included, and no other. */
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#include <criterion/criterion.h>

#include "sluice/fixtures/fixtures.h"
#include "sluice/pipeline/pipeline.h"

#include "support.h"

/* A table that claims an op's kernel but leaves the entry empty would
 * crash the first pipeline that runs the op, or worse, run another table's
 * code behind a wrapper: every registered table fills every entry. */
Test(kernel_tables, every_table_fills_every_entry)
{
    for (int t = 0; t < sl_kernel_table_count(); t++) {
        const sl_kernel_table *table = sl_kernel_table_at(t);
        cr_assert_not_null(table->name);
        cr_expect_eq((int)table->id, t, "%s sits at index %d but has id %d", table->name, t, (int)table->id);
#define CHECK_ENTRY(entry) cr_expect_not_null((const void *)table->entry, "%s has no %s kernel", table->name, #entry);
        SL_KERNEL_ENTRIES(CHECK_ENTRY)
#undef CHECK_ENTRY
    }
}

/* The tables below the vector ones run none of their code: the generic
 * table's shuffle is the reference's portable one, not an AVX2 path chosen
 * behind its back. */
Test(kernel_tables, the_generic_table_shuffles_with_the_portable_network)
{
    const sl_kernel_table *generic = sl_kernels_find("cpu-generic");
    cr_assert_not_null(generic);
    cr_expect_eq(generic->permute_strided, sl_kernels_reference()->permute_strided);
    cr_expect_eq(generic->cpu_features, 0u, "cpu-generic needs no CPU feature");
}

/* Counts the shuffles a table runs, then runs the generic table's. */
static atomic_int shuffles;

static void counting_permute(const sl_permutation *perm, uint64_t first, uint64_t stride, int64_t count, int64_t *out)
{
    atomic_fetch_add(&shuffles, 1);
    sl_kernels_find("cpu-generic")->permute_strided(perm, first, stride, count, out);
}

static sl_pipeline *shuffled_images(sl_source **source)
{
    sl_fixture_spec fixture = {.kind = SL_FIXTURE_IMAGES, .n = 300, .h = 8, .w = 8, .c = 3, .classes = 10};
    sl_err err = {0};
    cr_assert_eq(sl_fixture_build(&fixture, 42, source, &err), SL_OK, "%s", err.msg);
    static const float mean[3] = {120.0f, 110.0f, 100.0f}, sd[3] = {60.0f, 61.0f, 62.0f};
    sl_pipeline_spec spec;
    sl_pipeline_spec_init(&spec, *source, 32, 7);
    cr_assert_eq(sl_pipeline_spec_add(&spec, sl_op_normalize("image", 3, mean, sd), &err), SL_OK);
    sl_pipeline *p;
    cr_assert_eq(sl_pipeline_create(&spec, &p, &err), SL_OK, "%s", err.msg);
    return p;
}

static int count_batches(const sl_batch *batch, void *user)
{
    (void)batch;
    (*(int *)user)++;
    return 0;
}

/* Every executor takes its batches' element ids from the table it was
 * given: with a table whose shuffle counts its calls, each of them calls
 * it, and their batches equal the generic table's. */
Test(kernel_tables, every_executor_shuffles_with_the_table_it_is_handed)
{
    sl_kernel_table counting = *sl_kernels_find("cpu-generic");
    counting.permute_strided = counting_permute;
    sl_source *source;
    sl_pipeline *p = shuffled_images(&source);
    sl_err err = {0};
    sl_batch *mine, *theirs;
    cr_assert_eq(sl_batch_create(sl_pipeline_output_schema(p), 32, &mine, &err), SL_OK);
    cr_assert_eq(sl_batch_create(sl_pipeline_output_schema(p), 32, &theirs, &err), SL_OK);

    atomic_store(&shuffles, 0);
    cr_assert_eq(sl_pipeline_produce(p, &counting, (sl_position){1, 3}, mine, &err), SL_OK, "%s", err.msg);
    cr_expect_gt(atomic_load(&shuffles), 0, "the unfused executor did not shuffle through its table");
    cr_assert_eq(sl_pipeline_produce(p, sl_kernels_find("cpu-generic"), (sl_position){1, 3}, theirs, &err), SL_OK);
    cr_expect_eq(memcmp(mine->element_ids, theirs->element_ids, 32 * sizeof(int64_t)), 0);

    atomic_store(&shuffles, 0);
    cr_assert_eq(sl_pipeline_produce_per_element(p, &counting, (sl_position){1, 3}, mine, &err), SL_OK);
    cr_expect_gt(atomic_load(&shuffles), 0, "the per-element executor did not shuffle through its table");

    atomic_store(&shuffles, 0);
    sl_fused *fused;
    cr_assert_eq(sl_fused_create(p, &counting, &fused, &err), SL_OK, "%s", err.msg);
    int batches = 0;
    cr_assert_eq(sl_fused_run(fused, (sl_position){0, 0}, 5, count_batches, &batches, &err), SL_OK, "%s", err.msg);
    cr_expect_eq(batches, 5);
    cr_expect_geq(atomic_load(&shuffles), 5, "fused did not shuffle every batch through its table");
    sl_fused_free(fused);

    atomic_store(&shuffles, 0);
    double ns = 0.0;
    cr_assert_eq(sl_pipeline_gather_probe(p, &counting, 0, 3, 1, &ns, &err), SL_OK, "%s", err.msg);
    cr_expect_gt(atomic_load(&shuffles), 0, "the gather probe did not shuffle through its table");
    atomic_store(&shuffles, 0);
    cr_assert_eq(sl_pipeline_traffic_probe(p, &counting, 0, 3, 1, &ns, &err), SL_OK, "%s", err.msg);
    cr_expect_gt(atomic_load(&shuffles), 0, "the traffic probe did not shuffle through its table");

    sl_batch_free(mine);
    sl_batch_free(theirs);
    sl_pipeline_free(p);
    sl_source_free(source);
}

/* Iterators too, with and without prefetch workers. */
Test(kernel_tables, iterators_shuffle_with_the_table_they_are_handed)
{
    sl_kernel_table counting = *sl_kernels_find("cpu-generic");
    counting.permute_strided = counting_permute;
    sl_source *source;
    sl_pipeline *p = shuffled_images(&source);
    for (int workers = 0; workers <= 2; workers += 2) {
        atomic_store(&shuffles, 0);
        sl_iter_options options = {.kernels = &counting, .workers = workers};
        sl_iter *it;
        sl_err err = {0};
        cr_assert_eq(sl_iter_create(p, &options, &it, &err), SL_OK, "%s", err.msg);
        for (int b = 0; b < 4; b++) {
            sl_batch *batch;
            cr_assert_eq(sl_iter_next(it, &batch, &err), SL_OK, "%s", err.msg);
            sl_batch_free(batch);
        }
        sl_iter_free(it);
        cr_expect_geq(atomic_load(&shuffles), 4, "%d workers: %d shuffles for 4 batches", workers,
                      atomic_load(&shuffles));
    }
    sl_pipeline_free(p);
    sl_source_free(source);
}

/* No table, no run: the library never picks one behind the caller. */
Test(kernel_tables, executors_refuse_to_run_without_a_table)
{
    sl_source *source;
    sl_pipeline *p = shuffled_images(&source);
    sl_err err = {0};
    sl_fused *fused = NULL;
    cr_expect_eq(sl_fused_create(p, NULL, &fused, &err), SL_EINVAL);
    cr_expect_null(fused);
    sl_iter_options options = {.kernels = NULL};
    sl_iter *it = NULL;
    cr_expect_eq(sl_iter_create(p, &options, &it, &err), SL_EINVAL);
    cr_expect(strstr(err.msg, "kernel table") != NULL, "%s", err.msg);
    sl_pipeline_free(p);
    sl_source_free(source);
}

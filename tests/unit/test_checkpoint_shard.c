/* A checkpoint is bound to its shard (issue 33: a checkpoint of rank 1
 * resumed on rank 0 passed every test). Each rank of a sharded run reads
 * other elements; rank 0 resuming at rank 1's position would read its own
 * elements from there on, skipping some and repeating none of rank 1's, and
 * nothing would say so. The pipeline's fingerprint covers the shard, so the
 * load is refused. */
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "sluice/fixtures/fixtures.h"
#include "sluice/pipeline/pipeline.h"

#include "support.h"

static sl_pipeline *sharded(const sl_source *src, int rank, int world)
{
    sl_pipeline_spec spec;
    sl_pipeline_spec_init(&spec, src, 4, 42);
    spec.shard = (sl_shard){rank, world};
    sl_pipeline *p = NULL;
    sl_err err = {0};
    cr_assert_eq(sl_pipeline_create(&spec, &p, &err), SL_OK, "%s", err.msg);
    return p;
}

Test(checkpoint_shard, a_checkpoint_of_rank_1_is_refused_on_rank_0)
{
    sl_fixture_spec fixture = {.kind = SL_FIXTURE_IMAGES, .n = 40, .h = 4, .w = 4, .c = 3, .classes = 10};
    sl_source *src = NULL;
    sl_err err = {0};
    cr_assert_eq(sl_fixture_build(&fixture, 42, &src, &err), SL_OK, "%s", err.msg);
    sl_pipeline *rank0 = sharded(src, 0, 2), *rank1 = sharded(src, 1, 2);
    char dir[512], path[600];
    test_tmpdir_create(dir, sizeof dir, "ckpt-shard");
    snprintf(path, sizeof path, "%s/rank1.json", dir);
    sl_position at = {0, 2};
    cr_assert_eq(sl_checkpoint_save(rank1, at, path, &err), SL_OK, "%s", err.msg);
    sl_position got;
    cr_expect_eq(sl_checkpoint_load(rank1, path, &got, &err), SL_OK, "its own rank resumes: %s", err.msg);
    cr_expect_neq(sl_checkpoint_load(rank0, path, &got, &err), SL_OK, "rank 1's checkpoint was resumed on rank 0");
    cr_expect(strstr(err.msg, path) != NULL, "the refusal names the file: %s", err.msg);
    sl_pipeline_free(rank0);
    sl_pipeline_free(rank1);
    sl_source_free(src);
    test_tmpdir_remove(dir);
}

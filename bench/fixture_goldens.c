/* Goldens of the fixture generators themselves. A fixture promises the same
 * bytes for the same (spec, seed) on every machine and compiler; that
 * promise, not the code's present output, is why its bytes are pinned. A
 * generator change that moves a single byte (a libm call, a contracted
 * multiply-add, a changed draw order) must fail a test here, before it
 * quietly shifts every scenario golden built on it. */
#include <stdio.h>

#include "sluice/bench/scenario.h"
#include "sluice/core/digest.h"
#include "sluice/exec/executors.h"
#include "sluice/fixtures/fixtures.h"
#include "sluice/pipeline/pipeline.h"
#include "sluice/records/golden.h"

/* One small spec per kind, exercising every field and parameter. */
static sl_fixture_spec pinned_spec(sl_fixture_kind kind)
{
    switch (kind) {
    case SL_FIXTURE_IMAGES: return (sl_fixture_spec){.kind = kind, .n = 96, .h = 8, .w = 8, .c = 3, .classes = 10};
    case SL_FIXTURE_TOKENS: return (sl_fixture_spec){.kind = kind, .n = 4096, .vocab = 1000, .mean_doc_len = 50};
    case SL_FIXTURE_TABULAR: return (sl_fixture_spec){.kind = kind, .n = 96, .features = 13};
    case SL_FIXTURE_FLOATS: return (sl_fixture_spec){.kind = kind, .n = 96, .h = 8, .w = 8, .c = 2};
    /* Odd sides: a row ends mid Philox block, and the sphere is clipped. */
    case SL_FIXTURE_VOLUMES: return (sl_fixture_spec){.kind = kind, .n = 24, .d = 5, .h = 7, .w = 9};
    case SL_FIXTURE_IMAGE_TEXT:
        return (sl_fixture_spec){
            .kind = kind, .n = 96, .h = 8, .w = 8, .c = 3, .vocab = 1000, .mean_doc_len = 10, .seq_capacity = 24};
    case SL_FIXTURE_AUDIO_TEXT:
        return (sl_fixture_spec){
            .kind = kind, .n = 16, .samples = 200, .vocab = 1000, .mean_doc_len = 10, .seq_capacity = 24};
    case SL_FIXTURE_SPARSE: return (sl_fixture_spec){.kind = kind, .n = 96, .features = 13, .categorical = 26};
    case SL_FIXTURE_SEQUENCES:
        return (sl_fixture_spec){.kind = kind, .n = 96, .vocab = 1000, .min_len = 1, .max_len = 40};
    default:
        return (sl_fixture_spec){.kind = kind,
                                 .n = 96,
                                 .h = 8,
                                 .w = 8,
                                 .c = 1,
                                 .classes = 4,
                                 .vocab = 100,
                                 .mean_doc_len = 10,
                                 .features = 4};
    }
}

void sl_fixture_golden_path(const char *dir, sl_fixture_kind kind, char *buf, size_t size)
{
    snprintf(buf, size, "%s/fixture__%s.json", dir, sl_fixture_kind_name(kind));
}

sl_status sl_fixture_capture_golden(sl_fixture_kind kind, uint64_t seed, sl_golden **out, sl_err *err)
{
    *out = NULL;
    sl_fixture_spec spec = pinned_spec(kind);
    sl_source *source = NULL;
    sl_status status = sl_fixture_build(&spec, seed, &source, err);
    if (status != SL_OK)
        return status;
    /* The whole fixture in order, through a pipeline with no op, batches of
     * 32 rows: the golden's per-row digests then locate a changed byte. */
    sl_pipeline_spec pipeline_spec;
    sl_pipeline_spec_init(&pipeline_spec, source, 32, seed);
    pipeline_spec.shuffle = false;
    sl_pipeline *pipeline = NULL;
    sl_batch *batch = NULL;
    sl_golden *golden = sl_golden_new("fixture", sl_fixture_kind_name(kind), seed);
    status = sl_pipeline_create(&pipeline_spec, &pipeline, err);
    if (status == SL_OK)
        status = sl_batch_create(sl_pipeline_output_schema(pipeline), 32, &batch, err);
    if (status == SL_OK && golden == NULL)
        status = sl_fail(err, SL_ENOMEM, "out of memory for the golden of fixture %s", sl_fixture_kind_name(kind));
    for (int64_t b = 0; status == SL_OK && b < sl_pipeline_batches_per_epoch(pipeline); b++) {
        status = sl_pipeline_produce(pipeline, sl_kernels_reference(), (sl_position){0, b}, batch, err);
        if (status == SL_OK)
            status = sl_golden_add_batch(golden, batch, err);
    }
    sl_batch_free(batch);
    sl_pipeline_free(pipeline);
    sl_source_free(source);
    if (status != SL_OK) {
        sl_golden_free(golden);
        return status;
    }
    *out = golden;
    return SL_OK;
}

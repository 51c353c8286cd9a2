/* The cuda adapters' plan, run on every machine.
 *
 * adapters/cuda_run.c drives the device executor (engine/exec/device.c),
 * which plans every op of a pipeline onto a device through the op's
 * descriptor (its device hooks, or its ew_step in a fused chain). Here that
 * very runtime runs on the host emulation of a device
 * (kernels/cuda/emulate.c), whose launchers loop over the same per-index
 * functions the CUDA kernels run per thread, and every batch of two epochs
 * of every scenario is held to the reference adapter's batch at the same
 * position: the mapping from ops to launches (which field, which buffers,
 * which decisions, fused how far, in which order) is checked bit for bit
 * without a GPU, so a device only has to compute what the emulation did. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "adapters.h"
#include "kernels/device.h"
#include "kernels_under_test.h"
#include "sluice/sluice.h"
#include "support.h"

typedef struct expectation {
    const sl_pipeline *pipeline;
    sl_position at;
    sl_batch *want;
    char what[96];
    int64_t batches;
    int64_t short_batches;
} expectation;

/* Each batch the runtime hands over against the reference's batch at the
 * same position: ids, every field's per-batch shape and bytes. */
static int compare_with_reference(const sl_batch *got, void *user)
{
    expectation *x = user;
    sl_err err = {0};
    cr_assert_eq(sl_pipeline_produce(x->pipeline, sl_kernels_reference(), x->at, x->want, &err), SL_OK, "%s: %s",
                 x->what, err.msg);
    const sl_batch *want = x->want;
    cr_assert_eq(got->count, want->count, "%s: batch %lld of epoch %lld has %lld rows, the reference %lld", x->what,
                 (long long)x->at.batch, (long long)x->at.epoch, (long long)got->count, (long long)want->count);
    cr_assert(memcmp(got->element_ids, want->element_ids, (size_t)want->count * sizeof(int64_t)) == 0,
              "%s: batch %lld of epoch %lld holds other elements", x->what, (long long)x->at.batch,
              (long long)x->at.epoch);
    for (int f = 0; f < want->schema.nfields; f++) {
        const sl_tensor *g = &got->fields[f], *w = &want->fields[f];
        cr_assert_eq(g->shape.rank, w->shape.rank);
        for (int d = 0; d < w->shape.rank; d++)
            cr_assert_eq(g->shape.dims[d], w->shape.dims[d],
                         "%s: field %s of batch %lld has dimension %d of %lld, "
                         "the reference %lld",
                         x->what, want->schema.fields[f].name, (long long)x->at.batch, d, (long long)g->shape.dims[d],
                         (long long)w->shape.dims[d]);
        size_t bytes = sl_tensor_nbytes(w);
        const unsigned char *a = g->data, *b = w->data;
        size_t first = 0;
        while (first < bytes && a[first] == b[first])
            first++;
        cr_assert_eq(first, bytes,
                     "%s: field %s of batch %lld of epoch %lld differs from the reference at byte %zu "
                     "of %zu (row %zu)",
                     x->what, want->schema.fields[f].name, (long long)x->at.batch, (long long)x->at.epoch, first, bytes,
                     first / (bytes / (size_t)(want->count ? want->count : 1)));
    }
    x->batches++;
    x->short_batches += want->count < want->capacity;
    x->at = sl_position_advance(x->pipeline, x->at, 1);
    return 0;
}

/* A small data set: two full batches and a short one per epoch, so every
 * scenario's two epochs take three batches each, the last one short. */
static sl_scenario_instance *build_small(const sl_scenario *scenario, const sl_variant *variant, bool *small)
{
    sl_build_options options;
    sl_build_options_init(&options, SL_PROFILE_CI, 42);
    int64_t batch = sl_variant_batch_size(variant, &options);
    options.n_override = 2 * batch + (batch > 2 ? batch / 3 : 1);
    sl_scenario_instance *instance = NULL;
    sl_err err = {0};
    *small = true;
    if (sl_scenario_instantiate(scenario, variant, &options, &instance, &err) == SL_OK)
        return instance;
    /* A scenario whose fixture has a shape of its own (a bucketing window,
     * a stream of whole documents) runs at its ci size. */
    sl_build_options_init(&options, SL_PROFILE_CI, 42);
    *small = false;
    sl_status st = sl_scenario_instantiate(scenario, variant, &options, &instance, &err);
    if (st == SL_ESKIPPED)
        return NULL;
    cr_log_info("%s/%s runs at its ci size", scenario->id, variant->name);
    cr_assert_eq(st, SL_OK, "%s/%s: %s", scenario->id, variant->name, err.msg);
    return instance;
}

/* What the runs of expect_variant_matches covered. */
typedef struct coverage {
    int ran;
    int64_t batches, short_batches;
    int resident_runs, streamed_runs;
} coverage;

/* Two epochs of one variant through the emulated device, counted in *seen
 * when it ran. The source takes both paths: where the epochs run in two
 * parts, the first with the source on the device where it can be and the
 * second streamed; where in one, the path alternates from variant to
 * variant. */
static void expect_variant_matches(const sl_device *dev, const sl_scenario *scenario, const sl_variant *variant,
                                   bool graphs, coverage *seen)
{
    bool small;
    sl_scenario_instance *instance = build_small(scenario, variant, &small);
    if (!instance)
        return;
    const sl_pipeline *p = instance->pipeline;
    expectation x = {.pipeline = p};
    snprintf(x.what, sizeof x.what, "%s/%s on the %s device%s", scenario->id, variant->name, dev->name,
             graphs ? " (graphs asked for)" : "");
    sl_err err = {0};
    cr_assert_eq(sl_batch_create(sl_pipeline_output_schema(p), sl_pipeline_get_spec(p)->batch_size, &x.want, &err),
                 SL_OK);
    int64_t per_epoch = sl_pipeline_batches_per_epoch(p);
    /* At ci size an epoch may be long: its first and last two batches,
     * then epoch 1's first two, keep the test short and still cross the
     * short batch and the epoch boundary. */
    sl_position starts[2] = {{0, 0}, {0, per_epoch > 4 ? per_epoch - 2 : 0}};
    int64_t counts[2] = {per_epoch > 4 ? 2 : 2 * per_epoch, per_epoch > 4 ? 4 : 0};
    for (int part = 0; part < 2; part++) {
        if (counts[part] == 0)
            continue;
        x.at = starts[part];
        bool streamed = counts[1] == 0 ? seen->ran % 2 == 1 : part == 1;
        sl_device_adapter_options options = {.graphs = graphs, .source_limit_bytes = streamed ? 0 : -1};
        sl_device_adapter_stats stats;
        sl_run_request request = {.start = starts[part], .nbatches = counts[part], .kernels = sl_test_kernels()};
        int64_t *latency = calloc((size_t)counts[part], sizeof *latency);
        sl_status st = sl__device_adapter_run(dev, &options, p, sl_test_kernels(), &request, compare_with_reference, &x,
                                              latency, &stats, &err);
        cr_assert_eq(st, SL_OK, "%s: %s", x.what, err.msg);
        cr_expect(!(streamed && stats.resident), "%s: the source is on the device with a limit of 0 bytes", x.what);
        seen->resident_runs += stats.resident;
        seen->streamed_runs += !stats.resident;
        for (int64_t b = 0; b < counts[part]; b++)
            cr_expect_geq(latency[b], 0, "%s: batch %lld has no latency", x.what, (long long)b);
        free(latency);
    }
    sl_batch_free(x.want);
    sl_scenario_instance_free(instance);
    seen->ran++;
    seen->batches += x.batches;
    seen->short_batches += x.short_batches;
}

static void expect_every_scenario_matches(bool graphs)
{
    int variants = 0, scenarios_on_device = 0;
    coverage seen = {0};
    /* Every registered scenario, however many the corpus has: a scenario
     * added by CONTRIBUTING's checklist is held here without an edit. */
    for (int s = 0; s < sl_scenario_count(); s++) {
        const sl_scenario *scenario = sl_scenario_at(s);
        int ran_before = seen.ran;
        for (int v = 0; v < scenario->nvariants; v++) {
            variants++;
            expect_variant_matches(sl_device_emulation(), scenario, &scenario->variants[v], graphs, &seen);
        }
        cr_expect_gt(seen.ran, ran_before, "%s runs none of its %d variants on the device", scenario->id,
                     scenario->nvariants);
        scenarios_on_device += seen.ran > ran_before;
    }
    cr_expect_gt(sl_scenario_count(), 0, "the corpus registers no scenario");
    cr_expect_eq(scenarios_on_device, sl_scenario_count(),
                 "every scenario runs at least one variant on the device (%d of %d scenarios, %d of %d variants)",
                 scenarios_on_device, sl_scenario_count(), seen.ran, variants);
    cr_expect_gt(seen.short_batches, 0, "no short batch was compared");
    cr_expect_gt(seen.resident_runs, 0, "no run kept its source on the device");
    cr_expect_gt(seen.streamed_runs, 0, "no run streamed its source");
    cr_log_info("%d variants, %lld batches (%lld short) through the emulated device; %d runs with the source on the "
                "device, %d streamed",
                seen.ran, (long long)seen.batches, (long long)seen.short_batches, seen.resident_runs,
                seen.streamed_runs);
}

Test(cuda_plan, every_scenario_on_the_emulated_device_is_the_reference_for_two_epochs, .timeout = 600)
{
    expect_every_scenario_matches(false);
}

/* Every op of the library has a device path: the cuda adapters' transform
 * set is every transform. */
Test(cuda_plan, every_op_has_a_device_path)
{
    sl_transform_set all = sl_op_cpu_transforms();
    cr_expect_eq(sl_op_device_transforms() & all, all, "ops without a device path: %#llx",
                 (unsigned long long)(all & ~sl_op_device_transforms()));
}

/* The emulation has no graphs: asking for them runs the direct path, and
 * the result is still the reference's. */
Test(cuda_plan, graphs_asked_of_a_device_without_them_run_direct)
{
    const sl_scenario *scenario = sl_scenario_find("CV-1");
    cr_assert_not_null(scenario);
    coverage seen = {0};
    expect_variant_matches(sl_device_emulation(), scenario, &scenario->variants[0], true, &seen);
    cr_expect_eq(seen.ran, 1);
    cr_expect_gt(seen.batches, 0);
}

/* A device without a BLAS cannot run log_mel, and says so by the op's name
 * and the device's reason; every other scenario is unaffected. */
Test(cuda_plan, an_op_the_device_cannot_run_is_refused_by_name)
{
    sl_device without_blas = *sl_device_emulation();
    without_blas.log_mel_rows = NULL;
    without_blas.log_mel_missing = "this test's device has no BLAS";
    const sl_scenario *scenario = sl_scenario_find("MM-2");
    cr_assert_not_null(scenario);
    sl_build_options options;
    sl_build_options_init(&options, SL_PROFILE_CI, 42);
    sl_scenario_instance *instance;
    sl_err err = {0};
    cr_assert_eq(sl_scenario_instantiate(scenario, &scenario->variants[0], &options, &instance, &err), SL_OK, "%s",
                 err.msg);
    int64_t latency[1];
    sl_run_request request = {.start = {0, 0}, .nbatches = 1, .kernels = sl_test_kernels()};
    sl_device_adapter_options direct = {.source_limit_bytes = -1};
    sl_status st = sl__device_adapter_run(&without_blas, &direct, instance->pipeline, sl_test_kernels(), &request, NULL,
                                          NULL, latency, NULL, &err);
    cr_expect_eq(st, SL_EUNSUPPORTED);
    cr_expect(strstr(err.msg, "log_mel") && strstr(err.msg, "this test's device has no BLAS"), "message: %s", err.msg);
    sl_scenario_instance_free(instance);
}

/* ---- Device memory and the source's path ----------------------------------- */

/* The images of src normalized to f32: one element-wise op, no decisions,
 * no scratch. */
static sl_pipeline *normalized(const sl_source *src, int64_t batch)
{
    static const float mean[3] = {120.0f, 110.0f, 100.0f}, std[3] = {60.0f, 61.0f, 62.0f};
    sl_err err = {0};
    sl_pipeline_spec spec;
    sl_pipeline_spec_init(&spec, src, batch, 7);
    cr_assert_eq(sl_pipeline_spec_add(&spec, sl_op_normalize("image", 3, mean, std), &err), SL_OK, "%s", err.msg);
    sl_pipeline *p;
    cr_assert_eq(sl_pipeline_create(&spec, &p, &err), SL_OK, "%s", err.msg);
    return p;
}

/* One epoch of p on the emulation with the given limit on the source's
 * bytes there, held to the reference; returns the run's figures. */
static sl_device_adapter_stats run_epoch(const sl_device *dev, const sl_pipeline *p, int64_t source_limit_bytes)
{
    expectation x = {.pipeline = p};
    snprintf(x.what, sizeof x.what, "%s, %d ops, on the %s device, source limit %lld",
             sl_pipeline_get_spec(p)->nops > 1 ? "random crops and flips" : "normalized images",
             sl_pipeline_get_spec(p)->nops, dev->name, (long long)source_limit_bytes);
    sl_err err = {0};
    cr_assert_eq(sl_batch_create(sl_pipeline_output_schema(p), sl_pipeline_get_spec(p)->batch_size, &x.want, &err),
                 SL_OK);
    int64_t batches = sl_pipeline_batches_per_epoch(p);
    int64_t *latency = calloc((size_t)batches, sizeof *latency);
    sl_run_request request = {.start = {0, 0}, .nbatches = batches, .kernels = sl_test_kernels()};
    sl_device_adapter_options options = {.source_limit_bytes = source_limit_bytes};
    sl_device_adapter_stats stats;
    cr_assert_eq(sl__device_adapter_run(dev, &options, p, sl_test_kernels(), &request, compare_with_reference, &x,
                                        latency, &stats, &err),
                 SL_OK, "%s: %s", x.what, err.msg);
    cr_expect_eq(x.batches, batches, "%s: %lld of %lld batches", x.what, (long long)x.batches, (long long)batches);
    free(latency);
    sl_batch_free(x.want);
    return stats;
}

/* The emulated device's peak is what the executor's buffers take, computed
 * here from the shapes alone: for each of the two slots, each field's rows
 * in three buffers of the field's widest row at any stage (its input and
 * the two the ops alternate between), and the per-batch block (the rows'
 * element ids, the batch's epoch and index, and the ids of a cache's misses:
 * this pipeline decides nothing). A resident source adds every element's
 * source row of every field; a streamed one nothing on the device. After
 * the run the ledger holds what it held before: nothing leaks. */
static void expect_memory_of_buffers_and_source(const sl_device *dev)
{
    const int64_t n = 100, batch = 16;
    const int side = 8;
    sl_source *src = test_image_fixture(n, side);
    sl_pipeline *p = normalized(src, batch);
    const int64_t pixels = (int64_t)side * side * 3;
    const int64_t image_in = pixels, image_out = pixels * (int64_t)sizeof(float), label = sizeof(int32_t);
    const int64_t block = batch * 8 + 16 + batch * 8;
    const int64_t buffers = 2 * (block + 3 * batch * image_out + 3 * batch * label);
    const int64_t source = n * (image_in + label);

    int64_t held_before, held_after;
    sl_device_memory_held(dev, &held_before, NULL);
    sl_device_adapter_stats streamed = run_epoch(dev, p, 0);
    cr_expect_not(streamed.resident);
    cr_expect_eq(streamed.allocated_peak_bytes, buffers, "streamed: the run's peak is %lld bytes, its buffers %lld",
                 (long long)streamed.allocated_peak_bytes, (long long)buffers);
    sl_device_adapter_stats resident = run_epoch(dev, p, -1);
    cr_expect(resident.resident);
    cr_expect_eq(resident.allocated_peak_bytes, buffers + source,
                 "resident: the run's peak is %lld bytes, its buffers and source %lld",
                 (long long)resident.allocated_peak_bytes, (long long)(buffers + source));
    cr_expect_geq(resident.source_setup_ns, 0);
    sl_device_memory_held(dev, &held_after, NULL);
    cr_expect_eq(held_after, held_before, "the runs left %lld bytes of device memory held",
                 (long long)(held_after - held_before));
    sl_pipeline_free(p);
    sl_source_free(src);
}

Test(cuda_plan, a_runs_device_memory_is_its_buffers_and_a_resident_source)
{
    expect_memory_of_buffers_and_source(sl_device_emulation());
}

/* What a cuda record carries comes from its own runs: the largest peak of
 * them (the first's, resident) and the last one's source path (streamed),
 * taken once (the adapter's device
 * hook takes them before its runs and after). */
Test(cuda_plan, a_record_takes_its_own_runs_figures_once)
{
    sl_source *src = test_image_fixture(100, 8);
    sl_pipeline *p = normalized(src, 16);
    sl_device_adapter_stats taken;
    sl__cuda_take_runs(&taken); /* whatever ran before */
    sl_device_adapter_stats resident = run_epoch(sl_device_emulation(), p, -1);
    sl_device_adapter_stats streamed = run_epoch(sl_device_emulation(), p, 0);
    cr_assert_gt(resident.allocated_peak_bytes, streamed.allocated_peak_bytes);
    sl__cuda_take_runs(&taken);
    cr_expect_eq(taken.runs, 2);
    cr_expect_eq(taken.allocated_peak_bytes, resident.allocated_peak_bytes, "the records' peak is %lld, the runs' %lld",
                 (long long)taken.allocated_peak_bytes, (long long)resident.allocated_peak_bytes);
    cr_expect_not(taken.resident, "the last run's source was streamed");
    cr_expect_eq(taken.source_setup_ns, streamed.source_setup_ns);
    sl__cuda_take_runs(&taken);
    cr_expect_eq(taken.runs, 0, "the runs' figures were taken twice");
    cr_expect_eq(taken.allocated_peak_bytes, -1);
    sl_pipeline_free(p);
    sl_source_free(src);
}

/* The source goes on the device exactly when it fits the limit: at its own
 * size (every element's row of every field) it does, a byte less and the
 * batches stream it; both paths give the reference's batches. */
Test(cuda_plan, the_source_is_resident_exactly_when_it_fits)
{
    sl_source *src = test_image_fixture(50, 6);
    sl_pipeline *p = normalized(src, 8);
    const sl_schema *schema = sl_source_schema(src);
    int64_t source = 0;
    for (int f = 0; f < schema->nfields; f++)
        source += 50 * (int64_t)sl_field_element_bytes(&schema->fields[f]);
    cr_expect(run_epoch(sl_device_emulation(), p, source).resident,
              "a source of %lld bytes is streamed with room for it", (long long)source);
    cr_expect_not(run_epoch(sl_device_emulation(), p, source - 1).resident,
                  "a source of %lld bytes is resident with a byte too few", (long long)source);
    sl_pipeline_free(p);
    sl_source_free(src);
}

/* A source read from storage keeps its reads in every batch, as on the CPU,
 * so that the I/O scenarios measure them: the same rows from pread stream,
 * where mapped from the same files, or in memory, they go on the device.
 * Every batch is the reference's either way. */
Test(cuda_plan, a_source_read_from_storage_streams_and_one_in_memory_is_resident)
{
    sl_source *memory = test_image_fixture(60, 6);
    char dir[256], image_path[320], label_path[320];
    test_tmpdir_create(dir, sizeof dir, "cuda-plan-sources");
    sl_err err = {0};
    cr_assert_eq(sl_source_export_npy(memory, dir, &err), SL_OK, "%s", err.msg);
    snprintf(image_path, sizeof image_path, "%s/image.npy", dir);
    snprintf(label_path, sizeof label_path, "%s/label.npy", dir);
    const char *names[2] = {"image", "label"}, *paths[2] = {image_path, label_path};
    const sl_source_kind kinds[] = {SL_SOURCE_MEMORY, SL_SOURCE_MMAP, SL_SOURCE_PREAD};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        sl_source *files = NULL;
        if (kinds[k] != SL_SOURCE_MEMORY)
            cr_assert_eq(sl_source_file_create(kinds[k], 2, names, paths, &files, &err), SL_OK, "%s", err.msg);
        sl_pipeline *p = normalized(files ? files : memory, 16);
        bool resident = run_epoch(sl_device_emulation(), p, -1).resident;
        cr_expect_eq(resident, kinds[k] != SL_SOURCE_PREAD, "a %s source is %s", sl_source_kind_name(kinds[k]),
                     resident ? "resident" : "streamed");
        sl_pipeline_free(p);
        sl_source_free(files);
    }
    sl_source_free(memory);
    test_tmpdir_remove(dir);
}

/* A scenario's first variant for two epochs on dev, twice, direct or from
 * graphs: with the source resident and streamed (where a run's epochs are
 * one part, the path alternates from run to run), the reference's batches
 * each time. */
static void expect_both_paths(const sl_device *dev, const char *id, bool graphs)
{
    const sl_scenario *scenario = sl_scenario_find(id);
    cr_assert_not_null(scenario, "%s", id);
    coverage seen = {0};
    for (int run = 0; run < 2; run++)
        expect_variant_matches(dev, scenario, &scenario->variants[0], graphs, &seen);
    cr_expect_eq(seen.ran, 2);
    cr_expect_gt(seen.resident_runs, 0, "%s's source never went on the %s device", id, dev->name);
    cr_expect_gt(seen.streamed_runs, 0, "%s's source never streamed on the %s device", id, dev->name);
}

/* NLP-1's packed token stream on the device: each batch's windows of it
 * packed there (pack_rows), as the host packs them when it streams. */
Test(cuda_plan, a_packed_token_stream_on_the_device_is_the_reference)
{
    expect_both_paths(sl_device_emulation(), "NLP-1", false);
}

/* More ops with rules than one launch carries (SL_DEVICE_MAX_RULES): the
 * device draws the first ones' decisions, the host the rest's, into the
 * same table, and every batch is still the reference's. */
Test(cuda_plan, decisions_beyond_a_launchs_rules_are_drawn_on_the_host)
{
    sl_source *src = test_image_fixture(50, 6);
    sl_pipeline_spec spec;
    sl_pipeline_spec_init(&spec, src, 8, 7);
    sl_err err = {0};
    for (uint32_t k = 0; k < SL_DEVICE_MAX_RULES + 3; k++)
        cr_assert_eq(sl_pipeline_spec_add(&spec,
                                          k % 2 ? sl_op_random_hflip("image", 10 + k, 0.5f)
                                                : sl_op_random_crop("image", 10 + k, 5, 4),
                                          &err),
                     SL_OK, "%s", err.msg);
    sl_pipeline *p;
    cr_assert_eq(sl_pipeline_create(&spec, &p, &err), SL_OK, "%s", err.msg);
    run_epoch(sl_device_emulation(), p, -1);
    sl_pipeline_free(p);
    sl_source_free(src);
}

/* ---- The same on a CUDA device, where there is one -------------------------- */

static const sl_device *cuda_or_skip(void)
{
    return test_cuda_device_or_skip("to run the plan on");
}

/* The ledger counts the bytes asked of cudaMalloc as the emulation counts
 * its own: the same peak from the same shapes. */
Test(cuda_plan_device, a_runs_device_memory_is_its_buffers_and_a_resident_source)
{
    expect_memory_of_buffers_and_source(cuda_or_skip());
}

/* CV-1, PR-2, AUG-1 and NLP-1 on the device, the source resident and
 * streamed, direct and from graphs: PR-2's crops and flips and AUG-1's
 * chain steps drawn on the device by their rules, NLP-1's windows of its
 * token stream packed there. */
Test(cuda_plan_device, scenarios_on_the_device_are_the_reference_with_the_source_resident_and_streamed)
{
    const sl_device *dev = cuda_or_skip();
    const char *ids[] = {"CV-1", "PR-2", "AUG-1", "NLP-1"};
    for (size_t k = 0; k < sizeof ids / sizeof ids[0]; k++)
        for (int graphs = 0; graphs < 2; graphs++)
            expect_both_paths(dev, ids[k], graphs);
}

/* The numpy peers on the scenarios whose ops only they run beyond the gate:
 * IO-4 (sluice's libm-free trig_rounds and a cache of the peer's own) and
 * PC-5 (affine, and dropout's mask recomputed from the keying the plan
 * documents); PC-2 and PC-4 (sub-op graphs from their exported picks, with
 * noise of numpy's own, so statistical); CV-4 and MM-1 (sluice's bilinear
 * resize plan and lerps, random_resized_crop's boxes from its exported
 * decisions); MM-2 (log_mel with numpy's FFT and matrix product, held to
 * the scenario's stated tolerance, and a peer just beyond it refused).
 * Apart from test_peers because each computes the reference
 * of a scenario (IO-4's is seconds of sine and cosine), which would take
 * test_peers past its time limit; they skip where the system's Python has
 * no numpy, which no default test requires. */
#include <criterion/criterion.h>

#include "support.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "peer.h"
#include "sluice/adapters/peer_check.h"
#include "sluice/bench/bench.h"
#include "sluice/bench/scenario.h"
#include "sluice/bench/session.h"
#include "sluice/kernels/kernels.h"
#include "sluice/records/record.h"

static bool has_metric(const sl_record *record, const char *name)
{
    for (int i = 0; i < record->nmetrics; i++)
        if (strcmp(record->metrics[i].name, name) == 0)
            return true;
    return false;
}

static void need_numpy(void)
{
    char reason[256] = "";
    if (!sl__peer_python_has("numpy", reason, sizeof reason))
        cr_skip_test("needs numpy in the system's Python (ci/install-peers.sh numpy): %s", reason);
}

TestSuite(peers_scenarios, .init = need_numpy, .timeout = 600);

/* IO-4 on both numpy forms: sluice's libm-free sine and cosine in float64
 * and the peer's own cache. Ten batches cross into epoch 1, whose batches
 * the peer reads from its cache; the scenario's epoch metrics run all three
 * epochs from the start of epoch 0, the only start a peer takes. */
Test(peers_scenarios, the_numpy_peers_are_bitwise_on_io4_and_replay_their_cache)
{
    sl_scenario_instance *io4 = NULL;
    sl_bench_options io4_options;
    test_bench_instance("IO-4", "64x64x3", 9, &io4, &io4_options);
    cr_assert_gt(io4_options.warmup_batches + io4_options.measured_batches,
                 sl_pipeline_batches_per_epoch(io4->pipeline), "the batches reach epoch 1");
    const sl_adapter *both[] = {&sl__peer_numpy.adapter, &sl__peer_numpy_idiomatic.adapter};
    for (int i = 0; i < 2; i++) {
        sl_record record;
        sl_err err = {0};
        sl_bench_run(io4, both[i], &io4_options, &record, &err);
        cr_assert_eq(record.outcome, SL_RECORD_OK, "%s: %s", both[i]->name, record.reason);
        cr_assert_str_eq(record.equivalence, "bitwise");
        cr_assert(has_metric(&record, "epoch1_speedup"), "%s: the epoch metrics ran", both[i]->name);
        sl_record_release(&record);
    }
    sl_scenario_instance_free(io4);
}

/* PC-5 on both numpy forms, in both modes: affine from the plan's scale and
 * bias, and dropout's mask recomputed from the keying the plan documents,
 * held to the reference bitwise (a mask of the peer's own would differ). */
Test(peers_scenarios, the_numpy_peers_are_bitwise_on_pc5_in_train_and_eval)
{
    const char *modes[] = {"train", "eval"};
    const sl_adapter *both[] = {&sl__peer_numpy.adapter, &sl__peer_numpy_idiomatic.adapter};
    for (int m = 0; m < 2; m++) {
        sl_scenario_instance *pc5 = NULL;
        sl_bench_options pc5_options;
        test_bench_instance("PC-5", modes[m], 4, &pc5, &pc5_options);
        for (int i = 0; i < 2; i++) {
            sl_record record;
            sl_err err = {0};
            sl_bench_run(pc5, both[i], &pc5_options, &record, &err);
            cr_assert_eq(record.outcome, SL_RECORD_OK, "%s on %s: %s", both[i]->name, modes[m], record.reason);
            cr_assert_str_eq(record.equivalence, "bitwise", "%s on %s", both[i]->name, modes[m]);
            sl_record_release(&record);
        }
        sl_scenario_instance_free(pc5);
    }
}

/* The peers of `adapters` on every variant of CV-4 (chains of bilinear
 * resizes, u8 and f32) and on MM-1 (random_resized_crop, a box per element
 * from its exported decisions), held to the reference bitwise: a resize
 * that weighs or rounds otherwise than sluice's plan (a framework's own)
 * differs in the last bits of most values. MM-1's batches cross into epoch
 * 1, whose boxes are drawn anew. */
static void check_resampling_bitwise(const sl_adapter *const *adapters, int nadapters)
{
    const char *cv4[] = {"half", "scales", "odd"};
    for (int v = 0; v < 4; v++) {
        bool mm1 = v == 3;
        sl_scenario_instance *instance = NULL;
        sl_bench_options options;
        test_bench_instance(mm1 ? "MM-1" : "CV-4", mm1 ? "64x64" : cv4[v], mm1 ? 16 : 4, &instance, &options);
        if (mm1)
            cr_assert_gt(options.warmup_batches + options.measured_batches,
                         sl_pipeline_batches_per_epoch(instance->pipeline), "the batches reach epoch 1");
        for (int i = 0; i < nadapters; i++) {
            sl_record record;
            sl_err err = {0};
            sl_bench_run(instance, adapters[i], &options, &record, &err);
            const char *variant = mm1 ? "MM-1" : cv4[v];
            cr_assert_eq(record.outcome, SL_RECORD_OK, "%s on %s: %s", adapters[i]->name, variant, record.reason);
            cr_assert_str_eq(record.equivalence, "bitwise", "%s on %s", adapters[i]->name, variant);
            sl_record_release(&record);
        }
        sl_scenario_instance_free(instance);
    }
}

Test(peers_scenarios, the_numpy_peers_are_bitwise_on_cv4_and_mm1)
{
    const sl_adapter *both[] = {&sl__peer_numpy.adapter, &sl__peer_numpy_idiomatic.adapter};
    check_resampling_bitwise(both, 2);
}

/* A registered peer by name (PyTorch's are not exported one by one). */
static const sl_adapter *peer_named(const char *name)
{
    for (int i = 0; i < sl__peer_count; i++)
        if (strcmp(sl__peers[i]->adapter.name, name) == 0)
            return &sl__peers[i]->adapter;
    cr_assert_fail("no peer %s", name);
    return NULL;
}

/* Both PyTorch forms (per element and batched) on the same plans; skipped
 * where PyTorch 2's environment is missing, which no default test requires. */
Test(peers_scenarios, the_torch_peers_are_bitwise_on_cv4_and_mm1)
{
    char reason[256] = "";
    if (!sl__peer_python_has_in(sl__peer_torch_python(), "numpy,torch", reason, sizeof reason))
        cr_skip_test("needs PyTorch at %s (ci/install-peers.sh torch, or SLUICE_TORCH_PYTHON): %s",
                     sl__peer_torch_python(), reason);
    const sl_adapter *both[] = {peer_named("peer:torch"), peer_named("peer:torch-idiomatic")};
    check_resampling_bitwise(both, 2);
}

/* PC-5 on both JAX forms, in both modes: the mask from Philox in uint64
 * (x64 on) under jit (XLA capped at AVX, affine multiplying then adding) and
 * eagerly; skipped where the peers' venv has no JAX. */
Test(peers_scenarios, the_jax_peers_are_bitwise_on_pc5_in_train_and_eval)
{
    char reason[256] = "";
    if (!sl__peer_python_has_in(sl__peer_venv_python(), "numpy,jax", reason, sizeof reason))
        cr_skip_test("needs JAX in the peers' venv (ci/install-peers.sh jax): %s", reason);
    const char *modes[] = {"train", "eval"};
    const sl_adapter *both[] = {sl_adapter_find("peer:jax"), sl_adapter_find("peer:jax-idiomatic")};
    cr_assert(both[0] && both[1]);
    for (int m = 0; m < 2; m++) {
        sl_scenario_instance *pc5 = NULL;
        sl_bench_options pc5_options;
        test_bench_instance("PC-5", modes[m], 4, &pc5, &pc5_options);
        for (int i = 0; i < 2; i++) {
            sl_record record;
            sl_err err = {0};
            sl_bench_run(pc5, both[i], &pc5_options, &record, &err);
            cr_assert_eq(record.outcome, SL_RECORD_OK, "%s on %s: %s", both[i]->name, modes[m], record.reason);
            cr_assert_str_eq(record.equivalence, "bitwise", "%s on %s", both[i]->name, modes[m]);
            sl_record_release(&record);
        }
        sl_scenario_instance_free(pc5);
    }
}

/* IO-4 on both JAX forms: sluice's float64 sine and cosine (x64 on; jitted,
 * XLA capped at AVX) and the peer's own cache on the device, replayed into
 * epoch 1 and through the epoch metrics; skipped where the peers' venv has
 * no JAX. */
Test(peers_scenarios, the_jax_peers_are_bitwise_on_io4_and_replay_their_cache)
{
    char reason[256] = "";
    if (!sl__peer_python_has_in(sl__peer_venv_python(), "numpy,jax", reason, sizeof reason))
        cr_skip_test("needs JAX in the peers' venv (ci/install-peers.sh jax): %s", reason);
    sl_scenario_instance *io4 = NULL;
    sl_bench_options io4_options;
    test_bench_instance("IO-4", "64x64x3", 9, &io4, &io4_options);
    const sl_adapter *both[] = {sl_adapter_find("peer:jax"), sl_adapter_find("peer:jax-idiomatic")};
    cr_assert(both[0] && both[1]);
    for (int i = 0; i < 2; i++) {
        sl_record record;
        sl_err err = {0};
        sl_bench_run(io4, both[i], &io4_options, &record, &err);
        cr_assert_eq(record.outcome, SL_RECORD_OK, "%s: %s", both[i]->name, record.reason);
        cr_assert_str_eq(record.equivalence, "bitwise", "%s", both[i]->name);
        cr_assert(has_metric(&record, "epoch1_speedup"), "%s: the epoch metrics ran", both[i]->name);
        sl_record_release(&record);
    }
    sl_scenario_instance_free(io4);
}

/* PC-2's branch_mean and PC-4's random_apply and random_choice on both numpy
 * forms: the picks are exported, the noise is numpy's own, so the plans are
 * checked statistically (a branch or pick taken wrongly moves the
 * residual's mean by tens of standard errors, tried by hand). */
Test(peers_scenarios, the_numpy_peers_run_the_sub_op_graphs_statistically)
{
    const char *scenarios[][2] = {{"PC-2", "64x64x3"}, {"PC-4", "p0.5"}};
    const sl_adapter *both[] = {&sl__peer_numpy.adapter, &sl__peer_numpy_idiomatic.adapter};
    for (int s = 0; s < 2; s++) {
        sl_scenario_instance *instance = NULL;
        sl_bench_options options;
        test_bench_instance(scenarios[s][0], scenarios[s][1], 4, &instance, &options);
        for (int i = 0; i < 2; i++) {
            sl_record record;
            sl_err err = {0};
            sl_bench_run(instance, both[i], &options, &record, &err);
            cr_assert_eq(record.outcome, SL_RECORD_OK, "%s on %s: %s", both[i]->name, scenarios[s][0], record.reason);
            cr_assert_str_eq(record.equivalence, "statistical", "%s on %s", both[i]->name, scenarios[s][0]);
            sl_record_release(&record);
        }
        sl_scenario_instance_free(instance);
    }
}

/* The same check in interleaved rounds (sluice bench --rounds): each
 * peer's repetition runs before the other's, and both records are finished
 * after both ran. Each must say how that peer was checked; a record
 * classified from whichever peer ran last said "bitwise" for a statistical
 * check. */
Test(peers_scenarios, interleaved_rounds_keep_each_peers_statistical_check)
{
    char dir[256];
    test_tmpdir_create(dir, sizeof dir, "peer-rounds");
    const sl_scenario *pc4 = sl_scenario_find("PC-4");
    const sl_variant *p05 = sl_scenario_variant(pc4, "p0.5");
    sl_build_options build;
    sl_build_options_init(&build, SL_PROFILE_CI, 42);
    sl_session_variant variant = {.scenario = pc4,
                                  .variant = p05,
                                  .n = sl_variant_n(p05, &build),
                                  .batch_size = sl_variant_batch_size(p05, &build)};
    const sl_adapter *both[] = {&sl__peer_numpy.adapter, &sl__peer_numpy_idiomatic.adapter};
    sl_session_options options;
    sl_session_options_init(&options, SL_PROFILE_CI, 42);
    options.rounds = 2;
    options.bench.warmup_batches = 1;
    options.bench.measured_batches = 3;
    options.bench.skip_probes = true;
    options.output_dir = dir;
    options.variants = &variant;
    options.nvariants = 1;
    options.adapters = both;
    options.nadapters = 2;
    options.instantiate = sl_scenario_instantiate;
    options.instance_free = sl_scenario_instance_free;
    sl_session *session = NULL;
    sl_err err = {0};
    cr_assert_eq(sl_session_create(&options, &session, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(sl_session_run(session, &err), SL_OK, "%s", err.msg);
    for (int i = 0; i < 2; i++) {
        char path[4400];
        snprintf(path, sizeof path, "%s/PC-4__p0.5__%s.json", sl_session_dir(session), both[i]->name);
        sl_record record;
        cr_assert_eq(sl_record_read(path, &record, NULL, &err), SL_OK, "%s", err.msg);
        cr_expect_eq(record.outcome, SL_RECORD_OK, "%s: %s", both[i]->name, record.reason);
        cr_expect_eq(record.rounds, 2);
        cr_expect_str_eq(record.equivalence, "statistical", "%s in rounds", both[i]->name);
        sl_record_release(&record);
    }
    sl_session_free(session);
    test_tmpdir_remove(dir);
}

/* Both forms of a framework on MM-2, each held to the scenario's stated
 * tolerance value by value (the record says "within 0.00025"). */
static void check_mm2_within(const char *tuned, const char *idiomatic)
{
    sl_scenario_instance *mm2 = NULL;
    sl_bench_options mm2_options;
    test_bench_instance("MM-2", "16k", 4, &mm2, &mm2_options);
    const sl_adapter *both[] = {sl_adapter_find(tuned), sl_adapter_find(idiomatic)};
    cr_assert(both[0] && both[1]);
    char within[32];
    snprintf(within, sizeof within, "within %.3g", SL_LOG_MEL_TOLERANCE);
    for (int i = 0; i < 2; i++) {
        sl_record record;
        sl_err err = {0};
        sl_bench_run(mm2, both[i], &mm2_options, &record, &err);
        cr_assert_eq(record.outcome, SL_RECORD_OK, "%s: %s", both[i]->name, record.reason);
        cr_assert_str_eq(record.equivalence, within, "%s", both[i]->name);
        sl_record_release(&record);
    }
    sl_scenario_instance_free(mm2);
}

/* MM-2 on both numpy forms: numpy's rfft and matmul on sluice's window and
 * filter bank cannot be the reference's bits (another summation order), so
 * each is held value by value to the scenario's stated tolerance, and the
 * record says so, not "bitwise". */
Test(peers_scenarios, the_numpy_peers_are_within_mm2s_tolerance)
{
    check_mm2_within("peer:numpy", "peer:numpy-idiomatic");
}

/* sluice peer-check on MM-2: peer:numpy's script is within the tolerance,
 * and the result says how much of it the loader uses (a loader author's
 * margin), more than nothing and less than the bound. */
Test(peers_scenarios, peer_check_gives_the_largest_difference_within_mm2s_tolerance)
{
    sl_scenario_instance *mm2 = NULL;
    sl_bench_options mm2_options;
    test_bench_instance("MM-2", "16k", 2, &mm2, &mm2_options);
    char path[1024];
    test_peer_script(path, sizeof path, "numpy_peer.py");
    sl_peer_check_result result;
    sl_err err = {0};
    cr_assert_eq(sl_peer_check(mm2->pipeline, path, 3, SL_LOG_MEL_TOLERANCE, &result, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(result.first_batch, -1, "%s", result.detail);
    cr_assert(strncmp(result.equivalence, "within ", 7) == 0, "%s", result.equivalence);
    cr_assert_gt(result.largest_difference, 0.0);
    cr_assert_lt(result.largest_difference, SL_LOG_MEL_TOLERANCE);
    sl_scenario_instance_free(mm2);
}

/* MM-2 on both PyTorch forms (torch.fft.rfft and matmul in float32: over
 * the batch into tensors made once, or per element), with PyTorch 2's own
 * Python; skipped where its venv is absent. */
Test(peers_scenarios, the_torch_peers_are_within_mm2s_tolerance)
{
    char reason[256] = "";
    if (!sl__peer_python_has_in(sl__peer_torch_python(), "numpy,torch", reason, sizeof reason))
        cr_skip_test("needs PyTorch at %s (ci/install-peers.sh torch): %s", sl__peer_torch_python(), reason);
    check_mm2_within("peer:torch", "peer:torch-idiomatic");
}

/* MM-2 on both JAX forms (jnp.fft.rfft and a matmul in float32, vmapped;
 * jitted and capped at AVX, or eager); skipped where the peers' venv has no
 * JAX. */
Test(peers_scenarios, the_jax_peers_are_within_mm2s_tolerance)
{
    char reason[256] = "";
    if (!sl__peer_python_has_in(sl__peer_venv_python(), "numpy,jax", reason, sizeof reason))
        cr_skip_test("needs JAX in the peers' venv (ci/install-peers.sh jax): %s", reason);
    check_mm2_within("peer:jax", "peer:jax-idiomatic");
}

/* peer:numpy's MM-2 spectrograms shifted by `shift` (peers/testing/gain.py),
 * run as a peer of the given kind; the caller releases the record. */
static sl_record run_gain_peer(sl_scenario_instance *mm2, const sl_bench_options *options, const char *shift,
                               sl__peer_kind kind)
{
    char path[1024];
    test_peer_script(path, sizeof path, "testing/gain.py");
    sl__peer peer = sl__peer_numpy;
    peer.adapter.name = kind == SL__PEER_PREFETCHING ? "peer:test-gain-prefetching" : "peer:test-gain";
    peer.script = path;
    peer.args = shift;
    peer.kind = kind;
    sl_record record;
    sl_err err = {0};
    sl_bench_run(mm2, &peer.adapter, options, &record, &err);
    return record;
}

/* The tolerance is a bound on every value, where it is stated: peer:numpy's
 * spectrograms shifted by 3.26e-4 (what a 0.1 % gain error in both products
 * does, docs/determinism.md) are refused with the first value beyond it;
 * shifted by 1e-4 (peer:numpy's own largest difference is 6.2e-5, so the
 * sum stays under 2.5e-4) they still pass. */
Test(peers_scenarios, a_peer_beyond_mm2s_tolerance_is_a_mismatch)
{
    sl_scenario_instance *mm2 = NULL;
    sl_bench_options mm2_options;
    test_bench_instance("MM-2", "16k", 2, &mm2, &mm2_options);
    const char *shifts[] = {"--shift=3.26e-4", "--shift=1e-4"};
    for (int s = 0; s < 2; s++) {
        sl_record record = run_gain_peer(mm2, &mm2_options, shifts[s], SL__PEER_PER_BATCH);
        if (s == 0) {
            cr_assert_eq(record.outcome, SL_RECORD_MISMATCH, "%s", record.reason);
            cr_assert(strstr(record.reason, "beyond the scenario's tolerance") != NULL, "%s", record.reason);
            cr_assert(strstr(record.reason, "field 'wave'") != NULL, "%s", record.reason);
        } else {
            cr_assert_eq(record.outcome, SL_RECORD_OK, "%s", record.reason);
            cr_assert(strncmp(record.equivalence, "within ", 7) == 0, "%s", record.equivalence);
        }
        sl_record_release(&record);
    }
    sl_scenario_instance_free(mm2);
}

/* A prefetching peer runs a second session with a digest between batches;
 * on a plan held to a tolerance its batches differ from the reference's
 * bits, so that session must replay the first's (which passed the
 * tolerance check), as on a statistical plan. peer:numpy's spectrograms
 * shifted by 1e-4 (within MM-2's 2.5e-4), run as a prefetching peer, must
 * be ok and within: held to the reference's digests, the second session
 * was a mismatch (tf.data's MM-2 was, before the replay). */
Test(peers_scenarios, a_prefetching_peer_within_mm2s_tolerance_is_ok)
{
    sl_scenario_instance *mm2 = NULL;
    sl_bench_options mm2_options;
    test_bench_instance("MM-2", "16k", 2, &mm2, &mm2_options);
    sl_record record = run_gain_peer(mm2, &mm2_options, "--shift=1e-4", SL__PEER_PREFETCHING);
    cr_assert_eq(record.outcome, SL_RECORD_OK, "%s", record.reason);
    cr_assert(strncmp(record.equivalence, "within ", 7) == 0, "%s", record.equivalence);
    cr_assert_str_eq(record.timing, "prefetching");
    sl_record_release(&record);
    sl_scenario_instance_free(mm2);
}

/* The statistical check of a peer on a plan whose draws cannot be handed
 * over: the residual test on samples drawn here with known distributions,
 * and end to end on AUG-1 (normalize, gaussian noise, brightness) with
 * peers/testing/noise.py, a numpy peer that draws its own noise: honest
 * noise is `statistical` and ranked, no noise or twice the noise is a
 * mismatch. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "support.h"

#include "peer.h"
#include "sluice/bench/bench.h"
#include "sluice/bench/scenario.h"
#include "sluice/records/peer_rank.h"

/* --- the residual test on known distributions -------------------------------- */

/* A normal variate by Box-Muller from a 64-bit LCG (Knuth's MMIX
 * constants): the test's own generator, unrelated to the engine's. */
static double normal(uint64_t *state)
{
    double u[2];
    for (int i = 0; i < 2; i++) {
        *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
        u[i] = ((double)(*state >> 11) + 0.5) / 9007199254740992.0;
    }
    return sqrt(-2.0 * log(u[0])) * cos(6.283185307179586 * u[1]);
}

/* n residuals: the difference of two draws of sd sigma each (sd_b = 0: one
 * draw only), plus bias. */
static sl__moments residuals(uint64_t seed, int n, double sd_a, double sd_b, double bias)
{
    sl__moments m = {0};
    uint64_t s = seed;
    for (int i = 0; i < n; i++)
        sl__moments_add(&m, sd_a * normal(&s) - sd_b * normal(&s) + bias);
    return m;
}

Test(peer_stat, two_honest_samples_agree)
{
    char why[256] = "";
    for (uint64_t seed = 1; seed <= 20; seed++) {
        sl__moments e = residuals(seed, 20000, 0.05, 0.05, 0.0);
        sl__moments e0 = residuals(seed + 1000, 20000, 0.05, 0.05, 0.0);
        cr_expect(sl__residuals_agree(&e, &e0, SL__PEER_STAT_K, why, sizeof why), "seed %d: %s", (int)seed, why);
    }
}

Test(peer_stat, a_peer_without_noise_is_caught_by_its_spread)
{
    /* Leaving the noise out leaves only the reference's draw in the
     * residual: rms 0.05 against sqrt(2) * 0.05. */
    char why[256] = "";
    sl__moments e = residuals(3, 20000, 0.0, 0.05, 0.0);
    sl__moments e0 = residuals(4, 20000, 0.05, 0.05, 0.0);
    cr_expect_not(sl__residuals_agree(&e, &e0, SL__PEER_STAT_K, why, sizeof why));
    cr_expect(strstr(why, "spread"), "%s", why);
}

Test(peer_stat, a_biased_peer_is_caught_by_its_mean)
{
    /* A shift of a tenth of the noise's sd over 20000 values is about 14
     * standard errors of the mean. */
    char why[256] = "";
    sl__moments e = residuals(5, 20000, 0.05, 0.05, 0.005);
    sl__moments e0 = residuals(6, 20000, 0.05, 0.05, 0.0);
    cr_expect_not(sl__residuals_agree(&e, &e0, SL__PEER_STAT_K, why, sizeof why));
    cr_expect(strstr(why, "mean"), "%s", why);
}

/* --- end to end with a numpy peer that draws its own noise -------------------- */

static sl_scenario_instance *instance;
static sl_bench_options options;
static char script_path[1024];

static void setup(void)
{
    char reason[256] = "";
    if (!sl__peer_python_has("numpy,xxhash", reason, sizeof reason))
        cr_skip_test("the statistical peer tests need the peers' Python with numpy and xxhash: %s", reason);
    test_peer_script(script_path, sizeof script_path, "testing/noise.py");
    test_bench_instance("AUG-1", "32x32", 3, &instance, &options);
}

static void teardown(void)
{
    sl_scenario_instance_free(instance);
    instance = NULL;
}

TestSuite(peer_stat_e2e, .init = setup, .fini = teardown, .timeout = 300);

static void run_noise_peer_as(sl__peer_kind kind, const char *name, const char *args, sl_record *record)
{
    sl__peer peer = sl__peer_numpy;
    peer.kind = kind;
    peer.adapter.name = name;
    peer.adapter.transforms =
        SL_TRANSFORM(SL_OP_NORMALIZE) | SL_TRANSFORM(SL_OP_GAUSSIAN_NOISE) | SL_TRANSFORM(SL_OP_RANDOM_BRIGHTNESS);
    peer.script = script_path;
    peer.args = args;
    peer.startup_s = 60.0;
    peer.batch_s = 20.0;
    peer.total_s = 200.0;
    sl_err err = {0};
    sl_bench_run(instance, &peer.adapter, &options, record, &err);
}

static void run_noise_peer(const char *name, const char *args, sl_record *record)
{
    run_noise_peer_as(SL__PEER_PER_BATCH, name, args, record);
}

Test(peer_stat_e2e, a_peer_with_its_own_honest_noise_is_statistically_equivalent_and_ranked)
{
    sl_record record;
    run_noise_peer("peer:test-noise", "--sigma-factor=1", &record);
    cr_assert_eq(record.outcome, SL_RECORD_OK, "%s", record.reason);
    cr_assert_str_eq(record.equivalence, "statistical");
    cr_assert(sl_equivalence_is_equivalent(record.equivalence), "a statistical peer is ranked");
    cr_assert_eq(strncmp(record.framework, "numpy ", 6), 0, "framework '%s'", record.framework);
    sl_record_release(&record);
    /* sluice's own adapter on the same plan is still bitwise. */
    sl_err err = {0};
    sl_bench_run(instance, sl_adapter_find("fused"), &options, &record, &err);
    cr_assert_eq(record.outcome, SL_RECORD_OK, "%s", record.reason);
    cr_assert_str_eq(record.equivalence, "bitwise");
    sl_record_release(&record);
}

Test(peer_stat_e2e, a_peer_that_leaves_the_noise_out_is_a_mismatch)
{
    sl_record record;
    run_noise_peer("peer:test-no-noise", "--sigma-factor=0", &record);
    cr_assert_eq(record.outcome, SL_RECORD_MISMATCH, "%s", record.reason);
    cr_assert_str_eq(record.equivalence, "mismatch");
    cr_assert(strstr(record.reason, "statistically not the reference's work") != NULL, "%s", record.reason);
    cr_assert(strstr(record.reason, "spread") != NULL, "%s", record.reason);
    sl_record_release(&record);
}

Test(peer_stat_e2e, a_peer_with_twice_the_noise_is_a_mismatch)
{
    sl_record record;
    run_noise_peer("peer:test-loud-noise", "--sigma-factor=2", &record);
    cr_assert_eq(record.outcome, SL_RECORD_MISMATCH, "%s", record.reason);
    cr_assert(strstr(record.reason, "spread") != NULL, "%s", record.reason);
    sl_record_release(&record);
}

/* A prefetching peer runs a second session with a digest between batches.
 * On a statistical plan its batches are its own draws, which no reference
 * digest can match: the second session must replay the first's, which
 * passed the statistical check. The same noise from a fixed seed replays;
 * noise drawn afresh in each session does not, and is a mismatch. */
Test(peer_stat_e2e, a_prefetching_peer_replays_its_own_draws_with_a_digest_between_batches)
{
    sl_record record;
    run_noise_peer_as(SL__PEER_PREFETCHING, "peer:test-noise-prefetching", "--sigma-factor=1", &record);
    cr_assert_eq(record.outcome, SL_RECORD_OK, "%s", record.reason);
    cr_assert_str_eq(record.equivalence, "statistical");
    sl_record_release(&record);
    run_noise_peer_as(SL__PEER_PREFETCHING, "peer:test-noise-fresh", "--fresh-draws", &record);
    cr_assert_eq(record.outcome, SL_RECORD_MISMATCH, "%s", record.reason);
    cr_assert(strstr(record.reason, "with a digest between batches") != NULL, "%s", record.reason);
    sl_record_release(&record);
}

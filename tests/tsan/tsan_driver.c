/* The engine's threads under ThreadSanitizer. Criterion itself crashes under
 * TSan, so this driver runs without it: for every scenario and variant of the
 * corpus at ci size, twelve batches across an epoch boundary (TSan slows code
 * 5 to 15 times) through the reference on one thread, `iter` with prefetch workers and `fused` with
 * a thread pool, which must agree digest for digest; then temporaries
 * registered and removed from many threads. TSan reports any race; the digests catch a race TSan
 * might miss. Exits 1 on any difference or error. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/sluice.h"

static int failures;

#define CHECK(cond, ...)                                                                                          \
    do {                                                                                                           \
        if (!(cond)) {                                                                                             \
            fprintf(stderr, "tsan_driver: " __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                                   \
            failures++;                                                                                            \
        }                                                                                                          \
    } while (0)

/* Twelve batches that cross from epoch 0 into epoch 1: enough for every
 * worker and thread to take several batches, few enough for TSan. */
enum { BATCHES = 12 };

static sl_position start_of_run(const sl_pipeline *p)
{
    int64_t per_epoch = sl_pipeline_batches_per_epoch(p);
    return (sl_position){0, per_epoch > BATCHES / 2 ? per_epoch - BATCHES / 2 : 0};
}

static uint64_t run_reference(const sl_pipeline *p, int64_t batches)
{
    sl_digest *digest = sl_digest_new();
    sl_batch *b = NULL;
    sl_err err = {0};
    sl_status st = sl_batch_create(sl_pipeline_output_schema(p), sl_pipeline_get_spec(p)->batch_size, &b, &err);
    sl_position pos = start_of_run(p);
    for (int64_t i = 0; i < batches && st == SL_OK; i++) {
        st = sl_pipeline_produce(p, SL_KERNELS_REFERENCE, pos, b, &err);
        if (st == SL_OK)
            sl_digest_add_batch(digest, b);
        pos = sl_position_advance(p, pos, 1);
    }
    CHECK(st == SL_OK, "reference: %s", err.msg);
    sl_batch_free(b);
    uint64_t value = sl_digest_value(digest);
    sl_digest_free(digest);
    return value;
}

static uint64_t run_iter(const sl_pipeline *p, int64_t batches, int workers)
{
    sl_iter_options options = {SL_KERNELS_BEST, workers, 0, start_of_run(p)};
    sl_iter *it = NULL;
    sl_err err = {0};
    sl_digest *digest = sl_digest_new();
    sl_status st = sl_iter_create(p, &options, &it, &err);
    for (int64_t i = 0; i < batches && st == SL_OK; i++) {
        sl_batch *b = NULL;
        st = sl_iter_next(it, &b, &err);
        if (st == SL_OK)
            sl_digest_add_batch(digest, b);
        sl_batch_free(b);
    }
    CHECK(st == SL_OK, "iter with %d workers: %s", workers, err.msg);
    sl_iter_free(it);
    uint64_t value = sl_digest_value(digest);
    sl_digest_free(digest);
    return value;
}

static int digest_sink(const sl_batch *b, void *user)
{
    sl_digest_add_batch(user, b);
    return 0;
}

static uint64_t run_fused(const sl_pipeline *p, int64_t batches, int threads)
{
    sl_fused *fz = NULL;
    sl_err err = {0};
    sl_digest *digest = sl_digest_new();
    sl_status st = sl_fused_create_threads(p, SL_KERNELS_BEST, threads, &fz, &err);
    if (st == SL_OK)
        st = sl_fused_run(fz, start_of_run(p), batches, digest_sink, digest, &err);
    CHECK(st == SL_OK, "fused with %d threads: %s", threads, err.msg);
    sl_fused_free(fz);
    uint64_t value = sl_digest_value(digest);
    sl_digest_free(digest);
    return value;
}

static void check_scenario(const sl_scenario *scenario, const sl_variant *variant)
{
    if (variant->n[0] == 0)
        return; /* full size only */
    sl_build_options options;
    sl_build_options_init(&options, SL_PROFILE_CI, 42);
    sl_scenario_instance *instance = NULL;
    sl_err err = {0};
    sl_status st = sl_scenario_instantiate(scenario, variant, &options, &instance, &err);
    if (st == SL_ESKIPPED)
        return;
    CHECK(st == SL_OK, "%s/%s: %s", scenario->id, variant->name, err.msg);
    if (st != SL_OK)
        return;
    const sl_pipeline *p = instance->pipeline;
    int64_t batches = BATCHES;
    uint64_t expected = run_reference(p, batches);
    for (int workers = 1; workers <= 3; workers += 2) {
        uint64_t got = run_iter(p, batches, workers);
        CHECK(got == expected, "%s/%s: iter with %d workers gives %016llx, the reference %016llx", scenario->id,
              variant->name, workers, (unsigned long long)got, (unsigned long long)expected);
    }
    for (int threads = 2; threads <= 3; threads++) {
        uint64_t got = run_fused(p, batches, threads);
        CHECK(got == expected, "%s/%s: fused with %d threads gives %016llx, the reference %016llx", scenario->id,
              variant->name, threads, (unsigned long long)got, (unsigned long long)expected);
    }
    printf("%s/%s: reference, iter (1, 3 workers) and fused (2, 3 threads) agree over %lld batches\n",
           scenario->id, variant->name, (long long)batches);
    sl_scenario_instance_free(instance);
}

/* Work directories created and removed from many threads at once: the
 * registry the signal handler reads is shared by all of them. */
static void *churn_workdirs(void *arg)
{
    const char *base = arg;
    for (int i = 0; i < 50; i++) {
        char dir[512];
        sl_err err = {0};
        if (sl_workdir_create(base, "tsan", dir, sizeof dir, &err) != SL_OK) {
            fprintf(stderr, "tsan_driver: %s\n", err.msg);
            return (void *)1;
        }
        sl_workdir_remove(dir);
    }
    return NULL;
}

static void check_workdir_registry(void)
{
    pthread_t threads[4];
    for (int t = 0; t < 4; t++)
        pthread_create(&threads[t], NULL, churn_workdirs, (void *)sl_temp_base());
    for (int t = 0; t < 4; t++) {
        void *result = NULL;
        pthread_join(threads[t], &result);
        CHECK(result == NULL, "work directory churn failed on thread %d", t);
    }
    printf("work directories: 4 threads x 50 created and removed\n");
}

int main(void)
{
    for (int s = 0; s < sl_scenario_count(); s++) {
        const sl_scenario *scenario = sl_scenario_at(s);
        for (int v = 0; v < scenario->nvariants; v++)
            check_scenario(scenario, &scenario->variants[v]);
    }
    check_workdir_registry();
    if (failures)
        fprintf(stderr, "tsan_driver: %d checks failed\n", failures);
    return failures ? 1 : 0;
}

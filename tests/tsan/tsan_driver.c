/* The engine's threads under ThreadSanitizer. Criterion itself crashes under
 * TSan, so this driver runs without it: for every scenario and variant of the
 * corpus at ci size, twelve batches across an epoch boundary (TSan slows code
 * 5 to 15 times) through the reference on one thread, `iter` with prefetch workers and `fused` with
 * a thread pool, which must agree digest for digest; then temporaries
 * registered and removed from many threads, and a streaming source's chunk
 * cache read from many threads. TSan reports any race; the digests catch a race TSan
 * might miss. Exits 1 on any difference or error. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/sluice.h"

static int failures;

#define CHECK(cond, ...)                                                                                               \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "tsan_driver: " __VA_ARGS__);                                                              \
            fputc('\n', stderr);                                                                                       \
            failures++;                                                                                                \
        }                                                                                                              \
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
        st = sl_pipeline_produce(p, sl_kernels_reference(), pos, b, &err);
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
    sl_iter_options options = {
        .kernels = sl_kernels_default(), .workers = workers, .prefetch_depth = 0, .start = start_of_run(p)};
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
    sl_status st = sl_fused_create_threads(p, sl_kernels_default(), threads, &fz, &err);
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
    /* The threaded runs must equal one thread on the same kernel table,
     * bit for bit. They equal the reference too, except in a scenario that
     * states a tolerance (MM-2's BLAS sums in its own order), where the
     * corpus tests hold the table to it instead. */
    uint64_t expected = run_iter(p, batches, 0);
    if (scenario->tolerance == 0.0) {
        uint64_t reference = run_reference(p, batches);
        CHECK(reference == expected, "%s/%s: one iter thread gives %016llx, the reference %016llx", scenario->id,
              variant->name, (unsigned long long)expected, (unsigned long long)reference);
    }
    for (int workers = 1; workers <= 3; workers += 2) {
        uint64_t got = run_iter(p, batches, workers);
        CHECK(got == expected, "%s/%s: iter with %d workers gives %016llx, one thread %016llx", scenario->id,
              variant->name, workers, (unsigned long long)got, (unsigned long long)expected);
    }
    for (int threads = 2; threads <= 3; threads++) {
        uint64_t got = run_fused(p, batches, threads);
        CHECK(got == expected, "%s/%s: fused with %d threads gives %016llx, one thread %016llx", scenario->id,
              variant->name, threads, (unsigned long long)got, (unsigned long long)expected);
    }
    printf("%s/%s: iter (1, 3 workers) and fused (2, 3 threads) agree with one thread%s over %lld batches\n",
           scenario->id, variant->name, scenario->tolerance == 0.0 ? " and the reference" : "", (long long)batches);
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

/* A streaming source read from eight threads through two chunk slots:
 * readers wait on chunks being loaded, evict each other's chunks, and read
 * around the cache when every slot is busy. Every byte must be right. */
enum { STREAM_ROWS = 200, STREAM_ROW_BYTES = 256, STREAM_READERS = 8 };

typedef struct stream_reader {
    const sl_source *source;
    unsigned seed;
    int wrong;
} stream_reader;

static void *read_stream(void *arg)
{
    stream_reader *r = arg;
    unsigned char row[STREAM_ROW_BYTES];
    unsigned state = r->seed;
    for (int i = 0; i < 2000; i++) {
        state = state * 1103515245u + 12345u;
        int64_t k = (int64_t)((state >> 8) % STREAM_ROWS);
        sl_err err = {0};
        if (sl_source_read(r->source, 0, (size_t)k * STREAM_ROW_BYTES, STREAM_ROW_BYTES, row, &err) != SL_OK) {
            r->wrong++;
            continue;
        }
        for (int b = 0; b < STREAM_ROW_BYTES; b++)
            r->wrong += row[b] != (unsigned char)(k * 7 + b);
    }
    return NULL;
}

static void check_stream_cache(void)
{
    char dir[512];
    sl_err err = {0};
    CHECK(sl_workdir_create(sl_temp_base(), "tsan", dir, sizeof dir, &err) == SL_OK, "%s", err.msg);
    sl_tensor t = {.dtype = SL_U8, .shape = {.rank = 2, .dims = {STREAM_ROWS, STREAM_ROW_BYTES}}};
    unsigned char *data = malloc(STREAM_ROWS * STREAM_ROW_BYTES);
    for (int k = 0; k < STREAM_ROWS; k++)
        for (int b = 0; b < STREAM_ROW_BYTES; b++)
            data[k * STREAM_ROW_BYTES + b] = (unsigned char)(k * 7 + b);
    t.data = data;
    char path[600];
    snprintf(path, sizeof path, "%s/x.npy", dir);
    CHECK(sl_npy_write(path, &t, &err) == SL_OK, "%s", err.msg);
    free(data);
    const char *name = "x", *paths[1] = {path};
    sl_stream_options options = {3, 2};
    sl_source *source = NULL;
    CHECK(sl_source_stream_create(1, &name, paths, &options, &source, &err) == SL_OK, "%s", err.msg);
    if (source) {
        pthread_t threads[STREAM_READERS];
        stream_reader readers[STREAM_READERS];
        for (int i = 0; i < STREAM_READERS; i++) {
            readers[i] = (stream_reader){source, 0x9e3779b9u * (unsigned)(i + 1), 0};
            pthread_create(&threads[i], NULL, read_stream, &readers[i]);
        }
        for (int i = 0; i < STREAM_READERS; i++) {
            pthread_join(threads[i], NULL);
            CHECK(readers[i].wrong == 0, "stream reader %d read %d wrong bytes", i, readers[i].wrong);
        }
        sl_stream_stats stats;
        sl_source_stream_stats(source, &stats, &err);
        printf("stream cache: %d threads through 2 slots, %lld chunk loads, %lld reads around the cache\n",
               STREAM_READERS, (long long)stats.chunk_loads, (long long)stats.bypass_reads);
        sl_source_free(source);
    }
    sl_workdir_remove(dir);
}

int main(void)
{
    for (int s = 0; s < sl_scenario_count(); s++) {
        const sl_scenario *scenario = sl_scenario_at(s);
        for (int v = 0; v < scenario->nvariants; v++)
            check_scenario(scenario, &scenario->variants[v]);
    }
    check_workdir_registry();
    check_stream_cache();
    if (failures)
        fprintf(stderr, "tsan_driver: %d checks failed\n", failures);
    return failures ? 1 : 0;
}

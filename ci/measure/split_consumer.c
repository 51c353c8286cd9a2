/* Why a batch split across two threads gains less than 2x: fused on one
 * and on two threads, each with no consumer and with the bench's consumer
 * (a digest of every batch on the caller's thread, which reads the rows the
 * worker wrote), in interleaved rounds. If the split gains with no consumer
 * and loses its gain with one, the cost is the consumer's reads of the
 * worker's lines and the worker's next writes to lines the caller now
 * shares, not the split itself. Run by ci/split-consumer.sh.
 *
 *   split_consumer SCENARIO VARIANT ROUNDS BATCHES */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/sluice.h"

/* Times each batch from the sink's return to its next call: production
 * alone, the consumer's work left out, as the bench times a batch. */
typedef struct timed_sink {
    bool digest_batches;
    sl_digest *digest;
    int64_t last_ns;
    int64_t count;
    int64_t *ns;
    int64_t splits;
    sl_fused *fused;
} timed_sink;

static int timed_batch(const sl_batch *batch, void *user)
{
    timed_sink *s = user;
    int64_t now = sl_now_ns();
    if (s->last_ns > 0)
        s->ns[s->count++] = now - s->last_ns;
    s->splits += sl_fused_last_split(s->fused);
    if (s->digest_batches)
        sl_digest_add_batch(s->digest, batch);
    s->last_ns = sl_now_ns();
    return 0;
}

static int compare_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The median batch time of one run of `batches` batches, in µs. */
static double run_once(const sl_pipeline *pipeline, int threads, bool digest, int64_t batches, double *split_share)
{
    sl_err err = {0};
    sl_fused *fused;
    if (sl_fused_create_threads(pipeline, sl_kernels_default(), threads, &fused, &err) != SL_OK) {
        fprintf(stderr, "%s\n", err.msg);
        exit(1);
    }
    timed_sink s = {
        .digest_batches = digest, .digest = sl_digest_new(), .ns = calloc((size_t)batches, 8), .fused = fused};
    if (sl_fused_run(fused, (sl_position){0, 0}, batches, timed_batch, &s, &err) != SL_OK) {
        fprintf(stderr, "%s\n", err.msg);
        exit(1);
    }
    qsort(s.ns, (size_t)s.count, sizeof *s.ns, compare_i64);
    double median = (double)s.ns[s.count / 2] / 1e3;
    *split_share = (double)s.splits / (double)batches;
    free(s.ns);
    sl_digest_free(s.digest);
    sl_fused_free(fused);
    return median;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: split_consumer SCENARIO VARIANT ROUNDS BATCHES\n");
        return 2;
    }
    const sl_scenario *scenario = sl_scenario_find(argv[1]);
    const sl_variant *variant = NULL;
    for (int v = 0; scenario && v < scenario->nvariants; v++)
        if (strcmp(scenario->variants[v].name, argv[2]) == 0)
            variant = &scenario->variants[v];
    if (!variant) {
        fprintf(stderr, "no scenario %s with a variant %s\n", argv[1], argv[2]);
        return 2;
    }
    int rounds = atoi(argv[3]);
    int64_t batches = atoll(argv[4]);
    sl_build_options options;
    sl_build_options_init(&options, SL_PROFILE_FULL, 42);
    sl_scenario_instance *instance = NULL;
    sl_err err = {0};
    if (sl_scenario_instantiate(scenario, variant, &options, &instance, &err) != SL_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    static const struct {
        int threads;
        bool digest;
        const char *name;
    } configs[] = {{1, false, "t1 none"}, {2, false, "t2 none"}, {1, true, "t1 digest"}, {2, true, "t2 digest"}};
    printf("%s/%s, %lld batches a run; median batch time (µs) and split share per run\n", argv[1], argv[2],
           (long long)batches);
    for (int r = 0; r < rounds; r++) {
        double us[4], share[4];
        for (int k = 0; k < 4; k++) {
            int c = r % 2 ? 3 - k : k;
            us[c] = run_once(instance->pipeline, configs[c].threads, configs[c].digest, batches, &share[c]);
        }
        printf("round %d:", r + 1);
        for (int c = 0; c < 4; c++)
            printf("  %s %.1f (split %.2f)", configs[c].name, us[c], share[c]);
        printf("  | t1/t2 none %.2fx, digest %.2fx\n", us[0] / us[1], us[2] / us[3]);
    }
    sl_scenario_instance_free(instance);
    return 0;
}

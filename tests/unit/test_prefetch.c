/* The prefetch pool hands items over in order whatever the worker count and
 * completion order, bounds the work in flight, and reports failures. */
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include <criterion/criterion.h>

#include "prefetch.h"
#include "sluice/core/resources.h"
#include "sluice/pipeline/pipeline.h"

typedef struct ctx {
    atomic_int in_flight;
    atomic_int max_in_flight;
    int64_t fail_at;
} ctx;

static sl_status produce(void *arg, int64_t seq, sl_batch **out, sl_err *err)
{
    ctx *c = arg;
    int now = atomic_fetch_add(&c->in_flight, 1) + 1;
    int seen = atomic_load(&c->max_in_flight);
    while (now > seen && !atomic_compare_exchange_weak(&c->max_in_flight, &seen, now))
        ;
    /* Earlier items sleep longer, so workers finish out of order. */
    struct timespec pause = {0, (long)((7 - seq % 7) * 200000)};
    nanosleep(&pause, NULL);
    atomic_fetch_sub(&c->in_flight, 1);
    if (seq == c->fail_at)
        return sl_fail(err, SL_EIO, "item %lld failed on purpose", (long long)seq);
    sl_schema schema = {0};
    schema.nfields = 1;
    strcpy(schema.fields[0].name, "seq");
    schema.fields[0].dtype = SL_I64;
    sl_status st = sl_batch_create(&schema, 1, out, err);
    if (st == SL_OK)
        *(int64_t *)(*out)->fields[0].data = seq;
    return st;
}

Test(prefetch, delivers_in_order_for_any_worker_count)
{
    for (int workers = 1; workers <= 4; workers++) {
        ctx c = {0};
        c.fail_at = -1;
        sl__prefetch *pool;
        sl_err err = {0};
        cr_assert_eq(sl__prefetch_create(workers, 3 * workers, produce, &c, &pool, &err), SL_OK, "%s", err.msg);
        for (int64_t i = 0; i < 40; i++) {
            sl_batch *b;
            cr_assert_eq(sl__prefetch_next(pool, &b, &err), SL_OK, "%s", err.msg);
            cr_assert_eq(*(int64_t *)b->fields[0].data, i, "workers %d: item %lld out of order", workers, (long long)i);
            sl_batch_free(b);
        }
        sl__prefetch_free(pool);
        cr_expect_leq(atomic_load(&c.max_in_flight), workers);
    }
}

Test(prefetch, failure_reaches_the_consumer_in_sequence)
{
    ctx c = {0};
    c.fail_at = 5;
    sl__prefetch *pool;
    sl_err err = {0};
    cr_assert_eq(sl__prefetch_create(2, 4, produce, &c, &pool, &err), SL_OK);
    for (int64_t i = 0; i < 5; i++) {
        sl_batch *b;
        cr_assert_eq(sl__prefetch_next(pool, &b, &err), SL_OK);
        sl_batch_free(b);
    }
    sl_batch *b;
    cr_expect_eq(sl__prefetch_next(pool, &b, &err), SL_EIO);
    cr_expect_null(b);
    cr_expect(strstr(err.msg, "item 5 failed") != NULL, "%s", err.msg);
    sl__prefetch_free(pool);
}

Test(prefetch, freeing_with_items_in_flight_leaks_nothing)
{
    ctx c = {0};
    c.fail_at = -1;
    sl__prefetch *pool;
    sl_err err = {0};
    cr_assert_eq(sl__prefetch_create(3, 6, produce, &c, &pool, &err), SL_OK);
    sl_batch *b;
    cr_assert_eq(sl__prefetch_next(pool, &b, &err), SL_OK);
    sl_batch_free(b);
    sl__prefetch_free(pool);
}

Test(prefetch, bad_arguments_are_refused)
{
    ctx c = {0};
    sl__prefetch *pool;
    sl_err err = {0};
    cr_expect_eq(sl__prefetch_create(0, 2, produce, &c, &pool, &err), SL_EINVAL);
    cr_expect_eq(sl__prefetch_create(4, 2, produce, &c, &pool, &err), SL_EINVAL);
    cr_expect(strstr(err.msg, "depth") != NULL, "%s", err.msg);
}

/* Bounds by the machine: --workers 1024 once made a 41 MB run use 2.1 GB.
 * The limits follow from the CPUs this process may use and the memory
 * available, read here independently of the code under test. */
Test(prefetch, workers_depth_and_queue_memory_are_bounded)
{
    sl_err err = {0};
    int cpus = sl_available_cpus();
    cr_expect_eq(sl__prefetch_check_bounds(2, 0, 4096, &err), SL_OK, "%s", err.msg);
    cr_expect_eq(sl__prefetch_check_bounds(1024, 0, 4096, &err), SL_EINVAL);
    cr_expect(strstr(err.msg, "1024 prefetch workers") && strstr(err.msg, "per CPU"), "%s", err.msg);
    cr_expect_eq(sl__prefetch_check_bounds(SL__PREFETCH_WORKERS_PER_CPU * cpus + 1, 0, 4096, &err), SL_EINVAL);
    cr_expect_eq(sl__prefetch_check_bounds(1, 9, 4096, &err), SL_EINVAL);
    cr_expect(strstr(err.msg, "depth 9"), "%s", err.msg);
    /* 8 batches of 1 TiB: more than any machine this runs on has. */
    cr_expect_eq(sl__prefetch_check_bounds(1, 8, (size_t)1 << 40, &err), SL_ENOMEM);
    cr_expect(strstr(err.msg, "available"), "%s", err.msg);
}

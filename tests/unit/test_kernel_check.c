/* The kernel checker (sluice/bench/kernel_check.h): every entry has cases, every
 * case passes on every table this CPU runs, a wrong kernel is caught and
 * named down to the index, and timing gives a positive median. */
#include <string.h>

#include <criterion/criterion.h>

#include "sluice/bench/kernel_check.h"
#include "sluice/bench/scenario.h"
#include "sluice/corpus/scenarios.h"

/* Every entry of SL_KERNEL_ENTRIES has a case at a size a scenario runs and
 * one at an awkward size, in the order the entries are listed. */
Test(kernel_check, every_entry_has_a_scenario_case_and_an_odd_one)
{
    const char *const entries[] = {
#define NAME(entry) #entry,
        SL_KERNEL_ENTRIES(NAME)
#undef NAME
    };
    int n = (int)(sizeof entries / sizeof entries[0]);
    cr_assert_eq(sl_kernel_entry_count(), n);
    for (int e = 0; e < n; e++) {
        cr_expect_str_eq(sl_kernel_entry_name(e), entries[e]);
        int scenario = 0, odd = 0;
        for (int i = 0; i < sl_kernel_case_count(); i++) {
            const sl_kernel_case *c = sl_kernel_case_at(i);
            if (strcmp(c->entry, entries[e]) != 0)
                continue;
            odd += strcmp(c->origin, "odd") == 0;
            scenario += strcmp(c->origin, "odd") != 0;
        }
        cr_expect(scenario >= 1 && odd >= 1, "%s has %d scenario cases and %d odd ones", entries[e], scenario, odd);
    }
    cr_expect_null(sl_kernel_entry_name(n));
}

Test(kernel_check, cases_are_numbered_sized_and_found)
{
    for (int i = 0; i < sl_kernel_case_count(); i++) {
        const sl_kernel_case *c = sl_kernel_case_at(i);
        cr_expect_eq(c->index, i);
        cr_expect_gt(c->bytes, 0, "%s %s moves no bytes", c->entry, c->shape);
        cr_expect_eq(sl_kernel_case_find(c->entry, c->shape), c, "%s %s", c->entry, c->shape);
    }
    cr_expect_null(sl_kernel_case_at(sl_kernel_case_count()));
    const sl_kernel_case *c = sl_kernel_case_find("NORMALIZE_U8", NULL);
    cr_assert_not_null(c, "entry names are case-insensitive");
    cr_expect_str_eq(c->shape, "32x32x3");
    cr_expect_null(sl_kernel_case_find("normalize_u16", NULL));
    cr_expect_null(sl_kernel_case_find("normalize_u8", "7x7x7"));
}

/* log_mel's tolerance is the one MM-2 states, not a second opinion. */
Test(kernel_check, log_mel_is_held_to_mm2s_tolerance)
{
    const sl_scenario *mm2 = sl_scenario_find("MM-2");
    cr_assert_not_null(mm2);
    for (int i = 0; i < sl_kernel_case_count(); i++) {
        const sl_kernel_case *c = sl_kernel_case_at(i);
        cr_expect_eq(c->tolerance, strcmp(c->entry, "log_mel") == 0 ? mm2->tolerance : 0.0, "%s %s: %g", c->entry,
                     c->shape, c->tolerance);
    }
}

Test(kernel_check, every_case_passes_on_every_supported_table, .timeout = 100)
{
    for (int t = 0; t < sl_kernel_table_count(); t++) {
        const sl_kernel_table *table = sl_kernel_table_at(t);
        if (!sl_kernel_table_supported(table, NULL, 0))
            continue;
        for (int i = 0; i < sl_kernel_case_count(); i++) {
            const sl_kernel_case *c = sl_kernel_case_at(i);
            char diff[512];
            sl_err err = {0};
            cr_expect_eq(sl_kernel_case_check(c, table, diff, sizeof diff, &err), SL_OK, "%s", err.msg);
            cr_expect_str_eq(diff, "", "%s %s on %s", c->entry, c->shape, table->name);
        }
    }
}

/* The generic table's normalize_u8, with value WRONG_AT changed. */
static int64_t wrong_at;

static void wrong_normalize_u8(const uint8_t *src, float *dst, int64_t pixels, const sl_normalize_consts *k)
{
    sl_kernels_find("cpu-generic")->normalize_u8(src, dst, pixels, k);
    dst[wrong_at] += 1.0f;
}

/* A table with one wrong entry fails that entry's cases, naming the first
 * wrong index (in the vector body and in the tail of an odd size), and
 * passes every other entry. */
Test(kernel_check, a_wrong_entry_is_caught_at_its_index)
{
    sl_kernel_table broken = *sl_kernels_find("cpu-generic");
    broken.normalize_u8 = wrong_normalize_u8;
    const struct {
        const char *shape;
        int64_t at;
        const char *needle;
    } wrongs[] = {{"32x32x3", 5, "dst index 5 of 3072"}, {"17x3", 50, "dst index 50 of 51"}};
    for (size_t w = 0; w < sizeof wrongs / sizeof wrongs[0]; w++) {
        wrong_at = wrongs[w].at;
        char diff[512];
        sl_err err = {0};
        const sl_kernel_case *c = sl_kernel_case_find("normalize_u8", wrongs[w].shape);
        cr_assert_not_null(c);
        cr_assert_eq(sl_kernel_case_check(c, &broken, diff, sizeof diff, &err), SL_EMISMATCH);
        cr_expect(strstr(diff, wrongs[w].needle) != NULL, "%s", diff);
        cr_expect(strstr(diff, "cpu-generic") != NULL && strstr(diff, "reference") != NULL, "%s", diff);
        cr_expect(strstr(err.msg, "normalize_u8") != NULL && strstr(err.msg, diff) != NULL, "%s", err.msg);
    }
    char diff[512];
    sl_err err = {0};
    cr_expect_eq(sl_kernel_case_check(sl_kernel_case_find("normalize_f32", NULL), &broken, diff, sizeof diff, &err),
                 SL_OK, "%s", err.msg);
}

Test(kernel_check, timing_gives_a_positive_median)
{
    const sl_kernel_case *cases[] = {sl_kernel_case_find("normalize_u8", "32x32x3"),
                                     sl_kernel_case_find("log1p", "13")};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double ns = -1.0;
        sl_err err = {0};
        cr_assert_eq(sl_kernel_case_time(cases[i], sl_kernels_default(), 5, &ns, &err), SL_OK, "%s", err.msg);
        cr_expect_gt(ns, 0.0, "%s %s: %g ns", cases[i]->entry, cases[i]->shape, ns);
    }
}

Test(kernel_check, refuses_bad_requests)
{
    const sl_kernel_case *c = sl_kernel_case_at(0);
    double ns;
    char diff[64];
    sl_err err = {0};
    cr_expect_eq(sl_kernel_case_check(c, NULL, diff, sizeof diff, &err), SL_EINVAL);
    cr_expect_eq(sl_kernel_case_check(NULL, sl_kernels_reference(), diff, sizeof diff, &err), SL_EINVAL);
    cr_expect_eq(sl_kernel_case_time(c, sl_kernels_reference(), 0, &ns, &err), SL_EINVAL);
    /* A table the CPU cannot run is refused with the reason, never run. */
    sl_cpu_features_mask(0);
    cr_expect_eq(sl_kernel_case_check(c, sl_kernels_find("cpu-avx2"), diff, sizeof diff, &err), SL_EUNSUPPORTED);
    cr_expect(strstr(err.msg, "cpu-avx2") && strstr(err.msg, "AVX2"), "%s", err.msg);
    cr_expect_eq(sl_kernel_case_time(c, sl_kernels_find("cpu-avx2"), 3, &ns, &err), SL_EUNSUPPORTED);
    sl_cpu_features_mask(~0u);
}

/* The timer the tuner interleaves: inputs made once, each table calibrated
 * to its own call count, a table this CPU cannot run refused with why. */
Test(kernel_check, a_timer_times_several_tables_on_one_set_of_inputs)
{
    const sl_kernel_case *c = sl_kernel_case_find("normalize_u8", "32x32x3");
    cr_assert_not_null(c);
    sl_kernel_timer *timer = NULL;
    sl_err err = {0};
    cr_assert_eq(sl_kernel_timer_open(c, SL_KERNEL_CLOCK_THREAD_CPU, &timer, &err), SL_OK, "%s", err.msg);
    const sl_kernel_table *tables[] = {sl_kernels_reference(), sl_kernels_find("cpu-generic")};
    for (int i = 0; i < 2; i++) {
        int64_t calls = 0;
        cr_assert_eq(sl_kernel_timer_calibrate(timer, tables[i], 20000, &calls, &err), SL_OK, "%s", err.msg);
        cr_expect_geq(calls, 1);
        cr_expect_gt(sl_kernel_timer_sample(timer, tables[i], calls), 0.0);
    }
    sl_cpu_features_mask(0);
    int64_t calls = 7;
    cr_expect_eq(sl_kernel_timer_calibrate(timer, sl_kernels_find("cpu-avx2"), 20000, &calls, &err), SL_EUNSUPPORTED);
    cr_expect(strstr(err.msg, "cpu-avx2") != NULL, "%s", err.msg);
    cr_expect_eq(calls, 0);
    sl_cpu_features_mask(~0u);
    sl_kernel_timer_close(timer);
    cr_expect_eq(sl_kernel_timer_open(NULL, SL_KERNEL_CLOCK_WALL, &timer, &err), SL_EINVAL);
    cr_expect_null(timer);
}

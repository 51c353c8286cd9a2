/* Philox4x32-10 against the known-answer vectors published with Random123
 * (tests/kat_vectors in the Random123 distribution), and the properties the
 * keyed streams built on it must have. */
#include <criterion/criterion.h>

#include "sluice/core/philox.h"

typedef struct kat {
    uint32_t ctr[4];
    uint32_t key[2];
    uint32_t expected[4];
} kat;

static const kat philox_kats[] = {
    {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
    {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
     {0xffffffff, 0xffffffff},
     {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
    {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
     {0xa4093822, 0x299f31d0},
     {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
};

Test(philox, matches_random123_known_answers)
{
    for (size_t i = 0; i < sizeof philox_kats / sizeof philox_kats[0]; i++) {
        sl_philox_ctr c = {
            {philox_kats[i].ctr[0], philox_kats[i].ctr[1], philox_kats[i].ctr[2], philox_kats[i].ctr[3]}};
        sl_philox_key k = {{philox_kats[i].key[0], philox_kats[i].key[1]}};
        sl_philox_ctr out = sl_philox4x32_10(c, k);
        for (int w = 0; w < 4; w++)
            cr_expect_eq(out.v[w], philox_kats[i].expected[w], "vector %zu word %d: got %08x, want %08x", i, w,
                         out.v[w], philox_kats[i].expected[w]);
    }
}

Test(philox, keys_differ_by_seed_and_stream)
{
    sl_philox_key a = sl_philox_key_for(42, 1);
    sl_philox_key b = sl_philox_key_for(42, 2);
    sl_philox_key c = sl_philox_key_for(43, 1);
    cr_expect(a.v[0] != b.v[0] || a.v[1] != b.v[1]);
    cr_expect(a.v[0] != c.v[0] || a.v[1] != c.v[1]);
    sl_philox_key again = sl_philox_key_for(42, 1);
    cr_expect(a.v[0] == again.v[0] && a.v[1] == again.v[1]);
}

Test(philox, unit_floats_lie_in_unit_interval)
{
    cr_expect_eq(sl_u32_to_unit_float(0), 0.0f);
    cr_expect_lt(sl_u32_to_unit_float(0xffffffffu), 1.0f);
    cr_expect_eq(sl_u32_to_unit_float(0x80000000u), 0.5f);
}

Test(philox, bounded_integers_are_uniform_enough)
{
    /* 60,000 draws into 6 bins: each bin expects 10,000 with standard
     * deviation sqrt(60000 * 1/6 * 5/6) ~ 91; 6 sigma is a bound a correct
     * generator fails with probability below 1e-8. */
    enum { bins = 6, draws = 60000 };
    int counts[bins] = {0};
    sl_philox_key key = sl_philox_key_for(7, 3);
    for (uint32_t i = 0; i < draws; i++) {
        sl_philox_ctr out = sl_philox4x32_10(sl_philox_ctr_for(i, 0, 0), key);
        uint32_t v = sl_u32_below(out.v[0], bins);
        cr_assert_lt(v, bins);
        counts[v]++;
    }
    for (int b = 0; b < bins; b++)
        cr_expect(counts[b] > 10000 - 6 * 91 && counts[b] < 10000 + 6 * 91, "bin %d has %d draws", b, counts[b]);
}

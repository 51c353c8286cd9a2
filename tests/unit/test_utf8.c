/* sl__utf8_valid against RFC 3629's rules, with byte sequences written out
 * by hand: what each reader relies on to refuse text that is not UTF-8. */
#include <criterion/criterion.h>
#include <string.h>

#include "core/internal.h"

static bool valid(const char *text, size_t *bad_at)
{
    return sl__utf8_valid(text, strlen(text), bad_at);
}

Test(utf8, accepts_every_length_of_sequence)
{
    cr_expect(valid("plain ascii", NULL));
    cr_expect(valid("\xc2\xb5s", NULL), "U+00B5 MICRO SIGN");
    cr_expect(valid("\xe2\x82\xac", NULL), "U+20AC EURO SIGN");
    cr_expect(valid("\xf0\x9d\x84\x9e", NULL), "U+1D11E, four bytes");
    cr_expect(valid("\xef\xbf\xbf\xf4\x8f\xbf\xbf", NULL), "U+FFFF and U+10FFFF, the edges");
    cr_expect(sl__utf8_valid("", 0, NULL));
}

Test(utf8, refuses_each_malformation_and_says_where)
{
    static const struct {
        const char *text;
        size_t bad_at;
        const char *what;
    } cases[] = {
        {"ab\xff", 2, "a byte that never appears in UTF-8"},
        {"a\x80", 1, "a continuation byte alone"},
        {"\xc0\xaf", 0, "an overlong '/'"},
        {"x\xe0\x80\xaf", 1, "an overlong three-byte form"},
        {"\xed\xa0\x80", 0, "a UTF-16 surrogate"},
        {"\xf4\x90\x80\x80", 0, "past U+10FFFF"},
        {"ok\xe2\x82", 2, "a sequence cut short"},
        {"\xc3(", 0, "a lead byte without its continuation"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t at = 99;
        cr_expect(!valid(cases[i].text, &at), "accepted %s", cases[i].what);
        cr_expect_eq(at, cases[i].bad_at, "%s: reported byte %zu, expected %zu", cases[i].what, at, cases[i].bad_at);
    }
}

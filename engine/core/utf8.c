/* UTF-8 validation for the readers (core/internal.h). */
#include <stdbool.h>
#include <stddef.h>

#include "core/internal.h"

/* RFC 3629: one to four bytes, no overlong forms, no surrogates
 * (U+D800..U+DFFF), nothing above U+10FFFF. */
bool sl__utf8_valid(const char *text, size_t size, size_t *bad_at)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t i = 0;
    while (i < size) {
        unsigned char c = s[i];
        size_t extra;
        unsigned char lo = 0x80, hi = 0xbf;
        if (c < 0x80) {
            i++;
            continue;
        } else if (c >= 0xc2 && c <= 0xdf) {
            extra = 1;
        } else if (c >= 0xe0 && c <= 0xef) {
            extra = 2;
            if (c == 0xe0)
                lo = 0xa0; /* overlong below U+0800 */
            else if (c == 0xed)
                hi = 0x9f; /* surrogates */
        } else if (c >= 0xf0 && c <= 0xf4) {
            extra = 3;
            if (c == 0xf0)
                lo = 0x90; /* overlong below U+10000 */
            else if (c == 0xf4)
                hi = 0x8f; /* above U+10FFFF */
        } else {
            break;
        }
        if (size - i <= extra)
            break;
        bool ok = s[i + 1] >= lo && s[i + 1] <= hi;
        for (size_t k = 2; ok && k <= extra; k++)
            ok = s[i + k] >= 0x80 && s[i + k] <= 0xbf;
        if (!ok)
            break;
        i += extra + 1;
    }
    if (i < size && bad_at)
        *bad_at = i;
    return i >= size;
}

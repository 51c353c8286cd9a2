/* UTF-8 for text from files another program wrote (core/internal.h): the
 * readers refuse what is not valid, and the record writer replaces it, since
 * a stray byte turns an HTML page or a Markdown table into something its
 * reader's tools refuse or misread. */
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

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

void sl__text_printable(char *text)
{
    for (unsigned char *p = (unsigned char *)text; *p; p++)
        if (*p < 0x20 || *p == 0x7F)
            *p = '?';
}

int sl__utf8_sanitize(char *text, size_t size)
{
    static const char replacement[] = "\xEF\xBF\xBD"; /* U+FFFD */
    size_t length = strlen(text), bad;
    if (size == 0 || sl__utf8_valid(text, length, NULL))
        return 0;
    /* Rebuilt from a copy: a replacement is three bytes where the bad byte
     * was one, so the text may grow. */
    char *copy = strdup(text);
    if (!copy) {
        sl__utf8_valid(text, length, &bad);
        text[bad] = '\0';
        return 1;
    }
    size_t in = 0, out = 0;
    int replaced = 0;
    while (in < length) {
        size_t good = sl__utf8_valid(copy + in, length - in, &bad) ? length - in : bad;
        if (out + good >= size) {
            /* What no longer fits is cut at a character boundary. */
            good = size - 1 - out;
            while (good > 0 && ((unsigned char)copy[in + good] & 0xC0) == 0x80)
                good--;
            memcpy(text + out, copy + in, good);
            out += good;
            break;
        }
        memcpy(text + out, copy + in, good);
        out += good;
        in += good;
        if (in >= length || out + 3 >= size)
            break;
        memcpy(text + out, replacement, 3);
        out += 3;
        in++;
        replaced++;
    }
    text[out] = '\0';
    free(copy);
    return replaced > 0 ? replaced : 1;
}

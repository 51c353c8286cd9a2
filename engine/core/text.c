/* Text from files another program wrote: record strings must be valid
 * UTF-8 before a report, a summary or a JSON writer passes them on, since a
 * stray byte turns an HTML page or a Markdown table into something its
 * reader's tools refuse or misread. */
#include <string.h>

#include "core/internal.h"

/* The length of the valid UTF-8 sequence at s (1 to 4 bytes), or 0 when
 * the bytes there are not one: overlong forms, surrogates and code points
 * above U+10FFFF are refused, as RFC 3629 says. */
static size_t valid_sequence(const unsigned char *s)
{
    unsigned char c = s[0];
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        return (s[1] & 0xC0) == 0x80 ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        unsigned char lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
        return s[1] >= lo && s[1] <= hi && (s[2] & 0xC0) == 0x80 ? 3 : 0;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        unsigned char lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
        return s[1] >= lo && s[1] <= hi && (s[2] & 0xC0) == 0x80 && (s[3] & 0xC0) == 0x80 ? 4 : 0;
    }
    return 0;
}

bool sl__utf8_valid(const char *text)
{
    for (const unsigned char *s = (const unsigned char *)text; *s;) {
        size_t n = valid_sequence(s);
        if (n == 0)
            return false;
        s += n;
    }
    return true;
}

int sl__utf8_sanitize(char *text, size_t size)
{
    static const char replacement[] = "\xEF\xBF\xBD"; /* U+FFFD */
    if (size == 0 || sl__utf8_valid(text))
        return 0;
    /* Rebuilt into a copy: a replacement is three bytes where the bad byte
     * was one, so the text may grow, and is cut at a character boundary
     * when it no longer fits. */
    size_t length = strlen(text);
    char copy[4096];
    if (length >= sizeof copy)
        length = sizeof copy - 1;
    memcpy(copy, text, length);
    copy[length] = '\0';
    int replaced = 0;
    size_t out = 0;
    for (const unsigned char *s = (const unsigned char *)copy; *s;) {
        size_t n = valid_sequence(s);
        const char *piece = n ? (const char *)s : replacement;
        size_t piece_length = n ? n : 3;
        if (out + piece_length >= size)
            break;
        memcpy(text + out, piece, piece_length);
        out += piece_length;
        s += n ? n : 1;
        replaced += n == 0;
    }
    text[out] = '\0';
    return replaced > 0 ? replaced : 1;
}

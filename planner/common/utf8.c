/* utf8.c — UTF-8 decoding and the plain-text form of a character (utf8.h). */
#include "common/utf8.h"

#include <stdio.h>
#include <string.h>

int utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
    if (!n) return 0;
    unsigned char c = s[0];
    if (c < 0x80) return *cp = c, 1;
    int len;
    uint32_t v, min;
    if ((c & 0xe0) == 0xc0) len = 2, v = c & 0x1f, min = 0x80;
    else if ((c & 0xf0) == 0xe0) len = 3, v = c & 0x0f, min = 0x800;
    else if ((c & 0xf8) == 0xf0) len = 4, v = c & 0x07, min = 0x10000;
    else return 0;
    if ((size_t)len > n) return 0;
    for (int i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        v = v << 6 | (s[i] & 0x3f);
    }
    /* the shortest form only, no surrogates, nothing beyond Unicode */
    if (v < min || (v >= 0xd800 && v <= 0xdfff) || v > 0x10ffff) return 0;
    *cp = v;
    return len;
}

/* Every character of s decodes, and with `plain` shows as itself too. */
static bool all_chars(const char *s, bool plain)
{
    size_t n = strlen(s);
    const unsigned char *p = (const unsigned char *)s;
    uint32_t cp;
    while (n) {
        if (*p >= 0x20 && *p < 0x7f) { /* printable ASCII, most of any text: itself */
            p++, n--;
            continue;
        }
        int k = utf8_decode(p, n, &cp);
        if (!k || (plain && !utf8_shows_as_itself(cp))) return false;
        p += k, n -= (size_t)k;
    }
    return true;
}

bool utf8_valid(const char *s) { return all_chars(s, false); }

bool utf8_plain(const char *s) { return all_chars(s, true); }

bool utf8_shows_as_itself(uint32_t cp)
{
    if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0)) return false;
    if (cp == 0x2028 || cp == 0x2029 || cp == 0xfeff) return false;
    if ((cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069)) return false;
    return true;
}

size_t utf8_text_next(const char *s, char out[UTF8_TEXT_MAX + 1])
{
    const unsigned char *p = (const unsigned char *)s;
    if (!*p) return out[0] = 0, 0;
    uint32_t cp;
    /* strnlen: a sequence never runs past the string's end */
    int k = utf8_decode(p, strnlen(s, 4), &cp);
    if (!k) {
        snprintf(out, UTF8_TEXT_MAX + 1, "\\x%02x", *p);
        return 1;
    }
    if (utf8_shows_as_itself(cp)) {
        memcpy(out, s, (size_t)k);
        out[k] = 0;
    } else if (cp == '\n') snprintf(out, UTF8_TEXT_MAX + 1, "\\n");
    else if (cp == '\r') snprintf(out, UTF8_TEXT_MAX + 1, "\\r");
    else if (cp == '\t') snprintf(out, UTF8_TEXT_MAX + 1, "\\t");
    else if (cp < 0x80) snprintf(out, UTF8_TEXT_MAX + 1, "\\x%02x", (unsigned)cp);
    else snprintf(out, UTF8_TEXT_MAX + 1, "\\u{%04x}", (unsigned)cp);
    return (size_t)k;
}

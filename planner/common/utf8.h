/* utf8.h — reading UTF-8 one character at a time, and which characters a line of
 * plain text (a terminal, a comment in an emitted file, an error message) may
 * show as they are. Every writer of a string that came from an input builds on
 * these two questions. */
#ifndef MP_UTF8_H
#define MP_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The character that starts at s, which has n bytes: its length (1 to 4) with
 * its code point in *cp, or 0 when s does not start a well-formed UTF-8
 * sequence (a stray continuation byte, an overlong form, a surrogate, a code
 * point above U+10FFFF, a sequence cut short). */
int utf8_decode(const unsigned char *s, size_t n, uint32_t *cp);

/* Whether every byte of s is well-formed UTF-8. */
bool utf8_valid(const char *s);

/* Whether s is well-formed UTF-8 whose every character shows as itself (below). */
bool utf8_plain(const char *s);

/* Whether a code point shows as itself and keeps a line one line: not a C0 or
 * C1 control, not DEL, not a line or paragraph separator (U+2028, U+2029),
 * not a bidirectional embedding, override or isolate (U+202A-U+202E,
 * U+2066-U+2069: they reorder what a reader sees), not a byte-order mark. */
bool utf8_shows_as_itself(uint32_t cp);

/* The plain-text form of the character at the start of s (NUL-terminated):
 * the character itself when it shows as itself; \n, \r, \t for those; \xNN
 * for another control byte or each byte of a malformed sequence; \u{XXXX}
 * for another code point that does not show as itself. Writes at most
 * UTF8_TEXT_MAX bytes and a NUL into out; returns the bytes of s consumed (0
 * at the end of s). */
enum { UTF8_TEXT_MAX = 12 };
size_t utf8_text_next(const char *s, char out[UTF8_TEXT_MAX + 1]);

#endif

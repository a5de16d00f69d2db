/*
 * cli_error.c — the one-line error every command prints (see memplan.h), and
 * the quoting that keeps a value inside one line.
 */
#include "common/errors.h"
#include "common/utf8.h"

#include <stdio.h>
#include <string.h>

const char *mp_quote(const char *s, char *buf, size_t len)
{
    size_t o = 0;
    if (!s) s = "";
    char piece[UTF8_TEXT_MAX + 1];
    for (size_t k;; s += k) {
        /* printable ASCII with more after it shows as itself, a byte at a time,
         * while "..." would still fit after it (the test below, for n = 1) */
        while ((unsigned char)*s >= 0x20 && (unsigned char)*s < 0x7f && s[1] && o + 4 < len) buf[o++] = *s++;
        if (!(k = utf8_text_next(s, piece))) break;
        size_t n = strlen(piece);
        /* room for this, and for "..." should more follow */
        if (o + n + (s[k] ? 3 : 0) >= len) {
            snprintf(buf + o, len - o, "%s", o + 3 < len ? "..." : "");
            return buf;
        }
        memcpy(buf + o, piece, n);
        o += n;
    }
    buf[o] = 0;
    return buf;
}

void mp_verror(const char *prog, const char *hint, const char *fmt, va_list ap)
{
    /* every message is one line, whatever the values it quotes hold */
    char msg[4096], line[4096];
    vsnprintf(msg, sizeof msg, fmt, ap);
    fprintf(stderr, "%s: error: %s", prog, mp_quote(msg, line, sizeof line));
    if (hint)
        fprintf(stderr, " (%s)", mp_quote(hint, msg, sizeof msg));
    fputc('\n', stderr);
}

/*
 * cli_error.c — the one-line error every command prints (see memplan.h), and
 * the quoting that keeps a value inside one line.
 */
#include "memplan.h"

#include <stdio.h>
#include <string.h>

const char *mp_quote(const char *s, char *buf, size_t len)
{
    size_t o = 0;
    if (!s) s = "";
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        char esc[8];
        if (c == '\n') snprintf(esc, sizeof esc, "\\n");
        else if (c == '\r') snprintf(esc, sizeof esc, "\\r");
        else if (c == '\t') snprintf(esc, sizeof esc, "\\t");
        else if (c < 0x20 || c == 0x7f) snprintf(esc, sizeof esc, "\\x%02x", c);
        else esc[0] = (char)c, esc[1] = 0;
        size_t n = strlen(esc);
        /* room for this, and for "..." should more follow */
        if (o + n + (s[1] ? 3 : 0) >= len) {
            snprintf(buf + o, len - o, "%s", o + 3 < len ? "..." : "");
            return buf;
        }
        memcpy(buf + o, esc, n);
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

/* quote.c — the writers of quote.h. */
#include "emit/quote.h"

#include <stdio.h>
#include <string.h>

#include "common/utf8.h"

/* Python's and YAML's double-quoted strings read these escapes the same way. */
static void put_escaped_ascii(sbuf *b, const char *what, const char *lang, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s);
    char esc[16];
    sbuf_add(b, "\"", 1);
    while (n) {
        uint32_t cp;
        int k = utf8_decode(p, n, &cp);
        if (!k) {
            sbuf_fail(b, "%s '%s' is not UTF-8: it has no form in %s", what, EMIT_TEXT(s), lang);
            return;
        }
        if (cp == '"' || cp == '\\') snprintf(esc, sizeof esc, "\\%c", (char)cp);
        else if (cp == '\n') snprintf(esc, sizeof esc, "\\n");
        else if (cp == '\r') snprintf(esc, sizeof esc, "\\r");
        else if (cp == '\t') snprintf(esc, sizeof esc, "\\t");
        else if (cp >= 0x20 && cp < 0x7f) esc[0] = (char)cp, esc[1] = 0;
        else if (cp < 0x100) snprintf(esc, sizeof esc, "\\x%02x", (unsigned)cp);
        else if (cp < 0x10000) snprintf(esc, sizeof esc, "\\u%04x", (unsigned)cp);
        else snprintf(esc, sizeof esc, "\\U%08x", (unsigned)cp);
        sbuf_add(b, esc, strlen(esc));
        p += k, n -= (size_t)k;
    }
    sbuf_add(b, "\"", 1);
}

void put_python_str(sbuf *b, const char *what, const char *s)
{
    put_escaped_ascii(b, what, "a Python string", s);
}

void put_yaml_str(sbuf *b, const char *what, const char *s)
{
    put_escaped_ascii(b, what, "a YAML string", s);
}

void put_shell_word(sbuf *b, const char *s)
{
    sbuf_add(b, "'", 1);
    for (const char *q; (q = strchr(s, '\'')); s = q + 1) {
        sbuf_add(b, s, (size_t)(q - s));
        sbuf_add(b, "'\\''", 4);
    }
    sbuf_add(b, s, strlen(s));
    sbuf_add(b, "'", 1);
}

/* text.c — the growing buffer every emitter writes into (sbuf.h). */
#include "emit/sbuf.h"
#include "common/errors.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int grow(sbuf *b, size_t need)
{
    if (b->p && b->n + need < b->cap) return 0;
    size_t cap = (b->cap ? b->cap * 2 : 4096) + need;
    char *np = realloc(b->p, cap);
    if (!np) return b->oom = 1, -1;
    b->p = np, b->cap = cap;
    return 0;
}

void sbuf_put(sbuf *b, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int need = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        if (need < 0) { b->oom = 1; return; }
        if (b->p && b->n + (size_t)need < b->cap) { b->n += (size_t)need; return; }
        if (grow(b, (size_t)need)) return;
    }
}

void sbuf_add(sbuf *b, const char *s, size_t n)
{
    if (grow(b, n)) return;
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

void sbuf_fail(sbuf *b, const char *fmt, ...)
{
    if (b->failed) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->err, sizeof b->err, fmt, ap);
    va_end(ap);
    b->failed = 1;
}

int sbuf_finish(sbuf *b, char *err)
{
    if (!b->failed && !b->oom && b->p) return 0;
    if (b->failed) snprintf(err, MP_ERR_LEN, "%s", b->err);
    else snprintf(err, MP_ERR_LEN, "out of memory writing the config");
    free(b->p);
    b->p = NULL;
    return -1;
}

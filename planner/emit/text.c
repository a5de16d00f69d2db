/* text.c — the growing buffer every emitter writes into. */
#include "emitters.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void sbuf_put(sbuf *b, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int need = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        if (need < 0) { b->oom = 1; return; }
        if (b->p && b->n + (size_t)need < b->cap) { b->n += (size_t)need; return; }
        size_t cap = (b->cap ? b->cap * 2 : 4096) + (size_t)need;
        char *np = realloc(b->p, cap);
        if (!np) { b->oom = 1; return; }
        b->p = np, b->cap = cap;
    }
}


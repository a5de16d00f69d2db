/* sbuf.h — the growing text buffer every emitter writes into, and how a
 * writer says that a value cannot be written (the first reason is kept; the
 * emit then writes nothing and the command exits 2 with that line). */
#ifndef MP_SBUF_H
#define MP_SBUF_H

#include <stddef.h>

#include "common/errors.h"

typedef struct sbuf {
    char *p;
    size_t n, cap;
    int oom;                 /* an allocation failed */
    int failed;              /* a value could not be written: why is in err */
    char err[MP_ERR_LEN];
} sbuf;

/* Append printf-formatted text. Arguments are the emitter's own words and
 * numbers: a string that came from an input goes through quote.h. */
void sbuf_put(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Append n bytes as they are. */
void sbuf_add(sbuf *b, const char *s, size_t n);
/* Mark the buffer failed with a one-line reason (the first one stays). */
void sbuf_fail(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* 0 when the text is whole, else -1 with the reason (out of memory, a value
 * without a form) in err; the text is then freed. */
int sbuf_finish(sbuf *b, char *err);

#endif

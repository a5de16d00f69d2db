/*
 * cli_error.c — the one-line error every command prints (see memplan.h).
 */
#include "memplan.h"

#include <stdio.h>

void mp_verror(const char *prog, const char *hint, const char *fmt, va_list ap)
{
    fprintf(stderr, "%s: error: ", prog);
    vfprintf(stderr, fmt, ap);
    if (hint)
        fprintf(stderr, " (%s)", hint);
    fputc('\n', stderr);
}

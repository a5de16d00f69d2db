/*
 * fuzz.h — what every harness checks of a parser's answer (libFuzzer, clang).
 *
 * The library's contract (memplan.h): a function that fails returns -1 and
 * writes one line into `err`. A harness fills err with a byte that is never
 * written (0x7f) before the call; after a rejection fuzz_check_err() demands a
 * message that is NUL-terminated inside the buffer, non-empty, and one line
 * (no '\n'). A broken contract aborts, which libFuzzer reports as a crash with
 * the input saved. Sanitizers (address, undefined, leak) report the rest.
 */
#ifndef MEMPLAN_FUZZ_H
#define MEMPLAN_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_FILL 0x7f

/* Abort with a message naming what broke. */
#define FUZZ_ASSERT(cond, ...)                                  \
    do {                                                        \
        if (!(cond)) {                                          \
            fprintf(stderr, "fuzz contract broken (%s:%d): ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                       \
            fputc('\n', stderr);                                \
            abort();                                            \
        }                                                       \
    } while (0)

static inline void fuzz_clear_err(char *err, size_t cap) { memset(err, FUZZ_FILL, cap); }

/* A rejection's message: NUL-terminated within `cap`, non-empty, one line. */
static inline void fuzz_check_err(const char *what, const char *err, size_t cap)
{
    const char *end = memchr(err, 0, cap);
    FUZZ_ASSERT(end, "%s: error message not written or not NUL-terminated within %zu bytes", what, cap);
    FUZZ_ASSERT(end > err, "%s: empty error message", what);
    FUZZ_ASSERT(!memchr(err, '\n', (size_t)(end - err)), "%s: error message of several lines: %s", what, err);
}

/* The input as a NUL-terminated string (freed by the caller). */
static inline char *fuzz_strndup(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s) abort();
    if (size) memcpy(s, data, size);
    s[size] = 0;
    return s;
}

#endif

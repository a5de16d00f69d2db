/* errors.h — the one-line error every command prints, and the plain-text line
 * every string from an input is shown as. The library's convention: a function
 * that fails returns -1 and writes one line into `err`, MP_ERR_LEN bytes. */
#ifndef MP_ERRORS_H
#define MP_ERRORS_H

#include <stdarg.h>
#include <stddef.h>

#define MP_ERR_LEN 256

/* Print "PROG: error: MESSAGE" and, with a hint, " (HINT)", as one line on stderr:
 * the form every command's errors take (control characters written as mp_quote does). */
void mp_verror(const char *prog, const char *hint, const char *fmt, va_list ap);
/* `s` as one line of plain text (a message, a terminal, a comment): characters that
 * would break the line or change what a reader sees are written as utf8.h's
 * utf8_text_next writes them (\n, \r, \t, \xNN, \u{XXXX}); cut with "..." to fit
 * `len` bytes (at least 4). Returns buf. */
const char *mp_quote(const char *s, char *buf, size_t len);

#endif

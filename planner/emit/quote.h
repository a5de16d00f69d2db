/* quote.h — the one writer per output language for a string that came from an
 * input (a model's name or Hub id, a path): the emitted file's own parser reads
 * back exactly the input's bytes, or the buffer fails with one line naming the
 * value (sbuf_fail) and nothing is written. Everything else an emitter writes
 * is its own words and numbers. JSON is built with jansson, which escapes. */
#ifndef MP_QUOTE_H
#define MP_QUOTE_H

#include "emit/sbuf.h"
#include "common/errors.h"

/* A Python string literal, "...": ASCII only (\", \\, \n, \r, \t, \xNN, \uXXXX,
 * \UXXXXXXXX), so the source stays valid whatever its encoding is read as; a
 * string that is not UTF-8 has no str form and fails (`what` names it). */
void put_python_str(sbuf *b, const char *what, const char *s);
/* A YAML double-quoted scalar, "...", with the same escapes, which YAML 1.1 and
 * 1.2 read alike; not UTF-8 fails likewise. */
void put_yaml_str(sbuf *b, const char *what, const char *s);
/* A shell word, '...' ('\'' for a quote): every byte is literal inside single
 * quotes, so nothing in it expands, splits or runs. */
void put_shell_word(sbuf *b, const char *s);

/* A string inside a plain-text line (a '#' comment, README.txt): mp_quote's
 * form, so no input can end the line or start another. EMIT_TEXT gives it as
 * a temporary string for a format's %s. */
enum { EMIT_TEXT_LEN = 1100 };
#define EMIT_TEXT(s) mp_quote((s), (char[EMIT_TEXT_LEN]){0}, EMIT_TEXT_LEN)

#endif

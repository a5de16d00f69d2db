/*
 * format.h — pure formatters for numbers and bars. Every function writes a
 * NUL-terminated string into `buf` (at least 32 bytes unless told) and
 * returns it; an invalid value is written as "N/A". Units are binary: GiB is
 * 2^30 bytes, MiB 2^20 (the screen says so once).
 *
 *     char b[32];
 *     mtop_fmt_bytes(8.9e9, true, b, sizeof b);          // "8.29 GiB"
 *     mtop_fmt_duration(3723, true, b, sizeof b);        // "1h02m"
 */
#ifndef MTOP_FORMAT_H
#define MTOP_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define MTOP_NA "N/A"

/* Bar segments: the five components, then what no component accounts for
 * (a total above the sum of the parts). */
enum { MTOP_SEG_OTHER = 5, MTOP_NSEG = 6 };
/* One distinct glyph per segment, so bars read without colour: "#=%+.?". */
extern const char mtop_seg_glyph[MTOP_NSEG];
/* "weights" .. "overhead", "unattributed" */
const char *mtop_seg_name(int seg);
#define MTOP_GLYPH_OOM '|'       /* the out-of-memory line: the budget */
#define MTOP_GLYPH_HEADROOM ':'  /* the headroom line: 10% below the budget */

/* "13.04 GiB", "474.7 MiB", "12.0 KiB", "0 B" (as mp_fmt_gib), or "N/A". */
const char *mtop_fmt_bytes(double bytes, bool valid, char *buf, size_t len);
/* Relative error of a measurement against a prediction in percent:
 * (measured - predicted) / predicted * 100. false when either is invalid or
 * the prediction is zero while the measurement is not (0 vs 0 is 0%). */
bool mtop_error_pct(double measured, bool mok, double predicted, bool pok, double *pct);
/* A signed percentage: "+3.2%", "-0.5%", "+0.0%", ">+999%", "<-999%", or "N/A". */
const char *mtop_fmt_pct(double pct, bool valid, char *buf, size_t len);
/* The error as mtop_fmt_pct, or "N/A" when mtop_error_pct is false. */
const char *mtop_fmt_error(double measured, bool mok, double predicted, bool pok, char *buf,
                           size_t len);
/* Seconds: "0s", "59s", "1m05s", "59m59s", "1h02m", "23h59m", "2d03h", or "N/A"
 * (negative or not finite). */
const char *mtop_fmt_duration(double seconds, bool valid, char *buf, size_t len);
/* Tokens per second: "0.0", "42.5", "999.9", "1,234", "1,234,567", or "N/A". */
const char *mtop_fmt_rate(double v, bool valid, char *buf, size_t len);
/* Loss with four decimals: "2.3456", "nan", "inf", or "N/A". */
const char *mtop_fmt_loss(double v, bool valid, char *buf, size_t len);
/* Learning rate: "3.00e-04", or "N/A". */
const char *mtop_fmt_lr(double v, bool valid, char *buf, size_t len);
/* A share in percent with one decimal: "45.6%", or "N/A". */
const char *mtop_fmt_share(double part, double whole, char *buf, size_t len);

/* Fill `width` cells of a stacked bar: cells[i] is the segment drawn there
 * or -1 (empty). Segment k ends at round(sum(seg[0..k]) / scale * width), so
 * the bar's length is exact however the parts round. Negative, NaN or
 * invalid parts count as 0; scale <= 0 gives an empty bar. Returns the
 * number of filled cells. */
int mtop_bar_cells(const double *seg, int nseg, double scale, int width, signed char *cells);
/* The cell of a vertical mark at `value`: the last cell left of the line,
 * 0..width-1; -1 when value > scale or invalid. */
int mtop_bar_mark(double value, double scale, int width);
/* The bar as text (width + 1 bytes): segment glyphs, ' ' for empty cells,
 * and the marks (oom, headroom; -1 for none) drawn over whatever is there,
 * so that the lines stay visible when a bar crosses them. */
char *mtop_bar_text(const signed char *cells, int width, int oom, int headroom, char *out);

/* Copy `s` into at most `width` columns: cut with '~' as the last column when
 * it does not fit (ASCII only). Returns out. */
char *mtop_fit(const char *s, int width, char *out, size_t len);

/* ---------- text from outside: metrics files, file names, commands ----------
 *
 * Hostile input is normal input: whatever a metrics file's header says
 * (model, device, settings, column names), a file's name, a command's name
 * or its log may hold escape sequences meant for the terminal. memtop writes
 * such text only through mtop_clean (the screen, --once text and CSV,
 * messages) or mtop_json_str (--once JSON). */

/* `s` as one line of plain text: a character that would act on a terminal
 * or break the line (C0 and C1 controls, DEL, a byte that is not UTF-8,
 * line separators, bidirectional overrides) is written as mp_quote writes
 * it: \n, \t, \xNN or \u{XXXX}; valid UTF-8 otherwise stays as it is. Cut with
 * "..." to fit `len` bytes (at least 4). Returns buf. */
const char *mtop_clean(const char *s, char *buf, size_t len);
/* Room for n bytes of text, every one escaped (\xNN), and the NUL. */
#define MTOP_CLEAN_LEN(n) (4 * (size_t)(n) + 1)
/* One CSV field (RFC 4180, always quoted) of untrusted text, cleaned first:
 * never a raw control byte, never a line break inside the field. */
void mtop_csv_text(FILE *f, const char *s);

/* A JSON string of untrusted text: as it is when it is valid UTF-8 (JSON
 * escapes it, and mtop_json_text escapes the rest), else cleaned (a JSON
 * string holds no malformed UTF-8). Never NULL unless out of memory. */
typedef struct json_t json_t;
json_t *mtop_json_str(const char *s);

/* The snapshot text of a JSON object: indented, key order kept, one trailing
 * newline. Takes the reference to `o`; the caller frees the result. NULL on
 * failure. Characters JSON allows raw but a terminal acts on (DEL, C1
 * controls, line separators, bidirectional overrides) are written \uXXXX:
 * the text holds no raw control byte. */
char *mtop_json_text(json_t *o);

#endif

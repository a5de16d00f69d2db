/*
 * metrics.h — the memtrain metrics file, format v1: a pure parser.
 *
 * The file is comment lines ('#'), one CSV header row, then one row per
 * optimizer step (see man/memtop.1, METRICS FILE, for the full text):
 *
 *     # memtrain metrics v1
 *     # model: gpt2
 *     # settings: precision=fp32 optimizer=adamw batch=8 seq=1024
 *     # steps: 1000
 *     # budget_bytes: 25769803776
 *     # device: cuda:0
 *     step,time_s,loss,tokens_per_s,lr,cur_weights,...,pred_total,rss_bytes
 *     1,0.84,10.95,9752.4,0.0003,497664,...,,1832140800
 *
 * Columns may come in any order (they are found by their header names),
 * unknown columns are ignored, a missing column or an empty field is N/A.
 * Every value carries a valid bit. The parser never allocates, never does
 * I/O and never fails hard: a line it cannot use is reported as
 * MTOP_LINE_BAD with a reason, and the caller skips and counts it.
 * Counts are range-checked, never truncated: a row's step and byte columns
 * are whole numbers up to MTOP_MAX_COUNT; a header's steps:, budget_bytes:
 * and the settings' rank=, ranks=, zero= likewise, and a bad one (or a
 * setting given twice) is named in meta.bad as well, for the caller to
 * refuse the file.
 *
 *     mtop_parser p;  mtop_row r;
 *     mtop_parser_init(&p);
 *     if (mtop_parse_line(&p, line, len, &r) == MTOP_LINE_ROW) use(&r);
 */
#ifndef MTOP_METRICS_H
#define MTOP_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memtrain/metrics_format.h"
#include "settings/vocabulary.h"

/* The columns are declared once, in the format both sides share; memtop's
 * short names for them: */
enum { MTOP_NCOMP = MP_NCOMP, MTOP_TOTAL = MP_NCOMP, MTOP_NGROUP = MP_METRIC_NGROUP };
enum {
    MTOP_STEP = MP_METRIC_STEP, MTOP_TIME_S = MP_METRIC_TIME_S, MTOP_LOSS = MP_METRIC_LOSS,
    MTOP_TOKENS_PER_S = MP_METRIC_TOKENS_PER_S, MTOP_LR = MP_METRIC_LR, MTOP_CUR0 = MP_METRIC_CUR0,
    MTOP_PEAK0 = MP_METRIC_PEAK0, MTOP_PRED0 = MP_METRIC_PRED0, MTOP_RSS = MP_METRIC_RSS,
    MTOP_NFIELD = MP_NMETRIC
};
#define MTOP_CUR(g) (MTOP_CUR0 + (g))
#define MTOP_PEAK(g) (MTOP_PEAK0 + (g))
#define MTOP_PRED(g) (MTOP_PRED0 + (g))

/* The header name of a field ("step", "cur_weights", "rss_bytes"), or NULL. */
const char *mtop_field_name(int field);
/* The field of a header name, or -1 for an unknown column. */
int mtop_field_find(const char *name, size_t len);
/* True for the byte columns (cur_*, peak_*, pred_*, rss_bytes). */
bool mtop_field_is_bytes(int field);

typedef struct mtop_row {
    double v[MTOP_NFIELD];
    uint32_t valid;                    /* bit f: v[f] was present */
} mtop_row;

static inline bool mtop_row_ok(const mtop_row *r, int f) { return (r->valid >> f) & 1u; }
static inline void mtop_row_set(mtop_row *r, int f, double x)
{
    r->v[f] = x;
    r->valid |= 1u << f;
}

#define MTOP_MAX_COLS 64               /* a wider header is a bad line */
#define MTOP_MAX_KV 128                /* more settings: the header is bad */
#define MTOP_TEXT_LEN 4096             /* a line's longest text: nothing is cut */
/* The largest count memtop reads from a file (steps, bytes): 2^53, the
 * largest whole number a double holds exactly, so no count is rounded. */
#define MTOP_MAX_COUNT 9007199254740992.0

typedef struct mtop_meta {
    bool magic;                        /* saw "# memtrain metrics vN" */
    int version;                       /* N, 0 if not seen */
    char model[MTOP_TEXT_LEN];         /* "" if absent */
    char device[MTOP_TEXT_LEN];
    char settings[MTOP_TEXT_LEN];      /* the raw "key=value ..." text */
    int nkv;                           /* settings split at spaces */
    struct { unsigned short key, val; } kv[MTOP_MAX_KV]; /* offsets into kvtext (mtop_meta_key/_value) */
    char kvtext[MTOP_TEXT_LEN];        /* the settings, each key and value NUL-terminated */
    bool has_steps;
    int64_t steps;                     /* planned optimizer steps */
    bool has_budget;                   /* budget_bytes > 0 */
    double budget_bytes;
    /* a multi-rank run's settings, range-checked: -1 when absent (or bad) */
    int64_t rank, ranks, zero;
    char bad[160];                     /* the header's first bad value, named; "" if none */
} mtop_meta;

typedef enum {
    MTOP_LINE_EMPTY,                   /* blank line: ignored, not counted */
    MTOP_LINE_COMMENT,                 /* '#': meta data updated */
    MTOP_LINE_HEADER,                  /* the column names: mapping updated */
    MTOP_LINE_ROW,                     /* a data row: *row filled */
    MTOP_LINE_BAD,                     /* skipped: see parser.reason */
} mtop_line_kind;

typedef struct mtop_parser {
    mtop_meta meta;
    bool have_header;
    int ncols;
    signed char col[MTOP_MAX_COLS];    /* column -> field, -1 unknown */
    uint32_t present;                  /* bit f: the header has field f */
    long rows, bad, comments;          /* lines seen of each kind */
    char reason[160];                  /* why the last bad line was bad (one line, control characters escaped) */
} mtop_parser;

void mtop_parser_init(mtop_parser *p);
/* One line without its newline (a trailing '\r' is dropped). */
mtop_line_kind mtop_parse_line(mtop_parser *p, const char *line, size_t len, mtop_row *row);

/* Split one CSV record (RFC 4180: commas, "quoted" fields with "" escapes)
 * in place: fields[i] point into `line`, NUL-terminated, quotes removed.
 * Returns the field count, or -1 on an unterminated quote or more than
 * `max` fields. `line` must have room for a NUL at `len`. */
int mtop_csv_split(char *line, size_t len, char **fields, int max);

/* The meta value of a settings key ("batch"), or NULL. */
const char *mtop_meta_setting(const mtop_meta *m, const char *key);
/* Setting i's key and value (0 <= i < nkv). */
const char *mtop_meta_key(const mtop_meta *m, int i);
const char *mtop_meta_value(const mtop_meta *m, int i);

/* A count as files write it: plain decimal digits (no sign, space or
 * exponent) for a whole number in [lo, hi], read without overflow or
 * truncation ("4294967298" is never 2). false for anything else. */
bool mtop_parse_count(const char *s, int64_t lo, int64_t hi, int64_t *out);

#endif

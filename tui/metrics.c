/* metrics.c — the v1 metrics parser: comments, header mapping, rows with valid bits. */
#include "metrics.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *mtop_field_name(int f) { return mp_metric_name(f); }

int mtop_field_find(const char *name, size_t len)
{
    for (int f = 0; f < MTOP_NFIELD; f++)
        if (strlen(mp_metric_name(f)) == len && memcmp(mp_metric_name(f), name, len) == 0) return f;
    return -1;
}

bool mtop_field_is_bytes(int f) { return f >= MTOP_CUR0 && f <= MTOP_RSS; }

void mtop_parser_init(mtop_parser *p)
{
    memset(p, 0, sizeof *p);
    for (int i = 0; i < MTOP_MAX_COLS; i++) p->col[i] = -1;
}

const char *mtop_meta_setting(const mtop_meta *m, const char *key)
{
    for (int i = 0; i < m->nkv; i++)
        if (strcmp(m->kv[i].key, key) == 0) return m->kv[i].val;
    return NULL;
}

int mtop_csv_split(char *line, size_t len, char **fields, int max)
{
    int n = 0;
    size_t i = 0;
    line[len] = 0;
    for (;;) {
        if (n >= max) return -1;
        char *out = line + i;
        fields[n++] = out;
        size_t o = i;
        if (i < len && line[i] == '"') {
            i++;
            for (;;) {
                if (i >= len) return -1; /* unterminated quote */
                if (line[i] == '"') {
                    if (i + 1 < len && line[i + 1] == '"') {
                        line[o++] = '"';
                        i += 2;
                        continue;
                    }
                    i++;
                    break;
                }
                line[o++] = line[i++];
            }
            /* after the closing quote: a comma or the end */
            if (i < len && line[i] != ',') return -1;
        } else {
            while (i < len && line[i] != ',') line[o++] = line[i++];
        }
        bool more = i < len && line[i] == ',';
        line[o] = 0;
        if (!more) return n;
        i++;
    }
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s)) s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1])) s[--n] = 0;
    return s;
}

static bool parse_double(const char *s, double *out)
{
    if (!*s) return false;
    /* Fast path for the byte counts and steps: up to 15 plain digits are exact. */
    uint64_t v = 0;
    int n = 0;
    while (s[n] >= '0' && s[n] <= '9' && n < 16) v = v * 10 + (uint64_t)(s[n++] - '0');
    if (!s[n] && n > 0 && n < 16) {
        *out = (double)v;
        return true;
    }
    errno = 0;
    char *end;
    double d = strtod(s, &end);
    if (end == s || *end || errno == ERANGE) return false;
    *out = d;
    return true;
}

static void copy(char *dst, size_t n, const char *src)
{
    snprintf(dst, n, "%s", src);
}

static void parse_settings(mtop_meta *m, const char *text)
{
    copy(m->settings, sizeof m->settings, text);
    m->nkv = 0;
    char buf[512];
    copy(buf, sizeof buf, text);
    for (char *save = NULL, *tok = strtok_r(buf, " \t", &save); tok && m->nkv < MTOP_MAX_KV;
         tok = strtok_r(NULL, " \t", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq || eq == tok) continue;
        *eq = 0;
        copy(m->kv[m->nkv].key, sizeof m->kv[m->nkv].key, tok);
        copy(m->kv[m->nkv].val, sizeof m->kv[m->nkv].val, eq + 1);
        m->nkv++;
    }
}

static void parse_comment(mtop_parser *p, char *text)
{
    mtop_meta *m = &p->meta;
    text = trim(text);
    int v;
    char rest;
    if (sscanf(text, "memtrain metrics v%d%c", &v, &rest) == 1) {
        m->magic = true;
        m->version = v;
        return;
    }
    char *colon = strchr(text, ':');
    if (!colon) return;
    *colon = 0;
    char *key = trim(text), *val = trim(colon + 1);
    double d;
    if (!strcmp(key, "model")) copy(m->model, sizeof m->model, val);
    else if (!strcmp(key, "device")) copy(m->device, sizeof m->device, val);
    else if (!strcmp(key, "settings")) parse_settings(m, val);
    else if (!strcmp(key, "steps")) {
        if (parse_double(val, &d) && d >= 0 && d == floor(d) && d < 9e15) {
            m->has_steps = d > 0;
            m->steps = (int64_t)d;
        }
    } else if (!strcmp(key, "budget_bytes")) {
        if (parse_double(val, &d) && d >= 0 && isfinite(d)) {
            m->has_budget = d > 0;
            m->budget_bytes = d;
        }
    }
}

static mtop_line_kind bad(mtop_parser *p, const char *why)
{
    p->bad++;
    copy(p->reason, sizeof p->reason, why);
    return MTOP_LINE_BAD;
}

/* A header: no field is a number, and "step" is among them. */
static bool looks_like_header(char **fields, int n)
{
    const char *f0 = fields[0];
    while (*f0 == ' ' || *f0 == '\t') f0++;
    if ((*f0 >= '0' && *f0 <= '9') || *f0 == '.' || *f0 == '-' || *f0 == '+') return false; /* a row: fast path */
    bool step = false;
    for (int i = 0; i < n; i++) {
        char *s = trim(fields[i]);
        double d;
        if (parse_double(s, &d)) return false;
        if (!strcmp(s, "step")) step = true;
    }
    return step;
}

static bool value_ok(int f, double d)
{
    if (f == MTOP_LOSS) return true; /* a diverged run may log nan or inf */
    if (!isfinite(d)) return false;
    if (f == MTOP_STEP) return d >= 0 && d == floor(d) && d < 9e15;
    if (mtop_field_is_bytes(f) || f == MTOP_TOKENS_PER_S || f == MTOP_TIME_S) return d >= 0;
    return true;
}

mtop_line_kind mtop_parse_line(mtop_parser *p, const char *line, size_t len, mtop_row *row)
{
    if (len && line[len - 1] == '\r') len--;
    size_t i = 0;
    while (i < len && (line[i] == ' ' || line[i] == '\t')) i++;
    if (i == len) return MTOP_LINE_EMPTY;
    char buf[4096];
    if (len >= sizeof buf) return bad(p, "line too long");
    memcpy(buf, line, len);
    buf[len] = 0;
    if (memchr(buf, 0, len)) return bad(p, "NUL byte in line");
    if (line[i] == '#') {
        p->comments++;
        parse_comment(p, buf + i + 1);
        return MTOP_LINE_COMMENT;
    }
    char *fields[MTOP_MAX_COLS];
    int n = mtop_csv_split(buf, len, fields, MTOP_MAX_COLS);
    if (n < 0) return bad(p, "not a CSV record (unterminated quote or too many fields)");
    if (looks_like_header(fields, n)) {
        p->have_header = true;
        p->ncols = n;
        p->present = 0;
        for (int c = 0; c < n; c++) {
            int f = mtop_field_find(fields[c], strlen(fields[c]));
            if (f >= 0 && (p->present >> f) & 1u) f = -1; /* a repeated name: the first wins */
            p->col[c] = (signed char)f;
            if (f >= 0) p->present |= 1u << f;
        }
        return MTOP_LINE_HEADER;
    }
    if (!p->have_header) return bad(p, "a row before the header");
    if (n != p->ncols) {
        char why[96];
        snprintf(why, sizeof why, "%d fields where the header has %d", n, p->ncols);
        return bad(p, why);
    }
    mtop_row r;
    memset(&r, 0, sizeof r);
    for (int c = 0; c < n; c++) {
        int f = p->col[c];
        if (f < 0) continue;
        char *s = trim(fields[c]);
        if (!*s) continue; /* empty: N/A */
        double d;
        if (!parse_double(s, &d) || !value_ok(f, d)) {
            char why[96];
            snprintf(why, sizeof why, "bad value '%.24s' for %s", s, mp_metric_name(f));
            return bad(p, why);
        }
        mtop_row_set(&r, f, d);
    }
    if (!mtop_row_ok(&r, MTOP_STEP)) return bad(p, "no step number");
    p->rows++;
    *row = r;
    return MTOP_LINE_ROW;
}

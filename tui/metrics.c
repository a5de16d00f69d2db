/* metrics.c — the v1 metrics parser: comments, header mapping, rows with valid bits. */
#include "metrics.h"
#include "common/errors.h"
#include "settings/options.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
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
    p->meta.rank = p->meta.ranks = p->meta.zero = -1;
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

bool mtop_parse_count(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    if (!s || !*s || hi < 0) return false;
    int64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return false;
        int d = *s - '0';
        /* v * 10 + d <= hi, asked without computing it: no overflow, no wrap */
        if (d > hi || v > (hi - d) / 10) return false;
        v = v * 10 + d;
    }
    if (v < lo) return false;
    *out = v;
    return true;
}

/* A bad value: "WHAT 'VALUE': RULE" into the reason (the value quoted as
 * mp_quote writes it, so the reason is one plain line), and into the
 * header's `bad` when it came from the header and is its first. */
static void name_bad(mtop_parser *p, const char *what, const char *value, const char *rule, bool header)
{
    char q[48];
    size_t n = strlen(what);
    /* a setting reads as written (ranks=4294967298), any other value quoted */
    snprintf(p->reason, sizeof p->reason, n && what[n - 1] == '=' ? "%s%s: %s" : "%s '%s': %s", what,
             mp_quote(value, q, sizeof q), rule);
    if (header && !p->meta.bad[0]) copy(p->meta.bad, sizeof p->meta.bad, p->reason);
}

/* The settings a multi-rank run is told apart by, and their ranges (the ZeRO
 * stage's is its settings row's). */
static const struct {
    const char *key;
    int64_t lo, hi;
    const char *rule;
} count_settings[] = {
    {"rank", 0, INT_MAX - 1, "not a rank (a whole number, 0 to 2147483646)"},
    {"ranks", 1, INT_MAX, "not a number of ranks (a whole number, 1 to 2147483647)"},
    {"zero", -1, -1, "not a ZeRO stage (%lld to %lld)"},
};

/* A count setting's range: its own, or its settings row's (lo < 0). */
static void count_range(size_t i, int64_t *lo, int64_t *hi, char *rule, size_t len)
{
    *lo = count_settings[i].lo, *hi = count_settings[i].hi;
    if (*lo < 0) {
        const mp_opt *row = mp_opt_find(mp_settings_opts, count_settings[i].key);
        *lo = (int64_t)row->lo, *hi = (int64_t)row->hi;
    }
    snprintf(rule, len, count_settings[i].rule, (long long)*lo, (long long)*hi);
}

const char *mtop_meta_key(const mtop_meta *m, int i) { return m->kvtext + m->kv[i].key; }
const char *mtop_meta_value(const mtop_meta *m, int i) { return m->kvtext + m->kv[i].val; }

const char *mtop_meta_setting(const mtop_meta *m, const char *key)
{
    for (int i = 0; i < m->nkv; i++)
        if (strcmp(mtop_meta_key(m, i), key) == 0) return mtop_meta_value(m, i);
    return NULL;
}

/* "key=value ..." split at spaces and tabs; tokens without a key are not
 * settings. False (with the reason named) for a setting given twice, too
 * many settings, or a count setting out of its range. */
static bool parse_settings(mtop_parser *p, const char *text)
{
    mtop_meta *m = &p->meta;
    copy(m->settings, sizeof m->settings, text);
    copy(m->kvtext, sizeof m->kvtext, text);
    m->nkv = 0;
    m->rank = m->ranks = m->zero = -1;
    /* the words as the settings' one reader splits them (settings/options.h); a word
     * without a key is not a setting */
    mp_kv_reader r;
    mp_kv_start(&r, m->kvtext, strlen(m->kvtext), MP_KV_WORDS);
    const char *tok, *val;
    char why[MP_OPT_ERR_LEN];
    while (mp_kv_next(&r, &tok, &val, why) == 1) {
        if (!val) continue;
        if (mtop_meta_setting(m, tok)) { /* which one would a reader take? */
            name_bad(p, "settings", tok, "the same setting twice", true);
            return false;
        }
        if (m->nkv == MTOP_MAX_KV) {
            name_bad(p, "settings", tok, "more than 128 settings", true);
            return false;
        }
        m->kv[m->nkv].key = (unsigned short)(tok - m->kvtext);
        m->kv[m->nkv].val = (unsigned short)(val - m->kvtext);
        m->nkv++;
        for (size_t i = 0; i < sizeof count_settings / sizeof *count_settings; i++) {
            if (strcmp(tok, count_settings[i].key) != 0) continue;
            int64_t x, lo, hi;
            char rule[80];
            count_range(i, &lo, &hi, rule, sizeof rule);
            if (!mtop_parse_count(val, lo, hi, &x)) {
                char what[16];
                snprintf(what, sizeof what, "%s=", tok);
                name_bad(p, what, val, rule, true);
                return false;
            }
            *(i == 0 ? &m->rank : i == 1 ? &m->ranks : &m->zero) = x;
        }
    }
    if (m->rank >= 0 && m->ranks >= 0 && m->rank >= m->ranks) {
        char rule[64], v[24];
        snprintf(rule, sizeof rule, "not below ranks=%lld", (long long)m->ranks);
        snprintf(v, sizeof v, "%lld", (long long)m->rank);
        name_bad(p, "rank=", v, rule, true);
        m->rank = -1;
        return false;
    }
    return true;
}

#define MAX_COUNT_RULE "(a whole number, 0 to 9007199254740992)"

/* A comment line's text; false when a value in it is bad (reason named). */
static bool parse_comment(mtop_parser *p, char *text)
{
    mtop_meta *m = &p->meta;
    text = trim(text);
    static const char magic[] = "memtrain metrics v";
    if (!strncmp(text, magic, sizeof magic - 1)) {
        int64_t v;
        if (!mtop_parse_count(text + sizeof magic - 1, 0, INT_MAX, &v)) {
            name_bad(p, "format version", text + sizeof magic - 1, "not a version number", true);
            return false;
        }
        m->magic = true;
        m->version = (int)v;
        return true;
    }
    char *colon = strchr(text, ':');
    if (!colon) return true;
    *colon = 0;
    char *key = trim(text), *val = trim(colon + 1);
    int64_t n;
    if (!strcmp(key, "model")) copy(m->model, sizeof m->model, val);
    else if (!strcmp(key, "device")) copy(m->device, sizeof m->device, val);
    else if (!strcmp(key, "settings")) return parse_settings(p, val);
    else if (!strcmp(key, "steps")) {
        if (!mtop_parse_count(val, 0, (int64_t)MTOP_MAX_COUNT, &n)) {
            name_bad(p, "steps", val, "not a number of steps " MAX_COUNT_RULE, true);
            return false;
        }
        m->has_steps = n > 0;
        m->steps = n;
    } else if (!strcmp(key, "budget_bytes")) {
        if (!mtop_parse_count(val, 0, (int64_t)MTOP_MAX_COUNT, &n)) {
            name_bad(p, "budget_bytes", val, "not a byte count " MAX_COUNT_RULE, true);
            return false;
        }
        m->has_budget = n > 0;
        m->budget_bytes = (double)n;
    }
    return true;
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

/* Why `d` cannot be a value of field f, or NULL; for the counts (step and
 * bytes, read by mtop_parse_count) the rule they break. */
static const char *value_rule(int f, double d)
{
    if (f == MTOP_LOSS) return NULL; /* a diverged run may log nan or inf */
    if (f == MTOP_STEP) return "not a step number " MAX_COUNT_RULE;
    if (mtop_field_is_bytes(f)) return "not a byte count " MAX_COUNT_RULE;
    if (!isfinite(d)) return "not a finite number";
    if ((f == MTOP_TOKENS_PER_S || f == MTOP_TIME_S) && d < 0) return "negative";
    return NULL;
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
        if (!parse_comment(p, buf + i + 1)) {
            p->bad++;
            return MTOP_LINE_BAD;
        }
        p->comments++;
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
        const char *rule;
        if (f == MTOP_STEP || mtop_field_is_bytes(f)) { /* counts: digits, read exactly (no 2^53 + 1 rounded) */
            int64_t x = 0;
            rule = mtop_parse_count(s, 0, (int64_t)MTOP_MAX_COUNT, &x) ? NULL : value_rule(f, -1);
            d = (double)x;
        } else {
            rule = parse_double(s, &d) ? value_rule(f, d) : "not a number";
        }
        if (rule) {
            name_bad(p, mp_metric_name(f), s, rule, false);
            p->bad++;
            return MTOP_LINE_BAD;
        }
        mtop_row_set(&r, f, d);
    }
    if (!mtop_row_ok(&r, MTOP_STEP)) return bad(p, "no step number");
    p->rows++;
    *row = r;
    return MTOP_LINE_ROW;
}

/* options.c — the option engine: a value read as its row says, getopt_long's table built
 * from rows, and the help written from them (see options.h). */
#include "settings/options.h"
#include "common/errors.h"
#include "common/units.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Messages quote the value as given, on one line (mp_quote). */
#define QUOTED(s) mp_quote(s, quoted, sizeof quoted)

/* ---------- vocabularies ---------- */

static const char *vocab_name(const mp_vocab *v, int i)
{
    return v->names ? v->names[i] : v->name(i);
}

/* v's names from `from` on, then the first ones, between `sep` (and `last` before the last). */
static const char *join(const mp_vocab *v, int from, const char *sep, const char *last, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = 0;
    for (int k = 0; k < v->n && used < len; k++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s", k == 0 ? "" : k == v->n - 1 ? last : sep,
                                 vocab_name(v, (from + k) % v->n));
    return buf;
}

const char *mp_opt_choices(const mp_opt *o, const mp_vocab *v, char *buf, size_t len)
{
    return join(v, o->list_from, ", ", o->or_last ? " or " : ", ", buf, len);
}

int mp_opt_choose(const mp_opt *o, const mp_vocab *v, const char *value, char *err)
{
    int i = -1;
    if (v->parse) {
        if (v->parse(value, &i)) i = -1;
    } else {
        for (int k = 0; k < v->n && i < 0; k++)
            if (!strcmp(value, vocab_name(v, k))) i = k;
    }
    if (i < 0) {
        char list[512], quoted[1024];
        snprintf(err, MP_OPT_ERR_LEN, "invalid value '%s' for --%s (%s)", QUOTED(value), o->name,
                 mp_opt_choices(o, v, list, sizeof list));
    }
    return i;
}

/* ---------- one value into its field ---------- */

/* A field of any integer width the rows use: int64_t, int (enums too) or bool. */
static void store_int(void *field, size_t size, int64_t v)
{
    if (size == sizeof(int64_t)) {
        memcpy(field, &v, size);
    } else if (size == sizeof(int)) {
        int i = (int)v;
        memcpy(field, &i, size);
    } else {
        bool b = v != 0;
        memcpy(field, &b, sizeof b);
    }
}

static void store_real(void *field, size_t size, double v)
{
    if (size == sizeof(double)) memcpy(field, &v, size);
    else store_int(field, size, (int64_t)v);
}

/* A number from lo to hi, whole when `integer`. */
static int read_number(const mp_opt *o, const char *v, bool integer, double *out, char *err)
{
    char *end, quoted[1024];
    errno = 0;
    double d = strtod(v, &end);
    bool bad = !*v || *end || errno || !isfinite(d) || d < o->lo || d > o->hi;
    if (integer && (bad || d != floor(d))) {
        snprintf(err, MP_OPT_ERR_LEN, "invalid value '%s' for --%s (an integer from %lld to %lld)", QUOTED(v), o->name,
                 (long long)o->lo, (long long)o->hi);
        return -1;
    }
    if (bad) {
        snprintf(err, MP_OPT_ERR_LEN, "invalid value '%s' for --%s (%g to %g)", QUOTED(v), o->name, o->lo, o->hi);
        return -1;
    }
    *out = d;
    return 0;
}

/* 0 to 0.99, or a percentage. */
static int read_fraction(const mp_opt *o, const char *v, double *out, char *err)
{
    char *end, quoted[1024];
    errno = 0;
    double h = strtod(v, &end);
    if (end != v && *end == '%' && !end[1]) h /= 100, end++;
    if (end == v || *end || errno || !(h >= 0 && h < 1)) {
        snprintf(err, MP_OPT_ERR_LEN, "invalid value '%s' for --%s (0 to 0.99, or 0%% to 99%%)", QUOTED(v), o->name);
        return -1;
    }
    *out = h;
    return 0;
}

static int read_bool(const mp_opt *o, const char *v, int64_t *out, char *err)
{
    if (!strcmp(v, "1") || !strcmp(v, "yes") || !strcmp(v, "true")) *out = 1;
    else if (!strcmp(v, "0") || !strcmp(v, "no") || !strcmp(v, "false")) *out = 0;
    else {
        char quoted[1024];
        snprintf(err, MP_OPT_ERR_LEN, "invalid value '%s' for --%s (0 or 1)", QUOTED(v), o->name);
        return -1;
    }
    return 0;
}

/* A size or a count, in the library's words, then the flag's. */
static int read_quantity(const mp_opt *o, const char *v, double *out, char *err)
{
    char why[MP_ERR_LEN];
    int rc = o->kind == MP_OPT_SIZE ? mp_parse_size(v, out, NULL, why) : mp_parse_count(v, out, why);
    if (rc) snprintf(err, MP_OPT_ERR_LEN, "%s for --%s", why, o->name);
    return rc;
}

int mp_opt_read(const mp_opt *o, const char *value, void *base, unsigned *pinned, char *err)
{
    void *field = (char *)base + o->offset;
    double d = 0;
    int64_t i = 0;
    int rc = 0;
    switch (o->kind) {
    case MP_OPT_FLAG: store_int(field, o->size, 1); break;
    case MP_OPT_STRING:
        if (o->vocab && mp_opt_choose(o, o->vocab, value, err) < 0) return -1;
        memcpy(field, &value, sizeof value);
        break;
    case MP_OPT_ENUM:
        if ((rc = mp_opt_choose(o, o->vocab, value, err)) >= 0) store_int(field, o->size, rc), rc = 0;
        break;
    case MP_OPT_INT:
        if (!(rc = read_number(o, value, true, &d, err))) store_int(field, o->size, (int64_t)d);
        break;
    case MP_OPT_REAL:
        if (!(rc = read_number(o, value, false, &d, err))) store_real(field, o->size, d);
        break;
    case MP_OPT_FLOAT:
        if (!(rc = read_number(o, value, false, &d, err))) {
            float f = (float)d;
            memcpy(field, &f, sizeof f);
        }
        break;
    case MP_OPT_FRACTION:
        if (!(rc = read_fraction(o, value, &d, err))) store_real(field, o->size, d);
        break;
    case MP_OPT_SIZE:
    case MP_OPT_COUNT:
        if (!(rc = read_quantity(o, value, &d, err))) store_real(field, o->size, d);
        break;
    case MP_OPT_BOOL:
        if (!(rc = read_bool(o, value, &i, err))) store_int(field, o->size, i);
        break;
    case MP_OPT_CUSTOM: rc = o->read(o, value, base, err); break;
    }
    if (rc) return -1;
    if (pinned) *pinned |= o->pin;
    return 0;
}

const mp_opt *mp_opt_find(const mp_opt *rows, const char *name)
{
    for (; rows->name; rows++)
        if (!strcmp(rows->name, name)) return rows;
    return NULL;
}

void mp_opt_copy(const mp_opt *o, void *dst, const void *src)
{
    memcpy((char *)dst + o->offset, (const char *)src + o->offset, o->size);
}

/* ---------- parsing argv ---------- */

static bool takes_value(const mp_opt *o) { return o->kind != MP_OPT_FLAG; }

/* The groups' rows in order, each name once (the first row of a name counts). */
static void collect(mp_opt_parser *p, const mp_opt_group *g, int ngroups)
{
    memset(p, 0, sizeof *p);
    for (int k = 0; k < ngroups; k++) {
        int count = 0;
        if (g[k].only) while (g[k].only[count]) count++;
        else while (g[k].rows[count].name) count++;
        for (int j = 0; j < count && p->n < MP_OPT_MAX; j++) {
            const mp_opt *o = g[k].only ? mp_opt_find(g[k].rows, g[k].only[j]) : &g[k].rows[j];
            bool seen = !o;
            for (int i = 0; i < p->n && !seen; i++) seen = !strcmp(p->rows[i]->name, o->name);
            if (seen) continue;
            p->rows[p->n] = o;
            p->bases[p->n] = g[k].base;
            p->group[p->n++] = k;
        }
    }
}

void mp_opt_start(mp_opt_parser *p, const mp_opt_group *g, int ngroups, unsigned *pinned, int argc,
                  char **argv)
{
    collect(p, g, ngroups);
    char *s = p->shortopts;
    *s++ = ':'; /* a missing value returns ':' */
    for (int i = 0; i < p->n; i++) {
        const mp_opt *o = p->rows[i];
        p->longopts[i] = (struct option){o->name, takes_value(o) ? required_argument : no_argument, NULL,
                                         o->short_name ? o->short_name : 256 + i};
        if (o->short_name) {
            *s++ = o->short_name;
            if (takes_value(o)) *s++ = ':';
        }
    }
    p->argc = argc;
    p->argv = argv;
    p->pinned = pinned;
    optind = 1;
    opterr = 0;
}

int mp_opt_next(mp_opt_parser *p, const mp_opt **row, char *err)
{
    int c = getopt_long(p->argc, p->argv, p->shortopts, p->longopts, NULL);
    if (c == -1) return MP_OPT_DONE;
    char quoted[1024];
    if (c == ':') {
        snprintf(err, MP_OPT_ERR_LEN, "option '%s' needs a value", QUOTED(p->argv[optind - 1]));
        return MP_OPT_BAD;
    }
    int i = c >= 256 ? c - 256 : -1;
    for (int k = 0; k < p->n && i < 0 && c != '?'; k++)
        if (p->rows[k]->short_name == c) i = k;
    if (i < 0 || i >= p->n) {
        snprintf(err, MP_OPT_ERR_LEN, "unknown option '%s'", QUOTED(p->argv[optind - 1]));
        return MP_OPT_UNKNOWN;
    }
    if (mp_opt_read(p->rows[i], optarg, p->bases[i], p->pinned, err)) return MP_OPT_BAD;
    p->given[i] = true;
    *row = p->rows[i];
    return MP_OPT_GIVEN;
}

bool mp_opt_given(const mp_opt_parser *p, const char *name)
{
    for (int i = 0; i < p->n; i++)
        if (!strcmp(p->rows[i]->name, name)) return p->given[i];
    return false;
}

/* ---------- help ---------- */

/* The value as help names it: ARG, else the choices ("a|b"), the range ("0..3") or 0|1. */
static const char *arg_text(const mp_opt *o, char *buf, size_t len)
{
    if (o->arg) return o->arg;
    if (o->vocab) return join(o->vocab, o->list_from, "|", "|", buf, len);
    if (o->kind == MP_OPT_INT) snprintf(buf, len, "%lld..%lld", (long long)o->lo, (long long)o->hi);
    else snprintf(buf, len, o->kind == MP_OPT_BOOL ? "0|1" : "VALUE");
    return buf;
}

/* "--name ARG" (with "-x, " before it for a short name) */
static const char *flag_text(const mp_opt *o, char *buf, size_t len)
{
    char arg[512], dash[8] = "";
    if (o->short_name) snprintf(dash, sizeof dash, "-%c, ", o->short_name);
    if (takes_value(o)) snprintf(buf, len, "%s--%s %s", dash, o->name, arg_text(o, arg, sizeof arg));
    else snprintf(buf, len, "%s--%s", dash, o->name);
    return buf;
}

/* Words from column `col` on, broken before `width` (0: only at '\n') and indented. */
static void wrap(FILE *f, const char *s, int col, int indent, int width)
{
    while (*s) {
        if (*s == '\n') {
            fprintf(f, "\n%*s", indent, "");
            col = indent;
            s++;
            continue;
        }
        int sp = (int)strspn(s, " "), w = (int)strcspn(s + sp, " \n");
        if (width && col > indent && col + sp + w > width) {
            fprintf(f, "\n%*s", indent, "");
            col = indent;
        } else {
            fprintf(f, "%.*s", sp, s);
            col += sp;
        }
        fprintf(f, "%.*s", w, s + sp);
        col += w;
        s += sp + w;
    }
    fputc('\n', f);
}

#define HELP_COLUMN 24

static void help_row(FILE *f, const mp_opt *o, int width)
{
    char left[600], text[1200], list[512];
    int n = fprintf(f, "  %s", flag_text(o, left, sizeof left));
    if (n > HELP_COLUMN - 2) fprintf(f, "\n%*s", HELP_COLUMN, "");
    else fprintf(f, "%*s", HELP_COLUMN - n, "");
    if (o->vocab && o->arg) snprintf(text, sizeof text, "%s (%s)", o->help, mp_opt_choices(o, o->vocab, list, sizeof list));
    else snprintf(text, sizeof text, "%s", o->help);
    wrap(f, text, HELP_COLUMN, HELP_COLUMN, width);
}

void mp_opt_help(FILE *f, const mp_opt_group *g, int ngroups, int width)
{
    mp_opt_parser p;
    collect(&p, g, ngroups);
    for (int i = 0; i < p.n; i++) {
        if ((i == 0 || p.group[i] != p.group[i - 1]) && g[p.group[i]].title) fprintf(f, "%s\n", g[p.group[i]].title);
        if (p.rows[i]->help) help_row(f, p.rows[i], width);
    }
}

void mp_opt_synopsis(FILE *f, const mp_opt_group *g, const char *sep, int width)
{
    mp_opt_parser p;
    collect(&p, g, 1);
    int col = 0;
    for (int i = 0; i < p.n; i++) {
        if (!p.rows[i]->help) continue;
        char item[600];
        int len = (int)strlen(flag_text(p.rows[i], item, sizeof item));
        if (col && col + (int)strlen(sep) + len > width) fputc('\n', f), col = 0;
        col += fprintf(f, "%s", col ? sep : "  ");
        col += fprintf(f, "%s", item);
    }
    if (col) fputc('\n', f);
}

/* options.c — the option engine: a value read as its row says, getopt_long's table built
 * from rows, and the help written from them (see options.h). */
#include "settings/options.h"
#include "common/errors.h"
#include "common/units.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
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

/* ---------- the names nearest to a mistyped one ---------- */

/* A letter as names are compared: case ignored, '_' read as '-' (transformers' lora_rank
 * is --lora-rank). */
static int fold(char c) { return c == '_' ? '-' : tolower((unsigned char)c); }

/* Edits from a to b (insertions, deletions, changes and swaps of neighbours); 99 for
 * names longer than 47 bytes, never near anything. */
static int distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 47 || lb > 47) return 99;
    int d[48][48];
    for (size_t i = 0; i <= la; i++) d[i][0] = (int)i;
    for (size_t j = 0; j <= lb; j++) d[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            int v = d[i - 1][j - 1] + (fold(a[i - 1]) != fold(b[j - 1]));
            if (d[i - 1][j] + 1 < v) v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v) v = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && fold(a[i - 1]) == fold(b[j - 2]) && fold(a[i - 2]) == fold(b[j - 1]) &&
                d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    return d[la][lb];
}

/* How near `cand` is to what was typed (n bytes), lower nearer: 0 the same but for case
 * and '_'; a name it begins (--optim for --optimizer) 100 and a point for each letter
 * more; else 1000 an edit, up to a third of its length (at least 1); -1 not near. */
enum { NEAR_BEGINS = 100, NEAR_EDIT = 1000 };
static int nearness(const char *typed, size_t n, const char *cand)
{
    size_t k = 0;
    while (k < n && cand[k] && fold(typed[k]) == fold(cand[k])) k++;
    if (k == n) return cand[k] ? NEAR_BEGINS + (int)(strlen(cand + k) < 99 ? strlen(cand + k) : 99) : 0;
    char t[48];
    if (n >= sizeof t) return -1;
    memcpy(t, typed, n);
    t[n] = 0;
    int d = distance(t, cand), most = n / 3 > 1 ? (int)(n / 3) : 1;
    return d <= most ? d * NEAR_EDIT : -1;
}

/* The nearest names seen, the best three, in the order they came (ties) or nearer first. */
enum { NEAR_MAX = 3 };
typedef struct near_names {
    char text[NEAR_MAX][96];
    int d[NEAR_MAX], n;
} near_names;

static void near_add(near_names *nn, int d, const char *fmt, const char *a, const char *b)
{
    if (d < 0) return;
    int at = nn->n;
    while (at > 0 && nn->d[at - 1] > d) at--;
    if (at == NEAR_MAX) return;
    for (int k = nn->n < NEAR_MAX ? nn->n : NEAR_MAX - 1; k > at; k--) {
        nn->d[k] = nn->d[k - 1];
        memcpy(nn->text[k], nn->text[k - 1], sizeof nn->text[k]);
    }
    nn->d[at] = d;
    snprintf(nn->text[at], sizeof nn->text[at], fmt, a, b);
    if (nn->n < NEAR_MAX) nn->n++;
}

/* "; did you mean a, b or c?" (the nearest ones only), or "" */
static const char *near_text(const near_names *nn, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = 0;
    int shown = 0;
    while (shown < nn->n && nn->d[shown] == nn->d[0]) shown++;
    for (int k = 0; k < shown && o < len; k++)
        o += (size_t)snprintf(buf + o, len - o, "%s%s", k == 0 ? "; did you mean " : k == shown - 1 ? " or " : ", ",
                              nn->text[k]);
    if (shown && o < len) snprintf(buf + o, len - o, "?");
    return buf;
}

/* Each of a blank-separated list of spellings, in turn. */
static const char *next_spelling(const char **list, char *one, size_t len)
{
    const char *a = *list;
    while (a && *a == ' ') a++;
    if (!a || !*a) return NULL;
    size_t n = strcspn(a, " ");
    snprintf(one, len, "%.*s", (int)n, a);
    *list = a + n;
    return one;
}

/* v's spellings nearest to `typed`: names, and aliases with their name. */
static void near_values(const mp_vocab *v, const char *typed, near_names *nn)
{
    char one[64];
    size_t n = strlen(typed);
    for (int k = 0; k < v->n; k++) {
        const char *name = vocab_name(v, k);
        near_add(nn, nearness(typed, n, name), "%s%s", name, "");
        const char *list = mp_vocab_aliases(v, k);
        while (next_spelling(&list, one, sizeof one)) near_add(nn, nearness(typed, n, one), "%s (%s)", one, name);
    }
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
        char list[512], quoted[1024], mean[400];
        near_names nn = {0};
        const char *refused = mp_vocab_refusal(v, value);
        if (!refused) near_values(v, value, &nn);
        snprintf(err, MP_OPT_ERR_LEN, "invalid value '%s' for --%s%s%s (%s)%s", QUOTED(value), o->name,
                 refused ? ": " : "", refused ? refused : "", mp_opt_choices(o, v, list, sizeof list),
                 near_text(&nn, mean, sizeof mean));
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
    case MP_OPT_FLAG: store_int(field, o->size, o->set ? o->set : 1); break;
    case MP_OPT_STRING:
        if (o->vocab && mp_opt_choose(o, o->vocab, value, err) < 0) return -1;
        memcpy(field, &value, sizeof value);
        break;
    case MP_OPT_ENUM:
        if ((rc = mp_opt_choose(o, o->vocab, value, err)) >= 0) {
            store_int(field, o->size, rc), rc = 0;
            if (o->also) o->also(o, value, base);
        }
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

/* Whether a row's name is a whole word at either end of what was typed, as
 * transformers' --gradient_checkpointing ends in --checkpointing and --zero_stage
 * begins with --zero. */
static bool word_of(const char *typed, size_t n, const char *name)
{
    size_t k = strlen(name);
    if (k < 3 || k + 1 >= n) return false;
    bool at_end = fold(typed[n - k - 1]) == '-', at_start = fold(typed[k]) == '-';
    for (size_t i = 0; i < k && (at_end || at_start); i++) {
        at_end = at_end && fold(typed[n - k + i]) == fold(name[i]);
        at_start = at_start && fold(typed[i]) == fold(name[i]);
    }
    return at_end || at_start;
}

/* "; did you mean --optimizer?" for a flag no row has: the rows it begins (getopt_long
 * takes a flag's unique beginning, so these are several), else an enum row that takes it
 * as a value (--bf16: --precision bf16), else the rows a few edits away; "" when none. */
static const char *near_flags(const mp_opt_parser *p, const char *arg, char *buf, size_t len)
{
    buf[0] = 0;
    if (strncmp(arg, "--", 2) || !arg[2]) return buf;
    const char *typed = arg + 2;
    size_t n = strcspn(typed, "=");
    near_names begun = {0}, valued = {0}, edited = {0};
    for (int i = 0; i < p->n; i++) {
        const mp_opt *o = p->rows[i];
        if (!o->help) continue;
        char flag[64];
        snprintf(flag, sizeof flag, "--%s", o->name);
        int d = nearness(typed, n, o->name);
        if (d > 0 && d < NEAR_EDIT) near_add(&begun, d, "%s%s", flag, "");
        else if (d >= 0) near_add(&edited, d, "%s%s", flag, "");
        else if (word_of(typed, n, o->name)) near_add(&edited, NEAR_EDIT + NEAR_EDIT / 2, "%s%s", flag, "");
        if (o->vocab && (o->kind == MP_OPT_ENUM || o->kind == MP_OPT_STRING) && n < 48) {
            char word[48];
            snprintf(word, sizeof word, "%.*s", (int)n, typed);
            int v;
            bool takes = o->vocab->parse ? !o->vocab->parse(word, &v) : false;
            for (int k = 0; k < o->vocab->n && !takes && !o->vocab->parse; k++) takes = !strcmp(word, vocab_name(o->vocab, k));
            if (takes) near_add(&valued, 0, "%s %s", flag, word);
        }
    }
    /* the beginnings all shown, the shortest first */
    for (int k = 0; k < begun.n; k++) begun.d[k] = 0;
    return near_text(begun.n ? &begun : valued.n ? &valued : &edited, buf, len);
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
        char mean[400];
        snprintf(err, MP_OPT_ERR_LEN, "unknown option '%s'%s", QUOTED(p->argv[optind - 1]),
                 near_flags(p, p->argv[optind - 1], mean, sizeof mean));
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

/* "; also bf16=amp-bf16, adamw_torch|adamw_hf=adamw" (the vocabulary's other spellings), or "" */
static const char *alias_text(const mp_vocab *v, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = 0;
    for (int k = 0; v && k < v->n && o < len; k++) {
        const char *list = mp_vocab_aliases(v, k);
        char one[64];
        bool first = true;
        while (next_spelling(&list, one, sizeof one) && o < len) {
            o += (size_t)snprintf(buf + o, len - o, "%s%s", first ? (o ? ", " : "; also ") : "|", one);
            first = false;
        }
        if (!first && o < len) o += (size_t)snprintf(buf + o, len - o, "=%s", vocab_name(v, k));
    }
    return buf;
}

static void help_row(FILE *f, const mp_opt *o, int width)
{
    char left[600], text[2400], list[512], also[1024];
    int n = fprintf(f, "  %s", flag_text(o, left, sizeof left));
    if (n > HELP_COLUMN - 2) fprintf(f, "\n%*s", HELP_COLUMN, "");
    else fprintf(f, "%*s", HELP_COLUMN - n, "");
    alias_text(o->vocab, also, sizeof also);
    if (o->vocab && o->arg)
        snprintf(text, sizeof text, "%s (%s%s)", o->help, mp_opt_choices(o, o->vocab, list, sizeof list), also);
    else if (also[0]) snprintf(text, sizeof text, "%s (also %s)", o->help, also + strlen("; also "));
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

/* ---------- settings as text: one writer, one reader ---------- */

/* The fewest significant digits that read back as the same value. */
static const char *shortest_double(double v, char *buf, size_t len)
{
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, len, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) break;
    }
    return buf;
}
/* (read as the reader reads a float row: strtod, then to float) */
static const char *shortest_float(float v, char *buf, size_t len)
{
    for (int prec = 1; prec <= 9; prec++) {
        snprintf(buf, len, "%.*g", prec, (double)v);
        if ((float)strtod(buf, NULL) == v) break;
    }
    return buf;
}

/* An integer field of any width the rows use (store_int's inverse). */
static int64_t load_int(const void *field, size_t size)
{
    if (size == sizeof(int64_t)) {
        int64_t v;
        memcpy(&v, field, sizeof v);
        return v;
    }
    if (size == sizeof(int)) {
        int v;
        memcpy(&v, field, sizeof v);
        return v;
    }
    bool b;
    memcpy(&b, field, sizeof b);
    return b;
}

static double load_real(const void *field, size_t size)
{
    if (size != sizeof(double)) return (double)load_int(field, size);
    double v;
    memcpy(&v, field, sizeof v);
    return v;
}

/* Whether the vocabulary reads `name` as value v. */
static bool names_value(const mp_vocab *voc, int i, int64_t v)
{
    int back;
    if (!voc->parse) return i == v;
    return !voc->parse(vocab_name(voc, i), &back) && back == v;
}

/* The name that reads back as value v: name(v), or for a list of only some values
 * (whose parse returns the value) the name that parses to it; NULL when none does. */
static const char *enum_name(const mp_vocab *voc, int64_t v)
{
    if (v >= 0 && v < voc->n && names_value(voc, (int)v, v)) return vocab_name(voc, (int)v);
    for (int i = 0; i < voc->n; i++)
        if (names_value(voc, i, v)) return vocab_name(voc, i);
    return NULL;
}

const char *mp_opt_format(const mp_opt *o, const void *base, char *buf, size_t len)
{
    const void *field = (const char *)base + o->offset;
    double d;
    switch (o->kind) {
    case MP_OPT_FLAG:
    case MP_OPT_BOOL: snprintf(buf, len, "%d", load_int(field, o->size) != 0); return buf;
    case MP_OPT_INT: snprintf(buf, len, "%lld", (long long)load_int(field, o->size)); return buf;
    case MP_OPT_ENUM: {
        const char *name = enum_name(o->vocab, load_int(field, o->size));
        snprintf(buf, len, "%s", name ? name : "?");
        return buf;
    }
    case MP_OPT_STRING: {
        const char *s;
        memcpy(&s, field, sizeof s);
        if (!s) return NULL;
        snprintf(buf, len, "%s", s);
        return buf;
    }
    case MP_OPT_FLOAT: {
        float f;
        memcpy(&f, field, sizeof f);
        return shortest_float(f, buf, len);
    }
    case MP_OPT_REAL:
    case MP_OPT_FRACTION: return shortest_double(load_real(field, o->size), buf, len);
    case MP_OPT_SIZE:
    case MP_OPT_COUNT:
        /* 0: not given (neither reads a 0) */
        return (d = load_real(field, o->size)) > 0 ? shortest_double(d, buf, len) : NULL;
    case MP_OPT_CUSTOM: return o->write ? o->write(o, base, buf, len) : NULL;
    }
    return NULL;
}

static bool blank(char c) { return c == ' ' || c == '\t'; }

/* Whether a value reads back as written on a line, or needs its quotes: a
 * blank or '\r' at an end, a '"' first, a '#' that would start a comment. */
static bool needs_quotes(const char *v)
{
    size_t n = strlen(v);
    if (!n) return false;
    if (v[0] == '"' || blank(v[0]) || blank(v[n - 1]) || v[n - 1] == '\r') return true;
    for (size_t i = 0; i < n; i++)
        if (v[i] == '#' && (i == 0 || blank(v[i - 1]))) return true;
    return false;
}

const mp_opt *mp_opt_group_find(const mp_opt_group *g, int ngroups, const char *key, void **base)
{
    for (int k = 0; k < ngroups; k++) {
        const mp_opt *o = mp_opt_find(g[k].rows, key);
        bool taken = !g[k].only;
        for (int j = 0; o && g[k].only && g[k].only[j] && !taken; j++) taken = !strcmp(g[k].only[j], key);
        if (o && taken) {
            if (base) *base = g[k].base;
            return o;
        }
    }
    return NULL;
}

/* One row's "key = value" (or "key=value") at buf + *used; 0, or -1 with err. */
static int write_pair(const mp_opt *o, const void *base, mp_kv_form form, char *buf, size_t len, size_t *used,
                      char *err)
{
    char v[MP_OPT_VALUE_LEN], quoted[600];
    const char *text = mp_opt_format(o, base, v, sizeof v);
    if (!text) return 0;
    bool quote = form == MP_KV_LINES && needs_quotes(text);
    const char *why = strchr(text, '\n')                               ? "a line break"
                      : form == MP_KV_WORDS && strpbrk(text, " \t")    ? "a blank"
                      : quote && strchr(text, '"')                     ? "a '\"' where it needs quotes"
                                                                       : NULL;
    size_t room = *used < len ? len - *used : 0;
    int n = why                 ? 0
            : form == MP_KV_LINES ? snprintf(buf + *used, room, quote ? "%s = \"%s\"\n" : "%s = %s\n", o->name, text)
                                : snprintf(buf + *used, room, "%s%s=%s", *used ? " " : "", o->name, text);
    if (!why && form == MP_KV_LINES && n - 1 > MP_KV_LINE_MAX) why = "a line too long to read back";
    if (why) {
        snprintf(err, MP_OPT_ERR_LEN, "cannot write %s = '%s': %s", o->name, mp_quote(text, quoted, sizeof quoted), why);
        return -1;
    }
    *used += (size_t)n;
    if (*used >= len) {
        snprintf(err, MP_OPT_ERR_LEN, "the settings do not fit in %zu bytes", len);
        return -1;
    }
    return 0;
}

int mp_opt_write_kv(const mp_opt_group *g, int ngroups, mp_kv_form form, char *buf, size_t len, char *err)
{
    size_t used = 0;
    if (len) buf[0] = 0;
    for (int k = 0; k < ngroups; k++) {
        int count = 0;
        if (g[k].only) while (g[k].only[count]) count++;
        else while (g[k].rows[count].name) count++;
        for (int j = 0; j < count; j++) {
            const mp_opt *o = g[k].only ? mp_opt_find(g[k].rows, g[k].only[j]) : &g[k].rows[j];
            if (!o) {
                snprintf(err, MP_OPT_ERR_LEN, "no setting '%s' to write", g[k].only[j]);
                return -1;
            }
            if (write_pair(o, g[k].base, form, buf, len, &used, err)) return -1;
        }
    }
    return (int)used;
}

json_t *mp_opt_json(const mp_opt_group *g, int ngroups)
{
    json_t *o = json_object();
    for (int k = 0; k < ngroups; k++) {
        int count = 0;
        if (g[k].only) while (g[k].only[count]) count++;
        else while (g[k].rows[count].name) count++;
        for (int j = 0; j < count; j++) {
            const mp_opt *r = g[k].only ? mp_opt_find(g[k].rows, g[k].only[j]) : &g[k].rows[j];
            if (!r) continue;
            char v[MP_OPT_VALUE_LEN];
            const char *text = mp_opt_format(r, g[k].base, v, sizeof v);
            json_t *x;
            if (!text) x = json_null();
            else if (r->kind == MP_OPT_INT) x = json_integer((json_int_t)strtoll(text, NULL, 10));
            else if (r->kind == MP_OPT_FLAG || r->kind == MP_OPT_BOOL) x = json_boolean(text[0] == '1');
            else if (r->kind == MP_OPT_ENUM || r->kind == MP_OPT_STRING || r->kind == MP_OPT_CUSTOM) x = json_string(text);
            else x = json_real(strtod(text, NULL));
            /* a string that is not UTF-8 (a path) cannot be a JSON string: null */
            json_object_set_new(o, r->name, x ? x : json_null());
        }
    }
    return o;
}

void mp_kv_start(mp_kv_reader *r, char *text, size_t len, mp_kv_form form)
{
    r->p = text, r->end = text + len, r->form = form, r->line = 0;
    *r->end = 0;
}

static char *trim_blanks(char *s)
{
    while (blank(*s)) s++;
    char *e = s + strlen(s);
    while (e > s && (blank(e[-1]) || e[-1] == '\n' || e[-1] == '\r')) *--e = 0;
    return s;
}

/* The value after a line's '=': a '#' after a blank starts a comment (a '#' inside a
 * word, as in a path 'run#3.txt', is the value's); a value in double quotes is what
 * stands between them, '#' and blanks included, with at most a comment after it.
 * NULL with *why when the quotes do not close or text follows them. */
static char *value_of(char *v, const char **why)
{
    while (blank(*v)) v++;
    if (*v == '"') {
        char *close = strchr(v + 1, '"');
        if (!close) return *why = "a quoted value lacks its closing '\"'", NULL;
        *close = 0;
        char *rest = close + 1;
        while (blank(*rest) || *rest == '\r') rest++;
        if (*rest && *rest != '#') return *why = "text after a quoted value (a comment needs a blank and '#')", NULL;
        return v + 1;
    }
    for (char *p = v; *p; p++)
        if (*p == '#' && (p == v || blank(p[-1]))) {
            *p = 0;
            break;
        }
    return trim_blanks(v);
}

static int next_word(mp_kv_reader *r, const char **key, const char **value)
{
    while (r->p < r->end && blank(*r->p)) r->p++;
    if (r->p >= r->end) return 0;
    char *tok = r->p;
    while (r->p < r->end && !blank(*r->p)) r->p++;
    if (r->p < r->end) *r->p++ = 0;
    char *eq = strchr(tok, '=');
    *key = tok, *value = NULL;
    if (eq && eq != tok) *eq = 0, *value = eq + 1;
    return 1;
}

int mp_kv_next(mp_kv_reader *r, const char **key, const char **value, char *err)
{
    if (r->form == MP_KV_WORDS) return next_word(r, key, value);
    while (r->p < r->end) {
        char *line = r->p, *nl = memchr(line, '\n', (size_t)(r->end - line));
        size_t n = nl ? (size_t)(nl - line) : (size_t)(r->end - line);
        r->line++;
        /* Read as fgets read them, a longer line was cut into lines of 1023 bytes, and a
         * NUL ended one early: a path was cut short, or the rest read as a line of its own. */
        if (n > MP_KV_LINE_MAX || memchr(line, 0, n)) {
            snprintf(err, MP_OPT_ERR_LEN, n > MP_KV_LINE_MAX ? "is longer than %d bytes" : "holds a NUL byte",
                     MP_KV_LINE_MAX);
            return -1;
        }
        line[n] = 0;
        r->p = line + n + (nl != NULL);
        char *s = trim_blanks(line);
        if (!*s || *s == '#') continue;
        char *eq = strchr(s, '=');
        *key = s, *value = NULL;
        if (!eq) return 1;
        *eq = 0;
        const char *why = NULL;
        char *v = value_of(eq + 1, &why);
        if (!v) {
            snprintf(err, MP_OPT_ERR_LEN, "%s", why);
            return -1;
        }
        *key = trim_blanks(s), *value = v;
        return 1;
    }
    return 0;
}

int mp_opt_read_kv(const mp_opt_group *g, int ngroups, const char *key, const char *value, unsigned *pinned,
                   char *err)
{
    void *base;
    const mp_opt *o = mp_opt_group_find(g, ngroups, key, &base);
    if (!o) return -2;
    if (o->kind != MP_OPT_FLAG) return mp_opt_read(o, value, base, pinned, err);
    /* a flag written as a key: its value is 0 or 1 */
    mp_opt as_bool = *o;
    as_bool.kind = MP_OPT_BOOL;
    return mp_opt_read(&as_bool, value, base, pinned, err);
}

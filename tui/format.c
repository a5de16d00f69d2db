/* format.c — exact, pure formatters for memtop's numbers and bars. */
#include "format.h"

#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "common/units.h"
#include "common/utf8.h"

const char mtop_seg_glyph[MTOP_NSEG] = {'#', '=', '%', '+', '.', '?'};

const char *mtop_seg_name(int seg)
{
    static const char *const names[MTOP_NSEG] = {"weights", "gradients", "optimizer", "activations",
                                                 "overhead", "unattributed"};
    return seg >= 0 && seg < MTOP_NSEG ? names[seg] : "?";
}

static const char *na(char *buf, size_t len)
{
    snprintf(buf, len, "%s", MTOP_NA);
    return buf;
}

const char *mtop_fmt_bytes(double bytes, bool valid, char *buf, size_t len)
{
    if (!valid || !isfinite(bytes)) return na(buf, len);
    char tmp[64];
    mp_fmt_gib(bytes, tmp, sizeof tmp);
    snprintf(buf, len, "%s", tmp);
    return buf;
}

bool mtop_error_pct(double measured, bool mok, double predicted, bool pok, double *pct)
{
    if (!mok || !pok || !isfinite(measured) || !isfinite(predicted)) return false;
    if (predicted == 0) {
        if (measured != 0) return false;
        *pct = 0;
        return true;
    }
    *pct = (measured - predicted) / predicted * 100.0;
    return true;
}

const char *mtop_fmt_error(double measured, bool mok, double predicted, bool pok, char *buf,
                           size_t len)
{
    double p = 0;
    bool ok = mtop_error_pct(measured, mok, predicted, pok, &p);
    return mtop_fmt_pct(p, ok, buf, len);
}

const char *mtop_fmt_pct(double p, bool valid, char *buf, size_t len)
{
    if (!valid || isnan(p)) return na(buf, len);
    if (p >= 999.95) snprintf(buf, len, ">+999%%");
    else if (p <= -999.95) snprintf(buf, len, "<-999%%");
    else {
        if (fabs(p) < 0.05) p = 0; /* no "-0.0%" */
        snprintf(buf, len, "%+.1f%%", p);
    }
    return buf;
}

const char *mtop_fmt_duration(double s, bool valid, char *buf, size_t len)
{
    if (!valid || !isfinite(s) || s < 0 || s > 1e12) return na(buf, len);
    long long t = (long long)floor(s);
    if (t < 60) snprintf(buf, len, "%llds", t);
    else if (t < 3600) snprintf(buf, len, "%lldm%02llds", t / 60, t % 60);
    else if (t < 86400) snprintf(buf, len, "%lldh%02lldm", t / 3600, t % 3600 / 60);
    else snprintf(buf, len, "%lldd%02lldh", t / 86400, t % 86400 / 3600);
    return buf;
}

const char *mtop_fmt_rate(double v, bool valid, char *buf, size_t len)
{
    if (!valid || !isfinite(v) || v < 0) return na(buf, len);
    if (v < 999.95) {
        snprintf(buf, len, "%.1f", v);
        return buf;
    }
    char tmp[64];
    mp_fmt_count(round(v), tmp, sizeof tmp);
    snprintf(buf, len, "%s", tmp);
    return buf;
}

const char *mtop_fmt_loss(double v, bool valid, char *buf, size_t len)
{
    if (!valid) return na(buf, len);
    if (isnan(v)) snprintf(buf, len, "nan");
    else if (isinf(v)) snprintf(buf, len, v > 0 ? "inf" : "-inf");
    else snprintf(buf, len, "%.4f", v);
    return buf;
}

const char *mtop_fmt_lr(double v, bool valid, char *buf, size_t len)
{
    if (!valid || !isfinite(v)) return na(buf, len);
    snprintf(buf, len, "%.2e", v);
    return buf;
}

const char *mtop_fmt_share(double part, double whole, char *buf, size_t len)
{
    if (!isfinite(part) || !isfinite(whole) || whole <= 0) return na(buf, len);
    snprintf(buf, len, "%.1f%%", part / whole * 100.0);
    return buf;
}

int mtop_bar_cells(const double *seg, int nseg, double scale, int width, signed char *cells)
{
    if (width <= 0) return 0;
    for (int i = 0; i < width; i++) cells[i] = -1;
    if (!(scale > 0) || !isfinite(scale)) return 0;
    double cum = 0;
    int start = 0;
    for (int k = 0; k < nseg; k++) {
        double v = seg[k];
        if (v > 0 && isfinite(v)) cum += v;
        double e = round(cum / scale * width);
        int end = e > width ? width : (int)e;
        for (int i = start; i < end; i++) cells[i] = (signed char)k;
        if (end > start) start = end;
    }
    return start;
}

int mtop_bar_mark(double value, double scale, int width)
{
    if (width <= 0 || !(scale > 0) || !isfinite(value) || value < 0 || value > scale) return -1;
    int c = (int)ceil(value / scale * width) - 1;
    return c < 0 ? 0 : c >= width ? width - 1 : c;
}

char *mtop_bar_text(const signed char *cells, int width, int oom, int headroom, char *out)
{
    for (int i = 0; i < width; i++) {
        int k = cells[i];
        out[i] = k >= 0 && k < MTOP_NSEG ? mtop_seg_glyph[k] : ' ';
    }
    if (width > 0) {
        if (headroom >= 0 && headroom < width) out[headroom] = MTOP_GLYPH_HEADROOM;
        if (oom >= 0 && oom < width) out[oom] = MTOP_GLYPH_OOM;
    }
    out[width > 0 ? width : 0] = 0;
    return out;
}

char *mtop_fit(const char *s, int width, char *out, size_t len)
{
    if (len == 0) return out;
    if (width < 0) width = 0;
    size_t n = strlen(s), w = (size_t)width;
    if (w >= len) w = len - 1;
    if (n <= w) {
        memcpy(out, s, n + 1);
        return out;
    }
    if (w == 0) {
        out[0] = 0;
        return out;
    }
    memcpy(out, s, w - 1);
    out[w - 1] = '~';
    out[w] = 0;
    return out;
}

const char *mtop_clean(const char *s, char *buf, size_t len) { return mp_quote(s, buf, len); }

void mtop_csv_text(FILE *f, const char *s)
{
    size_t n = strlen(s);
    char small[512], *buf = MTOP_CLEAN_LEN(n) <= sizeof small ? small : malloc(MTOP_CLEAN_LEN(n));
    const char *t = buf ? mtop_clean(s, buf, buf == small ? sizeof small : MTOP_CLEAN_LEN(n))
                        : mtop_clean(s, small, sizeof small); /* out of memory: cut, never raw */
    fputc('"', f);
    for (; *t; t++) {
        if (*t == '"') fputc('"', f);
        fputc(*t, f);
    }
    fputc('"', f);
    if (buf != small) free(buf);
}

json_t *mtop_json_str(const char *s)
{
    if (utf8_valid(s)) return json_string(s);
    size_t n = MTOP_CLEAN_LEN(strlen(s));
    char *buf = malloc(n);
    if (!buf) return NULL;
    json_t *j = json_string(mtop_clean(s, buf, n));
    free(buf);
    return j;
}

/* The dumped text with every character that does not show as itself (bar
 * the layout's newlines) as \uXXXX: JSON allows DEL, C1 controls and the
 * like raw inside strings, and only there can they be, so this is the same
 * JSON. jansson has escaped the C0 controls already. */
static char *json_escape_rest(char *text)
{
    size_t n = strlen(text), extra = 0;
    const unsigned char *p = (const unsigned char *)text;
    uint32_t cp;
    for (size_t i = 0; i < n;) {
        int k = utf8_decode(p + i, n - i, &cp);
        if (!k) k = 1, cp = p[i]; /* not from jansson, which writes UTF-8 only */
        if (cp != '\n' && !utf8_shows_as_itself(cp)) extra += 6;
        i += (size_t)k;
    }
    if (!extra) return text;
    char *out = malloc(n + extra + 1);
    if (!out) {
        free(text);
        return NULL;
    }
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        int k = utf8_decode(p + i, n - i, &cp);
        if (!k) k = 1, cp = p[i];
        if (cp != '\n' && !utf8_shows_as_itself(cp)) o += (size_t)sprintf(out + o, "\\u%04x", (unsigned)(cp & 0xffff));
        else memcpy(out + o, p + i, (size_t)k), o += (size_t)k;
        i += (size_t)k;
    }
    out[o] = 0;
    free(text);
    return out;
}

char *mtop_json_text(json_t *o)
{
    char *text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12));
    json_decref(o);
    if (!text || !(text = json_escape_rest(text))) return NULL;
    size_t n = strlen(text);
    char *out = realloc(text, n + 2);
    if (!out) {
        free(text);
        return NULL;
    }
    out[n] = '\n';
    out[n + 1] = 0;
    return out;
}

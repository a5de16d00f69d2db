/* units.c — parsing and printing sizes, counts and library releases. GB is 10^9, GiB is 2^30. */
#include "common/errors.h"
#include "common/units.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct unit { const char *name; double scale; const char *kind; };

/* Longest names first so "GiB" is not read as "G" + junk. */
static const struct unit size_units[] = {
    {"TiB", 1099511627776.0, "binary TiB"}, {"GiB", MP_GiB, "binary GiB"},
    {"MiB", 1048576.0, "binary MiB"},       {"KiB", 1024.0, "binary KiB"},
    {"TB", 1e12, "decimal TB"}, {"GB", 1e9, "decimal GB"}, {"MB", 1e6, "decimal MB"},
    {"kB", 1e3, "decimal kB"},  {"KB", 1e3, "decimal kB"},
    {"T", 1e12, "decimal TB"},  {"G", 1e9, "decimal GB"},  {"M", 1e6, "decimal MB"},
    {"K", 1e3, "decimal kB"},   {"B", 1.0, "bytes"},       {"", 1.0, "bytes"},
};

/* Messages quote the value as typed, on one line (mp_quote). */
#define QUOTED(s) mp_quote(s, quoted, sizeof quoted)

/* A plain decimal number at p: digits, a point, an exponent; not strtod's
 * hexadecimal (0x10), hex floats (0x1p4), inf or nan. Its value, with *end
 * after it; end == p when there is none. */
static double decimal(const char *p, char **end)
{
    const char *q = p;
    if (*q == '+' || *q == '-') q++;
    size_t digits = strspn(q, "0123456789");
    q += digits;
    if (*q == '.') {
        size_t frac = strspn(q + 1, "0123456789");
        digits += frac;
        q += 1 + frac;
    }
    if (!digits || (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))) {
        *end = (char *)p;
        return 0;
    }
    if (*q == 'e' || *q == 'E') {
        const char *x = q + 1 + (q[1] == '+' || q[1] == '-');
        size_t n = strspn(x, "0123456789");
        if (n) q = x + n;
    }
    errno = 0;
    double v = strtod(p, end);
    if (*end != q) *end = (char *)p; /* strtod read more than a decimal number */
    return v;
}

int mp_parse_size(const char *text, double *bytes, char *how, char *err)
{
    char quoted[160];
    if (!text || !*text) {
        snprintf(err, MP_ERR_LEN, "empty size");
        return -1;
    }
    const char *p = text;
    while (isspace((unsigned char)*p)) p++;
    char *end;
    double v = decimal(p, &end);
    if (end == p || errno == ERANGE || !isfinite(v)) {
        snprintf(err, MP_ERR_LEN, "invalid size '%s'", QUOTED(text));
        return -1;
    }
    while (isspace((unsigned char)*end)) end++;
    const struct unit *u = NULL;
    for (size_t i = 0; i < sizeof size_units / sizeof *size_units; i++) {
        /* two letters in any case; a single letter (K, M, G, T) only as a capital */
        const char *n = size_units[i].name;
        if (strcmp(end, n) == 0 || (strlen(n) > 1 && strcasecmp(end, n) == 0)) {
            u = &size_units[i];
            break;
        }
    }
    if (!u && strlen(end) == 1 && strchr("kmgt", *end)) {
        snprintf(err, MP_ERR_LEN, "invalid size '%s' (a one-letter unit is a capital, %c; or say %cB or %ciB)",
                 QUOTED(text), toupper((unsigned char)*end), toupper((unsigned char)*end),
                 toupper((unsigned char)*end));
        return -1;
    }
    if (!u) {
        snprintf(err, MP_ERR_LEN, "invalid size '%s' (units: B, kB, MB, GB, TB, KiB, MiB, GiB, TiB)", QUOTED(text));
        return -1;
    }
    double b = v * u->scale;
    if (v <= 0 || !isfinite(b) || b > 1e18) {
        snprintf(err, MP_ERR_LEN, "invalid size '%s' (must be positive and below 1 EB)", QUOTED(text));
        return -1;
    }
    *bytes = b;
    if (how) {
        char num[48];
        snprintf(how, 64, "%s read as %s (%s bytes)", QUOTED(text), u->kind, mp_fmt_count(b, num, sizeof num));
    }
    return 0;
}

int mp_parse_count(const char *text, double *count, char *err)
{
    char quoted[160];
    if (!text || !*text) {
        snprintf(err, MP_ERR_LEN, "empty count");
        return -1;
    }
    char *end;
    double v = decimal(text, &end);
    if (end == text || errno == ERANGE || !isfinite(v)) {
        snprintf(err, MP_ERR_LEN, "invalid count '%s'", QUOTED(text));
        return -1;
    }
    double scale = 1;
    if (*end) {
        switch (*end) {
        case 'k': case 'K': scale = 1e3; break;
        case 'm': case 'M': scale = 1e6; break;
        case 'b': case 'B': case 'g': case 'G': scale = 1e9; break;
        case 't': case 'T': scale = 1e12; break;
        default: scale = 0;
        }
        if (scale == 0 || end[1]) {
            snprintf(err, MP_ERR_LEN, "invalid count '%s' (e.g. 7e9, 7B, 125M)", QUOTED(text));
            return -1;
        }
    }
    double c = v * scale;
    if (c <= 0 || !isfinite(c) || c > 1e15) {
        snprintf(err, MP_ERR_LEN, "invalid count '%s' (must be positive and below 1e15)", QUOTED(text));
        return -1;
    }
    *count = c;
    return 0;
}

const char *mp_fmt_gib(double bytes, char *buf, size_t len)
{
    double a = fabs(bytes);
    if (a >= MP_GiB)
        snprintf(buf, len, "%.2f GiB", bytes / MP_GiB);
    else if (a >= 1048576.0)
        snprintf(buf, len, "%.1f MiB", bytes / 1048576.0);
    else if (a >= 1024.0)
        snprintf(buf, len, "%.1f KiB", bytes / 1024.0);
    else
        snprintf(buf, len, "%.0f B", bytes);
    return buf;
}

const char *mp_fmt_count(double n, char *buf, size_t len)
{
    char digits[40];
    snprintf(digits, sizeof digits, "%.0f", fabs(n));
    size_t nd = strlen(digits), o = 0;
    if (n < 0 && o + 1 < len) buf[o++] = '-';
    for (size_t i = 0; i < nd && o + 2 < len; i++) {
        if (i && (nd - i) % 3 == 0) buf[o++] = ',';
        buf[o++] = digits[i];
    }
    buf[o] = 0;
    return buf;
}

/* ---------- library releases ---------- */

int mp_version_parse(const char *text, int *version)
{
    int part[3] = {0, 0, 0}, n = 0;
    const char *p = text;
    if (!p || !*p) return -1;
    for (;;) {
        if (*p < '0' || *p > '9') return -1;
        long v = 0;
        while (*p >= '0' && *p <= '9') {
            v = v * 10 + (*p++ - '0');
            if (v > 9999) return -1;
        }
        part[n++] = (int)v;
        if (!*p) break;
        if (*p != '.' || n == 3) return -1;
        p++;
    }
    if (n < 2 || part[1] > 99 || part[2] > 99 || part[0] > 999) return -1;
    *version = part[0] * 10000 + part[1] * 100 + part[2];
    return 0;
}

const char *mp_version_name(int version, char *buf, size_t len)
{
    snprintf(buf, len, "%d.%d.%d", version / 10000, version / 100 % 100, version % 100);
    return buf;
}

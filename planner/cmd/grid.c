/* grid.c — the tables of memplan table, ladder and sweep: one set of column
 * names, written as aligned text, Markdown, CSV (libcsv) or JSON (jansson). */
#include "cli.h"
#include "common/errors.h"
#include "common/files.h"
#include "common/units.h"

#include <csv.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DASH "\xe2\x80\x94" /* an em dash: no value */

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        fputs("memplan: error: out of memory\n", stderr);
        exit(EXIT_USAGE);
    }
    return q;
}

void grid_init(grid *g, const grid_col *cols, int ncols)
{
    memset(g, 0, sizeof *g);
    g->cols = cols;
    g->ncols = ncols;
}

size_t grid_add_row(grid *g)
{
    if (g->nrows == g->cap) {
        g->cap = g->cap ? 2 * g->cap : 32;
        g->cells = xrealloc(g->cells, g->cap * (size_t)g->ncols * sizeof *g->cells);
    }
    memset(&g->cells[g->nrows * (size_t)g->ncols], 0, (size_t)g->ncols * sizeof *g->cells);
    return g->nrows++;
}

static grid_cell *cell(const grid *g, size_t row, int col)
{
    return &g->cells[row * (size_t)g->ncols + (size_t)col];
}

void grid_str(grid *g, size_t row, int col, const char *s)
{
    grid_cell *c = cell(g, row, col);
    free(c->s);
    c->s = NULL;
    c->set = s != NULL;
    if (s) {
        size_t n = strlen(s) + 1;
        c->s = xrealloc(NULL, n);
        memcpy(c->s, s, n);
    }
}

void grid_num(grid *g, size_t row, int col, double v)
{
    grid_cell *c = cell(g, row, col);
    c->v = v;
    c->set = true;
}

void grid_free(grid *g)
{
    for (size_t i = 0; i < g->nrows * (size_t)g->ncols; i++) free(g->cells[i].s);
    free(g->cells);
    memset(g, 0, sizeof *g);
}

/* A cell as text: `human` for text and Markdown (sizes in GiB), else for CSV. */
static const char *cell_text(const grid *g, size_t row, int col, bool human, char *buf, size_t len)
{
    const grid_cell *c = cell(g, row, col);
    if (!c->set) return human ? DASH : "";
    switch (g->cols[col].kind) {
    case COL_STR: return c->s;
    case COL_INT: snprintf(buf, len, "%.0f", c->v); break;
    case COL_BYTES:
        if (human) snprintf(buf, len, "%.2f GiB", c->v / MP_GiB);
        else snprintf(buf, len, "%.0f", c->v);
        break;
    case COL_REAL: snprintf(buf, len, human ? "%.0f" : "%.1f", c->v); break;
    case COL_PCT: snprintf(buf, len, human ? "%.1f%%" : "%.1f", c->v); break;
    case COL_SECS: snprintf(buf, len, human ? "%.2f s" : "%.4f", c->v); break; /* step time */
    case COL_BOOL: snprintf(buf, len, "%s", human ? (c->v ? "yes" : "no") : (c->v ? "1" : "0")); break;
    }
    /* no "-0" */
    if (!strcmp(buf, "-0") || !strcmp(buf, "-0.0")) memmove(buf, buf + 1, strlen(buf));
    if (!strncmp(buf, "-0.00 ", 6)) memmove(buf, buf + 1, strlen(buf));
    return buf;
}

/* Columns on the terminal: UTF-8 continuation bytes take none. */
static size_t width(const char *s)
{
    size_t w = 0;
    for (; *s; s++) w += ((unsigned char)*s & 0xC0) != 0x80;
    return w;
}

static bool right_aligned(col_kind k) { return k != COL_STR && k != COL_BOOL; }

const char *grid_col_title(const grid_col *c, char *buf, size_t len)
{
    size_t n = strlen(c->name);
    if (c->kind == COL_BYTES && n > 6 && !strcmp(c->name + n - 6, "_bytes")) {
        snprintf(buf, len, "%.*s_gib", (int)(n - 6), c->name);
        return buf;
    }
    return c->name;
}

static void write_text(FILE *f, const grid *g)
{
    size_t *w = xrealloc(NULL, (size_t)g->ncols * sizeof *w);
    char buf[64], title[64];
    for (int c = 0; c < g->ncols; c++) {
        w[c] = width(grid_col_title(&g->cols[c], title, sizeof title));
        for (size_t r = 0; r < g->nrows; r++) {
            size_t n = width(cell_text(g, r, c, true, buf, sizeof buf));
            if (n > w[c]) w[c] = n;
        }
    }
    for (size_t r = 0; r <= g->nrows; r++) {
        for (int c = 0; c < g->ncols; c++) {
            const char *t = r == 0 ? grid_col_title(&g->cols[c], title, sizeof title)
                                   : cell_text(g, r - 1, c, true, buf, sizeof buf);
            size_t pad = w[c] - width(t);
            bool last = c == g->ncols - 1;
            if (c) fputs("  ", f);
            if (right_aligned(g->cols[c].kind)) fprintf(f, "%*s%s", (int)pad, "", t);
            else fprintf(f, "%s%*s", t, last ? 0 : (int)pad, "");
        }
        fputc('\n', f);
    }
    free(w);
}

static void md_cell(FILE *f, const char *t)
{
    fputs(" ", f);
    for (; *t; t++) {
        if (*t == '|') fputc('\\', f);
        fputc(*t == '\n' ? ' ' : *t, f);
    }
    fputs(" |", f);
}

static void write_markdown(FILE *f, const grid *g)
{
    char buf[64];
    fputc('|', f);
    for (int c = 0; c < g->ncols; c++) md_cell(f, g->cols[c].name);
    fputs("\n|", f);
    for (int c = 0; c < g->ncols; c++) fputs(right_aligned(g->cols[c].kind) ? " ---: |" : " --- |", f);
    fputc('\n', f);
    for (size_t r = 0; r < g->nrows; r++) {
        fputc('|', f);
        for (int c = 0; c < g->ncols; c++) md_cell(f, cell_text(g, r, c, true, buf, sizeof buf));
        fputc('\n', f);
    }
}

static void write_csv(FILE *f, const grid *g)
{
    char buf[64];
    for (size_t r = 0; r <= g->nrows; r++) {
        for (int c = 0; c < g->ncols; c++) {
            const char *t = r == 0 ? g->cols[c].name : cell_text(g, r - 1, c, false, buf, sizeof buf);
            if (c) fputc(',', f);
            csv_fwrite(f, t, strlen(t));
        }
        fputc('\n', f);
    }
}

static void write_json(FILE *f, const grid *g)
{
    json_t *arr = json_array();
    for (size_t r = 0; r < g->nrows; r++) {
        json_t *o = json_object();
        for (int c = 0; c < g->ncols; c++) {
            const grid_cell *x = cell(g, r, c);
            json_t *v;
            if (!x->set) v = json_null();
            else switch (g->cols[c].kind) {
                case COL_STR: v = json_string(x->s); break;
                case COL_INT:
                case COL_BYTES: v = json_integer((json_int_t)llround(x->v)); break;
                case COL_BOOL: v = json_boolean(x->v != 0); break;
                case COL_SECS: v = json_real(round(x->v * 1e4) / 1e4); break;
                default: v = json_real(round(x->v * 10) / 10); break;
                }
            json_object_set_new(o, g->cols[c].name, v);
        }
        json_array_append_new(arr, o);
    }
    json_dumpf(arr, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12));
    fputc('\n', f);
    json_decref(arr);
}

void grid_write(FILE *f, const grid *g, out_format fmt)
{
    switch (fmt) {
    case FMT_JSON: write_json(f, g); break;
    case FMT_CSV: write_csv(f, g); break;
    case FMT_MARKDOWN: write_markdown(f, g); break;
    default: write_text(f, g);
    }
}

FILE *out_open(out_buf *o)
{
    memset(o, 0, sizeof *o);
    o->f = open_memstream(&o->data, &o->len);
    if (!o->f) {
        fputs("memplan: error: out of memory\n", stderr);
        exit(EXIT_USAGE);
    }
    return o->f;
}

int out_finish(out_buf *o, const char *path)
{
    char err[MP_ERR_LEN];
    int rc = 0;
    fclose(o->f);
    if (path) {
        if (mp_write_file_atomic(path, o->data, o->len, err)) rc = cli_error("%s", err);
    } else if (o->len && fwrite(o->data, 1, o->len, stdout) != o->len) {
        rc = cli_error("cannot write to standard output");
    }
    free(o->data);
    memset(o, 0, sizeof *o);
    return rc;
}

int split_list(const char *flag, const char *list, char *buf, size_t len, char **items, int max)
{
    if (strlen(list) >= len) {
        cli_error("--%s '%.40s...' is too long", flag, list);
        return -1;
    }
    strcpy(buf, list);
    int n = 0;
    char *p = buf;
    bool blank = true;
    for (const char *q = list; *q; q++) blank &= *q == ' ' || *q == ',';
    if (blank) {
        cli_error("empty list '%s' for --%s (names separated by commas)", list, flag);
        return -1;
    }
    for (;;) {
        char *comma = strchr(p, ',');
        if (comma) *comma = 0;
        while (*p == ' ') p++;
        char *e = p + strlen(p);
        while (e > p && e[-1] == ' ') *--e = 0;
        if (!*p) {
            cli_error("empty item in --%s '%s'", flag, list);
            return -1;
        }
        if (n == max) {
            cli_error("too many items in --%s '%.60s' (at most %d)", flag, list, max);
            return -1;
        }
        items[n++] = p;
        if (!comma) break;
        p = comma + 1;
    }
    return n;
}

void grid_write_some(FILE *f, const grid *g, out_format fmt, const int *keep, int nkeep)
{
    if (!keep || fmt != FMT_TEXT) {
        grid_write(f, g, fmt);
        return;
    }
    grid_col *cols = xrealloc(NULL, (size_t)nkeep * sizeof *cols);
    for (int i = 0; i < nkeep; i++) cols[i] = g->cols[keep[i]];
    grid v;
    grid_init(&v, cols, nkeep);
    for (size_t r = 0; r < g->nrows; r++) {
        size_t k = grid_add_row(&v);
        for (int i = 0; i < nkeep; i++) {
            const grid_cell *x = cell(g, r, keep[i]);
            if (!x->set) continue;
            if (cols[i].kind == COL_STR) grid_str(&v, k, i, x->s);
            else grid_num(&v, k, i, x->v);
        }
    }
    grid_write(f, &v, fmt);
    grid_free(&v);
    free(cols);
}

/* draw.c — paint the run, what-if and help views from collected data; no I/O. */
#include "draw.h"

#include <curses.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "format.h"
#include "common/units.h"
#include "estimate/estimate.h"
#include "model/model.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"

/* ---------- colours, named by meaning ---------- */

static bool use_color;

static const struct {
    short fg;   /* foreground on the terminal's own background */
    int extra;  /* added to the colour pair */
    int mono;   /* the attribute without colour */
} scheme[MTOP_NCOLOR] = {
    [MTOP_C_NORMAL] = {-1, 0, A_NORMAL},
    [MTOP_C_WEIGHTS] = {COLOR_BLUE, A_BOLD, A_NORMAL},
    [MTOP_C_GRADIENTS] = {COLOR_MAGENTA, A_BOLD, A_NORMAL},
    [MTOP_C_OPTIMIZER] = {COLOR_YELLOW, 0, A_NORMAL},
    [MTOP_C_ACTIVATIONS] = {COLOR_GREEN, 0, A_NORMAL},
    [MTOP_C_OVERHEAD] = {COLOR_CYAN, 0, A_NORMAL},
    [MTOP_C_OTHER] = {COLOR_WHITE, 0, A_NORMAL},
    [MTOP_C_TITLE] = {COLOR_CYAN, A_BOLD, A_BOLD},
    [MTOP_C_LABEL] = {COLOR_CYAN, 0, A_NORMAL},
    [MTOP_C_OK] = {COLOR_GREEN, A_BOLD, A_BOLD},
    [MTOP_C_WARN] = {COLOR_YELLOW, A_BOLD, A_BOLD},
    [MTOP_C_CRIT] = {COLOR_RED, A_BOLD, A_BOLD | A_UNDERLINE},
    [MTOP_C_STALE] = {COLOR_YELLOW, A_REVERSE, A_REVERSE},
    [MTOP_C_PREDICTED] = {COLOR_MAGENTA, 0, A_NORMAL},
    [MTOP_C_CHART] = {COLOR_GREEN, 0, A_NORMAL},
    [MTOP_C_SELECTED] = {-1, A_REVERSE, A_REVERSE},
    [MTOP_C_DIM] = {-1, A_DIM, A_DIM},
};

void mtop_draw_colors(bool want)
{
    use_color = want && has_colors();
    if (!use_color) return;
    start_color();
    use_default_colors();
    for (int c = 1; c < MTOP_NCOLOR; c++) init_pair((short)c, scheme[c].fg, -1);
}

int mtop_attr(mtop_color c)
{
    if (c < 0 || c >= MTOP_NCOLOR) c = MTOP_C_NORMAL;
    if (!use_color) return scheme[c].mono;
    return c == MTOP_C_NORMAL ? (int)A_NORMAL : (int)COLOR_PAIR(c) | scheme[c].extra;
}

static int seg_attr(int seg) { return mtop_attr((mtop_color)(MTOP_C_WEIGHTS + seg)); }

/* ---------- clipped text ---------- */

/* Write s at (row, col) of r, clipped; returns the column after it. Every
 * string drawn passes here and is cleaned first (mtop_clean): a metrics
 * file's header, a file's or a command's name, its log's last line reach
 * ncurses as plain text, never as control bytes (ncurses would act on \n,
 * \r, \b and \t, and pass C1 bytes on in some locales). */
static int put(const mtop_rect *r, int row, int col, int attr, const char *s)
{
    static char clean[1024]; /* wider than any terminal row */
    s = mtop_clean(s, clean, sizeof clean);
    int len = (int)strlen(s);
    if (row < 0 || row >= r->h || col < 0 || col >= r->w) return col + len;
    int n = r->w - col;
    if (n < len) /* clip at a character's start, not inside its UTF-8 bytes */
        while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80) n--;
    attron(attr);
    mvaddnstr(r->y + row, r->x + col, s, n);
    attroff(attr);
    return col + len;
}

__attribute__((format(printf, 5, 6))) static int putf(const mtop_rect *r, int row, int col,
                                                       int attr, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return put(r, row, col, attr, buf);
}

static void putch(const mtop_rect *r, int row, int col, int attr, chtype ch)
{
    if (row < 0 || row >= r->h || col < 0 || col >= r->w) return;
    mvaddch(r->y + row, r->x + col, ch | (chtype)attr);
}

/* The long text if it fits the window from `col`, else the short one. */
static int put_either(const mtop_rect *r, int row, int col, int attr, const char *full, const char *brief)
{
    return put(r, row, col, attr, (int)strlen(full) <= r->w - col ? full : brief);
}

/* A title: the text, then a rule to the window's edge. */
static void title(const mtop_rect *r, int row, const char *text)
{
    if (row >= r->h || r->w <= 0) return;
    int c = put(r, row, 0, mtop_attr(MTOP_C_TITLE), text);
    if (c + 1 < r->w) mvhline(r->y + row, r->x + c + 1, ACS_HLINE, r->w - c - 1);
}

/* "label value" items left to right while they fit; returns the column. */
static int item(const mtop_rect *r, int row, int col, const char *label, const char *value, int vattr)
{
    int need = (int)strlen(label) + 1 + (int)strlen(value);
    if (col > 0 && col + need > r->w) return r->w; /* drop it whole rather than cut it */
    col = put(r, row, col, mtop_attr(MTOP_C_LABEL), label);
    col = put(r, row, col + 1, vattr, value);
    return col + 2;
}

/* Right-align s to end at column `end`. */
static void rput(const mtop_rect *r, int row, int end, int attr, const char *s)
{
    int c = end - (int)strlen(s);
    put(r, row, c < 0 ? 0 : c, attr, s);
}

const char *mtop_child_text(const mtop_child_view *c, char *buf, size_t len)
{
    buf[0] = 0;
    if (!c || !c->active) return buf;
    if (c->running) snprintf(buf, len, "running (pid %ld)", (long)c->pid);
    else if (WIFEXITED(c->status)) snprintf(buf, len, "exited with status %d", WEXITSTATUS(c->status));
    else if (WIFSIGNALED(c->status))
        snprintf(buf, len, "killed by signal %d (%s)", WTERMSIG(c->status), strsignal(WTERMSIG(c->status)));
    else snprintf(buf, len, "ended (wait status %d)", c->status);
    return buf;
}

static bool child_failed(const mtop_child_view *c)
{
    return c && c->active && !c->running && !(WIFEXITED(c->status) && WEXITSTATUS(c->status) == 0);
}

/* ---------- shared pieces ---------- */

static int level_attr(double v, double budget, double headroom)
{
    if (budget > 0 && v > budget) return mtop_attr(MTOP_C_CRIT);
    if (headroom > 0 && v > headroom) return mtop_attr(MTOP_C_WARN);
    return mtop_attr(MTOP_C_NORMAL);
}

/* One bar: "[cells]" with the marks; segments coloured. */
static void bar(const mtop_rect *r, int row, int col, int width, const double *seg, int nseg,
                double scale, double budget, double headroom)
{
    signed char cells[512];
    char text[513];
    if (width > 512) width = 512;
    if (width < 1) return;
    mtop_bar_cells(seg, nseg, scale, width, cells);
    int oom = budget > 0 ? mtop_bar_mark(budget, scale, width) : -1;
    int hr = headroom > 0 ? mtop_bar_mark(headroom, scale, width) : -1;
    mtop_bar_text(cells, width, oom, hr, text);
    put(r, row, col, mtop_attr(MTOP_C_DIM), "[");
    for (int i = 0; i < width; i++) {
        int a;
        if (i == oom || i == hr) {
            a = mtop_attr(i == oom ? MTOP_C_CRIT : MTOP_C_WARN);
            if (cells[i] >= 0) a |= A_REVERSE; /* the line crosses a filled cell */
        } else if (cells[i] >= 0) {
            a = seg_attr(cells[i]);
        } else {
            a = mtop_attr(MTOP_C_NORMAL);
        }
        putch(r, row, col + 1 + i, a, (chtype)(unsigned char)text[i]);
    }
    put(r, row, col + 1 + width, mtop_attr(MTOP_C_DIM), "]");
}

static void legend(const mtop_rect *r, int row, int nseg, const int *segs)
{
    static const char *const short_names[MTOP_NSEG] = {"wts", "grads", "optim", "activ", "ovhd", "other"};
    int full = 6;
    for (int i = 0; i < nseg; i++) full += 4 + (int)strlen(mtop_seg_name(segs[i]));
    bool compact = full > r->w; /* "#wts =grads ..." on narrow terminals */
    int col = compact ? -1 : put(r, row, 0, mtop_attr(MTOP_C_LABEL), "legend");
    for (int i = 0; i < nseg; i++) {
        int k = segs[i];
        const char *name = compact ? short_names[k] : mtop_seg_name(k);
        char g[2] = {mtop_seg_glyph[k], 0};
        col = put(r, row, col + (compact ? 1 : 2), seg_attr(k), g);
        col = put(r, row, col + (compact ? 0 : 1), mtop_attr(MTOP_C_NORMAL), name);
    }
}

/* ---------- run view ---------- */

/* "1 of 2 (heaviest)": the rank the panels show */
static const char *rank_of_text(const mtop_rank_table *t, char *buf, size_t len)
{
    int n = t->ranks > t->n ? t->ranks : t->n;
    snprintf(buf, len, "%d of %d%s", t->rank[t->selected], n, t->selected == t->heaviest ? " (heaviest)" : "");
    return buf;
}

static void run_header(const mtop_rect *r, const mtop_snapshot *s, const mtop_draw_ctx *ctx)
{
    char badge[64], a[48], b[48];
    int battr;
    if (!strcmp(s->state, "stale")) {
        snprintf(badge, sizeof badge, "[stale: no row for %s]", mtop_fmt_duration(s->age_s, true, a, sizeof a));
        battr = mtop_attr(MTOP_C_STALE);
    } else if (!strcmp(s->state, "live")) {
        snprintf(badge, sizeof badge, "[live]");
        battr = mtop_attr(MTOP_C_OK);
    } else {
        snprintf(badge, sizeof badge, "[%s]", s->state);
        battr = mtop_attr(MTOP_C_WARN);
    }
    int bw = (int)strlen(badge);
    mtop_rect left = *r;
    left.w = r->w - bw - 1;
    int col = put(&left, 0, 0, mtop_attr(MTOP_C_TITLE), "memtop");
    if (ctx->ranks) col = item(&left, 0, col + 2, "rank", rank_of_text(ctx->ranks, a, sizeof a), A_BOLD) - 2;
    const mtop_child_view *ch = ctx->child;
    if (ch && ch->active) { /* the command matters more than its temporary file */
        mtop_child_text(ch, a, sizeof a);
        col = put(&left, 0, col + 2, A_BOLD, ch->cmd);
        col = put(&left, 0, col + 1, mtop_attr(child_failed(ch) ? MTOP_C_CRIT : ch->running ? MTOP_C_OK : MTOP_C_NORMAL), a);
    } else if (!strcmp(s->state, "waiting") && s->rows == 0)
        col = putf(&left, 0, col + 2, mtop_attr(MTOP_C_NORMAL), "waiting for %s", s->file);
    else
        col = put(&left, 0, col + 2, mtop_attr(MTOP_C_NORMAL), s->file);
    col = item(&left, 0, col + 2, "model", s->meta->model[0] ? s->meta->model : MTOP_NA, A_BOLD);
    col = item(&left, 0, col, "device", s->meta->device[0] ? s->meta->device : MTOP_NA, 0);
    put(r, 0, r->w - bw, battr, badge);

    col = 0;
    if (s->step.ok && s->steps.ok) snprintf(a, sizeof a, "%.0f/%.0f", s->step.v, s->steps.v);
    else if (s->step.ok) snprintf(a, sizeof a, "%.0f", s->step.v);
    else snprintf(a, sizeof a, MTOP_NA);
    col = item(r, 1, col, "step", a, A_BOLD);
    col = item(r, 1, col, "elapsed", mtop_fmt_duration(s->elapsed.v, s->elapsed.ok, a, sizeof a), 0);
    col = item(r, 1, col, "eta", mtop_fmt_duration(s->eta.v, s->eta.ok, a, sizeof a), 0);
    col = item(r, 1, col, "loss", mtop_fmt_loss(s->loss.v, s->loss.ok, a, sizeof a), A_BOLD);
    col = item(r, 1, col, "tokens_per_s", mtop_fmt_rate(s->tokens_per_s.v, s->tokens_per_s.ok, a, sizeof a), 0);
    col = item(r, 1, col, "lr", mtop_fmt_lr(s->lr.v, s->lr.ok, a, sizeof a), 0);
    item(r, 1, col, "rss", mtop_fmt_bytes(s->rss.v, s->rss.ok, b, sizeof b), 0);
}

static void run_settings(const mtop_rect *r, const mtop_snapshot *s)
{
    int col = put(r, 0, 0, mtop_attr(MTOP_C_LABEL), "settings");
    const mtop_meta *m = s->meta;
    col = put(r, 0, col + 1, 0, m->settings[0] ? m->settings : MTOP_NA);
    if (s->rows > 0 && !m->magic)
        put(r, 0, col + 2, mtop_attr(MTOP_C_WARN), "(no '# memtrain metrics v1' line)");
    else if (m->magic && m->version != 1)
        putf(r, 0, col + 2, mtop_attr(MTOP_C_WARN), "(format v%d; memtop reads v1)", m->version);
}

#define LABEL_W 11
#define VALUE_W 11

static void run_bars(const mtop_rect *r, const mtop_snapshot *s)
{
    char a[48], b[48], t[256];
    double budget = s->budget.ok ? s->budget.v : 0, hr = s->headroom.ok ? s->headroom.v : 0;
    if (budget > 0) {
        snprintf(t, sizeof t, "memory (GiB = 2^30 bytes)  budget %s  headroom %s  '%c' out of memory  '%c' headroom",
                 mtop_fmt_bytes(budget, true, a, sizeof a), mtop_fmt_bytes(hr, true, b, sizeof b),
                 MTOP_GLYPH_OOM, MTOP_GLYPH_HEADROOM);
        if ((int)strlen(t) > r->w)
            snprintf(t, sizeof t, "GiB = 2^30 B  budget%c %s  headroom%c %s", MTOP_GLYPH_OOM, a,
                     MTOP_GLYPH_HEADROOM, b);
    } else {
        snprintf(t, sizeof t, "memory (GiB = 2^30 bytes)  budget N/A (give --gpu)");
    }
    title(r, 0, t);
    double seg[3][MTOP_NCOMP + 1], tot[3], scale = budget;
    for (int c = 0; c < 3; c++) {
        tot[c] = mtop_snapshot_segments(s, c, seg[c]);
        if (s->tab[MTOP_TOTAL][c].ok && s->tab[MTOP_TOTAL][c].v > tot[c]) tot[c] = s->tab[MTOP_TOTAL][c].v;
        if (tot[c] > scale) scale = tot[c];
    }
    int width = r->w - LABEL_W - 2 - VALUE_W - 1;
    static const char *const names[3] = {"current", "peak", "predicted"};
    for (int c = 0; c < 3; c++) {
        put(r, 1 + c, 0, mtop_attr(MTOP_C_LABEL), names[c]);
        bar(r, 1 + c, LABEL_W, width, seg[c], MTOP_NCOMP + 1, scale, budget, hr);
        const mtop_val *tv = &s->tab[MTOP_TOTAL][c];
        rput(r, 1 + c, r->w, tv->ok ? level_attr(tv->v, budget, hr) : 0,
             mtop_fmt_bytes(tv->v, tv->ok, a, sizeof a));
    }
    static const int segs[] = {0, 1, 2, 3, 4, MTOP_SEG_OTHER};
    legend(r, 4, 6, segs);
}

static int err_attr(const mtop_val *e)
{
    if (!e->ok) return mtop_attr(MTOP_C_DIM);
    double a = fabs(e->v);
    return mtop_attr(a <= 10 ? MTOP_C_OK : a <= 25 ? MTOP_C_WARN : MTOP_C_CRIT);
}

/* A table row: highlighted across the width and marked '>' when selected.
 * Returns the attribute the row's cells start from. */
static int table_row_start(const mtop_rect *r, int row, bool selected)
{
    if (selected && row < r->h) {
        attron(mtop_attr(MTOP_C_SELECTED));
        mvhline(r->y + row, r->x, ' ', r->w);
        attroff(mtop_attr(MTOP_C_SELECTED));
    }
    int base = selected ? mtop_attr(MTOP_C_SELECTED) : 0;
    put(r, row, 0, base, selected ? ">" : " ");
    return base;
}

static void run_table(const mtop_rect *r, const mtop_snapshot *s, int sel)
{
    char a[48];
    int cw = (r->w - 14) / 4;
    if (cw > 12) cw = 12;
    put(r, 0, 0, mtop_attr(MTOP_C_TITLE), "component");
    for (int k = 0; k < MTOP_NCOL; k++) rput(r, 0, 14 + cw * (k + 1), mtop_attr(MTOP_C_TITLE), mtop_col_label[k]);
    double budget = s->budget.ok ? s->budget.v : 0, hr = s->headroom.ok ? s->headroom.v : 0;
    for (int g = 0; g < MTOP_NGROUP; g++) {
        int row = 1 + g;
        int base = table_row_start(r, row, g == sel);
        if (g < MTOP_NCOMP) {
            char gl[2] = {mtop_seg_glyph[g], 0};
            put(r, row, 1, seg_attr(g) | base, gl);
        }
        put(r, row, 3, base | (g == MTOP_TOTAL ? (int)A_BOLD : 0), mtop_group_label[g]);
        for (int k = 0; k < MTOP_NCOL; k++) {
            const mtop_val *v = &s->tab[g][k];
            int attr = base;
            if (k == MTOP_COL_ERROR) {
                mtop_fmt_pct(v->v, v->ok, a, sizeof a);
                attr |= err_attr(v);
            } else {
                mtop_fmt_bytes(v->v, v->ok, a, sizeof a);
                if (!v->ok) attr |= mtop_attr(MTOP_C_DIM);
                else if (g == MTOP_TOTAL) attr |= level_attr(v->v, budget, hr);
            }
            rput(r, row, 14 + cw * (k + 1), attr, a);
        }
    }
    put(r, 7, 3, 0, "rss");
    rput(r, 7, 14 + cw, s->rss.ok ? 0 : mtop_attr(MTOP_C_DIM), mtop_fmt_bytes(s->rss.v, s->rss.ok, a, sizeof a));
}

/* ---------- run view: the rank table of a multi-rank run ---------- */

/* Where each column ends (right-aligned), left to right; a column that does
 * not fit is left out whole. */
#define RANK_END 5
#define STATE_AT 7
enum { RCOL_CURRENT, RCOL_PEAK, RCOL_PREDICTED, RCOL_ERROR, RCOL_COMP0, RCOL_STEP = RCOL_COMP0 + MTOP_NCOMP, NRCOL };
static int rank_col_end(int c)
{
    static const int width[NRCOL] = {11, 11, 11, 8, 12, 12, 12, 12, 12, 8};
    int end = STATE_AT + 6;
    for (int i = 0; i <= c; i++) end += width[i];
    return end;
}

static const char *rank_col_name(int c)
{
    if (c < RCOL_COMP0) return mtop_col_label[c];
    return c == RCOL_STEP ? "step" : mtop_group_label[c - RCOL_COMP0];
}

static int state_attr(const char *state)
{
    if (!strcmp(state, "live")) return mtop_attr(MTOP_C_OK);
    if (!strcmp(state, "gone") || !strcmp(state, "error")) return mtop_attr(MTOP_C_CRIT);
    return mtop_attr(MTOP_C_WARN);
}

/* The text and attribute of column c of a rank's row. */
static int rank_cell(const mtop_snapshot *s, int c, bool heaviest, char *buf, size_t len)
{
    const mtop_val *v = c < RCOL_COMP0 ? &s->tab[MTOP_TOTAL][c] : c < RCOL_STEP ? &s->tab[c - RCOL_COMP0][MTOP_COL_PEAK]
                                                                                  : &s->step;
    if (c == RCOL_STEP) snprintf(buf, len, v->ok ? "%.0f" : MTOP_NA, v->v);
    else if (c == RCOL_ERROR) mtop_fmt_pct(v->v, v->ok, buf, len);
    else mtop_fmt_bytes(v->v, v->ok, buf, len);
    if (!v->ok) return mtop_attr(MTOP_C_DIM);
    if (c == RCOL_ERROR) return err_attr(v);
    return heaviest && c == RCOL_PEAK ? mtop_attr(MTOP_C_WARN) : 0;
}

static void rank_row(const mtop_rect *r, int row, const mtop_rank_table *t, int i)
{
    const mtop_snapshot *s = t->snap[i];
    char a[48];
    bool heaviest = i == t->heaviest;
    int base = table_row_start(r, row, i == t->selected);
    if (heaviest) put(r, row, 1, base | mtop_attr(MTOP_C_WARN), "*");
    snprintf(a, sizeof a, "%d", t->rank[i]);
    rput(r, row, RANK_END, base | (heaviest ? mtop_attr(MTOP_C_WARN) : (int)A_BOLD), a);
    put(r, row, STATE_AT, base | state_attr(s->state), s->state);
    if (!strcmp(s->state, "waiting") && s->rows == 0) {
        putf(r, row, STATE_AT + 8, base | mtop_attr(MTOP_C_DIM), "for rank %d: '%s' is not there yet", t->rank[i],
             s->file);
        return;
    }
    for (int c = 0; c < NRCOL && rank_col_end(c) <= r->w; c++) {
        int attr = rank_cell(s, c, heaviest, a, sizeof a);
        rput(r, row, rank_col_end(c), base | attr, a);
    }
}

static void run_ranks(const mtop_rect *r, const mtop_rank_table *t)
{
    char text[160], a[48];
    int n = t->ranks > t->n ? t->ranks : t->n;
    if (t->heaviest >= 0)
        snprintf(text, sizeof text, "ranks %d, heaviest * rank %d; totals, then each component at its peak; r/R select",
                 n, t->rank[t->heaviest]);
    else
        snprintf(text, sizeof text, "ranks %d, heaviest N/A (no peak yet); r/R select", n);
    title(r, 0, text);
    rput(r, 1, RANK_END, mtop_attr(MTOP_C_TITLE), "rank");
    put(r, 1, STATE_AT, mtop_attr(MTOP_C_TITLE), "state");
    for (int c = 0; c < NRCOL && rank_col_end(c) <= r->w; c++)
        rput(r, 1, rank_col_end(c), mtop_attr(MTOP_C_TITLE), rank_col_name(c));
    int shown = r->h - 2, first = t->selected >= shown ? t->selected - shown + 1 : 0;
    for (int i = first; i < t->n && i - first < shown; i++) rank_row(r, 2 + i - first, t, i);
    if (t->n - first > shown) {
        snprintf(a, sizeof a, "+%d more", t->n - first - shown);
        rput(r, 0, r->w, mtop_attr(MTOP_C_DIM), a);
    }
}

static void run_detail(const mtop_rect *r, const mtop_snapshot *s, const mtop_history *h, int sel)
{
    char a[48], b[48], t[128];
    if (sel < 0 || sel >= MTOP_NGROUP) sel = 0;
    snprintf(t, sizeof t, "detail: %s", mtop_group_label[sel]);
    title(r, 0, t);
    static const char *const src[3] = {"cur_", "peak_", "pred_"};
    for (int k = 0; k < 3; k++) {
        const mtop_val *v = &s->tab[sel][k];
        put(r, 1 + k, 0, mtop_attr(MTOP_C_LABEL), mtop_col_label[k]);
        put(r, 1 + k, 10, v->ok ? (int)A_BOLD : mtop_attr(MTOP_C_DIM), mtop_fmt_bytes(v->v, v->ok, a, sizeof a));
        putf(r, 1 + k, 22, mtop_attr(MTOP_C_DIM), "%s%s", src[k], mtop_group_label[sel]);
    }
    const mtop_val *e = &s->tab[sel][MTOP_COL_ERROR];
    put(r, 4, 0, mtop_attr(MTOP_C_LABEL), "error");
    put(r, 4, 10, err_attr(e), mtop_fmt_pct(e->v, e->ok, a, sizeof a));
    put(r, 4, 22, mtop_attr(MTOP_C_DIM), "(peak - predicted) / predicted");
    double lo, hi;
    put(r, 5, 0, mtop_attr(MTOP_C_LABEL), "range");
    if (mtop_history_range(h, MTOP_CUR(sel), &lo, &hi))
        putf(r, 5, 10, 0, "%s .. %s (current, last %d steps)", mtop_fmt_bytes(lo, true, a, sizeof a),
             mtop_fmt_bytes(hi, true, b, sizeof b), h->n);
    else
        put(r, 5, 10, mtop_attr(MTOP_C_DIM), MTOP_NA);
    const mtop_val *cur = &s->tab[sel][MTOP_COL_CURRENT], *tot = &s->tab[MTOP_TOTAL][MTOP_COL_CURRENT];
    put(r, 6, 0, mtop_attr(MTOP_C_LABEL), "share");
    if (cur->ok && tot->ok) putf(r, 6, 10, 0, "%s of the current total", mtop_fmt_share(cur->v, tot->v, a, sizeof a));
    else put(r, 6, 10, mtop_attr(MTOP_C_DIM), MTOP_NA);
}

#define AXIS_W 10

static void mem_chart(const mtop_rect *r, const mtop_snapshot *s, const mtop_history *h)
{
    char a[48], t[192];
    const mtop_val *pred = &s->tab[MTOP_TOTAL][MTOP_COL_PREDICTED];
    snprintf(t, sizeof t, "cur_total over time, '-' predicted peak %s", mtop_fmt_bytes(pred->v, pred->ok, a, sizeof a));
    title(r, 0, t);
    int ph = r->h - 2, pw = r->w - AXIS_W - 1;
    if (ph < 1 || pw < 2) return;
    double ys[1024];
    unsigned char ok[1024];
    if (pw > 1024) pw = 1024;
    int n = mtop_history_series(h, MTOP_CUR(MTOP_TOTAL), pw, MTOP_AGG_MAX, ys, ok);
    double top = pred->ok ? pred->v : 0;
    for (int i = 0; i < n; i++)
        if (ok[i] && ys[i] > top) top = ys[i];
    if (top <= 0) top = 1;
    top *= 1.05;
    rput(r, 1, AXIS_W, mtop_attr(MTOP_C_DIM), mtop_fmt_bytes(top, true, a, sizeof a));
    rput(r, ph, AXIS_W, mtop_attr(MTOP_C_DIM), "0 B");
    int prow = pred->ok ? (int)floor(pred->v / top * ph) : -1; /* from the bottom */
    if (prow >= ph) prow = ph - 1;
    for (int c = 0; c < pw; c++) {
        int halves = c < n && ok[c] ? (int)lround(ys[c] / top * ph * 2) : 0;
        for (int k = 0; k < ph; k++) { /* k = 0 is the bottom row */
            int row = ph - k, filled = halves - 2 * k;
            int x = AXIS_W + 1 + c;
            if (filled >= 2) putch(r, row, x, mtop_attr(MTOP_C_CHART), '|');
            else if (filled == 1) putch(r, row, x, mtop_attr(MTOP_C_CHART), '.');
            else if (k == prow) putch(r, row, x, mtop_attr(MTOP_C_PREDICTED), '-');
        }
    }
    long first = h->n ? (long)mtop_history_at(h, 0)->v[MTOP_STEP] : 0;
    long last = h->n ? (long)h->last.v[MTOP_STEP] : 0;
    if (h->n) putf(r, r->h - 1, AXIS_W + 1, mtop_attr(MTOP_C_DIM), "step %ld .. %ld (%d rows)", first, last, h->n);
}

static void loss_chart(const mtop_rect *r, const mtop_history *h)
{
    title(r, 0, "loss");
    int ph = r->h - 2, pw = r->w - AXIS_W - 1;
    if (ph < 1 || pw < 2) return;
    double ys[1024];
    unsigned char ok[1024];
    if (pw > 1024) pw = 1024;
    int n = mtop_history_series(h, MTOP_LOSS, pw, MTOP_AGG_MEAN, ys, ok);
    double lo = 0, hi = 0;
    bool any = false;
    for (int i = 0; i < n; i++)
        if (ok[i]) {
            if (!any || ys[i] < lo) lo = ys[i];
            if (!any || ys[i] > hi) hi = ys[i];
            any = true;
        }
    if (!any) {
        put(r, 1, AXIS_W + 1, mtop_attr(MTOP_C_DIM), MTOP_NA);
        return;
    }
    char a[32];
    snprintf(a, sizeof a, "%.4g", hi);
    rput(r, 1, AXIS_W, mtop_attr(MTOP_C_DIM), a);
    snprintf(a, sizeof a, "%.4g", lo);
    rput(r, ph, AXIS_W, mtop_attr(MTOP_C_DIM), a);
    double span = hi - lo;
    for (int c = 0; c < n; c++) {
        if (!ok[c]) continue;
        int k = span > 0 ? (int)lround((ys[c] - lo) / span * (ph - 1)) : 0;
        putch(r, ph - k, AXIS_W + 1 + c, mtop_attr(MTOP_C_CHART), '*');
    }
    char b[32];
    putf(r, r->h - 1, AXIS_W + 1, mtop_attr(MTOP_C_DIM), "last %s", mtop_fmt_loss(h->sticky.v[MTOP_LOSS], mtop_row_ok(&h->sticky, MTOP_LOSS), b, sizeof b));
}

static void status_line(const mtop_rect *r, const mtop_snapshot *s, const mtop_draw_ctx *ctx)
{
    int col = put(r, 0, 0, mtop_attr(MTOP_C_DIM), "h help  q quit");
    if (ctx->error && *ctx->error) col = put(r, 0, col + 2, mtop_attr(MTOP_C_CRIT), ctx->error);
    if (ctx->message && *ctx->message) col = put(r, 0, col + 2, mtop_attr(MTOP_C_WARN), ctx->message);
    const mtop_child_view *ch = ctx->child;
    if (ch && ch->active && child_failed(ch) && ch->log_tail && *ch->log_tail)
        col = putf(r, 0, col + 2, mtop_attr(MTOP_C_CRIT), "| %s: \"%s\"", ch->cmd, ch->log_tail);
    if (ctx->ranks && ctx->ranks->problem[0])
        col = putf(r, 0, col + 2, mtop_attr(MTOP_C_CRIT), "| %s", ctx->ranks->problem);
    if (s) {
        col = putf(r, 0, col + 2, 0, "| rows %ld", s->rows);
        if (s->skipped)
            col = putf(r, 0, col + 2, mtop_attr(MTOP_C_WARN), "skipped %ld (%s)", s->skipped, s->skip_reason);
        else
            col = put(r, 0, col + 2, mtop_attr(MTOP_C_DIM), "skipped 0");
        if (s->resets) col = putf(r, 0, col + 2, mtop_attr(MTOP_C_WARN), "resets %ld (%s)", s->resets, s->reset_why);
        else col = put(r, 0, col + 2, mtop_attr(MTOP_C_DIM), "resets 0");
    }
    if (ch && ch->active) putf(r, 0, col + 2, 0, "| log %s", ch->log);
}

void mtop_draw_run(const mtop_layout *L, const mtop_snapshot *s, const mtop_history *h,
                   const mtop_draw_ctx *ctx)
{
    const mtop_rect *w = L->win;
    if (w[MTOP_W_HEADER].h) run_header(&w[MTOP_W_HEADER], s, ctx);
    if (w[MTOP_W_SETTINGS].h) run_settings(&w[MTOP_W_SETTINGS], s);
    if (w[MTOP_W_BARS].h) run_bars(&w[MTOP_W_BARS], s);
    if (w[MTOP_W_RANKS].h && ctx->ranks) run_ranks(&w[MTOP_W_RANKS], ctx->ranks);
    if (w[MTOP_W_TABLE].h) run_table(&w[MTOP_W_TABLE], s, ctx->sel);
    if (w[MTOP_W_DETAIL].h) run_detail(&w[MTOP_W_DETAIL], s, h, ctx->sel);
    if (w[MTOP_W_MEMCHART].h) mem_chart(&w[MTOP_W_MEMCHART], s, h);
    if (w[MTOP_W_LOSS].h) loss_chart(&w[MTOP_W_LOSS], h);
    if (w[MTOP_W_STATUS].h) status_line(&w[MTOP_W_STATUS], s, ctx);
}

/* ---------- what-if view ---------- */

static void whatif_header(const mtop_rect *r, const mtop_whatif *w)
{
    char a[48], b[48], c[48];
    int col = put(r, 0, 0, mtop_attr(MTOP_C_TITLE), "memtop what-if");
    col = item(r, 0, col + 2, "model", w->model.name[0] ? w->model.name : "custom", A_BOLD);
    mp_params p;
    mp_param_count(&w->model, &p);
    col = item(r, 0, col, "params", mp_fmt_count(p.total, a, sizeof a), 0);
    if (w->have_gpu) {
        col = item(r, 0, col, "gpu", w->gpu.name, A_BOLD);
        item(r, 0, col, "budget", mtop_fmt_bytes(w->gpu.mem_bytes, true, a, sizeof a), 0);
    } else {
        item(r, 0, col, "gpu", "N/A (press g)", 0);
    }
    if (!w->ok) {
        col = put(r, 1, 0, mtop_attr(MTOP_C_CRIT), "invalid:");
        put(r, 1, col + 1, mtop_attr(MTOP_C_CRIT), w->err);
        return;
    }
    double usable = w->gpu.mem_bytes * (1 - w->headroom);
    char full[256], brief[192];
    mtop_fmt_bytes(w->e.device_bytes, true, a, sizeof a);
    mtop_fmt_bytes(usable, true, b, sizeof b);
    if (!w->have_gpu) {
        putf(r, 1, 0, 0, "device %s (no budget to compare with)", a);
    } else if (w->fits) {
        mtop_fmt_bytes(usable - w->e.device_bytes, true, c, sizeof c);
        snprintf(full, sizeof full, "fits: device %s of usable %s (%.0f%% headroom), %s to spare", a, b,
                 w->headroom * 100, c);
        snprintf(brief, sizeof brief, "fits: %s of %s usable, %s spare", a, b, c);
        put_either(r, 1, 0, mtop_attr(MTOP_C_OK), full, brief);
    } else {
        mtop_fmt_bytes(w->e.device_bytes - usable, true, c, sizeof c);
        snprintf(full, sizeof full, "does not fit: device %s, %s over the usable %s (%.0f%% headroom)", a, c, b,
                 w->headroom * 100);
        snprintf(brief, sizeof brief, "does not fit: %s, %s over %s usable", a, c, b);
        put_either(r, 1, 0, mtop_attr(MTOP_C_CRIT), full, brief);
    }
}

static void whatif_settings(const mtop_rect *r, const mtop_whatif *w)
{
    const mp_settings *s = &w->s;
    char v[16][80];
    const char *keys[16], *names[16];
    int n = 0;
#define KNOB(k, nm, ...) (keys[n] = k, names[n] = nm, snprintf(v[n], sizeof v[n], __VA_ARGS__), n++)
    KNOB("+/-", "batch", "%lld", (long long)s->batch);
    KNOB("a/A", "accum", "%lld", (long long)s->accum);
    KNOB("s/S", "seq", "%lld", (long long)s->seq);
    KNOB("p", "precision", "%s", mp_precision_name(s->precision));
    KNOB("o", "optimizer", "%s", mp_optimizer_name(s->optimizer));
    KNOB("c", "checkpointing", "%s", mp_ckpt_name(s->checkpointing));
    KNOB("l", "lora-rank", "%lld", (long long)s->lora_rank);
    KNOB("w", "quant", "%s", mp_quant_name(s->quant));
    KNOB("f", "attention", "%s", mp_attention_name(s->attention));
    KNOB("e", "ce", "%s", mp_ce_name(s->ce));
    KNOB("g/G", "gpu", "%s", w->have_gpu ? w->gpu.name : MTOP_NA);
#undef KNOB
    int row = 0, col = 0;
    for (int i = 0; i < n; i++) {
        int need = (int)(strlen(keys[i]) + 3 + strlen(names[i]) + 1 + strlen(v[i]));
        if (col > 0 && col + need > r->w) {
            row++;
            col = 0;
        }
        col = putf(r, row, col, mtop_attr(MTOP_C_DIM), "[%s]", keys[i]);
        col = put(r, row, col + 1, mtop_attr(MTOP_C_LABEL), names[i]);
        col = put(r, row, col + 1, A_BOLD, v[i]) + 2;
    }
}

static void whatif_bars(const mtop_rect *r, const mtop_whatif *w)
{
    char a[48], b[48], t[256];
    double budget = mtop_whatif_budget(w), hr = budget * (1 - w->headroom);
    if (budget > 0) {
        snprintf(t, sizeof t, "memory at the peak (GiB = 2^30 bytes)  budget %s  headroom %s  '%c' out of memory  '%c' headroom",
                 mtop_fmt_bytes(budget, true, a, sizeof a), mtop_fmt_bytes(hr, true, b, sizeof b), MTOP_GLYPH_OOM,
                 MTOP_GLYPH_HEADROOM);
        if ((int)strlen(t) > r->w)
            snprintf(t, sizeof t, "GiB = 2^30 B  budget%c %s  headroom%c %s", MTOP_GLYPH_OOM, a,
                     MTOP_GLYPH_HEADROOM, b);
    } else
        snprintf(t, sizeof t, "memory at the peak (GiB = 2^30 bytes)  budget N/A");
    title(r, 0, t);
    static const int segs[] = {0, 1, 2, 3, 4, MTOP_SEG_OTHER};
    if (!w->ok) {
        put(r, 1, 0, mtop_attr(MTOP_C_CRIT), w->err);
        legend(r, 2, 6, segs);
        return;
    }
    /* At the peak the planner's overhead holds everything up to what the
     * device shows (allocator reserve, CUDA context): the parts sum to it. */
    double seg[MTOP_NSEG] = {0}, sum = 0;
    for (int c = 0; c < MTOP_NCOMP; c++) {
        seg[c] = w->e.at_peak[c];
        sum += seg[c];
    }
    seg[MTOP_SEG_OTHER] = w->e.device_bytes > sum ? w->e.device_bytes - sum : 0;
    double scale = budget > w->e.device_bytes ? budget : w->e.device_bytes;
    int width = r->w - LABEL_W - 2 - VALUE_W - 1;
    put(r, 1, 0, mtop_attr(MTOP_C_LABEL), "device");
    bar(r, 1, LABEL_W, width, seg, MTOP_NSEG, scale, budget, hr);
    rput(r, 1, r->w, level_attr(w->e.device_bytes, budget, hr), mtop_fmt_bytes(w->e.device_bytes, true, a, sizeof a));
    legend(r, 2, 6, segs);
}

static void whatif_table(const mtop_rect *r, const mtop_whatif *w, int sel)
{
    char a[48];
    const int cw = 12;
    put(r, 0, 0, mtop_attr(MTOP_C_TITLE), "component");
    rput(r, 0, 14 + cw, mtop_attr(MTOP_C_TITLE), "at_peak");
    rput(r, 0, 14 + 2 * cw, mtop_attr(MTOP_C_TITLE), "own_peak");
    rput(r, 0, 14 + 3 * cw - 3, mtop_attr(MTOP_C_TITLE), "share");
    const mp_estimate *e = &w->e;
    for (int g = 0; g < MTOP_NCOMP; g++) {
        int row = 1 + g;
        int base = table_row_start(r, row, g == sel);
        char gl[2] = {mtop_seg_glyph[g], 0};
        put(r, row, 1, seg_attr(g) | base, gl);
        put(r, row, 3, base, mp_component_name(g));
        rput(r, row, 14 + cw, base, w->ok ? mtop_fmt_bytes(e->at_peak[g], true, a, sizeof a) : MTOP_NA);
        rput(r, row, 14 + 2 * cw, base, w->ok ? mtop_fmt_bytes(e->peak[g], true, a, sizeof a) : MTOP_NA);
        rput(r, row, 14 + 3 * cw - 3, base, w->ok ? mtop_fmt_share(e->at_peak[g], e->device_bytes, a, sizeof a) : MTOP_NA);
    }
    struct { const char *name; double v; const char *note; } rows[] = {
        {"allocated", e->total_bytes, NULL},
        {"reserved", e->reserved_bytes, "allocator reserve"},
        {"device", e->device_bytes, "reserved + CUDA context: what nvidia-smi shows"},
        {"host", e->host_bytes, "host RAM: offloaded state, data loader"},
    };
    char note[96];
    if (w->ok && e->nphases > 0 && e->peak_phase >= 0 && e->peak_phase < e->nphases)
        snprintf(note, sizeof note, "peak during %s", e->phases[e->peak_phase].name);
    else
        note[0] = 0;
    rows[0].note = note;
    for (int i = 0; i < 4; i++) {
        int row = 1 + MTOP_NCOMP + i;
        put(r, row, 3, i == 2 ? (int)A_BOLD : 0, rows[i].name);
        rput(r, row, 14 + cw, i == 2 && w->ok ? level_attr(rows[i].v, mtop_whatif_budget(w), mtop_whatif_budget(w) * (1 - w->headroom)) : 0,
             w->ok ? mtop_fmt_bytes(rows[i].v, true, a, sizeof a) : MTOP_NA);
        if (w->ok && rows[i].note) put(r, row, 14 + cw + 2, mtop_attr(MTOP_C_DIM), rows[i].note);
    }
}

static void whatif_detail(const mtop_rect *r, const mtop_whatif *w, int sel)
{
    char a[48], t[128];
    if (sel < 0 || sel >= MTOP_NCOMP) sel = 0;
    snprintf(t, sizeof t, "terms behind %s", mp_component_name(sel));
    title(r, 0, t);
    if (!w->ok) {
        put(r, 1, 0, mtop_attr(MTOP_C_CRIT), w->err);
        return;
    }
    int row = 1;
    for (int i = 0; i < w->e.nterms && row < r->h; i++) {
        const mp_term *term = &w->e.terms[i];
        if (term->component != sel) continue;
        char name[40];
        put(r, row, 0, 0, mtop_fit(term->name, 36, name, sizeof name));
        rput(r, row, 48, A_BOLD, mtop_fmt_bytes(term->bytes, true, a, sizeof a));
        put(r, row, 50, mtop_attr(MTOP_C_DIM), term->formula);
        row++;
    }
    if (row == 1) put(r, 1, 0, mtop_attr(MTOP_C_DIM), "no terms: 0 B");
}

void mtop_draw_whatif(const mtop_layout *L, const mtop_whatif *w, const mtop_draw_ctx *ctx)
{
    const mtop_rect *x = L->win;
    int sel = ctx->sel >= MTOP_NCOMP ? MTOP_NCOMP - 1 : ctx->sel;
    if (x[MTOP_W_HEADER].h) whatif_header(&x[MTOP_W_HEADER], w);
    if (x[MTOP_W_SETTINGS].h) whatif_settings(&x[MTOP_W_SETTINGS], w);
    if (x[MTOP_W_BARS].h) whatif_bars(&x[MTOP_W_BARS], w);
    if (x[MTOP_W_TABLE].h) whatif_table(&x[MTOP_W_TABLE], w, sel);
    if (x[MTOP_W_DETAIL].h) whatif_detail(&x[MTOP_W_DETAIL], w, sel);
    if (x[MTOP_W_STATUS].h) status_line(&x[MTOP_W_STATUS], NULL, ctx);
}

/* ---------- help ---------- */

void mtop_draw_help(const mtop_layout *L, const mtop_draw_ctx *ctx)
{
    const mtop_rect *r = &L->win[MTOP_W_HELP];
    unsigned bit = ctx->back == MTOP_VIEW_WHATIF ? 2u : 1u;
    title(r, 0, ctx->back == MTOP_VIEW_WHATIF ? "memtop keys (what-if view)" : "memtop keys (run view)");
    /* one line per action: every key that does it, then what it does */
    char keys[MTOP_NACT][48];
    const char *help[MTOP_NACT] = {0};
    int order[MTOP_NACT], n = 0;
    for (int i = 0; i < mtop_nkeys; i++) {
        const mtop_keydef *k = &mtop_keys[i];
        if (!(k->views & bit)) continue;
        int a = k->action;
        if (!help[a]) {
            help[a] = k->help;
            keys[a][0] = 0;
            order[n++] = a;
        }
        size_t len = strlen(keys[a]);
        snprintf(keys[a] + len, sizeof keys[a] - len, "%s%s", len ? " " : "", k->label);
    }
    int lines = r->h - 4, cols = n > lines && r->w >= 100 ? 2 : 1;
    int per = cols == 2 ? (n + 1) / 2 : n, cw = r->w / cols;
    mtop_rect col_r = *r;
    for (int i = 0; i < n; i++) {
        int c = i / (per ? per : 1), row = 1 + i % (per ? per : 1);
        col_r.x = r->x + c * cw;
        col_r.w = c == cols - 1 ? r->w - c * cw : cw - 1;
        put(&col_r, row, 1, A_BOLD, keys[order[i]]);
        put(&col_r, row, 14, 0, help[order[i]]);
    }
    int row = 1 + per + 1;
    put(r, row++, 1, 0, "units: GiB = 2^30 bytes, MiB = 2^20 bytes; N/A: not in the metrics file");
    char t[160];
    snprintf(t, sizeof t, "bars: %c weights  %c gradients  %c optimizer  %c activations  %c overhead  %c unattributed",
             mtop_seg_glyph[0], mtop_seg_glyph[1], mtop_seg_glyph[2], mtop_seg_glyph[3], mtop_seg_glyph[4],
             mtop_seg_glyph[5]);
    put(r, row++, 1, 0, t);
    putf(r, row, 1, mtop_attr(MTOP_C_DIM), "'%c' out of memory (budget), '%c' headroom; see memtop(1). Any key returns.",
         MTOP_GLYPH_OOM, MTOP_GLYPH_HEADROOM);
    status_line(&L->win[MTOP_W_STATUS], NULL, ctx);
}

void mtop_draw_too_small(int rows, int cols)
{
    char a[96], b[96];
    snprintf(a, sizeof a, "terminal too small: %dx%d", cols, rows);
    snprintf(b, sizeof b, "memtop needs at least %dx%d (q quits)", MTOP_MIN_COLS, MTOP_MIN_ROWS);
    mtop_rect r = {0, 0, rows, cols};
    int y = rows / 2 - 1;
    if (y < 0) y = 0;
    int xa = (cols - (int)strlen(a)) / 2, xb = (cols - (int)strlen(b)) / 2;
    put(&r, y, xa < 0 ? 0 : xa, mtop_attr(MTOP_C_WARN), a);
    put(&r, y + 1, xb < 0 ? 0 : xb, 0, b);
}

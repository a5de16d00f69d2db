/* layout.c — the windows of each view as a pure function of (rows, cols, view). */
#include "layout.h"

#include <string.h>

const char *mtop_win_name(int w)
{
    static const char *const names[MTOP_NWIN] = {"header", "settings", "bars", "table", "detail",
                                                 "memchart", "loss", "help", "ranks", "status"};
    return w >= 0 && w < MTOP_NWIN ? names[w] : "?";
}

bool mtop_rect_overlap(mtop_rect a, mtop_rect b)
{
    if (a.h <= 0 || a.w <= 0 || b.h <= 0 || b.w <= 0) return false;
    return a.y < b.y + b.h && b.y < a.y + a.h && a.x < b.x + b.w && b.x < a.x + a.w;
}

static mtop_rect R(int y, int x, int h, int w)
{
    mtop_rect r = {y, x, h > 0 && w > 0 ? h : 0, h > 0 && w > 0 ? w : 0};
    return r;
}

/* Table width when the detail sits beside it. */
#define TABLE_W 66
#define WIDE_COLS 110

/* Charts in the rectangle (y, h) across the full width. */
static void charts(mtop_layout *L, int y, int h, int cols)
{
    if (h < 5) return;
    if (cols >= 100) {
        int mw = cols * 3 / 5;
        L->win[MTOP_W_MEMCHART] = R(y, 0, h, mw);
        L->win[MTOP_W_LOSS] = R(y, mw + 1, h, cols - mw - 1);
    } else if (h >= 10) {
        int mh = (h + 1) / 2;
        L->win[MTOP_W_MEMCHART] = R(y, 0, mh, cols);
        L->win[MTOP_W_LOSS] = R(y + mh, 0, h - mh, cols);
    } else {
        L->win[MTOP_W_MEMCHART] = R(y, 0, h, cols);
    }
}

/* The rank table of a multi-rank run at row y: a title, the column names
 * and a row per rank (8 at most, it scrolls), when the component table
 * keeps its 7 rows. */
static int rank_rows(mtop_layout *L, int y, int rows, int cols, int nranks)
{
    int room = rows - 1 - y - 7, h = 2 + (nranks < MTOP_RANK_ROWS ? nranks : MTOP_RANK_ROWS);
    if (nranks <= 0 || room < 3) return 0;
    if (h > room) h = room;
    L->win[MTOP_W_RANKS] = R(y, 0, h, cols);
    return h;
}

static void run_view(mtop_layout *L, int rows, int cols, int nranks)
{
    bool wide = cols >= WIDE_COLS;
    L->win[MTOP_W_HEADER] = R(0, 0, 2, cols);
    L->win[MTOP_W_SETTINGS] = R(2, 0, 1, cols);
    L->win[MTOP_W_BARS] = R(3, 0, 5, cols);
    int y = 8;
    y += rank_rows(L, y, rows, cols, nranks);
    int avail = rows - 1 - y; /* >= 7 at the minimum size */
    int th = avail < 8 ? avail : 8;
    if (wide) {
        L->win[MTOP_W_TABLE] = R(y, 0, th, TABLE_W);
        L->win[MTOP_W_DETAIL] = R(y, TABLE_W + 1, th, cols - TABLE_W - 1);
        y += th;
        charts(L, y, rows - 1 - y, cols);
    } else {
        L->win[MTOP_W_TABLE] = R(y, 0, th, cols);
        y += th;
        int rem = rows - 1 - y;
        if (rem >= 15) {
            L->win[MTOP_W_DETAIL] = R(y, 0, 5, cols);
            y += 5;
            rem -= 5;
        }
        charts(L, y, rem, cols);
    }
    L->win[MTOP_W_STATUS] = R(rows - 1, 0, 1, cols);
}

static void whatif_view(mtop_layout *L, int rows, int cols)
{
    bool wide = cols >= WIDE_COLS;
    int sh = cols >= 120 ? 2 : cols >= 90 ? 3 : 4;
    L->win[MTOP_W_HEADER] = R(0, 0, 2, cols);
    L->win[MTOP_W_SETTINGS] = R(2, 0, sh, cols);
    int y = 2 + sh;
    L->win[MTOP_W_BARS] = R(y, 0, 3, cols);
    y += 3;
    int avail = rows - 1 - y; /* >= 6 at the minimum size */
    int th = avail < 10 ? avail : 10;
    if (avail - th >= 3) { /* the terms' formulas want the full width */
        L->win[MTOP_W_TABLE] = R(y, 0, th, cols);
        L->win[MTOP_W_DETAIL] = R(y + th, 0, avail - th, cols);
    } else if (wide) {
        L->win[MTOP_W_TABLE] = R(y, 0, th, TABLE_W);
        L->win[MTOP_W_DETAIL] = R(y, TABLE_W + 1, avail, cols - TABLE_W - 1);
    } else {
        L->win[MTOP_W_TABLE] = R(y, 0, th, cols);
    }
    L->win[MTOP_W_STATUS] = R(rows - 1, 0, 1, cols);
}

int mtop_layout_compute(int rows, int cols, mtop_view view, mtop_layout *L)
{
    return mtop_layout_compute_ranks(rows, cols, view, 0, L);
}

int mtop_layout_compute_ranks(int rows, int cols, mtop_view view, int nranks, mtop_layout *L)
{
    memset(L, 0, sizeof *L);
    L->rows = rows;
    L->cols = cols;
    if (rows < MTOP_MIN_ROWS || cols < MTOP_MIN_COLS) {
        L->too_small = true;
        return -1;
    }
    switch (view) {
    case MTOP_VIEW_WHATIF: whatif_view(L, rows, cols); break;
    case MTOP_VIEW_HELP:
        L->win[MTOP_W_HELP] = R(0, 0, rows - 1, cols);
        L->win[MTOP_W_STATUS] = R(rows - 1, 0, 1, cols);
        break;
    default: run_view(L, rows, cols, nranks); break;
    }
    return 0;
}

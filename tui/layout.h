/*
 * layout.h — where every window goes: a pure function of the terminal size
 * and the view, so that it can be tested over every size.
 *
 * Windows are rectangles of stdscr (no curses WINDOWs): a window with h == 0
 * is hidden. No two shown windows overlap and all lie on screen. Below
 * MTOP_MIN_COLS x MTOP_MIN_ROWS nothing is laid out and too_small is set.
 *
 *     mtop_layout L;
 *     mtop_layout_compute(LINES, COLS, MTOP_VIEW_RUN, &L);
 *     if (L.too_small) say_so(); else draw_into(L.win[MTOP_W_BARS]);
 */
#ifndef MTOP_LAYOUT_H
#define MTOP_LAYOUT_H

#include <stdbool.h>

#define MTOP_MIN_COLS 60
#define MTOP_MIN_ROWS 16

typedef enum { MTOP_VIEW_RUN, MTOP_VIEW_WHATIF, MTOP_VIEW_HELP, MTOP_NVIEW } mtop_view;

typedef enum {
    MTOP_W_HEADER,     /* title, step/elapsed/ETA (run) or model/GPU/verdict (what-if) */
    MTOP_W_SETTINGS,   /* the run's settings, or the what-if knobs and their keys */
    MTOP_W_BARS,       /* stacked bars against the budget, with the legend */
    MTOP_W_TABLE,      /* per-component numbers; the selected row is the detail's */
    MTOP_W_DETAIL,     /* the selected component: measured numbers or planner terms */
    MTOP_W_MEMCHART,   /* cur_total over time with the predicted peak (run) */
    MTOP_W_LOSS,       /* the loss curve (run) */
    MTOP_W_HELP,       /* the key list (help view) */
    MTOP_W_RANKS,      /* a multi-rank run: one row per rank (run) */
    MTOP_W_STATUS,     /* the bottom line: keys, skipped lines, child, messages */
    MTOP_NWIN
} mtop_win;

typedef struct mtop_rect { int y, x, h, w; } mtop_rect;

typedef struct mtop_layout {
    int rows, cols;
    bool too_small;
    mtop_rect win[MTOP_NWIN];
} mtop_layout;

/* Rows of ranks the rank table shows at most; more scroll. */
#define MTOP_RANK_ROWS 8

/* Always succeeds; returns L->too_small ? -1 : 0. */
int mtop_layout_compute(int rows, int cols, mtop_view view, mtop_layout *L);
/* The same for a multi-rank run of nranks ranks (0: one file): the run view
 * gets the rank table below the bars when the component table keeps 7 rows. */
int mtop_layout_compute_ranks(int rows, int cols, mtop_view view, int nranks, mtop_layout *L);
/* The name of a window, for tests and messages ("bars"). */
const char *mtop_win_name(int w);
/* Whether two rectangles share a cell (empty ones never do). */
bool mtop_rect_overlap(mtop_rect a, mtop_rect b);

#endif

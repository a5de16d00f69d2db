/*
 * draw.h — paint the views onto stdscr from data already collected: a
 * snapshot and a history (run view), a what-if state, the key table. Drawing
 * never reads files, never waits, never allocates; every string is clipped
 * to its window from layout.h and cleaned first (mtop_clean, format.h): text
 * from a file or a command reaches ncurses without a control byte.
 *
 * Colours are named by meaning (one table, below); without colour (--no-color,
 * NO_COLOR, or a terminal without colours) the same screen is drawn with
 * attributes only, and bar segments stay distinct by their glyphs.
 *
 *     mtop_draw_colors(use_color);           // after initscr()
 *     erase();
 *     mtop_draw_run(&layout, &snapshot, &history, &ctx);
 *     refresh();
 */
#ifndef MTOP_DRAW_H
#define MTOP_DRAW_H

#include <stdbool.h>
#include <sys/types.h>

#include "history.h"
#include "layout.h"
#include "ranks.h"
#include "snapshot.h"
#include "whatif.h"

typedef enum {
    MTOP_C_NORMAL,
    MTOP_C_WEIGHTS, MTOP_C_GRADIENTS, MTOP_C_OPTIMIZER, MTOP_C_ACTIVATIONS, MTOP_C_OVERHEAD,
    MTOP_C_OTHER,                       /* bar segments, in mtop_seg order after NORMAL */
    MTOP_C_TITLE, MTOP_C_LABEL, MTOP_C_OK, MTOP_C_WARN, MTOP_C_CRIT, MTOP_C_STALE,
    MTOP_C_PREDICTED, MTOP_C_CHART, MTOP_C_SELECTED, MTOP_C_DIM,
    MTOP_NCOLOR
} mtop_color;

/* What a child started by `memtop -- CMD` is doing (collected by main). */
typedef struct mtop_child_view {
    bool active;            /* memtop started a command */
    pid_t pid;
    bool running;
    int status;             /* wait status once it has ended */
    const char *cmd;        /* argv[0] */
    const char *log;        /* its stdout/stderr */
    const char *log_tail;   /* the log's last line as written, "" if none (drawn cleaned, as every string) */
} mtop_child_view;

typedef struct mtop_draw_ctx {
    int sel;                /* selected row: 0..4 components, 5 total (run view) */
    mtop_view back;         /* the view the help screen returns to */
    const mtop_child_view *child;
    const char *message;    /* a transient message for the status line, or NULL */
    const char *error;      /* why a file cannot be read now, or NULL or "" */
    int interval_ms;
    const mtop_rank_table *ranks; /* a multi-rank run (the panels show ranks->selected), or NULL */
} mtop_draw_ctx;

/* Set up the colour pairs (use_color) or the monochrome attributes. */
void mtop_draw_colors(bool use_color);
/* The attribute for a meaning under the current scheme. */
int mtop_attr(mtop_color c);

void mtop_draw_run(const mtop_layout *L, const mtop_snapshot *s, const mtop_history *h,
                   const mtop_draw_ctx *ctx);
void mtop_draw_whatif(const mtop_layout *L, const mtop_whatif *w, const mtop_draw_ctx *ctx);
void mtop_draw_help(const mtop_layout *L, const mtop_draw_ctx *ctx);
/* Below the minimum size: a message, itself clipped to the screen. */
void mtop_draw_too_small(int rows, int cols);

/* "exited with status 0", "killed by signal 9", "running (pid 42)" */
const char *mtop_child_text(const mtop_child_view *c, char *buf, size_t len);

#endif

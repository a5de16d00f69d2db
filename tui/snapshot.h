/*
 * snapshot.h — what the run view shows, computed once per refresh from the
 * follower and the history, and the --once JSON/CSV output of the same.
 *
 * One vocabulary: the screen's labels are the snapshot's names.
 *   header:  step steps elapsed eta loss tokens_per_s lr rss budget headroom
 *            rows skipped resets stale state
 *   table:   rows weights gradients optimizer activations overhead total,
 *            columns current peak predicted error
 * JSON nests the table ({"components": {"weights": {"current": ...}}});
 * CSV flattens it to "weights_current". Bytes are bytes, times seconds,
 * error a percentage; N/A is null in JSON and an empty CSV field.
 *
 *     mtop_snapshot s;
 *     mtop_snapshot_make(&s, &follow, &hist, &opts, age_s);
 *     char *j = mtop_snapshot_json(&s);  puts(j);  free(j);
 */
#ifndef MTOP_SNAPSHOT_H
#define MTOP_SNAPSHOT_H

#include <stdbool.h>
#include <stdio.h>

#include "follow.h"
#include "history.h"
#include "metrics.h"

typedef struct mtop_val { double v; bool ok; } mtop_val;

/* Table rows: the components and the total; table columns. */
enum { MTOP_COL_CURRENT, MTOP_COL_PEAK, MTOP_COL_PREDICTED, MTOP_COL_ERROR, MTOP_NCOL };
extern const char *const mtop_group_label[MTOP_NGROUP]; /* "weights" .. "total" */
extern const char *const mtop_col_label[MTOP_NCOL];     /* "current" .. "error" */

typedef struct mtop_snap_opts {
    double stale_s;          /* seconds without a row before the data is stale */
    double budget_bytes;     /* > 0: overrides the file's budget */
    double headroom;         /* fraction below the budget, default 0.10 */
    int rate_window;         /* rows used for the ETA's seconds per step */
} mtop_snap_opts;

typedef struct mtop_snapshot {
    const char *file;
    const char *state;       /* "waiting", "live", "stale", "gone", "error" */
    const mtop_meta *meta;
    mtop_val step, steps, elapsed, eta, loss, tokens_per_s, lr, rss, budget, headroom;
    mtop_val tab[MTOP_NGROUP][MTOP_NCOL];
    double other[3];         /* current, peak, predicted not in any component (bars) */
    long rows, skipped, resets;
    const char *skip_reason; /* the last skipped line's reason, "" if none */
    const char *reset_why;   /* why the file was last reread: "truncated", "replaced", "rewritten" */
    bool stale;
    double age_s;            /* seconds since the newest row, -1 unknown */
} mtop_snapshot;

void mtop_snap_opts_default(mtop_snap_opts *o);
/* age_s: seconds since the newest row arrived (-1 unknown). */
void mtop_snapshot_make(mtop_snapshot *s, const mtop_follow *f, const mtop_history *h,
                        const mtop_snap_opts *o, double age_s);
/* Bar segments of column c (current, peak or predicted): the five
 * components then the unattributed rest; returns the bar's total. */
double mtop_snapshot_segments(const mtop_snapshot *s, int col, double seg[MTOP_NCOMP + 1]);

/* The snapshot as a JSON object / a CSV header plus one row; malloc'd,
 * newline-terminated, NULL when out of memory. */
char *mtop_snapshot_json(const mtop_snapshot *s);
char *mtop_snapshot_csv(const mtop_snapshot *s);
/* The pieces, for a multi-rank run's output: the JSON object (the caller
 * owns it), the CSV header and one row (each with its newline). */
typedef struct json_t json_t;
json_t *mtop_snapshot_object(const mtop_snapshot *s);
void mtop_snapshot_csv_header(FILE *f);
void mtop_snapshot_csv_row(FILE *f, const mtop_snapshot *s);

#endif

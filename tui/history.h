/*
 * history.h — the rows of a run kept in a fixed ring buffer (the last `cap`
 * steps), the latest value of every field, and the downsampling the charts
 * need. Pure: no I/O, one allocation at init.
 *
 *     mtop_history h;
 *     if (mtop_history_init(&h, 4096)) fail();
 *     mtop_history_push(&h, &row);
 *     n = mtop_history_series(&h, MTOP_CUR(MTOP_TOTAL), width, MTOP_AGG_MAX, ys, ok);
 *     mtop_history_free(&h);
 */
#ifndef MTOP_HISTORY_H
#define MTOP_HISTORY_H

#include "metrics.h"

typedef struct mtop_history {
    mtop_row *rows;
    int cap;                 /* ring size */
    int n;                   /* rows held, <= cap */
    int head;                /* index of the oldest row */
    long pushed;             /* rows pushed since the last clear */
    mtop_row last;           /* the newest row (valid only if pushed > 0) */
    mtop_row sticky;         /* per field: the newest valid value seen */
    mtop_row first;          /* the first row since the last clear */
} mtop_history;

typedef enum { MTOP_AGG_MAX, MTOP_AGG_MEAN, MTOP_AGG_LAST } mtop_agg;

/* 0 on success, -1 when out of memory. cap < 2 is raised to 2. */
int mtop_history_init(mtop_history *h, int cap);
void mtop_history_free(mtop_history *h);   /* NULL-safe, idempotent */
void mtop_history_clear(mtop_history *h);
void mtop_history_push(mtop_history *h, const mtop_row *r);
/* i = 0 is the oldest held row, n - 1 the newest. */
const mtop_row *mtop_history_at(const mtop_history *h, int i);

/* Downsample `field` over the held rows into at most `width` columns, oldest
 * left: with n <= width rows one column per row; otherwise column c covers
 * rows [c*n/width, (c+1)*n/width) and aggregates them. ok[c] is 0 when no row
 * of the column has the field. Returns the number of columns filled. */
int mtop_history_series(const mtop_history *h, int field, int width, mtop_agg agg,
                        double *out, unsigned char *ok);
/* Smallest and largest finite value of `field` held; false if there is none. */
bool mtop_history_range(const mtop_history *h, int field, double *lo, double *hi);
/* Seconds per step over the newest `window` rows (from time_s and step);
 * returns -1 when it cannot be known. */
double mtop_history_step_seconds(const mtop_history *h, int window);

#endif

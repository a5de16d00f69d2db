/* history.c — ring buffer of rows, latest values, chart downsampling. */
#include "history.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int mtop_history_init(mtop_history *h, int cap)
{
    memset(h, 0, sizeof *h);
    if (cap < 2) cap = 2;
    h->rows = calloc((size_t)cap, sizeof *h->rows);
    if (!h->rows) return -1;
    h->cap = cap;
    return 0;
}

void mtop_history_free(mtop_history *h)
{
    if (!h) return;
    free(h->rows);
    h->rows = NULL;
    h->cap = h->n = h->head = 0;
}

void mtop_history_clear(mtop_history *h)
{
    h->n = h->head = 0;
    h->pushed = 0;
    memset(&h->last, 0, sizeof h->last);
    memset(&h->sticky, 0, sizeof h->sticky);
    memset(&h->first, 0, sizeof h->first);
}

void mtop_history_push(mtop_history *h, const mtop_row *r)
{
    if (!h->cap) return;
    if (h->n < h->cap) {
        h->rows[(h->head + h->n) % h->cap] = *r;
        h->n++;
    } else {
        h->rows[h->head] = *r;
        h->head = (h->head + 1) % h->cap;
    }
    if (h->pushed == 0) h->first = *r;
    h->pushed++;
    h->last = *r;
    for (int f = 0; f < MTOP_NFIELD; f++)
        if (mtop_row_ok(r, f)) mtop_row_set(&h->sticky, f, r->v[f]);
}

const mtop_row *mtop_history_at(const mtop_history *h, int i)
{
    if (i < 0 || i >= h->n) return NULL;
    return &h->rows[(h->head + i) % h->cap];
}

int mtop_history_series(const mtop_history *h, int field, int width, mtop_agg agg,
                        double *out, unsigned char *ok)
{
    if (width <= 0 || h->n == 0 || field < 0 || field >= MTOP_NFIELD) return 0;
    int n = h->n, cols = n < width ? n : width;
    for (int c = 0; c < cols; c++) {
        int a = (int)((long)c * n / cols), b = (int)((long)(c + 1) * n / cols);
        double acc = 0;
        int cnt = 0;
        for (int i = a; i < b; i++) {
            const mtop_row *r = mtop_history_at(h, i);
            if (!mtop_row_ok(r, field) || !isfinite(r->v[field])) continue;
            double x = r->v[field];
            if (agg == MTOP_AGG_MAX) acc = cnt ? fmax(acc, x) : x;
            else if (agg == MTOP_AGG_MEAN) acc += x;
            else acc = x;
            cnt++;
        }
        if (agg == MTOP_AGG_MEAN && cnt) acc /= cnt;
        out[c] = cnt ? acc : 0;
        ok[c] = cnt > 0;
    }
    return cols;
}

bool mtop_history_range(const mtop_history *h, int field, double *lo, double *hi)
{
    bool any = false;
    for (int i = 0; i < h->n; i++) {
        const mtop_row *r = mtop_history_at(h, i);
        if (!mtop_row_ok(r, field) || !isfinite(r->v[field])) continue;
        double x = r->v[field];
        if (!any) *lo = *hi = x;
        else {
            if (x < *lo) *lo = x;
            if (x > *hi) *hi = x;
        }
        any = true;
    }
    return any;
}

double mtop_history_step_seconds(const mtop_history *h, int window)
{
    if (h->n < 2) return -1;
    const mtop_row *b = mtop_history_at(h, h->n - 1);
    if (!mtop_row_ok(b, MTOP_TIME_S)) return -1;
    int start = h->n - 1 - (window > 1 ? window - 1 : 1);
    if (start < 0) start = 0;
    for (int i = start; i < h->n - 1; i++) {
        const mtop_row *a = mtop_history_at(h, i);
        if (!mtop_row_ok(a, MTOP_TIME_S)) continue;
        double ds = b->v[MTOP_STEP] - a->v[MTOP_STEP], dt = b->v[MTOP_TIME_S] - a->v[MTOP_TIME_S];
        if (ds > 0 && dt >= 0) return dt / ds;
    }
    return -1;
}

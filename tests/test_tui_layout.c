/* test_tui_layout.c — memtop's layout over every terminal size from 20x5 to 250x80:
 * windows on screen, never overlapping, the essentials present, small sizes flagged. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "layout.h"

static const char *view_name(int v) { return v == MTOP_VIEW_RUN ? "run" : v == MTOP_VIEW_WHATIF ? "what-if" : "help"; }

static bool shown(mtop_rect r) { return r.h > 0 && r.w > 0; }

/* A multi-rank run: the rank table below the bars, the rest as before. */
static bool ranks_layout_ok(int rows, int cols, int nranks, char *why, size_t len)
{
    mtop_layout L;
    mtop_layout_compute_ranks(rows, cols, MTOP_VIEW_RUN, nranks, &L);
    mtop_rect rk = L.win[MTOP_W_RANKS], tb = L.win[MTOP_W_TABLE];
    int want = 2 + (nranks < MTOP_RANK_ROWS ? nranks : MTOP_RANK_ROWS), room = rows - 1 - 8 - 7;
    for (int w = 0; w < MTOP_NWIN; w++) {
        mtop_rect r = L.win[w];
        if (shown(r) && (r.y < 0 || r.y + r.h > rows || r.x + r.w > cols))
            return snprintf(why, len, "%dx%d, %d ranks: %s off screen", cols, rows, nranks, mtop_win_name(w)), false;
        for (int u = w + 1; u < MTOP_NWIN; u++)
            if (mtop_rect_overlap(r, L.win[u]))
                return snprintf(why, len, "%dx%d: %s overlaps %s", cols, rows, mtop_win_name(w), mtop_win_name(u)), false;
    }
    bool placed = room < 3 ? !shown(rk) : rk.y == 8 && rk.w == cols && rk.h == (want < room ? want : room);
    if (!placed || tb.h < 7 || tb.y != (shown(rk) ? 8 + rk.h : 8))
        return snprintf(why, len, "%dx%d, %d ranks: rank table %dx%d at %d, table %d rows", cols, rows, nranks, rk.w,
                        rk.h, rk.y, tb.h), false;
    return true;
}

static void test_ranks(void)
{
    static const int counts[] = {1, 2, 3, 8, 9, 64, 128};
    long bad = 0;
    char why[160] = "";
    for (size_t i = 0; i < sizeof counts / sizeof *counts; i++)
        for (int cols = MTOP_MIN_COLS; cols <= 250; cols += 7)
            for (int rows = MTOP_MIN_ROWS; rows <= 80; rows++)
                if (!ranks_layout_ok(rows, cols, counts[i], why, sizeof why)) bad++;
    CHECK(bad == 0, "ranks: the rank table below the bars when the component table keeps 7 rows, nothing overlaps (%ld) %s",
          bad, why);
    mtop_layout L;
    mtop_layout_compute_ranks(40, 120, MTOP_VIEW_RUN, 2, &L);
    CHECK(L.win[MTOP_W_RANKS].h == 4 && L.win[MTOP_W_TABLE].y == 12 && shown(L.win[MTOP_W_MEMCHART]),
          "120x40, 2 ranks: title, column names, 2 rows; table at row 12; charts kept");
    mtop_layout_compute_ranks(40, 120, MTOP_VIEW_RUN, 0, &L);
    CHECK(!shown(L.win[MTOP_W_RANKS]) && L.win[MTOP_W_TABLE].y == 8, "one file: no rank table");
    mtop_layout_compute_ranks(40, 120, MTOP_VIEW_WHATIF, 4, &L);
    CHECK(!shown(L.win[MTOP_W_RANKS]), "the what-if view has no rank table");
}

int main(void)
{
    /* the overlap primitive */
    mtop_rect a = {0, 0, 2, 10}, b = {1, 9, 2, 5}, c = {2, 0, 1, 10}, z = {0, 0, 0, 0};
    CHECK(mtop_rect_overlap(a, b), "rects sharing cell (1,9) overlap");
    CHECK(!mtop_rect_overlap(a, c), "a rect ending at row 1 and one starting at row 2 do not overlap");
    CHECK(!mtop_rect_overlap(a, z), "an empty rect overlaps nothing");
    CHECK(!mtop_rect_overlap((mtop_rect){0, 0, 5, 5}, (mtop_rect){0, 5, 5, 5}), "side by side rects do not overlap");

    for (int v = 0; v < MTOP_NVIEW; v++) {
        long sizes = 0, bad_flag = 0, off = 0, overlap = 0, missing = 0, bad_status = 0, hidden_small = 0;
        long no_chart = 0, no_detail = 0, degenerate = 0;
        char first[160] = "";
#define NOTE(...) do { if (!first[0]) snprintf(first, sizeof first, __VA_ARGS__); } while (0)
        for (int cols = 20; cols <= 250; cols++)
            for (int rows = 5; rows <= 80; rows++) {
                mtop_layout L;
                int rc = mtop_layout_compute(rows, cols, (mtop_view)v, &L);
                sizes++;
                bool small = rows < MTOP_MIN_ROWS || cols < MTOP_MIN_COLS;
                if (L.too_small != small || (rc != 0) != small) {
                    bad_flag++;
                    NOTE("%dx%d: too_small %d", cols, rows, L.too_small);
                }
                if (small) {
                    for (int w = 0; w < MTOP_NWIN; w++)
                        if (shown(L.win[w])) {
                            hidden_small++;
                            NOTE("%dx%d: %s shown although too small", cols, rows, mtop_win_name(w));
                        }
                    continue;
                }
                for (int w = 0; w < MTOP_NWIN; w++) {
                    mtop_rect r = L.win[w];
                    if ((r.h > 0) != (r.w > 0) || r.h < 0 || r.w < 0) {
                        degenerate++;
                        NOTE("%dx%d: %s is %dx%d", cols, rows, mtop_win_name(w), r.w, r.h);
                    }
                    if (!shown(r)) continue;
                    if (r.y < 0 || r.x < 0 || r.y + r.h > rows || r.x + r.w > cols) {
                        off++;
                        NOTE("%dx%d: %s off screen (%d,%d %dx%d)", cols, rows, mtop_win_name(w), r.x, r.y, r.w, r.h);
                    }
                    for (int u = w + 1; u < MTOP_NWIN; u++)
                        if (mtop_rect_overlap(r, L.win[u])) {
                            overlap++;
                            NOTE("%dx%d: %s overlaps %s", cols, rows, mtop_win_name(w), mtop_win_name(u));
                        }
                }
                mtop_rect st = L.win[MTOP_W_STATUS];
                if (!(st.y == rows - 1 && st.h == 1 && st.x == 0 && st.w == cols)) {
                    bad_status++;
                    NOTE("%dx%d: status not on the last line", cols, rows);
                }
                /* the essentials of each view, big enough for their content */
                bool ok = true;
                if (v == MTOP_VIEW_RUN) {
                    ok = L.win[MTOP_W_HEADER].h == 2 && L.win[MTOP_W_SETTINGS].h == 1 &&
                         L.win[MTOP_W_BARS].h == 5 && L.win[MTOP_W_TABLE].h >= 7 && L.win[MTOP_W_TABLE].w >= 60 &&
                         L.win[MTOP_W_BARS].w == cols;
                    if (rows >= 22 && !shown(L.win[MTOP_W_MEMCHART])) {
                        no_chart++;
                        NOTE("%dx%d: no memory chart", cols, rows);
                    }
                    if ((cols >= 110 || rows >= 32) && !shown(L.win[MTOP_W_DETAIL])) {
                        no_detail++;
                        NOTE("%dx%d: no detail window", cols, rows);
                    }
                    if (shown(L.win[MTOP_W_MEMCHART]) && (L.win[MTOP_W_MEMCHART].h < 5 || L.win[MTOP_W_MEMCHART].w < 30))
                        ok = false;
                } else if (v == MTOP_VIEW_WHATIF) {
                    ok = L.win[MTOP_W_HEADER].h == 2 && L.win[MTOP_W_SETTINGS].h >= 2 &&
                         L.win[MTOP_W_BARS].h == 3 && L.win[MTOP_W_TABLE].h >= 6 && L.win[MTOP_W_TABLE].w >= 60;
                    if (rows >= 30 && !shown(L.win[MTOP_W_DETAIL])) {
                        no_detail++;
                        NOTE("%dx%d: no terms window", cols, rows);
                    }
                } else {
                    ok = L.win[MTOP_W_HELP].h == rows - 1 && L.win[MTOP_W_HELP].w == cols;
                }
                if (!ok) {
                    missing++;
                    NOTE("%dx%d: an essential window is missing or too small", cols, rows);
                }
            }
        const char *vn = view_name(v);
        CHECK(sizes == 231 * 76, "%s view: %ld terminal sizes laid out", vn, sizes);
        CHECK(bad_flag == 0, "%s view: too_small exactly below %dx%d (%ld wrong) %s", vn, MTOP_MIN_COLS, MTOP_MIN_ROWS, bad_flag, first);
        CHECK(hidden_small == 0, "%s view: nothing drawn when too small (%ld) %s", vn, hidden_small, first);
        CHECK(degenerate == 0, "%s view: no window with only one of height and width (%ld) %s", vn, degenerate, first);
        CHECK(off == 0, "%s view: every window on screen (%ld off) %s", vn, off, first);
        CHECK(overlap == 0, "%s view: no two windows overlap (%ld) %s", vn, overlap, first);
        CHECK(bad_status == 0, "%s view: the status line is the last row (%ld) %s", vn, bad_status, first);
        CHECK(missing == 0, "%s view: essential windows present and big enough (%ld) %s", vn, missing, first);
        CHECK(no_chart == 0, "%s view: charts shown from 22 rows (%ld) %s", vn, no_chart, first);
        CHECK(no_detail == 0, "%s view: detail shown when there is room (%ld) %s", vn, no_detail, first);
#undef NOTE
    }

    /* the documented arrangement at 120x40 (the e2e tests' terminal) */
    mtop_layout L;
    mtop_layout_compute(40, 120, MTOP_VIEW_RUN, &L);
    CHECK(L.win[MTOP_W_BARS].y == 3 && L.win[MTOP_W_TABLE].y == 8, "120x40 run: bars at row 3, table at row 8");
    CHECK(L.win[MTOP_W_DETAIL].x > 0 && L.win[MTOP_W_DETAIL].y == L.win[MTOP_W_TABLE].y,
          "120x40 run: the detail sits beside the table");
    CHECK(L.win[MTOP_W_MEMCHART].h == 23 && L.win[MTOP_W_LOSS].h == 23 && L.win[MTOP_W_LOSS].x > L.win[MTOP_W_MEMCHART].x,
          "120x40 run: memory and loss charts side by side, 23 rows (%d, %d)", L.win[MTOP_W_MEMCHART].h, L.win[MTOP_W_LOSS].h);
    mtop_layout_compute(16, 60, MTOP_VIEW_RUN, &L);
    CHECK(!L.too_small && L.win[MTOP_W_TABLE].h == 7 && !shown(L.win[MTOP_W_MEMCHART]),
          "60x16 run: the smallest screen keeps the table, drops the charts");
    mtop_layout_compute(24, 80, MTOP_VIEW_RUN, &L);
    CHECK(shown(L.win[MTOP_W_MEMCHART]) && !shown(L.win[MTOP_W_LOSS]), "80x24 run: memory chart only");
    mtop_layout_compute(40, 120, MTOP_VIEW_WHATIF, &L);
    CHECK(L.win[MTOP_W_DETAIL].w == 120 && L.win[MTOP_W_DETAIL].y == L.win[MTOP_W_TABLE].y + L.win[MTOP_W_TABLE].h,
          "120x40 what-if: the terms use the full width below the table");
    mtop_layout_compute(15, 200, MTOP_VIEW_RUN, &L);
    CHECK(L.too_small, "200x15 is too small (rows)");
    mtop_layout_compute(80, 59, MTOP_VIEW_WHATIF, &L);
    CHECK(L.too_small, "59x80 is too small (columns)");
    CHECK(!strcmp(mtop_win_name(MTOP_W_BARS), "bars") && !strcmp(mtop_win_name(99), "?"), "window names");
    test_ranks();
    return check_summary();
}

/* test_tui_format.c — memtop's number and bar formatters, exact strings. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "format.h"

static char buf[128];

#define STR(expr, want)                                                          \
    do {                                                                         \
        const char *got_ = (expr);                                               \
        CHECK(strcmp(got_, want) == 0, "%s = \"%s\" (want \"%s\")", #expr, got_, want); \
    } while (0)

static const char *bar(const double *seg, int n, double scale, int width, int oom, int hr)
{
    signed char cells[256];
    static char text[257];
    mtop_bar_cells(seg, n, scale, width, cells);
    return mtop_bar_text(cells, width, oom, hr, text);
}

int main(void)
{
    const size_t n = sizeof buf;
    /* bytes: binary units, as the planner prints them */
    STR(mtop_fmt_bytes(0, true, buf, n), "0 B");
    STR(mtop_fmt_bytes(1023, true, buf, n), "1023 B");
    STR(mtop_fmt_bytes(1024, true, buf, n), "1.0 KiB");
    STR(mtop_fmt_bytes(482304, true, buf, n), "471.0 KiB");
    STR(mtop_fmt_bytes(1048576, true, buf, n), "1.0 MiB");
    STR(mtop_fmt_bytes(1073741823, true, buf, n), "1024.0 MiB");
    STR(mtop_fmt_bytes(1073741824, true, buf, n), "1.00 GiB");
    STR(mtop_fmt_bytes(14e9, true, buf, n), "13.04 GiB");
    STR(mtop_fmt_bytes(24 * 1073741824.0, true, buf, n), "24.00 GiB");
    STR(mtop_fmt_bytes(5, false, buf, n), "N/A");
    STR(mtop_fmt_bytes(NAN, true, buf, n), "N/A");
    char tiny[4];
    STR(mtop_fmt_bytes(14e9, true, tiny, sizeof tiny), "13.");

    /* error of a measurement against a prediction */
    STR(mtop_fmt_error(103.2, true, 100, true, buf, n), "+3.2%");
    STR(mtop_fmt_error(99.5, true, 100, true, buf, n), "-0.5%");
    STR(mtop_fmt_error(100, true, 100, true, buf, n), "+0.0%");
    STR(mtop_fmt_error(99.99, true, 100, true, buf, n), "+0.0%");
    STR(mtop_fmt_error(0, true, 0, true, buf, n), "+0.0%");
    STR(mtop_fmt_error(5, true, 0, true, buf, n), "N/A");
    STR(mtop_fmt_error(5, false, 4, true, buf, n), "N/A");
    STR(mtop_fmt_error(5, true, 4, false, buf, n), "N/A");
    STR(mtop_fmt_error(2000, true, 100, true, buf, n), ">+999%");
    STR(mtop_fmt_error(3481360, true, 2317312, true, buf, n), "+50.2%");
    STR(mtop_fmt_pct(-1500, true, buf, n), "<-999%");
    STR(mtop_fmt_pct(-3.25, true, buf, n), "-3.2%");
    STR(mtop_fmt_pct(NAN, true, buf, n), "N/A");
    double p = 0;
    CHECK(mtop_error_pct(110, true, 100, true, &p) && fabs(p - 10) < 1e-12, "error_pct(110, 100) = 10");

    /* durations */
    STR(mtop_fmt_duration(0, true, buf, n), "0s");
    STR(mtop_fmt_duration(0.097, true, buf, n), "0s");
    STR(mtop_fmt_duration(59.9, true, buf, n), "59s");
    STR(mtop_fmt_duration(60, true, buf, n), "1m00s");
    STR(mtop_fmt_duration(65, true, buf, n), "1m05s");
    STR(mtop_fmt_duration(3599, true, buf, n), "59m59s");
    STR(mtop_fmt_duration(3600, true, buf, n), "1h00m");
    STR(mtop_fmt_duration(3723, true, buf, n), "1h02m");
    STR(mtop_fmt_duration(86399, true, buf, n), "23h59m");
    STR(mtop_fmt_duration(2 * 86400 + 3 * 3600 + 59, true, buf, n), "2d03h");
    STR(mtop_fmt_duration(-1, true, buf, n), "N/A");
    STR(mtop_fmt_duration(INFINITY, true, buf, n), "N/A");
    STR(mtop_fmt_duration(10, false, buf, n), "N/A");

    /* rates, loss, learning rate, shares */
    STR(mtop_fmt_rate(0, true, buf, n), "0.0");
    STR(mtop_fmt_rate(42.46, true, buf, n), "42.5");
    STR(mtop_fmt_rate(999.9, true, buf, n), "999.9");
    STR(mtop_fmt_rate(999.96, true, buf, n), "1,000");
    STR(mtop_fmt_rate(1234.4, true, buf, n), "1,234");
    STR(mtop_fmt_rate(19862.8, true, buf, n), "19,863");
    STR(mtop_fmt_rate(1234567, true, buf, n), "1,234,567");
    STR(mtop_fmt_rate(-1, true, buf, n), "N/A");
    STR(mtop_fmt_loss(2.34564, true, buf, n), "2.3456");
    STR(mtop_fmt_loss(NAN, true, buf, n), "nan");
    STR(mtop_fmt_loss(INFINITY, true, buf, n), "inf");
    STR(mtop_fmt_loss(1, false, buf, n), "N/A");
    STR(mtop_fmt_lr(3e-4, true, buf, n), "3.00e-04");
    STR(mtop_fmt_lr(1e-3, true, buf, n), "1.00e-03");
    STR(mtop_fmt_share(1, 4, buf, n), "25.0%");
    STR(mtop_fmt_share(482304, 2823184, buf, n), "17.1%");
    STR(mtop_fmt_share(1, 0, buf, n), "N/A");

    /* glyphs: distinct per segment, none a mark */
    bool distinct = true;
    for (int i = 0; i < MTOP_NSEG; i++)
        for (int j = i + 1; j < MTOP_NSEG; j++)
            if (mtop_seg_glyph[i] == mtop_seg_glyph[j]) distinct = false;
    for (int i = 0; i < MTOP_NSEG; i++)
        if (mtop_seg_glyph[i] == MTOP_GLYPH_OOM || mtop_seg_glyph[i] == MTOP_GLYPH_HEADROOM || mtop_seg_glyph[i] == ' ')
            distinct = false;
    CHECK(distinct, "segment glyphs \"%.*s\" are distinct from each other, the marks and blank", MTOP_NSEG, mtop_seg_glyph);
    STR(mtop_seg_name(0), "weights");
    STR(mtop_seg_name(MTOP_SEG_OTHER), "unattributed");
    STR(mtop_seg_name(42), "?");

    /* bars */
    signed char cells[64];
    double s1[] = {1, 1, 2};
    CHECK(mtop_bar_cells(s1, 3, 8, 8, cells) == 4, "bar {1,1,2} of 8 over 8 cells fills 4");
    STR(bar(s1, 3, 8, 8, -1, -1), "#=%%    ");
    double s2[] = {1, 1, 1};
    STR(bar(s2, 3, 3, 10, -1, -1), "###====%%%");  /* edges at round(3.3)=3, round(6.7)=7, 10 */
    double s3[] = {1, 1, 1, 1, 1, 1};
    STR(bar(s3, 6, 6, 12, -1, -1), "##==%%++..??");
    double s4[] = {-5, NAN, 3, INFINITY};
    STR(bar(s4, 4, 6, 6, -1, -1), "%%%   ");      /* negative, NaN, infinite parts count as 0 */
    double s5[] = {8, 8};
    STR(bar(s5, 2, 10, 10, -1, -1), "########==");  /* beyond the scale: clipped to the width */
    STR(bar(s1, 3, 0, 5, -1, -1), "     ");
    CHECK(mtop_bar_cells(s1, 3, 0, 5, cells) == 0, "scale 0: an empty bar");
    double tiny_seg[] = {0.01, 10};
    STR(bar(tiny_seg, 2, 20, 10, -1, -1), "=====     "); /* a sliver rounds away, the length stays exact */
    /* marks: the last cell left of the line */
    CHECK(mtop_bar_mark(9, 10, 10) == 8, "mark 9/10 of 10 cells is cell 8 (%d)", mtop_bar_mark(9, 10, 10));
    CHECK(mtop_bar_mark(10, 10, 10) == 9, "mark at the scale is the last cell");
    CHECK(mtop_bar_mark(0.5, 10, 10) == 0, "a small mark is cell 0");
    CHECK(mtop_bar_mark(0, 10, 10) == 0, "mark 0 is cell 0");
    CHECK(mtop_bar_mark(11, 10, 10) == -1, "a mark beyond the scale is not drawn");
    CHECK(mtop_bar_mark(NAN, 10, 10) == -1 && mtop_bar_mark(5, 0, 10) == -1, "invalid marks are not drawn");
    double s6[] = {3, 2};
    STR(bar(s6, 2, 10, 10, 9, 8), "###==   :|");     /* budget 10, headroom 9 */
    double s7[] = {5, 5};
    STR(bar(s7, 2, 10, 10, 9, 8), "#####===:|");     /* the lines stay visible over a full bar */
    /* a realistic run: budget 2 GiB, headroom 10% below */
    double g = 1073741824.0;
    double s8[] = {0.25 * g, 0.25 * g, 0.5 * g, 0.5 * g, 0.1 * g};
    int oom = mtop_bar_mark(2 * g, 2 * g, 40), hr = mtop_bar_mark(1.8 * g, 2 * g, 40);
    STR(bar(s8, 5, 2 * g, 40, oom, hr), "#####=====%%%%%%%%%%++++++++++..   :   |"); /* 32 cells filled, headroom at cell 35, budget at 39 */

    /* fitting text into columns */
    STR(mtop_fit("hello", 3, buf, n), "he~");
    STR(mtop_fit("hello", 5, buf, n), "hello");
    STR(mtop_fit("hello", 0, buf, n), "");
    STR(mtop_fit("hello", -3, buf, n), "");
    STR(mtop_fit("hello", 1, buf, n), "~");
    return check_summary();
}

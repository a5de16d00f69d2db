/* test_tui_metrics.c — the v1 metrics parser, the file follower (partial lines,
 * garbage, reordered and missing columns, truncation, replacement), the history
 * ring buffer and the snapshot that --once prints. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "follow.h"
#include "history.h"
#include "metrics.h"
#include "snapshot.h"

static const char *HEADER =
    "step,time_s,loss,tokens_per_s,lr,cur_weights,cur_gradients,cur_optimizer,cur_activations,"
    "cur_overhead,cur_total,peak_weights,peak_gradients,peak_optimizer,peak_activations,peak_overhead,"
    "peak_total,pred_weights,pred_gradients,pred_optimizer,pred_activations,pred_overhead,pred_total,"
    "rss_bytes";

static mtop_line_kind parse(mtop_parser *p, const char *line, mtop_row *r)
{
    return mtop_parse_line(p, line, strlen(line), r);
}

/* A full v1 row for step s. */
static void row_text(char *buf, size_t n, int s)
{
    snprintf(buf, n,
             "%d,%.1f,%.3f,1000,0.0003,100,100,200,%d,10,%d,100,100,200,400,10,810,100,100,200,380,12,792,5000\n",
             s, s * 0.5, 10.0 / s, 50 + s, 460 + s);
}

static char dir[256];

static char *path_of(const char *name)
{
    static char p[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/%s", dir, name);
    return p[k];
}

static void write_file(const char *path, const char *mode, const char *text)
{
    FILE *f = fopen(path, mode);
    if (!f) {
        perror(path);
        exit(2);
    }
    fputs(text, f);
    fclose(f);
}

static void append_rows(const char *path, int from, int to)
{
    FILE *f = fopen(path, "a");
    char b[256];
    for (int s = from; s <= to; s++) {
        row_text(b, sizeof b, s);
        fputs(b, f);
    }
    fclose(f);
}

static void start_file(const char *path, int rows)
{
    FILE *f = fopen(path, "w");
    fprintf(f, "# memtrain metrics v1\n# model: gpt2\n# steps: 100\n%s\n", HEADER);
    fclose(f);
    if (rows) append_rows(path, 1, rows);
}

static void test_csv_split(void)
{
    char line[] = "a,b,\"c,d\",\"e\"\"f\",";
    char *f[8];
    int n = mtop_csv_split(line, strlen(line), f, 8);
    CHECK(n == 5 && !strcmp(f[0], "a") && !strcmp(f[2], "c,d") && !strcmp(f[3], "e\"f") && !strcmp(f[4], ""),
          "csv split: plain, quoted comma, doubled quote, empty last field (%d fields)", n);
    char bad[] = "1,\"2,3";
    CHECK(mtop_csv_split(bad, strlen(bad), f, 8) == -1, "csv split: an unterminated quote fails");
    char junk[] = "\"a\"b,c";
    CHECK(mtop_csv_split(junk, strlen(junk), f, 8) == -1, "csv split: text after a closing quote fails");
    char many[] = "1,2,3,4,5";
    CHECK(mtop_csv_split(many, strlen(many), f, 4) == -1, "csv split: more fields than room fails");
    char empty[] = "";
    CHECK(mtop_csv_split(empty, 0, f, 8) == 1 && f[0][0] == 0, "csv split: an empty line is one empty field");
}

static void test_parser(void)
{
    mtop_parser p;
    mtop_row r;
    mtop_parser_init(&p);
    CHECK(parse(&p, "# memtrain metrics v1", &r) == MTOP_LINE_COMMENT && p.meta.magic && p.meta.version == 1,
          "magic line: v1");
    parse(&p, "# model: llama-3.1-8b", &r);
    parse(&p, "# settings: precision=amp-bf16 optimizer=adamw batch=4  seq=2048 junk", &r);
    parse(&p, "# steps: 1000", &r);
    parse(&p, "# budget_bytes: 25769803776", &r);
    parse(&p, "# device: cuda:0", &r);
    parse(&p, "# something: else", &r);
    const mtop_meta *m = &p.meta;
    CHECK(!strcmp(m->model, "llama-3.1-8b"), "model comment (%s)", m->model);
    CHECK(!strcmp(m->device, "cuda:0"), "device comment keeps the colon in its value (%s)", m->device);
    CHECK(m->nkv == 4 && !strcmp(mtop_meta_setting(m, "batch"), "4") && !strcmp(mtop_meta_setting(m, "seq"), "2048") &&
              mtop_meta_setting(m, "junk") == NULL,
          "settings split at spaces into key=value pairs (%d)", m->nkv);
    CHECK(!strcmp(m->settings, "precision=amp-bf16 optimizer=adamw batch=4  seq=2048 junk"), "raw settings kept");
    CHECK(m->has_steps && m->steps == 1000, "steps comment");
    CHECK(m->has_budget && m->budget_bytes == 25769803776.0, "budget_bytes comment");
    CHECK(p.comments == 7 && p.bad == 0, "comments counted, none bad");

    CHECK(parse(&p, "1,0.5,2.0,1000,0.0003,1,2,3,4,5,15,1,2,3,4,5,15,1,2,3,4,5,15,99", &r) == MTOP_LINE_BAD &&
              strstr(p.reason, "before the header"),
          "a row before the header is bad (%s)", p.reason);
    CHECK(parse(&p, HEADER, &r) == MTOP_LINE_HEADER && p.have_header && p.ncols == MTOP_NFIELD, "the v1 header");
    CHECK(parse(&p, "7,3.5,2.25,1234.5,0.0003,100,200,300,400,50,1050,110,200,300,500,50,1160,100,200,300,450,60,1110,4096\r", &r) ==
              MTOP_LINE_ROW,
          "a full row (CRLF ending)");
    CHECK(r.valid == (1u << MTOP_NFIELD) - 1, "every field valid (0x%x)", r.valid);
    CHECK(r.v[MTOP_STEP] == 7 && r.v[MTOP_LOSS] == 2.25 && r.v[MTOP_CUR(MTOP_TOTAL)] == 1050 &&
              r.v[MTOP_PEAK(3)] == 500 && r.v[MTOP_PRED(4)] == 60 && r.v[MTOP_RSS] == 4096,
          "values land in their fields");
    CHECK(parse(&p, "8,4,,,,100,,,,,,,,,,,,,,,,,,", &r) == MTOP_LINE_ROW && mtop_row_ok(&r, MTOP_CUR(0)) &&
              !mtop_row_ok(&r, MTOP_LOSS) && !mtop_row_ok(&r, MTOP_PRED(MTOP_TOTAL)) && !mtop_row_ok(&r, MTOP_RSS),
          "empty fields are N/A");
    CHECK(parse(&p, "9,4.5,nan,1,1,1,1,1,1,1,5,1,1,1,1,1,5,1,1,1,1,1,5,1", &r) == MTOP_LINE_ROW && isnan(r.v[MTOP_LOSS]),
          "a diverged loss (nan) is kept");
    CHECK(parse(&p, "   ", &r) == MTOP_LINE_EMPTY, "a blank line is ignored");
    long bad0 = p.bad;
    CHECK(parse(&p, "10,5,2.0", &r) == MTOP_LINE_BAD && strstr(p.reason, "3 fields"), "too few fields: bad (%s)", p.reason);
    CHECK(parse(&p, "11,5.5,2.0,1,1,1,1,1,1,1,5,1,1,1,1,1,5,1,1,1,1,1,5,1,extra", &r) == MTOP_LINE_BAD, "too many fields: bad");
    CHECK(parse(&p, "12,6,abc,1,1,1,1,1,1,1,5,1,1,1,1,1,5,1,1,1,1,1,5,1", &r) == MTOP_LINE_BAD && strstr(p.reason, "loss"),
          "a word for the loss: bad (%s)", p.reason);
    CHECK(parse(&p, "13,6,2,1,1,-1,1,1,1,1,5,1,1,1,1,1,5,1,1,1,1,1,5,1", &r) == MTOP_LINE_BAD, "negative bytes: bad");
    CHECK(parse(&p, "1.5,6,2,1,1,1,1,1,1,1,5,1,1,1,1,1,5,1,1,1,1,1,5,1", &r) == MTOP_LINE_BAD, "a fractional step: bad");
    CHECK(parse(&p, ",6,2,1,1,1,1,1,1,1,5,1,1,1,1,1,5,1,1,1,1,1,5,1", &r) == MTOP_LINE_BAD && strstr(p.reason, "step"),
          "no step: bad");
    CHECK(parse(&p, "\"14,6,2", &r) == MTOP_LINE_BAD, "an unterminated quote: bad");
    CHECK(parse(&p, "hello world", &r) == MTOP_LINE_BAD, "prose: bad");
    CHECK(parse(&p, "14,7,2,1,1,1,1,1,1,1,5,1,1,1,1,1,5,1,1,1,1,1,5,1e999", &r) == MTOP_LINE_BAD, "an overflowing number: bad");
    char nul[] = "15,7\0,2";
    CHECK(mtop_parse_line(&p, nul, 7, &r) == MTOP_LINE_BAD, "a NUL byte: bad");
    char longline[6000];
    memset(longline, '1', sizeof longline - 1);
    longline[sizeof longline - 1] = 0;
    CHECK(parse(&p, longline, &r) == MTOP_LINE_BAD, "a very long line: bad");
    CHECK(p.bad - bad0 == 11, "every bad line counted (%ld)", p.bad - bad0);
    CHECK(p.rows == 3, "three rows parsed (%ld)", p.rows);

    /* reordered, missing and unknown columns, as memtrain writes them: all quoted */
    mtop_parser_init(&p);
    CHECK(parse(&p, "\"loss\",\"extra\",\"cur_total\",\"step\",\"peak_total\"", &r) == MTOP_LINE_HEADER, "a reordered quoted header");
    CHECK(p.col[0] == MTOP_LOSS && p.col[1] == -1 && p.col[3] == MTOP_STEP, "columns found by name, unknown ones ignored");
    CHECK(parse(&p, "\"2.5\",\"whatever, really\",\"1000\",\"42\",\"1500\"", &r) == MTOP_LINE_ROW, "a quoted row");
    CHECK(r.v[MTOP_STEP] == 42 && r.v[MTOP_LOSS] == 2.5 && r.v[MTOP_CUR(MTOP_TOTAL)] == 1000 && r.v[MTOP_PEAK(MTOP_TOTAL)] == 1500,
          "reordered values read by name");
    CHECK(!mtop_row_ok(&r, MTOP_CUR(0)) && !mtop_row_ok(&r, MTOP_RSS) && !mtop_row_ok(&r, MTOP_TIME_S),
          "columns absent from the header are N/A");
    CHECK(parse(&p, "step,loss", &r) == MTOP_LINE_HEADER && p.ncols == 2, "a second header re-maps the columns");
    CHECK(parse(&p, "43,1.5", &r) == MTOP_LINE_ROW && r.v[MTOP_LOSS] == 1.5, "rows follow the new header");
    CHECK(parse(&p, "loss,cur_total", &r) == MTOP_LINE_BAD, "a header without step is bad");
    CHECK(parse(&p, "step,step,loss", &r) == MTOP_LINE_HEADER && p.col[1] == -1, "a repeated column: the first wins");

    mtop_parser_init(&p);
    parse(&p, "# memtrain metrics v2", &r);
    CHECK(p.meta.magic && p.meta.version == 2, "a later version is recognised (for a warning)");
    parse(&p, "# steps: -5", &r);
    parse(&p, "# budget_bytes: lots", &r);
    CHECK(!p.meta.has_steps && !p.meta.has_budget, "bad steps and budget comments are ignored");
    parse(&p, "# budget_bytes: 0", &r);
    CHECK(!p.meta.has_budget, "budget 0 means unknown");
    CHECK(mtop_field_find("pred_total", 10) == MTOP_PRED(MTOP_TOTAL) && mtop_field_find("nope", 4) == -1,
          "field names");
    CHECK(!strcmp(mtop_field_name(MTOP_RSS), "rss_bytes") && mtop_field_name(MTOP_NFIELD) == NULL, "field name table");
}

static void test_history(void)
{
    mtop_history h;
    CHECK(mtop_history_init(&h, 4) == 0, "history init");
    mtop_row r;
    for (int s = 1; s <= 10; s++) {
        memset(&r, 0, sizeof r);
        mtop_row_set(&r, MTOP_STEP, s);
        mtop_row_set(&r, MTOP_TIME_S, 2.0 * s);
        mtop_row_set(&r, MTOP_CUR(MTOP_TOTAL), 100.0 * s);
        if (s <= 5) mtop_row_set(&r, MTOP_LOSS, 10.0 - s);
        mtop_history_push(&h, &r);
    }
    CHECK(h.n == 4 && h.pushed == 10, "ring keeps the last 4 of 10 (n %d)", h.n);
    CHECK(mtop_history_at(&h, 0)->v[MTOP_STEP] == 7 && mtop_history_at(&h, 3)->v[MTOP_STEP] == 10 &&
              mtop_history_at(&h, 4) == NULL,
          "oldest held is step 7, newest 10");
    CHECK(h.first.v[MTOP_STEP] == 1 && h.last.v[MTOP_STEP] == 10, "first and last rows");
    CHECK(mtop_row_ok(&h.sticky, MTOP_LOSS) && h.sticky.v[MTOP_LOSS] == 5 && !mtop_row_ok(&h.last, MTOP_LOSS),
          "sticky keeps the newest valid loss (%g)", h.sticky.v[MTOP_LOSS]);
    double ys[8];
    unsigned char ok[8];
    int n = mtop_history_series(&h, MTOP_CUR(MTOP_TOTAL), 8, MTOP_AGG_MAX, ys, ok);
    CHECK(n == 4 && ys[0] == 700 && ys[3] == 1000 && ok[0] && ok[3], "fewer rows than columns: one column per row");
    n = mtop_history_series(&h, MTOP_CUR(MTOP_TOTAL), 2, MTOP_AGG_MAX, ys, ok);
    CHECK(n == 2 && ys[0] == 800 && ys[1] == 1000, "downsampled by max: 800, 1000 (%g, %g)", ys[0], ys[1]);
    n = mtop_history_series(&h, MTOP_CUR(MTOP_TOTAL), 2, MTOP_AGG_MEAN, ys, ok);
    CHECK(n == 2 && ys[0] == 750 && ys[1] == 950, "downsampled by mean: 750, 950");
    n = mtop_history_series(&h, MTOP_LOSS, 2, MTOP_AGG_MEAN, ys, ok);
    CHECK(n == 2 && !ok[0] && !ok[1], "a field absent in every row: columns not ok");
    double lo, hi;
    CHECK(mtop_history_range(&h, MTOP_CUR(MTOP_TOTAL), &lo, &hi) && lo == 700 && hi == 1000, "range 700..1000");
    CHECK(!mtop_history_range(&h, MTOP_LOSS, &lo, &hi), "no range without values");
    CHECK(fabs(mtop_history_step_seconds(&h, 50) - 2.0) < 1e-12, "2 s per step");
    mtop_history_clear(&h);
    CHECK(h.n == 0 && h.pushed == 0 && mtop_history_step_seconds(&h, 50) < 0, "clear empties it");

    /* the 4096-point default, downsampled to a terminal's width */
    mtop_history big;
    mtop_history_init(&big, 4096);
    for (int s = 1; s <= 100000; s++) {
        memset(&r, 0, sizeof r);
        mtop_row_set(&r, MTOP_STEP, s);
        mtop_row_set(&r, MTOP_CUR(MTOP_TOTAL), s % 1000);
        mtop_history_push(&big, &r);
    }
    double wide[100];
    unsigned char wok[100];
    n = mtop_history_series(&big, MTOP_CUR(MTOP_TOTAL), 100, MTOP_AGG_MAX, wide, wok);
    CHECK(big.n == 4096 && n == 100 && mtop_history_at(&big, 0)->v[MTOP_STEP] == 100000 - 4095,
          "100,000 rows: the last 4096 held, 100 columns");
    mtop_history_free(&big);
    mtop_history_free(&big); /* idempotent */
    mtop_history_free(NULL);
    mtop_history_free(&h);
}

static void test_follow(void)
{
    mtop_follow f;
    mtop_history h;
    mtop_history_init(&h, 4096);
    const char *p = path_of("run.csv");

    /* a file that does not exist yet */
    mtop_follow_init(&f, p);
    CHECK(mtop_follow_poll(&f, &h, 1.0) == 0 && f.state == MTOP_FOLLOW_WAITING, "missing file: waiting");
    start_file(p, 3);
    CHECK(mtop_follow_poll(&f, &h, 2.0) == 3 && f.state == MTOP_FOLLOW_OPEN && h.pushed == 3, "created: 3 rows");
    CHECK(f.last_row_at == 2.0 && !strcmp(f.parser.meta.model, "gpt2"), "last row time and meta");
    CHECK(mtop_follow_poll(&f, &h, 3.0) == 0 && f.last_row_at == 2.0, "nothing new: no rows, time kept");

    /* a half-written line waits for its newline */
    char b[256];
    row_text(b, sizeof b, 4);
    size_t half = strlen(b) / 2;
    FILE *w = fopen(p, "a");
    fwrite(b, 1, half, w);
    fclose(w);
    CHECK(mtop_follow_poll(&f, &h, 4.0) == 0 && f.parser.bad == 0 && f.len == half,
          "half a line: no row, nothing bad, %zu bytes waiting", f.len);
    w = fopen(p, "a");
    fputs(b + half, w);
    fclose(w);
    CHECK(mtop_follow_poll(&f, &h, 5.0) == 1 && h.last.v[MTOP_STEP] == 4 && f.len == 0, "completed: row 4");
    /* a line split at the last byte before its newline */
    row_text(b, sizeof b, 5);
    b[strlen(b) - 1] = 0;
    write_file(p, "a", b);
    CHECK(mtop_follow_poll(&f, &h, 5.5) == 0, "a row without its newline waits");
    write_file(p, "a", "\n");
    CHECK(mtop_follow_poll(&f, &h, 5.6) == 1 && h.last.v[MTOP_STEP] == 5, "its newline arrives: row 5");

    /* garbage is skipped and counted, never fatal */
    write_file(p, "a", "garbage line\n1,2\n\x01\x02\xff\xfe\n6,,,,,,,,,,,,,,,,,,,,,,,\n,,,\n");
    append_rows(p, 7, 7);
    int got = mtop_follow_poll(&f, &h, 6.0);
    CHECK(got == 2 && f.parser.bad == 4 && h.last.v[MTOP_STEP] == 7, "4 garbage lines skipped, rows 6 and 7 read (%d, bad %ld)",
          got, f.parser.bad);

    /* truncated to nothing, then regrown */
    long resets = f.resets;
    write_file(p, "w", "");
    CHECK(mtop_follow_poll(&f, &h, 7.0) == 0 && f.resets == resets + 1 && !strcmp(f.reset_why, "truncated") &&
              h.pushed == 0 && f.parser.bad == 0,
          "truncated: reread from the start, history and counts cleared");
    start_file(p, 2);
    CHECK(mtop_follow_poll(&f, &h, 8.0) == 2 && h.pushed == 2 && h.last.v[MTOP_STEP] == 2, "regrown: 2 rows");

    /* truncated and regrown past the old size between two polls */
    FILE *x = fopen(p, "w");
    fprintf(x, "# memtrain metrics v1\n# model: other-model\n%s\n", HEADER);
    fclose(x);
    append_rows(p, 101, 110);
    CHECK(mtop_follow_poll(&f, &h, 9.0) == 10 && f.resets == resets + 2 && !strcmp(f.reset_why, "rewritten") &&
              h.pushed == 10 && h.first.v[MTOP_STEP] == 101 && !strcmp(f.parser.meta.model, "other-model"),
          "rewritten between polls: detected, all 10 new rows read (%s)", f.reset_why);

    /* replaced by another file (rename over it) */
    const char *q = path_of("run.csv.new");
    start_file(q, 5);
    rename(q, p);
    CHECK(mtop_follow_poll(&f, &h, 10.0) == 5 && f.resets == resets + 3 && !strcmp(f.reset_why, "replaced") &&
              h.pushed == 5,
          "replaced (new inode): reread, 5 rows");
    append_rows(p, 6, 6);
    CHECK(mtop_follow_poll(&f, &h, 11.0) == 1 && h.pushed == 6, "the replacement is followed as it grows");

    /* removed: data kept; recreated: reread */
    unlink(p);
    CHECK(mtop_follow_poll(&f, &h, 12.0) == 0 && f.state == MTOP_FOLLOW_GONE && h.pushed == 6, "removed: gone, data kept");
    start_file(p, 1);
    CHECK(mtop_follow_poll(&f, &h, 13.0) == 1 && f.state == MTOP_FOLLOW_OPEN && h.pushed == 1, "recreated: followed again");

    /* a line longer than the follower keeps is skipped as one bad line */
    long bad = f.parser.bad;
    char *huge = malloc(MTOP_LINE_MAX * 2 + 2);
    memset(huge, '7', MTOP_LINE_MAX * 2);
    huge[MTOP_LINE_MAX * 2] = '\n';
    huge[MTOP_LINE_MAX * 2 + 1] = 0;
    write_file(p, "a", huge);
    append_rows(p, 2, 2);
    CHECK(mtop_follow_poll(&f, &h, 14.0) == 1 && f.parser.bad == bad + 1 && h.last.v[MTOP_STEP] == 2,
          "a 128 KiB line: one bad line, the next row read");
    /* the same, arriving in pieces */
    huge[MTOP_LINE_MAX * 2] = 0;
    write_file(p, "a", huge);
    CHECK(mtop_follow_poll(&f, &h, 15.0) == 0 && f.skipping, "a long unfinished line is being skipped");
    write_file(p, "a", "tail\n");
    append_rows(p, 3, 3);
    CHECK(mtop_follow_poll(&f, &h, 16.0) == 1 && f.parser.bad == bad + 2 && h.last.v[MTOP_STEP] == 3,
          "its end arrives: one more bad line, then row 3");
    free(huge);

    /* a read limit spreads a big file over several polls */
    start_file(p, 2000);
    mtop_follow g;
    mtop_history h2;
    mtop_history_init(&h2, 4096);
    mtop_follow_init(&g, p);
    g.read_limit = 4096;
    int polls = 0, total = 0;
    do {
        total += mtop_follow_poll(&g, &h2, 20.0 + polls);
        polls++;
    } while (g.pending && polls < 10000);
    CHECK(total == 2000 && polls > 10 && g.parser.bad == 0, "read limit: 2000 rows over %d polls, none lost", polls);
    mtop_follow_free(&g);
    mtop_follow_free(&g);
    mtop_history_free(&h2);

    /* a directory cannot be followed */
    mtop_follow d;
    mtop_follow_init(&d, dir);
    CHECK(mtop_follow_poll(&d, &h, 1) == -1 && d.state == MTOP_FOLLOW_ERROR, "a directory: error state, no crash");
    mtop_follow_free(&d);
    mtop_follow_free(&f);
    mtop_history_free(&h);
}

static void test_snapshot(void)
{
    const char *p = path_of("snap.csv");
    FILE *w = fopen(p, "w");
    fprintf(w, "# memtrain metrics v1\n# model: gpt2\n# settings: batch=8 seq=1024\n# steps: 10\n# budget_bytes: 2000\n"
               "# device: cuda:0\n");
    /* total columns missing: the total is the sum of the parts */
    fprintf(w, "time_s,step,loss,cur_weights,cur_gradients,cur_optimizer,cur_activations,cur_overhead,"
               "peak_weights,peak_gradients,peak_optimizer,peak_activations,peak_overhead,pred_activations\n");
    fprintf(w, "1,1,5.0,100,100,200,300,10,100,100,200,400,10,\n");
    fprintf(w, "2,2,,100,100,200,300,10,100,100,200,500,10,400\n");
    fclose(w);
    mtop_follow f;
    mtop_history h;
    mtop_follow_init(&f, p);
    mtop_history_init(&h, 64);
    mtop_follow_poll(&f, &h, 100);
    mtop_snap_opts o;
    mtop_snap_opts_default(&o);
    mtop_snapshot s;
    mtop_snapshot_make(&s, &f, &h, &o, 1.0);
    CHECK(!strcmp(s.state, "live") && !s.stale, "fresh data is live");
    CHECK(s.step.ok && s.step.v == 2 && s.steps.ok && s.steps.v == 10, "step 2 of 10");
    CHECK(s.eta.ok && fabs(s.eta.v - 8.0) < 1e-9, "eta: 8 steps at 1 s each (%g)", s.eta.v);
    CHECK(s.loss.ok && s.loss.v == 5.0, "the loss falls back to the newest valid one");
    CHECK(s.tab[MTOP_TOTAL][MTOP_COL_CURRENT].ok && s.tab[MTOP_TOTAL][MTOP_COL_CURRENT].v == 710,
          "no total column: current total is the sum of the parts (710)");
    CHECK(s.tab[MTOP_TOTAL][MTOP_COL_PEAK].v == 910, "peak total 910");
    CHECK(!s.tab[MTOP_TOTAL][MTOP_COL_PREDICTED].ok && !s.tab[0][MTOP_COL_PREDICTED].ok,
          "predictions missing: N/A (total included)");
    CHECK(s.tab[3][MTOP_COL_ERROR].ok && fabs(s.tab[3][MTOP_COL_ERROR].v - 25) < 1e-9, "activations error: +25%%");
    CHECK(!s.tab[0][MTOP_COL_ERROR].ok && !s.rss.ok && !s.tokens_per_s.ok, "missing columns are N/A");
    CHECK(s.budget.ok && s.budget.v == 2000 && s.headroom.ok && fabs(s.headroom.v - 1800) < 1e-9, "budget and headroom line");
    o.budget_bytes = 4096;
    mtop_snapshot_make(&s, &f, &h, &o, 11.0);
    CHECK(s.budget.v == 4096, "--gpu overrides the file's budget");
    CHECK(s.stale && !strcmp(s.state, "stale"), "11 s without a row: stale");
    double seg[MTOP_NCOMP + 1];
    CHECK(mtop_snapshot_segments(&s, MTOP_COL_CURRENT, seg) == 710 && seg[3] == 300 && seg[MTOP_NCOMP] == 0,
          "bar segments: the parts, nothing unattributed");

    /* --once: the screen's names */
    char *js = mtop_snapshot_json(&s);
    json_error_t je;
    json_t *j = js ? json_loads(js, 0, &je) : NULL;
    CHECK(j != NULL, "the JSON snapshot parses");
    const char *keys[] = {"file", "state", "model", "device", "settings", "step", "steps", "elapsed", "eta", "loss",
                          "tokens_per_s", "lr", "rss", "budget", "headroom", "components", "rows", "skipped", "resets",
                          "stale"};
    int missing = 0;
    for (size_t i = 0; j && i < sizeof keys / sizeof *keys; i++)
        if (!json_object_get(j, keys[i])) missing++;
    CHECK(j && missing == 0, "JSON has every screen label (%d missing)", missing);
    json_t *comps = j ? json_object_get(j, "components") : NULL;
    int cm = 0;
    for (int g = 0; comps && g < MTOP_NGROUP; g++) {
        json_t *c = json_object_get(comps, mtop_group_label[g]);
        for (int k = 0; k < MTOP_NCOL; k++)
            if (!c || !json_object_get(c, mtop_col_label[k])) cm++;
    }
    CHECK(comps && cm == 0, "JSON components: every table row and column");
    CHECK(j && json_integer_value(json_object_get(json_object_get(json_object_get(j, "components"), "total"), "current")) == 710,
          "JSON total current 710");
    CHECK(j && json_is_null(json_object_get(j, "rss")) && json_is_true(json_object_get(j, "stale")), "N/A is null; stale true");
    CHECK(j && !strcmp(json_string_value(json_object_get(json_object_get(j, "settings"), "seq")), "1024"),
          "settings as an object");
    json_decref(j);
    free(js);
    char *cs = mtop_snapshot_csv(&s);
    CHECK(cs && !strncmp(cs, "file,state,model,device,settings,step,steps,elapsed,eta,loss,tokens_per_s,lr,rss,budget,headroom,weights_current,", 110),
          "CSV header uses the same names");
    int lines = 0;
    for (const char *c = cs; c && *c; c++) lines += *c == '\n';
    CHECK(lines == 2 && strstr(cs, ",710,910,,") && strstr(cs, "\"gpt2\""), "CSV: a header and one row");
    free(cs);
    mtop_follow_free(&f);
    mtop_history_free(&h);
}

/* Issue 36: every count read back is range-checked, never truncated; a bad
 * one is a bad line naming the value, and a header's is kept in meta.bad. */
static void test_counts(void)
{
    mtop_parser p;
    mtop_row r;
    mtop_parser_init(&p);
    CHECK(parse(&p, "# settings: zero=1 rank=1 ranks=4294967298", &r) == MTOP_LINE_BAD && p.bad == 1 &&
              strstr(p.reason, "ranks=4294967298: not a number of ranks") && p.meta.ranks == -1 &&
              !strcmp(p.meta.bad, p.reason),
          "ranks=4294967298 (2^32 + 2): refused and named, never 2 (%s)", p.reason);
    mtop_parser_init(&p);
    CHECK(parse(&p, "# settings: rank=4294967297 ranks=2", &r) == MTOP_LINE_BAD && strstr(p.reason, "rank=4294967297") &&
              p.meta.rank == -1,
          "rank=4294967297: refused, never 1 (%s)", p.reason);
    mtop_parser_init(&p);
    CHECK(parse(&p, "# settings: rank=2 ranks=2", &r) == MTOP_LINE_BAD && strstr(p.reason, "rank=2: not below ranks=2"),
          "rank=2 of ranks=2: refused (%s)", p.reason);
    mtop_parser_init(&p);
    CHECK(parse(&p, "# settings: zero=4294967298", &r) == MTOP_LINE_BAD && strstr(p.reason, "zero=4294967298"),
          "zero=4294967298: refused (%s)", p.reason);
    mtop_parser_init(&p);
    CHECK(parse(&p, "# settings: ranks=-1", &r) == MTOP_LINE_BAD && parse(&p, "# settings: ranks=0x2", &r) == MTOP_LINE_BAD &&
              parse(&p, "# settings: ranks=2 ranks=3", &r) == MTOP_LINE_BAD && strstr(p.reason, "the same setting twice"),
          "a negative, hexadecimal or repeated ranks= is refused (%s)", p.reason);
    mtop_parser_init(&p);
    CHECK(parse(&p, "# settings: rank=00000000000000000000000000000000000000000000000000000000000000000000001 ranks=2", &r) ==
                  MTOP_LINE_COMMENT && p.meta.rank == 1,
          "leading zeros are still the number, however many");
    /* a settings line longer than the old 511 bytes, and values longer than 63: kept whole */
    char line[2048], val[200];
    memset(val, 'v', 199), val[199] = 0;
    snprintf(line, sizeof line, "# settings: note=%s pad=%s pad2=%s rank=1 ranks=3", val, val, val);
    mtop_parser_init(&p);
    CHECK(parse(&p, line, &r) == MTOP_LINE_COMMENT && p.meta.ranks == 3 && p.meta.rank == 1 &&
              strlen(mtop_meta_setting(&p.meta, "note")) == 199,
          "a 700-byte settings line: every setting kept, none cut");
    char many[4000] = "# settings:";
    for (int i = 0; i < 129; i++) snprintf(many + strlen(many), sizeof many - strlen(many), " k%d=1", i);
    mtop_parser_init(&p);
    CHECK(parse(&p, many, &r) == MTOP_LINE_BAD && strstr(p.reason, "more than 128"), "129 settings: refused (%s)", p.reason);

    mtop_parser_init(&p);
    CHECK(parse(&p, "# steps: 18446744073709551617", &r) == MTOP_LINE_BAD && !p.meta.has_steps &&
              strstr(p.reason, "steps '18446744073709551617'"),
          "steps beyond 2^64: refused and named (%s)", p.reason);
    CHECK(parse(&p, "# steps: 9007199254740993", &r) == MTOP_LINE_BAD, "steps 2^53 + 1 (not exact in a double): refused");
    CHECK(parse(&p, "# steps: 9007199254740992", &r) == MTOP_LINE_COMMENT && p.meta.steps == 9007199254740992LL,
          "steps 2^53: read exactly");
    CHECK(parse(&p, "# steps: 1e3", &r) == MTOP_LINE_BAD && parse(&p, "# budget_bytes: -5", &r) == MTOP_LINE_BAD &&
              parse(&p, "# budget_bytes: 2.5", &r) == MTOP_LINE_BAD && strstr(p.reason, "budget_bytes '2.5'"),
          "steps 1e3, budget_bytes -5 and 2.5: refused (%s)", p.reason);
    CHECK(parse(&p, "# memtrain metrics v99999999999", &r) == MTOP_LINE_BAD && strstr(p.reason, "99999999999"),
          "a format version beyond an int: refused, named (%s)", p.reason);
    CHECK(!strcmp(p.meta.bad, "steps '18446744073709551617': not a number of steps (a whole number, 0 to 9007199254740992)"),
          "meta.bad keeps the header's first bad value (%s)", p.meta.bad);

    /* rows: steps and byte columns are whole numbers up to 2^53 */
    mtop_parser_init(&p);
    parse(&p, "step,cur_total,time_s", &r);
    CHECK(parse(&p, "1,9007199254740992,0.5", &r) == MTOP_LINE_ROW && r.v[MTOP_CUR(MTOP_TOTAL)] == 9007199254740992.0,
          "a byte count of 2^53: read exactly");
    CHECK(parse(&p, "2,9007199254740993,0.5", &r) == MTOP_LINE_BAD &&
              strstr(p.reason, "cur_total '9007199254740993': not a byte count"),
          "a byte count past 2^53: skipped, named (%s)", p.reason);
    CHECK(parse(&p, "3,1.5,0.5", &r) == MTOP_LINE_BAD && strstr(p.reason, "cur_total '1.5'"),
          "a byte count of 1.5: skipped (%s)", p.reason);
    CHECK(parse(&p, "18446744073709551617,5,0.5", &r) == MTOP_LINE_BAD && strstr(p.reason, "step '18446744073709551617'"),
          "a step beyond 2^64: skipped, named (%s)", p.reason);
    CHECK(parse(&p, "4,5,1e999", &r) == MTOP_LINE_BAD && strstr(p.reason, "time_s '1e999': not a number"),
          "a time that overflows a double: skipped (%s)", p.reason);
    CHECK(parse(&p, "5,1\033[2J,0.5", &r) == MTOP_LINE_BAD && strstr(p.reason, "'1\\x1b[2J'") && !strchr(p.reason, '\033'),
          "a bad value's reason quotes it escaped: one plain line (%s)", p.reason);
    CHECK(p.meta.bad[0] == 0, "a bad row is not a bad header");
}

/* Rewrite the file in place (same inode, same size): `from` becomes `to` at its n-th occurrence. */
static void rewrite_in_place(const char *path, const char *from, const char *to, int nth)
{
    static char text[1 << 16];
    FILE *f = fopen(path, "r+");
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = 0;
    char *at = text;
    for (int i = 0; at && i <= nth; i++) at = strstr(i ? at + 1 : at, from);
    if (at) memcpy(at, to, strlen(to));
    rewind(f);
    fwrite(text, 1, n, f);
    fclose(f);
}

/* Issue 36: a rewrite that changes anything but the last 64 bytes, at the same size. */
static void test_rewrite(void)
{
    const char *p = path_of("same.csv");
    mtop_follow f;
    mtop_history h;
    mtop_history_init(&h, 64);
    start_file(p, 5);
    mtop_follow_init(&f, p);
    CHECK(mtop_follow_poll(&f, &h, 1) == 5 && f.resets == 0, "5 rows");
    CHECK(mtop_follow_poll(&f, &h, 2) == 0 && mtop_follow_poll(&f, &h, 3) == 0 && f.resets == 0,
          "polled again, nothing changed: no reset");
    struct stat before;
    stat(p, &before);
    rewrite_in_place(p, "model: gpt2", "model: gpt3", 0);
    struct stat after;
    stat(p, &after);
    CHECK(after.st_size == before.st_size && after.st_ino == before.st_ino, "rewritten in place at the same size");
    CHECK(mtop_follow_poll(&f, &h, 4) == 5 && f.resets == 1 && !strcmp(f.reset_why, "rewritten") &&
              !strcmp(f.parser.meta.model, "gpt3"),
          "only the header changed: reread, the new model (%s, %ld resets)", f.parser.meta.model, f.resets);
    /* a row in the middle changed, and the modification time set back to what it was */
    stat(p, &before);
    rewrite_in_place(p, ",1000,", ",2000,", 2);
    struct timespec times[2] = {before.st_atim, before.st_mtim};
    utimensat(AT_FDCWD, p, times, 0);
    stat(p, &after);
    CHECK(after.st_mtim.tv_sec == before.st_mtim.tv_sec && after.st_mtim.tv_nsec == before.st_mtim.tv_nsec &&
              after.st_size == before.st_size,
          "row 3 rewritten, size and mtime as before");
    CHECK(mtop_follow_poll(&f, &h, 5) == 5 && f.resets == 2 && mtop_history_at(&h, 2)->v[MTOP_TOKENS_PER_S] == 2000,
          "caught all the same (the change time moved): row 3 reread (%ld resets)", f.resets);
    /* rewritten right after a poll, within the filesystem's timestamp tick */
    rewrite_in_place(p, ",2000,", ",3000,", 0);
    CHECK(mtop_follow_poll(&f, &h, 6) == 5 && f.resets == 3 && mtop_history_at(&h, 2)->v[MTOP_TOKENS_PER_S] == 3000,
          "rewritten at once after a poll: caught (%ld resets)", f.resets);
    /* appending is not rewriting */
    append_rows(p, 6, 7);
    CHECK(mtop_follow_poll(&f, &h, 7) == 2 && f.resets == 3 && h.pushed == 7, "2 rows appended: read, no reset");
    mtop_follow_free(&f);

    /* a directory where the file was: an error until the file is back, then read */
    const char *d = path_of("sometimes_a_dir.csv");
    mkdir(d, 0700);
    mtop_follow_init(&f, d);
    CHECK(mtop_follow_poll(&f, &h, 8) == -1 && f.state == MTOP_FOLLOW_ERROR, "a directory: an error");
    rmdir(d);
    start_file(d, 2);
    CHECK(mtop_follow_poll(&f, &h, 9) == 2 && f.state == MTOP_FOLLOW_OPEN, "the file in its place: read, no error");
    mtop_follow_free(&f);
    mtop_history_free(&h);
}

int main(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/test_tui_metrics.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 2;
    }
    test_csv_split();
    test_parser();
    test_history();
    test_follow();
    test_snapshot();
    test_counts();
    test_rewrite();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return check_summary();
}

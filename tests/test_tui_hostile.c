/* test_tui_hostile.c — what a stranger's metrics file can put in front of a
 * terminal (issue 36): escape sequences, C1 bytes, DEL and malformed UTF-8 in
 * its header reach --once text, CSV and JSON and the ncurses screen as plain
 * escaped text (\x1b, \u{009b}), never as the bytes themselves. */
#include <curses.h>
#include <jansson.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wchar.h>

#include "check.h"
#include "draw.h"
#include "follow.h"
#include "format.h"
#include "layout.h"
#include "snapshot.h"
#include "snapshot_text.h"
#include "common/utf8.h"

static char buf[512];

#define STR(expr, want)                                                                    \
    do {                                                                                   \
        const char *got_ = (expr);                                                         \
        CHECK(strcmp(got_, want) == 0, "%s = \"%s\" (want \"%s\")", #expr, got_, want);    \
    } while (0)

/* Where in s a terminal would act on a byte: a C0 control but '\n', DEL, a
 * byte outside UTF-8 (a raw C1 control among them) or a UTF-8-encoded C1
 * control; -1 when nowhere. */
static long raw_control(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s);
    uint32_t cp;
    for (size_t i = 0; i < n;) {
        int k = utf8_decode(p + i, n - i, &cp);
        if (!k || (cp < 0x20 && cp != '\n') || (cp >= 0x7f && cp < 0xa0)) return (long)i;
        i += (size_t)k;
    }
    return -1;
}

static void test_clean(void)
{
    const size_t n = sizeof buf;
    STR(mtop_clean("gpt2", buf, n), "gpt2");
    STR(mtop_clean("a\033[2Jb", buf, n), "a\\x1b[2Jb");
    STR(mtop_clean("t\033]2;PWNED\007", buf, n), "t\\x1b]2;PWNED\\x07");
    STR(mtop_clean("x\233y", buf, n), "x\\x9by");             /* a raw C1 byte (CSI), not UTF-8 */
    STR(mtop_clean("x\302\233y", buf, n), "x\\u{009b}y");     /* U+009B encoded: a C1 control all the same */
    STR(mtop_clean("del\177", buf, n), "del\\x7f");
    STR(mtop_clean("a\nb\tc\rd\be", buf, n), "a\\nb\\tc\\rd\\x08e");
    STR(mtop_clean("\342\200\256evil", buf, n), "\\u{202e}evil"); /* right-to-left override */
    STR(mtop_clean("Überlingen 模型", buf, n), "Überlingen 模型");  /* text stays text */
    char small[8];
    STR(mtop_clean("\033\033\033\033", small, sizeof small), "\\x1b..."); /* cut to fit, never a raw byte */
    CHECK(MTOP_CLEAN_LEN(3) >= strlen("\\x1b\\x1b\\x1b") + 1, "MTOP_CLEAN_LEN: room for every byte escaped");

    /* CSV: quoted, quotes doubled, one line whatever the text */
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    mtop_csv_text(f, "a\"b,c\nd\033e");
    fclose(f);
    STR(out, "\"a\"\"b,c\\nd\\x1be\"");
    free(out);

    /* JSON: valid UTF-8 kept as data (escaped by JSON), malformed cleaned, no raw control in the text */
    json_t *o = json_object();
    json_object_set_new(o, "a", mtop_json_str("esc\033 del\177 c1\302\233 ls\342\200\250"));
    json_object_set_new(o, "b", mtop_json_str("raw\233byte"));
    char *text = mtop_json_text(o);
    CHECK(text && raw_control(text) < 0, "JSON text: no raw control byte (at %ld)", text ? raw_control(text) : -2);
    json_error_t je;
    json_t *back = text ? json_loads(text, 0, &je) : NULL;
    CHECK(back && !strcmp(json_string_value(json_object_get(back, "a")), "esc\033 del\177 c1\302\233 ls\342\200\250"),
          "JSON: a valid UTF-8 string reads back as it was (its escapes are JSON's)");
    CHECK(back && json_object_get(back, "b") && !strcmp(json_string_value(json_object_get(back, "b")), "raw\\x9bbyte"),
          "JSON: malformed UTF-8 is cleaned, not dropped (jansson refuses it)");
    CHECK(text && strstr(text, "\\u007f") && strstr(text, "\\u009b") && strstr(text, "\\u2028"),
          "JSON: DEL, C1 and U+2028 written \\uXXXX");
    json_decref(back);
    free(text);
}

static char dir[256];

/* A metrics file whose header carries escape sequences everywhere. */
static const char *hostile_file(void)
{
    static char path[300];
    snprintf(path, sizeof path, "%s/ev\033[1mil.csv", dir);
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(2);
    }
    fputs("# memtrain metrics v1\n# model: m\033]2;PWNED\007\233[2J\177\302\233x\n"
          "# settings: batch=8 k\033[31m=v\033[0m seq=4\n# device: cuda\033[2J\n# steps: 10\n"
          "step,cur_total,peak_total,bad\033[5mcol\n1,100,150,x\n2,200,250,y\n",
          f);
    fclose(f);
    return path;
}

static void test_once(void)
{
    mtop_follow fo;
    mtop_history h;
    mtop_follow_init(&fo, hostile_file());
    mtop_history_init(&h, 16);
    CHECK(mtop_follow_poll(&fo, &h, 1) == 2, "the hostile file is read: 2 rows");
    mtop_snap_opts o;
    mtop_snap_opts_default(&o);
    mtop_snapshot s;
    mtop_snapshot_make(&s, &fo, &h, &o, 0);
    char *t = mtop_snapshot_text(&s), *c = mtop_snapshot_csv(&s), *j = mtop_snapshot_json(&s);
    CHECK(t && raw_control(t) < 0 && strstr(t, "model m\\x1b]2;PWNED\\x07\\x9b[2J\\x7f\\u{009b}x") &&
              strstr(t, "memtop ") && strstr(t, "ev\\x1b[1mil.csv"),
          "--format text: the model, settings, device and the file's name escaped (%ld)", t ? raw_control(t) : -2);
    CHECK(c && raw_control(c) < 0 && strstr(c, "\"batch=8 k\\x1b[31m=v\\x1b[0m seq=4\""),
          "--format csv: quoted and escaped, one line per record (%ld)", c ? raw_control(c) : -2);
    int lines = 0;
    for (const char *p = c; p && *p; p++) lines += *p == '\n';
    CHECK(lines == 2, "--format csv: a header and one row (%d lines)", lines);
    json_error_t je;
    json_t *root = j ? json_loads(j, 0, &je) : NULL;
    CHECK(j && raw_control(j) < 0 && root, "--format json: parses, no raw control byte");
    const char *model = root ? json_string_value(json_object_get(root, "model")) : NULL;
    CHECK(model && !strcmp(model, "m\\x1b]2;PWNED\\x07\\x9b[2J\\x7f\\u{009b}x"),
          "--format json: a model of malformed UTF-8 is there, cleaned (%s)", model ? model : "missing");
    json_t *set = root ? json_object_get(root, "settings") : NULL;
    CHECK(set && !strcmp(json_string_value(json_object_get(set, "k\033[31m")), "v\033[0m") &&
              !strcmp(json_string_value(json_object_get(root, "device")), "cuda\033[2J"),
          "--format json: valid UTF-8 kept as data, its control characters JSON-escaped");
    json_decref(root);
    free(t);
    free(c);
    free(j);
    mtop_follow_free(&fo);
    mtop_history_free(&h);
}

/* Every cell of the screen: no control character, and the text of row y. */
static bool screen_clean(int rows, int cols, char *first_bad, size_t len)
{
    for (int y = 0; y < rows; y++)
        for (int x = 0; x < cols; x++) {
            cchar_t cc;
            wchar_t wc[CCHARW_MAX + 1];
            attr_t at;
            short pair;
            if (mvin_wch(y, x, &cc) == ERR || getcchar(&cc, wc, &at, &pair, NULL) == ERR) continue;
            for (int k = 0; wc[k]; k++)
                if (wc[k] < 0x20 || (wc[k] >= 0x7f && wc[k] < 0xa0)) {
                    snprintf(first_bad, len, "U+%04X at row %d, column %d", (unsigned)wc[k], y, x);
                    return false;
                }
        }
    return true;
}

static bool screen_has(int rows, const char *text)
{
    char line[512];
    for (int y = 0; y < rows; y++)
        if (mvinnstr(y, 0, line, sizeof line - 1) != ERR && strstr(line, text)) return true;
    return false;
}

static void test_screen(void)
{
    if (!setlocale(LC_ALL, "C.UTF-8")) setlocale(LC_ALL, "");
    setenv("TERM", "xterm", 1);
    FILE *out = fopen("/dev/null", "w"), *in = fopen("/dev/null", "r");
    SCREEN *scr = out && in ? newterm("xterm", out, in) : NULL;
    if (!scr) {
        CHECK(0, "no terminal description for xterm: the screen is not tested");
        return;
    }
    mtop_draw_colors(false);
    mtop_follow fo;
    mtop_history h;
    mtop_follow_init(&fo, hostile_file());
    mtop_history_init(&h, 16);
    mtop_follow_poll(&fo, &h, 1);
    mtop_snap_opts o;
    mtop_snap_opts_default(&o);
    mtop_snapshot s;
    mtop_snapshot_make(&s, &fo, &h, &o, 0);
    /* a command memtop started: its name and its log's last line are the command's to choose */
    mtop_child_view child = {.active = true, .running = false, .status = 3 << 8, .cmd = "tr\033[2Jainer",
                             .log = "/tmp/x/child.log", .log_tail = "boom\033]2;OWNED\007\b\b\b\r"};
    mtop_draw_ctx ctx = {.child = &child, .message = "key \033[5m", .error = "cannot read 'a\033b'",
                         .interval_ms = 1000};
    mtop_layout L;
    mtop_layout_compute_ranks(40, 160, MTOP_VIEW_RUN, 0, &L);
    resizeterm(40, 160);
    erase();
    mtop_draw_run(&L, &s, &h, &ctx);
    char why[96] = "";
    CHECK(screen_clean(40, 160, why, sizeof why), "the run view: no control character in any cell %s", why);
    CHECK(screen_has(40, "m\\x1b]2;PWNED\\x07\\x9b[2J"), "the header shows the model escaped, as --once does");
    CHECK(screen_has(40, "k\\x1b[31m=v\\x1b[0m"), "the settings line escaped");
    CHECK(screen_has(40, "tr\\x1b[2Jainer") && screen_has(40, "boom\\x1b]2;OWNED\\x07\\x08\\x08\\x08\\r"),
          "the command's name and its log's last line escaped");
    CHECK(screen_has(40, "cannot read 'a\\x1bb'") && screen_has(40, "key \\x1b[5m"),
          "the status line's error and message escaped");
    endwin();
    delscreen(scr);
    fclose(out);
    fclose(in);
    mtop_follow_free(&fo);
    mtop_history_free(&h);
}

int main(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/test_tui_hostile.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror(dir);
        return 2;
    }
    test_clean();
    test_once();
    test_screen();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return check_summary();
}

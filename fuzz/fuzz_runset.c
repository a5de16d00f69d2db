/*
 * fuzz_runset.c — the metrics run-set (tui/runset.c and what it stands on:
 * follow.c, ranks.c, the parser, the snapshots): the bytes are a script of
 * files written, appended, replaced, removed or turned into directories in a
 * scratch directory, with polls between, as a training run and a stranger's
 * files would leave them while memtop follows them.
 *
 * Input: byte 0 says what memtop is given (bits 0-1: run.csv, a rank's file,
 * several files, or a plain file; bits 2-4: which rank or how many files;
 * bit 7: read 64 bytes per poll, so that files arrive in pieces). Byte 1, a
 * path, up to '\n', for mtop_rank_of_path alone. Then steps, each a line
 * "@@OK" (O: W write, A append, R replace by rename, D delete, M make a
 * directory of it, P poll; K: the file, '0'-'9' in `names` below) followed
 * by the step's bytes up to the next line starting with "@@".
 *
 * Asserts, after every poll: the slots are 1..MTOP_MAX_RANKS and their ranks
 * >= 0; an error names a slot; the problem and a header's bad value are one
 * line, NUL-terminated; the rank table's rows, heaviest and selected lie
 * within it; the --once output (JSON, CSV, text) exists, holds no raw
 * control byte (issue 36), its JSON parses and its CSV has one line per
 * record. A rank file's name gives back its rank and base, and the base its
 * name. ASan/UBSan/LeakSanitizer report the rest.
 */
#include "fuzz.h"
#include "rank_snapshot.h"
#include "ranks.h"
#include "runset.h"
#include "snapshot.h"
#include "snapshot_text.h"
#include "common/utf8.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const names[10] = {"run.rank0.csv", "run.rank1.csv", "run.rank2.csv", "run.rank3.csv",
                                      "run.rank4.csv", "run.csv",       "run.rank1",     "other.rank0.csv",
                                      "run.rank127.csv", "run.rank128.csv"};

static char dir[256];

static void remove_dir(void)
{
    if (!dir[0]) return;
    for (int i = 0; i < 10; i++) {
        char p[512];
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        if (unlink(p) != 0 && errno == EISDIR) rmdir(p);
        else rmdir(p); /* EPERM on some systems for a directory */
        snprintf(p, sizeof p, "%s/%s.new", dir, names[i]);
        unlink(p);
    }
    rmdir(dir);
}

static const char *path_of(int k)
{
    static char p[4][512];
    static int i;
    i = (i + 1) % 4;
    snprintf(p[i], sizeof p[i], "%s/%s", dir, names[k]);
    return p[i];
}

static void write_file(const char *path, const char *flags, const uint8_t *data, size_t n)
{
    FILE *f = fopen(path, flags);
    if (!f) return; /* a directory there, say: as a stranger's file system would have it */
    if (n) fwrite(data, 1, n, f);
    fclose(f);
}

/* Do step `op` on file k with its bytes. */
static void step(char op, int k, const uint8_t *data, size_t n)
{
    const char *p = path_of(k);
    char tmp[600];
    switch (op) {
    case 'W': write_file(p, "w", data, n); break;
    case 'A': write_file(p, "a", data, n); break;
    case 'R':
        snprintf(tmp, sizeof tmp, "%s.new", p);
        write_file(tmp, "w", data, n);
        if (rename(tmp, p) != 0) unlink(tmp);
        break;
    case 'D':
        if (unlink(p) != 0) rmdir(p);
        break;
    case 'M':
        unlink(p);
        mkdir(p, 0700);
        break;
    default: break;
    }
}

/* Where s has a byte a terminal acts on: C0 but '\n', DEL, a byte outside
 * UTF-8, a UTF-8 C1 control. -1 when nowhere. */
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

static int lines_of(const char *s)
{
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

static void check_output(const char *what, char *text, int want_lines, bool json)
{
    FUZZ_ASSERT(text, "%s: no output", what);
    long at = raw_control(text);
    FUZZ_ASSERT(at < 0, "%s: a raw control byte at %ld", what, at);
    if (want_lines >= 0) FUZZ_ASSERT(lines_of(text) == want_lines, "%s: %d lines, not %d", what, lines_of(text), want_lines);
    if (json) {
        json_error_t je;
        json_t *j = json_loads(text, 0, &je);
        FUZZ_ASSERT(j, "%s: does not parse: %s", what, je.text);
        json_decref(j);
    }
    free(text);
}

static void check_line(const char *what, const char *s, size_t cap)
{
    const char *end = memchr(s, 0, cap);
    FUZZ_ASSERT(end, "%s: not NUL-terminated", what);
    FUZZ_ASSERT(!memchr(s, '\n', (size_t)(end - s)), "%s: several lines: %s", what, s);
}

static mtop_runset rs;     /* large: off the stack */
static mtop_rank_table t;

static void poll_and_check(double now, uint8_t pick)
{
    int rows = mtop_runset_poll(&rs, now);
    FUZZ_ASSERT(rows >= -1, "%d rows", rows);
    FUZZ_ASSERT(rs.n >= 1 && rs.n <= MTOP_MAX_RANKS, "%d slots", rs.n);
    FUZZ_ASSERT(rs.ranks >= 0, "ranks %d", rs.ranks);
    FUZZ_ASSERT(rows >= 0 || rs.error_slot < rs.n, "error slot %d of %d", rs.error_slot, rs.n);
    for (int i = 0; i < rs.n; i++) {
        FUZZ_ASSERT(rs.slot[i] && rs.slot[i]->rank >= 0, "slot %d", i);
        check_line("meta.bad", rs.slot[i]->f.parser.meta.bad, sizeof rs.slot[i]->f.parser.meta.bad);
        check_line("reason", rs.slot[i]->f.parser.reason, sizeof rs.slot[i]->f.parser.reason);
    }
    check_line("problem", rs.problem, sizeof rs.problem);
    int miss = mtop_runset_missing(&rs);
    FUZZ_ASSERT(miss >= -1 && miss < rs.n, "missing %d", miss);

    mtop_snap_opts o;
    mtop_snap_opts_default(&o);
    mtop_runset_snapshots(&rs, &o, now, pick & 1);
    mtop_runset_table(&rs, pick % 4 == 3 ? -1 : pick % (rs.n + 1) - 1, &t);
    FUZZ_ASSERT(t.n == rs.n && t.selected >= 0 && t.selected < t.n && t.heaviest >= -1 && t.heaviest < t.n,
                "table: %d rows, selected %d, heaviest %d", t.n, t.selected, t.heaviest);
    if (!rs.ranked) {
        const mtop_snapshot *s = &rs.slot[0]->snap;
        check_output("snapshot JSON", mtop_snapshot_json(s), -1, true);
        check_output("snapshot CSV", mtop_snapshot_csv(s), 2, false);
        check_output("snapshot text", mtop_snapshot_text(s), -1, false);
    } else {
        check_output("ranks JSON", mtop_ranks_json(&t), -1, true);
        check_output("ranks CSV", mtop_ranks_csv(&t), 1 + t.n, false);
        check_output("ranks text", mtop_ranks_text(&t), -1, false);
    }
}

/* A rank file's name and its base: each gives back the other. */
static void check_names(const uint8_t *data, size_t n)
{
    char path[256], base[300], back[400];
    if (n >= sizeof path) n = sizeof path - 1;
    memcpy(path, data, n);
    path[n] = 0;
    int k = mtop_rank_of_path(path, base, sizeof base);
    FUZZ_ASSERT(k >= -1, "rank %d", k);
    if (k < 0 || strlen(path) != n) return;
    mtop_rank_path(base, k, back, sizeof back);
    FUZZ_ASSERT(!strcmp(back, path), "'%s' is rank %d of '%s', whose rank %d is '%s'", path, k, base, k, back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/fuzz_runset.XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(dir)) abort();
        atexit(remove_dir);
    }
    if (size < 1) return 0;
    uint8_t how = data[0];
    data++, size--;
    const uint8_t *nl = memchr(data, '\n', size);
    size_t first = nl ? (size_t)(nl - data) : size;
    check_names(data, first);
    data += first, size -= first;

    /* a clean directory: every name gone, whatever it was */
    for (int i = 0; i < 10; i++) step('D', i, NULL, 0);

    char *paths[4];
    int npaths = 1, param = (how >> 2) & 7;
    switch (how & 3) {
    case 0: paths[0] = (char *)path_of(5); break;                       /* memtop run.csv */
    case 1: paths[0] = (char *)path_of(param < 5 ? param : 8); break;   /* memtop run.rankK.csv */
    case 2:                                                              /* memtop FILE FILE ... */
        npaths = 1 + param % 4;
        for (int i = 0; i < npaths; i++) paths[i] = (char *)path_of((param + 3 * i) % 10);
        break;
    default: paths[0] = (char *)path_of(6); break;                      /* a plain name */
    }
    static char held[4][512]; /* path_of's buffers rotate: keep the paths */
    for (int i = 0; i < npaths; i++) {
        snprintf(held[i], sizeof held[i], "%s", paths[i]);
        paths[i] = held[i];
    }
    if (mtop_runset_init(&rs, paths, npaths, 16)) abort();
    if (how & 0x80) rs.read_limit = 64;

    double now = 1;
    int polls = 0;
    for (size_t at = 0; at + 4 <= size && polls < 64;) {
        /* a step: "@@OK" at a line's start */
        if (!(data[at] == '@' && data[at + 1] == '@' && (at == 0 || data[at - 1] == '\n'))) {
            at++;
            continue;
        }
        char op = (char)data[at + 2];
        int k = data[at + 3] >= '0' && data[at + 3] <= '9' ? data[at + 3] - '0' : data[at + 3] % 10;
        size_t from = at + 4;
        if (from < size && data[from] == '\n') from++;
        size_t to = from;
        while (to < size && !(data[to] == '@' && to + 1 < size && data[to + 1] == '@' && data[to - 1] == '\n')) to++;
        if (op == 'P') {
            poll_and_check(now, data[at + 3]);
            now += 0.5;
            polls++;
        } else {
            step(op, k, data + from, to - from);
        }
        at = to;
    }
    poll_and_check(now, how);
    mtop_runset_free(&rs);
    return 0;
}

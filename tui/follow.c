/* follow.c — tail -F for the metrics file: append, truncate, replace, rewrite in place, partial lines. */
#include "follow.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define FNV_BASIS 14695981039346656037ull
#define FNV_PRIME 1099511628211ull

static uint64_t fnv(uint64_t h, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * FNV_PRIME;
    return h;
}

int mtop_follow_init(mtop_follow *f, const char *path)
{
    memset(f, 0, sizeof *f);
    f->sum = f->head_sum = FNV_BASIS;
    f->fd = -1;
    f->last_row_at = -1;
    f->opened_at = -1;
    f->read_limit = 8u << 20;
    mtop_parser_init(&f->parser);
    f->path = strdup(path);
    return f->path ? 0 : -1;
}

void mtop_follow_free(mtop_follow *f)
{
    if (!f) return;
    if (f->fd >= 0) close(f->fd);
    f->fd = -1;
    free(f->path);
    free(f->buf);
    f->path = NULL;
    f->buf = NULL;
}

static void restart(mtop_follow *f, mtop_history *h, const char *why)
{
    f->off = 0;
    f->len = 0;
    f->alen = 0;
    f->sum = f->head_sum = FNV_BASIS;
    f->skipping = false;
    mtop_parser_init(&f->parser);
    mtop_history_clear(h);
    f->resets++;
    strncpy(f->reset_why, why, sizeof f->reset_why - 1);
}

static int64_t ns(struct timespec t) { return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec; }

/* The bytes [at, at + n) were read: into the hashes. */
static void note_read(mtop_follow *f, const unsigned char *s, size_t n, off_t at)
{
    f->sum = fnv(f->sum, s, n);
    if (at < MTOP_HEAD) {
        size_t in_head = (size_t)(MTOP_HEAD - at) < n ? (size_t)(MTOP_HEAD - at) : n;
        f->head_sum = fnv(f->head_sum, s, in_head);
    }
}

/* The hash of the file's bytes [0, upto), as they are now; false when it
 * cannot be read that far (it shrank meanwhile: not what was read). */
static bool hash_now(int fd, off_t upto, uint64_t *out)
{
    unsigned char buf[65536];
    uint64_t h = FNV_BASIS;
    for (off_t at = 0; at < upto;) {
        size_t want = upto - at < (off_t)sizeof buf ? (size_t)(upto - at) : sizeof buf;
        ssize_t got = pread(fd, buf, want, at);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return false;
        h = fnv(h, buf, (size_t)got);
        at += got;
    }
    *out = h;
    return true;
}

/* Whether the file still holds what was read. `all`: every byte read (a
 * change in place); else the head and the bytes before the offset (growth). */
static bool still_same(const mtop_follow *f, bool all)
{
    uint64_t h;
    if (all) return hash_now(f->fd, f->off, &h) && h == f->sum;
    if (!hash_now(f->fd, f->off < MTOP_HEAD ? f->off : MTOP_HEAD, &h) || h != f->head_sum) return false;
    unsigned char now_bytes[MTOP_ANCHOR];
    ssize_t got = pread(f->fd, now_bytes, f->alen, f->off - (off_t)f->alen);
    return got == (ssize_t)f->alen && memcmp(now_bytes, f->anchor, f->alen) == 0;
}

static int line(mtop_follow *f, mtop_history *h, const char *s, size_t n)
{
    mtop_row r;
    if (mtop_parse_line(&f->parser, s, n, &r) == MTOP_LINE_ROW) {
        mtop_history_push(h, &r);
        return 1;
    }
    return 0;
}

/* Keep the bytes up to a complete line (or a partial one) in `buf`. */
static int append(mtop_follow *f, const char *s, size_t n)
{
    if (f->len + n > MTOP_LINE_MAX) {
        f->skipping = true;
        f->len = 0;
        return 0;
    }
    if (f->len + n > f->cap) {
        size_t cap = f->cap ? f->cap : 256;
        while (cap < f->len + n) cap *= 2;
        char *b = realloc(f->buf, cap);
        if (!b) return -1;
        f->buf = b;
        f->cap = cap;
    }
    memcpy(f->buf + f->len, s, n);
    f->len += n;
    return 0;
}

static void remember(mtop_follow *f, const char *s, size_t n)
{
    if (n >= MTOP_ANCHOR) {
        memcpy(f->anchor, s + n - MTOP_ANCHOR, MTOP_ANCHOR);
        f->alen = MTOP_ANCHOR;
        return;
    }
    size_t keep = f->alen + n > MTOP_ANCHOR ? MTOP_ANCHOR - n : f->alen;
    memmove(f->anchor, f->anchor + f->alen - keep, keep);
    memcpy(f->anchor + keep, s, n);
    f->alen = keep + n;
}

static int consume(mtop_follow *f, mtop_history *h, const char *s, size_t n)
{
    int rows = 0;
    remember(f, s, n);
    while (n) {
        const char *nl = memchr(s, '\n', n);
        size_t take = nl ? (size_t)(nl - s) : n;
        if (f->skipping) {
            if (nl) {
                f->skipping = false;
                f->parser.bad++;
                strcpy(f->parser.reason, "line too long");
            }
        } else if (nl && f->len == 0) {
            rows += line(f, h, s, take);
        } else {
            if (append(f, s, take)) return -1;
            if (nl && !f->skipping) {
                rows += line(f, h, f->buf, f->len);
                f->len = 0;
            } else if (nl) {
                f->skipping = false;
                f->parser.bad++;
                strcpy(f->parser.reason, "line too long");
            }
        }
        if (!nl) break;
        s = nl + 1;
        n -= take + 1;
    }
    return rows;
}

static int fail(mtop_follow *f, int e)
{
    f->state = MTOP_FOLLOW_ERROR;
    f->err_no = e;
    return -1;
}

int mtop_follow_poll(mtop_follow *f, mtop_history *h, double now)
{
    struct stat st;
    f->pending = false;
    if (stat(f->path, &st) != 0) {
        f->err_no = errno;
        if (f->fd >= 0) {
            close(f->fd);
            f->fd = -1;
            f->state = MTOP_FOLLOW_GONE;
        } else if (f->state != MTOP_FOLLOW_GONE) {
            f->state = MTOP_FOLLOW_WAITING;
        }
        return 0;
    }
    if (S_ISDIR(st.st_mode)) return fail(f, EISDIR);
    if (f->fd >= 0 && (st.st_dev != f->dev || st.st_ino != f->ino)) {
        close(f->fd);
        f->fd = -1;
        restart(f, h, "replaced");
    }
    if (f->fd < 0) {
        int fd = open(f->path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) return fail(f, errno);
        struct stat fst;
        if (fstat(fd, &fst) != 0) {
            int e = errno;
            close(fd);
            return fail(f, e);
        }
        f->fd = fd;
        f->dev = fst.st_dev;
        f->ino = fst.st_ino;
        if (f->off || f->parser.rows || f->parser.comments || h->pushed) restart(f, h, "replaced");
        f->off = 0;
        f->seen_size = -1;
        if (f->opened_at < 0) f->opened_at = now;
        st = fst;
    }
    f->state = MTOP_FOLLOW_OPEN;
    bool grew = st.st_size > f->seen_size;
    bool touched = ns(st.st_mtim) != f->seen_mtime_ns || ns(st.st_ctim) != f->seen_ctime_ns;
    if (st.st_size < f->off) restart(f, h, "truncated");
    else if (f->off > 0 && (grew || touched || f->racy) && !still_same(f, !grew)) restart(f, h, "rewritten");
    f->seen_size = st.st_size;
    f->seen_mtime_ns = ns(st.st_mtim);
    f->seen_ctime_ns = ns(st.st_ctim);
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    int64_t changed = f->seen_ctime_ns > f->seen_mtime_ns ? f->seen_ctime_ns : f->seen_mtime_ns;
    f->racy = (double)(ns(wall) - changed) < MTOP_RACY_S * 1e9;

    int rows = 0;
    size_t budget = f->read_limit;
    char chunk[65536];
    for (;;) {
        if (budget == 0) {
            f->pending = true;
            break;
        }
        size_t want = sizeof chunk < budget ? sizeof chunk : budget;
        ssize_t got = pread(f->fd, chunk, want, f->off);
        if (got < 0) {
            if (errno == EINTR) continue;
            return fail(f, errno);
        }
        if (got == 0) break;
        note_read(f, (const unsigned char *)chunk, (size_t)got, f->off);
        f->off += got;
        budget -= (size_t)got;
        int r = consume(f, h, chunk, (size_t)got);
        if (r < 0) return fail(f, ENOMEM);
        rows += r;
    }
    if (rows > 0) f->last_row_at = now;
    return rows;
}

/*
 * follow.h — follow a growing metrics file like `tail -F`.
 *
 * Each poll stat()s the path, reads what was appended since the last poll,
 * hands complete lines to the parser and pushes rows into a history. A
 * half-written last line waits in a buffer for its newline. The file is
 * reread from the start (parser and history cleared, `resets` counted) when
 * it is replaced (another inode), truncated (smaller than what was read) or
 * rewritten. A missing file is waited for; a file that disappears keeps its
 * data on screen.
 *
 * Rewrites: the follower keeps a hash of every byte it has read and of the
 * first MTOP_HEAD bytes (the header), and the MTOP_ANCHOR bytes before its
 * read offset. When the file grew, its head and those bytes are checked
 * (an appending writer changes neither; a new run rewriting the file
 * changes both). When it did not grow but its modification or change time
 * moved, it was written in place: everything read is hashed again and
 * compared, so a same-size rewrite anywhere is caught. A file changed
 * within MTOP_RACY_S of a poll is checked again at the next one even if
 * stat() shows nothing new, since a filesystem's timestamps are coarse and
 * a second write within one tick leaves them as they were (racy-git's
 * problem); the change time, which no writer can set, is what counts.
 *
 *     mtop_follow f;
 *     mtop_follow_init(&f, "run.csv");
 *     int added = mtop_follow_poll(&f, &hist, now_seconds);  // every interval
 *     mtop_follow_free(&f);
 */
#ifndef MTOP_FOLLOW_H
#define MTOP_FOLLOW_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "history.h"
#include "metrics.h"

typedef enum {
    MTOP_FOLLOW_WAITING,   /* no file yet */
    MTOP_FOLLOW_OPEN,      /* following */
    MTOP_FOLLOW_GONE,      /* the file was removed; its data is kept */
    MTOP_FOLLOW_ERROR,     /* cannot open or read it: see err */
} mtop_follow_state;

#define MTOP_ANCHOR 64
#define MTOP_HEAD 4096
#define MTOP_RACY_S 2.0
#define MTOP_LINE_MAX 65536

typedef struct mtop_follow {
    char *path;
    int fd;                          /* -1 when not open */
    dev_t dev;
    ino_t ino;
    off_t off;                       /* bytes read: lines parsed plus the partial line */
    off_t seen_size;                 /* st_size at the last poll */
    int64_t seen_mtime_ns, seen_ctime_ns;
    bool racy;                       /* the file changed within MTOP_RACY_S before the last poll's stat */
    uint64_t sum;                    /* hash (FNV-1a) of the bytes read, [0, off) */
    uint64_t head_sum;               /* hash of the first min(off, MTOP_HEAD) bytes */
    char *buf;                       /* the partial last line */
    size_t len, cap;
    bool skipping;                   /* in a line longer than MTOP_LINE_MAX */
    unsigned char anchor[MTOP_ANCHOR]; /* the bytes just before `off` */
    size_t alen;
    size_t read_limit;               /* bytes read per poll at most (default 8 MiB) */
    bool pending;                    /* the last poll stopped at read_limit */
    mtop_parser parser;
    mtop_follow_state state;
    int err_no;                      /* errno of the last failure */
    long resets;                     /* times reread from the start */
    char reset_why[32];              /* "truncated", "replaced", "rewritten" */
    double last_row_at;              /* `now` of the newest row, -1 before any */
    double opened_at;                /* `now` when the file was first seen */
} mtop_follow;

/* Never fails for a valid path; the file need not exist yet. -1 on ENOMEM. */
int mtop_follow_init(mtop_follow *f, const char *path);
/* Read what is new; rows go into `h` (cleared on a reset). Returns the rows
 * added, or -1 when the file cannot be read (state ERROR, err_no set). */
int mtop_follow_poll(mtop_follow *f, mtop_history *h, double now);
void mtop_follow_free(mtop_follow *f);   /* NULL-safe */

#endif

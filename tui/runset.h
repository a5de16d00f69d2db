/*
 * runset.h — the files memtop follows: one metrics file, as ever, or every
 * rank's file of a multi-rank run, each with its own follower, history and
 * snapshot (a slot).
 *
 * One name (memtop run.csv): that file when it exists; when it does not and
 * run.rank0.csv does (now or later), the run's rank files. A rank file's
 * name (memtop run.rank1.csv) is the same run. The ranks are run.rank0.csv
 * up to the ranks=N its header says (files beyond N are another, older
 * run's); until a header says, those that exist one after the other. A rank
 * file not there yet is waited for (its slot is in state WAITING).
 * Several names: those files, the ranks of one run. Either way, files from
 * another run (another model, ranks= or zero=, or a rank= that is not the
 * slot's) are named in `problem`, and so is a file whose header has a bad
 * value (a count out of range, a setting given twice: metrics.h), one file
 * or many.
 *
 *     mtop_runset rs;
 *     mtop_runset_init(&rs, paths, npaths, 4096);
 *     mtop_runset_poll(&rs, now);          // every interval
 *     mtop_runset_snapshots(&rs, &opts, now, false);
 *     mtop_rank_table t;
 *     mtop_runset_table(&rs, -1, &t);      // t.heaviest, t.snap[t.selected]
 *     mtop_runset_free(&rs);
 */
#ifndef MTOP_RUNSET_H
#define MTOP_RUNSET_H

#include <stdbool.h>
#include <stddef.h>

#include "follow.h"
#include "history.h"
#include "ranks.h"
#include "snapshot.h"

typedef struct mtop_rank_slot {
    int rank;                /* the header's rank=, else the name's, else the position */
    mtop_follow f;
    mtop_history h;
    mtop_snapshot snap;
} mtop_rank_slot;

typedef struct mtop_runset {
    char base[4096];         /* the name memtrain was given (run.csv); "" for listed files */
    bool ranked;             /* a multi-rank run; else one file, followed as ever */
    bool listed;             /* several files were named */
    int n;                   /* slots */
    int ranks;               /* the run's ranks=, 0 until a header says */
    int history;             /* rows kept per slot */
    size_t read_limit;       /* bytes read per poll and file (0: the follower's default) */
    mtop_rank_slot *slot[MTOP_MAX_RANKS];
    int error_slot;          /* the slot that could not be read by the last poll, -1 */
    char problem[512];       /* a file from another run or with a bad header, "" if none */
} mtop_runset;

/* 0, or -1 when out of memory. The files need not exist yet. */
int mtop_runset_init(mtop_runset *rs, char *const *paths, int npaths, int history);
/* Read what is new in every file and find the ranks that appeared. Returns
 * the rows added, or -1 when a file cannot be read (error_slot names it). */
int mtop_runset_poll(mtop_runset *rs, double now);
/* The first slot whose file is not there (waited for), or -1. */
int mtop_runset_missing(const mtop_runset *rs);
/* Every slot's snapshot; the age of its newest row from the follower's
 * clock (now), or with by_mtime from the file's modification time. */
void mtop_runset_snapshots(mtop_runset *rs, const mtop_snap_opts *o, double now, bool by_mtime);
/* The rank table of a multi-rank run, `selected` its shown row (-1: the
 * heaviest, else the first). */
void mtop_runset_table(const mtop_runset *rs, int selected, mtop_rank_table *t);
void mtop_runset_free(mtop_runset *rs);   /* NULL-safe */

#endif

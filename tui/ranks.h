/*
 * ranks.h — the metrics files of a multi-rank run: memtrain under mpirun
 * writes one per rank, the rank before the extension (run.csv ->
 * run.rank0.csv, run.rank1.csv, ...), each with "zero=Z rank=R ranks=N"
 * among its settings. Naming, the header's rank numbers, whether two files
 * belong to one run, and the heaviest rank. Pure: no I/O.
 *
 *     char p[4096];
 *     mtop_rank_path("run.csv", 1, p, sizeof p);            // "run.rank1.csv"
 *     int k = mtop_rank_of_path("run.rank1.csv", p, sizeof p); // 1, p = "run.csv"
 *     int h = mtop_heaviest(snaps, n);                     // highest peak total
 */
#ifndef MTOP_RANKS_H
#define MTOP_RANKS_H

#include <stdbool.h>
#include <stddef.h>

#include "metrics.h"
#include "snapshot.h"

/* Ranks followed at most (a run with more shows its first ones). */
#define MTOP_MAX_RANKS 128

/* Rank `rank`'s file for the name memtrain was given, as memtrain names it:
 * run.csv -> run.rankK.csv; a name without an extension -> run.rankK. */
void mtop_rank_path(const char *base, int rank, char *out, size_t len);
/* The rank of a rank file's name (STEM.rankK.EXT or STEM.rankK), with the
 * name memtrain was given written to `base`; -1 for any other name. */
int mtop_rank_of_path(const char *path, char *base, size_t len);

/* The header's rank= and ranks= (from "# settings:"), -1 when absent or
 * out of range (the parser names a bad one in meta.bad). */
int mtop_meta_rank(const mtop_meta *m);
int mtop_meta_ranks(const mtop_meta *m);
/* Whether the header has been read (a model or settings line). */
bool mtop_meta_known(const mtop_meta *m);
/* Whether `b` is from the same run as `a`: the same model, ranks= and zero=.
 * When not, `why` says how they differ ("ranks=3, not 2"). */
bool mtop_same_run(const mtop_meta *a, const mtop_meta *b, char *why, size_t len);

/* A multi-rank run as the screen and --once show it: one row per rank. */
typedef struct mtop_rank_table {
    int n;
    const mtop_snapshot *snap[MTOP_MAX_RANKS];
    int rank[MTOP_MAX_RANKS];
    int heaviest;            /* the row of the heaviest rank, -1 while none has a peak */
    int selected;            /* the row whose panels are shown */
    int ranks;               /* the run's ranks= (0 while no header says) */
    const char *base;        /* the name memtrain was given; "" when the files were listed */
    const char *problem;     /* a file from another run, "" if none */
} mtop_rank_table;

/* The heaviest of n snapshots: the highest peak total; a tie goes to the
 * first. -1 when none has a peak total. */
int mtop_heaviest(const mtop_snapshot *const *s, int n);

#endif

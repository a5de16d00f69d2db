/*
 * rank_snapshot.h — --once for a multi-rank run, JSON and CSV.
 *
 * JSON: the heaviest rank's snapshot (the rank the screen opens on; rank 0's
 * while no rank has a peak) with its "rank", then "heaviest_rank" (null
 * while none has a peak) and "ranks": one object per rank with "rank",
 * "heaviest" and every field of a one-file snapshot.
 * CSV: the one-file columns led by rank and heaviest, one row per rank.
 *
 *     char *j = mtop_ranks_json(&table);   puts(j);  free(j);
 */
#ifndef MTOP_RANK_SNAPSHOT_H
#define MTOP_RANK_SNAPSHOT_H

#include "ranks.h"

/* malloc'd, newline-terminated; NULL when out of memory. */
char *mtop_ranks_json(const mtop_rank_table *t);
char *mtop_ranks_csv(const mtop_rank_table *t);

#endif

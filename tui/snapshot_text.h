/*
 * snapshot_text.h — --once --format text: the snapshot as a person reads it,
 * with the screen's labels and units (GiB = 2^30 bytes).
 *
 * One file: the header lines (model, device, budget, settings, step, ...)
 * and the component table (current, peak, predicted, error). A multi-rank
 * run: the heaviest rank's header lines, the rank table (one row per rank,
 * the heaviest marked '*'), then every rank's component table.
 *
 *     char *t = mtop_snapshot_text(&snap);   fputs(t, stdout);  free(t);
 *     char *r = mtop_ranks_text(&table);
 */
#ifndef MTOP_SNAPSHOT_TEXT_H
#define MTOP_SNAPSHOT_TEXT_H

#include "ranks.h"
#include "snapshot.h"

/* malloc'd, newline-terminated; NULL when out of memory. */
char *mtop_snapshot_text(const mtop_snapshot *s);
char *mtop_ranks_text(const mtop_rank_table *t);

#endif

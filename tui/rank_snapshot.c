/* rank_snapshot.c — a multi-rank run's --once JSON (heaviest rank, ranks array) and CSV (a row per rank). */
#include "rank_snapshot.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "format.h"

/* The snapshot's fields added to `o` after what it has, in their order. */
static json_t *with_snapshot(json_t *o, const mtop_snapshot *s)
{
    json_t *snap = mtop_snapshot_object(s);
    json_object_update(o, snap);
    json_decref(snap);
    return o;
}

/* One rank's snapshot, led by its rank and whether it is the heaviest. */
static json_t *rank_object(const mtop_rank_table *t, int i)
{
    json_t *o = json_object();
    json_object_set_new(o, "rank", json_integer(t->rank[i]));
    json_object_set_new(o, "heaviest", json_boolean(i == t->heaviest));
    return with_snapshot(o, t->snap[i]);
}

char *mtop_ranks_json(const mtop_rank_table *t)
{
    int shown = t->heaviest >= 0 ? t->heaviest : 0;
    json_t *o = json_object();
    json_object_set_new(o, "rank", json_integer(t->rank[shown]));
    with_snapshot(o, t->snap[shown]);
    json_object_set_new(o, "heaviest_rank", t->heaviest >= 0 ? json_integer(t->rank[t->heaviest]) : json_null());
    json_t *ranks = json_array();
    for (int i = 0; i < t->n; i++) json_array_append_new(ranks, rank_object(t, i));
    json_object_set_new(o, "ranks", ranks);
    return mtop_json_text(o);
}

char *mtop_ranks_csv(const mtop_rank_table *t)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    fputs("rank,heaviest,", f);
    mtop_snapshot_csv_header(f);
    for (int i = 0; i < t->n; i++) {
        fprintf(f, "%d,%s,", t->rank[i], i == t->heaviest ? "true" : "false");
        mtop_snapshot_csv_row(f, t->snap[i]);
    }
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

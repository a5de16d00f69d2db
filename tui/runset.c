/* runset.c — follow one metrics file or every rank's: find the ranks, poll them, check they are one run. */
#include "runset.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* ---------- slots ---------- */

static void slot_free(mtop_rank_slot *s)
{
    if (!s) return;
    mtop_follow_free(&s->f);
    mtop_history_free(&s->h);
    free(s);
}

/* Append a slot following `path`; -1 when out of memory or full. */
static int slot_add(mtop_runset *rs, const char *path, int rank)
{
    if (rs->n >= MTOP_MAX_RANKS) return -1;
    mtop_rank_slot *s = calloc(1, sizeof *s);
    if (!s) return -1;
    if (mtop_follow_init(&s->f, path) || mtop_history_init(&s->h, rs->history)) {
        slot_free(s);
        return -1;
    }
    s->rank = rank;
    rs->slot[rs->n++] = s;
    return 0;
}

static void slot_drop_last(mtop_runset *rs)
{
    slot_free(rs->slot[--rs->n]);
    rs->slot[rs->n] = NULL;
}

static int add_rank_file(mtop_runset *rs, int rank)
{
    char path[4200];
    mtop_rank_path(rs->base, rank, path, sizeof path);
    return slot_add(rs, path, rank);
}

/* ---------- init ---------- */

static int init_listed(mtop_runset *rs, char *const *paths, int npaths)
{
    char base[4096];
    rs->ranked = rs->listed = true;
    for (int i = 0; i < npaths && i < MTOP_MAX_RANKS; i++) {
        int k = mtop_rank_of_path(paths[i], base, sizeof base);
        if (slot_add(rs, paths[i], k >= 0 ? k : i)) return -1;
    }
    return 0;
}

int mtop_runset_init(mtop_runset *rs, char *const *paths, int npaths, int history)
{
    memset(rs, 0, sizeof *rs);
    rs->history = history;
    rs->error_slot = -1;
    if (npaths > 1) return init_listed(rs, paths, npaths);
    int k = mtop_rank_of_path(paths[0], rs->base, sizeof rs->base);
    if (k < 0 || k >= MTOP_MAX_RANKS) { /* one file, unless only its rank files appear */
        snprintf(rs->base, sizeof rs->base, "%s", paths[0]);
        return slot_add(rs, paths[0], 0);
    }
    rs->ranked = true;
    for (int r = 0; r <= k; r++)
        if (add_rank_file(rs, r)) return -1;
    return 0;
}

void mtop_runset_free(mtop_runset *rs)
{
    if (!rs) return;
    while (rs->n > 0) slot_drop_last(rs);
}

/* ---------- finding the ranks ---------- */

/* memtop run.csv: run.csv was never there, run.rank0.csv is: follow the ranks. */
static int maybe_become_ranked(mtop_runset *rs)
{
    if (rs->ranked || rs->slot[0]->f.state != MTOP_FOLLOW_WAITING || rs->slot[0]->f.opened_at >= 0) return 0;
    char path[4200];
    mtop_rank_path(rs->base, 0, path, sizeof path);
    if (!exists(path)) return 0;
    slot_drop_last(rs);
    rs->ranked = true;
    return add_rank_file(rs, 0);
}

static int header_ranks(const mtop_runset *rs)
{
    for (int i = 0; i < rs->n; i++) {
        int r = mtop_meta_ranks(&rs->slot[i]->f.parser.meta);
        if (r > 0) return r;
    }
    return 0;
}

/* Slots for ranks 0..ranks-1 (the header's), or for the rank files that
 * exist one after the other while no header says. */
static int find_ranks(mtop_runset *rs)
{
    rs->ranks = header_ranks(rs);
    int want = rs->ranks;
    if (want > MTOP_MAX_RANKS) want = MTOP_MAX_RANKS;
    if (want == 0) {
        char path[4200];
        want = rs->n;
        for (; want < MTOP_MAX_RANKS; want++) {
            mtop_rank_path(rs->base, want, path, sizeof path);
            if (!exists(path)) break;
        }
    }
    while (rs->n > want && rs->n > 1) slot_drop_last(rs); /* an older, larger run's files */
    while (rs->n < want)
        if (add_rank_file(rs, rs->n)) return -1;
    return 0;
}

/* ---------- one run ---------- */

static void name_listed_ranks(mtop_runset *rs)
{
    char base[4096];
    for (int i = 0; i < rs->n; i++) {
        mtop_rank_slot *s = rs->slot[i];
        int r = mtop_meta_rank(&s->f.parser.meta);
        if (r < 0) r = mtop_rank_of_path(s->f.path, base, sizeof base);
        s->rank = r >= 0 ? r : i;
    }
}

/* Why slot i does not belong with the slots before it, into rs->problem. */
static bool slot_problem(mtop_runset *rs, int i, const mtop_rank_slot *ref)
{
    const mtop_rank_slot *s = rs->slot[i];
    const mtop_meta *m = &s->f.parser.meta;
    char why[256];
    int r = mtop_meta_rank(m);
    if (rs->listed && mtop_meta_ranks(m) < 0)
        snprintf(rs->problem, sizeof rs->problem, "'%s' is not a rank of a multi-rank run (no ranks= in its settings)",
                 s->f.path);
    else if (!rs->listed && r >= 0 && r != s->rank)
        snprintf(rs->problem, sizeof rs->problem, "'%s' says rank=%d: it is not rank %d of this run", s->f.path, r,
                 s->rank);
    else if (ref && !mtop_same_run(&ref->f.parser.meta, m, why, sizeof why))
        snprintf(rs->problem, sizeof rs->problem, "'%s' is from another run: %s as in '%s'", s->f.path, why,
                 ref->f.path);
    for (int j = 0; !rs->problem[0] && rs->listed && j < i; j++)
        if (rs->slot[j]->rank == s->rank)
            snprintf(rs->problem, sizeof rs->problem, "'%s' is rank %d again ('%s' is rank %d)", s->f.path, s->rank,
                     rs->slot[j]->f.path, s->rank);
    return rs->problem[0] != 0;
}

/* A header with a bad value (a count out of range, a setting twice) is
 * refused whatever the run: its numbers cannot be trusted. Then, for a
 * multi-rank run, the files must be one run's. */
static void check_one_run(mtop_runset *rs)
{
    rs->problem[0] = 0;
    const mtop_rank_slot *ref = NULL;
    for (int i = 0; i < rs->n; i++) {
        const mtop_follow *f = &rs->slot[i]->f;
        if (f->parser.meta.bad[0]) {
            snprintf(rs->problem, sizeof rs->problem, "'%s': %s", f->path, f->parser.meta.bad);
            return;
        }
        if (!rs->ranked || !mtop_meta_known(&f->parser.meta)) continue;
        if (slot_problem(rs, i, ref)) return;
        if (!ref) ref = rs->slot[i];
    }
}

/* ---------- polling ---------- */

static int poll_slots(mtop_runset *rs, int from, double now)
{
    int rows = 0;
    for (int i = from; i < rs->n; i++) {
        if (rs->read_limit) rs->slot[i]->f.read_limit = rs->read_limit;
        int r = mtop_follow_poll(&rs->slot[i]->f, &rs->slot[i]->h, now);
        if (r < 0 && rs->error_slot < 0) rs->error_slot = i;
        if (r > 0) rows += r;
    }
    return rows;
}

int mtop_runset_poll(mtop_runset *rs, double now)
{
    rs->error_slot = -1;
    if (maybe_become_ranked(rs)) return -1;
    int rows = poll_slots(rs, 0, now);
    if (rs->ranked && !rs->listed) {
        int had = rs->n;
        int rc = find_ranks(rs);
        rows += poll_slots(rs, had < rs->n ? had : rs->n, now);
        if (rc) return -1;
    }
    if (rs->listed) name_listed_ranks(rs);
    check_one_run(rs);
    return rs->error_slot >= 0 ? -1 : rows;
}

int mtop_runset_missing(const mtop_runset *rs)
{
    for (int i = 0; i < rs->n; i++)
        if (rs->slot[i]->f.state == MTOP_FOLLOW_WAITING) return i;
    return -1;
}

/* ---------- snapshots ---------- */

static double mtime_age(const mtop_rank_slot *s)
{
    struct stat st;
    if (!s->h.pushed || stat(s->f.path, &st) != 0) return -1;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    double age = (double)(ts.tv_sec - st.st_mtim.tv_sec) + (ts.tv_nsec - st.st_mtim.tv_nsec) / 1e9;
    return age < 0 ? 0 : age;
}

static double row_age(const mtop_follow *f, double now)
{
    if (f->last_row_at >= 0) return now - f->last_row_at;
    if (f->opened_at >= 0) return now - f->opened_at;
    return -1;
}

void mtop_runset_snapshots(mtop_runset *rs, const mtop_snap_opts *o, double now, bool by_mtime)
{
    for (int i = 0; i < rs->n; i++) {
        mtop_rank_slot *s = rs->slot[i];
        double age = by_mtime ? mtime_age(s) : row_age(&s->f, now);
        mtop_snapshot_make(&s->snap, &s->f, &s->h, o, age);
    }
}


void mtop_runset_table(const mtop_runset *rs, int selected, mtop_rank_table *t)
{
    t->n = rs->n;
    for (int i = 0; i < rs->n; i++) {
        t->snap[i] = &rs->slot[i]->snap;
        t->rank[i] = rs->slot[i]->rank;
    }
    t->heaviest = mtop_heaviest(t->snap, rs->n);
    t->selected = selected >= 0 && selected < rs->n ? selected : t->heaviest >= 0 ? t->heaviest : 0;
    t->ranks = rs->ranks;
    t->base = rs->listed ? "" : rs->base;
    t->problem = rs->problem;
}

/* ranks.c — rank files' names, the header's rank numbers, one run or two, the heaviest rank. */
#include "ranks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mtop_rank_path(const char *base, int rank, char *out, size_t len)
{
    const char *slash = strrchr(base, '/'), *dot = strrchr(base, '.');
    if (dot && (!slash || dot > slash + 1))
        snprintf(out, len, "%.*s.rank%d%s", (int)(dot - base), base, rank, dot);
    else
        snprintf(out, len, "%s.rank%d", base, rank);
}

/* The digits of ".rankK" starting at s: K, and where they end; -1 if none. */
static int rank_digits(const char *s, const char **end)
{
    if (strncmp(s, ".rank", 5) != 0) return -1;
    s += 5;
    if (*s < '0' || *s > '9' || (s[0] == '0' && s[1] >= '0' && s[1] <= '9')) return -1;
    long k = 0;
    while (*s >= '0' && *s <= '9' && k < 1000000) k = k * 10 + (*s++ - '0');
    *end = s;
    return (int)k;
}

int mtop_rank_of_path(const char *path, char *base, size_t len)
{
    const char *slash = strrchr(path, '/');
    const char *name = slash ? slash + 1 : path;
    for (const char *p = strstr(name, ".rank"); p; p = strstr(p + 1, ".rank")) {
        const char *end;
        int k = rank_digits(p, &end);
        if (k < 0 || p == name) continue;
        /* what follows is the extension (no further dot) or nothing */
        if (*end && (*end != '.' || strchr(end + 1, '.') || !end[1])) continue;
        snprintf(base, len, "%.*s%s", (int)(p - path), path, end);
        /* only a name memtrain would give this base's rank k: run..x.rank1 is
         * not rank 1 of run..x (that is run..rank1.x); nor is a base cut short */
        char again[4200];
        mtop_rank_path(base, k, again, sizeof again);
        if (strcmp(again, path) != 0) continue;
        return k;
    }
    return -1;
}

/* Range-checked by the parser (metrics.c): an int, or -1. */
int mtop_meta_rank(const mtop_meta *m) { return (int)m->rank; }
int mtop_meta_ranks(const mtop_meta *m) { return (int)m->ranks; }

bool mtop_meta_known(const mtop_meta *m) { return m->model[0] || m->settings[0]; }

/* "key=A, not B" when the two files' settings differ in `key` (-1: absent). */
static bool same_setting(int64_t x, int64_t y, const char *key, char *why, size_t len)
{
    if (x == y) return true;
    char a[24] = "(none)", b[24] = "(none)";
    if (x >= 0) snprintf(a, sizeof a, "%lld", (long long)x);
    if (y >= 0) snprintf(b, sizeof b, "%lld", (long long)y);
    snprintf(why, len, "%s=%s, not %s", key, b, a);
    return false;
}

bool mtop_same_run(const mtop_meta *a, const mtop_meta *b, char *why, size_t len)
{
    if (strcmp(a->model, b->model) != 0) {
        snprintf(why, len, "model '%.100s', not '%.100s'", b->model, a->model);
        return false;
    }
    return same_setting(a->ranks, b->ranks, "ranks", why, len) && same_setting(a->zero, b->zero, "zero", why, len);
}

int mtop_heaviest(const mtop_snapshot *const *s, int n)
{
    int best = -1;
    for (int i = 0; i < n; i++) {
        const mtop_val *p = &s[i]->tab[MTOP_TOTAL][MTOP_COL_PEAK];
        if (p->ok && (best < 0 || p->v > s[best]->tab[MTOP_TOTAL][MTOP_COL_PEAK].v)) best = i;
    }
    return best;
}

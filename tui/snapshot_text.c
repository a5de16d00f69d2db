/* snapshot_text.c — --once --format text: header lines, the component table, the rank table. */
#include "snapshot_text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"

#define NUM_W 11   /* a byte count: "1023.9 MiB" and a space */
#define ERR_W 9    /* "  -12.3%" */

/* Text from the file (or a file's name), cleaned (mtop_clean), or N/A. The
 * buffers hold the longest text escaped; each call has its own. */
static char clean_buf[4][MTOP_CLEAN_LEN(MTOP_TEXT_LEN)];
static const char *text_or_na(const char *s, int k)
{
    return s && *s ? mtop_clean(s, clean_buf[k], sizeof clean_buf[k]) : MTOP_NA;
}

static const char *step_text(const mtop_snapshot *s, char *buf, size_t len)
{
    if (s->step.ok && s->steps.ok) snprintf(buf, len, "%.0f/%.0f", s->step.v, s->steps.v);
    else if (s->step.ok) snprintf(buf, len, "%.0f", s->step.v);
    else snprintf(buf, len, MTOP_NA);
    return buf;
}

static void header_lines(FILE *f, const mtop_snapshot *s)
{
    char a[48], b[48], c[48];
    fprintf(f, "model %s  device %s  budget %s  headroom %s\n", text_or_na(s->meta->model, 0),
            text_or_na(s->meta->device, 1), mtop_fmt_bytes(s->budget.v, s->budget.ok, a, sizeof a),
            mtop_fmt_bytes(s->headroom.v, s->headroom.ok, b, sizeof b));
    fprintf(f, "settings %s\n", text_or_na(s->meta->settings, 0));
    fprintf(f, "step %s  elapsed %s", step_text(s, a, sizeof a), mtop_fmt_duration(s->elapsed.v, s->elapsed.ok, b, sizeof b));
    fprintf(f, "  eta %s", mtop_fmt_duration(s->eta.v, s->eta.ok, a, sizeof a));
    fprintf(f, "  loss %s", mtop_fmt_loss(s->loss.v, s->loss.ok, a, sizeof a));
    fprintf(f, "  tokens_per_s %s  lr %s  rss %s\n", mtop_fmt_rate(s->tokens_per_s.v, s->tokens_per_s.ok, a, sizeof a),
            mtop_fmt_lr(s->lr.v, s->lr.ok, b, sizeof b), mtop_fmt_bytes(s->rss.v, s->rss.ok, c, sizeof c));
}

/* current, peak, predicted and error of one table row */
static void value_cells(FILE *f, const mtop_val *row)
{
    char a[48];
    for (int k = 0; k < MTOP_NCOL; k++) {
        if (k == MTOP_COL_ERROR) fprintf(f, "%*s", ERR_W, mtop_fmt_pct(row[k].v, row[k].ok, a, sizeof a));
        else fprintf(f, "%*s", NUM_W, mtop_fmt_bytes(row[k].v, row[k].ok, a, sizeof a));
    }
}

static void value_titles(FILE *f)
{
    for (int k = 0; k < MTOP_NCOL; k++) fprintf(f, "%*s", k == MTOP_COL_ERROR ? ERR_W : NUM_W, mtop_col_label[k]);
}

/* The component table; each row led by `lead` (the first) or `rest`. */
static void component_rows(FILE *f, const mtop_snapshot *s, const char *lead, const char *rest)
{
    for (int g = 0; g < MTOP_NGROUP; g++) {
        fprintf(f, "%s %-12s", g == 0 ? lead : rest, mtop_group_label[g]);
        value_cells(f, s->tab[g]);
        fputc('\n', f);
    }
}

/* Close the memory stream; its text (which fclose sets), or NULL. */
static char *finish(FILE *f, char **buf)
{
    if (fclose(f) != 0) {
        free(*buf);
        return NULL;
    }
    return *buf;
}

char *mtop_snapshot_text(const mtop_snapshot *s)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    fprintf(f, "memtop %s: %s\n", text_or_na(s->file, 0), s->state);
    header_lines(f, s);
    /* as the status line: the last skipped line's reason names its value */
    fprintf(f, "rows %ld  skipped %ld", s->rows, s->skipped);
    if (s->skipped) fprintf(f, " (%s)", text_or_na(s->skip_reason, 0));
    fprintf(f, "  resets %ld\n\n", s->resets);
    fprintf(f, "%-13s", "component");
    value_titles(f);
    fputc('\n', f);
    component_rows(f, s, "", "");
    return finish(f, &buf);
}

/* ---------- a multi-rank run ---------- */

/* "*    1": the rank, marked when it is the heaviest */
static const char *rank_cell(const mtop_rank_table *t, int i, char *buf, size_t len)
{
    snprintf(buf, len, "%c%4d", i == t->heaviest ? '*' : ' ', t->rank[i]);
    return buf;
}

static void rank_title(FILE *f, const mtop_rank_table *t)
{
    char a[48];
    const char *name = t->base && *t->base ? t->base : t->snap[0]->file;
    fprintf(f, "memtop %s: %d rank%s", text_or_na(name, 0), t->n, t->n == 1 ? "" : "s");
    if (t->ranks > t->n) fprintf(f, " of %d", t->ranks);
    if (t->heaviest >= 0) {
        const mtop_val *p = &t->snap[t->heaviest]->tab[MTOP_TOTAL][MTOP_COL_PEAK];
        fprintf(f, ", heaviest rank %d (*, peak total %s)\n", t->rank[t->heaviest], mtop_fmt_bytes(p->v, p->ok, a, sizeof a));
    } else {
        fprintf(f, ", heaviest rank %s (no peak yet)\n", MTOP_NA);
    }
}

static void rank_summary(FILE *f, const mtop_rank_table *t)
{
    char a[48], b[48];
    fprintf(f, "%5s  %-7s %7s", "rank", "state", "step");
    value_titles(f);
    fputs("  file\n", f);
    for (int i = 0; i < t->n; i++) {
        const mtop_snapshot *s = t->snap[i];
        fprintf(f, "%s  %-7s %7s", rank_cell(t, i, a, sizeof a), s->state, step_text(s, b, sizeof b));
        value_cells(f, s->tab[MTOP_TOTAL]);
        fprintf(f, "  %s\n", text_or_na(s->file, 0));
    }
}

char *mtop_ranks_text(const mtop_rank_table *t)
{
    char *buf = NULL, a[48];
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    rank_title(f, t);
    header_lines(f, t->snap[t->heaviest >= 0 ? t->heaviest : 0]);
    fputc('\n', f);
    rank_summary(f, t);
    fprintf(f, "\n%5s %-12s", "rank", "component");
    value_titles(f);
    fputc('\n', f);
    for (int i = 0; i < t->n; i++) component_rows(f, t->snap[i], rank_cell(t, i, a, sizeof a), "     ");
    return finish(f, &buf);
}

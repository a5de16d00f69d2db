/* snapshot.c — the run view's numbers, and --once JSON/CSV with the screen's names. */
#include "snapshot.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "common/utf8.h"

const char *const mtop_group_label[MTOP_NGROUP] = {"weights", "gradients", "optimizer",
                                                   "activations", "overhead", "total"};
const char *const mtop_col_label[MTOP_NCOL] = {"current", "peak", "predicted", "error"};

void mtop_snap_opts_default(mtop_snap_opts *o)
{
    memset(o, 0, sizeof *o);
    o->stale_s = 10;
    o->headroom = 0.10;
    o->rate_window = 50;
}

static mtop_val val(const mtop_row *r, int f, bool have)
{
    mtop_val v = {0, false};
    if (have && mtop_row_ok(r, f)) {
        v.v = r->v[f];
        v.ok = true;
    }
    return v;
}

static mtop_val some(double x)
{
    mtop_val v = {x, true};
    return v;
}

void mtop_snapshot_make(mtop_snapshot *s, const mtop_follow *f, const mtop_history *h,
                        const mtop_snap_opts *o, double age_s)
{
    memset(s, 0, sizeof *s);
    const mtop_meta *m = &f->parser.meta;
    bool have = h->pushed > 0;
    s->file = f->path;
    s->meta = m;
    s->rows = h->pushed;
    s->skipped = f->parser.bad;
    s->resets = f->resets;
    s->skip_reason = f->parser.bad ? f->parser.reason : "";
    s->reset_why = f->resets ? f->reset_why : "";
    s->age_s = age_s;

    s->step = val(&h->last, MTOP_STEP, have);
    if (m->has_steps) s->steps = some((double)m->steps);
    s->elapsed = val(&h->last, MTOP_TIME_S, have);
    s->loss = val(&h->sticky, MTOP_LOSS, have);
    s->tokens_per_s = val(&h->sticky, MTOP_TOKENS_PER_S, have);
    s->lr = val(&h->sticky, MTOP_LR, have);
    s->rss = val(&h->last, MTOP_RSS, have);
    if (s->steps.ok && s->step.ok) {
        double left = s->steps.v - s->step.v;
        double sps = mtop_history_step_seconds(h, o->rate_window);
        if (left <= 0) s->eta = some(0);
        else if (sps >= 0) s->eta = some(left * sps);
    }
    if (o->budget_bytes > 0) s->budget = some(o->budget_bytes);
    else if (m->has_budget) s->budget = some(m->budget_bytes);
    if (s->budget.ok) s->headroom = some(s->budget.v * (1 - o->headroom));

    for (int g = 0; g < MTOP_NGROUP; g++) {
        s->tab[g][MTOP_COL_CURRENT] = val(&h->last, MTOP_CUR(g), have);
        s->tab[g][MTOP_COL_PEAK] = val(&h->last, MTOP_PEAK(g), have);
        s->tab[g][MTOP_COL_PREDICTED] = val(&h->sticky, MTOP_PRED(g), have);
    }
    for (int c = 0; c < 3; c++) {
        double sum = 0;
        bool all = true;
        for (int g = 0; g < MTOP_NCOMP; g++) {
            if (s->tab[g][c].ok) sum += s->tab[g][c].v;
            else all = false;
        }
        mtop_val *t = &s->tab[MTOP_TOTAL][c];
        if (!t->ok && all) *t = some(sum); /* no total column: the sum of the parts */
        s->other[c] = t->ok && t->v > sum ? t->v - sum : 0;
    }
    for (int g = 0; g < MTOP_NGROUP; g++) {
        double p;
        const mtop_val *pk = &s->tab[g][MTOP_COL_PEAK], *pr = &s->tab[g][MTOP_COL_PREDICTED];
        if (mtop_error_pct(pk->v, pk->ok, pr->v, pr->ok, &p)) s->tab[g][MTOP_COL_ERROR] = some(p);
    }

    bool old = age_s >= 0 && age_s > o->stale_s;
    switch (f->state) {
    case MTOP_FOLLOW_WAITING: s->state = "waiting"; break;
    case MTOP_FOLLOW_GONE: s->state = "gone"; break;
    case MTOP_FOLLOW_ERROR: s->state = "error"; break;
    default: s->state = old ? "stale" : have ? "live" : "waiting"; break;
    }
    s->stale = old && have;
}

double mtop_snapshot_segments(const mtop_snapshot *s, int col, double seg[MTOP_NCOMP + 1])
{
    double t = 0;
    for (int g = 0; g < MTOP_NCOMP; g++) {
        seg[g] = s->tab[g][col].ok ? s->tab[g][col].v : 0;
        t += seg[g];
    }
    seg[MTOP_NCOMP] = col < 3 ? s->other[col] : 0;
    return t + seg[MTOP_NCOMP];
}

/* ---------- JSON ---------- */

static json_t *jval(mtop_val v, bool bytes)
{
    if (!v.ok || !isfinite(v.v)) return json_null();
    if ((bytes || v.v == floor(v.v)) && fabs(v.v) < 9e15) return json_integer((json_int_t)llround(v.v));
    return json_real(v.v);
}

/* Text from the file (or its name): null when empty; see mtop_json_str. */
static json_t *jstr(const char *s) { return s && *s ? mtop_json_str(s) : json_null(); }

json_t *mtop_snapshot_object(const mtop_snapshot *s)
{
    json_t *o = json_object();
    json_object_set_new(o, "file", jstr(s->file));
    json_object_set_new(o, "state", json_string(s->state));
    json_object_set_new(o, "model", jstr(s->meta->model));
    json_object_set_new(o, "device", jstr(s->meta->device));
    json_t *set = json_object();
    for (int i = 0; i < s->meta->nkv; i++) {
        /* a key is a JSON string too: malformed UTF-8 is cleaned, as in a value */
        const char *key = mtop_meta_key(s->meta, i);
        char clean[MTOP_CLEAN_LEN(MTOP_TEXT_LEN)];
        if (!utf8_valid(key)) key = mtop_clean(key, clean, sizeof clean);
        json_object_set_new(set, key, mtop_json_str(mtop_meta_value(s->meta, i)));
    }
    json_object_set_new(o, "settings", set);
    json_object_set_new(o, "step", jval(s->step, false));
    json_object_set_new(o, "steps", jval(s->steps, false));
    json_object_set_new(o, "elapsed", jval(s->elapsed, false));
    json_object_set_new(o, "eta", jval(s->eta, false));
    json_object_set_new(o, "loss", jval(s->loss, false));
    json_object_set_new(o, "tokens_per_s", jval(s->tokens_per_s, false));
    json_object_set_new(o, "lr", jval(s->lr, false));
    json_object_set_new(o, "rss", jval(s->rss, true));
    json_object_set_new(o, "budget", jval(s->budget, true));
    json_object_set_new(o, "headroom", jval(s->headroom, true));
    json_t *comps = json_object();
    for (int g = 0; g < MTOP_NGROUP; g++) {
        json_t *c = json_object();
        for (int k = 0; k < MTOP_NCOL; k++) {
            mtop_val v = s->tab[g][k];
            if (k == MTOP_COL_ERROR) {
                if (v.ok) v.v = round(v.v * 100) / 100; /* two decimals */
                json_object_set_new(c, mtop_col_label[k], v.ok ? json_real(v.v) : json_null());
            } else {
                json_object_set_new(c, mtop_col_label[k], jval(v, true));
            }
        }
        json_object_set_new(comps, mtop_group_label[g], c);
    }
    json_object_set_new(o, "components", comps);
    json_object_set_new(o, "rows", json_integer(s->rows));
    json_object_set_new(o, "skipped", json_integer(s->skipped));
    json_object_set_new(o, "resets", json_integer(s->resets));
    json_object_set_new(o, "stale", json_boolean(s->stale));
    return o;
}

char *mtop_snapshot_json(const mtop_snapshot *s) { return mtop_json_text(mtop_snapshot_object(s)); }

/* ---------- CSV ---------- */

static void cnum(FILE *f, mtop_val v, bool bytes, bool last)
{
    if (v.ok && isfinite(v.v)) {
        if ((bytes || v.v == floor(v.v)) && fabs(v.v) < 9e15) fprintf(f, "%lld", (long long)llround(v.v));
        else fprintf(f, "%.12g", v.v);
    }
    fputc(last ? '\n' : ',', f);
}

/* Text from the file, quoted and cleaned; empty (N/A) when there is none. */
static void cstr(FILE *f, const char *s)
{
    if (s && *s) mtop_csv_text(f, s);
    fputc(',', f);
}

void mtop_snapshot_csv_header(FILE *f)
{
    fputs("file,state,model,device,settings,step,steps,elapsed,eta,loss,tokens_per_s,lr,rss,budget,headroom", f);
    for (int g = 0; g < MTOP_NGROUP; g++)
        for (int k = 0; k < MTOP_NCOL; k++) fprintf(f, ",%s_%s", mtop_group_label[g], mtop_col_label[k]);
    fputs(",rows,skipped,resets,stale\n", f);
}

void mtop_snapshot_csv_row(FILE *f, const mtop_snapshot *s)
{
    cstr(f, s->file);
    cstr(f, s->state);
    cstr(f, s->meta->model);
    cstr(f, s->meta->device);
    cstr(f, s->meta->settings);
    cnum(f, s->step, false, false);
    cnum(f, s->steps, false, false);
    cnum(f, s->elapsed, false, false);
    cnum(f, s->eta, false, false);
    cnum(f, s->loss, false, false);
    cnum(f, s->tokens_per_s, false, false);
    cnum(f, s->lr, false, false);
    cnum(f, s->rss, true, false);
    cnum(f, s->budget, true, false);
    cnum(f, s->headroom, true, false);
    for (int g = 0; g < MTOP_NGROUP; g++)
        for (int k = 0; k < MTOP_NCOL; k++) {
            mtop_val v = s->tab[g][k];
            if (k == MTOP_COL_ERROR) {
                if (v.ok) fprintf(f, "%.2f", v.v);
                fputc(',', f);
            } else {
                cnum(f, v, true, false);
            }
        }
    fprintf(f, "%ld,%ld,%ld,%s\n", s->rows, s->skipped, s->resets, s->stale ? "true" : "false");
}

char *mtop_snapshot_csv(const mtop_snapshot *s)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    mtop_snapshot_csv_header(f);
    mtop_snapshot_csv_row(f, s);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

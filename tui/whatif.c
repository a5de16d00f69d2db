/* whatif.c — the planner live: settings changed by keys, re-estimated at once. */
#include "whatif.h"

#include <curses.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "estimate/estimate.h"
#include "model/model.h"
#include "profiles/profiles.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"
#include "settings/options.h"

#define RUN 1u
#define WHATIF 2u
#define BOTH 3u

const mtop_keydef mtop_keys[] = {
    {'q', "q", BOTH, MTOP_ACT_QUIT, "quit"},
    {'h', "h", BOTH, MTOP_ACT_HELP, "help: this list (any key returns)"},
    {'?', "?", BOTH, MTOP_ACT_HELP, "help"},
    {'\t', "Tab", BOTH, MTOP_ACT_NEXT, "select the next component (detail window)"},
    {KEY_DOWN, "Down", BOTH, MTOP_ACT_NEXT, "select the next component"},
    {'j', "j", BOTH, MTOP_ACT_NEXT, "select the next component"},
    {KEY_BTAB, "S-Tab", BOTH, MTOP_ACT_PREV, "select the previous component"},
    {KEY_UP, "Up", BOTH, MTOP_ACT_PREV, "select the previous component"},
    {'k', "k", BOTH, MTOP_ACT_PREV, "select the previous component"},
    {12, "C-l", BOTH, MTOP_ACT_REDRAW, "redraw the screen"},
    {'r', "r", RUN, MTOP_ACT_RANK_NEXT, "select the next rank (a multi-rank run; it opens on the heaviest)"},
    {'R', "R", RUN, MTOP_ACT_RANK_PREV, "select the previous rank"},
    {'W', "W", BOTH, MTOP_ACT_WHATIF_RUN, "the what-if view on the followed run's plan (from its header); again: back"},
    {'+', "+", WHATIF, MTOP_ACT_BATCH_UP, "micro-batch + 1"},
    {'=', "=", WHATIF, MTOP_ACT_BATCH_UP, "micro-batch + 1"},
    {'-', "-", WHATIF, MTOP_ACT_BATCH_DOWN, "micro-batch - 1"},
    {'a', "a", WHATIF, MTOP_ACT_ACCUM_UP, "gradient accumulation + 1"},
    {'A', "A", WHATIF, MTOP_ACT_ACCUM_DOWN, "gradient accumulation - 1"},
    {'s', "s", WHATIF, MTOP_ACT_SEQ_UP, "sequence length x 2"},
    {'S', "S", WHATIF, MTOP_ACT_SEQ_DOWN, "sequence length / 2"},
    {'p', "p", WHATIF, MTOP_ACT_PRECISION, "precision: next (fp32, amp-bf16, ..., pure-bf16)"},
    {'o', "o", WHATIF, MTOP_ACT_OPTIMIZER, "optimizer: next (adamw, adamw-8bit, ..., lion)"},
    {'c', "c", WHATIF, MTOP_ACT_CKPT, "activation checkpointing: none, selective, full"},
    {'l', "l", WHATIF, MTOP_ACT_LORA, "LoRA rank: 0 (full fine-tuning), 8, 16, 64"},
    {'w', "w", WHATIF, MTOP_ACT_QUANT, "weight quantization: none, int8, nf4, nf4-dq"},
    {'f', "f", WHATIF, MTOP_ACT_ATTENTION, "attention: eager, flash"},
    {'e', "e", WHATIF, MTOP_ACT_CE, "cross-entropy: full, chunked"},
    {'g', "g", WHATIF, MTOP_ACT_GPU_NEXT, "GPU: next profile (memplan list gpus)"},
    {'G', "G", WHATIF, MTOP_ACT_GPU_PREV, "GPU: previous profile"},
    {'r', "r", WHATIF, MTOP_ACT_RESET, "reset to the settings given on the command line"},
};
const int mtop_nkeys = (int)(sizeof mtop_keys / sizeof *mtop_keys);

mtop_action mtop_key_action(int key, int view)
{
    unsigned bit = view ? WHATIF : RUN;
    for (int i = 0; i < mtop_nkeys; i++)
        if (mtop_keys[i].key == key && (mtop_keys[i].views & bit)) return mtop_keys[i].action;
    return MTOP_ACT_NONE;
}

double mtop_whatif_budget(const mtop_whatif *w) { return w->have_gpu ? w->gpu.mem_bytes : 0; }

void mtop_whatif_update(mtop_whatif *w)
{
    w->err[0] = 0;
    w->ok = mp_estimate_run(&w->model, &w->s, w->have_gpu ? &w->gpu : NULL, &w->e, w->err) == 0;
    w->fits = w->ok && w->have_gpu && mp_fits(&w->e, w->gpu.mem_bytes, w->headroom);
}

void mtop_whatif_init(mtop_whatif *w, const mp_model *m, const mp_settings *s, const mp_gpu *gpu,
                      double headroom)
{
    memset(w, 0, sizeof *w);
    w->model = *m;
    w->s = w->initial = *s;
    w->headroom = headroom;
    w->gpu_index = -1;
    if (gpu) {
        w->gpu = *gpu;
        w->have_gpu = true;
        for (int i = 0; mp_gpu_at(i); i++)
            if (strcmp(mp_gpu_at(i)->name, gpu->name) == 0) {
                w->gpu_index = i;
                break;
            }
    }
    w->initial_gpu = w->gpu;
    w->initial_have_gpu = w->have_gpu;
    w->initial_index = w->gpu_index;
    mtop_whatif_update(w);
}

static int ngpus(void)
{
    int n = 0;
    while (mp_gpu_at(n)) n++;
    return n;
}

/* The next storage the model's base can take: a pre-quantised checkpoint's
 * own only, else every format but those only a checkpoint stores (GPTQ, AWQ). */
static mp_quant next_quant(const mp_model *m, mp_quant q)
{
    if (m->stored_quant != MP_QUANT_NONE) return m->stored_quant;
    do q = (mp_quant)((q + 1) % MP_NQUANT);
    while (mp_quant_desc_of(q)->stored_only);
    return q;
}

/* The largest value a setting's row takes. */
static int64_t row_hi(const char *name) { return (int64_t)mp_opt_find(mp_settings_opts, name)->hi; }

bool mtop_whatif_apply(mtop_whatif *w, mtop_action a)
{
    mp_settings *s = &w->s;
    switch (a) {
    /* within the ranges of the settings' rows, as a flag would be read */
    case MTOP_ACT_BATCH_UP: if (s->batch < row_hi("batch")) s->batch++; break;
    case MTOP_ACT_BATCH_DOWN: if (s->batch > 1) s->batch--; break;
    case MTOP_ACT_ACCUM_UP: if (s->accum < row_hi("accum")) s->accum++; break;
    case MTOP_ACT_ACCUM_DOWN: if (s->accum > 1) s->accum--; break;
    case MTOP_ACT_SEQ_UP: if (2 * s->seq <= row_hi("seq")) s->seq *= 2; break;
    case MTOP_ACT_SEQ_DOWN: if (s->seq > 1) s->seq /= 2; break;
    case MTOP_ACT_PRECISION: s->precision = (mp_precision)((s->precision + 1) % MP_NPRECISION); break;
    case MTOP_ACT_OPTIMIZER: s->optimizer = (mp_optimizer)((s->optimizer + 1) % MP_NOPTIMIZER); break;
    case MTOP_ACT_CKPT: s->checkpointing = (mp_ckpt)((s->checkpointing + 1) % MP_NCKPT); break;
    case MTOP_ACT_QUANT: s->quant = next_quant(&w->model, s->quant); break;
    case MTOP_ACT_ATTENTION: s->attention = (mp_attention)((s->attention + 1) % MP_NATTN); break;
    case MTOP_ACT_CE: s->ce = (mp_ce)((s->ce + 1) % MP_NCE); break;
    case MTOP_ACT_LORA: {
        static const int64_t ranks[] = MTOP_LORA_RANKS;
        int n = (int)(sizeof ranks / sizeof *ranks), next = 0;
        for (int i = 0; i < n; i++)
            if (ranks[i] == s->lora_rank) next = (i + 1) % n;
        s->lora_rank = ranks[next];
        if (s->lora_rank && !s->lora_targets) s->lora_targets = MP_LORA_ALL;
        break;
    }
    case MTOP_ACT_GPU_NEXT:
    case MTOP_ACT_GPU_PREV: {
        int n = ngpus();
        if (n == 0) break;
        int i = w->gpu_index;
        if (i < 0) i = a == MTOP_ACT_GPU_NEXT ? 0 : n - 1;
        else i = a == MTOP_ACT_GPU_NEXT ? (i + 1) % n : (i + n - 1) % n;
        w->gpu = *mp_gpu_at(i);
        w->gpu_index = i;
        w->have_gpu = true;
        break;
    }
    case MTOP_ACT_RESET:
        *s = w->initial;
        w->gpu = w->initial_gpu;
        w->have_gpu = w->initial_have_gpu;
        w->gpu_index = w->initial_index;
        break;
    default: return false;
    }
    mtop_whatif_update(w);
    return true;
}

/* ---------- --once output ---------- */

static json_t *jbytes(double v) { return json_integer((json_int_t)llround(v)); }

static const char *verdict(const mtop_whatif *w)
{
    if (!w->ok) return "invalid";
    if (!w->have_gpu) return "no budget";
    return w->fits ? "fits" : "does not fit";
}

/* The knobs the keys turn, by their settings rows' names, written as the rows write them. */
#define NKNOBS 10
static const char *const knob_names[NKNOBS] = {"batch", "accum", "seq", "precision", "optimizer",
                                               "checkpointing", "lora-rank", "quant", "attention", "ce"};
static void knobs(const mtop_whatif *w, const char **names, char vals[][48])
{
    for (int i = 0; i < NKNOBS; i++) {
        names[i] = knob_names[i];
        if (!mp_opt_format(mp_opt_find(mp_settings_opts, names[i]), &w->s, vals[i], 48)) vals[i][0] = 0;
    }
}

char *mtop_whatif_json(const mtop_whatif *w)
{
    json_t *o = json_object();
    mp_params p;
    mp_param_count(&w->model, &p);
    json_object_set_new(o, "model", mtop_json_str(w->model.name[0] ? w->model.name : "custom"));
    json_object_set_new(o, "params", jbytes(p.total));
    json_object_set_new(o, "gpu", w->have_gpu ? mtop_json_str(w->gpu.name) : json_null());
    double budget = mtop_whatif_budget(w);
    json_object_set_new(o, "budget", budget > 0 ? jbytes(budget) : json_null());
    json_object_set_new(o, "headroom", budget > 0 ? jbytes(budget * (1 - w->headroom)) : json_null());
    const char *names[NKNOBS];
    char vals[NKNOBS][48];
    knobs(w, names, vals);
    json_t *set = json_object();
    for (int i = 0; i < NKNOBS; i++) {
        char *end;
        long long v = strtoll(vals[i], &end, 10);
        json_object_set_new(set, names[i], *end ? json_string(vals[i]) : json_integer(v));
    }
    json_object_set_new(o, "settings", set);
    json_object_set_new(o, "verdict", json_string(verdict(w)));
    json_object_set_new(o, "fits", json_boolean(w->fits));
    json_object_set_new(o, "error", w->ok ? json_null() : mtop_json_str(w->err));
    json_t *comps = json_object();
    for (int c = 0; c < MP_NCOMP; c++) {
        json_t *x = json_object();
        json_object_set_new(x, "at_peak", w->ok ? jbytes(w->e.at_peak[c]) : json_null());
        json_object_set_new(x, "own_peak", w->ok ? jbytes(w->e.peak[c]) : json_null());
        json_object_set_new(x, "share", w->ok && w->e.device_bytes > 0
                                            ? json_real(round(w->e.at_peak[c] / w->e.device_bytes * 1000) / 10)
                                            : json_null());
        json_object_set_new(comps, mp_component_name(c), x);
    }
    json_object_set_new(o, "components", comps);
    /* the other models a method holds, each in its component's terms too:
     * a reference copy (in the weights), a colocated vLLM (on the device) */
    json_object_set_new(o, "reference", w->ok ? jbytes(w->e.reference_bytes) : json_null());
    json_object_set_new(o, "rollout_engine", w->ok ? jbytes(w->e.rollout_bytes) : json_null());
    json_object_set_new(o, "allocated", w->ok ? jbytes(w->e.total_bytes) : json_null());
    json_object_set_new(o, "reserved", w->ok ? jbytes(w->e.reserved_bytes) : json_null());
    json_object_set_new(o, "device", w->ok ? jbytes(w->e.device_bytes) : json_null());
    json_object_set_new(o, "host", w->ok ? jbytes(w->e.host_bytes) : json_null());
    return mtop_json_text(o);
}

/* The model's name can come from a config file: cleaned and quoted. */
static void cquote(FILE *f, const char *s) { mtop_csv_text(f, s); }

char *mtop_whatif_csv(const mtop_whatif *w)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    const char *names[NKNOBS];
    char vals[NKNOBS][48];
    knobs(w, names, vals);
    fputs("model,params,gpu,budget,headroom", f);
    for (int i = 0; i < NKNOBS; i++) fprintf(f, ",%s", names[i]);
    fputs(",verdict,fits,error", f);
    for (int c = 0; c < MP_NCOMP; c++)
        fprintf(f, ",%s_at_peak,%s_own_peak,%s_share", mp_component_name(c), mp_component_name(c),
                mp_component_name(c));
    fputs(",allocated,reserved,device,host\n", f);
    mp_params p;
    mp_param_count(&w->model, &p);
    double budget = mtop_whatif_budget(w);
    cquote(f, w->model.name[0] ? w->model.name : "custom");
    fprintf(f, ",%.0f,", p.total);
    if (w->have_gpu) cquote(f, w->gpu.name);
    if (budget > 0) fprintf(f, ",%.0f,%.0f", budget, round(budget * (1 - w->headroom)));
    else fputs(",,", f);
    for (int i = 0; i < NKNOBS; i++) fprintf(f, ",%s", vals[i]);
    fprintf(f, ",%s,%s,", verdict(w), w->fits ? "true" : "false");
    if (!w->ok) cquote(f, w->err);
    for (int c = 0; c < MP_NCOMP; c++) {
        if (w->ok)
            fprintf(f, ",%.0f,%.0f,%.1f", w->e.at_peak[c], w->e.peak[c],
                    w->e.device_bytes > 0 ? w->e.at_peak[c] / w->e.device_bytes * 100 : 0.0);
        else
            fputs(",,,", f);
    }
    if (w->ok)
        fprintf(f, ",%.0f,%.0f,%.0f,%.0f\n", w->e.total_bytes, w->e.reserved_bytes, w->e.device_bytes,
                w->e.host_bytes);
    else
        fputs(",,,,\n", f);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

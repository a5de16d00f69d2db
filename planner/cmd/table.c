/* table.c — memplan table: the recommended plan of each model on each GPU.
 *
 * One model: a row per GPU with the plan mp_search picks (the same ranking as
 * `memplan plan`: AdamW-class optimizers first, no offload before offload,
 * full fine-tuning, then LoRA, then QLoRA; then tokens/s), its memory and speed, or why nothing fits.
 * Several models: a models x GPUs matrix naming the kind of training that fits.
 * When nothing fits on one GPU (and the flags leave the GPU count and ZeRO
 * open), the row gives the smallest power-of-two GPU count on which a plan fits
 * with ZeRO-3 and no offload, and that plan. Every number comes from mp_search
 * and mp_estimate_run; the searches are split (task by task, the AdamW-class
 * tier first) and their least-memory results cached per model, and the models'
 * rows shared out among the cores, so that a 20 x 20 matrix takes about half a
 * second on two (make bench: table_20x20_ms, most of it the screens and the
 * allocator replays of the plans that decide), with the answers of one search
 * over everything. */
#include "cli.h"
#include "common/errors.h"
#include "common/units.h"
#include "estimate/estimate.h"
#include "model/model.h"
#include "profiles/profiles.h"
#include "search/search.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_ITEMS 256

void table_base(const cli *c, const mp_model *m, mp_settings *s)
{
    *s = c->s;
    if (!c->seq_given) s->seq = mp_default_seq(m);
    /* a generating method's rows are its prompt and completion (settled by the command line) */
    if (mp_method_desc_of(s->method)->generates) s->seq = s->prompt_len + s->completion_len;
}

/* The host RAM limit per node (cli.h): --host-ram, else the GPU's typical machine's. */
double host_limit_of(const cli *c, const mp_gpu *g)
{
    if (c->host_ram > 0 && !c->host_ram_typical) return c->host_ram;
    return g ? g->host_ram_bytes : 0;
}

const char *host_limit_text(const cli *c, const mp_gpu *g, char *buf, size_t len)
{
    char a[32];
    double limit = host_limit_of(c, g);
    if (c->host_ram > 0 && !c->host_ram_typical) {
        snprintf(buf, len, "--host-ram %s", mp_fmt_gib(limit, a, sizeof a));
        return buf;
    }
    /* the machine, as gpus.csv's host_ram_source names it before its colon */
    const char *src = g && g->host_ram_source[0] ? g->host_ram_source : "the GPU's typical machine";
    int n = (int)strcspn(src, ":");
    snprintf(buf, len, "the %s of %.*s", mp_fmt_gib(limit, a, sizeof a), n > 60 ? 60 : n, src);
    return buf;
}

bool host_fits(const cli *c, const mp_estimate *e)
{
    return !(c->host_ram > 0 && e->host_node_bytes > c->host_ram);
}

/* The best plan of one task, or that task's least-memory candidate. */
typedef struct task_result {
    bool ran, fits;
    mp_candidate best;
} task_result;


/* One search of task t; `tier0` restricts it to the AdamW-class tier (tier 0 in
 * mp_candidate). */
static int search_one(const cli *c, const mp_model *m, const mp_settings *base, const mp_gpu *g,
                      unsigned extra_pins, mp_task t, bool tier0, table_cache_entry *ce, mp_estimate_ctx *x,
                      task_result *res, char *err)
{
    mp_search_opts o = c->opts;
    o.pinned |= extra_pins;
    o.budget_bytes = g->mem_bytes;
    o.host_budget_bytes = host_limit_of(c, g); /* --host-ram, else this GPU's typical machine's */
    o.headroom = c->headroom;
    o.exhaustive = false;
    o.task = t;
    /* the cell reads the best plan alone, and the least-memory one the first time */
    o.best_only = true;
    o.want_least = ce && ce->state != TC_KNOWN;
    o.ctx = x;
    if (tier0) {
        o.only_optimizers = 0;
        for (int i = 0; i < MP_NOPTIMIZER; i++)
            if (mp_optimizer_desc_of((mp_optimizer)i)->tier == 0) o.only_optimizers |= 1u << i;
    }
    mp_search_result r;
    if (mp_search(m, base, g, &o, &r, err)) {
        if (ce) ce->state = TC_ERROR;
        return -1;
    }
    memset(res, 0, sizeof *res);
    if (r.n) {
        res->ran = true;
        res->fits = r.cands[0].fits;
        res->best = r.cands[0]; /* the winner, or the least memory when none fits */
        if (ce && ce->state != TC_KNOWN) {
            ce->least = r.least;
            ce->state = TC_KNOWN;
        }
    }
    mp_search_free(&r);
    return 0;
}

/* The winner among the tasks' best plans, in mp_search's own ranking groups
 * (the first task on a tie); -1 when none fits. */
static int task_winner(const task_result res[MP_NTASK], bool prefer_speed)
{
    int win = -1, win_key = 0;
    for (int t = 0; t < MP_NTASK; t++) {
        if (!res[t].ran || !res[t].fits) continue;
        int key = mp_rank_group(&res[t].best, prefer_speed);
        if (win < 0 || key < win_key) win = t, win_key = key;
    }
    return win;
}

/* One pass over the tasks, most complete first, in the AdamW-class tier or in
 * all; it stops at the first task whose best plan fits without offload, which
 * no later task can beat. Each task's result lands in res. */
static int search_pass(const cli *c, const mp_model *m, const mp_settings *base, const mp_gpu *g,
                       unsigned extra_pins, table_cache *cache, int level, bool tier0, task_result res[MP_NTASK],
                       char *err)
{
    const double usable = g->mem_bytes * (1 - c->headroom); /* as mp_fits */
    const int b = g->bf16 ? 1 : 0;
    bool any = false;
    for (int t = MP_TASK_FULL; t <= MP_TASK_QLORA; t++) {
        if (c->opts.task != MP_TASK_ANY && c->opts.task != (mp_task)t) continue;
        table_cache_entry *ce = cache ? &cache->e[b][level][t][tier0] : NULL;
        char e2[MP_ERR_LEN];
        if (ce && ce->state == TC_ERROR) {
            if (!err[0]) snprintf(err, MP_ERR_LEN, "%s", cache->err);
            continue;
        }
        if (ce && ce->state == TC_KNOWN && !(ce->least.device_bytes <= usable)) {
            any = true; /* known already: nothing of this task fits here */
            res[t].ran = true, res[t].fits = false;
            res[t].best = ce->least;
            continue;
        }
        if (search_one(c, m, base, g, extra_pins, (mp_task)t, tier0, ce, cache ? cache->ctx : NULL, &res[t], e2)) {
            if (!err[0]) snprintf(err, MP_ERR_LEN, "%s", e2);
            if (cache && !tier0) snprintf(cache->err, sizeof cache->err, "%s", e2);
            continue;
        }
        any = true;
        if (res[t].fits && res[t].best.s.offload == MP_OFFLOAD_NONE) break;
    }
    return any ? 0 : -1;
}

/* Search task by task, the AdamW-class tier first and the rest only when
 * nothing of that tier fits: mp_search ranks the optimizer family first, then
 * no offload before offload, then the kind of training, so these split
 * searches find the plan a search of everything would pick, at a fraction of
 * the cost. Memory does not depend on the GPU (speed does): the cache
 * remembers each space's least-memory plan, and a GPU too small for it skips
 * that search. */
static int search_tasks(const cli *c, const mp_model *m, const mp_settings *base, const mp_gpu *g,
                        unsigned extra_pins, table_cache *cache, int level, task_result res[MP_NTASK],
                        int *winner, char *err)
{
    const unsigned pin = c->pinned | extra_pins;
    /* the tier can be searched apart unless the pins make it all or nothing */
    bool tiered = !(pin & MP_PIN_OPTIMIZER);
    memset(res, 0, sizeof(task_result) * MP_NTASK);
    err[0] = 0;
    *winner = -1;
    char e2[MP_ERR_LEN] = "";
    if (tiered && search_pass(c, m, base, g, extra_pins, cache, level, true, res, e2) == 0)
        *winner = task_winner(res, c->opts.prefer_speed);
    if (*winner < 0) {
        memset(res, 0, sizeof(task_result) * MP_NTASK);
        if (search_pass(c, m, base, g, extra_pins, cache, level, false, res, err)) return -1;
        *winner = task_winner(res, c->opts.prefer_speed);
    }
    err[0] = 0;
    return 0;
}

int recommend(const cli *c, const mp_model *m, const mp_settings *base, const mp_gpu *g, table_cache *cache,
              recommendation *rec, char *err)
{
    memset(rec, 0, sizeof *rec);
    task_result res[MP_NTASK];
    int win;
    if (search_tasks(c, m, base, g, 0, cache, 0, res, &win, err)) return -1;
    double usable = g->mem_bytes * (1 - c->headroom);
    /* the least-memory plan of all tasks, for the note */
    int least = -1;
    for (int t = 0; t < MP_NTASK; t++)
        if (res[t].ran && (least < 0 || res[t].best.device_bytes < res[least].best.device_bytes)) least = t;
    if (least < 0) {
        snprintf(err, MP_ERR_LEN, "no valid combination");
        return -1;
    }
    mp_candidate fallback = res[least].best;

    /* Nothing fits on one GPU: the smallest power of two on which a plan fits, and
     * the best plan there: the search `memplan plan --gpus N` runs (every other flag
     * as given, the same host RAM limit), so that the table and the plan agree. */
    bool tried = false;
    if (win < 0 && !(c->pinned & MP_PIN_GPUS)) {
        tried = true;
        int64_t unit = base->tp * base->pp;
        for (int k = 1; k < TC_LEVELS && win < 0; k++) {
            mp_settings b = *base;
            b.gpus = ((int64_t)1 << k) * unit;
            char e2[MP_ERR_LEN];
            if (search_tasks(c, m, &b, g, MP_PIN_GPUS, cache, k, res, &win, e2) == 0 && win >= 0) rec->multi = true;
        }
    }

    const mp_candidate *pick = win >= 0 ? &res[win].best : &fallback;
    rec->s = pick->s;
    rec->task = pick->task;
    if (mp_estimate_run(m, &rec->s, g, &rec->e, err)) return -1;
    double host = host_limit_of(c, g);
    rec->fits = mp_fits(&rec->e, g->mem_bytes, c->headroom) && !(host > 0 && rec->e.host_node_bytes > host);
    rec->gpus = rec->s.gpus;
    rec->tried = tried;
    char a[32], b[32], lim[160];
    if (rec->multi)
        snprintf(rec->note, sizeof rec->note, "nothing fits on one GPU: memplan plan --gpus %lld fits",
                 (long long)rec->gpus);
    else if (!rec->fits && rec->e.device_bytes <= usable)
        snprintf(rec->note, sizeof rec->note, "nothing fits: a node needs %s of host RAM, over %s%s",
                 mp_fmt_gib(rec->e.host_node_bytes, a, sizeof a), host_limit_text(c, g, lim, sizeof lim),
                 tried ? ", nor on " TC_MAX_GPUS " GPUs" : "");
    else if (!rec->fits)
        snprintf(rec->note, sizeof rec->note, "nothing fits: needs at least %s, %.1fx the usable %s%s",
                 mp_fmt_gib(rec->e.device_bytes, a, sizeof a), rec->e.device_bytes / usable,
                 mp_fmt_gib(usable, b, sizeof b), tried ? ", nor on " TC_MAX_GPUS " GPUs" : "");
    return 0;
}

/* The plan in a buyer's words: the kind of training, then only what a buyer
 * weighs (fewer bits, host RAM, more GPUs): "full fine-tuning, 8-bit AdamW",
 * "QLoRA on 4 GPUs", "LoRA, fp16". */
const char *recommendation_label(const recommendation *r, char *buf, size_t len)
{
    const mp_settings *s = &r->s;
    if (!r->fits) {
        snprintf(buf, len, "\xe2\x80\x94");
        return buf;
    }
    const mp_precision_desc *pd = mp_precision_desc_of(s->precision);
    const mp_optimizer_desc *od = mp_optimizer_desc_of(s->optimizer);
    size_t o = (size_t)snprintf(buf, len, "%s", r->task == MP_TASK_LORA ? "LoRA" : r->task == MP_TASK_QLORA ? "QLoRA"
                                                                        : "full fine-tuning");
#define ADD(...) (o += (size_t)snprintf(buf + o, o < len ? len - o : 0, __VA_ARGS__))
    if (r->multi || s->gpus > 1) ADD(" on %lld GPUs", (long long)s->gpus);
    if (!strcmp(pd->short_name, "fp16") || !strcmp(pd->short_name, "fp32")) ADD(", %s", pd->short_name);
    if (od->low_bit) ADD(", %d-bit %s", od->state_bits, od->adamw_class ? "AdamW" : mp_optimizer_name(s->optimizer));
    else if (!od->adamw_class) ADD(", %s", s->optimizer == MP_SGD ? "SGD" : s->optimizer == MP_ADAFACTOR ? "Adafactor"
                                            : s->optimizer == MP_LION ? "Lion" : mp_optimizer_name(s->optimizer));
    if (r->task == MP_TASK_FULL && !pd->master_copy && !pd->autocast && pd->stored_bytes == 2) ADD(", bf16 weights");
    if (s->offload != MP_OFFLOAD_NONE) ADD(", CPU offload");
    /* a preference method's reference, where the plan computes it before training */
    if (s->method != MP_METHOD_SFT && mp_reference_used(s) == MP_REF_PRECOMPUTED) ADD(", reference precomputed");
#undef ADD
    return buf;
}

/* ---------- output ---------- */

enum { T_MODEL, T_GPU, T_CAPACITY, T_FITS, T_GPUS, T_TASK, T_PRECISION, T_OPTIMIZER, T_QUANT, T_LORA_RANK,
       T_LORA_TARGETS, T_CKPT, T_ATTENTION, T_CE, T_BATCH, T_ACCUM, T_SEQ, T_ZERO, T_OFFLOAD, T_DEVICE,
       T_USED, T_TOKENS, T_STEP_S, T_NOTE, T_PLAN, T_NCOL };
/* the screen's columns (--wide: all) */
static const int row_screen[] = {T_GPU, T_PLAN, T_BATCH, T_DEVICE, T_USED, T_TOKENS};

static const grid_col row_cols[T_NCOL] = {
    {"model", COL_STR}, {"gpu", COL_STR}, {"capacity_bytes", COL_BYTES}, {"fits", COL_BOOL},
    {"gpus", COL_INT}, {"task", COL_STR}, {"precision", COL_STR}, {"optimizer", COL_STR},
    {"quant", COL_STR}, {"lora-rank", COL_INT}, {"lora-targets", COL_STR}, {"checkpointing", COL_STR},
    {"attention", COL_STR}, {"ce", COL_STR}, {"batch", COL_INT}, {"accum", COL_INT}, {"seq", COL_INT},
    {"zero", COL_INT}, {"offload", COL_STR}, {"device_bytes", COL_BYTES}, {"used_pct", COL_PCT},
    {"tokens_per_s", COL_REAL}, {"step_seconds", COL_SECS}, {"note", COL_STR}, {"plan", COL_STR},
};

/* "all", "attn", "mlp" when the bits are exactly those (the flags accept them), else "q,k,v". */
static const char *targets_name(unsigned bits, char *buf, size_t len)
{
    if (bits == MP_LORA_ALL) return "all";
    if (bits == MP_LORA_ATTN) return "attn";
    if (bits == MP_LORA_MLP) return "mlp";
    return mp_lora_targets_name(bits, buf, len);
}

static void add_plan_row(grid *gr, const mp_model *m, const mp_gpu *g, const recommendation *r)
{
    char tg[64];
    const mp_settings *s = &r->s;
    size_t i = grid_add_row(gr);
    grid_str(gr, i, T_MODEL, m->name);
    grid_str(gr, i, T_GPU, g->name);
    grid_num(gr, i, T_CAPACITY, g->mem_bytes);
    grid_num(gr, i, T_FITS, r->fits);
    grid_num(gr, i, T_GPUS, (double)s->gpus);
    grid_str(gr, i, T_TASK, mp_task_name(r->task));
    grid_str(gr, i, T_PRECISION, mp_precision_name(s->precision));
    grid_str(gr, i, T_OPTIMIZER, mp_optimizer_name(s->optimizer));
    grid_str(gr, i, T_QUANT, mp_quant_name(s->quant));
    grid_num(gr, i, T_LORA_RANK, (double)s->lora_rank);
    grid_str(gr, i, T_LORA_TARGETS, s->lora_rank > 0 ? targets_name(s->lora_targets, tg, sizeof tg) : NULL);
    grid_str(gr, i, T_CKPT, mp_ckpt_name(s->checkpointing));
    grid_str(gr, i, T_ATTENTION, mp_attention_name(s->attention));
    grid_str(gr, i, T_CE, mp_ce_name(s->ce));
    grid_num(gr, i, T_BATCH, (double)s->batch);
    grid_num(gr, i, T_ACCUM, (double)s->accum);
    grid_num(gr, i, T_SEQ, (double)s->seq);
    grid_num(gr, i, T_ZERO, s->zero);
    grid_str(gr, i, T_OFFLOAD, mp_offload_name(s->offload));
    grid_num(gr, i, T_DEVICE, r->e.device_bytes);
    grid_num(gr, i, T_USED, 100 * r->e.device_bytes / g->mem_bytes);
    if (r->e.tokens_per_s > 0) grid_num(gr, i, T_TOKENS, r->e.tokens_per_s);
    if (r->e.step_seconds > 0) grid_num(gr, i, T_STEP_S, r->e.step_seconds);
    grid_str(gr, i, T_NOTE, r->note[0] ? r->note : NULL);
    if (gr->ncols <= T_PLAN) return; /* the words are the screen's (CSV, JSON, Markdown: the settings) */
    char words[160];
    if (r->fits) recommendation_label(r, words, sizeof words);
    else snprintf(words, sizeof words, "nothing fits%s", r->tried ? ", even on " TC_MAX_GPUS " GPUs" : "");
    grid_str(gr, i, T_PLAN, words);
}

static const char *task_words(mp_task t)
{
    return t == MP_TASK_FULL ? "full fine-tuning only" : t == MP_TASK_LORA ? "LoRA only"
         : t == MP_TASK_QLORA ? "QLoRA only" : "full fine-tuning, LoRA or QLoRA";
}

/* One table: the GPUs, the models, and each model's plan on each GPU. */
typedef struct table_job {
    mp_gpu *gpus;
    int ngpus;
    mp_model *models;
    int nmodels;
    int n;                     /* nmodels x ngpus cells, model-major */
    recommendation *recs;
    int *rcs;                  /* recommend()'s result per cell */
    char (*errs)[MP_ERR_LEN];
    int failed, fitting, first_fail;
} table_job;

static void table_job_free(table_job *t)
{
    free(t->gpus), free(t->models), free(t->recs), free(t->rcs), free(t->errs);
}

/* The GPUs: --gpus LIST, --gpu, or every profile. */
static int table_gpus(const cli *c, table_job *t)
{
    char err[MP_ERR_LEN], buf[4096];
    char *items[MAX_ITEMS];
    if (c->gpu_list) {
        int n = split_list("gpus", c->gpu_list, buf, sizeof buf, items, MAX_ITEMS);
        if (n < 0) return EXIT_USAGE;
        t->gpus = calloc((size_t)n, sizeof *t->gpus);
        for (int i = 0; i < n; i++) {
            if (mp_gpu_lookup(items[i], &t->gpus[t->ngpus], err))
                return cli_error("--gpus '%s': %s", c->gpu_list, err);
            for (int k = 0; k < t->ngpus; k++)
                if (!strcmp(t->gpus[k].name, t->gpus[t->ngpus].name))
                    return cli_error("GPU '%s' is given twice in --gpus '%s'", items[i], c->gpu_list);
            t->ngpus++;
        }
    } else if (c->have_gpu) {
        t->gpus = calloc(1, sizeof *t->gpus);
        t->gpus[t->ngpus++] = c->gpu;
    } else {
        while (mp_gpu_at(t->ngpus)) t->ngpus++;
        if (!t->ngpus) {
            mp_gpu probe;
            if (mp_gpu_lookup("rtx4090", &probe, err)) return cli_error("%s", err);
            return cli_error("no GPU profiles in '%s'", mp_profiles_dir());
        }
        t->gpus = calloc((size_t)t->ngpus, sizeof *t->gpus);
        for (int i = 0; i < t->ngpus; i++) t->gpus[i] = *mp_gpu_at(i);
    }
    return 0;
}

/* The models: --models LIST, or the one model. */
static int table_models(const cli *c, table_job *t)
{
    char err[MP_ERR_LEN], buf[4096];
    char *items[MAX_ITEMS];
    if (!c->models) {
        t->models = calloc(1, sizeof *t->models);
        t->models[t->nmodels++] = c->model;
        return 0;
    }
    int n = split_list("models", c->models, buf, sizeof buf, items, MAX_ITEMS);
    if (n < 0) return EXIT_USAGE;
    t->models = calloc((size_t)n, sizeof *t->models);
    for (int i = 0; i < n; i++) {
        if (mp_model_lookup(items[i], &t->models[t->nmodels], err))
            return cli_error("--models '%s': %s", c->models, err);
        for (int k = 0; k < t->nmodels; k++)
            if (!strcmp(t->models[k].name, t->models[t->nmodels].name))
                return cli_error("model '%s' is given twice in --models '%s'", items[i], c->models);
        t->nmodels++;
    }
    return 0;
}

/* One model's row: its plan on every GPU, what its searches learn cached
 * across its GPUs (cache: the worker's, emptied here). */
static void recommend_row(const cli *c, table_job *t, int m, table_cache *cache)
{
    mp_settings base;
    table_base(c, &t->models[m], &base);
    memset(cache, 0, sizeof *cache);
    /* the model's counts and layer shapes, worked out once for all its GPUs
     * (out of memory: each search makes its own, as without a table) */
    cache->ctx = mp_estimate_ctx_new(&t->models[m]);
    for (int g = 0; g < t->ngpus; g++) {
        int i = m * t->ngpus + g;
        t->rcs[i] = recommend(c, &t->models[m], &base, &t->gpus[g], cache, &t->recs[i], t->errs[i]);
    }
    mp_estimate_ctx_free(cache->ctx);
}

/* A worker takes the next model not taken until none is left. Rows share
 * nothing but the profiles, loaded before; every cell lands in its own place,
 * so the table is the same whatever the number of workers or their order. */
typedef struct table_worker {
    const cli *c;
    table_job *t;
    atomic_int *next;
    table_cache cache;
} table_worker;

static void *table_worker_run(void *arg)
{
    table_worker *w = arg;
    for (int m; (m = atomic_fetch_add(w->next, 1)) < w->t->nmodels;) recommend_row(w->c, w->t, m, &w->cache);
    mp_estimate_release();
    return NULL;
}

/* Workers: one per online core, at most one per model and TABLE_MAX_WORKERS. */
#define TABLE_MAX_WORKERS 64

static int table_workers(int nmodels)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int n = cores > 0 ? (int)(cores < TABLE_MAX_WORKERS ? cores : TABLE_MAX_WORKERS) : 1;
    return n < nmodels ? n : nmodels > 0 ? nmodels : 1;
}

/* Every cell's plan, the models' rows shared out among the cores. */
static int table_recommend(const cli *c, table_job *t)
{
    t->n = t->nmodels * t->ngpus;
    t->recs = calloc((size_t)t->n, sizeof *t->recs);
    t->rcs = calloc((size_t)t->n, sizeof *t->rcs);
    t->errs = calloc((size_t)t->n, sizeof *t->errs);
    const int nw = table_workers(t->nmodels);
    table_worker *w = calloc((size_t)nw, sizeof *w);
    pthread_t *th = calloc((size_t)nw, sizeof *th);
    t->first_fail = -1;
    if (!t->recs || !t->rcs || !t->errs || !w || !th) {
        free(w), free(th);
        return cli_error("out of memory");
    }
    atomic_int next = 0;
    int started = 0;
    for (int k = 0; k < nw; k++) {
        w[k] = (table_worker){.c = c, .t = t, .next = &next};
        /* the first works here; a thread that cannot start leaves its share to the others */
        if (k > 0 && pthread_create(&th[started], NULL, table_worker_run, &w[k]) == 0) started++;
    }
    table_worker_run(&w[0]);
    for (int k = 0; k < started; k++) pthread_join(th[k], NULL);
    free(w), free(th);
    for (int i = 0; i < t->n; i++) {
        if (t->rcs[i]) {
            t->failed++;
            if (t->first_fail < 0) t->first_fail = i;
        } else t->fitting += t->recs[i].fits;
    }
    /* one model: its error is the same on every GPU; several: only if none could be planned */
    if (t->failed && (t->nmodels == 1 || t->failed == t->n)) return cli_error("%s", t->errs[t->first_fail]);
    return 0;
}

/* One model: a row per GPU with the plan. */
static void write_plans(FILE *f, const cli *c, const table_job *t)
{
    grid gr;
    mp_settings base;
    table_base(c, &t->models[0], &base);
    grid_init(&gr, row_cols, c->format == FMT_TEXT ? T_NCOL : T_PLAN);
    for (int i = 0; i < t->n; i++) add_plan_row(&gr, &t->models[0], &t->gpus[i], &t->recs[i]);
    if (c->format == FMT_TEXT) {
        char how[220];
        if (c->models) snprintf(how, sizeof how, "profile '%s'", t->models[0].name);
        else snprintf(how, sizeof how, "%s", c->model_how);
        fprintf(f, "memplan table: %s (%s), %s;\nseq %lld, %s; %.0f%% headroom kept free\n",
                t->models[0].name, how, task_words(c->opts.task), (long long)base.seq,
                c->pinned & MP_PIN_BATCH ? "micro-batch pinned" : "micro-batch searched", c->headroom * 100);
        fprintf(f, "sizes per GPU in GiB (2^30 bytes); device is what nvidia-smi would show "
                   "(--format csv or json: bytes)\n\n");
    }
    grid_write_some(f, &gr, c->format, c->wide ? NULL : row_screen, (int)(sizeof row_screen / sizeof *row_screen));
    if (c->format == FMT_TEXT) {
        bool multi = false;
        for (int i = 0; i < t->n; i++) multi |= t->recs[i].multi;
        if (multi)
            fprintf(f, "\n\"on N GPUs\": nothing fits on one GPU; the smallest power of two on which memplan plan --gpus N\n"
                       "fits a plan, and that plan\n");
        if (!c->wide) fprintf(f, "--wide: every setting of each plan\n");
        write_speed_note(f, t->gpus, t->ngpus);
    }
    grid_free(&gr);
}

/* The speed model's error, and which GPUs are bare sizes with generic speed. */
void write_speed_note(FILE *f, const mp_gpu *gpus, int n)
{
    fprintf(f, "\n%s; step_seconds is one optimizer step\n", mp_speed_error_note());
    for (int i = 0; i < n; i++)
        if (gpus[i].generic_speed)
            fprintf(f, "%s is a size, not a profile: its speed is a generic Ampere PCIe card's (RTX 3090 figures)\n",
                    gpus[i].name);
}

/* The legend under the matrix, and the first cell that could not be planned. */
static void write_matrix_legend(FILE *f, const cli *c, const table_job *t, bool na)
{
    fprintf(f, "\nfull fine-tuning  every weight trained, bf16 mixed precision unless fp16 or fp32 is named;\n"
               "                  bf16 weights: no fp32 master copy; 8-bit AdamW: its states in 8 bits;\n"
               "                  CPU offload: optimizer state in host RAM (ZeRO-Offload)\n"
               "LoRA              adapters on a 16-bit base; QLoRA: adapters on a 4-bit (or 8-bit) base\n"
               "on N GPUs         nothing fits on one GPU: memplan plan --gpus N fits this\n"
               "\xe2\x80\x94                 nothing fits%s\n"
               "details of one model: memplan table --model NAME --gpus GPU\n",
            c->pinned & MP_PIN_GPUS ? "" : ", even on " TC_MAX_GPUS " GPUs");
    if (mp_method_desc_of(c->s.method)->reference)
        fprintf(f, "reference precomputed  %s's reference log-probabilities taken before training "
                   "(precompute_ref_log_probs)\n", mp_method_name(c->s.method));
    if (na)
        for (int i = 0; i < t->n; i++)
            if (t->rcs[i]) {
                fprintf(f, "n/a         %s: %s\n", t->models[i / t->ngpus].name, t->errs[i]);
                break;
            }
}

/* The matrix on a screen: a row per GPU and a column per model (GPUs outnumber
 * models), in slices of models that keep each line within 120 columns. */
static void write_matrix_screen(FILE *f, const table_job *t)
{
    char lab[160];
    size_t gw = 3; /* "gpu" */
    for (int g = 0; g < t->ngpus; g++)
        if (strlen(t->gpus[g].name) > gw) gw = strlen(t->gpus[g].name);
    for (int m0 = 0; m0 < t->nmodels;) {
        size_t width = gw;
        int m1 = m0;
        while (m1 < t->nmodels) { /* the next model's column: its name or its widest cell */
            size_t w = strlen(t->models[m1].name);
            for (int g = 0; g < t->ngpus; g++) {
                int i = m1 * t->ngpus + g;
                size_t n = t->rcs[i] ? 3 : t->recs[i].fits ? strlen(recommendation_label(&t->recs[i], lab, sizeof lab)) : 1;
                if (n > w) w = n;
            }
            if (m1 > m0 && width + 2 + w > 120) break;
            width += 2 + w, m1++;
        }
        grid_col *cols = calloc((size_t)(m1 - m0) + 1, sizeof *cols);
        cols[0] = (grid_col){"gpu", COL_STR};
        for (int m = m0; m < m1; m++) cols[m - m0 + 1] = (grid_col){t->models[m].name, COL_STR};
        grid gr;
        grid_init(&gr, cols, m1 - m0 + 1);
        for (int g = 0; g < t->ngpus; g++) {
            size_t r = grid_add_row(&gr);
            grid_str(&gr, r, 0, t->gpus[g].name);
            for (int m = m0; m < m1; m++) {
                int i = m * t->ngpus + g;
                if (t->rcs[i]) grid_str(&gr, r, m - m0 + 1, "n/a");
                else if (t->recs[i].fits) grid_str(&gr, r, m - m0 + 1, recommendation_label(&t->recs[i], lab, sizeof lab));
            }
        }
        if (m0) fputc('\n', f);
        grid_write(f, &gr, FMT_TEXT);
        grid_free(&gr);
        free(cols);
        m0 = m1;
    }
}

/* Several models: a models x GPUs matrix of the most complete training that fits. */
static void write_matrix(FILE *f, const cli *c, const table_job *t)
{
    char a[32], lab[160];
    grid gr;
    grid_col *cols = calloc((size_t)t->ngpus + 1, sizeof *cols);
    cols[0] = (grid_col){"model", COL_STR};
    for (int g = 0; g < t->ngpus; g++) cols[g + 1] = (grid_col){t->gpus[g].name, COL_STR};
    grid_init(&gr, cols, t->ngpus + 1);
    bool na = false;
    for (int m = 0; m < t->nmodels; m++) {
        size_t r = grid_add_row(&gr);
        grid_str(&gr, r, 0, t->models[m].name);
        for (int g = 0; g < t->ngpus; g++) {
            int i = m * t->ngpus + g;
            if (t->rcs[i]) grid_str(&gr, r, g + 1, "n/a"), na = true;
            else if (t->recs[i].fits) grid_str(&gr, r, g + 1, recommendation_label(&t->recs[i], lab, sizeof lab));
            /* else unset: "—" in text and Markdown, empty in CSV, null in JSON */
        }
    }
    if (c->format == FMT_TEXT)
        fprintf(f, "memplan table: the most complete training that fits each GPU\n(%s; %s%s; %.0f%% headroom)\n\n",
                task_words(c->opts.task), c->seq_given ? "seq " : "seq: each model's maximum or 2048",
                c->seq_given ? (snprintf(a, sizeof a, "%lld", (long long)c->s.seq), a) : "", c->headroom * 100);
    if (c->format == FMT_TEXT && !c->wide) write_matrix_screen(f, t);
    else grid_write(f, &gr, c->format);
    if (c->format == FMT_TEXT) write_matrix_legend(f, c, t, na);
    grid_free(&gr);
    free(cols);
}

int cmd_table(cli *c)
{
    table_job t = {0};
    int rc = table_gpus(c, &t);
    if (!rc) rc = table_models(c, &t);
    if (!rc) rc = table_recommend(c, &t);
    if (!rc) {
        out_buf ob;
        FILE *f = out_open(&ob);
        if (t.nmodels == 1) write_plans(f, c, &t);
        else write_matrix(f, c, &t);
        rc = out_finish(&ob, c->out_path);
        if (!rc && !t.fitting) rc = EXIT_NOFIT;
    }
    table_job_free(&t);
    return rc;
}

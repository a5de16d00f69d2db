/* search.c — every combination of techniques, best first.
 *
 * Ranking (the rules, in order; mp_rank_reason names the one that decided):
 *  1. plans that fit first;
 *  2. the optimizer family: AdamW-class, then other adaptive ones, then SGD
 *     (with --prefer speed too: speed never changes the family unless asked,
 *     and the guides move to LoRA or offload, not to another optimizer, to
 *     save memory);
 *  3. no offload before offload: offload only when nothing else fits, of any
 *     kind (the guides reach for LoRA and QLoRA before CPU offload);
 *  4. the kind of training: full fine-tuning, then LoRA, then QLoRA (not with
 *     --prefer speed);
 *  5. (not with --prefer speed) full numerics before reduced ones: 8-bit
 *     optimizer state and 16-bit weights without an fp32 master copy each
 *     change the update's numerics, and the guides reach for them to save
 *     memory, so they are chosen when nothing with full numerics fits, not
 *     for the few percent a fused step may save;
 *  6. faster first, but plans within MP_SPEED_TIE of the fastest of their
 *     group are equally fast, and among those:
 *  7. the simpler plan: no ZeRO before ZeRO, plain AdamW before 8-bit and
 *     paged, an fp32 master copy before none, no checkpointing before
 *     checkpointing, full CE before chunked, no loss scaling before loss
 *     scaling;
 *  8. the smaller footprint.
 * Offload of a state smaller than the bucket that moves it is not a plan.
 * A larger micro-batch never uses less memory, so once a batch misses the
 * budget the larger ones are pruned. */
#include "common/errors.h"
#include "estimate/estimate.h"
#include "model/model.h"
#include "profiles/profiles.h"
#include "search/search.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"
#include "estimate/estimate.h"
#include "profiles/framework.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* DeepSpeed's ZeRO-2 offload reduces gradients through a device bucket of
 * reduce_bucket_size elements, default 5e8 (deepspeedai/DeepSpeed,
 * deepspeed/runtime/zero/config.py, commit 1b88ac36), 2 bytes each in 16-bit:
 * offloading a smaller state costs more device memory than it frees. */
#define OFFLOAD_MIN_STATE_BYTES (5e8 * 2)

/* Rule 5: how many of the update's numerics are reduced (8-bit optimizer
 * state, 16-bit weights with no fp32 master copy). */
static int reduced_numerics(const mp_settings *s)
{
    const mp_precision_desc *pd = mp_precision_desc_of(s->precision);
    return mp_optimizer_desc_of(s->optimizer)->low_bit + mp_precision_pure16(pd);
}

/* Rule 7's moving parts, most weighty first: on a speed tie the plan with
 * the first one absent wins. */
enum { NPARTS = 7 };
static const char *const part_names[NPARTS] = {"ZeRO", "a low-bit optimizer", "a paged optimizer",
                                               "16-bit weights without an fp32 master copy",
                                               "checkpointing", "chunked cross-entropy", "loss scaling"};
static void moving_parts(const mp_settings *s, int parts[NPARTS])
{
    const mp_optimizer_desc *od = mp_optimizer_desc_of(s->optimizer);
    parts[0] = s->zero > 0;
    parts[1] = od->low_bit;
    const mp_precision_desc *pd = mp_precision_desc_of(s->precision);
    parts[2] = od->paged;
    parts[3] = mp_precision_pure16(pd);
    parts[4] = s->checkpointing != MP_CKPT_NONE;
    parts[5] = s->ce == MP_CE_CHUNKED;
    parts[6] = pd->loss_scaling;
}

/* The first moving part in which a and b differ, or -1. */
static int first_part_apart(const mp_settings *a, const mp_settings *b)
{
    int pa[NPARTS], pb[NPARTS];
    moving_parts(a, pa);
    moving_parts(b, pb);
    for (int i = 0; i < NPARTS; i++)
        if (pa[i] != pb[i]) return i;
    return -1;
}

static int push(mp_search_result *r, const mp_candidate *c)
{
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 1024;
        mp_candidate *n = realloc(r->cands, cap * sizeof *n);
        if (!n) return -1;
        r->cands = n, r->cap = cap;
    }
    r->cands[r->n++] = *c;
    return 0;
}

static bool g_prefer_speed;

/* Rules 2 to 5 group the plans. */
int mp_rank_group(const mp_candidate *k, bool prefer_speed)
{
    int offload = k->s.offload != MP_OFFLOAD_NONE;
    int task = prefer_speed ? 0 : (int)k->task;
    int reduced = prefer_speed ? 0 : reduced_numerics(&k->s);
    return ((k->tier * 2 + offload) * MP_NTASK + task) * 3 + reduced;
}
enum { NGROUPS = 2 * MP_NTASK * 3 * 3 };

static bool speed_tied(const mp_candidate *k)
{
    return k->tokens_per_s * (1 + MP_SPEED_TIE) >= k->band_best;
}

static int cmp_cand(const void *pa, const void *pb)
{
    const mp_candidate *a = pa, *b = pb;
    if (a->fits != b->fits) return a->fits ? -1 : 1;
    if (!a->fits) return a->device_bytes < b->device_bytes ? -1 : a->device_bytes > b->device_bytes;
    int ga = mp_rank_group(a, g_prefer_speed), gb = mp_rank_group(b, g_prefer_speed);
    if (ga != gb) return ga - gb;
    bool ta = speed_tied(a), tb = speed_tied(b);
    if (ta != tb) return ta ? -1 : 1;
    if (!ta && a->tokens_per_s != b->tokens_per_s) return a->tokens_per_s > b->tokens_per_s ? -1 : 1;
    int part = first_part_apart(&a->s, &b->s);
    if (part >= 0) {
        int pa_[NPARTS], pb_[NPARTS];
        moving_parts(&a->s, pa_);
        moving_parts(&b->s, pb_);
        return pa_[part] - pb_[part];
    }
    return a->device_bytes < b->device_bytes ? -1 : a->device_bytes > b->device_bytes;
}

/* Each group's fastest fitting plan: the band the tie of rule 6 is measured from. */
static void set_bands(mp_search_result *r, bool prefer_speed)
{
    double best[NGROUPS] = {0};
    for (size_t i = 0; i < r->n; i++) {
        const mp_candidate *k = &r->cands[i];
        int g = mp_rank_group(k, prefer_speed);
        if (k->fits && k->tokens_per_s > best[g]) best[g] = k->tokens_per_s;
    }
    for (size_t i = 0; i < r->n; i++) r->cands[i].band_best = best[mp_rank_group(&r->cands[i], prefer_speed)];
}

static const char *const task_names[MP_NTASK] = {"any", "full fine-tuning", "LoRA", "QLoRA"};
static const char *const tier_names[3] = {"AdamW-class", "another adaptive optimizer", "SGD"};

const char *mp_rank_reason(const mp_candidate *best, const mp_candidate *alt, bool prefer_speed, char *buf,
                           size_t len)
{
    double pct = best->tokens_per_s > 0 ? 100 * (1 - alt->tokens_per_s / best->tokens_per_s) : 0;
    int part = first_part_apart(&best->s, &alt->s);
    if (!alt->fits)
        snprintf(buf, len, "does not fit");
    else if (alt->tier != best->tier)
        snprintf(buf, len, "optimizer family: %s ranks after %s (--optimizer picks one)", tier_names[alt->tier],
                 tier_names[best->tier]);
    else if ((alt->s.offload != MP_OFFLOAD_NONE) != (best->s.offload != MP_OFFLOAD_NONE))
        snprintf(buf, len, "offload: only when nothing without it fits (%.0f%% slower)", pct);
    else if (!prefer_speed && alt->task != best->task)
        snprintf(buf, len, "kind of training: %s ranks after %s", task_names[alt->task], task_names[best->task]);
    else if (!prefer_speed && reduced_numerics(&alt->s) != reduced_numerics(&best->s))
        snprintf(buf, len,
                 "8-bit optimizer state or 16-bit weights without an fp32 master: only when full numerics "
                 "do not fit (%+.0f%% speed)", -pct);
    else if (!speed_tied(alt))
        snprintf(buf, len, "slower: %.0f%% below the fastest, beyond the speed model's %.0f%% error", pct,
                 100 * MP_SPEED_TIE);
    else if (part >= 0)
        snprintf(buf, len, "as fast (%.1f%% apart, within the speed model's %.0f%% error) but less simple: %s",
                 fabs(pct), 100 * MP_SPEED_TIE, part_names[part]);
    else
        snprintf(buf, len, "as fast and as simple, but %.0f MiB more memory",
                 (alt->device_bytes - best->device_bytes) / 1048576);
    return buf;
}

static int cmp_cand_ptr(const void *pa, const void *pb)
{
    return cmp_cand(*(const mp_candidate *const *)pa, *(const mp_candidate *const *)pb);
}

typedef struct axis { int vals[16]; int n; } axis;

static void axis_range(axis *a, int pinned, int value, int count, unsigned only)
{
    a->n = 0;
    if (pinned) a->vals[a->n++] = value;
    else
        for (int i = 0; i < count && i < 16; i++)
            if (!only || (only >> i & 1)) a->vals[a->n++] = i;
}

/* The search space: the tasks asked for, each setting's values, the ZeRO
 * stage x offload pairs that make sense for the GPU count, and the batches. */
typedef struct space {
    int tasks[3], ntasks;
    axis prec, opt, ckpt, attn, ce;
    int zo[16][2], nzo;
    int64_t batches[16];
    int nb;
    int64_t dp;
} space;

static int space_tasks(space *sp, const mp_settings *base, const mp_search_opts *o, char *err)
{
    const unsigned pin = o->pinned;
    sp->ntasks = 0;
    for (int t = MP_TASK_FULL; t <= MP_TASK_QLORA; t++) {
        if (o->task != MP_TASK_ANY && o->task != (mp_task)t) continue;
        if ((pin & MP_PIN_LORA) && ((base->lora_rank == 0) != (t == MP_TASK_FULL))) continue;
        if ((pin & MP_PIN_QUANT) && ((base->quant != MP_QUANT_NONE) != (t == MP_TASK_QLORA)))
            continue;
        sp->tasks[sp->ntasks++] = t;
    }
    if (!sp->ntasks) {
        snprintf(err, MP_ERR_LEN, "the flags given rule out every task (--task %s with --lora-rank/--quant)",
                 mp_task_name(o->task));
        return -1;
    }
    return 0;
}

static void space_zero_offload(space *sp, const mp_settings *base, unsigned pin)
{
    const int64_t dp = sp->dp;
    sp->nzo = 0;
    for (int z = 0; z <= 3; z++)
        for (int off = 0; off < MP_NOFFLOAD; off++) {
            if ((pin & MP_PIN_ZERO) && z != base->zero) continue;
            if ((pin & MP_PIN_OFFLOAD) && off != (int)base->offload) continue;
            if (dp < 2 && !(pin & MP_PIN_ZERO) && !(z == 0 && off == 0) && !(z == 2 && off == 1)) continue;
            if (dp >= 2 && z == 1 && off == 0 && !(pin & MP_PIN_ZERO)) continue; /* dominated by 2 */
            if (off == MP_OFFLOAD_OPTIMIZER && z == 0) continue;
            if (off == MP_OFFLOAD_PARAMS && z != 3) continue;
            sp->zo[sp->nzo][0] = z, sp->zo[sp->nzo][1] = off, sp->nzo++;
        }
}

/* Micro-batches by doubling, up to --max-batch or the global batch per GPU. */
static void space_batches(space *sp, const mp_settings *base, const mp_search_opts *o)
{
    sp->nb = 0;
    if (o->pinned & MP_PIN_BATCH) {
        sp->batches[sp->nb++] = base->batch;
        return;
    }
    int64_t maxb = o->max_batch > 0 ? o->max_batch : 64;
    if (o->global_batch > 0 && o->global_batch / sp->dp < maxb) maxb = o->global_batch / sp->dp;
    if (maxb < 1) maxb = 1;
    for (int64_t b = 1; b <= maxb && sp->nb < 16; b *= 2)
        /* a global batch splits into whole micro-batches on every rank */
        if (o->global_batch <= 0 || (o->pinned & MP_PIN_ACCUM) || o->global_batch % (b * sp->dp) == 0)
            sp->batches[sp->nb++] = b;
}

static int space_build(space *sp, const mp_settings *base, const mp_search_opts *o, char *err)
{
    const unsigned pin = o->pinned;
    sp->dp = mp_dp_degree(base);
    if (sp->dp < 1) sp->dp = 1;
    if (space_tasks(sp, base, o, err)) return -1;
    axis_range(&sp->prec, pin & MP_PIN_PRECISION, base->precision, MP_NPRECISION, o->only_precisions);
    axis_range(&sp->opt, pin & MP_PIN_OPTIMIZER, base->optimizer, MP_NOPTIMIZER, o->only_optimizers);
    axis_range(&sp->ckpt, pin & MP_PIN_CKPT, base->checkpointing, MP_NCKPT, 0);
    axis_range(&sp->attn, pin & MP_PIN_ATTENTION, base->attention, MP_NATTN, 0);
    axis_range(&sp->ce, pin & MP_PIN_CE, base->ce, MP_NCE, 0);
    space_zero_offload(sp, base, pin);
    space_batches(sp, base, o);
    return 0;
}

/* One search in progress: where candidates go, and the first invalid
 * combination's reason (reported if none is valid). */
typedef struct search_run {
    const mp_model *m;
    const mp_gpu *gpu;
    const mp_search_opts *o;
    const space *sp;
    mp_search_result *r;
    size_t valid;
    char first_invalid[MP_ERR_LEN];
} search_run;

/* Combinations not worth estimating: bf16 without hardware support unless
 * the user insists, regimes the framework does not run, and dominated twins: fp16 needs the memory of bf16 plus
 * loss scaling, and a paged optimizer the memory of its unpaged self. */
static bool skipped(const mp_settings *s, const mp_gpu *gpu, const mp_search_opts *o)
{
    const unsigned pin = o->pinned;
    const mp_precision_desc *pd = mp_precision_desc_of(s->precision);
    if (pd->needs_bf16 && gpu && !gpu->bf16 && !(pin & MP_PIN_PRECISION)) return true;
    /* autocast only where the stack runs it (DeepSpeed keeps 16-bit weights and masters) */
    if (pd->autocast && !settings_framework(s)->amp && !(pin & MP_PIN_PRECISION)) return true;
    /* 16-bit weights without a master copy only where the stack trains them so */
    if (mp_precision_pure16(pd) && !settings_framework(s)->pure16 && !(pin & MP_PIN_PRECISION))
        return true;
    if (!o->exhaustive && !(pin & MP_PIN_PRECISION) && (!gpu || gpu->bf16) && pd->same_memory_as != s->precision)
        return true;
    if (!o->exhaustive && !(pin & MP_PIN_OPTIMIZER) && mp_optimizer_desc_of(s->optimizer)->same_memory_as != s->optimizer)
        return true;
    return false;
}

/* A candidate's figures from its estimate: the screen's, then the whole one's. */
static void candidate_figures(mp_candidate *c, const mp_estimate *e)
{
    c->device_bytes = e->device_bytes, c->total_bytes = e->total_bytes, c->host_bytes = e->host_bytes;
    c->trainable = e->trainable_params, c->tokens_per_s = e->tokens_per_s;
    c->offloaded_bytes = e->host_offload_bytes, c->host_node_bytes = e->host_node_bytes;
    memcpy(c->at_peak, e->at_peak, sizeof c->at_peak);
}

/* Estimate s at each micro-batch, smallest first, until one misses the
 * budget; 0, or -1 with err when out of memory. */
static int try_batches(search_run *run, mp_settings *s, mp_task task, char *err)
{
    const mp_search_opts *o = run->o;
    const space *sp = run->sp;
    mp_search_result *r = run->r;
    char e2[MP_ERR_LEN];
    for (int bi = 0; bi < sp->nb; bi++) {
        s->batch = sp->batches[bi];
        if (!(o->pinned & MP_PIN_ACCUM))
            s->accum = o->global_batch > 0 ? o->global_batch / (s->batch * sp->dp) : 1;
        mp_estimate e;
        r->evaluated++;
        /* the screen: reserved and device as lower bounds, the allocator not
         * replayed (verify_top estimates the plans ranked first whole) */
        if (mp_estimate_screen(run->m, s, run->gpu, &e, e2)) { /* an invalid combination */
            if (!run->first_invalid[0]) snprintf(run->first_invalid, sizeof run->first_invalid, "%s", e2);
            break;
        }
        run->valid++;
        if (s->offload != MP_OFFLOAD_NONE && !(o->pinned & MP_PIN_OFFLOAD) &&
            e.host_offload_bytes < OFFLOAD_MIN_STATE_BYTES)
            break; /* a state too small to be worth moving, at every batch */
        mp_candidate c = {.s = *s, .task = task, .tier = mp_optimizer_desc_of(s->optimizer)->tier};
        candidate_figures(&c, &e);
        c.fits = o->budget_bytes > 0 && mp_fits(&e, o->budget_bytes, o->headroom);
        if (c.fits && o->host_budget_bytes > 0 && e.host_node_bytes > o->host_budget_bytes) {
            c.fits = false; /* the GPU holds it, the node's host RAM does not */
            r->host_limited++;
        }
        if (push(r, &c)) {
            snprintf(err, MP_ERR_LEN, "out of memory in the search");
            return -1;
        }
        if (c.fits) r->fitting++;
        else break; /* larger micro-batches need more memory still */
    }
    return 0;
}

/* Every combination of one task's settings; s carries the rest of the base. */
static int search_task(search_run *run, mp_settings *s, const mp_settings *base, mp_task task,
                       char *err)
{
    const space *sp = run->sp;
    int quants[4], nq = 0;
    if (task == MP_TASK_QLORA) {
        if (run->o->pinned & MP_PIN_QUANT) quants[nq++] = base->quant;
        else quants[nq++] = MP_QUANT_NF4_DQ, quants[nq++] = MP_QUANT_NF4, quants[nq++] = MP_QUANT_INT8;
    } else {
        quants[nq++] = MP_QUANT_NONE;
    }
    s->lora_rank = task == MP_TASK_FULL ? 0 : (base->lora_rank > 0 ? base->lora_rank : MP_DEFAULT_LORA_RANK);
    for (int qi = 0; qi < nq; qi++)
    for (int pi = 0; pi < sp->prec.n; pi++)
    for (int oi = 0; oi < sp->opt.n; oi++)
    for (int ki = 0; ki < sp->ckpt.n; ki++)
    for (int ai = 0; ai < sp->attn.n; ai++)
    for (int ci = 0; ci < sp->ce.n; ci++)
    for (int zi = 0; zi < sp->nzo; zi++) {
        s->quant = (mp_quant)quants[qi];
        s->precision = (mp_precision)sp->prec.vals[pi];
        s->optimizer = (mp_optimizer)sp->opt.vals[oi];
        s->checkpointing = (mp_ckpt)sp->ckpt.vals[ki];
        s->attention = (mp_attention)sp->attn.vals[ai];
        s->ce = (mp_ce)sp->ce.vals[ci];
        s->zero = sp->zo[zi][0];
        s->offload = (mp_offload)sp->zo[zi][1];
        run->r->considered += (size_t)sp->nb;
        if (skipped(s, run->gpu, run->o)) continue;
        /* a plan the caller cannot use (one `plan --emit`'s target cannot write) is
         * no answer; no predicate reads the micro-batch, so once for all of them */
        char why[MP_ERR_LEN];
        if (run->o->accept && run->o->accept(run->o->accept_ctx, run->m, s, why)) {
            if (!run->first_invalid[0]) snprintf(run->first_invalid, sizeof run->first_invalid, "%s", why);
            run->r->unwritable += (size_t)sp->nb;
            continue;
        }
        if (try_batches(run, s, task, err)) return -1;
    }
    return 0;
}

/* Sort pointers, then lay the candidates out in that order: moving the
 * structs themselves inside qsort costs more than the comparisons. */
static int rank_candidates(mp_search_result *r, bool prefer_speed, char *err)
{
    g_prefer_speed = prefer_speed;
    set_bands(r, prefer_speed);
    const mp_candidate **order = malloc(r->n * sizeof *order + 1);
    mp_candidate *sorted = malloc(r->n * sizeof *sorted + 1);
    if (!order || !sorted) {
        free(order), free(sorted);
        snprintf(err, MP_ERR_LEN, "out of memory in the search");
        return -1;
    }
    for (size_t i = 0; i < r->n; i++) order[i] = &r->cands[i];
    qsort(order, r->n, sizeof *order, cmp_cand_ptr);
    for (size_t i = 0; i < r->n; i++) sorted[i] = *order[i];
    free(order);
    free(r->cands);
    r->cands = sorted, r->cap = r->n;
    return 0;
}

/* The ranking again after verify() changed some candidates: the order
 * rank_candidates gives (glibc's qsort is a stable merge sort: equal plans
 * keep their order), without comparing every plan again nor moving the
 * plans themselves. ord[i] is the plan ranked i-th, grp[j] plan j's group.
 * The plans whose keys did not change (moves[j] 0) keep their order; those
 * that did (the changed ones, and the fitting plans of a group whose band
 * moved) are sorted, ties by their place, and merged in, ties again by place. */
typedef struct placed {
    size_t at, plan; /* its place in the last ranking; its index in cands */
} placed;

static const mp_candidate *g_rank_base;

static int cmp_placed(const void *pa, const void *pb)
{
    const placed *a = pa, *b = pb;
    int c = cmp_cand(&g_rank_base[a->plan], &g_rank_base[b->plan]);
    return c ? c : (a->at > b->at) - (a->at < b->at);
}

static int rerank(mp_search_result *r, bool prefer_speed, size_t *ord, const int *grp, unsigned char *moves,
                  char *err)
{
    const size_t n = r->n;
    mp_candidate *c = r->cands;
    g_prefer_speed = prefer_speed;
    g_rank_base = c;
    /* set_bands, with the groups known */
    double best[NGROUPS] = {0};
    bool moved_band[NGROUPS] = {false};
    for (size_t j = 0; j < n; j++)
        if (c[j].fits && c[j].tokens_per_s > best[grp[j]]) best[grp[j]] = c[j].tokens_per_s;
    for (size_t j = 0; j < n; j++) {
        if (c[j].band_best != best[grp[j]]) moved_band[grp[j]] = true;
        c[j].band_best = best[grp[j]];
    }
    placed *mv = malloc((n + 1) * sizeof *mv);
    size_t *out = malloc((n + 1) * sizeof *out);
    if (!mv || !out) {
        free(mv), free(out);
        snprintf(err, MP_ERR_LEN, "out of memory in the search");
        return -1;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        size_t j = ord[i];
        if (c[j].fits && moved_band[grp[j]]) moves[j] = 1;
        if (moves[j]) mv[k++] = (placed){i, j};
    }
    qsort(mv, k, sizeof *mv, cmp_placed);
    size_t u = 0, m = 0, w = 0;
    for (;;) {
        while (u < n && moves[ord[u]]) u++;
        if (u >= n && m >= k) break;
        placed pu = {u, u < n ? ord[u] : 0};
        if (m >= k || (u < n && cmp_placed(&pu, &mv[m]) < 0)) out[w++] = ord[u++];
        else out[w++] = mv[m++].plan;
    }
    memcpy(ord, out, n * sizeof *ord);
    for (size_t i = 0; i < k; i++) moves[mv[i].plan] = 0;
    free(mv), free(out);
    return 0;
}

/* The screen's verdicts rest on lower bounds of reserved and device memory:
 * the plans that decide the ranking are estimated whole, with the step
 * replayed through the caching allocator: each group's fastest fitting plan
 * (the band of rule 6 is measured from it) and the first VERIFIED_TOP fitting
 * plans (the best and the alternatives a report lists). One that no longer
 * fits drops out of the fitting plans and the ranking is made again, until
 * all of them stand. */
#define VERIFIED_TOP 8

/* Estimate c whole; false when it no longer fits. */
static bool verify(const search_run *run, mp_candidate *c)
{
    mp_estimate e;
    char err[MP_ERR_LEN];
    c->verified = true;
    if (mp_estimate_ex(run->m, &c->s, run->gpu, &e, false, err)) return true; /* the screen estimated it */
    candidate_figures(c, &e);
    if (mp_fits(&e, run->o->budget_bytes, run->o->headroom)) return true;
    c->fits = false;
    run->r->fitting--;
    return false;
}

static int verify_top(const search_run *run, mp_search_result *r, char *err)
{
    const bool speed = run->o->prefer_speed;
    const size_t n = r->n;
    mp_candidate *c = r->cands;
    /* the ranking as an order of indices (the plans stay put until the end),
     * each plan's group looked up once */
    size_t *ord = malloc((n + 1) * sizeof *ord);
    int *grp = malloc((n + 1) * sizeof *grp);
    unsigned char *moves = calloc(n + 1, 1);
    int rc = 0;
    bool reranked = false;
    if (!ord || !grp || !moves) {
        snprintf(err, MP_ERR_LEN, "out of memory in the search");
        rc = -1;
        goto done;
    }
    for (size_t i = 0; i < n; i++) ord[i] = i, grp[i] = mp_rank_group(&c[i], speed);
    for (;;) {
        bool dropped = false;
        size_t setter[NGROUPS];
        for (int g = 0; g < NGROUPS; g++) setter[g] = n;
        for (size_t i = 0; i < n; i++) {
            const mp_candidate *k = &c[ord[i]];
            int g = grp[ord[i]];
            if (k->fits && (setter[g] == n || k->tokens_per_s > c[ord[setter[g]]].tokens_per_s)) setter[g] = i;
        }
        for (int g = 0; g < NGROUPS && !dropped; g++)
            if (setter[g] < n && !c[ord[setter[g]]].verified) {
                moves[ord[setter[g]]] = 1;
                dropped = !verify(run, &c[ord[setter[g]]]);
            }
        int stood = 0;
        for (size_t i = 0; i < n && stood < VERIFIED_TOP && !dropped && c[ord[i]].fits; i++, stood++)
            if (!c[ord[i]].verified) {
                moves[ord[i]] = 1;
                dropped = !verify(run, &c[ord[i]]);
            }
        if (!dropped) break;
        if ((rc = rerank(r, speed, ord, grp, moves, err))) break;
        reranked = true;
    }
    if (reranked && !rc) { /* the plans laid out in their last ranking */
        mp_candidate *sorted = malloc(n * sizeof *sorted + 1);
        if (!sorted) {
            snprintf(err, MP_ERR_LEN, "out of memory in the search");
            rc = -1;
            goto done;
        }
        for (size_t i = 0; i < n; i++) sorted[i] = c[ord[i]];
        free(r->cands);
        r->cands = sorted, r->cap = n;
    }
done:
    free(ord), free(grp), free(moves);
    return rc;
}

int mp_search(const mp_model *m, const mp_settings *base, const mp_gpu *gpu,
              const mp_search_opts *o, mp_search_result *r, char *err)
{
    memset(r, 0, sizeof *r);
    space sp;
    if (space_build(&sp, base, o, err)) return -1;
    search_run run = {.m = m, .gpu = gpu, .o = o, .sp = &sp, .r = r};
    mp_settings s = *base;
    for (int ti = 0; ti < sp.ntasks; ti++)
        if (search_task(&run, &s, base, (mp_task)sp.tasks[ti], err)) return -1;
    if (!run.valid) {
        /* what the user pinned rules out every combination: say why */
        snprintf(err, MP_ERR_LEN, "%s", run.first_invalid[0] ? run.first_invalid : "no valid combination");
        return -1;
    }
    if (rank_candidates(r, o->prefer_speed, err)) return -1;
    return o->budget_bytes > 0 ? verify_top(&run, r, err) : 0;
}

void mp_search_free(mp_search_result *r)
{
    if (!r) return;
    free(r->cands);
    memset(r, 0, sizeof *r);
}

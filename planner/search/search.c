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
 *     scaling, a preference method's reference as TRL takes it before
 *     log-probabilities computed ahead;
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
enum { NPARTS = 8 };
static const char *const part_names[NPARTS] = {"ZeRO", "a low-bit optimizer", "a paged optimizer",
                                               "16-bit weights without an fp32 master copy",
                                               "checkpointing", "chunked cross-entropy", "loss scaling",
                                               "reference log-probabilities computed before training"};
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
    parts[7] = s->reference == MP_REF_PRECOMPUTED;
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

/* Rule 7's moving parts as one number, part 0 the highest bit: comparing two
 * compares the parts in order, the first present in one and not the other
 * deciding (first_part_apart). */
static unsigned parts_mask(const mp_settings *s)
{
    int parts[NPARTS];
    moving_parts(s, parts);
    unsigned m = 0;
    for (int i = 0; i < NPARTS; i++) m = m << 1 | (parts[i] != 0);
    return m;
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

static int cmp_bytes(double a, double b)
{
    return a < b ? -1 : a > b;
}

/* The ranking's order: rules 1 to 8, on the group and parts each candidate
 * carries. A strict weak order, so every stable sort gives the same ranking. */
static int cmp_cand(const mp_candidate *a, const mp_candidate *b)
{
    if (a->fits != b->fits) return a->fits ? -1 : 1;
    if (!a->fits) return cmp_bytes(a->device_bytes, b->device_bytes);
    if (a->group != b->group) return a->group < b->group ? -1 : 1;
    bool ta = speed_tied(a), tb = speed_tied(b);
    if (ta != tb) return ta ? -1 : 1;
    if (!ta && a->tokens_per_s != b->tokens_per_s) return a->tokens_per_s > b->tokens_per_s ? -1 : 1;
    if (a->parts != b->parts) return a->parts < b->parts ? -1 : 1;
    return cmp_bytes(a->device_bytes, b->device_bytes);
}

/* Each group's fastest fitting plan: the band the tie of rule 6 is measured from. */
static void set_bands(mp_search_result *r)
{
    double best[NGROUPS] = {0};
    for (size_t i = 0; i < r->n; i++) {
        const mp_candidate *k = &r->cands[i];
        if (k->fits && k->tokens_per_s > best[k->group]) best[k->group] = k->tokens_per_s;
    }
    for (size_t i = 0; i < r->n; i++) r->cands[i].band_best = best[r->cands[i].group];
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

/* A stable merge sort of the indices ord[0..n) by cmp_cand over c (tmp: room
 * for n more): the order glibc's qsort (a stable merge sort) gave, with each
 * comparison reading the candidates' own keys, and no plan moved. */
static void sort_ranked(const mp_candidate *c, size_t *ord, size_t *tmp, size_t n)
{
    size_t *from = ord, *to = tmp;
    for (size_t w = 1; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) to[k++] = cmp_cand(&c[from[j]], &c[from[i]]) < 0 ? from[j++] : from[i++];
            while (i < mid) to[k++] = from[i++];
            while (j < hi) to[k++] = from[j++];
        }
        size_t *t = from;
        from = to, to = t;
    }
    if (from != ord) memcpy(ord, from, n * sizeof *ord);
}

/* ---------- the space ----------
 * An axis is a row: a setting and the values the search gives it, in the order
 * tried. One odometer walks every combination of the axes, the last turning
 * fastest: the order the candidates are made in, which the ranking keeps
 * among equals. The micro-batch is the innermost axis of all, walked apart
 * (try_batches): it is pruned, since a larger one never needs less memory. */
enum { AX_QUANT, AX_PRECISION, AX_OPTIMIZER, AX_CKPT, AX_ATTENTION, AX_CE, AX_ZERO_OFFLOAD, AX_REFERENCE, NAXES };
#define AXIS_MAX 16

typedef struct axis {
    int setting;              /* AX_*: the field it sets */
    int vals[AXIS_MAX];       /* AX_ZERO_OFFLOAD: stage * MP_NOFFLOAD + offload */
    int n;
} axis;

static void axis_set(mp_settings *s, const axis *a, int i)
{
    const int v = a->vals[i];
    switch (a->setting) {
    case AX_QUANT: s->quant = (mp_quant)v; break;
    case AX_PRECISION: s->precision = (mp_precision)v; break;
    case AX_OPTIMIZER: s->optimizer = (mp_optimizer)v; break;
    case AX_CKPT: s->checkpointing = (mp_ckpt)v; break;
    case AX_ATTENTION: s->attention = (mp_attention)v; break;
    case AX_CE: s->ce = (mp_ce)v; break;
    case AX_ZERO_OFFLOAD: s->zero = v / MP_NOFFLOAD, s->offload = (mp_offload)(v % MP_NOFFLOAD); break;
    case AX_REFERENCE: s->reference = (mp_reference)v; break;
    }
}

/* Every value of a setting the mask allows (0: all), or the pinned one. */
static void axis_range(axis *a, int setting, int pinned, int value, int count, unsigned only)
{
    a->setting = setting;
    a->n = 0;
    if (pinned) a->vals[a->n++] = value;
    else
        for (int i = 0; i < count && i < AXIS_MAX; i++)
            if (!only || (only >> i & 1)) a->vals[a->n++] = i;
}

/* Dominated twins, against the axes: a value whose twin needs the same memory
 * (an fp16 precision beside its bf16 one, a paged optimizer beside its unpaged
 * self, torchao's 8-bit AdamW beside bitsandbytes') is counted but not
 * estimated where the twin is tried in its place: the axis not pinned, the
 * search not exhaustive, and for a precision, a GPU that runs bf16. */
static int axis_twin(const axis *a, int v)
{
    switch (a->setting) {
    case AX_PRECISION: return (int)mp_precision_desc_of((mp_precision)v)->same_memory_as;
    case AX_OPTIMIZER: return (int)mp_optimizer_desc_of((mp_optimizer)v)->same_memory_as;
    default: return v;
    }
}

static unsigned axis_pin(int setting)
{
    switch (setting) {
    case AX_QUANT: return MP_PIN_QUANT;
    case AX_PRECISION: return MP_PIN_PRECISION;
    case AX_OPTIMIZER: return MP_PIN_OPTIMIZER;
    case AX_CKPT: return MP_PIN_CKPT;
    case AX_ATTENTION: return MP_PIN_ATTENTION;
    case AX_CE: return MP_PIN_CE;
    default: return MP_PIN_ZERO | MP_PIN_OFFLOAD;
    }
}

/* The search space: the tasks asked for, the axes (the quant axis is each
 * task's own), the ZeRO stage x offload pairs that make sense for the GPU
 * count, and the batches. */
typedef struct space {
    int tasks[3], ntasks;
    axis ax[NAXES];
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

static void space_zero_offload(axis *a, const mp_settings *base, unsigned pin, int64_t dp)
{
    a->setting = AX_ZERO_OFFLOAD;
    a->n = 0;
    for (int z = 0; z <= 3; z++)
        for (int off = 0; off < MP_NOFFLOAD; off++) {
            if ((pin & MP_PIN_ZERO) && z != base->zero) continue;
            if ((pin & MP_PIN_OFFLOAD) && off != (int)base->offload) continue;
            if (dp < 2 && !(pin & MP_PIN_ZERO) && !(z == 0 && off == 0) && !(z == 2 && off == 1)) continue;
            if (dp >= 2 && z == 1 && off == 0 && !(pin & MP_PIN_ZERO)) continue; /* dominated by 2 */
            if (off == MP_OFFLOAD_OPTIMIZER && z == 0) continue;
            if (off == MP_OFFLOAD_PARAMS && z != 3) continue;
            a->vals[a->n++] = z * MP_NOFFLOAD + off;
        }
}

/* The quant axis of one task: QLoRA's 4- and 8-bit bases, none otherwise. */
static void space_quant(axis *a, const mp_settings *base, unsigned pin, mp_task task)
{
    a->setting = AX_QUANT;
    a->n = 0;
    if (task != MP_TASK_QLORA) a->vals[a->n++] = MP_QUANT_NONE;
    else if (pin & MP_PIN_QUANT) a->vals[a->n++] = base->quant;
    else a->vals[a->n++] = MP_QUANT_NF4_DQ, a->vals[a->n++] = MP_QUANT_NF4, a->vals[a->n++] = MP_QUANT_INT8;
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
    space_quant(&sp->ax[AX_QUANT], base, pin, MP_TASK_FULL); /* each task sets its own */
    axis_range(&sp->ax[AX_PRECISION], AX_PRECISION, pin & MP_PIN_PRECISION, base->precision, MP_NPRECISION,
               o->only_precisions);
    axis_range(&sp->ax[AX_OPTIMIZER], AX_OPTIMIZER, pin & MP_PIN_OPTIMIZER, base->optimizer, MP_NOPTIMIZER,
               o->only_optimizers);
    axis_range(&sp->ax[AX_CKPT], AX_CKPT, pin & MP_PIN_CKPT, base->checkpointing, MP_NCKPT, 0);
    axis_range(&sp->ax[AX_ATTENTION], AX_ATTENTION, pin & MP_PIN_ATTENTION, base->attention, MP_NATTN, 0);
    axis_range(&sp->ax[AX_CE], AX_CE, pin & MP_PIN_CE, base->ce, MP_NCE, 0);
    space_zero_offload(&sp->ax[AX_ZERO_OFFLOAD], base, pin, sp->dp);
    /* a method with a reference, none given: TRL's own, or log-probabilities
     * computed before training (a flag in its config) */
    axis *ref = &sp->ax[AX_REFERENCE];
    *ref = (axis){.setting = AX_REFERENCE, .vals = {base->reference}, .n = 1};
    if (mp_method_desc_of(base->method)->reference && base->reference == MP_REF_DEFAULT)
        ref->vals[ref->n++] = MP_REF_PRECOMPUTED;
    space_batches(sp, base, o);
    return 0;
}

/* One search in progress: where candidates go, and the first invalid
 * combination's reason (reported if none is valid). */
typedef struct search_run {
    const mp_model *m;
    mp_estimate_ctx *x;       /* the model's shared facts: every estimate of the search reads them */
    const mp_gpu *gpu;
    const mp_search_opts *o;
    const space *sp;
    mp_search_result *r;
    size_t valid;
    char first_invalid[MP_ERR_LEN];
    long found;               /* opts.any_fits: the plan that fits whole, its index in r->cands; -1 none yet */
} search_run;

static bool verify(const search_run *run, mp_candidate *c);

/* Combinations not worth estimating: bf16 without hardware support unless the
 * user insists, regimes the framework does not run, and dominated twins
 * (axis_twin). Reads the precision and the optimizer alone. */
static bool skipped(const mp_settings *s, const space *sp, const mp_gpu *gpu, const mp_search_opts *o)
{
    const unsigned pin = o->pinned;
    const mp_precision_desc *pd = mp_precision_desc_of(s->precision);
    if (pd->needs_bf16 && gpu && !gpu->bf16 && !(pin & MP_PIN_PRECISION)) return true;
    /* autocast only where the stack runs it (DeepSpeed keeps 16-bit weights and masters) */
    if (pd->autocast && !settings_framework(s)->amp && !(pin & MP_PIN_PRECISION)) return true;
    /* 16-bit weights without a master copy only where the stack trains them so */
    if (mp_precision_pure16(pd) && !settings_framework(s)->pure16 && !(pin & MP_PIN_PRECISION))
        return true;
    if (o->exhaustive) return false;
    const int twinned[] = {AX_PRECISION, AX_OPTIMIZER};
    for (size_t i = 0; i < sizeof twinned / sizeof *twinned; i++) {
        const axis *a = &sp->ax[twinned[i]];
        const int v = a->setting == AX_PRECISION ? (int)s->precision : (int)s->optimizer;
        if (pin & axis_pin(a->setting)) continue;
        if (a->setting == AX_PRECISION && gpu && !gpu->bf16) continue; /* the bf16 twin does not run */
        if (axis_twin(a, v) != v) return true;
    }
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
 * budget; 0, or -1 with err when out of memory. `proto` carries what the
 * batch does not change (the task, tier, group and parts). */
static int try_batches(search_run *run, mp_settings *s, const mp_candidate *proto, char *err)
{
    const mp_search_opts *o = run->o;
    const space *sp = run->sp;
    mp_search_result *r = run->r;
    char e2[MP_ERR_LEN];
    for (int bi = 0; bi < sp->nb; bi++) {
        s->batch = sp->batches[bi];
        if (!(o->pinned & MP_PIN_ACCUM))
            s->accum = o->global_batch > 0 ? o->global_batch / (s->batch * sp->dp) : 1;
        if (!mp_settings_batch_allowed(s)) continue; /* the method's own rule on the batch (KTO, GRPO) */
        mp_estimate e;
        r->evaluated++;
        /* the screen: reserved and device as lower bounds, the allocator not
         * replayed (verify_top estimates the plans ranked first whole) */
        if (mp_estimate_screen_in(run->x, s, run->gpu, &e, e2)) { /* an invalid combination */
            if (!run->first_invalid[0]) snprintf(run->first_invalid, sizeof run->first_invalid, "%s", e2);
            break;
        }
        run->valid++;
        if (s->offload != MP_OFFLOAD_NONE && !(o->pinned & MP_PIN_OFFLOAD) &&
            e.host_offload_bytes < OFFLOAD_MIN_STATE_BYTES)
            break; /* a state too small to be worth moving, at every batch */
        mp_candidate c = *proto;
        c.s = *s;
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
        if (!c.fits) break; /* larger micro-batches need more memory still */
        r->fitting++;
        /* any_fits: the first plan that fits whole ends the search; one that
         * does not leaves the next micro-batch to try, as the screen passed it */
        if (o->any_fits && o->budget_bytes > 0 && verify(run, &r->cands[r->n - 1])) {
            run->found = (long)(r->n - 1);
            return 0;
        }
    }
    return 0;
}

/* Every combination of one task's axes, by one odometer; s carries the rest of the base. */
static int search_task(search_run *run, mp_settings *s, const mp_settings *base, mp_task task, char *err)
{
    const mp_search_opts *o = run->o;
    space *sp = (space *)run->sp;
    axis *ax = sp->ax;
    space_quant(&ax[AX_QUANT], base, o->pinned, task);
    s->lora_rank = task == MP_TASK_FULL ? 0 : (base->lora_rank > 0 ? base->lora_rank : MP_DEFAULT_LORA_RANK);
    for (int k = 0; k < NAXES; k++)
        if (ax[k].n == 0) return 0; /* an axis with no value: no combination */
    int at[NAXES] = {0};
    int from = 0;      /* the outermost axis that turned: it and those inside it are set again */
    bool skip = false; /* skipped(): of the precision and the optimizer, outer axes */
    for (;;) {
        for (int k = from; k < NAXES; k++) axis_set(s, &ax[k], at[k]);
        if (from <= AX_OPTIMIZER) skip = skipped(s, sp, run->gpu, o);
        run->r->considered += (size_t)sp->nb;
        if (!skip) {
            /* a plan the caller cannot use (one `plan --emit`'s target cannot write) is
             * no answer; no predicate reads the micro-batch, so once for all of them */
            char why[MP_ERR_LEN];
            if (o->accept && o->accept(o->accept_ctx, run->m, s, why)) {
                if (!run->first_invalid[0]) snprintf(run->first_invalid, sizeof run->first_invalid, "%s", why);
                run->r->unwritable += (size_t)sp->nb;
            } else {
                mp_candidate proto = {.task = task, .tier = mp_optimizer_desc_of(s->optimizer)->tier,
                                      .parts = parts_mask(s)};
                proto.s = *s;
                proto.group = mp_rank_group(&proto, o->prefer_speed); /* reads the task, tier and settings */
                if (try_batches(run, s, &proto, err)) return -1;
                if (run->found >= 0) return 0;
            }
        }
        /* the odometer: the last axis turns; one that comes round turns the next one out */
        int k = NAXES - 1;
        while (k >= 0 && ++at[k] == ax[k].n) at[k--] = 0;
        if (k < 0) return 0;
        from = k;
    }
}

/* The ranking as an order of indices into r->cands: bands set, sorted. */
static int rank_order(mp_search_result *r, size_t *ord, char *err)
{
    size_t *tmp = malloc((r->n + 1) * sizeof *tmp);
    if (!tmp) {
        snprintf(err, MP_ERR_LEN, "out of memory in the search");
        return -1;
    }
    set_bands(r);
    for (size_t i = 0; i < r->n; i++) ord[i] = i;
    sort_ranked(r->cands, ord, tmp, r->n);
    free(tmp);
    return 0;
}

/* The plans laid out in the order ord gives. */
static int lay_out(mp_search_result *r, const size_t *ord, char *err)
{
    mp_candidate *sorted = malloc(r->n * sizeof *sorted + 1);
    if (!sorted) {
        snprintf(err, MP_ERR_LEN, "out of memory in the search");
        return -1;
    }
    for (size_t i = 0; i < r->n; i++) sorted[i] = r->cands[ord[i]];
    free(r->cands);
    r->cands = sorted, r->cap = r->n;
    return 0;
}

/* The ranking again after verify() changed some candidates: the order
 * rank_order gives (a stable sort: equal plans keep their order), without
 * comparing every plan again nor moving the plans themselves. ord[i] is the
 * plan ranked i-th. The plans whose keys did not change (moves[j] 0) keep
 * their order; those that did (the changed ones, and the fitting plans of a
 * group whose band moved) are sorted, ties by their place, and merged in,
 * ties again by place. */
typedef struct placed {
    size_t at;                /* its place in the last ranking */
    size_t plan;              /* its index in cands */
    const mp_candidate *k;
} placed;

static int cmp_placed(const placed *a, const placed *b)
{
    int c = cmp_cand(a->k, b->k);
    return c ? c : (a->at > b->at) - (a->at < b->at);
}

static int cmp_placed_q(const void *pa, const void *pb)
{
    return cmp_placed(pa, pb);
}

static int rerank(mp_search_result *r, size_t *ord, unsigned char *moves, char *err)
{
    const size_t n = r->n;
    mp_candidate *c = r->cands;
    /* set_bands, noting the groups whose band moved */
    double best[NGROUPS] = {0};
    bool moved_band[NGROUPS] = {false};
    for (size_t j = 0; j < n; j++)
        if (c[j].fits && c[j].tokens_per_s > best[c[j].group]) best[c[j].group] = c[j].tokens_per_s;
    for (size_t j = 0; j < n; j++) {
        if (c[j].band_best != best[c[j].group]) moved_band[c[j].group] = true;
        c[j].band_best = best[c[j].group];
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
        if (c[j].fits && moved_band[c[j].group]) moves[j] = 1;
        if (moves[j]) mv[k++] = (placed){i, j, &c[j]};
    }
    qsort(mv, k, sizeof *mv, cmp_placed_q); /* a total order: any sort gives the same */
    size_t u = 0, m = 0, w = 0;
    for (;;) {
        while (u < n && moves[ord[u]]) u++;
        if (u >= n && m >= k) break;
        if (m >= k || (u < n && cmp_placed(&(placed){u, ord[u], &c[ord[u]]}, &mv[m]) < 0)) out[w++] = ord[u++];
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
    if (mp_estimate_whole_in(run->x, &c->s, run->gpu, &e, err)) return true; /* the screen estimated it */
    candidate_figures(c, &e);
    if (mp_fits(&e, run->o->budget_bytes, run->o->headroom)) return true;
    c->fits = false;
    run->r->fitting--;
    return false;
}

/* Verify the plans that decide the ranking, the ranking made again after each
 * that drops; ord is the ranking and ends as the last one. */
static int verify_top(const search_run *run, mp_search_result *r, size_t *ord, char *err)
{
    const size_t n = r->n;
    mp_candidate *c = r->cands;
    unsigned char *moves = calloc(n + 1, 1);
    if (!moves) {
        snprintf(err, MP_ERR_LEN, "out of memory in the search");
        return -1;
    }
    int rc = 0;
    for (;;) {
        bool dropped = false;
        size_t setter[NGROUPS];
        for (int g = 0; g < NGROUPS; g++) setter[g] = n;
        for (size_t i = 0; i < n; i++) {
            const mp_candidate *k = &c[ord[i]];
            int g = k->group;
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
        if ((rc = rerank(r, ord, moves, err))) break;
    }
    free(moves);
    return rc;
}

/* ---------- the best plan alone (opts.best_only) ----------
 * A table cell reads only the plan verify_top ranks first. Its replays decide
 * that plan only in part: a plan verified and still fitting keeps the place
 * its screen gave it until the next drop re-ranks (its whole figures count
 * only from then on), so the first plan depends on which replays drop and
 * when, not only on the plans near the top. best_run() walks verify_top's own
 * rounds with the same ranking and reranks, replaying (resolve) what the top
 * group's ranking reads, and speculates that the rest stand:
 *  - the lowest group with a fitting plan ("top"): its setter, and the window
 *    plans whose rule-6/7 prefix (speed tie, speed, moving parts) equals the
 *    window's first: the plans that can be first ("T"), always replayed;
 *  - a setter of a higher group: speculated to stand. Its drop would only
 *    re-rank: nothing of top waits to be re-placed at a round's start, so it
 *    matters only in a setter round where top's setter was just verified
 *    (best_search tries that drop too, and replays when the two differ), or
 *    once top's setter changes after a window (then all are replayed), or if
 *    its group becomes top (replayed);
 *  - a window plan after T (a larger prefix, or another group): speculated to
 *    stand. All of T come first in the window, so these are met only in the
 *    last round, and a drop among them would re-rank with T's plans placed by
 *    their whole figures: the first plan is then the first under those keys.
 *    Replayed, in order, only when that plan differs from the speculated one.
 * A speculation that turns out wrong is replayed and the walk made again with
 * it known; a case outside these (a speculated plan before the last round)
 * falls back to verify_top. Every plan replayed is one verify_top replays. */

enum { UNKNOWN, STANDS, DROPS };

typedef struct fig {
    double device_bytes, total_bytes, host_bytes, trainable, tokens_per_s, offloaded_bytes, host_node_bytes;
    double at_peak[MP_NCOMP];
} fig;

typedef struct spec_event {
    size_t plan;
    int round;
    bool higher;              /* a higher group's setter, else a window plan after T */
    bool top_waiting;         /* higher: a plan of top verified earlier in the same setter round */
} spec_event;

typedef struct best_state {
    const search_run *run;
    size_t n;
    mp_candidate *c;          /* the plans as the walk leaves them */
    const mp_candidate *orig; /* as screened and first ranked */
    const size_t *ord0;
    size_t *ord;
    unsigned char *moves;
    unsigned char *known;     /* UNKNOWN, STANDS, DROPS */
    unsigned char *same;      /* STANDS with the screen's figures: the whole estimate refused it */
    fig *f;                   /* the whole figures of the plans known */
    spec_event *ev;
    size_t nev;
    /* what a walk changed, for the next to put back from orig: the plans it
     * verified (apply_known, speculate) and every plan's band (rerank); the
     * rest stay as screened, not copied again (a plan is hundreds of bytes) */
    size_t *dirty;
    size_t ndirty;
    unsigned char *is_dirty;
    bool walked;
} best_state;

static inline void mark_dirty(best_state *b, size_t j)
{
    if (!b->is_dirty[j]) b->is_dirty[j] = 1, b->dirty[b->ndirty++] = j;
}

/* Replay plan j (verify() without touching the plans): known from then on. */
static void resolve(best_state *b, size_t j)
{
    if (b->known[j] != UNKNOWN) return;
    const search_run *run = b->run;
    mp_estimate e;
    char err[MP_ERR_LEN];
    if (mp_estimate_whole_in(run->x, &b->orig[j].s, run->gpu, &e, err)) {
        b->known[j] = STANDS, b->same[j] = 1;
        return;
    }
    fig *f = &b->f[j];
    f->device_bytes = e.device_bytes, f->total_bytes = e.total_bytes, f->host_bytes = e.host_bytes;
    f->trainable = e.trainable_params, f->tokens_per_s = e.tokens_per_s;
    f->offloaded_bytes = e.host_offload_bytes, f->host_node_bytes = e.host_node_bytes;
    memcpy(f->at_peak, e.at_peak, sizeof f->at_peak);
    b->known[j] = mp_fits(&e, run->o->budget_bytes, run->o->headroom) ? STANDS : DROPS;
}

/* verify() from what is known of plan j: false when it drops. */
static bool apply_known(best_state *b, size_t j)
{
    mp_candidate *c = &b->c[j];
    mark_dirty(b, j);
    c->verified = true;
    if (b->same[j]) return true;
    const fig *f = &b->f[j];
    c->device_bytes = f->device_bytes, c->total_bytes = f->total_bytes, c->host_bytes = f->host_bytes;
    c->trainable = f->trainable, c->tokens_per_s = f->tokens_per_s;
    c->offloaded_bytes = f->offloaded_bytes, c->host_node_bytes = f->host_node_bytes;
    memcpy(c->at_peak, f->at_peak, sizeof c->at_peak);
    if (b->known[j] == STANDS) return true;
    c->fits = false;
    return false;
}

/* Rules 6 and 7 before the footprint, within one group: what decides whether
 * a plan can be ranked first. */
static int cmp_prefix(const mp_candidate *a, const mp_candidate *b)
{
    bool ta = speed_tied(a), tb = speed_tied(b);
    if (ta != tb) return ta ? -1 : 1;
    if (!ta && a->tokens_per_s != b->tokens_per_s) return a->tokens_per_s > b->tokens_per_s ? -1 : 1;
    if (a->parts != b->parts) return a->parts < b->parts ? -1 : 1;
    return 0;
}

static void speculate(best_state *b, size_t j, int round, bool higher, bool top_waiting)
{
    mark_dirty(b, j);
    b->c[j].verified = true; /* it stands, its screen's figures kept */
    b->ev[b->nev++] = (spec_event){j, round, higher, top_waiting};
}

/* One walk of verify_top's rounds (force_round >= 0: re-rank after that round's
 * setters, as a higher setter's drop would). Returns the number of rounds
 * (the last one's index + 1), -1 to fall back to verify_top, -2 out of memory. */
static int best_walk(best_state *b, int force_round, bool *top_setter_late, char *err)
{
    const size_t n = b->n;
    mp_candidate *c = b->c;
    if (!b->walked) {
        memcpy(c, b->orig, n * sizeof *c);
        b->walked = true;
    } else {
        for (size_t i = 0; i < b->ndirty; i++) c[b->dirty[i]] = b->orig[b->dirty[i]], b->is_dirty[b->dirty[i]] = 0;
        for (size_t j = 0; j < n; j++) c[j].band_best = b->orig[j].band_best;
    }
    b->ndirty = 0;
    memcpy(b->ord, b->ord0, n * sizeof *b->ord);
    memset(b->moves, 0, n);
    b->nev = 0;
    *top_setter_late = false;
    bool window_seen = false;
    for (int round = 0;; round++) {
        size_t setter[NGROUPS];
        for (int g = 0; g < NGROUPS; g++) setter[g] = n;
        for (size_t i = 0; i < n; i++) {
            const mp_candidate *k = &c[b->ord[i]];
            int g = k->group;
            if (k->fits && (setter[g] == n || k->tokens_per_s > c[b->ord[setter[g]]].tokens_per_s)) setter[g] = i;
        }
        int top = 0;
        while (top < NGROUPS && setter[top] == n) top++;
        if (top == NGROUPS) return round + 1; /* nothing fits */
        bool dropped = false, top_waiting = false;
        for (int g = top; g < NGROUPS && !dropped; g++) {
            if (setter[g] == n || c[b->ord[setter[g]]].verified) continue;
            size_t j = b->ord[setter[g]];
            b->moves[j] = 1;
            if (g == top) {
                if (window_seen) *top_setter_late = true;
                resolve(b, j);
                dropped = !apply_known(b, j);
                top_waiting = !dropped;
            } else if (b->known[j] != UNKNOWN) {
                dropped = !apply_known(b, j);
            } else {
                speculate(b, j, round, true, top_waiting);
            }
        }
        if (!dropped && round == force_round) dropped = true; /* a higher setter's drop: re-rank */
        if (!dropped) {
            window_seen = true;
            const mp_candidate *first = NULL;
            int stood = 0;
            for (size_t i = 0; i < n && stood < VERIFIED_TOP && !dropped && c[b->ord[i]].fits; i++, stood++) {
                size_t j = b->ord[i];
                if (!first) first = &c[j];
                if (c[j].verified) continue;
                b->moves[j] = 1;
                bool in_t = &c[j] == first || (c[j].group == top && cmp_prefix(&c[j], first) == 0);
                if (in_t || b->known[j] != UNKNOWN) {
                    if (in_t) resolve(b, j);
                    dropped = !apply_known(b, j);
                } else {
                    speculate(b, j, round, false, false);
                }
            }
        }
        if (!dropped) return round + 1;
        if (rerank(&(mp_search_result){.cands = c, .n = n}, b->ord, b->moves, err)) return -2;
    }
}

/* The first plan after a re-rank that places every plan verified since the
 * last one by its figures now: the least under cmp_cand, ties by place. */
static size_t first_if_reranked(const best_state *b)
{
    size_t best = b->n;
    for (size_t i = 0; i < b->n; i++) {
        const mp_candidate *k = &b->c[b->ord[i]];
        if (!k->fits) continue;
        if (best == b->n || cmp_cand(k, &b->c[b->ord[best]]) < 0) best = i;
    }
    return best < b->n ? b->ord[best] : b->ord[0];
}

/* The outcome of one walk: the first plan if the window plans speculated
 * stand (*opt) and if one of them drops (*flush); false if the walk must be
 * made again (a speculation was replayed and found wrong) or fall back (*fall). */
typedef struct walk_outcome {
    int rounds;
    size_t opt, flush;
    bool top_setter_late;
} walk_outcome;

static int walk_once(best_state *b, int force_round, walk_outcome *w, char *err)
{
    w->rounds = best_walk(b, force_round, &w->top_setter_late, err);
    if (w->rounds < 0) return w->rounds;
    w->opt = b->ord[0];
    w->flush = w->opt;
    bool window_spec = false;
    for (size_t e = 0; e < b->nev; e++) {
        if (b->ev[e].higher) continue;
        if (b->ev[e].round != w->rounds - 1) return -1; /* a window speculation before the last round */
        window_spec = true;
    }
    if (window_spec) w->flush = first_if_reranked(b);
    return 0;
}

/* Replay the speculations of one kind (of one round, >= 0; in groups up to
 * `upto`, >= 0); the window's stop at the first that drops, as verify_top
 * would. 0 when none was left to replay, else the walk must be made again. */
static int resolve_events(best_state *b, bool higher, int round, int upto)
{
    int replayed = 0;
    for (size_t e = 0; e < b->nev; e++) {
        const spec_event *v = &b->ev[e];
        if (v->higher != higher || (round >= 0 && v->round != round)) continue;
        if (upto >= 0 && b->c[v->plan].group > upto) continue;
        if (b->known[v->plan] != UNKNOWN) continue;
        resolve(b, v->plan);
        replayed = 1;
        if (!higher && b->known[v->plan] == DROPS) break;
    }
    return replayed;
}

/* Whether the first plans of the walks tried all agree. */
static bool agree(const size_t *a, int n)
{
    for (int i = 1; i < n; i++)
        if (a[i] != a[0]) return false;
    return true;
}

/* verify_top's first plan with the fewest replays: its index into b->c as the
 * last walk leaves them, or -1 to fall back to verify_top, -2 out of memory.
 * Each pass walks once with what is known, and replays what its answer still
 * depends on; a replay makes it walk again. */
static long best_search(best_state *b, char *err)
{
    for (int tries = 0; tries < 64; tries++) {
        walk_outcome w;
        int rc = walk_once(b, -1, &w, err);
        if (rc) return rc;
        /* higher setters the first plan reads: those of the group that became
         * top (its setter is the band), all once nothing fits or top's setter
         * changed after a window */
        const mp_candidate *first = &b->c[w.opt];
        const int top = first->fits && !w.top_setter_late ? first->group : NGROUPS;
        if (resolve_events(b, true, -1, top)) continue;
        /* a higher setter speculated in a setter round where top's setter was just
         * verified: its drop would re-place that setter by its whole figures */
        int waiting = -1, rounds = 0;
        for (size_t e = 0; e < b->nev; e++) {
            const spec_event *v = &b->ev[e];
            if (v->higher && v->top_waiting && b->known[v->plan] == UNKNOWN && v->round != waiting)
                waiting = v->round, rounds++;
        }
        if (rounds > 1) {
            resolve_events(b, true, -1, -1);
            continue;
        }
        if (rounds == 1) {
            walk_outcome f;
            rc = walk_once(b, waiting, &f, err);
            if (rc == -2) return rc;
            size_t answers[4] = {w.opt, w.flush, f.opt, f.flush};
            if (rc || !agree(answers, 4)) {
                resolve_events(b, true, waiting, -1);
                continue;
            }
            if ((rc = walk_once(b, -1, &w, err))) return rc; /* the plans as the main walk leaves them */
            return (long)w.opt;
        }
        if (w.opt == w.flush) return (long)w.opt;
        /* the first plan depends on whether a window speculation drops: replay them in
         * order; if none drops the speculation was the walk verify_top makes */
        for (size_t e = 0; e < b->nev; e++) {
            const spec_event *v = &b->ev[e];
            if (v->higher) continue;
            resolve(b, v->plan);
            if (b->known[v->plan] == DROPS) break;
        }
        bool any_drop = false;
        for (size_t e = 0; e < b->nev; e++)
            if (!b->ev[e].higher && b->known[b->ev[e].plan] == DROPS) any_drop = true;
        if (any_drop) continue;
        return (long)w.opt;
    }
    return -1;
}

/* The first plan of least device_bytes in r->cands as ranked (memplan table
 * remembers it per model). */
static void note_least(mp_search_result *r)
{
    size_t k = 0;
    for (size_t i = 1; i < r->n; i++)
        if (r->cands[i].device_bytes < r->cands[k].device_bytes) k = i;
    if (r->n) r->least = r->cands[k];
}

/* verify_top and the ranking laid out, then the best plan alone. */
static int best_by_verify_top(const search_run *run, mp_search_result *r, size_t *ord, char *err)
{
    if (verify_top(run, r, ord, err) || lay_out(r, ord, err)) return -1;
    note_least(r);
    if (r->n) r->n = 1;
    return 0;
}

/* opts.best_only: r->cands becomes the best plan alone, as verify_top would
 * rank it first, and r->least as its ranking would give it. */
static int best_only(const search_run *run, mp_search_result *r, size_t *ord, char *err)
{
    const size_t n = r->n;
    /* the least: a plan that never fits is never replayed, and when its screen
     * is below every other plan's, no whole figure can come below it; else
     * verify_top decides which plans it replays */
    size_t least = n;
    if (run->o->want_least && n) {
        size_t k = 0;
        bool alone = true;
        for (size_t i = 1; i < n; i++) {
            if (r->cands[i].device_bytes < r->cands[k].device_bytes) k = i, alone = true;
            else if (!(r->cands[i].device_bytes > r->cands[k].device_bytes)) alone = false;
        }
        if (!alone || r->cands[k].fits) return best_by_verify_top(run, r, ord, err);
        least = k;
    }
    best_state b = {.run = run, .n = n, .c = r->cands, .ord = ord};
    mp_candidate *orig = malloc(n * sizeof *orig + 1);
    size_t *ord0 = malloc(n * sizeof *ord0 + 1);
    b.moves = calloc(n + 1, 1), b.known = calloc(n + 1, 1), b.same = calloc(n + 1, 1);
    b.f = malloc((n + 1) * sizeof *b.f), b.ev = malloc((n + 1) * sizeof *b.ev);
    b.dirty = malloc((n + 1) * sizeof *b.dirty), b.is_dirty = calloc(n + 1, 1);
    long k = -2;
    if (orig && ord0 && b.moves && b.known && b.same && b.f && b.ev && b.dirty && b.is_dirty) {
        memcpy(orig, r->cands, n * sizeof *orig);
        memcpy(ord0, ord, n * sizeof *ord0);
        b.orig = orig, b.ord0 = ord0;
        k = best_search(&b, err);
        if (k == -1) { /* verify_top, from the first ranking */
            memcpy(r->cands, orig, n * sizeof *orig);
            memcpy(ord, ord0, n * sizeof *ord0);
        }
    } else {
        snprintf(err, MP_ERR_LEN, "out of memory in the search");
    }
    free(orig), free(ord0), free(b.moves), free(b.known), free(b.same), free(b.f), free(b.ev);
    free(b.dirty), free(b.is_dirty);
    if (k == -2) return -1;
    if (k == -1) return best_by_verify_top(run, r, ord, err);
    if (least < n) r->least = r->cands[least];
    r->cands[0] = r->cands[k];
    r->n = 1;
    return 0;
}

int mp_search(const mp_model *m, const mp_settings *base, const mp_gpu *gpu,
              const mp_search_opts *o, mp_search_result *r, char *err)
{
    memset(r, 0, sizeof *r);
    space sp;
    if (space_build(&sp, base, o, err)) return -1;
    search_run run = {.m = m, .x = o->ctx ? o->ctx : mp_estimate_ctx_new(m), .gpu = gpu, .o = o, .sp = &sp, .r = r,
                      .found = -1};
    if (!run.x) {
        snprintf(err, MP_ERR_LEN, "out of memory in the search");
        return -1;
    }
    mp_settings s = *base;
    int rc = 0;
    for (int ti = 0; ti < sp.ntasks && !rc && run.found < 0; ti++)
        rc = search_task(&run, &s, base, (mp_task)sp.tasks[ti], err);
    if (!rc && !run.valid) {
        /* what the user pinned rules out every combination: say why */
        snprintf(err, MP_ERR_LEN, "%s", run.first_invalid[0] ? run.first_invalid : "no valid combination");
        rc = -1;
    }
    if (!rc && o->any_fits && o->budget_bytes > 0) { /* a plan that fits, or the least memory of all */
        size_t k = 0;
        for (size_t i = 1; i < r->n && run.found < 0; i++)
            if (r->cands[i].device_bytes < r->cands[k].device_bytes) k = i;
        if (r->n) r->cands[0] = r->cands[run.found >= 0 ? (size_t)run.found : k], r->n = 1;
        if (o->ctx != run.x) mp_estimate_ctx_free(run.x);
        return 0;
    }
    size_t *ord = rc ? NULL : malloc((r->n + 1) * sizeof *ord);
    if (!rc && !ord) snprintf(err, MP_ERR_LEN, "out of memory in the search"), rc = -1;
    if (!rc) rc = rank_order(r, ord, err);
    if (!rc && o->best_only && o->budget_bytes > 0) {
        rc = best_only(&run, r, ord, err);
    } else {
        if (!rc && o->budget_bytes > 0) rc = verify_top(&run, r, ord, err);
        if (!rc) rc = lay_out(r, ord, err);
        if (!rc) note_least(r);
    }
    free(ord);
    if (run.x != o->ctx) mp_estimate_ctx_free(run.x);
    return rc;
}

void mp_search_free(mp_search_result *r)
{
    if (!r) return;
    free(r->cands);
    memset(r, 0, sizeof *r);
}

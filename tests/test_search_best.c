/* test_search_best.c — opts.best_only (memplan table's searches) picks the plan a
 * whole search ranks first, figure for figure, and the same least-memory plan,
 * while replaying no more than the whole search: over the searches a table
 * makes (each task, the AdamW-class tier or all, one GPU or ZeRO-3 over 2^k),
 * model profiles x GPU profiles. MEMPLAN_TEST_ALL=1: every model and GPU profile
 * (minutes); else a spread of them. */
#include "check.h"
#include "common/errors.h"
#include "model/model.h"
#include "profiles/profiles.h"
#include "search/search.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"
#include "estimate/estimate.h"
#include "estimate/reserve.h"

#include <stdlib.h>
#include <string.h>

static bool same_plan(const mp_candidate *a, const mp_candidate *b)
{
    const mp_settings *x = &a->s, *y = &b->s;
    return a->fits == b->fits && a->task == b->task && a->device_bytes == b->device_bytes &&
           a->total_bytes == b->total_bytes && a->tokens_per_s == b->tokens_per_s &&
           a->host_bytes == b->host_bytes && a->verified == b->verified &&
           !memcmp(a->at_peak, b->at_peak, sizeof a->at_peak) && x->precision == y->precision &&
           x->optimizer == y->optimizer && x->checkpointing == y->checkpointing && x->attention == y->attention &&
           x->ce == y->ce && x->batch == y->batch && x->accum == y->accum && x->lora_rank == y->lora_rank &&
           x->quant == y->quant && x->zero == y->zero && x->offload == y->offload && x->gpus == y->gpus;
}

static int compared, differed, least_compared, any_compared, any_differed;

/* opts.any_fits: the same verdict as the whole search, and a plan that fits
 * is one that fits estimated whole (its figures the whole estimate's). */
static void any_fits(const mp_model *m, const mp_settings *base, const mp_gpu *g, mp_search_opts o, int rw,
                     const mp_search_result *whole, const char *err)
{
    char e2[MP_ERR_LEN];
    mp_search_result any;
    o.best_only = false, o.want_least = false, o.any_fits = true;
    int ra = mp_search(m, base, g, &o, &any, e2);
    bool ok = ra == rw && (rw ? !strcmp(err, e2) : any.n == 1);
    if (ok && !rw) {
        const mp_candidate *k = &any.cands[0];
        ok = k->fits == (whole->n && whole->cands[0].fits);
        if (ok && k->fits) {
            mp_estimate e;
            ok = k->verified && !mp_estimate_run(m, &k->s, g, &e, e2) && e.device_bytes == k->device_bytes &&
                 mp_fits(&e, o.budget_bytes, o.headroom);
        }
    }
    any_compared++;
    if (!ok && ++any_differed <= 10)
        CHECK(0, "%s on %s, %s, %lld GPUs: the any-fits search says otherwise than the whole search", m->name,
              g->name, mp_task_name(o.task), (long long)base->gpus);
    if (!ra) mp_search_free(&any);
}

static void one(const mp_model *m, const mp_gpu *g, mp_task t, bool tier0, int level, bool speed)
{
    char err[MP_ERR_LEN], e2[MP_ERR_LEN];
    mp_settings base;
    mp_settings_default(&base, m);
    base.seq = mp_default_seq(m);
    mp_search_opts o = {.task = t, .pinned = MP_PIN_SEQ, .budget_bytes = g->mem_bytes, .headroom = 0.1,
                        .prefer_speed = speed};
    if (level > 0) {
        base.gpus = (int64_t)1 << level, base.zero = 3, base.offload = MP_OFFLOAD_NONE;
        o.pinned |= MP_PIN_GPUS | MP_PIN_ZERO | MP_PIN_OFFLOAD;
    }
    if (tier0)
        for (int i = 0; i < MP_NOPTIMIZER; i++)
            if (mp_optimizer_desc_of((mp_optimizer)i)->tier == 0) o.only_optimizers |= 1u << i;
    mp_search_result whole, best;
    int rw = mp_search(m, &base, g, &o, &whole, err);
    if (!tier0 && !speed) any_fits(m, &base, g, o, rw, &whole, err);
    o.best_only = true;
    for (int want = 0; want < 2; want++) {
        o.want_least = want;
        int rb = mp_search(m, &base, g, &o, &best, e2);
        bool ok = rw == rb && (rw || (whole.n > 0) == (best.n > 0));
        if (ok && !rw && whole.n) ok = same_plan(&whole.cands[0], &best.cands[0]);
        if (ok && !rw && whole.n && want) ok = same_plan(&whole.least, &best.least), least_compared++;
        if (ok && rw) ok = !strcmp(err, e2);
        compared++;
        if (!ok) {
            differed++;
            if (differed <= 10)
                CHECK(0, "%s on %s, %s%s, level %d%s%s: the best-only search picks another plan", m->name,
                      g->name, mp_task_name(t), tier0 ? " (AdamW-class)" : "", level, speed ? ", speed" : "",
                      want ? ", with the least" : "");
        }
        if (!rb) mp_search_free(&best);
    }
    if (!rw) mp_search_free(&whole);
}

int main(void)
{
    const bool all = getenv("MEMPLAN_TEST_ALL") != NULL;
    const char *models[] = {"gpt2", "gpt2-xl", "llama-3.2-1b", "llama-2-7b", "mistral-7b", "qwen2.5-14b",
                            "gemma-2-9b", "phi-2", "mixtral-8x7b", "llama-2-70b", "deepseek-moe-16b", "falcon-7b"};
    const char *gpus[] = {"rtx3060-12g", "t4", "v100-16g", "rtx4090", "a10g", "l40s", "a100-40g", "a100-80g",
                          "h100-80g", "8GB"};
    int nm = all ? 0 : (int)(sizeof models / sizeof *models), ng = all ? 0 : (int)(sizeof gpus / sizeof *gpus);
    if (all) {
        while (mp_model_at(nm)) nm++;
        while (mp_gpu_at(ng)) ng++;
    }
    char err[MP_ERR_LEN];
    for (int i = 0; i < nm; i++) {
        mp_model m;
        if (all) m = *mp_model_at(i);
        else if (mp_model_lookup(models[i], &m, err)) {
            CHECK(0, "model %s: %s", models[i], err);
            continue;
        }
        for (int k = 0; k < ng; k++) {
            mp_gpu g;
            if (all) g = *mp_gpu_at(k);
            else if (mp_gpu_lookup(gpus[k], &g, err)) {
                CHECK(0, "gpu %s: %s", gpus[k], err);
                continue;
            }
            for (int t = MP_TASK_FULL; t <= MP_TASK_QLORA; t++)
                for (int tier0 = 1; tier0 >= 0; tier0--) one(&m, &g, (mp_task)t, tier0, 0, false);
            one(&m, &g, MP_TASK_ANY, false, 0, true);
            for (int level = 1; level <= (all ? 6 : 3); level++) one(&m, &g, MP_TASK_FULL, true, level, false);
        }
    }
    CHECK(differed == 0, "best-only searches pick the whole search's first plan: %d of %d (%d least-memory plans)",
          compared - differed, compared, least_compared);
    CHECK(any_differed == 0, "any-fits searches agree with the whole search: %d of %d", any_compared - any_differed,
          any_compared);
    printf("%d passed, %d failed\n", check_passed, check_failed);
    return check_failed ? 1 : 0;
}

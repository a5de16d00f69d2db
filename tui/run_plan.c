/* run_plan.c — a memtrain run's plan from its metrics header (see run_plan.h).
 * memtrain writes its model's shape and its settings on the "# settings:"
 * line; the plan is the one memtrain itself predicts from (trainer/memtrain.c
 * predict): the memtrain framework profile, one rank's share of the run. */
#include "run_plan.h"
#include "common/errors.h"
#include "memtrain/shape.h"
#include "model/model.h"
#include "profiles/profiles.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An integer key of the header, a whole number up to `max` read without
 * overflow or truncation; `need`: its absence is an error. */
static int header_int(const mtop_meta *meta, const char *key, bool need, int64_t max, int64_t *out, char *err)
{
    const char *v = mtop_meta_setting(meta, key);
    if (!v) {
        if (need) snprintf(err, MP_ERR_LEN, "the run's header has no '%s' (written by an older memtrain?): no what-if "
                           "for it", key);
        return need ? -1 : 0;
    }
    if (!mtop_parse_count(v, 0, max, out)) {
        char q[48];
        snprintf(err, MP_ERR_LEN, "the run's header has %s '%s', not a count (0 to %lld)", key, mp_quote(v, q, sizeof q),
                 (long long)max);
        return -1;
    }
    return 0;
}
/* a model's dimension or a setting's count: large enough for any real one, small enough that no product of
 * two overflows the planner's int64 arithmetic */
#define DIM_MAX ((int64_t)1 << 31)

/* A setting named by its vocabulary value (precision=fp32); absent: unchanged. */
#define HEADER_VALUE(key, parse, field)                                                          \
    do {                                                                                       \
        const char *v_ = mtop_meta_setting(meta, key);                                         \
        if (v_ && parse(v_, &(field))) {                                                       \
            char q_[48];                                                                       \
            snprintf(err, MP_ERR_LEN, "the run's header has %s '%s', unknown to memplan", key,        \
                     mp_quote(v_, q_, sizeof q_));                                                  \
            return -1;                                                                          \
        }                                                                                      \
    } while (0)

static int run_model(const mtop_meta *meta, mp_model *m, char *err)
{
    const char *family = mtop_meta_setting(meta, "family");
    if (!family) {
        snprintf(err, MP_ERR_LEN, "the run's header has no 'family': no what-if for it");
        return -1;
    }
    memset(m, 0, sizeof *m);
    int64_t tied = !strcmp(family, "gpt2"), seq = 1024;
    if (header_int(meta, "layers", true, DIM_MAX, &m->layers, err) ||
        header_int(meta, "hidden", true, DIM_MAX, &m->hidden, err) ||
        header_int(meta, "heads", true, DIM_MAX, &m->heads, err) ||
        header_int(meta, "vocab", true, DIM_MAX, &m->vocab, err) ||
        header_int(meta, "kv-heads", false, DIM_MAX, &m->kv_heads, err) ||
        header_int(meta, "ffn", false, DIM_MAX, &m->ffn, err) ||
        header_int(meta, "max-pos", false, DIM_MAX, &m->max_pos, err) ||
        header_int(meta, "tied", false, 1, &tied, err) || header_int(meta, "seq", false, DIM_MAX, &seq, err))
        return -1;
    if (mp_memtrain_model(m, strcmp(family, "gpt2") ? "llama" : "gpt2", tied != 0, seq, err)) return -1;
    snprintf(m->source, sizeof m->source, "the run's metrics header");
    return 0;
}

int mtop_plan_of_run(const mtop_meta *meta, mp_model *m, mp_settings *s, char *err)
{
    if (run_model(meta, m, err)) return -1;
    mp_settings_default(s, m);
    if (!(s->framework = mp_framework_find("memtrain", err))) return -1;
    int64_t batch = 1, accum = 1, seq = s->seq, rank = 0, chunk = s->ce_chunk, ranks = 1, zero = 0;
    if (header_int(meta, "batch", false, DIM_MAX, &batch, err) || header_int(meta, "accum", false, DIM_MAX, &accum, err) ||
        header_int(meta, "seq", false, DIM_MAX, &seq, err) || header_int(meta, "lora-rank", false, DIM_MAX, &rank, err) ||
        header_int(meta, "ce-chunk", false, DIM_MAX, &chunk, err) ||
        header_int(meta, "ranks", false, DIM_MAX, &ranks, err) ||
        header_int(meta, "zero", false, 3, &zero, err)) /* checked before it becomes an int: never truncated */
        return -1;
    s->batch = batch, s->accum = accum, s->seq = seq, s->lora_rank = rank, s->ce_chunk = chunk;
    s->gpus = ranks, s->zero = (int)zero;
    HEADER_VALUE("precision", mp_precision_parse, s->precision);
    HEADER_VALUE("optimizer", mp_optimizer_parse, s->optimizer);
    HEADER_VALUE("checkpointing", mp_ckpt_parse, s->checkpointing);
    HEADER_VALUE("attention", mp_attention_parse, s->attention);
    HEADER_VALUE("ce", mp_ce_parse, s->ce);
    HEADER_VALUE("quant", mp_quant_parse, s->quant);
    HEADER_VALUE("loader", mp_loader_parse, s->loader);
    const char *targets = mtop_meta_setting(meta, "lora-targets");
    if (targets && mp_lora_targets_parse(targets, &s->lora_targets)) {
        char q[48];
        snprintf(err, MP_ERR_LEN, "the run's header has lora-targets '%s', unknown to memplan",
                 mp_quote(targets, q, sizeof q));
        return -1;
    }
    return mp_settings_check(m, s, err);
}

/* run_plan.c — a memtrain run's plan from its metrics header (see run_plan.h).
 * memtrain writes its model's shape and its settings on the "# settings:"
 * line; the plan is the one memtrain itself predicts from (trainer/memtrain.c
 * predict): the memtrain framework profile, one rank's share of the run. */
#include "run_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An integer key of the header; `need`: its absence is an error. */
static int header_int(const mtop_meta *meta, const char *key, bool need, int64_t *out, char *err)
{
    const char *v = mtop_meta_setting(meta, key);
    if (!v) {
        if (need) snprintf(err, MP_ERR_LEN, "the run's header has no '%s' (written by an older memtrain?): no what-if "
                           "for it", key);
        return need ? -1 : 0;
    }
    char *end;
    long long x = strtoll(v, &end, 10);
    if (end == v || *end || x < 0) {
        snprintf(err, MP_ERR_LEN, "the run's header has %s '%.40s', not a count", key, v);
        return -1;
    }
    *out = x;
    return 0;
}

/* A setting named by its vocabulary value (precision=fp32); absent: unchanged. */
#define HEADER_VALUE(key, parse, field)                                                          \
    do {                                                                                       \
        const char *v_ = mtop_meta_setting(meta, key);                                         \
        if (v_ && parse(v_, &(field))) {                                                       \
            snprintf(err, MP_ERR_LEN, "the run's header has %s '%.40s', unknown to memplan", key, v_); \
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
    if (header_int(meta, "layers", true, &m->layers, err) || header_int(meta, "hidden", true, &m->hidden, err) ||
        header_int(meta, "heads", true, &m->heads, err) || header_int(meta, "vocab", true, &m->vocab, err) ||
        header_int(meta, "kv-heads", false, &m->kv_heads, err) || header_int(meta, "ffn", false, &m->ffn, err) ||
        header_int(meta, "max-pos", false, &m->max_pos, err) || header_int(meta, "tied", false, &tied, err) ||
        header_int(meta, "seq", false, &seq, err))
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
    if (header_int(meta, "batch", false, &batch, err) || header_int(meta, "accum", false, &accum, err) ||
        header_int(meta, "seq", false, &seq, err) || header_int(meta, "lora-rank", false, &rank, err) ||
        header_int(meta, "ce-chunk", false, &chunk, err) || header_int(meta, "ranks", false, &ranks, err) ||
        header_int(meta, "zero", false, &zero, err))
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
        snprintf(err, MP_ERR_LEN, "the run's header has lora-targets '%.40s', unknown to memplan", targets);
        return -1;
    }
    return mp_settings_check(m, s, err);
}

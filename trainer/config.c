/*
 * config.c — defaults, validation and names for mt_config.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "model/model.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"
#include "memtrain/memtrain_inventory.h"
#include "memtrain/memtrain_keys.h"
#include "memtrain/shape.h"
#include "common/errors.h"
#include "estimate/memtrain_model.h"

void mt_config_default(mt_config *c)
{
    memset(c, 0, sizeof *c);
    /* the planner's defaults, then memtrain's own (one statement, memplan check reads it too) */
    memtrain_defaults(&c->shape, &c->s);
    c->rank = 0, c->ranks = 1;
    c->own.steps = 20;
    c->own.overlap = 1;
    c->own.opt = (mt_opt_hparams){.lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .weight_decay = 0.0f,
                                  .momentum = 0.9f};
    c->own.loss_scale = 65536.0f;
    c->own.loss_scale_window = 2000;
    c->own.seed = 1337;
    c->own.init_std = 0.02f;
    c->own.beta = 0.1f;
    c->own.cpo_alpha = 1.0f;
    c->own.simpo_gamma = 0.5f;
}

size_t mt_config_rows(const mt_config *c)
{
    return (size_t)c->s.batch * (size_t)mp_method_desc_of(c->s.method)->rows_per_example;
}

#define FAIL(...) (snprintf(err, MT_ERR_LEN, __VA_ARGS__), -1)

/* A setting's value memtrain runs: its vocabulary row says so. */
static bool implemented(const mp_value *v) { return v && v->memtrain; }

int mt_config_finish(mt_config *c, char *err)
{
    memtrain_shape *sh = &c->shape;
    mp_settings *s = &c->s;
    if (sh->family < 0 || sh->family >= MT_NFAMILY)
        return FAIL("unknown model family");
    if (sh->layers < 1 || sh->hidden < 1 || sh->heads < 1)
        return FAIL("layers, hidden and heads must be positive");
    if (sh->hidden % sh->heads)
        return FAIL("hidden (%d) must be a multiple of heads (%d)", sh->hidden, sh->heads);
    bool family_tied = sh->family == MT_GPT2;
    if (sh->tied >= 0 && (sh->tied != 0) != family_tied)
        return FAIL("tied = %d does not match memtrain's %s family (%s head)", sh->tied, mt_family_name(sh->family),
                    family_tied ? "tied" : "untied");
    sh->tied = family_tied;
    if (sh->family == MT_GPT2) {
        if (sh->kv_heads && sh->kv_heads != sh->heads)
            return FAIL("gpt2 has kv_heads == heads");
        sh->kv_heads = sh->heads;
        if (!sh->ffn)
            sh->ffn = 4 * sh->hidden;
    } else {
        if (!sh->kv_heads)
            sh->kv_heads = sh->heads;
        if (!sh->ffn)
            sh->ffn = ((8 * sh->hidden / 3) + 63) / 64 * 64;
        if ((sh->hidden / sh->heads) % 2)
            return FAIL("rotary embeddings need an even head dim (%d)", sh->hidden / sh->heads);
    }
    if (sh->kv_heads < 1 || sh->heads % sh->kv_heads)
        return FAIL("heads (%d) must be a multiple of kv_heads (%d)", sh->heads, sh->kv_heads);
    if (sh->ffn < 1)
        return FAIL("ffn must be positive");
    if (sh->vocab < 2)
        return FAIL("vocab (%d) must be at least 2", sh->vocab);
    if (sh->vocab > 65536)
        return FAIL("vocab (%d) must be at most 65536 (tokens are stored as uint16)", sh->vocab);
    if (s->batch < 1 || s->seq < 1 || s->accum < 1)
        return FAIL("batch, seq and accum must be positive");
    if (c->ranks < 1 || c->rank < 0 || c->rank >= c->ranks || s->zero < 0 || s->zero > 3)
        return FAIL("rank %d of %d ranks with zero = %d: memtrain implements ZeRO stages 0 to 3", c->rank,
                    c->ranks, s->zero);
    s->gpus = c->ranks; /* the planner's share is one rank's of the ranks launched */
    if (s->zero == 2 && s->lora_rank)
        return FAIL("zero = 2 with LoRA is not implemented in memtrain (ZeRO-2 shards full fine-tuning's gradients)");
    if (s->zero == 3 && (s->lora_rank || s->quant != MP_QUANT_NONE))
        return FAIL("zero = 3 with LoRA or QLoRA is not implemented in memtrain (ZeRO-3 shards full fine-tuning's parameters)");
    if (!sh->max_pos)
        sh->max_pos = (int)(s->seq < INT32_MAX ? s->seq : INT32_MAX);
    if (sh->family == MT_GPT2 && s->seq > sh->max_pos)
        return FAIL("seq (%lld) exceeds max_pos (%d)", (long long)s->seq, sh->max_pos);
    if (!implemented(mp_precision_value((int)s->precision)))
        return FAIL("memtrain does not implement precision '%s'", mp_precision_name(s->precision));
    if (!implemented(mp_attention_value((int)s->attention)))
        return FAIL("memtrain does not implement attention '%s'", mp_attention_name(s->attention));
    if (s->attn_tile < 1)
        return FAIL("attn-tile must be positive");
    if (!implemented(mp_ckpt_value((int)s->checkpointing)))
        return FAIL("memtrain does not implement checkpointing '%s'", mp_ckpt_name(s->checkpointing));
    if (!implemented(mp_ce_value((int)s->ce)))
        return FAIL("memtrain does not implement cross-entropy mode '%s'", mp_ce_name(s->ce));
    if (s->ce_chunk < 1)
        return FAIL("ce_chunk must be positive");
    if (!implemented(mp_optimizer_value((int)s->optimizer)))
        return FAIL("memtrain does not implement optimizer '%s'", mp_optimizer_name(s->optimizer));
    if (s->adam8_block < 1)
        return FAIL("adam8-block must be positive");
    if (s->lora_rank < 0)
        return FAIL("lora rank must be >= 0");
    if (s->lora_rank) {
        unsigned have = sh->family == MT_GPT2
                            ? (MP_LORA_Q | MP_LORA_K | MP_LORA_V | MP_LORA_O | MP_LORA_UP |
                               MP_LORA_DOWN)
                            : MP_LORA_ALL;
        if (!(s->lora_targets & have))
            return FAIL("no LoRA target exists in a %s model", mt_family_name(sh->family));
        if (c->own.lora_alpha == 0.0f)
            c->own.lora_alpha = 2.0f * (float)s->lora_rank;
    }
    if (!implemented(mp_quant_value((int)s->quant)))
        return FAIL("memtrain does not implement quantisation '%s'", mp_quant_name(s->quant));
    if (s->quant != MP_QUANT_NONE && !s->lora_rank)
        return FAIL("a quantised base (%s) needs LoRA (lora_rank > 0)", mp_quant_name(s->quant));
    if (c->own.loss_scale <= 0.0f)
        c->own.loss_scale = 65536.0f;
    if (c->own.loss_scale_window < 1)
        c->own.loss_scale_window = 2000;
    if (!implemented(mp_loader_value((int)s->loader)))
        return FAIL("memtrain does not implement loader '%s'", mp_loader_name(s->loader));
    if (!implemented(mp_method_value((int)s->method)))
        return FAIL("memtrain does not implement method '%s'", mp_method_name(s->method));
    s->reference = mp_reference_used(s); /* default: TRL's for the method and task */
    if (!implemented(mp_reference_value((int)s->reference)))
        return FAIL("memtrain does not implement reference '%s'", mp_reference_name(s->reference));
    char why[MP_ERR_LEN];
    if (memtrain_reference_refused(s->method, s->reference, s->lora_rank, s->zero, why))
        return FAIL("%s", why);
    if (!(c->own.beta > 0.0f) || !(c->own.cpo_alpha >= 0.0f))
        return FAIL("beta must be positive and cpo_alpha at least 0");
    if (s->shuffle_buffer < 1)
        s->shuffle_buffer = 1;
    if (c->own.init_std <= 0.0f)
        c->own.init_std = 0.02f;
    /* Keep every product of dimensions far from overflow (and sgemm's int). */
    double N = 2.0 * (double)s->batch * (double)s->seq; /* a preference method's 2 rows per pair */
    if (N * sh->vocab > 4e12 || (double)sh->hidden * sh->vocab > 2e9 ||
        2.0 * (double)s->batch * sh->heads * (double)s->seq * (double)s->seq > 4e12 || N * sh->ffn > 4e12 ||
        (double)s->seq > 1e6 || (double)sh->hidden > 1e6 || (double)sh->ffn > 1e7 ||
        (double)s->shuffle_buffer * (double)(s->seq + 1) > 4e12)
        return FAIL("dimensions are too large");
    return 0;
}

int mt_config_model(const mt_config *c, mp_model *m, char *err)
{
    char why[MP_ERR_LEN];
    if (memtrain_shape_model(&c->shape, c->s.seq, m, why)) {
        snprintf(err, MT_ERR_LEN, "%s", why);
        return -1;
    }
    return 0;
}

int mt_config_dims(const mt_config *c, memtrain_dims *inv, char *err)
{
    mp_model m;
    if (mt_config_model(c, &m, err)) return -1;
    memtrain_dims_from(&m, &c->s, inv);
    return 0;
}

/* ---------- names ---------- */

const char *mt_family_name(mt_family f) { return memtrain_family_name(f); }

int mt_family_parse(const char *s, mt_family *out) { return memtrain_family_parse(s, out); }

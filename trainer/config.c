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

void mt_config_default(mt_config *c)
{
    memset(c, 0, sizeof *c);
    c->family = MT_GPT2;
    c->layers = 2;
    c->hidden = 64;
    c->heads = 4;
    c->vocab = 256;
    c->batch = 4;
    c->seq = 64;
    c->accum = 1;
    c->rank = 0, c->ranks = 1, c->zero = 0, c->overlap = 1;
    c->precision = MP_FP32;
    c->attention = MP_ATTN_EAGER;
    c->attn_tile = 64;
    c->checkpointing = MP_CKPT_NONE;
    c->ce = MP_CE_FULL;
    c->ce_chunk = 1024;
    c->optimizer = MP_ADAMW;
    c->opt.lr = 1e-3f;
    c->opt.beta1 = 0.9f;
    c->opt.beta2 = 0.999f;
    c->opt.eps = 1e-8f;
    c->opt.weight_decay = 0.0f;
    c->opt.momentum = 0.9f;
    c->opt.block = 256;
    c->lora_targets = MP_LORA_Q | MP_LORA_V;
    c->loss_scale = 65536.0f;
    c->loss_scale_window = 2000;
    c->loader = MP_LOAD_MEMORY;
    c->shuffle_buffer = 256;
    c->seed = 1337;
    c->init_std = 0.02f;
}

#define FAIL(...) (snprintf(err, MT_ERR_LEN, __VA_ARGS__), -1)

/* A setting's value memtrain runs: its vocabulary row says so. */
static bool implemented(const mp_value *v) { return v && v->memtrain; }

int mt_config_finish(mt_config *c, char *err)
{
    if (c->family < 0 || c->family >= MT_NFAMILY)
        return FAIL("unknown model family");
    if (c->layers < 1 || c->hidden < 1 || c->heads < 1)
        return FAIL("layers, hidden and heads must be positive");
    if (c->hidden % c->heads)
        return FAIL("hidden (%d) must be a multiple of heads (%d)", c->hidden, c->heads);
    if (c->family == MT_GPT2) {
        if (c->kv_heads && c->kv_heads != c->heads)
            return FAIL("gpt2 has kv_heads == heads");
        c->kv_heads = c->heads;
        if (!c->ffn)
            c->ffn = 4 * c->hidden;
    } else {
        if (!c->kv_heads)
            c->kv_heads = c->heads;
        if (!c->ffn)
            c->ffn = ((8 * c->hidden / 3) + 63) / 64 * 64;
        if ((c->hidden / c->heads) % 2)
            return FAIL("rotary embeddings need an even head dim (%d)", c->hidden / c->heads);
    }
    if (c->kv_heads < 1 || c->heads % c->kv_heads)
        return FAIL("heads (%d) must be a multiple of kv_heads (%d)", c->heads, c->kv_heads);
    if (c->ffn < 1)
        return FAIL("ffn must be positive");
    if (c->vocab < 2)
        return FAIL("vocab (%d) must be at least 2", c->vocab);
    if (c->vocab > 65536)
        return FAIL("vocab (%d) must be at most 65536 (tokens are stored as uint16)", c->vocab);
    if (c->batch < 1 || c->seq < 1 || c->accum < 1)
        return FAIL("batch, seq and accum must be positive");
    if (c->ranks < 1 || c->rank < 0 || c->rank >= c->ranks || c->zero < 0 || c->zero > 3)
        return FAIL("rank %d of %d ranks with zero = %d: memtrain implements ZeRO stages 0 to 3", c->rank,
                    c->ranks, c->zero);
    if (c->zero == 2 && c->lora_rank)
        return FAIL("zero = 2 with LoRA is not implemented in memtrain (ZeRO-2 shards full fine-tuning's gradients)");
    if (c->zero == 3 && (c->lora_rank || c->quant != MP_QUANT_NONE))
        return FAIL("zero = 3 with LoRA or QLoRA is not implemented in memtrain (ZeRO-3 shards full fine-tuning's parameters)");
    if (!c->max_pos)
        c->max_pos = c->seq;
    if (c->family == MT_GPT2 && c->seq > c->max_pos)
        return FAIL("seq (%d) exceeds max_pos (%d)", c->seq, c->max_pos);
    if (!implemented(mp_precision_value((int)c->precision)))
        return FAIL("memtrain does not implement precision '%s'", mp_precision_name(c->precision));
    if (!implemented(mp_attention_value((int)c->attention)))
        return FAIL("memtrain does not implement attention '%s'", mp_attention_name(c->attention));
    if (c->attn_tile < 1)
        c->attn_tile = 64;
    if (!implemented(mp_ckpt_value((int)c->checkpointing)))
        return FAIL("memtrain does not implement checkpointing '%s'", mp_ckpt_name(c->checkpointing));
    if (!implemented(mp_ce_value((int)c->ce)))
        return FAIL("memtrain does not implement cross-entropy mode '%s'", mp_ce_name(c->ce));
    if (c->ce_chunk < 1)
        return FAIL("ce_chunk must be positive");
    if (!implemented(mp_optimizer_value((int)c->optimizer)))
        return FAIL("memtrain does not implement optimizer '%s'", mp_optimizer_name(c->optimizer));
    if (c->opt.block < 1)
        c->opt.block = 256;
    if (c->lora_rank < 0)
        return FAIL("lora rank must be >= 0");
    if (c->lora_rank) {
        unsigned have = c->family == MT_GPT2
                            ? (MP_LORA_Q | MP_LORA_K | MP_LORA_V | MP_LORA_O | MP_LORA_UP |
                               MP_LORA_DOWN)
                            : MP_LORA_ALL;
        if (!(c->lora_targets & have))
            return FAIL("no LoRA target exists in a %s model", mt_family_name(c->family));
        if (c->lora_alpha == 0.0f)
            c->lora_alpha = 2.0f * (float)c->lora_rank;
    }
    if (!implemented(mp_quant_value((int)c->quant)))
        return FAIL("memtrain does not implement quantisation '%s'", mp_quant_name(c->quant));
    if (c->quant != MP_QUANT_NONE && !c->lora_rank)
        return FAIL("a quantised base (%s) needs LoRA (lora_rank > 0)", mp_quant_name(c->quant));
    if (c->loss_scale <= 0.0f)
        c->loss_scale = 65536.0f;
    if (c->loss_scale_window < 1)
        c->loss_scale_window = 2000;
    if (!implemented(mp_loader_value((int)c->loader)))
        return FAIL("memtrain does not implement loader '%s'", mp_loader_name(c->loader));
    if (c->shuffle_buffer < 1)
        c->shuffle_buffer = 1;
    if (c->init_std <= 0.0f)
        c->init_std = 0.02f;
    /* Keep every product of dimensions far from overflow (and sgemm's int). */
    double N = (double)c->batch * c->seq;
    if (N * c->vocab > 4e12 || (double)c->hidden * c->vocab > 2e9 ||
        (double)c->batch * c->heads * c->seq * c->seq > 4e12 || N * c->ffn > 4e12 ||
        (double)c->seq > 1e6 || (double)c->hidden > 1e6 || (double)c->ffn > 1e7)
        return FAIL("dimensions are too large");
    return 0;
}

/* ---------- names ---------- */

static const char *const family_names[MT_NFAMILY] = {"gpt2", "llama"};

const char *mt_family_name(mt_family f)
{
    return (int)f >= 0 && (int)f < MT_NFAMILY ? family_names[f] : "?";
}

int mt_family_parse(const char *s, mt_family *out)
{
    for (int i = 0; i < MT_NFAMILY; i++)
        if (strcmp(s, family_names[i]) == 0) {
            *out = (mt_family)i;
            return 0;
        }
    return -1;
}

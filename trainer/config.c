/*
 * config.c — defaults, validation and names for mt_config.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "alloc.h"

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
    c->precision = MT_PREC_FP32;
    c->attention = MT_ATTN_EAGER;
    c->attn_tile = 64;
    c->checkpointing = MT_CKPT_NONE;
    c->ce = MT_CE_FULL;
    c->ce_chunk = 1024;
    c->optimizer = MT_OPT_ADAMW;
    c->opt.lr = 1e-3f;
    c->opt.beta1 = 0.9f;
    c->opt.beta2 = 0.999f;
    c->opt.eps = 1e-8f;
    c->opt.weight_decay = 0.0f;
    c->opt.momentum = 0.9f;
    c->opt.block = 256;
    c->lora_targets = MT_LORA_Q | MT_LORA_V;
    c->loss_scale = 65536.0f;
    c->loss_scale_window = 2000;
    c->loader = MT_LOAD_MEMORY;
    c->shuffle_buffer = 256;
    c->seed = 1337;
    c->init_std = 0.02f;
}

#define FAIL(...) (snprintf(err, MT_ERR_LEN, __VA_ARGS__), -1)

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
    if (!c->max_pos)
        c->max_pos = c->seq;
    if (c->family == MT_GPT2 && c->seq > c->max_pos)
        return FAIL("seq (%d) exceeds max_pos (%d)", c->seq, c->max_pos);
    if (c->precision < 0 || c->precision >= MT_NPREC)
        return FAIL("unknown precision");
    if (c->attention < 0 || c->attention >= MT_NATTN)
        return FAIL("unknown attention");
    if (c->attn_tile < 1)
        c->attn_tile = 64;
    if (c->checkpointing < 0 || c->checkpointing >= MT_NCKPT)
        return FAIL("unknown checkpointing");
    if (c->ce < 0 || c->ce >= MT_NCE)
        return FAIL("unknown cross-entropy mode");
    if (c->ce_chunk < 1)
        return FAIL("ce_chunk must be positive");
    if (c->optimizer < 0 || c->optimizer >= MT_NOPT)
        return FAIL("unknown optimizer");
    if (c->opt.block < 1)
        c->opt.block = 256;
    if (c->lora_rank < 0)
        return FAIL("lora rank must be >= 0");
    if (c->lora_rank) {
        unsigned have = c->family == MT_GPT2
                            ? (MT_LORA_Q | MT_LORA_K | MT_LORA_V | MT_LORA_O | MT_LORA_UP |
                               MT_LORA_DOWN)
                            : MT_LORA_ALL;
        if (!(c->lora_targets & have))
            return FAIL("no LoRA target exists in a %s model", mt_family_name(c->family));
        if (c->lora_alpha == 0.0f)
            c->lora_alpha = 2.0f * (float)c->lora_rank;
    }
    if (c->quant < 0 || c->quant >= MT_NQUANT)
        return FAIL("unknown quantisation");
    if (c->quant != MT_QUANT_NONE && !c->lora_rank)
        return FAIL("a quantised base (%s) needs LoRA (lora_rank > 0)", mt_quant_name(c->quant));
    if (c->loss_scale <= 0.0f)
        c->loss_scale = 65536.0f;
    if (c->loss_scale_window < 1)
        c->loss_scale_window = 2000;
    if (c->loader < 0 || c->loader >= MT_NLOADER)
        return FAIL("unknown loader");
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
static const char *const prec_names[MT_NPREC] = {"fp32", "mixed-bf16", "mixed-fp16"};
static const char *const ckpt_names[MT_NCKPT] = {"none", "selective", "full"};
static const char *const attn_names[MT_NATTN] = {"eager", "flash"};
static const char *const ce_names[MT_NCE] = {"full", "chunked"};
static const char *const quant_names[MT_NQUANT] = {"none", "nf4", "nf4-dq"};

#define NAME(tab, n, v) ((int)(v) >= 0 && (int)(v) < (n) ? (tab)[v] : "?")
const char *mt_family_name(mt_family f) { return NAME(family_names, MT_NFAMILY, f); }
const char *mt_precision_name(mt_precision p) { return NAME(prec_names, MT_NPREC, p); }
const char *mt_ckpt_name(mt_ckpt c) { return NAME(ckpt_names, MT_NCKPT, c); }
const char *mt_attention_name(mt_attention a) { return NAME(attn_names, MT_NATTN, a); }
const char *mt_ce_name(mt_ce c) { return NAME(ce_names, MT_NCE, c); }
const char *mt_quant_name(mt_quant q) { return NAME(quant_names, MT_NQUANT, q); }

static int parse(const char *s, const char *const *tab, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(s, tab[i]) == 0)
            return i;
    return -1;
}

#define PARSE(fn, type, tab, n)              \
    int fn(const char *s, type *out)         \
    {                                        \
        int i = parse(s, tab, n);            \
        if (i < 0)                           \
            return -1;                       \
        *out = (type)i;                      \
        return 0;                            \
    }
PARSE(mt_family_parse, mt_family, family_names, MT_NFAMILY)
PARSE(mt_ckpt_parse, mt_ckpt, ckpt_names, MT_NCKPT)
PARSE(mt_attention_parse, mt_attention, attn_names, MT_NATTN)
PARSE(mt_ce_parse, mt_ce, ce_names, MT_NCE)
PARSE(mt_quant_parse, mt_quant, quant_names, MT_NQUANT)

int mt_precision_parse(const char *s, mt_precision *p)
{
    int i = parse(s, prec_names, MT_NPREC);
    if (i < 0) { /* short forms */
        if (strcmp(s, "bf16") == 0)
            i = MT_PREC_BF16;
        else if (strcmp(s, "fp16") == 0)
            i = MT_PREC_FP16;
        else
            return -1;
    }
    *p = (mt_precision)i;
    return 0;
}

int mt_lora_targets_parse(const char *s, unsigned *bits)
{
    static const struct {
        const char *name;
        unsigned bits;
    } tab[] = {{"q", MT_LORA_Q},       {"k", MT_LORA_K},   {"v", MT_LORA_V},
               {"o", MT_LORA_O},       {"gate", MT_LORA_GATE}, {"up", MT_LORA_UP},
               {"down", MT_LORA_DOWN}, {"attn", MT_LORA_ATTN}, {"mlp", MT_LORA_MLP},
               {"all", MT_LORA_ALL},   {"qkv", MT_LORA_Q | MT_LORA_K | MT_LORA_V}};
    unsigned out = 0;
    const char *p = s;
    while (*p) {
        size_t len = strcspn(p, ",");
        size_t i;
        for (i = 0; i < sizeof tab / sizeof tab[0]; i++)
            if (strlen(tab[i].name) == len && strncmp(p, tab[i].name, len) == 0)
                break;
        if (i == sizeof tab / sizeof tab[0])
            return -1;
        out |= tab[i].bits;
        p += len;
        if (*p == ',')
            p++;
    }
    if (!out)
        return -1;
    *bits = out;
    return 0;
}

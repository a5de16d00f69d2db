/*
 * config.h — one training configuration for memtrain: the model shape, the
 * micro-batch, and every memory-saving technique.
 *
 * Dimension legend (used in comments throughout the trainer):
 *   B  micro-batch (sequences)     T  sequence length       N = B*T rows
 *   C  hidden width                L  layers                 V  vocabulary
 *   NH query heads                 KV key/value heads        HD head dim = C/NH
 *   F  MLP inner width             QW = (NH+2*KV)*HD qkv width
 *   AW = NH*HD attention width     FW = F (GELU) or 2F (SwiGLU: gate|up)
 *   r  LoRA rank
 */
#ifndef MT_CONFIG_H
#define MT_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "data.h"
#include "model/model.h"
#include "settings/settings.h"
#include "optim.h"

/* The model's architecture family (a shape, not a training setting). */
typedef enum { MT_GPT2, MT_LLAMA, MT_NFAMILY } mt_family;
/* The settings (precision, optimizer, checkpointing, attention, loss, quantisation,
 * loader, LoRA targets) are the planner's enums and vocabulary (memplan.h):
 * memtrain implements the values whose row says so (mp_value.memtrain). */

#define MT_PATH_LEN 512
/* The most optimizer steps a run takes (--steps) and a checkpoint may be at. */
#define MT_MAX_STEPS 100000000

typedef struct mt_config {
    /* model */
    mt_family family;  /* gpt2: LayerNorm+bias, GELU, learned positions, biases, tied head;
                          llama: RMSNorm, SwiGLU, rotary, GQA, no biases, untied head */
    int layers;        /* L */
    int hidden;        /* C */
    int heads;         /* NH */
    int kv_heads;      /* KV; 0: NH (gpt2 always NH) */
    int ffn;           /* F; 0: 4C (gpt2), or 8C/3 rounded up to a multiple of 64 (llama) */
    int vocab;         /* V; the trainer's byte tokenizer needs V >= 256 */
    int max_pos;       /* learned position rows (gpt2); 0: T */
    /* batch */
    int batch;         /* B */
    int seq;           /* T */
    int accum;         /* micro-batches per optimizer step */
    /* techniques */
    mp_precision precision; /* fp32, or mixed: 16-bit storage, fp32 master weights and math */
    mp_attention attention;
    int attn_tile;     /* flash tile edge, default 64 */
    mp_ckpt checkpointing;
    mp_ce ce;
    int ce_chunk;      /* rows (tokens) per cross-entropy chunk, default 1024 */
    mp_optimizer optimizer;
    mt_opt_hparams opt; /* lr, betas, eps, weight decay, momentum, 8-bit block */
    int lora_rank;     /* 0: full fine-tuning */
    unsigned lora_targets;
    float lora_alpha;  /* scale = alpha / r; 0: alpha = 2r */
    mp_quant quant;    /* frozen base storage for LoRA (QLoRA: nf4 or nf4-dq) */
    float loss_scale;  /* fp16 initial loss scale, default 65536 */
    int loss_scale_window; /* double after this many good steps, default 2000 */
    /* data */
    mp_loader loader;
    int shuffle_buffer; /* sequences in the streaming shuffle buffer, default 256 */
    char data_path[MT_PATH_LEN]; /* "": the built-in corpus */
    /* data parallel: this process's rank of `ranks` (set by the launcher, not a key) */
    int rank, ranks;
    int overlap;       /* ZeRO-0/1: 1 (default) sums the gradients while the backward runs, 0 after it */
    int zero;          /* 0: all state replicated; 1: optimizer state sharded (ZeRO-1); 2: and the
                          gradients, reduce-scattered layer by layer (ZeRO-2, full fine-tuning);
                          3: and the parameters, gathered layer by layer (ZeRO-3) */
    /* misc */
    uint64_t seed;
    float init_std;    /* default 0.02 */
} mt_config;

/* Defaults: a tiny gpt2 (L=2, C=64, NH=4, V=256, T=64, B=4), fp32, AdamW lr 1e-3. */
void mt_config_default(mt_config *c);
/* Fill derived values and validate; 0, or -1 with a message in err (MT_ERR_LEN). */
int mt_config_finish(mt_config *c, char *err);

const char *mt_family_name(mt_family f);
int mt_family_parse(const char *s, mt_family *f);

#endif

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
#include "memtrain/memtrain_inventory.h"
#include "memtrain/shape.h"
#include "model/model.h"
#include "settings/settings.h"
#include "optim.h"

/* The model's architecture family (a shape, not a training setting): the
 * planner's memtrain_family (memtrain/shape.h), by memtrain's names. */
typedef memtrain_family mt_family;
#define MT_GPT2 MEMTRAIN_GPT2
#define MT_LLAMA MEMTRAIN_LLAMA
#define MT_NFAMILY MEMTRAIN_NFAMILY

#define MT_PATH_LEN 512
/* The most optimizer steps a run takes (--steps) and a checkpoint may be at. */
#define MT_MAX_STEPS 100000000

/* What only memtrain has: the data, the run's length, the initialisation and the
 * optimizer's hyper-parameters (config keys of their own, trainer/config_keys.c). */
typedef struct mt_own {
    char data_path[MT_PATH_LEN]; /* "": the built-in corpus */
    int64_t steps;     /* optimizer steps (default 20) */
    uint64_t seed;
    float init_std;    /* default 0.02 */
    mt_opt_hparams opt; /* lr, betas, eps, weight decay, momentum */
    float lora_alpha;  /* scale = alpha / r; 0: alpha = 2r */
    float loss_scale;  /* fp16 initial loss scale, default 65536 */
    int loss_scale_window; /* double after this many good steps, default 2000 */
    int overlap;       /* ZeRO-0/1: 1 (default) sums the gradients while the backward runs, 0 after it */
    /* preference methods, TRL's defaults (trainer/pairwise.h): beta (DPOConfig, CPOConfig and
     * ORPOConfig: 0.1, a key), CPOConfig's cpo_alpha 1.0 and simpo_gamma 0.5 (no keys) */
    float beta, cpo_alpha, simpo_gamma;
    unsigned given;    /* MP_PIN_* of the settings a key named (ranks: MP_PIN_GPUS) */
} mt_own;

/* One training configuration: the model's shape, the planner's settings record
 * (every setting the planner also plans with: precision, optimizer and its block,
 * checkpointing, attention and its tile, batch, sequence, loss, LoRA,
 * quantisation, loader, ZeRO stage; gpus: the ranks), memtrain's own keys, and
 * the launch. memtrain implements the settings' values whose vocabulary row says
 * so (mp_value.memtrain). */
typedef struct mt_config {
    memtrain_shape shape;
    mp_settings s;
    mt_own own;
    /* data parallel: this process's rank of `ranks` (set by the launcher, not a key;
     * s.gpus is set to ranks) */
    int rank, ranks;
} mt_config;

/* Defaults: a tiny gpt2 (L=2, C=64, NH=4, V=256, T=64, B=4), fp32, AdamW lr 1e-3,
 * the planner's defaults for the rest (mp_settings_default). */
void mt_config_default(mt_config *c);
/* Fill derived values and validate; 0, or -1 with a message in err (MT_ERR_LEN). */
int mt_config_finish(mt_config *c, char *err);
/* Sequences in one micro-batch: batch, or 2 x batch (chosen, rejected) for a
 * preference method. */
size_t mt_config_rows(const mt_config *c);
/* The planner's model of the config's shape (after mt_config_finish). */
int mt_config_model(const mt_config *c, mp_model *m, char *err);
/* Every buffer's size: the inventory's dimensions of the config's model and
 * settings (memtrain_dims_from, as the planner's prediction sizes them). */
int mt_config_dims(const mt_config *c, memtrain_dims *inv, char *err);

const char *mt_family_name(mt_family f);
int mt_family_parse(const char *s, mt_family *f);

#endif

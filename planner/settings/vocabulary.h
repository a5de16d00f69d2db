/* vocabulary.h — every value of every setting, one descriptor row each
 * (vocabulary.c). */
#ifndef MP_VOCABULARY_H
#define MP_VOCABULARY_H

#include <stdbool.h>
#include <stddef.h>

#include "settings/settings.h"
#include "model/model.h"

/*  * One descriptor row per value of each setting: its stable name (flags, configs,
 * JSON), other accepted spellings, help and the traits the estimate reads; each
 * engine's word for it lives with that engine's emitter. Every row starts with an mp_value. */
typedef struct mp_value {
    const char *name;         /* stable string */
    const char *aliases;      /* other accepted spellings, space-separated, or NULL */
    const char *help;         /* one line for --help */
    bool memtrain;            /* memtrain (the reference trainer) implements it */
} mp_value;

typedef struct mp_precision_desc {
    mp_value v;
    double stored_bytes;      /* a trainable weight and its gradient as stored: 4 or 2 */
    double act_bytes;         /* a stored activation: 4 (fp32) or 2 */
    double state_bytes;       /* an optimizer-state element: 4, or 2 for pure bf16 */
    bool autocast;            /* fp32 weights, 16-bit matmuls under torch.autocast */
    bool master_copy;         /* 16-bit weights with fp32 masters in the optimizer */
    bool needs_bf16;          /* the GPU must support bf16 */
    bool loss_scaling;        /* fp16: a dynamic loss scaler */
    const char *short_name;   /* "fp32", "bf16", "fp16", "pure bf16" (tables) */
    mp_precision same_memory_as; /* the bf16 twin of an fp16 value (same bytes), else itself */
} mp_precision_desc;

typedef struct mp_optimizer_desc {
    mp_value v;
    double states;            /* parameter-sized states (AdamW 2: m and v; momentum 1; SGD 0) */
    bool factored;            /* Adafactor: a row and a column per matrix instead of a full state */
    int tier;                 /* 0 AdamW-class, 1 other adaptive (Lion, Adafactor), 2 SGD */
    bool adamw_class, low_bit, paged, momentum; /* low_bit: states kept as block-wise quantised codes */
    int state_bits;           /* low_bit: bits per state value (8, 4), plus an fp32 scale per --adam8-block values */
    double step_bytes;        /* a compiled step's own buffers, bytes per value of the one tensor it steps; 0: none */
    mp_optimizer same_memory_as; /* the value the search tries in its place, else itself: a paged optimizer's
                                  * unpaged twin; for torchao's low-bit AdamWs bitsandbytes' 8-bit one, so they
                                  * are planned only when named */
} mp_optimizer_desc;

typedef struct mp_ckpt_desc {
    mp_value v;
} mp_ckpt_desc;

typedef struct mp_attention_desc {
    mp_value v;
} mp_attention_desc;

typedef struct mp_quant_desc {
    mp_value v;
    int bits;                 /* 0: not quantised; GPTQ/AWQ: the checkpoint's own (mp_model.quant_bits) */
    bool double_quant;        /* bnb_4bit_use_double_quant */
    bool stored_only;         /* only as a pre-quantised checkpoint stores it: never searched */
    bool bitsandbytes;        /* quantised at load by bitsandbytes (transformers' quant_method "bitsandbytes") */
    int bnb_keeps_input_before; /* bitsandbytes releases before this one keep each quantised layer's input */
} mp_quant_desc;

typedef struct mp_offload_desc {
    mp_value v;
    bool optimizer_on_host;   /* DeepSpeed offload_optimizer, FSDP offload */
    bool params_on_host;      /* DeepSpeed offload_param */
} mp_offload_desc;

typedef struct mp_loader_desc {
    mp_value v;
} mp_loader_desc;

/* A training objective as TRL's trainer runs it (tests/data/engines/trl_methods.csv). */
typedef struct mp_method_desc {
    mp_value v;
    int rows_per_example;     /* sequences one forward runs per example --batch counts: 2 for a pair */
    bool reference;           /* reference log-probabilities in the loss */
    bool chosen_nll;          /* an NLL on the chosen half: a shifted copy of its logits and its log-softmax */
    const char *trainer;      /* TRL's class */
    bool reference_optional;  /* no reference unless one is stated (GRPO: beta 0 by default) */
    bool score_head;          /* a one-output score head in place of the LM head: no vocabulary logits */
    bool kl_batch;            /* a no-grad policy forward on a mismatched batch, the reference on both (KTO) */
    bool generates;           /* the completions are generated each step (a rollout phase) */
    bool grouped;             /* completions grouped per prompt by --generations (GRPO) */
    bool per_micro_batch;     /* generates for each micro-batch (online DPO), not once per optimizer step */
    bool reward_model;        /* a frozen reward model scores the completions (unless --reward-model none) */
    bool value_model;         /* a value model trained beside the policy (PPO) */
    double vllm_fraction;     /* TRL's vllm_gpu_memory_utilization for it */
    int64_t completion_default, prompt_default; /* TRL's completion length; the prompt's where a length caps it */
} mp_method_desc;

/* The row of a value (NULL when out of range). */
const mp_precision_desc *mp_precision_desc_of(mp_precision p);
const mp_optimizer_desc *mp_optimizer_desc_of(mp_optimizer o);
const mp_ckpt_desc *mp_ckpt_desc_of(mp_ckpt c);
const mp_attention_desc *mp_attention_desc_of(mp_attention a);
const mp_quant_desc *mp_quant_desc_of(mp_quant q);
/* 16-bit weights trained with no fp32 master copy (pure-bf16). */
bool mp_precision_pure16(const mp_precision_desc *pd);
const mp_offload_desc *mp_offload_desc_of(mp_offload o);
const mp_loader_desc *mp_loader_desc_of(mp_loader l);
const mp_method_desc *mp_method_desc_of(mp_method m);
/* The reference a run of s uses: --reference, else TRL's for the method and
 * task (a copy of the model for full fine-tuning, the adapter disabled under
 * LoRA, none for a method without one). */
mp_reference mp_reference_used(const mp_settings *s);
/* The device fraction a colocated vLLM keeps: --rollout-memory, else the method's TRL default. */
double mp_rollout_memory(const mp_settings *s);
/* Whether a frozen reward model scores the completions (PPO, online DPO; GRPO given one). */
bool mp_reward_model_used(const mp_settings *s);
/* The i-th value's common row, NULL past the end: for listing choices. */
const mp_value *mp_precision_value(int i);
const mp_value *mp_optimizer_value(int i);
const mp_value *mp_ckpt_value(int i);
const mp_value *mp_attention_value(int i);
const mp_value *mp_quant_value(int i);
const mp_value *mp_offload_value(int i);
const mp_value *mp_ce_value(int i);
const mp_value *mp_loader_value(int i);
const mp_value *mp_task_value(int i);
const mp_value *mp_step_impl_value(int i);
const mp_value *mp_method_value(int i);
const mp_value *mp_reference_value(int i);
const mp_value *mp_logits_value(int i);
const mp_value *mp_rollout_value(int i);
/* The index of the row spelled `s` (name or alias), or -1. */
int mp_value_index(const mp_value *(*value_at)(int), const char *s);
/* An optimizer alias that also names the step's implementation (transformers'
 * adamw_torch_fused: AdamW, fused): 0 with *step, or -1. */
int mp_optimizer_alias_step(const char *s, mp_step_impl *step);
/* A transformers optim name for an optimizer memplan does not model (lion_8bit, galore_adamw...). */
bool mp_optimizer_unmodelled(const char *s);
/* "a, b, c" (or "a, b or c" with last_sep " or "), only memtrain's values if asked. */
const char *mp_choices(const mp_value *(*value_at)(int), bool memtrain_only, const char *last_sep,
                       char *buf, size_t len);

/* Names <-> enums: the rows' names; parse accepts aliases too. */
const char *mp_precision_name(mp_precision p);
const char *mp_optimizer_name(mp_optimizer o);
const char *mp_ckpt_name(mp_ckpt c);
const char *mp_attention_name(mp_attention a);
const char *mp_quant_name(mp_quant q);
const char *mp_offload_name(mp_offload o);
const char *mp_ce_name(mp_ce c);
const char *mp_loader_name(mp_loader l);
const char *mp_task_name(mp_task t);
const char *mp_step_impl_name(mp_step_impl i);
const char *mp_method_name(mp_method m);
const char *mp_reference_name(mp_reference r);
const char *mp_logits_name(mp_logits l);
const char *mp_rollout_name(mp_rollout r);
int mp_precision_parse(const char *s, mp_precision *p);
int mp_optimizer_parse(const char *s, mp_optimizer *o);
int mp_ckpt_parse(const char *s, mp_ckpt *c);
int mp_attention_parse(const char *s, mp_attention *a);
int mp_quant_parse(const char *s, mp_quant *q);
int mp_offload_parse(const char *s, mp_offload *o);
int mp_ce_parse(const char *s, mp_ce *c);
int mp_loader_parse(const char *s, mp_loader *l);
int mp_task_parse(const char *s, mp_task *t);
int mp_step_impl_parse(const char *s, mp_step_impl *i);
int mp_method_parse(const char *s, mp_method *m);
int mp_reference_parse(const char *s, mp_reference *r);
int mp_logits_parse(const char *s, mp_logits *l);
/* "q,k,v,o", "qkv", "attn", "mlp", "all" (and PEFT's module names) -> bits; 0 on success. */
int mp_lora_targets_parse(const char *s, unsigned *bits);
/* bits -> "q,k,v,o" */
const char *mp_lora_targets_name(unsigned bits, char *buf, size_t len);

/* The components memory is counted in (estimate.h's peak[], at_peak[]...). */
enum { MP_WEIGHTS, MP_GRADIENTS, MP_OPTIMIZER, MP_ACTIVATIONS, MP_OVERHEAD, MP_NCOMP };
/* "weights", "gradients", "optimizer", "activations", "overhead" */
const char *mp_component_name(int c);

#endif

/* settings.h — one training configuration: every technique's value, the
 * batch, the parallelism, the framework profile it follows. */
#ifndef MP_SETTINGS_H
#define MP_SETTINGS_H

#include <stdbool.h>
#include <stdint.h>

#include "model/model.h"
#include "profiles/profiles.h"

typedef enum { MP_FP32, MP_AMP_BF16, MP_AMP_FP16, MP_MIXED_BF16, MP_MIXED_FP16,
               MP_PURE_BF16, MP_NPRECISION } mp_precision;
typedef enum { MP_ADAMW, MP_ADAMW_8BIT, MP_PAGED_ADAMW, MP_PAGED_ADAMW_8BIT, MP_SGD,
               MP_SGD_MOMENTUM, MP_ADAFACTOR, MP_LION, MP_ADAMW_8BIT_TORCHAO, MP_ADAMW_4BIT_TORCHAO,
               MP_NOPTIMIZER } mp_optimizer;
typedef enum { MP_CKPT_NONE, MP_CKPT_SELECTIVE, MP_CKPT_FULL, MP_NCKPT } mp_ckpt;
typedef enum { MP_ATTN_EAGER, MP_ATTN_FLASH, MP_NATTN } mp_attention;
typedef enum { MP_OFFLOAD_NONE, MP_OFFLOAD_OPTIMIZER, MP_OFFLOAD_PARAMS, MP_NOFFLOAD } mp_offload;
typedef enum { MP_CE_FULL, MP_CE_CHUNKED, MP_NCE } mp_ce;
typedef enum { MP_LOAD_MEMORY, MP_LOAD_STREAM, MP_NLOADER } mp_loader;
/* LoRA's rank when a task needs one and none is given (16: the rank the
 * guide in shared/seeds/004 calls the default, line 128; the search uses it). */
#define MP_DEFAULT_LORA_RANK 16
typedef enum { MP_TASK_ANY, MP_TASK_FULL, MP_TASK_LORA, MP_TASK_QLORA, MP_NTASK } mp_task;
/* How PyTorch runs the optimizer step: multi-tensor (foreach), a loop over tensors, or fused. */
typedef enum { MP_STEP_FOREACH, MP_STEP_FOR_LOOP, MP_STEP_FUSED, MP_NSTEP } mp_step_impl;
/* The training objective (TRL's trainers), orthogonal to the task. */
typedef enum { MP_METHOD_SFT, MP_METHOD_DPO, MP_METHOD_IPO, MP_METHOD_SIMPO, MP_METHOD_CPO, MP_METHOD_ORPO,
               MP_METHOD_KTO, MP_METHOD_REWARD, MP_METHOD_GRPO, MP_METHOD_ONLINE_DPO, MP_METHOD_PPO,
               MP_NMETHOD } mp_method;
/* How an online method makes its completions: transformers' generate inside
 * the training process (a KV cache), a vLLM engine colocated on the GPU, or a
 * vLLM server on other GPUs (nothing of it on the training GPUs). */
typedef enum { MP_ROLLOUT_GENERATE, MP_ROLLOUT_VLLM, MP_ROLLOUT_SERVER, MP_NROLLOUT } mp_rollout;
/* Where a preference method's reference log-probabilities come from; DEFAULT:
 * what TRL does for the method and task (mp_reference_used). */
typedef enum { MP_REF_DEFAULT, MP_REF_MODEL, MP_REF_ADAPTER, MP_REF_PRECOMPUTED, MP_REF_NONE, MP_NREF } mp_reference;
/* How the next-token loss takes the logits; STACK: as the framework profile says. */
typedef enum { MP_LOGITS_STACK, MP_LOGITS_MODEL, MP_LOGITS_FP32, MP_LOGITS_FP32_SHIFTED, MP_NLOGITS } mp_logits;

typedef struct mp_settings {
    mp_precision precision;
    mp_optimizer optimizer;
    int64_t adam8_block;      /* 8-bit block size: 256 (bitsandbytes now), 2048 (before) */
    mp_ckpt checkpointing;
    mp_attention attention;
    int64_t attn_tile;        /* flash attention's tile edge, in rows (memtrain's kernel keeps
                               * tiles of attn_tile^2 scores; default 64) */
    int64_t batch;            /* B, micro-batch per GPU */
    int64_t accum;            /* micro-batches per optimizer step */
    int64_t seq;              /* T */
    int64_t prev_seq;         /* T of the micro-batch before, whose logits and graph a loop may still
                               * hold (LitGPT); -1: T as well; 0: none (the run's first) */
    mp_ce ce;
    int64_t ce_chunk;         /* tokens per cross-entropy chunk */
    int64_t lora_rank;        /* 0: full fine-tuning */
    unsigned lora_targets;
    float lora_dropout;       /* LoRA dropout probability: >0 keeps a dropout output and mask per adapted module */
    mp_quant quant;           /* frozen base storage (LoRA only, or inference) */
    int64_t gpus;             /* data-parallel x tensor x pipeline */
    int zero;                 /* 0..3 */
    int64_t tp, pp, ep;       /* tensor, pipeline, expert parallel degrees */
    mp_offload offload;
    mp_loader loader;
    mp_step_impl step_impl;   /* the optimizer step's implementation (PyTorch stacks) */
    bool optimizer_in_backward; /* each parameter stepped as its gradient lands (torchtune optimizer_in_bwd) */
    bool offload_activations; /* saved activations in pinned host RAM (torchtune OffloadActivations) */
    bool compile;             /* torch.compile: the partitioner recomputes pointwise intermediates in the backward */
    bool expandable_segments; /* PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: segments grow by mapped pages */
    double dataset_bytes;     /* raw text size, for in-memory loading */
    int64_t shuffle_buffer;   /* sequences held by the streaming shuffle buffer */
    bool dropout;             /* keep dropout masks (GPT-2 pre-training style) */
    int bnb_version;          /* the bitsandbytes release (mp_version_parse: 0.41.1 is 4101); 0: a current one */
    mp_method method;         /* the objective: sft, or a preference method (batch counts pairs) */
    mp_reference reference;   /* a preference method's reference model */
    mp_logits logits;         /* the loss's copies of the logits (activations.c logits_model) */
    int64_t ckpt_every;       /* full checkpointing of every Nth block only (torchtitan's layer SAC); 0 or 1: each */
    int64_t eval_batch;       /* sequences per evaluation forward between steps (per_device_eval_batch_size); 0: none */
    /* GRPO's rollout (vocabulary.c's methods say which method generates) */
    int64_t generations;      /* completions per prompt (TRL's num_generations, default 8) */
    int64_t prompt_len;       /* prompt tokens; seq = prompt_len + completion_len for a generating method */
    int64_t completion_len;   /* completion tokens (TRL's max_completion_length, default 512) */
    mp_rollout rollout;       /* who generates: transformers' generate or a colocated vLLM */
    double rollout_memory;    /* the device fraction a colocated vLLM keeps (gpu_memory_utilization);
                               * 0: the method's TRL default (mp_rollout_memory) */
    bool rollout_sleep;       /* vLLM sleeps (level 2) while the policy trains: its weights and KV cache go */
    int64_t rollout_max_len;  /* vLLM's max_model_len (TRL's vllm_max_model_length); 0: the model's positions */
    /* online methods' other models (PPO, online DPO; GRPO's reward model by name):
     * NULL is the policy's shape with a score head */
    const struct mp_model *reward_model, *value_model;
    bool reward_none;         /* --reward-model none: reward functions, no model (GRPO's default) */
    bool value_lora;          /* PPO's value model takes the policy's adapters (ms-swift), not trained whole (TRL) */
    const mp_framework *framework; /* from mp_framework_find; NULL: pytorch */
} mp_settings;

/* Sensible defaults: fp32 AdamW, B=1, T=mp_default_seq, one GPU, pytorch. */
void mp_settings_default(mp_settings *s, const mp_model *m);

/* Facts every part reads the same way, each from its one row or rule: */
/* The sequence when none is given: the model's positions, at most 2048 (NULL: 2048). */
int64_t mp_default_seq(const mp_model *m);
/* The data-parallel degree: GPUs over tensor x pipeline parallelism. */
int64_t mp_dp_degree(const mp_settings *s);
/* Whether block l (from 0) of the model runs under full checkpointing: every
 * one, or with --checkpoint-every N blocks N, 2N, ... counted from 1. */
bool mp_layer_checkpointed(const mp_settings *s, int64_t l);
/* How many of `layers` blocks that is. */
int64_t mp_layers_checkpointed(const mp_settings *s, int64_t layers);
/* Bytes of one value the step computes and keeps in the precision's dtype
 * (activations, a 16-bit checkpoint): its row's act_bytes, 4 in fp32, else 2. */
double mp_element_bytes(mp_precision p);
/* Bytes of one optimizer-state value: a low-bit optimizer's bits / 8 (its
 * block scales apart), else the precision's state element (4, or 2 in pure bf16). */
double mp_state_value_bytes(const mp_settings *s);

/* Validate the combination as the planner proposes runs: runnable, and no ZeRO
 * stage idle on one GPU; 0 if valid. */
int mp_settings_check(const mp_model *m, const mp_settings *s, char *err);
/* A generating method's rows: the prompt and the completion, --seq their sum
 * (without --prompt-len a given --seq less the completion is the prompt; with
 * neither, 512 tokens); nothing for another method. 0, or -1 with err. */
int mp_settings_rollout_lengths(mp_settings *s, bool seq_given, char *err);
/* Whether the method takes this batch: KTO's KL batch needs 2 examples or more,
 * GRPO's generation batch a multiple of --generations. */
bool mp_settings_batch_allowed(const mp_settings *s);
/* Whether the combination runs at all (what a config someone has must pass). */
int mp_settings_runnable(const mp_model *m, const mp_settings *s, char *err);
/* A ZeRO stage on one data-parallel GPU shards nothing: the message, or NULL. */
const char *mp_settings_idle_sharding(const mp_settings *s, char *buf, size_t len);
/* Whether the plan runs under DeepSpeed: ZeRO-Offload is DeepSpeed's, and a
 * profile with DeepSpeed's reduce bucket (the deepspeed profile) shards with it; the estimate then counts DeepSpeed's
 * buckets whatever the framework profile. */
bool mp_runs_deepspeed(const mp_settings *s);
/* DeepSpeed's reduce_bucket_size and allgather_bucket_size default, in elements
 * (deepspeedai/DeepSpeed deepspeed/runtime/zero/config.py, pp_int(5e8)). */
#define MP_DEEPSPEED_BUCKET 500000000.0

/* The settings' framework, or the built-in PyTorch figures when none is set. */
const mp_framework *settings_framework(const mp_settings *s);
/* Whether a quantised base's output head is quantised too: the stack's plugin
 * swaps every linear layer (Lightning's bitsandbytes plugin) and the head is a
 * layer of its own, not the tied embedding. */
bool framework_quantises_head(const mp_model *m, const mp_settings *s);

/* What the user pinned, one bit a setting: a search does not vary a pinned one. */
enum { MP_PIN_PRECISION = 1 << 0, MP_PIN_OPTIMIZER = 1 << 1, MP_PIN_CKPT = 1 << 2,
       MP_PIN_ATTENTION = 1 << 3, MP_PIN_BATCH = 1 << 4, MP_PIN_ACCUM = 1 << 5,
       MP_PIN_SEQ = 1 << 6, MP_PIN_CE = 1 << 7, MP_PIN_LORA = 1 << 8,
       MP_PIN_QUANT = 1 << 9, MP_PIN_ZERO = 1 << 10, MP_PIN_OFFLOAD = 1 << 11,
       MP_PIN_TARGETS = 1 << 12, MP_PIN_GPUS = 1 << 13,
       MP_PIN_STEP = 1 << 14 /* --optimizer-impl: not an axis; the stack's default applies without it */ };

#endif

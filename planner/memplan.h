/*
 * memplan.h — the planner library shared by memplan, memtrain and memtop.
 *
 * What it does: from a model's architecture and a set of training settings,
 * compute per-component GPU memory (weights, gradients, optimizer state,
 * activations, overhead) and host memory for one training step, and search
 * every combination of techniques for the best plan that fits a budget.
 *
 * Conventions
 *   - Byte counts are doubles: exact up to 2^53 bytes, and 4-bit weights give
 *     fractional bytes per parameter.
 *   - Functions that can fail return 0 on success and -1 on failure, writing a
 *     one-line, lower-case message into `err` (MP_ERR_LEN bytes). The library
 *     never prints and never exits; the commands decide how to report.
 *   - Dimension legend used in comments: B micro-batch, T sequence, C hidden,
 *     L layers, NH heads, KV kv-heads, HD head dim, F ffn width, V vocabulary.
 */
#ifndef MEMPLAN_H
#define MEMPLAN_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MP_ERR_LEN 256
#define MP_NAME_LEN 64
#define MP_SOURCE_LEN 256

/* ---------- units ---------- */

#define MP_GiB 1073741824.0
#define MP_GB 1e9

/* Parse a memory size: "12GB" (10^9), "12GiB" (2^30), "24576MiB", "512MB",
 * "1.5TB", a bare number of bytes. `how` (may be NULL, 64 bytes) receives
 * e.g. "12 GB = 12,000,000,000 bytes (decimal GB)". */
int mp_parse_size(const char *text, double *bytes, char *how, char *err);
/* Parse a count such as "7e9", "7B", "125M", "1.3b", "350m". */
int mp_parse_count(const char *text, double *count, char *err);
/* Human-readable binary size: "13.04 GiB" (buffer >= 32 bytes). */
const char *mp_fmt_gib(double bytes, char *buf, size_t len);
/* A library release "MAJOR.MINOR[.PATCH]" (minor, patch < 100) as one comparable
 * number, MAJOR*10000 + MINOR*100 + PATCH; 0, or -1 when it is not one. */
int mp_version_parse(const char *text, int *version);
const char *mp_version_name(int version, char *buf, size_t len);
/* Count with thousands separators: "6,738,415,616". */
const char *mp_fmt_count(double n, char *buf, size_t len);

/* ---------- models ---------- */

typedef enum { MP_NORM_LAYER, MP_NORM_RMS } mp_norm;
typedef enum { MP_MLP_GELU, MP_MLP_GATED } mp_mlp;    /* GATED: SwiGLU/GeGLU */
typedef enum { MP_POS_LEARNED, MP_POS_ROPE, MP_POS_ALIBI } mp_pos;

/* How a frozen base's linear weights are stored: bitsandbytes int8/NF4 (quantised
 * at load), or GPTQ/AWQ (only as a pre-quantised checkpoint stores them). */
typedef enum { MP_QUANT_NONE, MP_QUANT_INT8, MP_QUANT_NF4, MP_QUANT_NF4_DQ, MP_QUANT_GPTQ, MP_QUANT_AWQ,
               MP_NQUANT } mp_quant;

typedef struct mp_model {
    char name[MP_NAME_LEN];   /* a label, one line of plain text (mp_quote) */
    char family[16];          /* transformers model_type: "gpt2", "llama", ... (module names, emit) */
    char hf_id[1024];         /* Hugging Face repo id ("meta-llama/Llama-3.1-8B") or the folder a
                               * config.json names, "" if unknown; any bytes: quote.h writes it */
    int64_t layers;           /* L */
    int64_t hidden;           /* C */
    int64_t heads;            /* NH */
    int64_t kv_heads;         /* KV (GQA/MQA when < NH) */
    int64_t head_dim;         /* HD, usually C/NH (Gemma differs) */
    int64_t ffn;              /* F, the MLP's inner width */
    int64_t vocab;            /* V */
    int64_t max_pos;          /* learned position rows (plus pos_offset) */
    int64_t pos_offset;       /* OPT keeps 2 extra position rows */
    mp_norm norm;
    mp_mlp mlp;
    mp_pos pos;
    bool qkv_bias, out_bias, mlp_bias, norm_bias, head_bias;
    bool tied;                /* output head shares the token embedding */
    bool fused_qkv;           /* one qkv module (GPT-2, Phi-3): LoRA sees one */
    bool embed_norm;          /* BLOOM: a LayerNorm after the embedding */
    bool final_norm;
    int norms_per_layer;      /* 2, or 1 for parallel blocks (Falcon-7B) */
    bool parallel_residual;   /* attention and MLP both read the layer's input (GPT-NeoX, Phi, Falcon) */
    bool rope_partial;        /* rotary on part of each head, the rest concatenated back (GPT-NeoX, Phi) */
    bool gelu_python;         /* the MLP's GELU is transformers' gelu_new, composed in Python (GPT-2, Phi) */
    bool attn_softcap;        /* attention scores soft-capped, tanh(s / c) * c (Gemma 2 attn_logit_softcapping) */
    bool logit_softcap;       /* the logits soft-capped likewise (Gemma 2 final_logit_softcapping) */
    /* Mixture of experts: experts == 0 means a dense MLP. */
    int64_t experts, top_k, shared_experts;
    int64_t expert_ffn;       /* inner width of one expert (default F) */
    int64_t shared_ffn;       /* inner width of all shared experts together */
    int64_t dense_layers;     /* the first layers keep a dense MLP of width F (DeepSeek-MoE) */
    double published_params;  /* from the model card, 0 if unknown */
    /* A pre-quantised checkpoint (config.json's quantization_config): its linear
     * layers as stored, MP_QUANT_NONE for a 16/32-bit checkpoint. */
    mp_quant stored_quant;
    int quant_bits;           /* GPTQ/AWQ bits per weight */
    int64_t quant_group;      /* GPTQ/AWQ group size; 0 (-1 in the config): one group per input row */
    char source[MP_SOURCE_LEN];
} mp_model;

/* Parameter counts by part (whole model, all experts). */
typedef struct mp_params {
    double embed, pos, head;        /* token embedding, positions, untied head */
    double attn, mlp, norms, router; /* summed over layers */
    double total;
    double active;                  /* per token: top_k experts only */
} mp_params;

/* Fill the family preset ("gpt2" or "llama") for norm, MLP, positions,
 * biases and tying; dimensions are left alone. */
int mp_model_preset(mp_model *m, const char *family, char *err);
/* Fill derived defaults (head_dim, kv_heads, ffn...) and validate. */
int mp_model_finish(mp_model *m, char *err);
/* A standard decoder shape for about `params` parameters (Llama-like). */
int mp_model_from_params(double params, mp_model *m, char *err);
/* A Hugging Face config.json. */
int mp_model_from_hf_config(const char *path, mp_model *m, char *err);
/* The same from a config.json's text in memory; `name` stands for its path in
 * errors and labels the model when the config names none. */
int mp_model_from_hf_json(const char *text, size_t len, const char *name, mp_model *m, char *err);
void mp_param_count(const mp_model *m, mp_params *p);

/* A linear module inside one layer, for LoRA counting. */
typedef struct mp_linear {
    const char *name;   /* "q","k","v","o","qkv","gate","up","down" */
    unsigned target;    /* the MP_LORA_* bits it answers to ("qkv": q|k|v) */
    int64_t in, out;
    int64_t count;      /* per layer (experts multiply MLP modules) */
} mp_linear;
/* The layer's linear modules as the model really has them (fused or not). */
int mp_model_linears(const mp_model *m, mp_linear *out, int max);

/* ---------- profiles (CSV files in profiles/) ---------- */

typedef struct mp_gpu {
    char name[MP_NAME_LEN];
    char label[MP_NAME_LEN];  /* "NVIDIA A100 40GB SXM" */
    double mem_bytes;         /* usable device memory as sold, bytes */
    bool bf16;
    double tflops_16;         /* dense fp16/bf16 tensor-core peak, TFLOP/s */
    double tflops_32;         /* fp32 (non-tensor) peak */
    double bandwidth;         /* memory bandwidth, bytes/s */
    double pcie;              /* host link, bytes/s per direction */
    char arch[16];            /* generation: ampere, ada, hopper... (speed efficiency) */
    double nvlink;            /* GPU-to-GPU fabric per direction, bytes/s; 0: over PCIe */
    double ib;                /* network per GPU across nodes, bytes/s; 0: not stated */
    bool generic_speed;       /* a bare size: speed figures of a stated generic card */
    double context_bytes;     /* held outside the caching allocator while training runs (CUDA
                               * context, libraries' handles, loaded kernels), measured on this
                               * card; 0: the framework profile's */
    char source[MP_SOURCE_LEN];
    char how[64];             /* for sizes: how the size was read */
} mp_gpu;

/* Which framework's behaviour a profile follows (a calibrated "pytorch-a100" is pytorch). */
typedef enum { MP_FW_OTHER, MP_FW_PYTORCH, MP_FW_DEEPSPEED, MP_FW_MEGATRON, MP_FW_MEMTRAIN } mp_fw_kind;

typedef struct mp_framework {
    char name[MP_NAME_LEN];
    mp_fw_kind kind;
    double context_bytes;     /* CUDA context and libraries, outside the allocator */
    double workspace_bytes;   /* cuBLAS/cuDNN workspaces inside the allocator */
    double round_bytes;       /* allocator block rounding */
    double frag;              /* reserve beyond the allocator's replay, per allocated byte: micro-batches of varying shape */
    double fixed_bytes;       /* other fixed allocations */
    bool autocast_cache;      /* autocast keeps 16-bit weight copies */
    bool fp32_logits;         /* loss computed on an fp32 copy of the logits */
    /* Behaviour that differs between PyTorch versions and devices (measured
     * in tests/validation/; defaults are CUDA PyTorch 2.x): */
    double adam_temps;        /* parameter-sized fp32 temporaries in the AdamW step */
    double dropout_mask_bytes;/* per masked element; 0: the activation's element size */
    bool autocast_softmax_fp32; /* autocast runs softmax in fp32 (CUDA), not 16-bit (CPU) */
    bool mean_keeps_input;    /* mean() keeps its input for backward (torch 1.x) */
    /* How the stack trains, where stacks differ (profiles/frameworks.csv cites each): */
    bool hf_modeling;         /* transformers' modeling code: RMSNorm upcasts to fp32, eager attention repeats K/V */
    bool ddp_grad_copy;       /* DDP copies gradients into its buckets (gradient_as_bucket_view=False) */
    double zero_reduce_bucket;/* ZeRO-2/3 reduce bucket in elements (DeepSpeed reduce_bucket_size); 0: none */
    bool fp32_main_grad;      /* 16-bit training accumulates gradients in fp32 buffers (Megatron main_grad) */
    bool zero1_whole_tensors; /* ZeRO-1 deals whole tensors to ranks (PyTorch's ZeroRedundancyOptimizer) */
    bool amp;                 /* the stack runs torch.autocast mixed precision (amp-bf16, amp-fp16) */
    bool pure16;              /* the stack trains 16-bit weights with no fp32 master copy (pure-bf16) */
    bool adapter_fp32;        /* LoRA adapters kept in fp32 over a 16-bit base (PEFT autocast_adapter_dtype) */
    bool sdpa_full_kv;        /* the model repeats grouped K/V heads before SDPA (LitGPT, torchtune) */
    bool kbit_fp32_rest;      /* QLoRA's non-quantised weights cast to fp32 (PEFT prepare_model_for_kbit_training) */
    bool bnb_4bit;            /* a 4-bit base runs through bitsandbytes' MatMul4Bit (not torchao's NF4) */
    bool fused_qkv;           /* the stack fuses q, k and v into one projection for every model (LitGPT) */
    bool lora_zero_pad;       /* LoRA on part of a fused qkv pads B's output with index_copy, which keeps it (LitGPT) */
    bool norm_fp32_product;   /* RMSNorm multiplies its weight in fp32, then casts: a trained weight keeps fp32 (LitGPT) */
    bool attn_out_copy;       /* attention's output reaches the o-projection as a copy of its own (LitGPT) */
    bool python_gelu;         /* a gelu_new checkpoint runs transformers' Python GELU, which keeps its intermediates */
    bool fsdp_mixed_units;    /* an FSDP unit flattens its frozen base and its adapters together (use_orig_params) */
    bool fsdp_no_sync;        /* accumulation micro-batches run under FSDP's no_sync(): unsharded gradients */
    bool untied_head;         /* the stack builds its own output head, so a tied checkpoint's is a copy (LitGPT) */
    bool quantised_head;      /* a quantised base quantises the output head too (Lightning's bitsandbytes plugin) */
    bool logits_kept;         /* the training loop holds the model's logits (every chunk) through the backward */
    double dequant_bytes;     /* bytes per weight a 4-bit matmul materialises while it runs (16-bit copy: 2) */
    bool softcap_eager;       /* soft-capped attention runs as plain matmuls and softmax, no fused kernel (LitGPT) */
    double nccl_comms;        /* NCCL communicators a data-parallel run opens on each GPU (DeepSpeed: 2) */
    bool managed_paging;      /* paged optimizers page their states in CUDA managed memory (0: on the CPU) */
    double ce_output_chunks;  /* a chunked loss: the model returns this many chunks of logits as a list (torchtune: 8) */
    double act_scale;         /* calibrated factor on activations (1: as modelled) */
    char source[MP_SOURCE_LEN];
} mp_framework;

/* Where the profile CSVs live: $MEMPLAN_PROFILES, next to the executable,
 * or the install prefix. Loaded once; thread-unsafe on first call. */
const char *mp_profiles_dir(void);
/* Load the profiles now (every lookup does it on first use); 0, or -1 with err. */
int mp_profiles_load(char *err);
/* Forget the loaded profiles and the folder found (the next lookup loads them
 * again, from $MEMPLAN_PROFILES as it is then): tests and fuzzing. Pointers
 * from mp_*_at and mp_framework_find are invalid after it. */
void mp_profiles_unload(void);
int mp_model_lookup(const char *name, mp_model *m, char *err);
int mp_gpu_lookup(const char *name_or_size, mp_gpu *g, char *err);
int mp_framework_lookup(const char *name, mp_framework *f, char *err);
/* The loaded profile itself (a stable pointer), or a file written by calibrate. */
const mp_framework *mp_framework_find(const char *name, char *err);
/* Iterate profiles: returns NULL past the end. */
const mp_model *mp_model_at(int i);
const mp_gpu *mp_gpu_at(int i);
const mp_framework *mp_framework_at(int i);
/* Load a framework profile written by `memplan calibrate`. */
int mp_framework_load_file(const char *path, mp_framework *f, char *err);

/* ---------- settings: one training configuration ---------- */

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

/* LoRA target bits. */
enum { MP_LORA_Q = 1, MP_LORA_K = 2, MP_LORA_V = 4, MP_LORA_O = 8,
       MP_LORA_GATE = 16, MP_LORA_UP = 32, MP_LORA_DOWN = 64,
       MP_LORA_ATTN = 15, MP_LORA_MLP = 112, MP_LORA_ALL = 127,
       MP_LORA_HEAD = 128 /* the output head (LitGPT lora_head); not part of "all" */ };

typedef struct mp_settings {
    mp_precision precision;
    mp_optimizer optimizer;
    int64_t adam8_block;      /* 8-bit block size: 256 (bitsandbytes now), 2048 (before) */
    mp_ckpt checkpointing;
    mp_attention attention;
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
    const mp_framework *framework; /* from mp_framework_find; NULL: pytorch */
} mp_settings;

/* Sensible defaults: fp32 AdamW, B=1, T=min(2048, max_pos), one GPU, pytorch. */
void mp_settings_default(mp_settings *s, const mp_model *m);

/* ---------- the settings vocabulary (vocabulary.c) ----------
 * One descriptor row per value of each setting: its stable name (flags, configs,
 * JSON), other accepted spellings, help, the traits the estimate reads, and its
 * spelling in each engine the emitters target. Every row starts with an mp_value. */
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
    const char *hf_flag;      /* TrainingArguments flag set True: "bf16", "fp16", or NULL */
    const char *torch_dtype;  /* from_pretrained(torch_dtype=...) for the trainable weights */
    const char *accelerate;   /* accelerate config mixed_precision */
    const char *deepspeed;    /* the DeepSpeed block that means it: "bf16", "fp16"; NULL: none (fp32) or no form */
    const char *torchtune;    /* torchtune's dtype: "fp32", "bf16"; NULL: no form (it has no autocast, no masters) */
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
    const char *hf_optim;     /* TrainingArguments optim */
    const char *deepspeed;    /* DeepSpeed optimizer type, or NULL: DeepSpeed builds none */
    const char *torchtune;    /* the optimizer's _component_ in a torchtune config, or NULL: none written */
} mp_optimizer_desc;

typedef struct mp_ckpt_desc {
    mp_value v;
    bool hf_gradient_checkpointing;      /* TrainingArguments gradient_checkpointing */
    bool fsdp_activation_checkpointing;  /* accelerate fsdp_config */
    bool deepspeed_partition_activations;
} mp_ckpt_desc;

typedef struct mp_attention_desc {
    mp_value v;
    const char *hf_attn;      /* from_pretrained(attn_implementation=...) */
} mp_attention_desc;

typedef struct mp_quant_desc {
    mp_value v;
    int bits;                 /* 0: not quantised; GPTQ/AWQ: the checkpoint's own (mp_model.quant_bits) */
    bool double_quant;        /* bnb_4bit_use_double_quant */
    bool stored_only;         /* only as a pre-quantised checkpoint stores it: never searched */
    const char *quant_method; /* transformers' quantization_config quant_method */
    const char *hf_packages;  /* what transformers needs installed to load it */
    int bnb_keeps_input_before; /* bitsandbytes releases before this one keep each quantised layer's input */
} mp_quant_desc;

typedef struct mp_offload_desc {
    mp_value v;
    bool optimizer_on_host;   /* DeepSpeed offload_optimizer, FSDP offload */
    bool params_on_host;      /* DeepSpeed offload_param */
} mp_offload_desc;

typedef struct mp_loader_desc {
    mp_value v;
    bool hf_streaming;        /* datasets load_dataset(streaming=...) */
} mp_loader_desc;

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
/* The index of the row spelled `s` (name or alias), or -1. */
int mp_value_index(const mp_value *(*value_at)(int), const char *s);
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
/* "q,k,v,o", "qkv", "attn", "mlp", "all" (and PEFT's module names) -> bits; 0 on success. */
int mp_lora_targets_parse(const char *s, unsigned *bits);
/* bits -> "q,k,v,o" */
const char *mp_lora_targets_name(unsigned bits, char *buf, size_t len);

/* ---------- estimate ---------- */

enum { MP_WEIGHTS, MP_GRADIENTS, MP_OPTIMIZER, MP_ACTIVATIONS, MP_OVERHEAD, MP_NCOMP };
/* "weights", "gradients", "optimizer", "activations", "overhead" */
const char *mp_component_name(int c);

/* One named contribution behind a number, for --explain. */
typedef struct mp_term {
    int component;             /* MP_WEIGHTS.. or -1 for host */
    char name[48];
    char formula[112];
    double bytes;
} mp_term;

/* One moment in a training step, with what is allocated then. */
typedef struct mp_phase {
    const char *name;          /* a string literal */
    double comp[MP_NCOMP];     /* overhead here: allocator-side fixed allocations */
    double total;
} mp_phase;

#define MP_MAX_TERMS 64
#define MP_MAX_PHASES 12

typedef struct mp_estimate {
    mp_params params;
    double trainable_params;
    double peak[MP_NCOMP];        /* peak of each component on one GPU, bytes */
    double at_peak[MP_NCOMP];     /* each component at the moment of the total peak */
    double logits_bytes;          /* the logits' share of activations at the peak */
    double total_bytes;           /* peak allocated (torch.cuda.max_memory_allocated) */
    double reserved_bytes;        /* allocator reserved at the peak */
    double allocator_cache_bytes; /* of it, what the step's replay through the caching allocator adds */
    double device_bytes;          /* reserved + context: what nvidia-smi shows */
    double host_bytes;            /* host RAM of one process at its peak (load or training) */
    double host_data_bytes;       /* of which the data loader */
    double host_offload_bytes;    /* of which states offloaded (ZeRO-Offload) */
    double host_baseline_bytes;   /* the training process itself (interpreter, libraries) */
    double host_load_bytes;       /* one process while it loads the checkpoint */
    double host_train_bytes;      /* one process while it trains */
    double host_node_bytes;       /* every process of one node, at the larger of the two */
    int host_ranks_per_node;      /* processes (one per GPU) on a node */
    int peak_phase;               /* index into phases */
    mp_phase phases[MP_MAX_PHASES];
    int nphases;
    double act_per_layer;         /* saved activations of one layer, no checkpointing */
    double model_states_bytes;    /* the ZeRO paper's model states per GPU (mp_model_states_bytes),
                                     beside the components the stack really keeps; filled by the
                                     detailed run (mp_estimate_run), 0 in the search's estimates */
    double resident_bytes;        /* allocated between steps (the step's starting point) */
    /* Speed model */
    double flops_per_step;        /* incl. recomputation, all GPUs */
    double step_seconds;          /* one optimizer step (accum micro-batches) */
    double tokens_per_s;          /* whole job */
    double mfu;                   /* assumed achieved fraction of peak */
    /* Last, so that an estimate without --explain need not clear them. */
    int nterms;
    mp_term terms[MP_MAX_TERMS];
} mp_estimate;

/* One line stating the speed model's error against published throughput. */
const char *mp_speed_error_note(void);

/* Validate the combination (e.g. ZeRO-3 needs several GPUs); 0 if valid. */
int mp_settings_check(const mp_model *m, const mp_settings *s, char *err);
/* Whether the plan runs under DeepSpeed: ZeRO-Offload is DeepSpeed's, and a
 * profile with DeepSpeed's reduce bucket (the deepspeed profile) shards with it; the estimate then counts DeepSpeed's
 * buckets whatever the framework profile. */
bool mp_runs_deepspeed(const mp_settings *s);
/* DeepSpeed's reduce_bucket_size and allgather_bucket_size default, in elements
 * (deepspeedai/DeepSpeed deepspeed/runtime/zero/config.py, pp_int(5e8)). */
#define MP_DEEPSPEED_BUCKET 500000000.0
/* Estimate one configuration. The GPU may be NULL (no speed estimate). */
int mp_estimate_run(const mp_model *m, const mp_settings *s, const mp_gpu *gpu,
                    mp_estimate *e, char *err);
/* LoRA's trainable parameters from the real module shapes (GQA, fused qkv). */
double mp_lora_params(const mp_model *m, int64_t rank, unsigned targets);
/* The ZeRO paper's model states per GPU: (2 + 2 + K) bytes per trained
 * parameter sharded as the stage shards them, plus a frozen base as stored. */
double mp_model_states_bytes(const mp_model *m, const mp_settings *s, double total_params);
/* Bytes per stored base weight (int8, NF4, NF4 with double quantisation, and
 * GPTQ/AWQ at the checkpoint's bits and group size), and the bytes a format
 * stores per linear layer beside its weights (GPTQ's g_idx). */
double mp_quant_bytes_per_param(const mp_model *m, mp_quant q);
double mp_quant_index_bytes(const mp_model *m, mp_quant q);
/* Bytes the budget is compared with: device_bytes. */
bool mp_fits(const mp_estimate *e, double budget_bytes, double headroom);

/* ---------- search ---------- */

/* A compact result per combination; re-run mp_estimate_run for the details. */
typedef struct mp_candidate {
    mp_settings s;
    mp_task task;             /* full, lora or qlora */
    int tier;                 /* the optimizer family: 0 AdamW-class, 1 other adaptive, 2 SGD */
    bool fits;
    double device_bytes, total_bytes, host_bytes, trainable;
    double at_peak[MP_NCOMP];
    double tokens_per_s;
    double offloaded_bytes;   /* states moved to host RAM */
    double host_node_bytes;   /* host RAM of one node's processes */
    double band_best;         /* tokens/s of the fastest plan it is ranked against (its group) */
    bool verified;            /* estimated whole (the allocator replayed), not only screened */
} mp_candidate;

/* The speed model's error: plans within this fraction of the fastest of
 * their group are ranked as equally fast, the simpler first. */
#define MP_SPEED_TIE 0.05

/* What the user pinned: a dimension with its bit set is not varied. */
enum { MP_PIN_PRECISION = 1 << 0, MP_PIN_OPTIMIZER = 1 << 1, MP_PIN_CKPT = 1 << 2,
       MP_PIN_ATTENTION = 1 << 3, MP_PIN_BATCH = 1 << 4, MP_PIN_ACCUM = 1 << 5,
       MP_PIN_SEQ = 1 << 6, MP_PIN_CE = 1 << 7, MP_PIN_LORA = 1 << 8,
       MP_PIN_QUANT = 1 << 9, MP_PIN_ZERO = 1 << 10, MP_PIN_OFFLOAD = 1 << 11,
       MP_PIN_TARGETS = 1 << 12, MP_PIN_GPUS = 1 << 13 };

typedef struct mp_search_opts {
    mp_task task;
    unsigned pinned;
    int64_t global_batch;     /* sequences per optimizer step, 0: none asked */
    double budget_bytes;      /* per GPU */
    double headroom;          /* fraction kept free, default 0.10 */
    double host_budget_bytes; /* host RAM per node; 0: no limit */
    int64_t max_batch;        /* largest micro-batch tried (default 64) */
    bool prefer_speed;        /* rank by tokens/s alone, not task and optimizer first */
    bool exhaustive;          /* also estimate dominated twins (fp16 beside bf16, paged beside
                                 unpaged), which otherwise are counted but skipped */
    /* Restrict unpinned axes to some values: bit (1 << value) of mp_precision and
     * mp_optimizer; 0 tries them all. (memplan table searches the AdamW-class tier
     * first, which outranks the others whenever one of its plans fits.) */
    unsigned only_precisions, only_optimizers;
    /* Only plans this predicate accepts: 0, else -1 with why it does not (one line);
     * NULL: any. `plan --emit X` passes X's mp_emit_check (emit.h: mp_emit_accept). */
    int (*accept)(const void *ctx, const mp_model *m, const mp_settings *s, char *why);
    const void *accept_ctx;
} mp_search_opts;

typedef struct mp_search_result {
    mp_candidate *cands;      /* all considered, best first (fits, then score) */
    size_t n, cap;
    size_t considered;        /* combinations in the space */
    size_t evaluated;         /* estimates computed (larger batches after a miss are pruned) */
    size_t fitting;
    size_t host_limited;      /* estimates that fit the GPU but not the host RAM */
    size_t unwritable;        /* micro-batches of combinations opts.accept refused: skipped */
} mp_search_result;

/* Evaluate every combination the pins allow; `base` holds the pinned values. */
/* Why `alt` ranks below `best` in a search ranked with prefer_speed: the rule
 * that decided, and by how much, into buf (one line). */
/* A memtrain run's model: the family's preset ("gpt2", "llama") around the
 * dimensions already in m, its head tied or not, learned positions defaulting
 * to the sequence, named as memtrain names it (memtrain-gpt2-2x64). Shared by
 * memtrain's prediction and memtop's what-if view of a run. */
int mp_memtrain_model(mp_model *m, const char *family, bool tied, int64_t seq, char *err);

/* A fitting plan's place in the ranking's groups (the optimizer family, offload,
 * the kind of training, reduced numerics: search.c's rules 2 to 5), smaller first;
 * speed and simplicity decide within a group. */
int mp_rank_group(const mp_candidate *k, bool prefer_speed);
const char *mp_rank_reason(const mp_candidate *best, const mp_candidate *alt, bool prefer_speed, char *buf,
                           size_t len);
int mp_search(const mp_model *m, const mp_settings *base, const mp_gpu *gpu,
              const mp_search_opts *o, mp_search_result *r, char *err);
void mp_search_free(mp_search_result *r);

/* Inverse questions, by root finding on the estimate (GSL Brent):
 * "max-batch", "max-seq", "max-params". Returns 0, -1 on bad input, or -2
 * when even the smallest value does not fit. */
int mp_solve(const char *what, const mp_model *m, const mp_settings *s, const mp_gpu *gpu,
             double budget_bytes, double headroom, double *answer, mp_model *solved, char *err);

/* ---------- output ---------- */

/* Write `data` to `path` atomically: a temporary file made beside it with O_EXCL
 * (a link planted there is never followed), fsync, rename over the path (a link
 * at the path itself is replaced, not followed). "-" is standard output; a
 * character device, FIFO or socket at the path is written through, a directory
 * or block device refused; an existing file keeps its mode and owner, a new one
 * gets 0644; temporary files of writers that died are removed. */
int mp_write_file_atomic(const char *path, const char *data, size_t len, char *err);
/* The same with a new file's permission bits (0644, 0755). */
int mp_write_file_atomic_mode(const char *path, const char *data, size_t len, unsigned mode, char *err);
/* The same for a file that must be one (a checkpoint, a manifest): a device or
 * FIFO at the path is refused, not written through (a planted FIFO would block
 * the write until someone reads it); "-" is a file named "-". */
int mp_write_regular_file_atomic(const char *path, const char *data, size_t len, char *err);
/* Several files into the existing directory `dir`, all or none: each is
 * written in full into a temporary folder inside `dir` before any is renamed
 * into place, and a rename that fails puts back what the others replaced. */
typedef struct mp_out_file {
    const char *name;          /* a plain file name, no '/' */
    const char *data;
    size_t len;
    unsigned mode;             /* for a new file */
} mp_out_file;
#define MP_MAX_OUT_FILES 8
int mp_write_files_atomic(const char *dir, const mp_out_file *files, int n, char *err);
/* Print "PROG: error: MESSAGE" and, with a hint, " (HINT)", as one line on stderr:
 * the form every command's errors take (control characters written as mp_quote does). */
void mp_verror(const char *prog, const char *hint, const char *fmt, va_list ap);
/* `s` as one line of plain text (a message, a terminal, a comment): characters that
 * would break the line or change what a reader sees are written as utf8.h's
 * utf8_text_next writes them (\n, \r, \t, \xNN, \u{XXXX}); cut with "..." to fit
 * `len` bytes (at least 4). Returns buf. */
const char *mp_quote(const char *s, char *buf, size_t len);
/* An input file `path` (a `what` such as "config"), before it is opened: 0 for
 * a regular file of at most max_bytes or one that does not exist (its open
 * says why), else -1 with err (a device or a pipe would be read forever). */
int mp_check_input_file(const char *what, const char *path, double max_bytes, char *err);

#endif

/* profiles.h — models, GPUs and framework profiles, read from the CSV files
 * in profiles/ (or $MEMPLAN_PROFILES). */
#ifndef MP_PROFILES_H
#define MP_PROFILES_H

#include <stdbool.h>

#include "model/model.h"

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
    double host_ram_bytes;    /* host RAM per node of the card's typical machine (a desktop, a
                               * cloud instance: host_ram_source); the search's default limit */
    char source[MP_SOURCE_LEN];
    char host_ram_source[MP_SOURCE_LEN];
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
    bool fp32_outputs;        /* under autocast the prepared model returns its outputs in fp32 (accelerate's
                               * convert_outputs_to_fp32): the logits a TRL loss reads are fp32 */
    double dequant_bytes;     /* bytes per weight a 4-bit matmul materialises while it runs (16-bit copy: 2) */
    bool softcap_eager;       /* soft-capped attention runs as plain matmuls and softmax, no fused kernel (LitGPT) */
    double nccl_comms;        /* NCCL communicators a data-parallel run opens on each GPU (DeepSpeed: 2) */
    bool managed_paging;      /* paged optimizers page their states in CUDA managed memory (0: on the CPU) */
    double ce_output_chunks;  /* a chunked loss: the model returns this many chunks of logits as a list (torchtune: 8) */
    double optimizer_impl;    /* the step the stack takes without --optimizer-impl: an mp_step_impl (0 foreach,
                                 1 for-loop, 2 fused) */
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
/* A model profile by name or alias; an instruct or chat variant of a profile
 * ("-instruct", "-it", "-chat", "-hf"; a Hub id, org and all) is its base's
 * shapes, with the variant's Hub id when one was given. */
int mp_model_lookup(const char *name, mp_model *m, char *err);
/* Whether `name` finds a profile only as such a variant. */
bool mp_model_is_variant(const char *name);
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

#endif

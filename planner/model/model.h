/* model.h — a model's architecture: its shape, where it comes from (a family
 * preset, a parameter count, a Hugging Face config.json), its exact parameter
 * counts and the linear modules LoRA adapts. */
#ifndef MP_MODEL_H
#define MP_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MP_NAME_LEN 64
#define MP_SOURCE_LEN 256

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
    int64_t head_out;         /* the head's outputs: 0, the vocabulary; a reward model's score head has 1
                               * (AutoModelForSequenceClassification, num_labels 1), never tied */
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

/* Outputs of the model's head: the vocabulary, or a score head's labels. */
static inline double mp_head_outputs(const mp_model *m) { return m->head_out > 0 ? (double)m->head_out : (double)m->vocab; }

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
/* Whether --hf-config's value reads as a Hub id (ORG/NAME) that is no file here. */
bool mp_hf_id_not_file(const char *given);
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

/* LoRA target bits. */
enum { MP_LORA_Q = 1, MP_LORA_K = 2, MP_LORA_V = 4, MP_LORA_O = 8,
       MP_LORA_GATE = 16, MP_LORA_UP = 32, MP_LORA_DOWN = 64,
       MP_LORA_ATTN = 15, MP_LORA_MLP = 112, MP_LORA_ALL = 127,
       MP_LORA_HEAD = 128 /* the output head (LitGPT lora_head); not part of "all" */ };

/* LoRA's trainable parameters from the real module shapes (GQA, fused qkv). */
double mp_lora_params(const mp_model *m, int64_t rank, unsigned targets);
/* Bytes per stored base weight (int8, NF4, NF4 with double quantisation, and
 * GPTQ/AWQ at the checkpoint's bits and group size), and the bytes a format
 * stores per linear layer beside its weights (GPTQ's g_idx). */
double mp_quant_bytes_per_param(const mp_model *m, mp_quant q);
double mp_quant_index_bytes(const mp_model *m, mp_quant q);

#endif

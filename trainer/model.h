/*
 * model.h — the decoder-only transformer: parameters, forward, backward,
 * activation storage and checkpointing.
 *
 * Layer l (pre-norm):
 *   h1   = norm1(x)                       LayerNorm+bias (gpt2) or RMSNorm (llama)
 *   qkv  = h1 @ Wqkv^T (+ b)  [+ LoRA]    (N, QW); rotary on q,k (llama)
 *   atty = attention(qkv)                 (N, AW), causal, GQA
 *   res2 = x + atty @ Wo^T (+ b) [+ LoRA] (N, C)
 *   h2   = norm2(res2)
 *   fch  = h2 @ Wfc^T (+ b) [+ LoRA]      (N, FW): GELU input, or [gate | up]
 *   fcg  = gelu(fch) or silu(gate)*up     (N, F)
 *   out  = res2 + fcg @ Wproj^T (+ b) [+ LoRA]
 * then lnf = normf(x_L), logits = lnf @ W^T with W = wte (gpt2, tied) or the
 * head (llama), and the mean cross-entropy over the N = B*T tokens. A reward
 * model's head is a (1, C) score (no bias), whose output at each row's last
 * position is the row's reward.
 *
 * Parameters live in one contiguous allocation carved into the tensors of
 * mt_param_table (per-layer tensors are stored (L, ...) contiguously).
 * The buffers and their sizes are the rows of planner/memtrain/memtrain_inventory.c
 * (MEMORY.md explains their lifetimes).
 */
#ifndef MT_MODEL_H
#define MT_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "lora.h"
#include "matmul.h"
#include "precision.h"

typedef struct mt_dims {
    size_t B, T, N, C, L, NH, KV, HD, F, V, maxpos;
    size_t QW, AW, FW;
    size_t r;
} mt_dims;

/* Parameter tensors. Per-layer tensors have L copies. */
enum {
    MT_P_WTE,   /* (V, C)      token embedding (and the head if tied) */
    MT_P_WPE,   /* (maxpos, C) learned positions (gpt2) */
    MT_P_LN1W,  /* (L, C) */
    MT_P_LN1B,  /* (L, C)      gpt2 */
    MT_P_WQKV,  /* (L, QW, C)  rows: q heads | k heads | v heads */
    MT_P_BQKV,  /* (L, QW)     gpt2 */
    MT_P_WO,    /* (L, C, AW) */
    MT_P_BO,    /* (L, C)      gpt2 */
    MT_P_LN2W,  /* (L, C) */
    MT_P_LN2B,  /* (L, C)      gpt2 */
    MT_P_WFC,   /* (L, FW, C)  gpt2: c_fc; llama: rows gate | up */
    MT_P_BFC,   /* (L, FW)     gpt2 */
    MT_P_WPROJ, /* (L, C, F) */
    MT_P_BPROJ, /* (L, C)      gpt2 */
    MT_P_LNFW,  /* (C) */
    MT_P_LNFB,  /* (C)         gpt2 */
    MT_P_HEAD,  /* (V, C)      llama (untied); a reward model's (1, C) score head, both families */
    MT_NPARAM
};

typedef struct mt_param_info {
    const char *name;
    size_t per_layer; /* elements of one copy (0: absent in this model) */
    size_t copies;    /* L for per-layer tensors, else 1 */
    bool matrix;      /* gets weight decay */
    bool linear;      /* a layer linear: NF4 under QLoRA, LoRA-able */
} mt_param_info;

/* Saved-activation slots of one layer (besides its input x). */
enum {
    MT_S_LN1, MT_S_LN1_MEAN, MT_S_LN1_RSTD, MT_S_QKV, MT_S_ATT, MT_S_LSE, MT_S_ATTY, MT_S_RES2,
    MT_S_LN2, MT_S_LN2_MEAN, MT_S_LN2_RSTD, MT_S_FCH, MT_S_FCG,
    MT_S_LORA, /* MT_S_LORA + k: u of LoRA module k, (N, r) */
    MT_NSLOT = MT_S_LORA + MT_MAX_LORA
};

typedef struct mt_model mt_model;

/* ZeRO-2: where the backward hands its gradients: n elements of the parameter
 * storage type at `g`, the flat trainable vector's [off, off + n). The sink may
 * overwrite them (they are zeroed after). Every rank calls it in the same
 * order. Returns 0, or -1 with a message. */
typedef int (*mt_grad_sink)(void *ctx, size_t off, void *g, size_t n);

/* The config must have been through mt_config_finish(). */
int mt_model_create(const mt_config *c, mt_model **out);
void mt_model_free(mt_model *m);

const mt_config *mt_model_config(const mt_model *m);
const mt_dims *mt_model_dims(const mt_model *m);
const mt_lora_layout *mt_model_lora(const mt_model *m);
void mt_model_param_info(const mt_model *m, int t, mt_param_info *info);
/* Storage type of parameters and of saved activations. */
mt_dtype mt_model_dtype(const mt_model *m);

/* Forward over one micro-batch: inputs, targets (B,T) stay referenced until
 * backward. Returns the mean loss over the N tokens in *loss. dscale is the
 * gradient of the step objective w.r.t. this mean loss (loss_scale / accum);
 * 0 means evaluation only (call mt_model_release, not backward). With chunked
 * cross-entropy the head's gradients are produced here already. */
int mt_model_forward(mt_model *m, const int32_t *inputs, const int32_t *targets, float dscale,
                     float *loss);
/* A preference method's reference alone (dpo, ipo with reference model or adapter):
 * its forward on inputs, targets (B,T), no gradients, its transients freed; *logps
 * points at its B log-probability sums (the model's, until the next forward). For
 * tests and tools: mt_model_forward runs it itself. */
int mt_model_reference(mt_model *m, const int32_t *inputs, const int32_t *targets, const float **logps);
/* Backward: accumulates into the gradients, frees the saved activations. */
int mt_model_backward(mt_model *m);
/* Free saved activations without a backward (after an evaluation forward). */
void mt_model_release(mt_model *m);
void mt_model_zero_grad(mt_model *m);
/* ZeRO-2 (zero = 2): the sink the backward hands each layer's gradients to, right
 * after that layer, and the other gradients at its end. Without a sink they are
 * dropped. */
void mt_model_set_grad_sink(mt_model *m, mt_grad_sink sink, void *ctx);
/* ZeRO-0/1 over several ranks: where the backward of a step's last micro-batch
 * announces each range of the trainable gradients (n elements of the parameter
 * storage type at g, in the vector mt_model_trainable gives) as soon as they are
 * final: a layer's right after that layer, the embeddings', final norm's and
 * head's at the end; between a layer's matmuls with g = NULL, n = 0, to let the
 * sums in flight move on. Every rank calls it in the same order. NULL: none. */
typedef int (*mt_grad_ready)(void *ctx, void *g, size_t n);
void mt_model_set_grad_ready(mt_model *m, mt_grad_ready ready, void *ctx);
/* A stop between layers (SIGINT/SIGTERM in memtrain): asked after every layer of
 * the forward and of the backward; every rank asks in the same order, so the
 * question may be a collective (memtrain agrees over the ranks). When it says
 * true the pass releases the saved activations and returns MT_MODEL_STOPPED; the
 * gradients are then partial (zero them). NULL: never. */
#define MT_MODEL_STOPPED 1
typedef bool (*mt_model_stop_fn)(void *ctx);
void mt_model_set_stop(mt_model *m, mt_model_stop_fn stop, void *ctx);
/* ZeRO-3 (zero = 3): the parameters' shard changed (an update, a load): the
 * next forward gathers every layer's weights again. */
void mt_model_params_changed(mt_model *m);

/* The trainable parameters as one flat group (base model, or the LoRA
 * adapters when lora_rank > 0). */
typedef struct mt_group {
    size_t n;
    void *w;        /* storage, dtype */
    float *master;  /* fp32 master copy (mixed precision) or NULL */
    void *grad;     /* gradients, dtype */
    mt_dtype dt;
    const struct mt_seg *segs; /* weight-decay segments */
    size_t nsegs;
} mt_group;
void mt_model_trainable(mt_model *m, mt_group *g);

/* Element access for tests and tools (fp32 values; set also updates the
 * master copy). Index i runs over all copies of tensor t. Quantised tensors
 * read their dequantised values and cannot be set. */
size_t mt_model_param_count(const mt_model *m, int t);
float mt_model_param_get(const mt_model *m, int t, size_t i);
void mt_model_param_set(mt_model *m, int t, size_t i, float v);
float mt_model_grad_get(const mt_model *m, int t, size_t i); /* 0 when frozen */
/* LoRA parameters: all layers, index over the whole adapter block. */
size_t mt_model_lora_count(const mt_model *m);
float mt_model_lora_get(const mt_model *m, size_t i);
void mt_model_lora_set(mt_model *m, size_t i, float v);
float mt_model_lora_grad_get(const mt_model *m, size_t i);

/* Parameters (storage, master copies, NF4 stores) for checkpoints. */
size_t mt_model_state_size(const mt_model *m);
void mt_model_state_save(const mt_model *m, uint8_t *buf);
void mt_model_state_load(mt_model *m, const uint8_t *buf);
/* A state read back, range-checked before it is loaded: the NF4 stores' codes and
 * scales (any parameter value is a float the step can take, so those are kept as
 * they are). 0, or -1 with mt_last_error(). */
int mt_model_state_check(const mt_model *m, const uint8_t *buf);

/* Parameter counts: total (incl. quantised), trainable. */
size_t mt_model_nparams(const mt_model *m);
size_t mt_model_ntrainable(const mt_model *m);

#endif

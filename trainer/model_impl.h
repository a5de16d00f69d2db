/*
 * model_impl.h — private to model.c and model_setup.c: the mt_model struct
 * and small helpers to address its parameters.
 */
#ifndef MT_MODEL_IMPL_H
#define MT_MODEL_IMPL_H

#include <stdint.h>

#include "attention.h"
#include "memtrain/memtrain_inventory.h"
#include "model.h"
#include "optim.h"
#include "quant.h"

/* fp32 floats per 16-bit conversion tile (4 MiB) */
#define MT_TILE_FLOATS ((size_t)1 << 20)
/* values per initialisation chunk (fixed: makes values independent of how a
 * tensor is consumed) */
#define INIT_CHUNK 4096

static const int lin_tensor[4] = {MT_P_WQKV, MT_P_WO, MT_P_WFC, MT_P_WPROJ};
static const int layer_vecs[] = {MT_P_LN1W, MT_P_LN1B, MT_P_BQKV, MT_P_BO,
                                 MT_P_LN2W, MT_P_LN2B, MT_P_BFC,  MT_P_BPROJ};
static const int final_vecs[] = {MT_P_LNFW, MT_P_LNFB};
#define NLAYER_VECS (sizeof layer_vecs / sizeof layer_vecs[0])
#define NFINAL_VECS (sizeof final_vecs / sizeof final_vecs[0])

struct mt_model {
    mt_config cfg;
    mt_dims d;
    bool gpt2;
    bool mixed;           /* 16-bit storage */
    mt_dtype pdt, adt;    /* parameter and activation storage */
    bool qlora;
    bool base_trainable;  /* full fine-tuning */
    mt_param_info info[MT_NPARAM];
    size_t poff[MT_NPARAM]; /* element offset in `params` */
    size_t nbase;         /* elements in `params` */
    void *params;         /* MT_WEIGHTS (not ZeRO-3) */
    /* ZeRO-3 (MT_WEIGHTS): this rank's shard [plo, plo + pn) of the flat parameters
     * (the only copy it updates and saves), the layer slots each layer's weights
     * are all-gathered into before its forward and its backward (layer l in slot
     * l mod (MEMTRAIN_PREFETCH + 1); wheld: the layer a slot holds, SIZE_MAX none)
     * and the embeddings', final norm's and head's weights (gathered once after
     * every change of the parameters, kept for the step) */
    bool zero3;
    void *pshard, *wslots, *wouter;
    float *mshard;        /* MT_MASTER: the master weights' shard (mixed precision) */
    size_t plo, pn;
    size_t wheld[MEMTRAIN_PREFETCH + 1];
    bool outer_held;
    float *master;        /* MT_MASTER (mixed, full fine-tuning, not ZeRO-3) */
    void *grads;          /* MT_GRADIENTS (full fine-tuning without ZeRO-2) */
    /* ZeRO-2 (MT_GRADIENTS): one layer's gradients, every layer's backward writes
     * them and hands them to the sink, and the embeddings', final norm's and
     * head's, handed at the end of each backward; both zeroed after */
    void *glayer, *gouter;
    size_t goff[MT_NPARAM]; /* a tensor's element offset in glayer (layer tensors) or gouter */
    size_t nlayer_g, nouter_g; /* their elements */
    mt_grad_sink sink;
    void *sink_ctx;
    mt_grad_ready ready;  /* ZeRO-0/1: final gradients announced to the all-reduce */
    void *ready_ctx;
    mt_model_stop_fn stop; /* asked between layers (mt_model_set_stop) */
    void *stop_ctx;
    mt_seg segs[MT_NPARAM];
    size_t nsegs;
    /* QLoRA: layer l's linears [Wqkv | Wo | Wfc | Wproj] in one NF4 store */
    mt_nf4 *nf4;          /* [L], array itself MT_OTHER */
    size_t qn, qoff[4];
    void *deq;            /* one dequantised layer, MT_WORKSPACE */
    /* LoRA */
    mt_lora_layout lora;
    size_t nlora;
    void *lw;             /* MT_WEIGHTS */
    float *lmaster;       /* MT_MASTER (mixed) */
    void *lgrad;          /* MT_GRADIENTS */
    mt_seg lseg;
    /* persistent workspace (MT_WORKSPACE) */
    mt_tiles tiles;       /* 16-bit <-> fp32 conversion tiles (mixed) */
    float *wvec, *gvec;   /* fp32 staging of 16-bit vectors (norm gains, biases) */
    size_t vec_off[MT_NPARAM];
    float *attn_ws;       /* attention tiles / (T,T) scratch */
    float *rope_cos, *rope_sin; /* (T, HD/2) each, MT_OTHER */
    float *dres;          /* (N, C)  gradient w.r.t. the residual stream */
    float *dln;           /* (N, C)  gradient w.r.t. a norm's output */
    float *dqkv;          /* (N, QW) */
    float *datty;         /* (N, AW) */
    float *dfch;          /* (N, FW) */
    float *dfcg;          /* (N, F) */
    float *du;            /* (N, r)  LoRA */
    float *ce_buf;        /* (min(ce_chunk, N), V) chunked cross-entropy logits */
    float *dlnf;          /* (N, C)  chunked: d loss / d lnf, forward to backward */
    /* one layer of fp32 activations (MT_ACTIVATIONS) */
    float *scr[MT_NSLOT]; /* slot s: slot_n[s] floats, or NULL */
    float *x32, *out32;   /* (N, C) each: fp32 residual stream in/out (mixed) */
    /* slot policy */
    size_t slot_n[MT_NSLOT];
    mt_dtype slot_dt[MT_NSLOT];
    bool present[MT_NSLOT], saved_slot[MT_NSLOT];
    /* per micro-batch, MT_ACTIVATIONS (the pointer tables are MT_OTHER) */
    void **res;           /* [L+1] residual stream (N, C) each: res[l] = layer l input */
    void **saved;         /* [L * MT_NSLOT] saved slots */
    void *lnf;            /* (N, C) final norm output */
    float *lnf_mean, *lnf_rstd; /* (N) each */
    float *logits;        /* (N, V) fp32, ce=full */
    float *ce_lse;        /* (N) logsumexp per row, ce=full */
    const int32_t *inputs, *targets;
    float dscale;
    bool active;
    /* preference methods (trainer/pairwise.h): B rows are the pairs' chosen rows
     * then their rejected rows */
    bool pairwise;
    void *refw;           /* MT_WEIGHTS: the reference model's frozen parameters (nbase) */
    float *ref_logps;     /* (B) MT_WORKSPACE: the reference's log-probability sum per row */
    float *pair_logps;    /* (2, B) MT_WORKSPACE: the policy's sums, then each row's CE scale */
    bool ref_pass;        /* the reference's forward is running: the adapters are off */
    /* a reward model (method reward): MT_P_HEAD is a (1, C) score head, untied in
     * gpt2 too; pair_logps holds each row's score, then d objective / d score */
    bool score;
};

typedef struct layer_w {
    mt_wref lin[4];             /* Wqkv, Wo, Wfc, Wproj */
    const float *v[MT_NPARAM];  /* vectors (norm gains, biases), fp32 */
} layer_w;

typedef struct layer_g {
    mt_gref lin[4];
    float *v[MT_NPARAM];        /* NULL: no gradient */
} layer_g;

typedef struct layer_a {
    const float *x;             /* (N, C) layer input */
    float *s[MT_NSLOT];         /* fp32 views of the slots */
} layer_a;

/* ---------- small helpers ---------- */

static inline size_t psz(const mt_model *m) { return mt_dtype_size(m->pdt); }

static inline size_t pcopy_off(const mt_model *m, int t, size_t l)
{
    return m->poff[t] + l * m->info[t].per_layer;
}

static inline bool layer_tensor(int t) { return t >= MT_P_LN1W && t <= MT_P_BPROJ; }

/* ZeRO-3: where tensor t of layer l is gathered (its layer slot, or the outer buffer) */
static inline void *gathered_w(const mt_model *m, int t, size_t l)
{
    if (!layer_tensor(t))
        return (char *)m->wouter + m->goff[t] * psz(m);
    size_t slot = l % (MEMTRAIN_PREFETCH + 1);
    return (char *)m->wslots + (slot * m->nlayer_g + m->goff[t]) * psz(m);
}

static inline mt_wref pw(const mt_model *m, int t, size_t l)
{
    if (!m->info[t].per_layer)
        return mt_w(NULL, m->pdt);
    if (m->zero3)
        return mt_w(gathered_w(m, t, l), m->pdt);
    return mt_w((char *)m->params + pcopy_off(m, t, l) * psz(m), m->pdt);
}

static inline mt_gref pg(const mt_model *m, int t, size_t l)
{
    if (!m->base_trainable || !m->info[t].per_layer)
        return mt_g(NULL, m->pdt);
    if (m->glayer) /* ZeRO-2: layer l's gradients are in the layer slot while it runs */
        return mt_g((char *)(layer_tensor(t) ? m->glayer : m->gouter) + m->goff[t] * psz(m), m->pdt);
    return mt_g((char *)m->grads + pcopy_off(m, t, l) * psz(m), m->pdt);
}

static inline mt_wref lora_wref(const mt_model *m, size_t l, size_t off)
{
    return mt_w((char *)m->lw + (l * m->lora.per_layer + off) * psz(m), m->pdt);
}

static inline mt_gref lora_gref(const mt_model *m, size_t l, size_t off)
{
    return mt_g((char *)m->lgrad + (l * m->lora.per_layer + off) * psz(m), m->pdt);
}

static inline int head_tensor(const mt_model *m) { return m->gpt2 && !m->score ? MT_P_WTE : MT_P_HEAD; }
static inline mt_attn_dims attn_dims(const mt_model *m)
{
    mt_attn_dims a = {m->d.B, m->d.T, m->d.NH, m->d.KV, m->d.HD, (size_t)m->cfg.s.attn_tile};
    return a;
}

#endif

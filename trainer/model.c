/*
 * model.c — the transformer's parameters, forward and backward, saved
 * activations and checkpointing (see model.h and MEMORY.md).
 *
 * Activation storage. Each layer has the slots MT_S_* (plus its input x,
 * which is the residual stream res[l]). The layer code always works on fp32
 * views of the slots:
 *   - a slot that is saved and stored as fp32 is used in place;
 *   - otherwise the view is the slot's fp32 scratch buffer (one layer's worth,
 *     shared by all layers). In mixed precision the scratch is copied into
 *     the 16-bit saved slot after the layer's forward and back before its
 *     backward; with full checkpointing the scratch is refilled by re-running
 *     the layer's forward in backward;
 *   - eager attention probabilities that are not saved have no view at all:
 *     the attention code recomputes them one (b,h) at a time.
 * Recomputation runs the same code on the same inputs, so checkpointing is
 * bit-identical to keeping everything.
 */
#include "model.h"

#include <math.h>
#include <string.h>

#include "alloc.h"
#include "attention.h"
#include "ce.h"
#include "ops.h"
#include "optim.h"
#include "quant.h"
#include "rng.h"

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
    void *params;         /* MT_WEIGHTS */
    float *master;        /* MT_MASTER (mixed, full fine-tuning) */
    void *grads;          /* MT_GRADIENTS (full fine-tuning) */
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
    /* persistent workspace */
    mt_tiles tiles;
    float *wvec, *gvec;   /* fp32 staging of 16-bit vectors (norm gains, biases) */
    size_t vec_off[MT_NPARAM];
    float *attn_ws;
    float *rope_cos, *rope_sin;
    float *dres, *dln, *dqkv, *datty, *dfch, *dfcg, *du;
    float *ce_buf, *dlnf;
    /* one layer of fp32 activations */
    float *scr[MT_NSLOT];
    float *x32, *out32;
    /* slot policy */
    size_t slot_n[MT_NSLOT];
    mt_dtype slot_dt[MT_NSLOT];
    bool present[MT_NSLOT], saved_slot[MT_NSLOT];
    /* per micro-batch */
    void **res;           /* [L+1] residual stream, MT_OTHER array */
    void **saved;         /* [L * MT_NSLOT] */
    void *lnf;
    float *lnf_mean, *lnf_rstd, *logits, *ce_lse;
    const int32_t *inputs, *targets;
    float dscale;
    bool active;
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

static size_t psz(const mt_model *m) { return mt_dtype_size(m->pdt); }

static size_t pcopy_off(const mt_model *m, int t, size_t l)
{
    return m->poff[t] + l * m->info[t].per_layer;
}

static mt_wref pw(const mt_model *m, int t, size_t l)
{
    if (!m->info[t].per_layer)
        return mt_w(NULL, m->pdt);
    return mt_w((char *)m->params + pcopy_off(m, t, l) * psz(m), m->pdt);
}

static mt_gref pg(const mt_model *m, int t, size_t l)
{
    if (!m->base_trainable || !m->info[t].per_layer)
        return mt_g(NULL, m->pdt);
    return mt_g((char *)m->grads + pcopy_off(m, t, l) * psz(m), m->pdt);
}

static mt_wref lora_wref(const mt_model *m, size_t l, size_t off)
{
    return mt_w((char *)m->lw + (l * m->lora.per_layer + off) * psz(m), m->pdt);
}

static mt_gref lora_gref(const mt_model *m, size_t l, size_t off)
{
    return mt_g((char *)m->lgrad + (l * m->lora.per_layer + off) * psz(m), m->pdt);
}

static int head_tensor(const mt_model *m) { return m->gpt2 ? MT_P_WTE : MT_P_HEAD; }

static void norm_fwd(const mt_model *m, float *out, float *mean, float *rstd, const float *x,
                     const float *w, const float *b)
{
    if (m->gpt2)
        mt_layernorm_fwd(out, mean, rstd, x, w, b, m->d.N, m->d.C);
    else
        mt_rmsnorm_fwd(out, rstd, x, w, m->d.N, m->d.C);
}

static void norm_bwd(const mt_model *m, float *dx, float *dw, float *db, const float *dout,
                     const float *x, const float *w, const float *mean, const float *rstd)
{
    if (m->gpt2)
        mt_layernorm_bwd(dx, dw, db, dout, x, w, mean, rstd, m->d.N, m->d.C);
    else
        mt_rmsnorm_bwd(dx, dw, dout, x, w, rstd, m->d.N, m->d.C);
}

static mt_attn_dims attn_dims(const mt_model *m)
{
    mt_attn_dims a = {m->d.B, m->d.T, m->d.NH, m->d.KV, m->d.HD, (size_t)m->cfg.attn_tile};
    return a;
}

/* ---------- parameter views ---------- */

static void stage_vecs(const mt_model *m, size_t l, const int *ts, size_t nts, layer_w *w)
{
    for (size_t i = 0; i < nts; i++) {
        int t = ts[i];
        size_t n = m->info[t].per_layer;
        if (!n) {
            w->v[t] = NULL;
        } else if (!m->mixed) {
            w->v[t] = (const float *)m->params + pcopy_off(m, t, l);
        } else {
            mt_to_f32(m->wvec + m->vec_off[t], pw(m, t, l).p, m->pdt, n);
            w->v[t] = m->wvec + m->vec_off[t];
        }
    }
}

static void layer_weights(mt_model *m, size_t l, layer_w *w)
{
    memset(w, 0, sizeof *w);
    if (m->qlora) {
        mt_nf4_dequantize(&m->nf4[l], m->deq, m->pdt);
        for (int k = 0; k < 4; k++)
            w->lin[k] = mt_w((char *)m->deq + m->qoff[k] * psz(m), m->pdt);
    } else {
        for (int k = 0; k < 4; k++)
            w->lin[k] = pw(m, lin_tensor[k], l);
    }
    stage_vecs(m, l, layer_vecs, NLAYER_VECS, w);
}

static void final_weights(mt_model *m, layer_w *w)
{
    memset(w, 0, sizeof *w);
    stage_vecs(m, 0, final_vecs, NFINAL_VECS, w);
}

static void grads_begin(mt_model *m, size_t l, const int *ts, size_t nts, layer_g *g)
{
    memset(g, 0, sizeof *g);
    for (int k = 0; k < 4; k++)
        g->lin[k] = m->qlora ? mt_g(NULL, m->pdt) : pg(m, lin_tensor[k], l);
    if (!m->base_trainable)
        return;
    for (size_t i = 0; i < nts; i++) {
        int t = ts[i];
        size_t n = m->info[t].per_layer;
        if (!n)
            continue;
        if (!m->mixed) {
            g->v[t] = (float *)m->grads + pcopy_off(m, t, l);
        } else {
            g->v[t] = m->gvec + m->vec_off[t];
            mt_to_f32(g->v[t], pg(m, t, l).p, m->pdt, n);
        }
    }
}

static void grads_end(mt_model *m, size_t l, const int *ts, size_t nts, const layer_g *g)
{
    if (!m->base_trainable || !m->mixed)
        return;
    for (size_t i = 0; i < nts; i++) {
        int t = ts[i];
        if (g->v[t])
            mt_from_f32(pg(m, t, l).p, m->pdt, g->v[t], m->info[t].per_layer);
    }
}

/* ---------- activation views ---------- */

static void acts_view(const mt_model *m, size_t l, layer_a *a, const float *x)
{
    a->x = x;
    for (int s = 0; s < MT_NSLOT; s++) {
        if (!m->present[s])
            a->s[s] = NULL;
        else if (m->saved_slot[s] && m->slot_dt[s] == MT_F32)
            a->s[s] = m->saved[l * MT_NSLOT + s];
        else
            a->s[s] = m->scr[s]; /* NULL for unsaved eager probabilities */
    }
}

/* 16-bit saved slots <-> fp32 scratch */
static void save_slots(mt_model *m, size_t l)
{
    for (int s = 0; s < MT_NSLOT; s++)
        if (m->saved_slot[s] && m->slot_dt[s] != MT_F32)
            mt_from_f32(m->saved[l * MT_NSLOT + s], m->slot_dt[s], m->scr[s], m->slot_n[s]);
}

static void restore_slots(mt_model *m, size_t l)
{
    for (int s = 0; s < MT_NSLOT; s++)
        if (m->saved_slot[s] && m->slot_dt[s] != MT_F32)
            mt_to_f32(m->scr[s], m->saved[l * MT_NSLOT + s], m->slot_dt[s], m->slot_n[s]);
}

static int alloc_layer(mt_model *m, size_t l)
{
    for (int s = 0; s < MT_NSLOT; s++) {
        if (!m->saved_slot[s])
            continue;
        void *p = mt_alloc(MT_ACTIVATIONS, m->slot_n[s] * mt_dtype_size(m->slot_dt[s]));
        if (!p)
            return -1;
        m->saved[l * MT_NSLOT + s] = p;
    }
    m->res[l + 1] = mt_alloc(MT_ACTIVATIONS, m->d.N * m->d.C * mt_dtype_size(m->adt));
    return m->res[l + 1] ? 0 : -1;
}

static void free_layer(mt_model *m, size_t l)
{
    for (int s = 0; s < MT_NSLOT; s++) {
        mt_free(m->saved[l * MT_NSLOT + s]);
        m->saved[l * MT_NSLOT + s] = NULL;
    }
    mt_free(m->res[l]);
    m->res[l] = NULL;
}

/* ---------- LoRA inside a layer ---------- */

/* Adapters on linear `lin`: u = x @ A^T for each, and y += s u @ B^T if y. */
static void lora_fwd(mt_model *m, size_t l, layer_a *a, int lin, const float *x, size_t ldx,
                     float *y, size_t ldy)
{
    const mt_lora_layout *lo = &m->lora;
    for (int k = 0; k < lo->n; k++) {
        const mt_lora_mod *md = &lo->mods[k];
        if (md->lin != lin)
            continue;
        float *u = a->s[MT_S_LORA + k];
        mt_lora_u(&m->tiles, u, x, ldx, lora_wref(m, l, md->a_off), m->d.N, lo->r, md->in);
        mt_round_f32(u, m->adt, m->d.N * lo->r);
        if (y)
            mt_lora_add(&m->tiles, y + md->row0, ldy, u, lora_wref(m, l, md->b_off), m->d.N,
                        lo->r, md->out, lo->scale);
    }
}

static void lora_bwd(mt_model *m, size_t l, const layer_a *a, int lin, const float *x,
                     size_t ldx, float *dx, size_t ldn, const float *dy, size_t ldd)
{
    const mt_lora_layout *lo = &m->lora;
    for (int k = 0; k < lo->n; k++) {
        const mt_lora_mod *md = &lo->mods[k];
        if (md->lin != lin)
            continue;
        mt_lora_bwd(&m->tiles, dx, ldn, lora_gref(m, l, md->a_off), lora_gref(m, l, md->b_off),
                    dy + md->row0, ldd, x, ldx, a->s[MT_S_LORA + k], lora_wref(m, l, md->a_off),
                    lora_wref(m, l, md->b_off), m->du, m->d.N, lo->r, md->in, md->out,
                    lo->scale);
    }
}

/* ---------- one layer ---------- */

/* Forward of layer l into the views of `a`; out (N,C) receives the layer's
 * output, or is NULL when recomputing for backward (the last projection is
 * then skipped: nothing in backward needs its result). */
static void layer_fwd(mt_model *m, size_t l, const layer_w *w, layer_a *a, float *out)
{
    const mt_dims *d = &m->d;
    size_t N = d->N, C = d->C, QW = d->QW, AW = d->AW, FW = d->FW, F = d->F;
    const mt_tiles *tl = &m->tiles;
    mt_dtype adt = m->adt;
    float *ln1 = a->s[MT_S_LN1], *qkv = a->s[MT_S_QKV], *atty = a->s[MT_S_ATTY];
    float *res2 = a->s[MT_S_RES2], *ln2 = a->s[MT_S_LN2], *fch = a->s[MT_S_FCH];
    float *fcg = a->s[MT_S_FCG];

    /* h1 (N,C) = norm1(x) */
    norm_fwd(m, ln1, a->s[MT_S_LN1_MEAN], a->s[MT_S_LN1_RSTD], a->x, w->v[MT_P_LN1W],
             w->v[MT_P_LN1B]);
    mt_round_f32(ln1, adt, N * C);
    /* qkv (N,QW) = h1 @ Wqkv^T + b */
    if (w->v[MT_P_BQKV])
        mt_rows_fill(qkv, QW, w->v[MT_P_BQKV], N, QW);
    mt_mm_fwd(tl, qkv, QW, ln1, C, w->lin[0], N, QW, C, 1.0f, w->v[MT_P_BQKV] ? 1.0f : 0.0f);
    lora_fwd(m, l, a, MT_LIN_QKV, ln1, C, qkv, QW);
    if (!m->gpt2)
        mt_rope(qkv, m->rope_cos, m->rope_sin, d->B, d->T, d->NH, d->KV, d->HD, 0);
    mt_round_f32(qkv, adt, N * QW);
    /* atty (N,AW) = attention(q, k, v) */
    mt_attn_dims ad = attn_dims(m);
    if (m->cfg.attention == MT_ATTN_FLASH)
        mt_attn_flash_fwd(atty, a->s[MT_S_LSE], qkv, &ad, m->attn_ws);
    else
        mt_attn_eager_fwd(atty, a->s[MT_S_ATT], qkv, &ad, adt, m->attn_ws);
    mt_round_f32(atty, adt, N * AW);
    /* res2 (N,C) = x + atty @ Wo^T + b */
    mt_rows_add(res2, a->x, w->v[MT_P_BO], N, C);
    mt_mm_fwd(tl, res2, C, atty, AW, w->lin[1], N, C, AW, 1.0f, 1.0f);
    lora_fwd(m, l, a, MT_LIN_O, atty, AW, res2, C);
    mt_round_f32(res2, adt, N * C);
    /* h2 (N,C) = norm2(res2) */
    norm_fwd(m, ln2, a->s[MT_S_LN2_MEAN], a->s[MT_S_LN2_RSTD], res2, w->v[MT_P_LN2W],
             w->v[MT_P_LN2B]);
    mt_round_f32(ln2, adt, N * C);
    /* fch (N,FW) = h2 @ Wfc^T + b */
    if (w->v[MT_P_BFC])
        mt_rows_fill(fch, FW, w->v[MT_P_BFC], N, FW);
    mt_mm_fwd(tl, fch, FW, ln2, C, w->lin[2], N, FW, C, 1.0f, w->v[MT_P_BFC] ? 1.0f : 0.0f);
    lora_fwd(m, l, a, MT_LIN_FC, ln2, C, fch, FW);
    mt_round_f32(fch, adt, N * FW);
    /* fcg (N,F) = gelu(fch) or silu(gate) * up */
    if (m->gpt2)
        mt_gelu_fwd(fcg, fch, N * F);
    else
        mt_swiglu_fwd(fcg, fch, N, F);
    mt_round_f32(fcg, adt, N * F);
    /* out (N,C) = res2 + fcg @ Wproj^T + b */
    if (out) {
        mt_rows_add(out, res2, w->v[MT_P_BPROJ], N, C);
        mt_mm_fwd(tl, out, C, fcg, F, w->lin[3], N, C, F, 1.0f, 1.0f);
    }
    lora_fwd(m, l, a, MT_LIN_PROJ, fcg, F, out, C);
    if (out)
        mt_round_f32(out, adt, N * C);
}

/* Backward of layer l. dres (N,C): in, the gradient w.r.t. the layer's output;
 * out, the gradient w.r.t. its input x. */
static void layer_bwd(mt_model *m, size_t l, const layer_w *w, const layer_g *g,
                      const layer_a *a, float *dres)
{
    const mt_dims *d = &m->d;
    size_t N = d->N, C = d->C, QW = d->QW, AW = d->AW, FW = d->FW, F = d->F;
    const mt_tiles *tl = &m->tiles;
    float *dln = m->dln, *dqkv = m->dqkv, *datty = m->datty, *dfch = m->dfch, *dfcg = m->dfcg;

    /* out = res2 + fcg @ Wproj^T + b:  dfcg (N,F) = dres @ Wproj; dWproj += dres^T fcg */
    mt_mm_bwd_in(tl, dfcg, F, dres, C, w->lin[3], N, C, F, 1.0f, 0.0f);
    mt_mm_bwd_w(tl, g->lin[3], dres, C, a->s[MT_S_FCG], F, N, C, F, 1.0f);
    if (g->v[MT_P_BPROJ])
        mt_colsum_acc(g->v[MT_P_BPROJ], dres, C, N, C);
    lora_bwd(m, l, a, MT_LIN_PROJ, a->s[MT_S_FCG], F, dfcg, F, dres, C);
    /* activation: dfch (N,FW) */
    if (m->gpt2)
        mt_gelu_bwd(dfch, a->s[MT_S_FCH], dfcg, N * F);
    else
        mt_swiglu_bwd(dfch, a->s[MT_S_FCH], dfcg, N, F);
    /* fch = h2 @ Wfc^T + b:  dln (N,C) = dfch @ Wfc; dWfc += dfch^T h2 */
    mt_mm_bwd_in(tl, dln, C, dfch, FW, w->lin[2], N, FW, C, 1.0f, 0.0f);
    mt_mm_bwd_w(tl, g->lin[2], dfch, FW, a->s[MT_S_LN2], C, N, FW, C, 1.0f);
    if (g->v[MT_P_BFC])
        mt_colsum_acc(g->v[MT_P_BFC], dfch, FW, N, FW);
    lora_bwd(m, l, a, MT_LIN_FC, a->s[MT_S_LN2], C, dln, C, dfch, FW);
    /* h2 = norm2(res2): dres += ... */
    norm_bwd(m, dres, g->v[MT_P_LN2W], g->v[MT_P_LN2B], dln, a->s[MT_S_RES2], w->v[MT_P_LN2W],
             a->s[MT_S_LN2_MEAN], a->s[MT_S_LN2_RSTD]);
    /* res2 = x + atty @ Wo^T + b:  datty (N,AW) = dres @ Wo; dWo += dres^T atty */
    mt_mm_bwd_in(tl, datty, AW, dres, C, w->lin[1], N, C, AW, 1.0f, 0.0f);
    mt_mm_bwd_w(tl, g->lin[1], dres, C, a->s[MT_S_ATTY], AW, N, C, AW, 1.0f);
    if (g->v[MT_P_BO])
        mt_colsum_acc(g->v[MT_P_BO], dres, C, N, C);
    lora_bwd(m, l, a, MT_LIN_O, a->s[MT_S_ATTY], AW, datty, AW, dres, C);
    /* attention: dqkv (N,QW) */
    mt_attn_dims ad = attn_dims(m);
    if (m->cfg.attention == MT_ATTN_FLASH)
        mt_attn_flash_bwd(dqkv, datty, a->s[MT_S_QKV], a->s[MT_S_ATTY], a->s[MT_S_LSE], &ad,
                          m->attn_ws);
    else
        mt_attn_eager_bwd(dqkv, datty, a->s[MT_S_QKV], a->s[MT_S_ATT], &ad, m->adt, m->attn_ws);
    if (!m->gpt2) /* rotary: rotate the gradients of q and k back */
        mt_rope(dqkv, m->rope_cos, m->rope_sin, d->B, d->T, d->NH, d->KV, d->HD, 1);
    /* qkv = h1 @ Wqkv^T + b:  dln (N,C) = dqkv @ Wqkv; dWqkv += dqkv^T h1 */
    mt_mm_bwd_in(tl, dln, C, dqkv, QW, w->lin[0], N, QW, C, 1.0f, 0.0f);
    mt_mm_bwd_w(tl, g->lin[0], dqkv, QW, a->s[MT_S_LN1], C, N, QW, C, 1.0f);
    if (g->v[MT_P_BQKV])
        mt_colsum_acc(g->v[MT_P_BQKV], dqkv, QW, N, QW);
    lora_bwd(m, l, a, MT_LIN_QKV, a->s[MT_S_LN1], C, dln, C, dqkv, QW);
    /* h1 = norm1(x): dres += ... */
    norm_bwd(m, dres, g->v[MT_P_LN1W], g->v[MT_P_LN1B], dln, a->x, w->v[MT_P_LN1W],
             a->s[MT_S_LN1_MEAN], a->s[MT_S_LN1_RSTD]);
}

/* ---------- forward / backward ---------- */

void mt_model_release(mt_model *m)
{
    for (size_t l = 0; l <= m->d.L; l++) {
        if (l < m->d.L) {
            free_layer(m, l);
        } else {
            mt_free(m->res[l]);
            m->res[l] = NULL;
        }
    }
    mt_free(m->lnf);
    mt_free(m->lnf_mean);
    mt_free(m->lnf_rstd);
    mt_free(m->logits);
    mt_free(m->ce_lse);
    m->lnf = NULL;
    m->lnf_mean = m->lnf_rstd = m->logits = m->ce_lse = NULL;
    m->active = false;
}

int mt_model_forward(mt_model *m, const int32_t *inputs, const int32_t *targets, float dscale,
                     float *loss)
{
    if (m->active)
        return mt_error("model: forward called again before backward or release");
    const mt_dims *d = &m->d;
    size_t N = d->N, C = d->C, asz = mt_dtype_size(m->adt);
    m->inputs = inputs;
    m->targets = targets;
    m->dscale = dscale;
    m->active = true;
    for (size_t i = 0; i < N; i++)
        if (inputs[i] < 0 || (size_t)inputs[i] >= d->V || targets[i] < 0 ||
            (size_t)targets[i] >= d->V) {
            mt_error("model: token %zu out of range [0, %zu)", i, d->V);
            goto fail;
        }

    /* embeddings: res[0] (N,C) */
    m->res[0] = mt_alloc(MT_ACTIVATIONS, N * C * asz);
    if (!m->res[0])
        goto fail;
    float *x = m->mixed ? m->x32 : m->res[0];
    mt_encoder_fwd(x, inputs, pw(m, MT_P_WTE, 0), pw(m, MT_P_WPE, 0), d->B, d->T, C);
    mt_round_f32(x, m->adt, N * C);
    if (m->mixed)
        mt_from_f32(m->res[0], m->adt, x, N * C);

    for (size_t l = 0; l < d->L; l++) {
        if (alloc_layer(m, l) != 0)
            goto fail;
        layer_w w;
        layer_a a;
        layer_weights(m, l, &w);
        acts_view(m, l, &a, x);
        float *out = m->mixed ? m->out32 : m->res[l + 1];
        layer_fwd(m, l, &w, &a, out);
        if (m->mixed) {
            save_slots(m, l);
            mt_from_f32(m->res[l + 1], m->adt, out, N * C);
            m->out32 = m->x32; /* the output becomes the next layer's input */
            m->x32 = out;
            x = m->x32;
        } else {
            x = m->res[l + 1];
        }
    }

    /* final norm: lnf (N,C) */
    m->lnf = mt_alloc(MT_ACTIVATIONS, N * C * asz);
    if (m->gpt2)
        m->lnf_mean = mt_alloc_n(MT_ACTIVATIONS, N, sizeof(float));
    m->lnf_rstd = mt_alloc_n(MT_ACTIVATIONS, N, sizeof(float));
    if (!m->lnf || (m->gpt2 && !m->lnf_mean) || !m->lnf_rstd)
        goto fail;
    float *lnf32 = m->mixed ? m->out32 : m->lnf;
    layer_w fw;
    final_weights(m, &fw);
    norm_fwd(m, lnf32, m->lnf_mean, m->lnf_rstd, x, fw.v[MT_P_LNFW], fw.v[MT_P_LNFB]);
    mt_round_f32(lnf32, m->adt, N * C);
    if (m->mixed)
        mt_from_f32(m->lnf, m->adt, lnf32, N * C);

    /* head and loss */
    int ht = head_tensor(m);
    double sum;
    if (m->cfg.ce == MT_CE_FULL) {
        m->logits = mt_alloc_n(MT_ACTIVATIONS, N * d->V, sizeof(float));
        m->ce_lse = mt_alloc_n(MT_ACTIVATIONS, N, sizeof(float));
        if (!m->logits || !m->ce_lse)
            goto fail;
        sum = mt_ce_full_fwd(m->logits, m->ce_lse, lnf32, targets, pw(m, ht, 0), &m->tiles, N, C,
                             d->V);
    } else {
        sum = mt_ce_chunked(dscale != 0.0f ? m->dlnf : NULL, m->ce_buf, lnf32, targets,
                            pw(m, ht, 0), pg(m, ht, 0), &m->tiles, N, C, d->V,
                            (size_t)m->cfg.ce_chunk, dscale / (float)N);
        mt_free(m->lnf); /* the head's gradients are done: lnf is not needed any more */
        m->lnf = NULL;
    }
    *loss = (float)(sum / (double)N);
    return 0;
fail:
    mt_model_release(m);
    return -1;
}

int mt_model_backward(mt_model *m)
{
    if (!m->active)
        return mt_error("model: backward without a forward");
    if (m->dscale == 0.0f) {
        mt_model_release(m);
        return mt_error("model: backward after an evaluation forward (dscale 0)");
    }
    const mt_dims *d = &m->d;
    size_t N = d->N, C = d->C;
    int ht = head_tensor(m);

    /* head: dl (N,C) = d loss / d lnf */
    float *dl;
    if (m->cfg.ce == MT_CE_FULL) {
        float *lnf32 = m->lnf;
        if (m->mixed) {
            mt_to_f32(m->out32, m->lnf, m->adt, N * C);
            lnf32 = m->out32;
        }
        mt_ce_full_bwd(m->dln, m->logits, m->ce_lse, lnf32, m->targets, pw(m, ht, 0),
                       pg(m, ht, 0), &m->tiles, N, C, d->V, m->dscale / (float)N);
        mt_free(m->logits);
        mt_free(m->ce_lse);
        mt_free(m->lnf);
        m->logits = m->ce_lse = NULL;
        m->lnf = NULL;
        dl = m->dln;
    } else {
        dl = m->dlnf;
    }

    /* final norm */
    float *xL = m->res[d->L];
    if (m->mixed) {
        mt_to_f32(m->x32, m->res[d->L], m->adt, N * C);
        xL = m->x32;
    }
    memset(m->dres, 0, N * C * sizeof(float));
    layer_w fw;
    layer_g fg;
    final_weights(m, &fw);
    grads_begin(m, 0, final_vecs, NFINAL_VECS, &fg);
    norm_bwd(m, m->dres, fg.v[MT_P_LNFW], fg.v[MT_P_LNFB], dl, xL, fw.v[MT_P_LNFW], m->lnf_mean,
             m->lnf_rstd);
    grads_end(m, 0, final_vecs, NFINAL_VECS, &fg);
    mt_free(m->lnf_mean);
    mt_free(m->lnf_rstd);
    mt_free(m->res[d->L]);
    m->lnf_mean = m->lnf_rstd = NULL;
    m->res[d->L] = NULL;

    for (size_t l = d->L; l-- > 0;) {
        layer_w w;
        layer_g g;
        layer_a a;
        layer_weights(m, l, &w);
        grads_begin(m, l, layer_vecs, NLAYER_VECS, &g);
        float *x = m->res[l];
        if (m->mixed) {
            mt_to_f32(m->x32, m->res[l], m->adt, N * C);
            x = m->x32;
        }
        acts_view(m, l, &a, x);
        if (m->cfg.checkpointing == MT_CKPT_FULL)
            layer_fwd(m, l, &w, &a, NULL); /* recompute the layer's activations */
        else if (m->mixed)
            restore_slots(m, l);
        layer_bwd(m, l, &w, &g, &a, m->dres);
        grads_end(m, l, layer_vecs, NLAYER_VECS, &g);
        free_layer(m, l);
    }

    /* embeddings */
    mt_encoder_bwd(pg(m, MT_P_WTE, 0), pg(m, MT_P_WPE, 0), m->dres, m->inputs, d->B, d->T, C);
    m->active = false;
    return 0;
}

void mt_model_zero_grad(mt_model *m)
{
    if (m->grads)
        memset(m->grads, 0, m->nbase * psz(m));
    if (m->lgrad)
        memset(m->lgrad, 0, m->nlora * psz(m));
}

/* ---------- creation ---------- */

/* Initial values of one tensor copy: a stream of N(0, std^2) values (or a
 * constant), generated INIT_CHUNK at a time from the copy's own RNG. */
typedef struct init_stream {
    mt_rng rng;
    float std, constant;
    bool normal;
    size_t loaded; /* chunk index in buf + 1, 0: none */
    float buf[INIT_CHUNK];
} init_stream;

static void init_stream_start(init_stream *s, const mt_model *m, int t, size_t l)
{
    const mt_config *c = &m->cfg;
    mt_rng_seed(&s->rng, c->seed * 1000003ULL + (uint64_t)t * 7919ULL + (uint64_t)l * 104729ULL);
    s->loaded = 0;
    s->normal = m->info[t].matrix;
    s->constant = (t == MT_P_LN1W || t == MT_P_LN2W || t == MT_P_LNFW) ? 1.0f : 0.0f;
    s->std = c->init_std;
    if (t == MT_P_WO || t == MT_P_WPROJ) /* residual projections, GPT-2 style */
        s->std = c->init_std / sqrtf(2.0f * (float)c->layers);
}

/* Value i of the stream (i must not go back to an earlier chunk). */
static float init_value(init_stream *s, size_t i)
{
    if (!s->normal)
        return s->constant;
    size_t k = i / INIT_CHUNK;
    while (s->loaded < k + 1) {
        mt_rng_fill_normal(&s->rng, s->buf, INIT_CHUNK, s->std);
        s->loaded++;
    }
    return s->buf[i % INIT_CHUNK];
}

typedef struct qgen_ctx {
    const mt_model *m;
    init_stream st[4];
} qgen_ctx;

static void qlora_gen(void *ctx, float *dst, size_t i0, size_t cnt)
{
    qgen_ctx *q = ctx;
    for (size_t i = 0; i < cnt; i++) {
        size_t e = i0 + i;
        int k = 3;
        while (k > 0 && e < q->m->qoff[k])
            k--;
        dst[i] = init_value(&q->st[k], e - q->m->qoff[k]);
    }
}

static int init_params(mt_model *m)
{
    static init_stream st; /* 16 KiB: kept off the stack */
    float chunk[256];
    for (int t = 0; t < MT_NPARAM; t++) {
        size_t per = m->info[t].per_layer;
        if (!per || (m->qlora && m->info[t].linear))
            continue;
        for (size_t l = 0; l < m->info[t].copies; l++) {
            init_stream_start(&st, m, t, l);
            size_t base = pcopy_off(m, t, l);
            for (size_t i0 = 0; i0 < per; i0 += 256) {
                size_t n = per - i0 < 256 ? per - i0 : 256;
                for (size_t i = 0; i < n; i++)
                    chunk[i] = init_value(&st, i0 + i);
                if (m->master)
                    memcpy(m->master + base + i0, chunk, n * sizeof(float));
                mt_from_f32((char *)m->params + (base + i0) * psz(m), m->pdt, chunk, n);
            }
        }
    }
    if (m->qlora) {
        static qgen_ctx q;
        q.m = m;
        for (size_t l = 0; l < m->d.L; l++) {
            for (int k = 0; k < 4; k++)
                init_stream_start(&q.st[k], m, lin_tensor[k], l);
            if (mt_nf4_quantize_gen(&m->nf4[l], qlora_gen, &q) != 0)
                return -1;
        }
    }
    /* LoRA: A uniform in +-1/sqrt(in), B zero */
    for (size_t l = 0; l < m->d.L && m->nlora; l++) {
        for (int k = 0; k < m->lora.n; k++) {
            const mt_lora_mod *md = &m->lora.mods[k];
            mt_rng rng;
            mt_rng_seed(&rng, m->cfg.seed * 7777ULL + l * 131ULL + (uint64_t)k * 17ULL + 5ULL);
            float bound = 1.0f / sqrtf((float)md->in);
            size_t a0 = l * m->lora.per_layer + md->a_off;
            size_t b0 = l * m->lora.per_layer + md->b_off;
            for (size_t i = 0; i < m->lora.r * md->in; i++) {
                float v = (2.0f * mt_rng_uniform(&rng) - 1.0f) * bound;
                mt_store1(m->lw, m->pdt, a0 + i, v);
                if (m->lmaster)
                    m->lmaster[a0 + i] = v;
            }
            for (size_t i = 0; i < md->out * m->lora.r; i++) {
                mt_store1(m->lw, m->pdt, b0 + i, 0.0f);
                if (m->lmaster)
                    m->lmaster[b0 + i] = 0.0f;
            }
        }
    }
    return 0;
}

static void param_table(mt_model *m)
{
    const mt_dims *d = &m->d;
    bool g = m->gpt2;
    size_t L = d->L, C = d->C;
    struct {
        int t;
        const char *name;
        size_t per, copies;
        bool matrix, linear;
    } tab[MT_NPARAM] = {
        {MT_P_WTE, "wte", d->V * C, 1, true, false},
        {MT_P_WPE, "wpe", g ? d->maxpos * C : 0, 1, true, false},
        {MT_P_LN1W, "ln1_w", C, L, false, false},
        {MT_P_LN1B, "ln1_b", g ? C : 0, L, false, false},
        {MT_P_WQKV, "w_qkv", d->QW * C, L, true, true},
        {MT_P_BQKV, "b_qkv", g ? d->QW : 0, L, false, false},
        {MT_P_WO, "w_o", C * d->AW, L, true, true},
        {MT_P_BO, "b_o", g ? C : 0, L, false, false},
        {MT_P_LN2W, "ln2_w", C, L, false, false},
        {MT_P_LN2B, "ln2_b", g ? C : 0, L, false, false},
        {MT_P_WFC, "w_fc", d->FW * C, L, true, true},
        {MT_P_BFC, "b_fc", g ? d->FW : 0, L, false, false},
        {MT_P_WPROJ, "w_proj", C * d->F, L, true, true},
        {MT_P_BPROJ, "b_proj", g ? C : 0, L, false, false},
        {MT_P_LNFW, "lnf_w", C, 1, false, false},
        {MT_P_LNFB, "lnf_b", g ? C : 0, 1, false, false},
        {MT_P_HEAD, "head", g ? 0 : d->V * C, 1, true, false},
    };
    size_t off = 0;
    m->nsegs = 0;
    for (int t = 0; t < MT_NPARAM; t++) {
        mt_param_info *in = &m->info[t];
        in->name = tab[t].name;
        in->per_layer = tab[t].per;
        in->copies = tab[t].copies;
        in->matrix = tab[t].matrix;
        in->linear = tab[t].linear;
        m->poff[t] = off;
        if (m->qlora && in->linear)
            continue; /* lives in the NF4 stores */
        size_t n = in->per_layer * in->copies;
        if (!n)
            continue;
        /* weight-decay segments, merged when adjacent with the same flag */
        if (m->nsegs && m->segs[m->nsegs - 1].decay == in->matrix)
            m->segs[m->nsegs - 1].n += n;
        else
            m->segs[m->nsegs++] = (mt_seg){off, n, in->matrix};
        off += n;
    }
    m->nbase = off;
    /* fp32 staging offsets of the vectors */
    size_t vo = 0, vf = 0;
    for (size_t i = 0; i < NLAYER_VECS; i++) {
        m->vec_off[layer_vecs[i]] = vo;
        vo += m->info[layer_vecs[i]].per_layer;
    }
    for (size_t i = 0; i < NFINAL_VECS; i++) {
        m->vec_off[final_vecs[i]] = vf;
        vf += m->info[final_vecs[i]].per_layer;
    }
    /* the NF4 layer store: [Wqkv | Wo | Wfc | Wproj] */
    m->qn = 0;
    for (int k = 0; k < 4; k++) {
        m->qoff[k] = m->qn;
        m->qn += m->info[lin_tensor[k]].per_layer;
    }
}

static void slot_policy(mt_model *m)
{
    const mt_dims *d = &m->d;
    size_t N = d->N;
    size_t n[MT_NSLOT] = {0};
    n[MT_S_LN1] = N * d->C;
    n[MT_S_LN1_MEAN] = m->gpt2 ? N : 0;
    n[MT_S_LN1_RSTD] = N;
    n[MT_S_QKV] = N * d->QW;
    n[MT_S_ATT] = m->cfg.attention == MT_ATTN_EAGER ? d->B * d->NH * d->T * d->T : 0;
    n[MT_S_LSE] = m->cfg.attention == MT_ATTN_FLASH ? d->B * d->NH * d->T : 0;
    n[MT_S_ATTY] = N * d->AW;
    n[MT_S_RES2] = N * d->C;
    n[MT_S_LN2] = N * d->C;
    n[MT_S_LN2_MEAN] = m->gpt2 ? N : 0;
    n[MT_S_LN2_RSTD] = N;
    n[MT_S_FCH] = N * d->FW;
    n[MT_S_FCG] = N * d->F;
    for (int k = 0; k < m->lora.n; k++)
        n[MT_S_LORA + k] = N * d->r;
    for (int s = 0; s < MT_NSLOT; s++) {
        m->slot_n[s] = n[s];
        m->present[s] = n[s] > 0;
        bool stat = s == MT_S_LN1_MEAN || s == MT_S_LN1_RSTD || s == MT_S_LN2_MEAN ||
                    s == MT_S_LN2_RSTD || s == MT_S_LSE;
        m->slot_dt[s] = stat ? MT_F32 : m->adt;
        switch (m->cfg.checkpointing) {
        case MT_CKPT_NONE: m->saved_slot[s] = m->present[s]; break;
        case MT_CKPT_SELECTIVE: m->saved_slot[s] = m->present[s] && s != MT_S_ATT; break;
        default: m->saved_slot[s] = false; break;
        }
    }
}

#define ALLOC(ptr, tag, n, size)                         \
    do {                                                 \
        if (!((ptr) = mt_alloc_n((tag), (n), (size))))   \
            goto fail;                                   \
    } while (0)
#define CALLOC(ptr, tag, n, size)                        \
    do {                                                 \
        if (!((ptr) = mt_calloc_n((tag), (n), (size))))  \
            goto fail;                                   \
    } while (0)

int mt_model_create(const mt_config *c, mt_model **out)
{
    *out = NULL;
    mt_model *m = mt_calloc(MT_OTHER, sizeof *m);
    if (!m)
        return -1;
    m->cfg = *c;
    mt_dims *d = &m->d;
    d->B = (size_t)c->batch;
    d->T = (size_t)c->seq;
    d->N = d->B * d->T;
    d->C = (size_t)c->hidden;
    d->L = (size_t)c->layers;
    d->NH = (size_t)c->heads;
    d->KV = (size_t)c->kv_heads;
    d->HD = d->C / d->NH;
    d->F = (size_t)c->ffn;
    d->V = (size_t)c->vocab;
    d->maxpos = (size_t)c->max_pos;
    d->QW = (d->NH + 2 * d->KV) * d->HD;
    d->AW = d->NH * d->HD;
    m->gpt2 = c->family == MT_GPT2;
    d->FW = m->gpt2 ? d->F : 2 * d->F;
    d->r = (size_t)c->lora_rank;
    m->mixed = c->precision != MT_PREC_FP32;
    m->pdt = m->adt = c->precision == MT_PREC_BF16 ? MT_BF16
                      : c->precision == MT_PREC_FP16 ? MT_F16
                                                    : MT_F32;
    m->qlora = c->quant != MT_QUANT_NONE;
    m->base_trainable = c->lora_rank == 0;
    mt_lora_layout_make(&m->lora, c->family, c->lora_targets, d->r, c->lora_alpha, d->C, d->NH,
                        d->KV, d->HD, d->F);
    m->nlora = d->L * m->lora.per_layer;
    param_table(m);
    slot_policy(m);
    size_t N = d->N, C = d->C, P = psz(m);

    /* parameters, master copies, gradients */
    ALLOC(m->params, MT_WEIGHTS, m->nbase, P);
    if (m->base_trainable) {
        if (m->mixed)
            ALLOC(m->master, MT_MASTER, m->nbase, sizeof(float));
        CALLOC(m->grads, MT_GRADIENTS, m->nbase, P);
    }
    if (m->qlora) {
        CALLOC(m->nf4, MT_OTHER, d->L, sizeof(mt_nf4));
        for (size_t l = 0; l < d->L; l++)
            if (mt_nf4_init(&m->nf4[l], m->qn, c->quant == MT_QUANT_NF4_DQ) != 0)
                goto fail;
        ALLOC(m->deq, MT_WORKSPACE, m->qn, P);
    }
    if (m->nlora) {
        ALLOC(m->lw, MT_WEIGHTS, m->nlora, P);
        if (m->mixed)
            ALLOC(m->lmaster, MT_MASTER, m->nlora, sizeof(float));
        CALLOC(m->lgrad, MT_GRADIENTS, m->nlora, P);
        m->lseg = (mt_seg){0, m->nlora, true};
    }
    if (init_params(m) != 0)
        goto fail;

    /* workspace: conversion tiles and vector staging (mixed precision) */
    if (m->mixed) {
        size_t kmax = C > d->AW ? C : d->AW;
        kmax = kmax > d->F ? kmax : d->F;
        m->tiles.n = MT_TILE_FLOATS > kmax ? MT_TILE_FLOATS : kmax;
        ALLOC(m->tiles.w, MT_WORKSPACE, m->tiles.n, sizeof(float));
        ALLOC(m->tiles.g, MT_WORKSPACE, m->tiles.n, sizeof(float));
        size_t nv = 0, nf = 0;
        for (size_t i = 0; i < NLAYER_VECS; i++)
            nv += m->info[layer_vecs[i]].per_layer;
        for (size_t i = 0; i < NFINAL_VECS; i++)
            nf += m->info[final_vecs[i]].per_layer;
        nv = nv > nf ? nv : nf;
        ALLOC(m->wvec, MT_WORKSPACE, nv, sizeof(float));
        if (m->base_trainable)
            ALLOC(m->gvec, MT_WORKSPACE, nv, sizeof(float));
    }
    /* attention scratch */
    mt_attn_dims ad = attn_dims(m);
    size_t awn = mt_attn_ws_floats(&ad, c->attention == MT_ATTN_FLASH, m->saved_slot[MT_S_ATT]);
    ALLOC(m->attn_ws, MT_WORKSPACE, awn, sizeof(float));
    /* activation gradients */
    ALLOC(m->dres, MT_WORKSPACE, N * C, sizeof(float));
    ALLOC(m->dln, MT_WORKSPACE, N * C, sizeof(float));
    ALLOC(m->dqkv, MT_WORKSPACE, N * d->QW, sizeof(float));
    ALLOC(m->datty, MT_WORKSPACE, N * d->AW, sizeof(float));
    ALLOC(m->dfch, MT_WORKSPACE, N * d->FW, sizeof(float));
    ALLOC(m->dfcg, MT_WORKSPACE, N * d->F, sizeof(float));
    if (m->nlora)
        ALLOC(m->du, MT_WORKSPACE, N * d->r, sizeof(float));
    /* chunked cross-entropy */
    if (c->ce == MT_CE_CHUNKED) {
        size_t ch = (size_t)c->ce_chunk < N ? (size_t)c->ce_chunk : N;
        ALLOC(m->ce_buf, MT_WORKSPACE, ch * d->V, sizeof(float));
        ALLOC(m->dlnf, MT_WORKSPACE, N * C, sizeof(float));
    }
    /* one layer of fp32 activations (mixed precision, or full checkpointing) */
    for (int s = 0; s < MT_NSLOT; s++) {
        if (!m->present[s] || (m->saved_slot[s] && m->slot_dt[s] == MT_F32))
            continue;
        if (s == MT_S_ATT && !m->saved_slot[s])
            continue; /* recomputed per (b,h) inside the attention scratch */
        ALLOC(m->scr[s], MT_ACTIVATIONS, m->slot_n[s], sizeof(float));
    }
    if (m->mixed) {
        ALLOC(m->x32, MT_ACTIVATIONS, N * C, sizeof(float));
        ALLOC(m->out32, MT_ACTIVATIONS, N * C, sizeof(float));
    }
    /* rotary tables */
    if (!m->gpt2) {
        ALLOC(m->rope_cos, MT_OTHER, d->T * d->HD / 2, sizeof(float));
        ALLOC(m->rope_sin, MT_OTHER, d->T * d->HD / 2, sizeof(float));
        mt_rope_tables(m->rope_cos, m->rope_sin, d->T, d->HD);
    }
    /* per-micro-batch pointer tables */
    CALLOC(m->res, MT_OTHER, d->L + 1, sizeof(void *));
    CALLOC(m->saved, MT_OTHER, d->L * MT_NSLOT, sizeof(void *));
    *out = m;
    return 0;
fail:
    mt_model_free(m);
    return -1;
}

void mt_model_free(mt_model *m)
{
    if (!m)
        return;
    if (m->res && m->saved)
        mt_model_release(m);
    mt_free(m->params);
    mt_free(m->master);
    mt_free(m->grads);
    if (m->nf4) {
        for (size_t l = 0; l < m->d.L; l++)
            mt_nf4_free(&m->nf4[l]);
        mt_free(m->nf4);
    }
    mt_free(m->deq);
    mt_free(m->lw);
    mt_free(m->lmaster);
    mt_free(m->lgrad);
    mt_free(m->tiles.w);
    mt_free(m->tiles.g);
    mt_free(m->wvec);
    mt_free(m->gvec);
    mt_free(m->attn_ws);
    mt_free(m->rope_cos);
    mt_free(m->rope_sin);
    mt_free(m->dres);
    mt_free(m->dln);
    mt_free(m->dqkv);
    mt_free(m->datty);
    mt_free(m->dfch);
    mt_free(m->dfcg);
    mt_free(m->du);
    mt_free(m->ce_buf);
    mt_free(m->dlnf);
    for (int s = 0; s < MT_NSLOT; s++)
        mt_free(m->scr[s]);
    mt_free(m->x32);
    mt_free(m->out32);
    mt_free(m->res);
    mt_free(m->saved);
    mt_free(m);
}

/* ---------- accessors ---------- */

const mt_config *mt_model_config(const mt_model *m) { return &m->cfg; }
const mt_dims *mt_model_dims(const mt_model *m) { return &m->d; }
const mt_lora_layout *mt_model_lora(const mt_model *m) { return &m->lora; }
void mt_model_param_info(const mt_model *m, int t, mt_param_info *info) { *info = m->info[t]; }
mt_dtype mt_model_dtype(const mt_model *m) { return m->pdt; }

void mt_model_trainable(mt_model *m, mt_group *g)
{
    if (m->nlora) {
        *g = (mt_group){m->nlora, m->lw, m->lmaster, m->lgrad, m->pdt, &m->lseg, 1};
    } else {
        *g = (mt_group){m->nbase, m->params, m->master, m->grads, m->pdt, m->segs, m->nsegs};
    }
}

size_t mt_model_param_count(const mt_model *m, int t)
{
    return m->info[t].per_layer * m->info[t].copies;
}

float mt_model_param_get(const mt_model *m, int t, size_t i)
{
    if (m->qlora && m->info[t].linear) {
        size_t per = m->info[t].per_layer, l = i / per, j = i % per;
        int k = 0;
        while (lin_tensor[k] != t)
            k++;
        return mt_nf4_get(&m->nf4[l], m->qoff[k] + j);
    }
    return mt_load1(m->params, m->pdt, m->poff[t] + i);
}

void mt_model_param_set(mt_model *m, int t, size_t i, float v)
{
    if (m->qlora && m->info[t].linear)
        return;
    mt_store1(m->params, m->pdt, m->poff[t] + i, v);
    if (m->master)
        m->master[m->poff[t] + i] = v;
}

float mt_model_grad_get(const mt_model *m, int t, size_t i)
{
    if (!m->grads || (m->qlora && m->info[t].linear))
        return 0.0f;
    return mt_load1(m->grads, m->pdt, m->poff[t] + i);
}

size_t mt_model_lora_count(const mt_model *m) { return m->nlora; }
float mt_model_lora_get(const mt_model *m, size_t i) { return mt_load1(m->lw, m->pdt, i); }
void mt_model_lora_set(mt_model *m, size_t i, float v)
{
    mt_store1(m->lw, m->pdt, i, v);
    if (m->lmaster)
        m->lmaster[i] = v;
}
float mt_model_lora_grad_get(const mt_model *m, size_t i) { return mt_load1(m->lgrad, m->pdt, i); }

size_t mt_model_nparams(const mt_model *m)
{
    size_t n = m->nbase + m->nlora;
    if (m->qlora)
        n += m->d.L * m->qn;
    return n;
}

size_t mt_model_ntrainable(const mt_model *m) { return m->nlora ? m->nlora : m->nbase; }

/* ---------- checkpoint state ---------- */

size_t mt_model_state_size(const mt_model *m)
{
    size_t P = psz(m), n = m->nbase * P + m->nlora * P;
    if (m->master)
        n += m->nbase * sizeof(float);
    if (m->lmaster)
        n += m->nlora * sizeof(float);
    for (size_t l = 0; m->nf4 && l < m->d.L; l++)
        n += mt_nf4_state_size(&m->nf4[l]);
    return n;
}

void mt_model_state_save(const mt_model *m, uint8_t *buf)
{
    size_t P = psz(m);
    memcpy(buf, m->params, m->nbase * P);
    buf += m->nbase * P;
    if (m->master) {
        memcpy(buf, m->master, m->nbase * sizeof(float));
        buf += m->nbase * sizeof(float);
    }
    if (m->nlora) {
        memcpy(buf, m->lw, m->nlora * P);
        buf += m->nlora * P;
    }
    if (m->lmaster) {
        memcpy(buf, m->lmaster, m->nlora * sizeof(float));
        buf += m->nlora * sizeof(float);
    }
    for (size_t l = 0; m->nf4 && l < m->d.L; l++) {
        mt_nf4_state_save(&m->nf4[l], buf);
        buf += mt_nf4_state_size(&m->nf4[l]);
    }
}

void mt_model_state_load(mt_model *m, const uint8_t *buf)
{
    size_t P = psz(m);
    memcpy(m->params, buf, m->nbase * P);
    buf += m->nbase * P;
    if (m->master) {
        memcpy(m->master, buf, m->nbase * sizeof(float));
        buf += m->nbase * sizeof(float);
    }
    if (m->nlora) {
        memcpy(m->lw, buf, m->nlora * P);
        buf += m->nlora * P;
    }
    if (m->lmaster) {
        memcpy(m->lmaster, buf, m->nlora * sizeof(float));
        buf += m->nlora * sizeof(float);
    }
    for (size_t l = 0; m->nf4 && l < m->d.L; l++) {
        mt_nf4_state_load(&m->nf4[l], buf);
        buf += mt_nf4_state_size(&m->nf4[l]);
    }
}

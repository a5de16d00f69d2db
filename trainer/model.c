/*
 * model.c — the transformer's forward and backward, saved activations and
 * checkpointing (see model.h and MEMORY.md; buffers are created in
 * model_setup.c).
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
#include "model_impl.h"

#include <math.h>
#include <string.h>

#include "alloc.h"
#include "ce.h"
#include "dist.h"
#include "model_buffers.h"
#include "ops.h"
#include "pairwise.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"

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

/* ---------- parameter views ---------- */

static void stage_vecs(const mt_model *m, size_t l, const int *ts, size_t nts, layer_w *w)
{
    for (size_t i = 0; i < nts; i++) {
        int t = ts[i];
        size_t n = m->info[t].per_layer;
        if (!n) {
            w->v[t] = NULL;
        } else if (!m->mixed) {
            w->v[t] = (const float *)pw(m, t, l).p;
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
            g->v[t] = (float *)pg(m, t, l).p;
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

/* ZeRO-2: hand the gradients of the tensors `ts` (layer l's copies; the slot
 * buffer they live in) to the sink, then zero that buffer. */
static int grads_hand_over(mt_model *m, size_t l, const int *ts, size_t nts, void *buf, size_t n)
{
    int rc = 0;
    for (size_t i = 0; i < nts && rc == 0; i++) {
        int t = ts[i];
        size_t per = m->info[t].per_layer;
        if (per && m->sink)
            rc = m->sink(m->sink_ctx, pcopy_off(m, t, l), pg(m, t, l).p, per);
    }
    memset(buf, 0, n * psz(m));
    return rc;
}

/* ZeRO-0/1: layer l's trainable gradients are final (LoRA: its adapters' slice). */
static int grads_ready_layer(mt_model *m, size_t l, const int *ts, size_t nts)
{
    if (!m->ready)
        return 0;
    if (m->nlora) {
        size_t per = m->lora.per_layer;
        return per ? m->ready(m->ready_ctx, lora_gref(m, l, 0).p, per) : 0;
    }
    int rc = 0;
    for (size_t i = 0; i < nts && rc == 0; i++) {
        size_t per = m->info[ts[i]].per_layer;
        if (per && m->base_trainable)
            rc = m->ready(m->ready_ctx, pg(m, ts[i], l).p, per);
    }
    return rc;
}

void mt_model_set_grad_ready(mt_model *m, mt_grad_ready ready, void *ctx)
{
    m->ready = ready;
    m->ready_ctx = ctx;
}

void mt_model_set_stop(mt_model *m, mt_model_stop_fn stop, void *ctx)
{
    m->stop = stop;
    m->stop_ctx = ctx;
}

/* Whether the pass stops after this layer (every rank asks at the same points). */
static bool stop_here(mt_model *m) { return m->stop && m->stop(m->stop_ctx); }

/* ---------- ZeRO-3: gathering the weights ---------- */

void mt_model_params_changed(mt_model *m)
{
    for (size_t s = 0; s <= MEMTRAIN_PREFETCH; s++)
        m->wheld[s] = SIZE_MAX;
    m->outer_held = false;
}

/* Tensor t of layer l (the flat elements [pcopy_off, + per_layer)) from the
 * ranks' shards into where pw() finds it. */
static int gather_tensor(mt_model *m, int t, size_t l)
{
    size_t n = m->info[t].per_layer, off = pcopy_off(m, t, l);
    void *dst = gathered_w(m, t, l);
    if (!n)
        return 0;
    if (m->cfg.ranks < 2) { /* one process: the shard is every parameter */
        memcpy(dst, (char *)m->pshard + off * psz(m), n * psz(m));
        return 0;
    }
    return mt_dist_gather_range(m->pshard, m->pdt, off, n, m->nbase, dst, MEMTRAIN_RS_BUCKET);
}

static const int layer_tensors[] = {MT_P_LN1W, MT_P_LN1B, MT_P_WQKV, MT_P_BQKV, MT_P_WO,   MT_P_BO,
                                    MT_P_LN2W, MT_P_LN2B, MT_P_WFC,  MT_P_BFC,  MT_P_WPROJ, MT_P_BPROJ};
static const int outer_tensors[] = {MT_P_WTE, MT_P_WPE, MT_P_LNFW, MT_P_LNFB, MT_P_HEAD};
#define NLAYER_TENSORS (sizeof layer_tensors / sizeof layer_tensors[0])
#define NOUTER_TENSORS (sizeof outer_tensors / sizeof outer_tensors[0])

/* Layer l's weights into its slot, unless the slot holds them already (every
 * rank calls this in the same order: the schedule does not depend on data). */
static int gather_layer(mt_model *m, size_t l)
{
    size_t slot = l % (MEMTRAIN_PREFETCH + 1);
    if (!m->zero3 || l >= m->d.L || m->wheld[slot] == l)
        return 0;
    m->wheld[slot] = SIZE_MAX;
    for (size_t i = 0; i < NLAYER_TENSORS; i++)
        if (gather_tensor(m, layer_tensors[i], l) != 0)
            return -1;
    m->wheld[slot] = l;
    return 0;
}

/* Layer l's weights in use, and the next MEMTRAIN_PREFETCH layers (`dir` +1:
 * forward, -1: backward) gathered ahead into the other slots. */
static int gather_ahead(mt_model *m, size_t l, int dir)
{
    if (gather_layer(m, l) != 0)
        return -1;
    for (size_t k = 1; k <= MEMTRAIN_PREFETCH; k++) {
        if (dir < 0 && k > l)
            break;
        if (gather_layer(m, dir > 0 ? l + k : l - k) != 0)
            return -1;
    }
    return 0;
}

static int gather_outer(mt_model *m)
{
    if (!m->zero3 || m->outer_held)
        return 0;
    for (size_t i = 0; i < NOUTER_TENSORS; i++)
        if (gather_tensor(m, outer_tensors[i], 0) != 0)
            return -1;
    m->outer_held = true;
    return 0;
}

void mt_model_set_grad_sink(mt_model *m, mt_grad_sink sink, void *ctx)
{
    m->sink = sink;
    m->sink_ctx = ctx;
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

static int alloc_layer(mt_model *m, const memtrain_dims *inv, size_t l)
{
    for (int s = 0; s < MT_NSLOT; s++) {
        if (!m->saved_slot[s])
            continue;
        void *p = mt_alloc(MT_ACTIVATIONS, m->slot_n[s] * mt_dtype_size(m->slot_dt[s]));
        if (!p)
            return -1;
        m->saved[l * MT_NSLOT + s] = p;
    }
    m->res[l + 1] = mt_row_alloc(inv, MEMTRAIN_RES);
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
    if (m->ref_pass) /* the adapter reference: the policy without its LoRA delta */
        return;
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
    if (m->cfg.s.attention == MP_ATTN_FLASH)
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
/* ZeRO-0/1: let the gradient all-reduce in flight move on (between the layer's
 * matmuls: its exchanges progress only inside MPI calls). */
static void grads_progress(mt_model *m)
{
    if (m->ready) m->ready(m->ready_ctx, NULL, 0);
}

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
    grads_progress(m);
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
    grads_progress(m);
    /* h2 = norm2(res2): dres += ... */
    norm_bwd(m, dres, g->v[MT_P_LN2W], g->v[MT_P_LN2B], dln, a->s[MT_S_RES2], w->v[MT_P_LN2W],
             a->s[MT_S_LN2_MEAN], a->s[MT_S_LN2_RSTD]);
    /* res2 = x + atty @ Wo^T + b:  datty (N,AW) = dres @ Wo; dWo += dres^T atty */
    mt_mm_bwd_in(tl, datty, AW, dres, C, w->lin[1], N, C, AW, 1.0f, 0.0f);
    mt_mm_bwd_w(tl, g->lin[1], dres, C, a->s[MT_S_ATTY], AW, N, C, AW, 1.0f);
    if (g->v[MT_P_BO])
        mt_colsum_acc(g->v[MT_P_BO], dres, C, N, C);
    lora_bwd(m, l, a, MT_LIN_O, a->s[MT_S_ATTY], AW, datty, AW, dres, C);
    grads_progress(m);
    /* attention: dqkv (N,QW) */
    mt_attn_dims ad = attn_dims(m);
    if (m->cfg.s.attention == MP_ATTN_FLASH)
        mt_attn_flash_bwd(dqkv, datty, a->s[MT_S_QKV], a->s[MT_S_ATTY], a->s[MT_S_LSE], &ad,
                          m->attn_ws);
    else
        mt_attn_eager_bwd(dqkv, datty, a->s[MT_S_QKV], a->s[MT_S_ATT], &ad, m->adt, m->attn_ws);
    if (!m->gpt2) /* rotary: rotate the gradients of q and k back */
        mt_rope(dqkv, m->rope_cos, m->rope_sin, d->B, d->T, d->NH, d->KV, d->HD, 1);
    grads_progress(m);
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

/* The final norm of the last layer's output x: lnf (N,C) and its statistics.
 * Returns its fp32 values (NULL when an allocation fails). */
static float *final_norm_fwd(mt_model *m, const memtrain_dims *inv, const float *x)
{
    size_t NC = m->d.N * m->d.C;
    m->lnf = mt_row_alloc(inv, MEMTRAIN_LNF);
    m->lnf_mean = mt_row_alloc(inv, MEMTRAIN_LNF_MEAN); /* gpt2 */
    m->lnf_rstd = mt_row_alloc(inv, MEMTRAIN_LNF_RSTD);
    if (!m->lnf || (m->gpt2 && !m->lnf_mean) || !m->lnf_rstd)
        return NULL;
    float *lnf32 = m->mixed ? m->out32 : m->lnf;
    layer_w fw;
    final_weights(m, &fw);
    norm_fwd(m, lnf32, m->lnf_mean, m->lnf_rstd, x, fw.v[MT_P_LNFW], fw.v[MT_P_LNFB]);
    mt_round_f32(lnf32, m->adt, NC);
    if (m->mixed)
        mt_from_f32(m->lnf, m->adt, lnf32, NC);
    return lnf32;
}

/* ---------- preference methods ---------- */

/* Each sequence's sum of its T targets' log-probabilities, from the logits and
 * their log-sum-exps (the same arithmetic as the chunked path's). */
static void row_sums(const mt_model *m, float *lp, const float *logits, const float *lse,
                     const int32_t *targets)
{
    size_t V = m->d.V, T = m->d.T;
    memset(lp, 0, m->d.B * sizeof(float));
    for (size_t n = 0; n < m->d.N; n++)
        lp[n / T] += logits[n * V + targets[n]] - lse[n];
}

/* The method's loss from the policy's sums (pair_logps) and the reference's, and
 * each row's CE scale (d step objective / d logits = -c (onehot - softmax) x dscale,
 * c = d loss / d sum) in pair_logps + B. */
static double pair_loss(mt_model *m, float dscale)
{
    size_t R = m->d.B;
    float *coef = m->pair_logps + R;
    mt_pair_hp hp = {m->cfg.own.beta, m->cfg.own.cpo_alpha, m->cfg.own.simpo_gamma};
    double loss = mt_pair_loss(m->cfg.s.method, &hp, R / 2, m->d.T, m->pair_logps, m->ref_logps, coef);
    for (size_t i = 0; i < R; i++)
        coef[i] = -coef[i] * dscale;
    return loss;
}

/* A reward model's head and loss (TRL RewardTrainer.compute_loss,
 * trl/trainer/reward_trainer.py 744-753 at huggingface/trl@f2cd577:
 * -logsigmoid(r_chosen - r_rejected), mean over the pairs, no margin, no
 * center_rewards_coefficient by default). The score is computed at every position
 * and then pooled, as transformers does (huggingface/transformers@5dd4a635,
 * src/transformers/models/llama/modeling_llama.py, LlamaForSequenceClassification.
 * forward: `logits = self.score(hidden_states)` over all tokens, then `pooled_logits
 * = logits[torch.arange(batch_size), last_non_pad_token]`), so the logits are N x 1,
 * kept to the backward like the LM head's; a row's score is its last position's
 * (memtrain's rows have no padding). pair_logps gets the scores, then
 * d objective / d score (d loss / d score x dscale). */
static int score_fwd(mt_model *m, const memtrain_dims *inv, const float *lnf32, float dscale, double *loss)
{
    const mt_dims *d = &m->d;
    size_t R = d->B, T = d->T;
    m->logits = mt_row_alloc(inv, MEMTRAIN_LOGITS);
    if (!m->logits)
        return -1;
    mt_mm_fwd(&m->tiles, m->logits, 1, lnf32, d->C, pw(m, MT_P_HEAD, 0), d->N, 1, d->C, 1.0f, 0.0f);
    for (size_t i = 0; i < R; i++)
        m->pair_logps[i] = m->logits[i * T + T - 1];
    float *coef = m->pair_logps + R;
    mt_pair_hp hp = {m->cfg.own.beta, m->cfg.own.cpo_alpha, m->cfg.own.simpo_gamma};
    *loss = mt_pair_loss(MP_METHOD_REWARD, &hp, R / 2, T, m->pair_logps, NULL, coef);
    for (size_t i = 0; i < R; i++)
        coef[i] *= dscale;
    return 0;
}

/* The score head's backward into dln (N,C): the pooling's gradient is zero but at
 * each row's last position, so only those B rows go through the head (rows T C
 * apart); the others' d lnf is zero. */
static void score_bwd(mt_model *m, const float *lnf32)
{
    const mt_dims *d = &m->d;
    size_t TC = d->T * d->C, last = (d->T - 1) * d->C;
    const float *g = m->pair_logps + d->B;
    memset(m->dln, 0, d->N * d->C * sizeof(float));
    mt_mm_bwd_in(&m->tiles, m->dln + last, TC, g, 1, pw(m, MT_P_HEAD, 0), d->B, 1, d->C, 1.0f, 0.0f);
    mt_mm_bwd_w(&m->tiles, pg(m, MT_P_HEAD, 0), g, 1, lnf32 + last, TC, d->B, 1, d->C, 1.0f);
}

/* The reference's log-probability sum per row, into ref_logps: the layers' forward
 * without gradients, nothing kept for a backward (TRL: torch.no_grad(),
 * trl/trainer/dpo_trainer.py 1373). The reference model's frozen copy stands in for
 * the parameters; the adapter reference is the policy with LoRA off (use_adapter(None),
 * trl/trainer/utils.py 1227-1229). Its transients (memtrain_ref_forward_bytes): one
 * layer of the slots saved in fp32 (the others are computed in their working copies,
 * the attention probabilities in the scratch), in fp32 the residual stream in and
 * out (mixed: x32 and out32), with ce full the logits; all freed at the end. */
static int ref_forward(mt_model *m, const memtrain_dims *inv, const int32_t *inputs, const int32_t *targets)
{
    const mt_dims *d = &m->d;
    size_t N = d->N, C = d->C, V = d->V, T = d->T;
    float *tr[MT_NSLOT] = {0}, *rres[2] = {0}, *logits = NULL;
    int rc = -1;
    for (int s = 0; s < MT_S_LORA; s++)
        if (m->present[s] && s != MT_S_ATT && m->saved_slot[s] && m->slot_dt[s] == MT_F32 &&
            !(tr[s] = mt_alloc_n(MT_ACTIVATIONS, m->slot_n[s], sizeof(float))))
            goto out;
    if (!m->mixed && (!(rres[0] = mt_row_alloc(inv, MEMTRAIN_REF_RES)) || !(rres[1] = mt_row_alloc(inv, MEMTRAIN_REF_RES))))
        goto out;
    if (m->cfg.s.ce == MP_CE_FULL && !(logits = mt_row_alloc(inv, MEMTRAIN_REF_LOGITS)))
        goto out;
    void *params = m->params;
    if (m->refw)
        m->params = m->refw;
    m->ref_pass = true;
    float *x = m->mixed ? m->x32 : rres[0], *out = m->mixed ? m->out32 : rres[1];
    mt_encoder_fwd(x, inputs, pw(m, MT_P_WTE, 0), pw(m, MT_P_WPE, 0), d->B, T, C);
    mt_round_f32(x, m->adt, N * C);
    layer_a a;
    for (size_t l = 0; l < d->L; l++) {
        layer_w w;
        layer_weights(m, l, &w);
        a.x = x;
        for (int s = 0; s < MT_NSLOT; s++)
            a.s[s] = tr[s] ? tr[s] : s == MT_S_ATT ? NULL : m->scr[s];
        layer_fwd(m, l, &w, &a, out);
        float *next = out;
        out = x, x = next;
    }
    /* the final norm into the free buffer, its statistics in the first norm's */
    layer_w fw;
    final_weights(m, &fw);
    norm_fwd(m, out, a.s[MT_S_LN1_MEAN], a.s[MT_S_LN1_RSTD], x, fw.v[MT_P_LNFW], fw.v[MT_P_LNFB]);
    mt_round_f32(out, m->adt, N * C);
    int ht = head_tensor(m);
    memset(m->ref_logps, 0, d->B * sizeof(float));
    if (logits) {
        mt_mm_fwd(&m->tiles, logits, V, out, C, pw(m, ht, 0), N, V, C, 1.0f, 0.0f);
        for (size_t n = 0; n < N; n++)
            m->ref_logps[n / T] += logits[n * V + targets[n]] - mt_ce_row_lse(logits + n * V, V);
    } else {
        mt_ce_chunked_rows(NULL, m->ce_buf, out, targets, pw(m, ht, 0), mt_g(NULL, m->pdt), &m->tiles, N, C, V,
                           (size_t)m->cfg.s.ce_chunk, 0.0f, NULL, T, m->ref_logps);
    }
    m->params = params;
    m->ref_pass = false;
    rc = 0;
out:
    for (int s = 0; s < MT_NSLOT; s++)
        mt_free(tr[s]);
    mt_free(rres[0]);
    mt_free(rres[1]);
    mt_free(logits);
    return rc;
}

int mt_model_reference(mt_model *m, const int32_t *inputs, const int32_t *targets, const float **logps)
{
    memtrain_dims inv;
    char why[MT_ERR_LEN];
    if (!m->ref_logps)
        return mt_error("model: method %s with reference %s runs no reference forward",
                        mp_method_name(m->cfg.s.method), mp_reference_name(m->cfg.s.reference));
    if (m->active)
        return mt_error("model: the reference's forward called between a forward and its backward");
    if (mt_config_dims(&m->cfg, &inv, why) != 0)
        return mt_error("model: %s", why);
    for (size_t i = 0; i < m->d.N; i++)
        if (inputs[i] < 0 || (size_t)inputs[i] >= m->d.V || targets[i] < 0 || (size_t)targets[i] >= m->d.V)
            return mt_error("model: token %zu out of range [0, %zu)", i, m->d.V);
    if (ref_forward(m, &inv, inputs, targets) != 0)
        return -1;
    *logps = m->ref_logps;
    return 0;
}

int mt_model_forward(mt_model *m, const int32_t *inputs, const int32_t *targets, float dscale,
                     float *loss)
{
    if (m->active)
        return mt_error("model: forward called again before backward or release");
    const mt_dims *d = &m->d;
    size_t N = d->N, C = d->C;
    memtrain_dims inv; /* the sizes of what the forward allocates */
    char why[MT_ERR_LEN];
    if (mt_config_dims(&m->cfg, &inv, why) != 0)
        return mt_error("model: %s", why);
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

    /* a preference method's reference first: its transients are gone before the policy's */
    if (m->ref_logps && ref_forward(m, &inv, inputs, targets) != 0)
        goto fail;
    /* ZeRO-3: the embeddings', final norm's and head's weights, and layer 0's */
    if (gather_outer(m) != 0 || gather_ahead(m, 0, +1) != 0)
        goto fail;
    /* embeddings: res[0] (N,C) */
    m->res[0] = mt_row_alloc(&inv, MEMTRAIN_RES);
    if (!m->res[0])
        goto fail;
    float *x = m->mixed ? m->x32 : m->res[0];
    mt_encoder_fwd(x, inputs, pw(m, MT_P_WTE, 0), pw(m, MT_P_WPE, 0), d->B, d->T, C);
    mt_round_f32(x, m->adt, N * C);
    if (m->mixed)
        mt_from_f32(m->res[0], m->adt, x, N * C);

    for (size_t l = 0; l < d->L; l++) {
        if (alloc_layer(m, &inv, l) != 0 || gather_ahead(m, l, +1) != 0)
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
        if (stop_here(m)) {
            mt_model_release(m);
            return MT_MODEL_STOPPED;
        }
    }

    float *lnf32 = final_norm_fwd(m, &inv, x);
    if (!lnf32)
        goto fail;

    /* head and loss */
    int ht = head_tensor(m);
    double sum;
    if (m->score) {
        if (score_fwd(m, &inv, lnf32, dscale, &sum) != 0)
            goto fail;
    } else if (m->cfg.s.ce == MP_CE_FULL) {
        m->logits = mt_row_alloc(&inv, MEMTRAIN_LOGITS);
        m->ce_lse = mt_row_alloc(&inv, MEMTRAIN_CE_LSE);
        if (!m->logits || !m->ce_lse)
            goto fail;
        sum = mt_ce_full_fwd(m->logits, m->ce_lse, lnf32, targets, pw(m, ht, 0), &m->tiles, N, C,
                             d->V);
        if (m->pairwise) {
            row_sums(m, m->pair_logps, m->logits, m->ce_lse, targets);
            sum = pair_loss(m, dscale);
        }
    } else if (m->pairwise) {
        /* the scales need every row's sum: the sums first, then the gradients chunk by chunk again */
        memset(m->pair_logps, 0, d->B * sizeof(float));
        mt_ce_chunked_rows(NULL, m->ce_buf, lnf32, targets, pw(m, ht, 0), pg(m, ht, 0), &m->tiles, N, C, d->V,
                           (size_t)m->cfg.s.ce_chunk, 0.0f, NULL, d->T, m->pair_logps);
        sum = pair_loss(m, dscale);
        if (dscale != 0.0f)
            mt_ce_chunked_rows(m->dlnf, m->ce_buf, lnf32, targets, pw(m, ht, 0), pg(m, ht, 0), &m->tiles, N, C,
                               d->V, (size_t)m->cfg.s.ce_chunk, 0.0f, m->pair_logps + d->B, d->T, NULL);
        mt_free(m->lnf);
        m->lnf = NULL;
    } else {
        sum = mt_ce_chunked(dscale != 0.0f ? m->dlnf : NULL, m->ce_buf, lnf32, targets,
                            pw(m, ht, 0), pg(m, ht, 0), &m->tiles, N, C, d->V,
                            (size_t)m->cfg.s.ce_chunk, dscale / (float)N);
        mt_free(m->lnf); /* the head's gradients are done: lnf is not needed any more */
        m->lnf = NULL;
    }
    *loss = (float)(m->pairwise ? sum : sum / (double)N); /* pairwise: the method's loss already */
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
    if (m->score) {
        float *lnf32 = m->lnf;
        if (m->mixed) {
            mt_to_f32(m->out32, m->lnf, m->adt, N * C);
            lnf32 = m->out32;
        }
        score_bwd(m, lnf32);
        mt_free(m->logits);
        mt_free(m->lnf);
        m->logits = NULL;
        m->lnf = NULL;
        dl = m->dln;
    } else if (m->cfg.s.ce == MP_CE_FULL) {
        float *lnf32 = m->lnf;
        if (m->mixed) {
            mt_to_f32(m->out32, m->lnf, m->adt, N * C);
            lnf32 = m->out32;
        }
        mt_ce_full_bwd_rows(m->dln, m->logits, m->ce_lse, lnf32, m->targets, pw(m, ht, 0), pg(m, ht, 0),
                            &m->tiles, N, C, d->V, m->dscale / (float)N, m->pairwise ? m->pair_logps + d->B : NULL,
                            d->T);
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
        if (gather_ahead(m, l, -1) != 0) { /* ZeRO-3: gathered again unless still in its slot */
            mt_model_release(m);
            return -1;
        }
        layer_weights(m, l, &w);
        grads_begin(m, l, layer_vecs, NLAYER_VECS, &g);
        float *x = m->res[l];
        if (m->mixed) {
            mt_to_f32(m->x32, m->res[l], m->adt, N * C);
            x = m->x32;
        }
        acts_view(m, l, &a, x);
        if (m->cfg.s.checkpointing == MP_CKPT_FULL)
            layer_fwd(m, l, &w, &a, NULL); /* recompute the layer's activations */
        else if (m->mixed)
            restore_slots(m, l);
        layer_bwd(m, l, &w, &g, &a, m->dres);
        grads_end(m, l, layer_vecs, NLAYER_VECS, &g);
        free_layer(m, l);
        if (m->glayer && grads_hand_over(m, l, layer_tensors, NLAYER_TENSORS, m->glayer, m->nlayer_g) != 0) {
            mt_model_release(m);
            return -1;
        }
        if (grads_ready_layer(m, l, layer_tensors, NLAYER_TENSORS) != 0) {
            mt_model_release(m);
            return -1;
        }
        if (stop_here(m)) {
            mt_model_release(m);
            return MT_MODEL_STOPPED;
        }
    }

    /* embeddings */
    mt_encoder_bwd(pg(m, MT_P_WTE, 0), pg(m, MT_P_WPE, 0), m->dres, m->inputs, d->B, d->T, C);
    m->active = false;
    if (m->glayer && grads_hand_over(m, 0, outer_tensors, NOUTER_TENSORS, m->gouter, m->nouter_g) != 0)
        return -1;
    if (!m->nlora && grads_ready_layer(m, 0, outer_tensors, NOUTER_TENSORS) != 0)
        return -1;
    return 0;
}

void mt_model_zero_grad(mt_model *m)
{
    if (m->grads)
        memset(m->grads, 0, m->nbase * psz(m));
    if (m->glayer) {
        memset(m->glayer, 0, m->nlayer_g * psz(m));
        memset(m->gouter, 0, m->nouter_g * psz(m));
    }
    if (m->lgrad)
        memset(m->lgrad, 0, m->nlora * psz(m));
}

/*
 * model_setup.c — the model's parameter table, initialisation, the
 * activation-slot policy of each checkpointing mode, creation and
 * destruction of every buffer, element accessors and checkpoint state.
 * (Forward and backward are in model.c; every buffer is a row of
 * planner/memtrain/memtrain_inventory.c, lifetimes are explained in MEMORY.md.)
 */
#include "model_impl.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "dist.h"
#include "model_buffers.h"
#include "ops.h"
#include "rng.h"
#include "model/model.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"

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
    mt_rng_seed(&s->rng, c->own.seed * 1000003ULL + (uint64_t)t * 7919ULL + (uint64_t)l * 104729ULL);
    s->loaded = 0;
    s->normal = m->info[t].matrix;
    s->constant = (t == MT_P_LN1W || t == MT_P_LN2W || t == MT_P_LNFW) ? 1.0f : 0.0f;
    s->std = c->own.init_std;
    if (t == MT_P_WO || t == MT_P_WPROJ) /* residual projections, GPT-2 style */
        s->std = c->own.init_std / sqrtf(2.0f * (float)c->shape.layers);
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
    for (int t = 0; t < MT_NPARAM; t++) {
        size_t per = m->info[t].per_layer;
        if (!per || (m->qlora && m->info[t].linear))
            continue;
        for (size_t l = 0; l < m->info[t].copies; l++) {
            init_stream_start(&st, m, t, l);
            size_t base = pcopy_off(m, t, l);
            /* whole chunks, as init_value() would produce them */
            for (size_t i0 = 0; i0 < per; i0 += INIT_CHUNK) {
                size_t n = per - i0 < INIT_CHUNK ? per - i0 : INIT_CHUNK;
                if (st.normal) {
                    mt_rng_fill_normal(&st.rng, st.buf, INIT_CHUNK, st.std);
                } else {
                    for (size_t i = 0; i < n; i++)
                        st.buf[i] = st.constant;
                }
                if (m->master)
                    memcpy(m->master + base + i0, st.buf, n * sizeof(float));
                if (m->zero3) { /* this rank's part of the chunk only */
                    size_t a = base + i0, b = a + n, x = a > m->plo ? a : m->plo;
                    size_t y = b < m->plo + m->pn ? b : m->plo + m->pn;
                    if (x < y)
                        mt_from_f32((char *)m->pshard + (x - m->plo) * psz(m), m->pdt, st.buf + (x - a), y - x);
                    if (x < y && m->mshard)
                        memcpy(m->mshard + (x - m->plo), st.buf + (x - a), (y - x) * sizeof(float));
                } else {
                    mt_from_f32((char *)m->params + (base + i0) * psz(m), m->pdt, st.buf, n);
                }
            }
        }
    }
    if (m->qlora) {
        static qgen_ctx q;
        q.m = m;
        for (size_t l = 0; l < m->d.L; l++) {
            for (int k = 0; k < 4; k++)
                init_stream_start(&q.st[k], m, lin_tensor[k], l);
            /* the dequantisation buffer (qn elements) holds the nblocks = qn/64
             * fp32 block maxima until they are double-quantised */
            if (mt_nf4_quantize_gen(&m->nf4[l], qlora_gen, &q, (float *)m->deq) != 0)
                return -1;
        }
    }
    /* LoRA: A uniform in +-1/sqrt(in), B zero */
    for (size_t l = 0; l < m->d.L && m->nlora; l++) {
        for (int k = 0; k < m->lora.n; k++) {
            const mt_lora_mod *md = &m->lora.mods[k];
            mt_rng rng;
            mt_rng_seed(&rng, m->cfg.own.seed * 7777ULL + l * 131ULL + (uint64_t)k * 17ULL + 5ULL);
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
        {MT_P_HEAD, "head", m->score ? C : g ? 0 : d->V * C, 1, true, false},
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
    /* ZeRO-2: the offsets in the layer slot and in the other gradients' buffer */
    m->nlayer_g = m->nouter_g = 0;
    for (int t = 0; t < MT_NPARAM; t++) {
        size_t *n = layer_tensor(t) ? &m->nlayer_g : &m->nouter_g;
        m->goff[t] = *n;
        *n += m->info[t].per_layer;
    }
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

/* ---------- the model's buffers: rows of the inventory (model_buffers.c) ---------- */

_Static_assert(MT_S_LORA == MEMTRAIN_LORA_U - MEMTRAIN_LN1 && MT_S_ATT == MEMTRAIN_ATT - MEMTRAIN_LN1 &&
                   MT_S_FCG == MEMTRAIN_FCG - MEMTRAIN_LN1 && MT_NSLOT == MEMTRAIN_NSLOTS,
               "the slots are the inventory's slot rows, in order");

/* Where the model keeps each row it allocates (MEMTRAIN_BY_MODEL), and whether
 * the buffer starts zeroed. */
#define KEPT_IN(field) {true, false, offsetof(mt_model, field)}
#define ZEROED_IN(field) {true, true, offsetof(mt_model, field)}
static const mt_row_field row_fields[MEMTRAIN_NROWS] = {
    [MEMTRAIN_PARAMS] = KEPT_IN(params),     [MEMTRAIN_MASTER] = KEPT_IN(master),
    [MEMTRAIN_PARAM_SHARD] = ZEROED_IN(pshard), [MEMTRAIN_PARAM_LAYER] = KEPT_IN(wslots),
    [MEMTRAIN_PARAM_OUTER] = KEPT_IN(wouter), [MEMTRAIN_MASTER_SHARD] = ZEROED_IN(mshard),
    [MEMTRAIN_GRADS] = ZEROED_IN(grads),     [MEMTRAIN_NF4] = ZEROED_IN(nf4),
    [MEMTRAIN_GRAD_LAYER] = ZEROED_IN(glayer), [MEMTRAIN_GRAD_OUTER] = ZEROED_IN(gouter),
    [MEMTRAIN_DEQ] = KEPT_IN(deq),           [MEMTRAIN_LW] = KEPT_IN(lw),
    [MEMTRAIN_LMASTER] = KEPT_IN(lmaster),   [MEMTRAIN_LGRAD] = ZEROED_IN(lgrad),
    [MEMTRAIN_TILE_W] = KEPT_IN(tiles.w),    [MEMTRAIN_TILE_G] = KEPT_IN(tiles.g),
    [MEMTRAIN_WVEC] = KEPT_IN(wvec),         [MEMTRAIN_GVEC] = KEPT_IN(gvec),
    [MEMTRAIN_ATTN_WS] = KEPT_IN(attn_ws),   [MEMTRAIN_DRES] = KEPT_IN(dres),
    [MEMTRAIN_DLN] = KEPT_IN(dln),           [MEMTRAIN_DQKV] = KEPT_IN(dqkv),
    [MEMTRAIN_DATTY] = KEPT_IN(datty),       [MEMTRAIN_DFCH] = KEPT_IN(dfch),
    [MEMTRAIN_DFCG] = KEPT_IN(dfcg),         [MEMTRAIN_DU] = KEPT_IN(du),
    [MEMTRAIN_CE_BUF] = KEPT_IN(ce_buf),     [MEMTRAIN_DLNF] = KEPT_IN(dlnf),
    [MEMTRAIN_X32] = KEPT_IN(x32),           [MEMTRAIN_OUT32] = KEPT_IN(out32),
    [MEMTRAIN_ROPE_COS] = KEPT_IN(rope_cos), [MEMTRAIN_ROPE_SIN] = KEPT_IN(rope_sin),
    [MEMTRAIN_RES_TABLE] = ZEROED_IN(res),   [MEMTRAIN_SAVED_TABLE] = ZEROED_IN(saved),
    [MEMTRAIN_REF_PARAMS] = KEPT_IN(refw),   [MEMTRAIN_REF_LOGPS] = ZEROED_IN(ref_logps),
    [MEMTRAIN_PAIR_LOGPS] = ZEROED_IN(pair_logps),
};

/* The NF4 stores of every layer (the rows quant.c allocates), at their place in the walk. */
static int nf4_stores(void *model)
{
    mt_model *m = model;
    for (size_t l = 0; m->nf4 && l < m->d.L; l++)
        if (mt_nf4_init(&m->nf4[l], m->qn, m->cfg.s.quant == MP_QUANT_NF4_DQ) != 0)
            return -1;
    return 0;
}

static void free_buffers(mt_model *m)
{
    for (size_t l = 0; m->nf4 && l < m->d.L; l++)
        mt_nf4_free(&m->nf4[l]);
    mt_buffers_free(m, row_fields, m->scr);
}

/* ---------- the activation-slot policy (the inventory's slot rows) ---------- */

static void slot_policy(mt_model *m, const memtrain_dims *inv)
{
    for (int row = MEMTRAIN_LN1; row <= MEMTRAIN_LORA_U; row++) {
        for (size_t k = 0; k < memtrain_copies(inv, row); k++) {
            int s = mt_slot_of_row(row) + (int)k;
            m->slot_n[s] = memtrain_elems(inv, row);
            m->present[s] = true;
            m->slot_dt[s] = memtrain_rows[row].dtype == MEMTRAIN_DT_F32 ? MT_F32 : m->adt;
            m->saved_slot[s] = memtrain_slot_saved(inv, row);
        }
    }
}

/* The inventory's sizes against the model's own layout (the parameter table,
 * the LoRA modules, the attention kernels' scratch): a mismatch is a bug. */
static int check_layout(const mt_model *m, const memtrain_dims *inv)
{
    mt_attn_dims ad = attn_dims(m);
    size_t attn = mt_attn_ws_floats(&ad, m->cfg.s.attention == MP_ATTN_FLASH, m->saved_slot[MT_S_ATT]);
    size_t ranks = m->cfg.ranks > 1 ? (size_t)m->cfg.ranks : 1;
    const struct {
        int row;
        size_t want;
    } need[] = {{MEMTRAIN_PARAMS, m->zero3 ? 0 : m->nbase},
                {MEMTRAIN_PARAM_SHARD, m->zero3 ? (m->nbase + ranks - 1) / ranks : 0},
                {MEMTRAIN_PARAM_LAYER, m->zero3 ? (MEMTRAIN_PREFETCH + 1) * m->nlayer_g : 0},
                {MEMTRAIN_PARAM_OUTER, m->zero3 ? m->nouter_g : 0},
                {MEMTRAIN_MASTER_SHARD, m->zero3 && m->mixed ? (m->nbase + ranks - 1) / ranks : 0},
                {MEMTRAIN_DEQ, m->qlora ? m->qn : 0},
                {MEMTRAIN_LW, m->nlora},
                {MEMTRAIN_LORA_U, m->lora.n ? m->d.N * m->d.r : 0},
                {MEMTRAIN_ATTN_WS, attn},
                {MEMTRAIN_GRAD_LAYER, m->cfg.s.zero >= 2 && m->base_trainable ? m->nlayer_g : 0},
                {MEMTRAIN_GRAD_OUTER, m->cfg.s.zero >= 2 && m->base_trainable ? m->nouter_g : 0}};
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
        if (memtrain_elems(inv, need[i].row) != need[i].want)
            return mt_error("model: the inventory's %s has %zu elements, the model needs %zu",
                            memtrain_rows[need[i].row].name, memtrain_elems(inv, need[i].row),
                            need[i].want);
    if (memtrain_copies(inv, MEMTRAIN_LORA_U) != (size_t)m->lora.n ||
        memtrain_alloc_bytes(inv, m->zero3 ? MEMTRAIN_PARAM_OUTER : MEMTRAIN_PARAMS) !=
            (m->zero3 ? m->nouter_g : m->nbase) * psz(m))
        return mt_error("model: the inventory's LoRA modules or storage type differ from the model's");
    return 0;
}

int mt_model_create(const mt_config *c, mt_model **out)
{
    *out = NULL;
    mt_model *m = mt_calloc(MT_OTHER, sizeof *m);
    if (!m)
        return -1;
    m->cfg = *c;
    mt_dims *d = &m->d;
    d->B = mt_config_rows(c);
    d->T = (size_t)c->s.seq;
    d->N = d->B * d->T;
    d->C = (size_t)c->shape.hidden;
    d->L = (size_t)c->shape.layers;
    d->NH = (size_t)c->shape.heads;
    d->KV = (size_t)c->shape.kv_heads;
    d->HD = d->C / d->NH;
    d->F = (size_t)c->shape.ffn;
    d->V = (size_t)c->shape.vocab;
    d->maxpos = (size_t)c->shape.max_pos;
    d->QW = (d->NH + 2 * d->KV) * d->HD;
    d->AW = d->NH * d->HD;
    m->gpt2 = c->shape.family == MT_GPT2;
    d->FW = m->gpt2 ? d->F : 2 * d->F;
    d->r = (size_t)c->s.lora_rank;
    m->mixed = c->s.precision != MP_FP32;
    m->pdt = m->adt = c->s.precision == MP_MIXED_BF16 ? MT_BF16
                      : c->s.precision == MP_MIXED_FP16 ? MT_F16
                                                    : MT_F32;
    /* the storage the planner's precision row sizes every P and A buffer with */
    if (mt_dtype_size(m->adt) != (size_t)mp_element_bytes(c->s.precision)) {
        mt_error("model: precision %s stores %zu-byte values here, %g by the planner's row",
                 mp_precision_name(c->s.precision), mt_dtype_size(m->adt), mp_element_bytes(c->s.precision));
        goto fail;
    }
    m->qlora = c->s.quant != MP_QUANT_NONE;
    m->base_trainable = c->s.lora_rank == 0;
    m->pairwise = c->s.method != MP_METHOD_SFT;
    m->score = mp_method_desc_of(c->s.method)->score_head;
    m->zero3 = c->s.zero >= 3 && m->base_trainable;
    mt_lora_layout_make(&m->lora, c->shape.family, c->s.lora_targets, d->r, c->own.lora_alpha, d->C, d->NH,
                        d->KV, d->HD, d->F);
    m->nlora = d->L * m->lora.per_layer;
    memtrain_dims inv;
    char why[MT_ERR_LEN];
    if (mt_config_dims(c, &inv, why) != 0) {
        mt_error("model: %s", why);
        goto fail;
    }
    param_table(m);
    m->plo = 0, m->pn = m->nbase;
    if (m->zero3)
        mt_dist_shard(m->nbase, c->rank, c->ranks > 1 ? c->ranks : 1, &m->plo, &m->pn);
    mt_model_params_changed(m);
    slot_policy(m, &inv);
    if (check_layout(m, &inv) != 0 || mt_buffers_alloc(&inv, m, row_fields, m->scr, nf4_stores) != 0)
        goto fail;
    m->tiles.n = memtrain_elems(&inv, MEMTRAIN_TILE_W);
    if (m->nlora)
        m->lseg = (mt_seg){0, m->nlora, true};
    if (init_params(m) != 0)
        goto fail;
    if (m->refw) /* the reference model: the policy as it starts, frozen */
        memcpy(m->refw, m->params, m->nbase * psz(m));
    if (m->rope_cos)
        mt_rope_tables(m->rope_cos, m->rope_sin, d->T, d->HD);
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
    free_buffers(m);
    mt_free(m);
    mt_mem_trim(); /* hand cached blocks back to the system */
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
        /* ZeRO-3: w is this rank's shard, [plo, plo + pn) of the n */
        *g = (mt_group){m->nbase, m->zero3 ? m->pshard : m->params, m->zero3 ? m->mshard : m->master,
                        m->grads, m->pdt, m->segs, m->nsegs};
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
    if (m->zero3) { /* ZeRO-3: this rank's shard only (0 outside it) */
        size_t e = m->poff[t] + i;
        return e >= m->plo && e < m->plo + m->pn ? mt_load1(m->pshard, m->pdt, e - m->plo) : 0.0f;
    }
    return mt_load1(m->params, m->pdt, m->poff[t] + i);
}

void mt_model_param_set(mt_model *m, int t, size_t i, float v)
{
    if (m->qlora && m->info[t].linear)
        return;
    if (m->zero3) { /* ZeRO-3: this rank's shard only */
        size_t e = m->poff[t] + i;
        if (e >= m->plo && e < m->plo + m->pn)
            mt_store1(m->pshard, m->pdt, e - m->plo, v);
        if (e >= m->plo && e < m->plo + m->pn && m->mshard)
            m->mshard[e - m->plo] = v;
        mt_model_params_changed(m);
        return;
    }
    mt_store1(m->params, m->pdt, m->poff[t] + i, v);
    if (m->master)
        m->master[m->poff[t] + i] = v;
}

float mt_model_grad_get(const mt_model *m, int t, size_t i)
{
    if (!m->grads || (m->qlora && m->info[t].linear))
        return 0.0f; /* ZeRO-2: the gradients are in the trainer's shard */
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
    size_t P = psz(m), n = m->pn * P + m->nlora * P; /* pn: nbase, or ZeRO-3's shard */
    if (m->master)
        n += m->nbase * sizeof(float);
    if (m->mshard)
        n += m->pn * sizeof(float);
    if (m->lmaster)
        n += m->nlora * sizeof(float);
    for (size_t l = 0; m->nf4 && l < m->d.L; l++)
        n += mt_nf4_state_size(&m->nf4[l]);
    return n;
}

void mt_model_state_save(const mt_model *m, uint8_t *buf)
{
    size_t P = psz(m);
    memcpy(buf, m->zero3 ? m->pshard : m->params, m->pn * P);
    buf += m->pn * P;
    if (m->master) {
        memcpy(buf, m->master, m->nbase * sizeof(float));
        buf += m->nbase * sizeof(float);
    }
    if (m->mshard) {
        memcpy(buf, m->mshard, m->pn * sizeof(float));
        buf += m->pn * sizeof(float);
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
    memcpy(m->zero3 ? m->pshard : m->params, buf, m->pn * P);
    buf += m->pn * P;
    mt_model_params_changed(m);
    if (m->master) {
        memcpy(m->master, buf, m->nbase * sizeof(float));
        buf += m->nbase * sizeof(float);
    }
    if (m->mshard) {
        memcpy(m->mshard, buf, m->pn * sizeof(float));
        buf += m->pn * sizeof(float);
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

int mt_model_state_check(const mt_model *m, const uint8_t *buf)
{
    /* the NF4 stores come last, after the same sections mt_model_state_size counts */
    size_t P = psz(m), at = m->pn * P + m->nlora * P;
    if (m->master)
        at += m->nbase * sizeof(float);
    if (m->mshard)
        at += m->pn * sizeof(float);
    if (m->lmaster)
        at += m->nlora * sizeof(float);
    for (size_t l = 0; m->nf4 && l < m->d.L; l++) {
        if (mt_nf4_state_check(&m->nf4[l], buf + at) != 0) {
            char why[MT_ERR_LEN];
            snprintf(why, sizeof why, "%s", mt_last_error());
            return mt_error("layer %zu: %s", l, why);
        }
        at += mt_nf4_state_size(&m->nf4[l]);
    }
    return 0;
}

/*
 * model_buffers.c — the model's buffers are rows of the inventory
 * (planner/memtrain/memtrain_inventory.c): allocated at creation and freed by walking
 * the rows, and the forward's per-micro-batch rows allocated from them.
 */
#include "model_buffers.h"

#include <stddef.h>
#include <string.h>

#include "alloc.h"
#include "model_impl.h"
#include "model/model.h"

_Static_assert(MT_S_LORA == MEMTRAIN_LORA_U - MEMTRAIN_LN1 && MT_S_ATT == MEMTRAIN_ATT - MEMTRAIN_LN1 &&
                   MT_S_FCG == MEMTRAIN_FCG - MEMTRAIN_LN1 && MT_NSLOT == MEMTRAIN_NSLOTS,
               "the slots are the inventory's slot rows, in order");

/* This configuration in the inventory's terms (the planner's enums). The data
 * rows are data.c's: the model's rows do not depend on the source's size. */
void mt_model_inventory(const mt_model *m, memtrain_dims *v)
{
    const mt_config *c = &m->cfg;
    const mt_dims *d = &m->d;
    memset(v, 0, sizeof *v);
    v->gpt2 = c->family == MT_GPT2;
    v->L = d->L, v->C = d->C, v->NH = d->NH, v->KV = d->KV, v->HD = d->HD, v->F = d->F;
    v->V = d->V, v->maxpos = d->maxpos, v->B = d->B, v->T = d->T;
    /* the settings are the planner's own enums: copied as they are */
    v->precision = c->precision, v->optimizer = c->optimizer, v->adam8_block = (size_t)c->opt.block;
    v->checkpointing = c->checkpointing, v->attention = c->attention, v->attn_tile = (size_t)c->attn_tile;
    v->ce = c->ce, v->ce_chunk = (size_t)c->ce_chunk;
    v->lora_rank = d->r, v->lora_targets = c->lora_targets;
    v->quant = c->quant, v->loader = c->loader;
    v->shuffle_buffer = (size_t)c->shuffle_buffer;
    v->zero = c->zero; /* ZeRO-2: the layer slot instead of every gradient */
    v->ranks = (size_t)c->ranks; /* ZeRO-3: the parameters' shard */
    memtrain_dims_finish(v);
}

/* Where the model keeps each row it allocates (MEMTRAIN_BY_MODEL), and whether
 * the buffer starts zeroed. */
typedef struct row_field {
    bool bound, zeroed;
    size_t offset;
} row_field;
#define KEPT_IN(field) {true, false, offsetof(mt_model, field)}
#define ZEROED_IN(field) {true, true, offsetof(mt_model, field)}
static const row_field row_fields[MEMTRAIN_NROWS] = {
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
};

/* One allocation of `row`, NULL when the row is absent (or on failure). C
 * structures are allocated at their size in this build. */
static void *alloc_row(const memtrain_dims *inv, int row, bool zeroed)
{
    const memtrain_row *r = &memtrain_rows[row];
    size_t bytes = memtrain_alloc_bytes(inv, row), n = memtrain_elems(inv, row);
    if (r->dtype == MEMTRAIN_DT_PTR)
        bytes = n * sizeof(void *);
    else if (r->dtype == MEMTRAIN_DT_NF4_STORE)
        bytes = n * sizeof(mt_nf4);
    if (!bytes)
        return NULL;
    return zeroed ? mt_calloc(r->tag, bytes) : mt_alloc(r->tag, bytes);
}

void *mt_row_alloc(const memtrain_dims *inv, int row) { return alloc_row(inv, row, false); }

/* The fp32 working copies of a slot row (one layer's; LoRA u: one per module). */
static int alloc_slot_buffers(mt_model *m, const memtrain_dims *inv, int row)
{
    if (!memtrain_slot_buffer(inv, row))
        return 0;
    for (size_t k = 0; k < memtrain_copies(inv, row); k++) {
        float *p = mt_alloc_n(memtrain_rows[row].tag, memtrain_elems(inv, row), sizeof(float));
        if (!p)
            return -1;
        m->scr[mt_slot_of_row(row) + (int)k] = p;
    }
    return 0;
}

int mt_model_alloc_buffers(mt_model *m, const memtrain_dims *inv)
{
    for (int row = 0; row < MEMTRAIN_NROWS; row++) {
        const memtrain_row *r = &memtrain_rows[row];
        if (r->lifetime == MEMTRAIN_LAYER_SLOT) {
            if (alloc_slot_buffers(m, inv, row) != 0)
                return -1;
        } else if (r->by == MEMTRAIN_BY_NF4 && row == MEMTRAIN_NF4_CODES) {
            for (size_t l = 0; m->nf4 && l < m->d.L; l++)
                if (mt_nf4_init(&m->nf4[l], m->qn, m->cfg.quant == MP_QUANT_NF4_DQ) != 0)
                    return -1;
        } else if (r->by == MEMTRAIN_BY_MODEL && r->lifetime == MEMTRAIN_PERSISTENT) {
            if (!row_fields[row].bound)
                return mt_error("model: no field keeps the inventory's row %s", r->name);
            void *p = alloc_row(inv, row, row_fields[row].zeroed);
            if (!p && memtrain_elems(inv, row))
                return -1;
            memcpy((char *)m + row_fields[row].offset, &p, sizeof p);
        }
    }
    return 0;
}

void mt_model_free_buffers(mt_model *m)
{
    for (size_t l = 0; m->nf4 && l < m->d.L; l++)
        mt_nf4_free(&m->nf4[l]);
    for (int s = 0; s < MT_NSLOT; s++)
        mt_free(m->scr[s]);
    for (int row = 0; row < MEMTRAIN_NROWS; row++) {
        if (!row_fields[row].bound)
            continue;
        void *p;
        memcpy(&p, (char *)m + row_fields[row].offset, sizeof p);
        mt_free(p);
    }
}


/*
 * lora.c — LoRA module table and products (see lora.h).
 */
#include "lora.h"

#include <string.h>

#include "memtrain/memtrain_inventory.h"
#include "model/model.h"

_Static_assert(MT_MAX_LORA == MEMTRAIN_MAX_LORA, "a layer's LoRA modules, at most");

static void add_mod(mt_lora_layout *lo, const char *name, int lin, size_t row0, size_t in,
                    size_t out)
{
    mt_lora_mod *m = &lo->mods[lo->n++];
    m->name = name;
    m->lin = lin;
    m->row0 = row0;
    m->in = in;
    m->out = out;
    m->a_off = lo->per_layer;
    m->b_off = m->a_off + lo->r * in;
    lo->per_layer = m->b_off + out * lo->r;
}

/* The base linear a module adapts, from the targets it answers to. */
static int base_linear(unsigned target)
{
    if (target & (MP_LORA_Q | MP_LORA_K | MP_LORA_V))
        return MT_LIN_QKV;
    if (target & MP_LORA_O)
        return MT_LIN_O;
    return target & (MP_LORA_GATE | MP_LORA_UP) ? MT_LIN_FC : MT_LIN_PROJ;
}

/* The modules are the planner's list of the layer's linears (memtrain_linears):
 * modules of one base linear are slices of its output in list order (q | k | v,
 * gate | up), so a module's first row is the sum of the outputs before it. */
void mt_lora_layout_make(mt_lora_layout *lo, mt_family fam, unsigned targets, size_t r,
                         float alpha, size_t C, size_t NH, size_t KV, size_t HD, size_t F)
{
    memset(lo, 0, sizeof *lo);
    lo->r = r;
    lo->scale = r ? alpha / (float)r : 0.0f;
    if (!r)
        return;
    mp_linear lin[MT_MAX_LORA];
    int n = memtrain_linears(fam == MT_GPT2, C, NH, KV, HD, F, lin, MT_MAX_LORA);
    size_t row0[4] = {0}; /* per base linear: the next module's first output row */
    for (int k = 0; k < n && k < MT_MAX_LORA; k++) {
        int base = base_linear(lin[k].target);
        if (lin[k].target & targets)
            add_mod(lo, lin[k].name, base, row0[base], (size_t)lin[k].in, (size_t)lin[k].out);
        row0[base] += (size_t)lin[k].out;
    }
}

void mt_lora_u(const mt_tiles *t, float *u, const float *x, size_t ldx, mt_wref A, size_t N,
               size_t r, size_t in)
{
    mt_mm_fwd(t, u, r, x, ldx, A, N, r, in, 1.0f, 0.0f);
}

void mt_lora_add(const mt_tiles *t, float *y, size_t ldy, const float *u, mt_wref B, size_t N,
                 size_t r, size_t out, float s)
{
    mt_mm_fwd(t, y, ldy, u, r, B, N, out, r, s, 1.0f);
}

void mt_lora_bwd(const mt_tiles *t, float *dx, size_t ldn, mt_gref dA, mt_gref dB,
                 const float *dy, size_t ldd, const float *x, size_t ldx, const float *u,
                 mt_wref A, mt_wref B, float *du, size_t N, size_t r, size_t in, size_t out,
                 float s)
{
    /* dB (out,r) += s * dy^T (out,N) @ u (N,r) */
    mt_mm_bwd_w(t, dB, dy, ldd, u, r, N, out, r, s);
    /* du (N,r) = s * dy (N,out) @ B (out,r) */
    mt_mm_bwd_in(t, du, r, dy, ldd, B, N, out, r, s, 0.0f);
    /* dA (r,in) += du^T (r,N) @ x (N,in) */
    mt_mm_bwd_w(t, dA, du, r, x, ldx, N, r, in, 1.0f);
    /* dx (N,in) += du (N,r) @ A (r,in) */
    mt_mm_bwd_in(t, dx, ldn, du, r, A, N, r, in, 1.0f, 1.0f);
}

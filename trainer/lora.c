/*
 * lora.c — LoRA module table and products (see lora.h).
 */
#include "lora.h"

#include <string.h>

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

void mt_lora_layout_make(mt_lora_layout *lo, mt_family fam, unsigned targets, size_t r,
                         float alpha, size_t C, size_t NH, size_t KV, size_t HD, size_t F)
{
    memset(lo, 0, sizeof *lo);
    lo->r = r;
    lo->scale = r ? alpha / (float)r : 0.0f;
    if (!r)
        return;
    size_t AW = NH * HD, QW = (NH + 2 * KV) * HD;
    if (fam == MT_GPT2) {
        if (targets & (MP_LORA_Q | MP_LORA_K | MP_LORA_V))
            add_mod(lo, "qkv", MT_LIN_QKV, 0, C, QW);
        if (targets & MP_LORA_O)
            add_mod(lo, "o", MT_LIN_O, 0, AW, C);
        if (targets & MP_LORA_UP)
            add_mod(lo, "up", MT_LIN_FC, 0, C, F);
        if (targets & MP_LORA_DOWN)
            add_mod(lo, "down", MT_LIN_PROJ, 0, F, C);
    } else {
        if (targets & MP_LORA_Q)
            add_mod(lo, "q", MT_LIN_QKV, 0, C, NH * HD);
        if (targets & MP_LORA_K)
            add_mod(lo, "k", MT_LIN_QKV, NH * HD, C, KV * HD);
        if (targets & MP_LORA_V)
            add_mod(lo, "v", MT_LIN_QKV, (NH + KV) * HD, C, KV * HD);
        if (targets & MP_LORA_O)
            add_mod(lo, "o", MT_LIN_O, 0, AW, C);
        if (targets & MP_LORA_GATE)
            add_mod(lo, "gate", MT_LIN_FC, 0, C, F);
        if (targets & MP_LORA_UP)
            add_mod(lo, "up", MT_LIN_FC, F, C, F);
        if (targets & MP_LORA_DOWN)
            add_mod(lo, "down", MT_LIN_PROJ, 0, F, C);
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

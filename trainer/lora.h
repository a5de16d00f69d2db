/*
 * lora.h — low-rank adapters on the layers' linear modules.
 *
 * A module with weight W (out, in) gets A (r, in) and B (out, r):
 *     y = x @ W^T + s * (x @ A^T) @ B^T,     s = alpha / r
 * u = x @ A^T (N, r) is saved for the backward (dB needs it).
 * A starts uniform in +-1/sqrt(in) (PyTorch's Kaiming-uniform bound with
 * a = sqrt(5)), B starts at zero, so the adapted model starts equal to the base.
 *
 * Which modules exist (the planner's mp_model_linears for the family, through
 * memtrain_linears: the same list the memory prediction counts):
 *   llama  q (C->NH*HD), k (C->KV*HD), v (C->KV*HD), o (AW->C),
 *          gate (C->F), up (C->F), down (F->C): one adapter per target.
 *   gpt2   GPT-2's attention has ONE fused module c_attn (C->3C). As in PEFT
 *          (and the planner, which counts one "qkv" module), any of q,k,v
 *          puts one adapter on the whole c_attn: A (r,C), B (3C,r).
 *          o = attn.c_proj, up = mlp.c_fc, down = mlp.c_proj; gate does not
 *          exist in GPT-2 and is ignored.
 * The adapter output is added into the base output's columns
 * [row0, row0+out) (q/k/v are slices of the fused qkv output, gate/up of the
 * fused gate|up output).
 *
 * Parameters: one contiguous block per layer, modules in table order, each
 * A then B: per layer sum over modules of r * (in + out) elements.
 */
#ifndef MT_LORA_H
#define MT_LORA_H

#include <stddef.h>

#include "config.h"
#include "matmul.h"

#define MT_MAX_LORA 7 /* = MEMTRAIN_MAX_LORA */

/* Which linear of the layer a module adapts, and where its input comes from. */
enum { MT_LIN_QKV, MT_LIN_O, MT_LIN_FC, MT_LIN_PROJ };

typedef struct mt_lora_mod {
    const char *name;
    int lin;            /* MT_LIN_* */
    size_t row0;        /* first output row within the base weight */
    size_t in, out;
    size_t a_off, b_off; /* element offsets within one layer's block */
} mt_lora_mod;

typedef struct mt_lora_layout {
    int n;
    mt_lora_mod mods[MT_MAX_LORA];
    size_t r;
    size_t per_layer; /* elements per layer */
    float scale;      /* alpha / r */
} mt_lora_layout;

/* Modules for the family and targets. dims: C, AW (NH*HD), QW, NH, KV, HD, F. */
void mt_lora_layout_make(mt_lora_layout *lo, mt_family fam, unsigned targets, size_t r,
                         float alpha, size_t C, size_t NH, size_t KV, size_t HD, size_t F);

/* u (N,r) = x (N,in; ld ldx) @ A^T */
void mt_lora_u(const mt_tiles *t, float *u, const float *x, size_t ldx, mt_wref A, size_t N,
               size_t r, size_t in);
/* y[:, 0:out] (ld ldy) += s * u (N,r) @ B^T */
void mt_lora_add(const mt_tiles *t, float *y, size_t ldy, const float *u, mt_wref B, size_t N,
                 size_t r, size_t out, float s);
/* Backward through one module: dy (N,out; ld ldd) is the gradient of its output
 * slice. dB += s dy^T u; du = s dy @ B; dA += du^T x; dx (ld ldn) += du @ A.
 * du: (N,r) scratch. */
void mt_lora_bwd(const mt_tiles *t, float *dx, size_t ldn, mt_gref dA, mt_gref dB,
                 const float *dy, size_t ldd, const float *x, size_t ldx, const float *u,
                 mt_wref A, mt_wref B, float *du, size_t N, size_t r, size_t in, size_t out,
                 float s);

#endif

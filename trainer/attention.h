/*
 * attention.h — causal multi-head attention with grouped-query heads, eager
 * and flash (tiled, online softmax), forward and backward, fp32.
 *
 * qkv (B,T,QW) with QW = (NH + 2*KV)*HD holds per token [q heads | k heads |
 * v heads]; query head h reads key/value head h / (NH/KV).
 * atty (B,T,NH*HD) is the attention output before the output projection.
 * Scores are scaled by 1/sqrt(HD).
 *
 * eager  saves probabilities att (B,NH,T,T) (zeros above the diagonal), or,
 *        when att is NULL (checkpointing dropped them), works one (b,h) at a
 *        time in a (T,T) scratch and recomputes the probabilities the same way
 *        in backward: bit-identical to keeping them.
 * flash  never materialises T x T: forward keeps the output and the per-row
 *        logsumexp lse (B,NH,T); backward recomputes scores tile by tile
 *        (tiles of `tile` queries x `tile` keys).
 */
#ifndef MT_ATTENTION_H
#define MT_ATTENTION_H

#include <stddef.h>

#include "precision.h"

typedef struct mt_attn_dims {
    size_t B, T, NH, KV, HD;
    size_t tile; /* flash tile edge (queries and keys) */
} mt_attn_dims;

/* Scratch floats needed (MT_WORKSPACE) for the chosen kind. */
size_t mt_attn_ws_floats(const mt_attn_dims *d, int flash, int probs_saved);

/* Eager. `rdt`: probabilities are rounded to this type before use (what
 * storing them in 16 bits gives). ws: mt_attn_ws_floats(d, 0, att != NULL). */
void mt_attn_eager_fwd(float *atty, float *att, const float *qkv, const mt_attn_dims *d,
                       mt_dtype rdt, float *ws);
/* dqkv (B,T,QW) is overwritten. att NULL: recompute from qkv. */
void mt_attn_eager_bwd(float *dqkv, const float *datty, const float *qkv, const float *att,
                       const mt_attn_dims *d, mt_dtype rdt, float *ws);

/* Flash. lse (B,NH,T). ws: mt_attn_ws_floats(d, 1, 0). */
void mt_attn_flash_fwd(float *atty, float *lse, const float *qkv, const mt_attn_dims *d,
                       float *ws);
void mt_attn_flash_bwd(float *dqkv, const float *datty, const float *qkv, const float *atty,
                       const float *lse, const mt_attn_dims *d, float *ws);

#endif

/*
 * ops.h — the transformer's non-matmul layers, forward and backward, fp32.
 *
 * Dimension legend: B batch, T sequence, C hidden, NH query heads, KV key/value
 * heads, HD head dim, F MLP width, V vocabulary, N = B*T rows.
 * Backward functions ACCUMULATE into parameter gradients (+=) and, where
 * stated, into the input gradient; NULL gradient pointers are skipped
 * (frozen parameters).
 */
#ifndef MT_OPS_H
#define MT_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "matmul.h"

#define MT_NORM_EPS 1e-5f

/* out (B,T,C) = wte[tok[b,t]] (+ wpe[t] if wpe.p). tok (B,T). */
void mt_encoder_fwd(float *out, const int32_t *tok, mt_wref wte, mt_wref wpe, size_t B, size_t T,
                    size_t C);
/* dwte[tok[b,t]] += dout[b,t]; dwpe[t] += dout[b,t] (each skipped if NULL). */
void mt_encoder_bwd(mt_gref dwte, mt_gref dwpe, const float *dout, const int32_t *tok, size_t B,
                    size_t T, size_t C);

/* LayerNorm over rows: out (N,C), mean (N), rstd (N) from inp (N,C), w (C), b (C). */
void mt_layernorm_fwd(float *out, float *mean, float *rstd, const float *inp, const float *w,
                      const float *b, size_t N, size_t C);
/* dinp (N,C) += d/dinp; dw (C) += ; db (C) += . dout (N,C). */
void mt_layernorm_bwd(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                      const float *w, const float *mean, const float *rstd, size_t N, size_t C);

/* RMSNorm: out = inp * rstd * w, rstd = 1/sqrt(mean(inp^2) + eps). */
void mt_rmsnorm_fwd(float *out, float *rstd, const float *inp, const float *w, size_t N, size_t C);
void mt_rmsnorm_bwd(float *dinp, float *dw, const float *dout, const float *inp, const float *w,
                    const float *rstd, size_t N, size_t C);

/* GELU, tanh approximation. out (n), inp (n). */
void mt_gelu_fwd(float *out, const float *inp, size_t n);
/* dinp = dout * gelu'(inp); dinp may alias dout. */
void mt_gelu_bwd(float *dinp, const float *inp, const float *dout, size_t n);

/* SwiGLU: gu (N, 2F) holds [gate | up] per row; out (N,F) = silu(gate) * up. */
void mt_swiglu_fwd(float *out, const float *gu, size_t N, size_t F);
/* dgu (N,2F) = d/dgu from dout (N,F). */
void mt_swiglu_bwd(float *dgu, const float *gu, const float *dout, size_t N, size_t F);

/* Rotary embeddings, "rotate half" pairing (i, i + HD/2), base 10000.
 * Tables cos/sin (T, HD/2). */
void mt_rope_tables(float *cosv, float *sinv, size_t T, size_t HD);
/* Rotate the NH query and KV key heads of qkv (B,T,(NH+2KV)*HD) in place.
 * inverse = 1 rotates back (the backward of the forward rotation). */
void mt_rope(float *qkv, const float *cosv, const float *sinv, size_t B, size_t T, size_t NH,
             size_t KV, size_t HD, int inverse);

/* Rows: out[n, 0:C] (row stride ld) = bias, or zero if bias is NULL. */
void mt_rows_fill(float *out, size_t ld, const float *bias, size_t N, size_t C);
/* out (N,C) = x (N,C) + bias (C) (bias may be NULL: a copy). */
void mt_rows_add(float *out, const float *x, const float *bias, size_t N, size_t C);
/* db (C) += sum over rows of d (N, C; row stride ld). */
void mt_colsum_acc(float *db, const float *d, size_t ld, size_t N, size_t C);

#endif

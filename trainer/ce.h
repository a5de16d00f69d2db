/*
 * ce.h — the output head (logits = x @ W^T, W (V,C)) and the cross-entropy
 * loss, full or chunked.
 *
 * full     logits (N,V) fp32 are kept from forward to backward; the backward
 *          overwrites them with dlogits.
 * chunked  `chunk` rows at a time: logits for the chunk (chunk,V) in a reused
 *          buffer, the loss, dlogits in place, and immediately dx for those
 *          rows and dW += dlogits^T x. Nothing of size (N,V) ever exists; the
 *          gradients are produced during the forward pass.
 *
 * N = B*T rows; every row has a target. `dscale` is d(total loss)/d(row
 * loss): the caller passes loss_scale / (N * accum).
 */
#ifndef MT_CE_H
#define MT_CE_H

#include <stddef.h>
#include <stdint.h>

#include "matmul.h"

/* logits (N,V) = x (N,C) @ W^T; lse (N). Returns the sum of row losses. */
double mt_ce_full_fwd(float *logits, float *lse, const float *x, const int32_t *targets,
                      mt_wref W, const mt_tiles *tiles, size_t N, size_t C, size_t V);
/* logits becomes dlogits; dx (N,C) = dlogits @ W (overwritten); dW += dlogits^T @ x. */
void mt_ce_full_bwd(float *dx, float *logits, const float *lse, const float *x,
                    const int32_t *targets, mt_wref W, mt_gref dW, const mt_tiles *tiles,
                    size_t N, size_t C, size_t V, float dscale);
/* buf: chunk*V floats. dx (N,C) overwritten; dx NULL: loss only (no gradients).
 * Returns the sum of row losses. */
double mt_ce_chunked(float *dx, float *buf, const float *x, const int32_t *targets, mt_wref W,
                     mt_gref dW, const mt_tiles *tiles, size_t N, size_t C, size_t V, size_t chunk,
                     float dscale);

/* The same with a scale per sequence of T rows (row_ds[n / T] for row n; NULL: dscale
 * for every row), for the preference losses: d loss / d logits of row n is
 * -c (onehot - softmax) for its sequence's c = d loss / d (its log-probability sum),
 * so row_ds = -c x the step's scale. row_lp (chunked; NULL: none) accumulates each
 * sequence's sum of target log-probabilities. */
void mt_ce_full_bwd_rows(float *dx, float *logits, const float *lse, const float *x,
                         const int32_t *targets, mt_wref W, mt_gref dW, const mt_tiles *tiles,
                         size_t N, size_t C, size_t V, float dscale, const float *row_ds, size_t T);
double mt_ce_chunked_rows(float *dx, float *buf, const float *x, const int32_t *targets, mt_wref W,
                          mt_gref dW, const mt_tiles *tiles, size_t N, size_t C, size_t V, size_t chunk,
                          float dscale, const float *row_ds, size_t T, float *row_lp);

/* One row: returns logsumexp(l[0..V)). */
float mt_ce_row_lse(const float *l, size_t V);
/* One row: d[j] = (exp(l[j] - lse) - [j == target]) * dscale, in place. */
void mt_ce_row_grad(float *l, size_t V, float lse, int32_t target, float dscale);

#endif

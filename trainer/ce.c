/*
 * ce.c — output head and cross-entropy (see ce.h).
 */
#include "ce.h"

#include <math.h>

#include "simd.h"

float mt_ce_row_lse(const float *l, size_t V)
{
    v4 vmx = v4_set(l[0]);
    size_t j = 0;
    for (; j + 4 <= V; j += 4)
        vmx = v4_max(vmx, v4_load(l + j));
    float mx = v4_hmax(vmx);
    for (; j < V; j++)
        mx = l[j] > mx ? l[j] : mx;
    v4 vm = v4_set(mx), acc = v4_set(0.0f);
    j = 0;
    for (; j + 4 <= V; j += 4)
        acc = v4_add(acc, v4_exp(v4_sub(v4_load(l + j), vm)));
    if (j < V) /* padding with mx - 200 adds exp(-200) ~ 0 */
        acc = v4_add(acc, v4_exp(v4_sub(v4_load_part(l + j, V - j, mx - 200.0f), vm)));
    return mx + logf(v4_hsum(acc));
}

void mt_ce_row_grad(float *l, size_t V, float lse, int32_t target, float dscale)
{
    v4 vl = v4_set(lse), vs = v4_set(dscale);
    size_t j = 0;
    for (; j + 4 <= V; j += 4)
        v4_store(l + j, v4_mul(v4_exp(v4_sub(v4_load(l + j), vl)), vs));
    if (j < V)
        v4_store_part(l + j, v4_mul(v4_exp(v4_sub(v4_load_part(l + j, V - j, 0.0f), vl)), vs),
                      V - j);
    l[target] -= dscale;
}

double mt_ce_full_fwd(float *logits, float *lse, const float *x, const int32_t *targets,
                      mt_wref W, const mt_tiles *tiles, size_t N, size_t C, size_t V)
{
    /* logits (N,V) = x (N,C) @ W^T (C,V) */
    mt_mm_fwd(tiles, logits, V, x, C, W, N, V, C, 1.0f, 0.0f);
    double loss = 0.0;
    for (size_t n = 0; n < N; n++) {
        const float *l = logits + n * V;
        lse[n] = mt_ce_row_lse(l, V);
        loss += (double)lse[n] - (double)l[targets[n]];
    }
    return loss;
}

void mt_ce_full_bwd(float *dx, float *logits, const float *lse, const float *x,
                    const int32_t *targets, mt_wref W, mt_gref dW, const mt_tiles *tiles,
                    size_t N, size_t C, size_t V, float dscale)
{
    mt_ce_full_bwd_rows(dx, logits, lse, x, targets, W, dW, tiles, N, C, V, dscale, NULL, 1);
}

void mt_ce_full_bwd_rows(float *dx, float *logits, const float *lse, const float *x,
                         const int32_t *targets, mt_wref W, mt_gref dW, const mt_tiles *tiles,
                         size_t N, size_t C, size_t V, float dscale, const float *row_ds, size_t T)
{
    for (size_t n = 0; n < N; n++)
        mt_ce_row_grad(logits + n * V, V, lse[n], targets[n], row_ds ? row_ds[n / T] : dscale);
    /* dx (N,C) = dlogits (N,V) @ W (V,C);  dW (V,C) += dlogits^T (V,N) @ x (N,C) */
    mt_mm_bwd_in(tiles, dx, C, logits, V, W, N, V, C, 1.0f, 0.0f);
    mt_mm_bwd_w(tiles, dW, logits, V, x, C, N, V, C, 1.0f);
}

double mt_ce_chunked(float *dx, float *buf, const float *x, const int32_t *targets, mt_wref W,
                     mt_gref dW, const mt_tiles *tiles, size_t N, size_t C, size_t V, size_t chunk,
                     float dscale)
{
    return mt_ce_chunked_rows(dx, buf, x, targets, W, dW, tiles, N, C, V, chunk, dscale, NULL, 1, NULL);
}

double mt_ce_chunked_rows(float *dx, float *buf, const float *x, const int32_t *targets, mt_wref W,
                          mt_gref dW, const mt_tiles *tiles, size_t N, size_t C, size_t V, size_t chunk,
                          float dscale, const float *row_ds, size_t T, float *row_lp)
{
    double loss = 0.0;
    for (size_t r0 = 0; r0 < N; r0 += chunk) {
        size_t nr = N - r0 < chunk ? N - r0 : chunk;
        const float *xr = x + r0 * C;
        /* logits (nr,V) = x_r (nr,C) @ W^T */
        mt_mm_fwd(tiles, buf, V, xr, C, W, nr, V, C, 1.0f, 0.0f);
        for (size_t n = 0; n < nr; n++) {
            float *l = buf + n * V;
            int32_t tg = targets[r0 + n];
            float lse = mt_ce_row_lse(l, V);
            loss += (double)lse - (double)l[tg];
            if (row_lp)
                row_lp[(r0 + n) / T] += l[tg] - lse;
            if (dx)
                mt_ce_row_grad(l, V, lse, tg, row_ds ? row_ds[(r0 + n) / T] : dscale);
        }
        if (dx) {
            mt_mm_bwd_in(tiles, dx + r0 * C, C, buf, V, W, nr, V, C, 1.0f, 0.0f);
            mt_mm_bwd_w(tiles, dW, buf, V, xr, C, nr, V, C, 1.0f);
        }
    }
    return loss;
}

/*
 * attention.c — eager and flash causal attention (see attention.h).
 */
#include "attention.h"

#include <math.h>
#include <string.h>

#include "matmul.h"
#include "simd.h"

size_t mt_attn_ws_floats(const mt_attn_dims *d, int flash, int probs_saved)
{
    if (flash) /* S/P tile, dP/dS tile, D (T), running max and sum (tile each) */
        return 2 * d->tile * d->tile + d->T + 2 * d->tile;
    /* dP (T,T) in backward, plus the recomputed probabilities when not saved */
    return d->T * d->T * (probs_saved ? 1 : 2);
}

static float row_max(const float *s, size_t n)
{
    float mx = s[0];
    for (size_t j = 1; j < n; j++)
        mx = s[j] > mx ? s[j] : mx;
    return mx;
}

/* s = exp(s - m) in place over s[0..n); returns the sum. */
static float exp_shifted(float *s, size_t n, float m)
{
    v4 vm = v4_set(m), acc = v4_set(0.0f);
    size_t j = 0;
    for (; j + 4 <= n; j += 4) {
        v4 e = v4_exp(v4_sub(v4_load(s + j), vm));
        v4_store(s + j, e);
        acc = v4_add(acc, e);
    }
    float sum = v4_hsum(acc);
    if (j < n) {
        v4 e = v4_exp(v4_sub(v4_load_part(s + j, n - j, m), vm));
        float t[4];
        v4_store(t, e);
        for (size_t k = 0; k < n - j; k++) {
            s[j + k] = t[k];
            sum += t[k];
        }
    }
    return sum;
}

/* Softmax of row s[0..n) in place: s = exp(s - max) / sum. */
static void softmax_row(float *s, size_t n)
{
    float inv = 1.0f / exp_shifted(s, n, row_max(s, n));
    for (size_t k = 0; k < n; k++)
        s[k] *= inv;
}

/* Causal probabilities P (T,T) for query head h of batch b. */
static void eager_probs(float *P, const float *qkv, const mt_attn_dims *d, size_t b, size_t h,
                        mt_dtype rdt)
{
    size_t T = d->T, HD = d->HD, QW = (d->NH + 2 * d->KV) * HD, g = h / (d->NH / d->KV);
    const float *Q = qkv + b * T * QW + h * HD;
    const float *K = qkv + b * T * QW + (d->NH + g) * HD;
    float scale = 1.0f / sqrtf((float)HD);
    /* S (T,T) = scale * Q (T,HD) @ K^T (HD,T) */
    mt_sgemm(0, 1, T, T, HD, scale, Q, QW, K, QW, 0.0f, P, T);
    for (size_t i = 0; i < T; i++) {
        float *row = P + i * T;
        softmax_row(row, i + 1);
        memset(row + i + 1, 0, (T - i - 1) * sizeof(float));
    }
    mt_round_f32(P, rdt, T * T);
}

void mt_attn_eager_fwd(float *atty, float *att, const float *qkv, const mt_attn_dims *d,
                       mt_dtype rdt, float *ws)
{
    size_t T = d->T, HD = d->HD, NH = d->NH, QW = (NH + 2 * d->KV) * HD, AW = NH * HD;
    for (size_t b = 0; b < d->B; b++) {
        for (size_t h = 0; h < NH; h++) {
            size_t g = h / (NH / d->KV);
            float *P = att ? att + (b * NH + h) * T * T : ws;
            eager_probs(P, qkv, d, b, h, rdt);
            const float *V = qkv + b * T * QW + (NH + d->KV + g) * HD;
            /* Y (T,HD) = P (T,T) @ V (T,HD) */
            mt_sgemm(0, 0, T, HD, T, 1.0f, P, T, V, QW, 0.0f, atty + b * T * AW + h * HD, AW);
        }
    }
}

void mt_attn_eager_bwd(float *dqkv, const float *datty, const float *qkv, const float *att,
                       const mt_attn_dims *d, mt_dtype rdt, float *ws)
{
    size_t T = d->T, HD = d->HD, NH = d->NH, QW = (NH + 2 * d->KV) * HD, AW = NH * HD;
    float scale = 1.0f / sqrtf((float)HD);
    float *dP = ws, *Pbuf = ws + T * T;
    memset(dqkv, 0, d->B * T * QW * sizeof(float));
    for (size_t b = 0; b < d->B; b++) {
        for (size_t h = 0; h < NH; h++) {
            size_t g = h / (NH / d->KV);
            const float *P;
            if (att) {
                P = att + (b * NH + h) * T * T;
            } else {
                eager_probs(Pbuf, qkv, d, b, h, rdt);
                P = Pbuf;
            }
            const float *base = qkv + b * T * QW;
            const float *Q = base + h * HD, *K = base + (NH + g) * HD,
                        *V = base + (NH + d->KV + g) * HD;
            float *dbase = dqkv + b * T * QW;
            float *dQ = dbase + h * HD, *dK = dbase + (NH + g) * HD,
                  *dV = dbase + (NH + d->KV + g) * HD;
            const float *dY = datty + b * T * AW + h * HD;
            /* dV (T,HD) += P^T (T,T) @ dY (T,HD) */
            mt_sgemm(1, 0, T, HD, T, 1.0f, P, T, dY, AW, 1.0f, dV, QW);
            /* dP (T,T) = dY (T,HD) @ V^T (HD,T) */
            mt_sgemm(0, 1, T, T, HD, 1.0f, dY, AW, V, QW, 0.0f, dP, T);
            /* softmax backward: dS_ij = P_ij (dP_ij - sum_k P_ik dP_ik), j <= i */
            for (size_t i = 0; i < T; i++) {
                const float *p = P + i * T;
                float *dp = dP + i * T;
                float dot = 0.0f;
                for (size_t j = 0; j <= i; j++)
                    dot += p[j] * dp[j];
                for (size_t j = 0; j <= i; j++)
                    dp[j] = p[j] * (dp[j] - dot);
                memset(dp + i + 1, 0, (T - i - 1) * sizeof(float));
            }
            /* dQ (T,HD) = scale * dS (T,T) @ K (T,HD) */
            mt_sgemm(0, 0, T, HD, T, scale, dP, T, K, QW, 0.0f, dQ, QW);
            /* dK (T,HD) += scale * dS^T (T,T) @ Q (T,HD) */
            mt_sgemm(1, 0, T, HD, T, scale, dP, T, Q, QW, 1.0f, dK, QW);
        }
    }
}

/* ---------- flash ---------- */

void mt_attn_flash_fwd(float *atty, float *lse, const float *qkv, const mt_attn_dims *d,
                       float *ws)
{
    size_t T = d->T, HD = d->HD, NH = d->NH, QW = (NH + 2 * d->KV) * HD, AW = NH * HD;
    size_t Bt = d->tile;
    float scale = 1.0f / sqrtf((float)HD);
    float *S = ws, *mrow = ws + 2 * Bt * Bt + T, *lrow = mrow + Bt;
    for (size_t b = 0; b < d->B; b++) {
        for (size_t h = 0; h < NH; h++) {
            size_t g = h / (NH / d->KV);
            const float *base = qkv + b * T * QW;
            const float *Q = base + h * HD, *K = base + (NH + g) * HD,
                        *V = base + (NH + d->KV + g) * HD;
            for (size_t q0 = 0; q0 < T; q0 += Bt) {
                size_t nq = T - q0 < Bt ? T - q0 : Bt;
                float *Y = atty + (b * T + q0) * AW + h * HD;
                for (size_t r = 0; r < nq; r++) {
                    memset(Y + r * AW, 0, HD * sizeof(float));
                    mrow[r] = -INFINITY;
                    lrow[r] = 0.0f;
                }
                for (size_t k0 = 0; k0 < q0 + nq; k0 += Bt) {
                    size_t nk = T - k0 < Bt ? T - k0 : Bt;
                    /* S (nq,nk) = scale * Q_i (nq,HD) @ K_j^T (HD,nk) */
                    mt_sgemm(0, 1, nq, nk, HD, scale, Q + q0 * QW, QW, K + k0 * QW, QW, 0.0f, S,
                             Bt);
                    for (size_t r = 0; r < nq; r++) {
                        size_t i = q0 + r;
                        float *s = S + r * Bt;
                        size_t jn = i + 1 > k0 ? i + 1 - k0 : 0; /* visible keys in tile */
                        if (jn > nk)
                            jn = nk;
                        if (jn == 0) {
                            memset(s, 0, nk * sizeof(float));
                            continue;
                        }
                        float mx = row_max(s, jn);
                        float mnew = mx > mrow[r] ? mx : mrow[r];
                        float corr = mrow[r] == -INFINITY ? 0.0f : mt_expf(mrow[r] - mnew);
                        float sum = exp_shifted(s, jn, mnew);
                        memset(s + jn, 0, (nk - jn) * sizeof(float));
                        lrow[r] = lrow[r] * corr + sum;
                        mrow[r] = mnew;
                        if (corr != 1.0f) {
                            float *y = Y + r * AW;
                            for (size_t c = 0; c < HD; c++)
                                y[c] *= corr;
                        }
                    }
                    /* Y (nq,HD) += P (nq,nk) @ V_j (nk,HD) */
                    mt_sgemm(0, 0, nq, HD, nk, 1.0f, S, Bt, V + k0 * QW, QW, 1.0f, Y, AW);
                }
                for (size_t r = 0; r < nq; r++) {
                    float inv = 1.0f / lrow[r], *y = Y + r * AW;
                    for (size_t c = 0; c < HD; c++)
                        y[c] *= inv;
                    lse[(b * NH + h) * T + q0 + r] = mrow[r] + logf(lrow[r]);
                }
            }
        }
    }
}

void mt_attn_flash_bwd(float *dqkv, const float *datty, const float *qkv, const float *atty,
                       const float *lse, const mt_attn_dims *d, float *ws)
{
    size_t T = d->T, HD = d->HD, NH = d->NH, QW = (NH + 2 * d->KV) * HD, AW = NH * HD;
    size_t Bt = d->tile;
    float scale = 1.0f / sqrtf((float)HD);
    float *P = ws, *dP = ws + Bt * Bt, *D = ws + 2 * Bt * Bt;
    memset(dqkv, 0, d->B * T * QW * sizeof(float));
    for (size_t b = 0; b < d->B; b++) {
        for (size_t h = 0; h < NH; h++) {
            size_t g = h / (NH / d->KV);
            const float *base = qkv + b * T * QW;
            const float *Q = base + h * HD, *K = base + (NH + g) * HD,
                        *V = base + (NH + d->KV + g) * HD;
            float *dbase = dqkv + b * T * QW;
            float *dQ = dbase + h * HD, *dK = dbase + (NH + g) * HD,
                  *dV = dbase + (NH + d->KV + g) * HD;
            const float *dY = datty + b * T * AW + h * HD, *Y = atty + b * T * AW + h * HD;
            const float *L = lse + (b * NH + h) * T;
            /* D_i = sum_c dY_ic * Y_ic */
            for (size_t i = 0; i < T; i++) {
                float s = 0.0f;
                for (size_t c = 0; c < HD; c++)
                    s += dY[i * AW + c] * Y[i * AW + c];
                D[i] = s;
            }
            for (size_t k0 = 0; k0 < T; k0 += Bt) {
                size_t nk = T - k0 < Bt ? T - k0 : Bt;
                for (size_t q0 = (k0 / Bt) * Bt; q0 < T; q0 += Bt) {
                    size_t nq = T - q0 < Bt ? T - q0 : Bt;
                    /* P (nq,nk) = exp(scale Q_i K_j^T - lse_i), masked */
                    mt_sgemm(0, 1, nq, nk, HD, scale, Q + q0 * QW, QW, K + k0 * QW, QW, 0.0f, P,
                             Bt);
                    for (size_t r = 0; r < nq; r++) {
                        size_t i = q0 + r;
                        float *p = P + r * Bt;
                        size_t jn = i + 1 > k0 ? i + 1 - k0 : 0;
                        if (jn > nk)
                            jn = nk;
                        v4 vl = v4_set(L[i]);
                        size_t j = 0;
                        for (; j + 4 <= jn; j += 4)
                            v4_store(p + j, v4_exp(v4_sub(v4_load(p + j), vl)));
                        for (; j < jn; j++)
                            p[j] = mt_expf(p[j] - L[i]);
                        memset(p + jn, 0, (nk - jn) * sizeof(float));
                    }
                    /* dV_j (nk,HD) += P^T (nk,nq) @ dY_i (nq,HD) */
                    mt_sgemm(1, 0, nk, HD, nq, 1.0f, P, Bt, dY + q0 * AW, AW, 1.0f, dV + k0 * QW,
                             QW);
                    /* dP (nq,nk) = dY_i (nq,HD) @ V_j^T (HD,nk) */
                    mt_sgemm(0, 1, nq, nk, HD, 1.0f, dY + q0 * AW, AW, V + k0 * QW, QW, 0.0f, dP,
                             Bt);
                    /* dS = P * (dP - D_i) */
                    for (size_t r = 0; r < nq; r++) {
                        float Di = D[q0 + r], *p = P + r * Bt, *dp = dP + r * Bt;
                        for (size_t j = 0; j < nk; j++)
                            dp[j] = p[j] * (dp[j] - Di);
                    }
                    /* dQ_i (nq,HD) += scale * dS (nq,nk) @ K_j (nk,HD) */
                    mt_sgemm(0, 0, nq, HD, nk, scale, dP, Bt, K + k0 * QW, QW, 1.0f, dQ + q0 * QW,
                             QW);
                    /* dK_j (nk,HD) += scale * dS^T (nk,nq) @ Q_i (nq,HD) */
                    mt_sgemm(1, 0, nk, HD, nq, scale, dP, Bt, Q + q0 * QW, QW, 1.0f, dK + k0 * QW,
                             QW);
                }
            }
        }
    }
}

/*
 * ops.c — embeddings, norms, activations, rotary embeddings, bias helpers.
 */
#include "ops.h"

#include <math.h>
#include <string.h>

#include "simd.h"

/* ---------- embeddings ---------- */

void mt_encoder_fwd(float *out, const int32_t *tok, mt_wref wte, mt_wref wpe, size_t B, size_t T,
                    size_t C)
{
    for (size_t b = 0; b < B; b++) {
        for (size_t t = 0; t < T; t++) {
            float *o = out + (b * T + t) * C;
            mt_to_f32(o, mt_w_off(wte, (size_t)tok[b * T + t] * C).p, wte.dt, C);
            if (wpe.p) {
                const void *p = mt_w_off(wpe, t * C).p;
                for (size_t c = 0; c < C; c++)
                    o[c] += mt_load1(p, wpe.dt, c);
            }
        }
    }
}

void mt_encoder_bwd(mt_gref dwte, mt_gref dwpe, const float *dout, const int32_t *tok, size_t B,
                    size_t T, size_t C)
{
    for (size_t b = 0; b < B; b++) {
        for (size_t t = 0; t < T; t++) {
            const float *d = dout + (b * T + t) * C;
            if (dwte.p)
                mt_add_f32(mt_g_off(dwte, (size_t)tok[b * T + t] * C).p, dwte.dt, d, C);
            if (dwpe.p)
                mt_add_f32(mt_g_off(dwpe, t * C).p, dwpe.dt, d, C);
        }
    }
}

/* ---------- norms ---------- */

/* sum of x[0..n) and sum of (x - m)^2, four lanes then the tail */
static inline float vsum(const float *x, size_t n)
{
    v4 acc = v4_set(0.0f);
    size_t c = 0;
    for (; c + 4 <= n; c += 4)
        acc = v4_add(acc, v4_load(x + c));
    float s = v4_hsum(acc);
    for (; c < n; c++)
        s += x[c];
    return s;
}

void mt_layernorm_fwd(float *out, float *mean, float *rstd, const float *inp, const float *w,
                      const float *b, size_t N, size_t C)
{
    for (size_t n = 0; n < N; n++) {
        const float *x = inp + n * C;
        float *o = out + n * C;
        float m = vsum(x, C) / (float)C;
        v4 vm = v4_set(m), acc = v4_set(0.0f);
        size_t c = 0;
        for (; c + 4 <= C; c += 4) {
            v4 dv = v4_sub(v4_load(x + c), vm);
            acc = v4_add(acc, v4_mul(dv, dv));
        }
        float v = v4_hsum(acc);
        for (; c < C; c++)
            v += (x[c] - m) * (x[c] - m);
        float r = 1.0f / sqrtf(v / (float)C + MT_NORM_EPS);
        v4 vr = v4_set(r);
        for (c = 0; c + 4 <= C; c += 4) {
            v4 xh = v4_mul(v4_sub(v4_load(x + c), vm), vr);
            v4_store(o + c, v4_add(v4_mul(xh, v4_load(w + c)), v4_load(b + c)));
        }
        for (; c < C; c++)
            o[c] = (x[c] - m) * r * w[c] + b[c];
        mean[n] = m;
        rstd[n] = r;
    }
}

void mt_layernorm_bwd(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                      const float *w, const float *mean, const float *rstd, size_t N, size_t C)
{
    for (size_t n = 0; n < N; n++) {
        const float *x = inp + n * C, *d = dout + n * C;
        float *dx = dinp + n * C;
        float m = mean[n], r = rstd[n];
        v4 vm = v4_set(m), vr = v4_set(r);
        /* dnorm = d * w; dx = r * (dnorm - mean(dnorm) - xhat * mean(dnorm * xhat)) */
        v4 a1 = v4_set(0.0f), a2 = v4_set(0.0f);
        size_t c = 0;
        for (; c + 4 <= C; c += 4) {
            v4 xh = v4_mul(v4_sub(v4_load(x + c), vm), vr);
            v4 dn = v4_mul(v4_load(d + c), v4_load(w + c));
            a1 = v4_add(a1, dn);
            a2 = v4_add(a2, v4_mul(dn, xh));
        }
        float sd = v4_hsum(a1), sdx = v4_hsum(a2);
        for (; c < C; c++) {
            float xhat = (x[c] - m) * r, dn = d[c] * w[c];
            sd += dn;
            sdx += dn * xhat;
        }
        sd /= (float)C;
        sdx /= (float)C;
        v4 vsd = v4_set(sd), vsdx = v4_set(sdx);
        for (c = 0; c + 4 <= C; c += 4) {
            v4 xh = v4_mul(v4_sub(v4_load(x + c), vm), vr);
            v4 dv = v4_load(d + c);
            v4 t = v4_sub(v4_sub(v4_mul(dv, v4_load(w + c)), vsd), v4_mul(xh, vsdx));
            v4_store(dx + c, v4_add(v4_load(dx + c), v4_mul(vr, t)));
            if (dw)
                v4_store(dw + c, v4_add(v4_load(dw + c), v4_mul(dv, xh)));
            if (db)
                v4_store(db + c, v4_add(v4_load(db + c), dv));
        }
        for (; c < C; c++) {
            float xhat = (x[c] - m) * r, dn = d[c] * w[c];
            dx[c] += r * (dn - sd - xhat * sdx);
            if (dw)
                dw[c] += d[c] * xhat;
            if (db)
                db[c] += d[c];
        }
    }
}

void mt_rmsnorm_fwd(float *out, float *rstd, const float *inp, const float *w, size_t N, size_t C)
{
    for (size_t n = 0; n < N; n++) {
        const float *x = inp + n * C;
        float *o = out + n * C;
        v4 acc = v4_set(0.0f);
        size_t c = 0;
        for (; c + 4 <= C; c += 4) {
            v4 xv = v4_load(x + c);
            acc = v4_add(acc, v4_mul(xv, xv));
        }
        float s = v4_hsum(acc);
        for (; c < C; c++)
            s += x[c] * x[c];
        float r = 1.0f / sqrtf(s / (float)C + MT_NORM_EPS);
        v4 vr = v4_set(r);
        for (c = 0; c + 4 <= C; c += 4)
            v4_store(o + c, v4_mul(v4_mul(v4_load(x + c), vr), v4_load(w + c)));
        for (; c < C; c++)
            o[c] = x[c] * r * w[c];
        rstd[n] = r;
    }
}

void mt_rmsnorm_bwd(float *dinp, float *dw, const float *dout, const float *inp, const float *w,
                    const float *rstd, size_t N, size_t C)
{
    for (size_t n = 0; n < N; n++) {
        const float *x = inp + n * C, *d = dout + n * C;
        float *dx = dinp + n * C;
        float r = rstd[n];
        v4 vr = v4_set(r);
        /* dx = r * (dnorm - xhat * mean(dnorm * xhat)) */
        v4 acc = v4_set(0.0f);
        size_t c = 0;
        for (; c + 4 <= C; c += 4) {
            v4 xh = v4_mul(v4_load(x + c), vr);
            acc = v4_add(acc, v4_mul(v4_mul(v4_load(d + c), v4_load(w + c)), xh));
        }
        float sdx = v4_hsum(acc);
        for (; c < C; c++)
            sdx += d[c] * w[c] * x[c] * r;
        sdx /= (float)C;
        v4 vsdx = v4_set(sdx);
        for (c = 0; c + 4 <= C; c += 4) {
            v4 xh = v4_mul(v4_load(x + c), vr);
            v4 dv = v4_load(d + c);
            v4 t = v4_sub(v4_mul(dv, v4_load(w + c)), v4_mul(xh, vsdx));
            v4_store(dx + c, v4_add(v4_load(dx + c), v4_mul(vr, t)));
            if (dw)
                v4_store(dw + c, v4_add(v4_load(dw + c), v4_mul(dv, xh)));
        }
        for (; c < C; c++) {
            float xhat = x[c] * r;
            dx[c] += r * (d[c] * w[c] - xhat * sdx);
            if (dw)
                dw[c] += d[c] * xhat;
        }
    }
}

/* ---------- activations ---------- */

#define GELU_K 0.7978845608028654f /* sqrt(2/pi) */
#define GELU_A 0.044715f

static inline v4 gelu4(v4 x)
{
    v4 x3 = v4_mul(v4_mul(x, x), x);
    v4 u = v4_mul(v4_set(GELU_K), v4_add(x, v4_mul(v4_set(GELU_A), x3)));
    v4 t = v4_tanh(u);
    return v4_mul(v4_mul(v4_set(0.5f), x), v4_add(v4_set(1.0f), t));
}

static inline v4 gelu_grad4(v4 x)
{
    v4 x2 = v4_mul(x, x);
    v4 u = v4_mul(v4_set(GELU_K), v4_mul(x, v4_add(v4_set(1.0f), v4_mul(v4_set(GELU_A), x2))));
    v4 t = v4_tanh(u);
    v4 du = v4_mul(v4_set(GELU_K), v4_add(v4_set(1.0f), v4_mul(v4_set(3.0f * GELU_A), x2)));
    v4 sech2 = v4_sub(v4_set(1.0f), v4_mul(t, t));
    /* 0.5 (1 + t) + 0.5 x sech^2(u) du/dx */
    return v4_add(v4_mul(v4_set(0.5f), v4_add(v4_set(1.0f), t)),
                  v4_mul(v4_mul(v4_set(0.5f), x), v4_mul(sech2, du)));
}

void mt_gelu_fwd(float *out, const float *inp, size_t n)
{
    size_t i = 0;
    for (; i + 4 <= n; i += 4)
        v4_store(out + i, gelu4(v4_load(inp + i)));
    if (i < n)
        v4_store_part(out + i, gelu4(v4_load_part(inp + i, n - i, 0.0f)), n - i);
}

void mt_gelu_bwd(float *dinp, const float *inp, const float *dout, size_t n)
{
    size_t i = 0;
    for (; i + 4 <= n; i += 4)
        v4_store(dinp + i, v4_mul(v4_load(dout + i), gelu_grad4(v4_load(inp + i))));
    if (i < n) {
        v4 g = gelu_grad4(v4_load_part(inp + i, n - i, 0.0f));
        v4_store_part(dinp + i, v4_mul(v4_load_part(dout + i, n - i, 0.0f), g), n - i);
    }
}

void mt_swiglu_fwd(float *out, const float *gu, size_t N, size_t F)
{
    for (size_t r = 0; r < N; r++) {
        const float *g = gu + r * 2 * F, *u = g + F;
        float *o = out + r * F;
        size_t i = 0;
        for (; i + 4 <= F; i += 4) {
            v4 gv = v4_load(g + i);
            v4_store(o + i, v4_mul(v4_mul(gv, v4_sigmoid(gv)), v4_load(u + i)));
        }
        if (i < F) {
            v4 gv = v4_load_part(g + i, F - i, 0.0f);
            v4 uv = v4_load_part(u + i, F - i, 0.0f);
            v4_store_part(o + i, v4_mul(v4_mul(gv, v4_sigmoid(gv)), uv), F - i);
        }
    }
}

/* d silu(g)/dg = s (1 + g (1 - s)), s = sigmoid(g) */
static inline void swiglu_bwd4(v4 g, v4 u, v4 d, v4 *dg, v4 *du)
{
    v4 s = v4_sigmoid(g);
    v4 silu = v4_mul(g, s);
    *du = v4_mul(d, silu);
    v4 ds = v4_mul(s, v4_add(v4_set(1.0f), v4_mul(g, v4_sub(v4_set(1.0f), s))));
    *dg = v4_mul(v4_mul(d, u), ds);
}

void mt_swiglu_bwd(float *dgu, const float *gu, const float *dout, size_t N, size_t F)
{
    for (size_t r = 0; r < N; r++) {
        const float *g = gu + r * 2 * F, *u = g + F, *d = dout + r * F;
        float *dg = dgu + r * 2 * F, *du = dg + F;
        size_t i = 0;
        v4 a, b;
        for (; i + 4 <= F; i += 4) {
            swiglu_bwd4(v4_load(g + i), v4_load(u + i), v4_load(d + i), &a, &b);
            v4_store(dg + i, a);
            v4_store(du + i, b);
        }
        if (i < F) {
            size_t k = F - i;
            swiglu_bwd4(v4_load_part(g + i, k, 0.0f), v4_load_part(u + i, k, 0.0f),
                        v4_load_part(d + i, k, 0.0f), &a, &b);
            v4_store_part(dg + i, a, k);
            v4_store_part(du + i, b, k);
        }
    }
}

/* ---------- rotary embeddings ---------- */

void mt_rope_tables(float *cosv, float *sinv, size_t T, size_t HD)
{
    size_t half = HD / 2;
    for (size_t t = 0; t < T; t++) {
        for (size_t i = 0; i < half; i++) {
            double inv_freq = pow(10000.0, -2.0 * (double)i / (double)HD);
            double a = (double)t * inv_freq;
            cosv[t * half + i] = (float)cos(a);
            sinv[t * half + i] = (float)sin(a);
        }
    }
}

static void rope_head(float *x, const float *c, const float *s, size_t half, float sign)
{
    for (size_t i = 0; i < half; i++) {
        float a = x[i], b = x[i + half], sn = sign * s[i];
        x[i] = a * c[i] - b * sn;
        x[i + half] = b * c[i] + a * sn;
    }
}

void mt_rope(float *qkv, const float *cosv, const float *sinv, size_t B, size_t T, size_t NH,
             size_t KV, size_t HD, int inverse)
{
    size_t half = HD / 2, W = (NH + 2 * KV) * HD;
    float sign = inverse ? -1.0f : 1.0f;
    for (size_t b = 0; b < B; b++) {
        for (size_t t = 0; t < T; t++) {
            float *row = qkv + (b * T + t) * W;
            const float *c = cosv + t * half, *s = sinv + t * half;
            for (size_t h = 0; h < NH + KV; h++) /* NH query heads then KV key heads */
                rope_head(row + h * HD, c, s, half, sign);
        }
    }
}

/* ---------- bias helpers ---------- */

void mt_rows_fill(float *out, size_t ld, const float *bias, size_t N, size_t C)
{
    for (size_t n = 0; n < N; n++) {
        if (bias)
            memcpy(out + n * ld, bias, C * sizeof(float));
        else
            memset(out + n * ld, 0, C * sizeof(float));
    }
}

void mt_rows_add(float *out, const float *x, const float *bias, size_t N, size_t C)
{
    if (!bias) {
        if (out != x)
            memcpy(out, x, N * C * sizeof(float));
        return;
    }
    for (size_t n = 0; n < N; n++) {
        float *o = out + n * C;
        const float *xi = x + n * C;
        size_t c = 0;
        for (; c + 4 <= C; c += 4)
            v4_store(o + c, v4_add(v4_load(xi + c), v4_load(bias + c)));
        for (; c < C; c++)
            o[c] = xi[c] + bias[c];
    }
}

void mt_colsum_acc(float *db, const float *d, size_t ld, size_t N, size_t C)
{
    for (size_t n = 0; n < N; n++) {
        const float *row = d + n * ld;
        size_t c = 0;
        for (; c + 4 <= C; c += 4)
            v4_store(db + c, v4_add(v4_load(db + c), v4_load(row + c)));
        for (; c < C; c++)
            db[c] += row[c];
    }
}

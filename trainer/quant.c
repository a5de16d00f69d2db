/*
 * quant.c — NF4 with double quantisation (see quant.h).
 */
#include "quant.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"

/* The 16 NF4 levels from the QLoRA paper (Appendix E): quantiles of N(0,1)
 * normalised to [-1, 1], with an exact zero and 8 positive / 7 negative. */
const float mt_nf4_levels[16] = {
    -1.0f,
    -0.6961928009986877f,
    -0.5250730514526367f,
    -0.39491748809814453f,
    -0.28444138169288635f,
    -0.18477343022823334f,
    -0.09105003625154495f,
    0.0f,
    0.07958029955625534f,
    0.16093020141124725f,
    0.24611230194568634f,
    0.33791524171829224f,
    0.44070982933044434f,
    0.5626170039176941f,
    0.7229568362236023f,
    1.0f,
};

static size_t ngroups(size_t nblocks) { return (nblocks + MT_NF4_DQ_BLOCK - 1) / MT_NF4_DQ_BLOCK; }

size_t mt_nf4_bytes(size_t n, bool dq)
{
    size_t nb = (n + MT_NF4_BLOCK - 1) / MT_NF4_BLOCK;
    size_t b = (n + 1) / 2;
    if (dq)
        b += nb + (ngroups(nb) + 1) * sizeof(float);
    else
        b += nb * sizeof(float);
    return b;
}

int mt_nf4_init(mt_nf4 *q, size_t n, bool dq)
{
    memset(q, 0, sizeof *q);
    q->n = n;
    q->nblocks = (n + MT_NF4_BLOCK - 1) / MT_NF4_BLOCK;
    q->dq = dq;
    q->codes = mt_calloc(MT_WEIGHTS, (n + 1) / 2);
    if (!q->codes)
        return -1;
    if (dq) {
        q->absmax_q = mt_calloc(MT_WEIGHTS, q->nblocks);
        q->scales = mt_calloc_n(MT_WEIGHTS, ngroups(q->nblocks) + 1, sizeof(float));
        if (!q->absmax_q || !q->scales) {
            mt_nf4_free(q);
            return -1;
        }
    } else {
        q->absmax = mt_calloc_n(MT_WEIGHTS, q->nblocks, sizeof(float));
        if (!q->absmax) {
            mt_nf4_free(q);
            return -1;
        }
    }
    return 0;
}

void mt_nf4_free(mt_nf4 *q)
{
    mt_free(q->codes);
    mt_free(q->absmax);
    mt_free(q->absmax_q);
    mt_free(q->scales);
    memset(q, 0, sizeof *q);
}

/* Index of the level nearest to x in [-1, 1]: compare with the midpoints. */
static unsigned nf4_code(float x)
{
    unsigned lo = 0, hi = 15; /* answer in [lo, hi] */
    while (lo < hi) {
        unsigned mid = (lo + hi) / 2;
        float boundary = 0.5f * (mt_nf4_levels[mid] + mt_nf4_levels[mid + 1]);
        if (x > boundary)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Quantise one block of cnt values starting at element i0; returns absmax. */
static float quant_block(mt_nf4 *q, const float *w, size_t i0, size_t cnt)
{
    float amax = 0.0f;
    for (size_t i = 0; i < cnt; i++)
        amax = fabsf(w[i]) > amax ? fabsf(w[i]) : amax;
    float inv = amax > 0.0f ? 1.0f / amax : 0.0f;
    for (size_t i = 0; i < cnt; i++) {
        size_t e = i0 + i;
        unsigned c = nf4_code(w[i] * inv);
        uint8_t *byte = q->codes + e / 2;
        *byte = (e & 1) ? (uint8_t)((*byte & 0x0f) | (c << 4)) : (uint8_t)((*byte & 0xf0) | c);
    }
    return amax;
}

/* Double-quantise absmax[0..nb): int8 codes per group of 256 after removing the mean. */
static void dq_absmax(mt_nf4 *q, const float *amax)
{
    size_t nb = q->nblocks, ng = ngroups(nb);
    double mean = 0.0;
    for (size_t j = 0; j < nb; j++)
        mean += amax[j];
    mean /= (double)(nb ? nb : 1);
    q->scales[ng] = (float)mean;
    for (size_t g = 0; g < ng; g++) {
        size_t j0 = g * MT_NF4_DQ_BLOCK, j1 = j0 + MT_NF4_DQ_BLOCK < nb ? j0 + MT_NF4_DQ_BLOCK : nb;
        float s = 0.0f;
        for (size_t j = j0; j < j1; j++) {
            float c = fabsf(amax[j] - (float)mean);
            s = c > s ? c : s;
        }
        q->scales[g] = s;
        float inv = s > 0.0f ? 127.0f / s : 0.0f;
        for (size_t j = j0; j < j1; j++)
            q->absmax_q[j] = (int8_t)lrintf((amax[j] - (float)mean) * inv);
    }
}

int mt_nf4_quantize_gen(mt_nf4 *q, mt_nf4_gen gen, void *ctx, float *scratch)
{
    float *amax = q->absmax;
    if (q->dq && scratch) {
        amax = scratch;
    } else if (q->dq) {
        amax = mt_alloc_n(MT_OTHER, q->nblocks ? q->nblocks : 1, sizeof(float));
        if (!amax)
            return -1;
    }
    float block[MT_NF4_BLOCK];
    for (size_t j = 0; j < q->nblocks; j++) {
        size_t i0 = j * MT_NF4_BLOCK, cnt = q->n - i0 < MT_NF4_BLOCK ? q->n - i0 : MT_NF4_BLOCK;
        gen(ctx, block, i0, cnt);
        amax[j] = quant_block(q, block, i0, cnt);
    }
    if (q->dq) {
        dq_absmax(q, amax);
        if (amax != scratch)
            mt_free(amax);
    }
    return 0;
}

static void gen_array(void *ctx, float *dst, size_t i0, size_t cnt)
{
    memcpy(dst, (const float *)ctx + i0, cnt * sizeof(float));
}

int mt_nf4_quantize(mt_nf4 *q, const float *w)
{
    return mt_nf4_quantize_gen(q, gen_array, (void *)w, NULL);
}

float mt_nf4_block_absmax(const mt_nf4 *q, size_t j)
{
    if (!q->dq)
        return q->absmax[j];
    size_t g = j / MT_NF4_DQ_BLOCK;
    return (float)q->absmax_q[j] * (q->scales[g] / 127.0f) + q->scales[ngroups(q->nblocks)];
}

float mt_nf4_get(const mt_nf4 *q, size_t e)
{
    uint8_t byte = q->codes[e / 2];
    return mt_nf4_levels[(e & 1) ? byte >> 4 : byte & 0x0f] * mt_nf4_block_absmax(q, e / MT_NF4_BLOCK);
}

void mt_nf4_dequantize(const mt_nf4 *q, void *out, mt_dtype dt)
{
    float vals[MT_NF4_BLOCK];
    for (size_t j = 0; j < q->nblocks; j++) {
        size_t i0 = j * MT_NF4_BLOCK, cnt = q->n - i0 < MT_NF4_BLOCK ? q->n - i0 : MT_NF4_BLOCK;
        float a = mt_nf4_block_absmax(q, j);
        float lv[16];
        for (int k = 0; k < 16; k++)
            lv[k] = mt_nf4_levels[k] * a;
        for (size_t i = 0; i < cnt; i++) {
            size_t e = i0 + i;
            uint8_t byte = q->codes[e / 2];
            vals[i] = lv[(e & 1) ? byte >> 4 : byte & 0x0f];
        }
        if (dt == MT_F32)
            memcpy((float *)out + i0, vals, cnt * sizeof(float));
        else
            mt_from_f32((uint16_t *)out + i0, dt, vals, cnt);
    }
}

size_t mt_nf4_state_size(const mt_nf4 *q) { return mt_nf4_bytes(q->n, q->dq); }

void mt_nf4_state_save(const mt_nf4 *q, uint8_t *buf)
{
    size_t nc = (q->n + 1) / 2;
    memcpy(buf, q->codes, nc);
    buf += nc;
    if (q->dq) {
        memcpy(buf, q->absmax_q, q->nblocks);
        memcpy(buf + q->nblocks, q->scales, (ngroups(q->nblocks) + 1) * sizeof(float));
    } else {
        memcpy(buf, q->absmax, q->nblocks * sizeof(float));
    }
}

void mt_nf4_state_load(mt_nf4 *q, const uint8_t *buf)
{
    size_t nc = (q->n + 1) / 2;
    memcpy(q->codes, buf, nc);
    buf += nc;
    if (q->dq) {
        memcpy(q->absmax_q, buf, q->nblocks);
        memcpy(q->scales, buf + q->nblocks, (ngroups(q->nblocks) + 1) * sizeof(float));
    } else {
        memcpy(q->absmax, buf, q->nblocks * sizeof(float));
    }
}

/* One stored fp32 block constant: finite and not negative (an absmax). */
static int check_scale(const uint8_t *p, size_t j, const char *what, bool numbered)
{
    float v;
    memcpy(&v, p + j * sizeof v, sizeof v);
    if (!isfinite(v) || v < 0.0f) {
        char at[32] = "";
        if (numbered) snprintf(at, sizeof at, " %zu", j);
        return mt_error("NF4 %s%s is %g: not a finite absmax", what, at, (double)v);
    }
    return 0;
}

int mt_nf4_state_check(const mt_nf4 *q, const uint8_t *buf)
{
    buf += (q->n + 1) / 2;
    if (!q->dq) {
        for (size_t j = 0; j < q->nblocks; j++)
            if (check_scale(buf, j, "block absmax", true)) return -1;
        return 0;
    }
    for (size_t j = 0; j < q->nblocks; j++)
        if ((int8_t)buf[j] == -128)
            return mt_error("NF4 double-quantised absmax %zu has code -128 (codes are -127 to 127)", j);
    buf += q->nblocks;
    size_t ng = ngroups(q->nblocks);
    for (size_t g = 0; g <= ng; g++)
        if (check_scale(buf, g, g < ng ? "group scale" : "absmax mean", g < ng)) return -1;
    return 0;
}

/*
 * precision.c — bulk 16-bit conversions and the fp16 loss scaler.
 */
#include "precision.h"

#include <math.h>

const char *mt_dtype_name(mt_dtype dt)
{
    switch (dt) {
    case MT_BF16: return "bf16";
    case MT_F16: return "fp16";
    default: return "fp32";
    }
}

uint16_t mt_f32_to_f16_slow(float f)
{
    uint16_t sign = (uint16_t)((mt_f32_bits(f) >> 16) & 0x8000u);
    /* |f| < 2^-14: the result is m * 2^-24 with m = round-to-even(|f| * 2^24),
     * m in [0, 1024]; m == 1024 is the smallest normal, whose bits are 0x400. */
    float r = fabsf(f) * 16777216.0f;
    long m = lrintf(r); /* default rounding mode: nearest even */
    return (uint16_t)(sign | (uint16_t)m);
}

void mt_to_f32(float *dst, const void *src, mt_dtype dt, size_t n)
{
    if (dt == MT_F32) {
        if ((const void *)dst != src)
            memcpy(dst, src, n * sizeof(float));
        return;
    }
    const uint16_t *h = src;
    if (dt == MT_BF16) {
        uint32_t *d = (uint32_t *)dst;
        for (size_t i = 0; i < n; i++)
            d[i] = (uint32_t)h[i] << 16;
    } else {
        for (size_t i = 0; i < n; i++)
            dst[i] = mt_f16_to_f32(h[i]);
    }
}

void mt_from_f32(void *dst, mt_dtype dt, const float *src, size_t n)
{
    if (dt == MT_F32) {
        if (dst != (const void *)src)
            memcpy(dst, src, n * sizeof(float));
        return;
    }
    uint16_t *h = dst;
    if (dt == MT_BF16) {
        for (size_t i = 0; i < n; i++)
            h[i] = mt_f32_to_bf16(src[i]);
    } else {
        for (size_t i = 0; i < n; i++)
            h[i] = mt_f32_to_f16(src[i]);
    }
}

void mt_round_f32(float *x, mt_dtype dt, size_t n)
{
    if (dt == MT_BF16) {
        for (size_t i = 0; i < n; i++)
            x[i] = mt_bf16_to_f32(mt_f32_to_bf16(x[i]));
    } else if (dt == MT_F16) {
        for (size_t i = 0; i < n; i++)
            x[i] = mt_f16_to_f32(mt_f32_to_f16(x[i]));
    }
}

void mt_add_f32(void *dst, mt_dtype dt, const float *src, size_t n)
{
    if (dt == MT_F32) {
        float *d = dst;
        for (size_t i = 0; i < n; i++)
            d[i] += src[i];
        return;
    }
    uint16_t *h = dst;
    if (dt == MT_BF16) {
        for (size_t i = 0; i < n; i++)
            h[i] = mt_f32_to_bf16(mt_bf16_to_f32(h[i]) + src[i]);
    } else {
        for (size_t i = 0; i < n; i++)
            h[i] = mt_f32_to_f16(mt_f16_to_f32(h[i]) + src[i]);
    }
}

bool mt_all_finite(const void *x, mt_dtype dt, size_t n)
{
    if (dt == MT_F32) {
        const uint32_t *u = x;
        uint32_t bad = 0;
        for (size_t i = 0; i < n; i++)
            bad |= (u[i] & 0x7f800000u) == 0x7f800000u;
        return !bad;
    }
    const uint16_t *h = x;
    uint16_t expmask = dt == MT_BF16 ? 0x7f80u : 0x7c00u;
    unsigned bad = 0;
    for (size_t i = 0; i < n; i++)
        bad |= (h[i] & expmask) == expmask;
    return !bad;
}

void mt_scaler_init(mt_scaler *s, bool enabled, float init_scale, int window)
{
    s->enabled = enabled;
    s->scale = enabled ? init_scale : 1.0f;
    s->window = window > 0 ? window : 2000;
    s->good_steps = 0;
    s->skipped = 0;
}

bool mt_scaler_update(mt_scaler *s, bool finite)
{
    if (!s->enabled)
        return false;
    if (!finite) {
        s->scale *= 0.5f;
        if (s->scale < 1.0f)
            s->scale = 1.0f;
        s->good_steps = 0;
        s->skipped++;
        return true;
    }
    if (++s->good_steps >= s->window) {
        s->scale *= 2.0f;
        if (s->scale > 16777216.0f)
            s->scale = 16777216.0f;
        s->good_steps = 0;
    }
    return false;
}

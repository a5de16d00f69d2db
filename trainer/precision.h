/*
 * precision.h — storage types (fp32, bf16, fp16), conversions with
 * round-to-nearest-even, and the dynamic loss scaler for fp16.
 *
 * Mixed precision in memtrain: parameters, gradients and saved activations
 * are STORED in 16 bits; all arithmetic is fp32 (16-bit tiles are widened to
 * fp32 before sgemm, results are rounded to nearest-even when stored). Every
 * activation that would be stored in 16 bits is rounded when it is produced,
 * whether or not it is actually kept, so checkpointing cannot change results.
 */
#ifndef MT_PRECISION_H
#define MT_PRECISION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef enum { MT_F32, MT_BF16, MT_F16 } mt_dtype;

static inline size_t mt_dtype_size(mt_dtype dt) { return dt == MT_F32 ? 4 : 2; }
const char *mt_dtype_name(mt_dtype dt);

/* ---- scalar conversions ---- */

static inline uint32_t mt_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static inline float mt_bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline uint16_t mt_f32_to_bf16(float f)
{
    uint32_t u = mt_f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: keep it a (quiet) NaN */
        return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even */
    return (uint16_t)(u >> 16);
}
static inline float mt_bf16_to_f32(uint16_t h) { return mt_bits_f32((uint32_t)h << 16); }

uint16_t mt_f32_to_f16_slow(float f); /* subnormal results */
static inline uint16_t mt_f32_to_f16(float f)
{
    uint32_t u = mt_f32_bits(f);
    uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    if (a >= 0x477ff000u) /* >= 65520 rounds to inf; inf; NaN */
        return (uint16_t)(sign | (a > 0x7f800000u ? 0x7e00u : 0x7c00u));
    if (a < 0x38800000u) /* below 2^-14: a half subnormal or zero */
        return mt_f32_to_f16_slow(f);
    a += 0xfffu + ((a >> 13) & 1u);
    return (uint16_t)(sign | ((a - 0x38000000u) >> 13));
}
static inline float mt_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0) {
        float v = (float)m * (1.0f / 16777216.0f); /* m * 2^-24, exact */
        return mt_bits_f32(mt_f32_bits(v) | sign);
    }
    if (e == 31)
        return mt_bits_f32(sign | 0x7f800000u | (m << 13));
    return mt_bits_f32(sign | ((e + 112) << 23) | (m << 13));
}

/* Value of element i of a buffer of type dt, as fp32. */
static inline float mt_load1(const void *p, mt_dtype dt, size_t i)
{
    switch (dt) {
    case MT_BF16: return mt_bf16_to_f32(((const uint16_t *)p)[i]);
    case MT_F16: return mt_f16_to_f32(((const uint16_t *)p)[i]);
    default: return ((const float *)p)[i];
    }
}
static inline void mt_store1(void *p, mt_dtype dt, size_t i, float v)
{
    switch (dt) {
    case MT_BF16: ((uint16_t *)p)[i] = mt_f32_to_bf16(v); break;
    case MT_F16: ((uint16_t *)p)[i] = mt_f32_to_f16(v); break;
    default: ((float *)p)[i] = v;
    }
}

/* ---- bulk conversions ---- */

/* dst[i] = (float)src[i]. For MT_F32 a copy (or nothing if dst == src). */
void mt_to_f32(float *dst, const void *src, mt_dtype dt, size_t n);
/* dst[i] = round(src[i]) in type dt. */
void mt_from_f32(void *dst, mt_dtype dt, const float *src, size_t n);
/* x[i] = (float)round(x[i]): what storing in dt and reading back gives.
 * Nothing for MT_F32. */
void mt_round_f32(float *x, mt_dtype dt, size_t n);
/* dst[i] = round(dst[i] + src[i]) (gradient accumulation into 16-bit). */
void mt_add_f32(void *dst, mt_dtype dt, const float *src, size_t n);
/* True if every element is finite. */
bool mt_all_finite(const void *x, mt_dtype dt, size_t n);

/* ---- dynamic loss scaling (fp16) ---- */

typedef struct mt_scaler {
    float scale;      /* current loss scale (1 when disabled) */
    int good_steps;   /* consecutive steps without inf/nan */
    int window;       /* double after this many good steps (2000) */
    long skipped;     /* steps skipped so far */
    bool enabled;
} mt_scaler;

void mt_scaler_init(mt_scaler *s, bool enabled, float init_scale, int window);
/* After the gradients are in: `finite` says whether they were all finite.
 * Returns true if the optimizer step must be skipped (and halves the scale). */
bool mt_scaler_update(mt_scaler *s, bool finite);

#endif

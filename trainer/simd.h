/*
 * simd.h — four-wide float vectors for the trainer's elementwise kernels.
 *
 * The build uses plain -O2 for the baseline x86-64 target, where GCC does not
 * vectorise loops that call expf/tanhf/sqrtf (errno and libm calls). These
 * helpers use SSE2 intrinsics (always present on x86-64) and fall back to
 * plain C with identical arithmetic elsewhere. The exponential is our own
 * polynomial (relative error < 2e-7 on [-87, 88]), so vectorised and scalar
 * tails give bit-identical results: tails go through the same vector code.
 */
#ifndef MT_SIMD_H
#define MT_SIMD_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
typedef __m128 v4;
static inline v4 v4_load(const float *p) { return _mm_loadu_ps(p); }
static inline void v4_store(float *p, v4 a) { _mm_storeu_ps(p, a); }
static inline v4 v4_set(float x) { return _mm_set1_ps(x); }
static inline v4 v4_add(v4 a, v4 b) { return _mm_add_ps(a, b); }
static inline v4 v4_sub(v4 a, v4 b) { return _mm_sub_ps(a, b); }
static inline v4 v4_mul(v4 a, v4 b) { return _mm_mul_ps(a, b); }
static inline v4 v4_div(v4 a, v4 b) { return _mm_div_ps(a, b); }
static inline v4 v4_sqrt(v4 a) { return _mm_sqrt_ps(a); }
/* max/min return b when a or b is NaN... we want NaN to survive, so the
 * constant goes first: _mm_max_ps(c, x) returns x when x is NaN. */
static inline v4 v4_clamp(v4 x, float lo, float hi)
{
    return _mm_min_ps(_mm_set1_ps(hi), _mm_max_ps(_mm_set1_ps(lo), x));
}
static inline v4 v4_max(v4 a, v4 b) { return _mm_max_ps(a, b); }
/* n = round(t); returns n << 23 (an exponent increment for v4_add_bits). */
static inline v4 v4_round_exp(v4 t, v4 *n_out)
{
    __m128i ni = _mm_cvtps_epi32(t); /* round to nearest (default MXCSR) */
    *n_out = _mm_cvtepi32_ps(ni);
    return _mm_castsi128_ps(_mm_slli_epi32(ni, 23));
}
static inline v4 v4_add_bits(v4 p, v4 ebits)
{
    return _mm_castsi128_ps(_mm_add_epi32(_mm_castps_si128(p), _mm_castps_si128(ebits)));
}
static inline float v4_hsum(v4 a)
{
    float t[4];
    _mm_storeu_ps(t, a);
    return (t[0] + t[1]) + (t[2] + t[3]);
}
static inline float v4_hmax(v4 a)
{
    float t[4];
    _mm_storeu_ps(t, a);
    float m0 = t[0] > t[1] ? t[0] : t[1], m1 = t[2] > t[3] ? t[2] : t[3];
    return m0 > m1 ? m0 : m1;
}
#else
typedef struct { float f[4]; } v4;
#define V4_MAP2(name, expr) \
    static inline v4 name(v4 a, v4 b) { v4 r; for (int i = 0; i < 4; i++) r.f[i] = (expr); return r; }
static inline v4 v4_load(const float *p) { v4 r; memcpy(r.f, p, sizeof r.f); return r; }
static inline void v4_store(float *p, v4 a) { memcpy(p, a.f, sizeof a.f); }
static inline v4 v4_set(float x) { v4 r = {{x, x, x, x}}; return r; }
V4_MAP2(v4_add, a.f[i] + b.f[i])
V4_MAP2(v4_sub, a.f[i] - b.f[i])
V4_MAP2(v4_mul, a.f[i] * b.f[i])
V4_MAP2(v4_div, a.f[i] / b.f[i])
V4_MAP2(v4_max, a.f[i] > b.f[i] ? a.f[i] : b.f[i])
static inline v4 v4_sqrt(v4 a) { v4 r; for (int i = 0; i < 4; i++) r.f[i] = __builtin_sqrtf(a.f[i]); return r; }
static inline v4 v4_clamp(v4 x, float lo, float hi)
{
    v4 r;
    for (int i = 0; i < 4; i++) {
        float v = x.f[i];
        r.f[i] = v != v ? v : v < lo ? lo : v > hi ? hi : v;
    }
    return r;
}
static inline v4 v4_round_exp(v4 t, v4 *n_out)
{
    v4 e;
    for (int i = 0; i < 4; i++) {
        float n = __builtin_nearbyintf(t.f[i]);
        int32_t ni = n == n ? (int32_t)n : INT32_MIN;
        uint32_t bits = (uint32_t)ni << 23;
        n_out->f[i] = (float)ni;
        memcpy(&e.f[i], &bits, 4);
    }
    return e;
}
static inline v4 v4_add_bits(v4 p, v4 ebits)
{
    v4 r;
    for (int i = 0; i < 4; i++) {
        uint32_t a, b;
        memcpy(&a, &p.f[i], 4);
        memcpy(&b, &ebits.f[i], 4);
        a += b;
        memcpy(&r.f[i], &a, 4);
    }
    return r;
}
static inline float v4_hsum(v4 a) { return (a.f[0] + a.f[1]) + (a.f[2] + a.f[3]); }
static inline float v4_hmax(v4 a)
{
    float m0 = a.f[0] > a.f[1] ? a.f[0] : a.f[1], m1 = a.f[2] > a.f[3] ? a.f[2] : a.f[3];
    return m0 > m1 ? m0 : m1;
}
#endif

/* e^x, x clamped to [-87.3, 88.3] (NaN passes through). Cody-Waite reduction
 * x = n ln2 + y, |y| <= ln2/2, then a degree-6 Taylor polynomial for e^y. */
static inline v4 v4_exp(v4 x)
{
    x = v4_clamp(x, -87.3f, 88.3f);
    v4 n;
    v4 ebits = v4_round_exp(v4_mul(x, v4_set(1.44269504088896341f)), &n);
    v4 y = v4_sub(x, v4_mul(n, v4_set(0.693145751953125f)));
    y = v4_sub(y, v4_mul(n, v4_set(1.428606765330187e-06f)));
    v4 p = v4_set(1.0f / 720);
    p = v4_add(v4_mul(p, y), v4_set(1.0f / 120));
    p = v4_add(v4_mul(p, y), v4_set(1.0f / 24));
    p = v4_add(v4_mul(p, y), v4_set(1.0f / 6));
    p = v4_add(v4_mul(p, y), v4_set(0.5f));
    p = v4_add(v4_mul(p, y), v4_set(1.0f));
    p = v4_add(v4_mul(p, y), v4_set(1.0f));
    return v4_add_bits(p, ebits);
}

/* tanh(u) = 1 - 2 / (e^{2u} + 1): saturates cleanly to +-1. */
static inline v4 v4_tanh(v4 u)
{
    v4 e = v4_exp(v4_add(u, u));
    return v4_sub(v4_set(1.0f), v4_div(v4_set(2.0f), v4_add(e, v4_set(1.0f))));
}

/* 1 / (1 + e^-x) */
static inline v4 v4_sigmoid(v4 x)
{
    v4 e = v4_exp(v4_sub(v4_set(0.0f), x));
    return v4_div(v4_set(1.0f), v4_add(v4_set(1.0f), e));
}

/* Scalar versions through the same vector code (bit-identical to the lanes). */
static inline float mt_expf(float x)
{
    float t[4] = {x, x, x, x};
    v4_store(t, v4_exp(v4_load(t)));
    return t[0];
}

/* Load/store up to 4 floats (for loop tails), padding with `pad`. */
static inline v4 v4_load_part(const float *p, size_t n, float pad)
{
    float t[4] = {pad, pad, pad, pad};
    memcpy(t, p, n * sizeof(float));
    return v4_load(t);
}
static inline void v4_store_part(float *p, v4 a, size_t n)
{
    float t[4];
    v4_store(t, a);
    memcpy(p, t, n * sizeof(float));
}

#endif

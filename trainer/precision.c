/*
 * precision.c — bulk 16-bit conversions and the fp16 loss scaler.
 */
#include "precision.h"

#include <math.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#if defined(__SSE2__)
/* Four floats (as int bits) -> bf16 bits, round to nearest even, NaN kept
 * quiet; same results as mt_f32_to_bf16. Returns 32-bit lanes. */
static inline __m128i bf16_round4(__m128i u)
{
    __m128i absu = _mm_and_si128(u, _mm_set1_epi32(0x7fffffff));
    __m128i nan = _mm_cmpgt_epi32(absu, _mm_set1_epi32(0x7f800000));
    __m128i lsb = _mm_and_si128(_mm_srli_epi32(u, 16), _mm_set1_epi32(1));
    __m128i r = _mm_add_epi32(_mm_add_epi32(u, _mm_set1_epi32(0x7fff)), lsb);
    __m128i qn = _mm_or_si128(u, _mm_set1_epi32(0x400000));
    r = _mm_or_si128(_mm_and_si128(nan, qn), _mm_andnot_si128(nan, r));
    return _mm_srli_epi32(r, 16);
}
/* Four floats (as int bits) -> fp16 bits in 32-bit lanes, round to nearest
 * even; the same results as mt_f32_to_f16. Normal results by integer
 * rounding of the shifted bits; subnormal results by letting the FPU round:
 * |f| + 0.5 has a unit in the last place of 2^-24, the fp16 subnormal step. */
static inline __m128i f16_round4(__m128i u)
{
    __m128i sign = _mm_and_si128(_mm_srli_epi32(u, 16), _mm_set1_epi32(0x8000));
    __m128i a = _mm_and_si128(u, _mm_set1_epi32(0x7fffffff));
    __m128i lsb = _mm_and_si128(_mm_srli_epi32(a, 13), _mm_set1_epi32(1));
    __m128i norm = _mm_add_epi32(_mm_add_epi32(a, _mm_set1_epi32(0xfff)), lsb);
    norm = _mm_srli_epi32(_mm_sub_epi32(norm, _mm_set1_epi32(0x38000000)), 13);
    __m128 half = _mm_castsi128_ps(_mm_set1_epi32(0x3f000000));
    __m128i sub = _mm_sub_epi32(_mm_castps_si128(_mm_add_ps(_mm_castsi128_ps(a), half)),
                                _mm_set1_epi32(0x3f000000));
    __m128i is_sub = _mm_cmplt_epi32(a, _mm_set1_epi32(0x38800000));
    __m128i is_big = _mm_cmpgt_epi32(a, _mm_set1_epi32(0x477fefff));
    __m128i is_nan = _mm_cmpgt_epi32(a, _mm_set1_epi32(0x7f800000));
    __m128i r = _mm_or_si128(_mm_and_si128(is_sub, sub), _mm_andnot_si128(is_sub, norm));
    __m128i big = _mm_or_si128(_mm_set1_epi32(0x7c00), _mm_and_si128(is_nan, _mm_set1_epi32(0x200)));
    r = _mm_or_si128(_mm_and_si128(is_big, big), _mm_andnot_si128(is_big, r));
    return _mm_or_si128(r, sign);
}

/* fp16 bits in the low halves of 32-bit lanes -> float bits. */
static inline __m128 f16_widen4(__m128i h)
{
    __m128i o = _mm_slli_epi32(_mm_and_si128(h, _mm_set1_epi32(0x7fff)), 13);
    __m128i e = _mm_and_si128(h, _mm_set1_epi32(0x7c00));
    o = _mm_add_epi32(o, _mm_set1_epi32(112 << 23));
    __m128i is_inf = _mm_cmpeq_epi32(e, _mm_set1_epi32(0x7c00));
    o = _mm_add_epi32(o, _mm_and_si128(is_inf, _mm_set1_epi32(112 << 23)));
    __m128i is_sub = _mm_cmpeq_epi32(e, _mm_setzero_si128());
    __m128 subv = _mm_sub_ps(_mm_castsi128_ps(_mm_add_epi32(o, _mm_set1_epi32(1 << 23))),
                             _mm_castsi128_ps(_mm_set1_epi32(0x38800000)));
    __m128i r = _mm_or_si128(_mm_and_si128(is_sub, _mm_castps_si128(subv)),
                             _mm_andnot_si128(is_sub, o));
    r = _mm_or_si128(r, _mm_slli_epi32(_mm_and_si128(h, _mm_set1_epi32(0x8000)), 16));
    return _mm_castsi128_ps(r);
}

/* Eight 32-bit lanes holding values < 65536 -> eight uint16 (SSE2 has only a
 * signed pack: shift the range down, pack, flip the top bit back). */
static inline __m128i pack_u16(__m128i a, __m128i b)
{
    __m128i k = _mm_set1_epi32(0x8000);
    __m128i p = _mm_packs_epi32(_mm_sub_epi32(a, k), _mm_sub_epi32(b, k));
    return _mm_xor_si128(p, _mm_set1_epi16((short)0x8000));
}
#endif

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
        size_t i = 0;
#if defined(__SSE2__)
        __m128i z = _mm_setzero_si128();
        for (; i + 8 <= n; i += 8) {
            __m128i v = _mm_loadu_si128((const __m128i *)(h + i));
            _mm_storeu_si128((__m128i *)(d + i), _mm_unpacklo_epi16(z, v));
            _mm_storeu_si128((__m128i *)(d + i + 4), _mm_unpackhi_epi16(z, v));
        }
#endif
        for (; i < n; i++)
            d[i] = (uint32_t)h[i] << 16;
    } else {
        size_t i = 0;
#if defined(__SSE2__)
        __m128i z = _mm_setzero_si128();
        for (; i + 8 <= n; i += 8) {
            __m128i v = _mm_loadu_si128((const __m128i *)(h + i));
            _mm_storeu_ps(dst + i, f16_widen4(_mm_unpacklo_epi16(v, z)));
            _mm_storeu_ps(dst + i + 4, f16_widen4(_mm_unpackhi_epi16(v, z)));
        }
#endif
        for (; i < n; i++)
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
        size_t i = 0;
#if defined(__SSE2__)
        for (; i + 8 <= n; i += 8) {
            __m128i a = bf16_round4(_mm_loadu_si128((const __m128i *)(src + i)));
            __m128i b = bf16_round4(_mm_loadu_si128((const __m128i *)(src + i + 4)));
            _mm_storeu_si128((__m128i *)(h + i), pack_u16(a, b));
        }
#endif
        for (; i < n; i++)
            h[i] = mt_f32_to_bf16(src[i]);
    } else {
        size_t i = 0;
#if defined(__SSE2__)
        for (; i + 8 <= n; i += 8) {
            __m128i a = f16_round4(_mm_loadu_si128((const __m128i *)(src + i)));
            __m128i b = f16_round4(_mm_loadu_si128((const __m128i *)(src + i + 4)));
            _mm_storeu_si128((__m128i *)(h + i), pack_u16(a, b));
        }
#endif
        for (; i < n; i++)
            h[i] = mt_f32_to_f16(src[i]);
    }
}

void mt_round_f32(float *x, mt_dtype dt, size_t n)
{
    if (dt == MT_BF16) {
        size_t i = 0;
#if defined(__SSE2__)
        for (; i + 4 <= n; i += 4) {
            __m128i r = bf16_round4(_mm_loadu_si128((const __m128i *)(x + i)));
            _mm_storeu_si128((__m128i *)(x + i), _mm_slli_epi32(r, 16));
        }
#endif
        for (; i < n; i++)
            x[i] = mt_bf16_to_f32(mt_f32_to_bf16(x[i]));
    } else if (dt == MT_F16) {
        size_t i = 0;
#if defined(__SSE2__)
        for (; i + 4 <= n; i += 4)
            _mm_storeu_ps(x + i, f16_widen4(f16_round4(_mm_loadu_si128((const __m128i *)(x + i)))));
#endif
        for (; i < n; i++)
            x[i] = mt_f16_to_f32(mt_f32_to_f16(x[i]));
    }
}

void mt_add_f32(void *dst, mt_dtype dt, const float *src, size_t n)
{
    if (dt == MT_F32) {
        float *d = dst;
        size_t i = 0;
#if defined(__SSE2__)
        for (; i + 4 <= n; i += 4)
            _mm_storeu_ps(d + i, _mm_add_ps(_mm_loadu_ps(d + i), _mm_loadu_ps(src + i)));
#endif
        for (; i < n; i++)
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

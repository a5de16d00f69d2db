/*
 * optim.c — AdamW, 8-bit AdamW, SGD with momentum, SGD (see optim.h).
 */
#include "optim.h"

#include <math.h>
#include <string.h>

#include "alloc.h"
#include "simd.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"

/* ---------- 8-bit code maps ----------
 *
 * Dynamic ("tree") quantisation as in Dettmers et al. 2021: a code spends its
 * leading bits on a decimal exponent and the rest on a linear fraction, so a
 * block keeps about seven decades of relative range instead of the two that
 * linear int8 gives. That matters for v: within a block of 256 second moments
 * the small ones would round to zero under linear absmax scaling, and the
 * update m / (sqrt(v) + eps) would then explode. Our construction:
 *   decade e = 0..E-1 holds 2^(E-1-e) values 10^-e * (0.1 + 0.9 (k+1) / 2^(E-1-e)),
 *   k = 0..2^(E-1-e)-1 (the top of decade e is exactly 10^-e; 1.0 is a code).
 * signed (m):   E = 7 -> 127 magnitudes, +-, and 0: 255 codes (one unused)
 * unsigned (v): E = 8 -> 255 magnitudes and 0: 256 codes
 * Encoding picks the nearest value (ties to the smaller), found with a table
 * indexed by the top 16 bits of the float and a short exact refinement.
 */
#define SMAG 128
#define UMAG 256
#define LUT_SIZE 16384 /* keys (bits >> 16) for floats in [0, 1] are <= 0x3f80 */

static float smag[SMAG], umag[UMAG];
static uint8_t slut[LUT_SIZE], ulut[LUT_SIZE];
static bool maps_ready;

static void build_mag(float *mag, int ndecades)
{
    int k = 0;
    mag[k++] = 0.0f;
    for (int e = ndecades - 1; e >= 0; e--) { /* ascending: smallest decade first */
        int cnt = 1 << (ndecades - 1 - e);
        double dec = pow(10.0, -e);
        for (int j = 0; j < cnt; j++)
            mag[k++] = (float)(dec * (0.1 + 0.9 * (double)(j + 1) / cnt));
    }
}

static uint8_t nearest(const float *mag, int n, float a)
{
    int best = 0;
    float bd = fabsf(a - mag[0]);
    for (int i = 1; i < n; i++) {
        float d = fabsf(a - mag[i]);
        if (d < bd) {
            bd = d;
            best = i;
        }
    }
    return (uint8_t)best;
}

static void build_maps(void)
{
    if (maps_ready)
        return;
    build_mag(smag, 7);
    build_mag(umag, 8);
    for (uint32_t key = 0; key < LUT_SIZE; key++) {
        float a = mt_bits_f32(key << 16);
        if (a > 1.0f)
            a = 1.0f;
        slut[key] = nearest(smag, SMAG, a);
        ulut[key] = nearest(umag, UMAG, a);
    }
    maps_ready = true;
}

static uint8_t encode_mag(const float *mag, const uint8_t *lut, int n, float a)
{
    if (!(a > 0.0f)) /* zero, negative zero or NaN */
        return 0;
    if (a >= 1.0f)
        return (uint8_t)(n - 1);
    int c = lut[mt_f32_bits(a) >> 16];
    /* a is at or above the bucket's lower edge: the nearest may be higher */
    while (c + 1 < n && fabsf(mag[c + 1] - a) < fabsf(a - mag[c]))
        c++;
    while (c > 0 && fabsf(a - mag[c - 1]) <= fabsf(a - mag[c]))
        c--;
    return (uint8_t)c;
}

float mt_q8_signed_value(uint8_t c)
{
    build_maps();
    return c >= 127 ? smag[c - 127] : -smag[127 - c];
}
float mt_q8_unsigned_value(uint8_t c)
{
    build_maps();
    return umag[c];
}
uint8_t mt_q8_signed_code(float x)
{
    build_maps();
    uint8_t m = encode_mag(smag, slut, SMAG, fabsf(x));
    return (uint8_t)(x < 0.0f ? 127 - m : 127 + m);
}
uint8_t mt_q8_unsigned_code(float x)
{
    build_maps();
    return encode_mag(umag, ulut, UMAG, x);
}

/* ---------- sizes, init ---------- */

static size_t nblocks_of(size_t n, size_t block) { return (n + block - 1) / block; }

size_t mt_optim_state_bytes(const mp_settings *s, size_t n)
{
    const mp_optimizer_desc *od = mp_optimizer_desc_of(s->optimizer);
    size_t states = (size_t)od->states, blocks = od->low_bit ? nblocks_of(n, (size_t)s->adam8_block) : 0;
    return states * (n * (size_t)mp_state_value_bytes(s) + blocks * sizeof(float));
}

/* The bytes a kernel stores a state value in: 8-bit codes, or fp32. */
static size_t kernel_value_bytes(mp_optimizer k) { return k == MP_ADAMW_8BIT ? sizeof(uint8_t) : sizeof(float); }

int mt_optim_init(mt_optim *o, const mp_settings *s, const mt_opt_hparams *hp, size_t n,
                  const mt_seg *segs, size_t nsegs)
{
    memset(o, 0, sizeof *o);
    mp_optimizer kind = s->optimizer;
    o->kind = kind;
    o->hp = *hp;
    o->block = s->adam8_block > 0 ? (size_t)s->adam8_block : 256;
    o->value_bytes = (size_t)mp_state_value_bytes(s);
    o->n = n;
    o->segs = segs;
    o->nsegs = nsegs;
    /* the planner sizes the state from its rows; the kernels below store what they store */
    if (mp_optimizer_desc_of(kind)->states > 0 && o->value_bytes != kernel_value_bytes(kind))
        return mt_error("optimizer %s keeps %zu-byte state values (the planner's rows), memtrain's kernel %zu",
                        mp_optimizer_name(kind), o->value_bytes, kernel_value_bytes(kind));
    size_t vb = o->value_bytes;
    switch (kind) {
    case MP_ADAMW:
        o->m = mt_calloc(MT_OPTIMIZER, n * vb);
        o->v = mt_calloc(MT_OPTIMIZER, n * vb);
        if (!o->m || !o->v)
            goto fail;
        break;
    case MP_ADAMW_8BIT:
        build_maps();
        o->nblocks = nblocks_of(n, o->block);
        o->m8 = mt_alloc(MT_OPTIMIZER, n * vb);
        o->v8 = mt_calloc(MT_OPTIMIZER, n * vb);
        o->m_amax = mt_calloc_n(MT_OPTIMIZER, o->nblocks, sizeof(float));
        o->v_amax = mt_calloc_n(MT_OPTIMIZER, o->nblocks, sizeof(float));
        o->scratch = mt_alloc_n(MT_WORKSPACE, 2 * o->block, sizeof(float));
        if (!o->m8 || !o->v8 || !o->m_amax || !o->v_amax || !o->scratch)
            goto fail;
        memset(o->m8, 127, n); /* signed code 127 is zero */
        break;
    case MP_SGD_MOMENTUM:
        o->m = mt_calloc(MT_OPTIMIZER, n * vb);
        if (!o->m)
            goto fail;
        break;
    case MP_SGD: break;
    default: mt_error("unknown optimizer %d", (int)kind); goto fail;
    }
    return 0;
fail:
    mt_optim_free(o);
    return -1;
}

void mt_optim_free(mt_optim *o)
{
    mt_free(o->m);
    mt_free(o->v);
    mt_free(o->m8);
    mt_free(o->v8);
    mt_free(o->m_amax);
    mt_free(o->v_amax);
    mt_free(o->scratch);
    o->m = o->v = o->m_amax = o->v_amax = o->scratch = NULL;
    o->m8 = o->v8 = NULL;
}

/* ---------- the update kernels ---------- */

typedef struct adam_k {
    float b1, b2, omb1, omb2, step_size, inv_sqrt_bc2, eps, lr, wd;
} adam_k;

/* Gradient elements i..i+3 as fp32 times gscale. */
static inline v4 grad4(const void *g, mt_dtype dt, size_t i, v4 gs)
{
    if (dt == MT_F32)
        return v4_mul(v4_load((const float *)g + i), gs);
    float t[4];
    mt_to_f32(t, (const uint16_t *)g + i, dt, 4);
    return v4_mul(v4_load(t), gs);
}

static inline void store_w16(void *w16, mt_dtype wdt, size_t i, const float *w, size_t n)
{
    if (w16)
        mt_from_f32((uint16_t *)w16 + i, wdt, w + i, n);
}

/* AdamW over elements [0, n) of the given arrays (all already offset). */
static void adamw_range(const adam_k *k, float *w, float *m, float *v, const void *g, mt_dtype gdt,
                        size_t n, float gscale, bool decay, void *w16, mt_dtype wdt)
{
    float shrink = decay ? 1.0f - k->lr * k->wd : 1.0f;
    v4 vb1 = v4_set(k->b1), vb2 = v4_set(k->b2), v1b1 = v4_set(k->omb1), v1b2 = v4_set(k->omb2);
    v4 vss = v4_set(k->step_size), visb = v4_set(k->inv_sqrt_bc2), veps = v4_set(k->eps);
    v4 vsh = v4_set(shrink), vgs = v4_set(gscale);
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        v4 gv = grad4(g, gdt, i, vgs);
        v4 mv = v4_add(v4_mul(vb1, v4_load(m + i)), v4_mul(v1b1, gv));
        v4 vv = v4_add(v4_mul(vb2, v4_load(v + i)), v4_mul(v1b2, v4_mul(gv, gv)));
        v4_store(m + i, mv);
        v4_store(v + i, vv);
        v4 denom = v4_add(v4_mul(v4_sqrt(vv), visb), veps);
        v4 wv = v4_sub(v4_mul(v4_load(w + i), vsh), v4_mul(vss, v4_div(mv, denom)));
        v4_store(w + i, wv);
    }
    for (; i < n; i++) {
        float gv = mt_load1(g, gdt, i) * gscale;
        float mv = k->b1 * m[i] + k->omb1 * gv;
        float vv = k->b2 * v[i] + k->omb2 * gv * gv;
        m[i] = mv;
        v[i] = vv;
        w[i] = w[i] * shrink - k->step_size * (mv / (sqrtf(vv) * k->inv_sqrt_bc2 + k->eps));
    }
    store_w16(w16, wdt, 0, w, n);
}

static void sgd_range(const mt_optim *o, float *w, float *buf, const void *g, mt_dtype gdt,
                      size_t n, float gscale, bool decay, void *w16, mt_dtype wdt)
{
    float lr = o->hp.lr, wd = decay ? o->hp.weight_decay : 0.0f, mu = o->hp.momentum;
    bool first = o->t == 1;
    for (size_t i = 0; i < n; i++) {
        float gv = mt_load1(g, gdt, i) * gscale + wd * w[i];
        if (buf) {
            buf[i] = first ? gv : mu * buf[i] + gv;
            gv = buf[i];
        }
        w[i] -= lr * gv;
    }
    store_w16(w16, wdt, 0, w, n);
}

/* Run `fn` over [lo, hi) split at segment boundaries. */
#define FOR_SEGMENTS(o, lo, hi, p0, cnt, decay, body)                                   \
    do {                                                                                \
        for (size_t s_ = 0; s_ < (o)->nsegs; s_++) {                                    \
            size_t a_ = (o)->segs[s_].off, b_ = a_ + (o)->segs[s_].n;                   \
            if (b_ <= (lo) || a_ >= (hi))                                               \
                continue;                                                               \
            size_t p0 = a_ > (lo) ? a_ : (lo);                                          \
            size_t cnt = (b_ < (hi) ? b_ : (hi)) - p0;                                  \
            bool decay = (o)->segs[s_].decay;                                           \
            body;                                                                       \
        }                                                                               \
    } while (0)

#define ZERO_CHUNK 16384 /* zero gradients chunk by chunk while they are in cache */

void mt_optim_step(mt_optim *o, float *w, void *grad, mt_dtype gdt, float gscale, void *w16,
                   mt_dtype wdt, bool zero_grad)
{
    o->t++;
    size_t gsz = mt_dtype_size(gdt), wsz = mt_dtype_size(wdt);
    adam_k k;
    k.b1 = o->hp.beta1;
    k.b2 = o->hp.beta2;
    k.omb1 = 1.0f - k.b1;
    k.omb2 = 1.0f - k.b2;
    k.step_size = o->hp.lr / (float)(1.0 - pow(k.b1, (double)o->t));
    k.inv_sqrt_bc2 = (float)(1.0 / sqrt(1.0 - pow(k.b2, (double)o->t)));
    k.eps = o->hp.eps;
    k.lr = o->hp.lr;
    k.wd = o->hp.weight_decay;
#define GOFF(p) ((char *)grad + (p) * gsz)
#define WOFF(p) (w16 ? (char *)w16 + (p) * wsz : NULL)

    if (o->kind == MP_ADAMW_8BIT) {
        size_t bs = o->block;
        float *mb = o->scratch, *vb = o->scratch + bs;
        for (size_t blk = 0; blk < o->nblocks; blk++) {
            size_t i0 = blk * bs, cnt_b = o->n - i0 < bs ? o->n - i0 : bs;
            float ma = o->m_amax[blk], va = o->v_amax[blk];
            for (size_t i = 0; i < cnt_b; i++) {
                mb[i] = mt_q8_signed_value(o->m8[i0 + i]) * ma;
                vb[i] = mt_q8_unsigned_value(o->v8[i0 + i]) * va;
            }
            FOR_SEGMENTS(o, i0, i0 + cnt_b, p0, cnt, decay,
                         adamw_range(&k, w + p0, mb + (p0 - i0), vb + (p0 - i0), GOFF(p0), gdt,
                                     cnt, gscale, decay, WOFF(p0), wdt));
            ma = va = 0.0f;
            for (size_t i = 0; i < cnt_b; i++) {
                ma = fabsf(mb[i]) > ma ? fabsf(mb[i]) : ma;
                va = vb[i] > va ? vb[i] : va;
            }
            float im = ma > 0.0f ? 1.0f / ma : 0.0f, iv = va > 0.0f ? 1.0f / va : 0.0f;
            for (size_t i = 0; i < cnt_b; i++) {
                o->m8[i0 + i] = mt_q8_signed_code(mb[i] * im);
                o->v8[i0 + i] = mt_q8_unsigned_code(vb[i] * iv);
            }
            o->m_amax[blk] = ma;
            o->v_amax[blk] = va;
            if (zero_grad)
                memset(GOFF(i0), 0, cnt_b * gsz);
        }
        return;
    }
    for (size_t c0 = 0; c0 < o->n; c0 += ZERO_CHUNK) {
        size_t c1 = o->n - c0 < ZERO_CHUNK ? o->n : c0 + ZERO_CHUNK;
        FOR_SEGMENTS(o, c0, c1, p0, cnt, decay, {
            if (o->kind == MP_ADAMW)
                adamw_range(&k, w + p0, o->m + p0, o->v + p0, GOFF(p0), gdt, cnt, gscale, decay,
                            WOFF(p0), wdt);
            else
                sgd_range(o, w + p0, o->m ? o->m + p0 : NULL, GOFF(p0), gdt, cnt, gscale, decay,
                          WOFF(p0), wdt);
        });
        if (zero_grad)
            memset(GOFF(c0), 0, (c1 - c0) * gsz);
    }
#undef GOFF
#undef WOFF
}

/* ---------- checkpoint state ---------- */

size_t mt_optim_state_size(const mt_optim *o)
{
    /* the state as allocated: mt_optim_state_bytes for the settings it was made from */
    size_t states = (size_t)mp_optimizer_desc_of(o->kind)->states;
    return sizeof(int64_t) + states * (o->n * o->value_bytes + o->nblocks * sizeof(float));
}

#define PUT(ptr, bytes)                        \
    do {                                       \
        if (bytes) {                           \
            memcpy(buf, (ptr), (bytes));       \
            buf += (bytes);                    \
        }                                      \
    } while (0)
#define GET(ptr, bytes)                        \
    do {                                       \
        if (bytes) {                           \
            memcpy((ptr), buf, (bytes));       \
            buf += (bytes);                    \
        }                                      \
    } while (0)

void mt_optim_state_save(const mt_optim *o, uint8_t *buf)
{
    int64_t t = o->t;
    PUT(&t, sizeof t);
    size_t n4 = o->n * sizeof(float), nb4 = o->nblocks * sizeof(float);
    switch (o->kind) {
    case MP_ADAMW: PUT(o->m, n4); PUT(o->v, n4); break;
    case MP_ADAMW_8BIT:
        PUT(o->m8, o->n); PUT(o->v8, o->n); PUT(o->m_amax, nb4); PUT(o->v_amax, nb4);
        break;
    case MP_SGD_MOMENTUM: PUT(o->m, n4); break;
    default: break;
    }
}

/* n block scales (absmax) at p: finite and not negative. */
static int check_amax(const uint8_t *p, size_t n, const char *which)
{
    for (size_t j = 0; j < n; j++) {
        float v;
        memcpy(&v, p + j * sizeof v, sizeof v);
        if (!isfinite(v) || v < 0.0f)
            return mt_error("8-bit %s block scale %zu is %g: not a finite absmax", which, j, (double)v);
    }
    return 0;
}

int mt_optim_state_check(const mt_optim *o, const uint8_t *buf, long steps)
{
    int64_t t;
    memcpy(&t, buf, sizeof t);
    if (t != steps)
        return mt_error("optimizer step count %lld, but the run made %ld updates", (long long)t, steps);
    if (o->kind != MP_ADAMW_8BIT)
        return 0;
    const uint8_t *m8 = buf + sizeof t, *amax = m8 + 2 * o->n;
    /* the signed map has 255 codes (0..254): 255 would index past its magnitudes */
    for (size_t i = 0; i < o->n; i++)
        if (m8[i] > 2 * (SMAG - 1))
            return mt_error("8-bit first-moment code %u at %zu is not a code (0 to %d)", (unsigned)m8[i], i,
                            2 * (SMAG - 1));
    if (check_amax(amax, o->nblocks, "first-moment") ||
        check_amax(amax + o->nblocks * sizeof(float), o->nblocks, "second-moment"))
        return -1;
    return 0;
}

void mt_optim_state_load(mt_optim *o, const uint8_t *buf)
{
    int64_t t;
    GET(&t, sizeof t);
    o->t = (long)t;
    size_t n4 = o->n * sizeof(float), nb4 = o->nblocks * sizeof(float);
    switch (o->kind) {
    case MP_ADAMW: GET(o->m, n4); GET(o->v, n4); break;
    case MP_ADAMW_8BIT:
        GET(o->m8, o->n); GET(o->v8, o->n); GET(o->m_amax, nb4); GET(o->v_amax, nb4);
        break;
    case MP_SGD_MOMENTUM: GET(o->m, n4); break;
    default: break;
    }
}

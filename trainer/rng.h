/*
 * rng.h — a small deterministic random number generator (SplitMix64 output
 * function over a Weyl sequence). One 64-bit word of state, so it is trivial
 * to save in a checkpoint; good enough for initialisation and data shuffling.
 */
#ifndef MT_RNG_H
#define MT_RNG_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

typedef struct mt_rng {
    uint64_t s;
} mt_rng;

static inline void mt_rng_seed(mt_rng *r, uint64_t seed) { r->s = seed ^ 0x853c49e6748fea9bULL; }

static inline uint64_t mt_rng_u64(mt_rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Uniform in [0, 1) with 24 random bits (exactly representable as float). */
static inline float mt_rng_uniform(mt_rng *r) { return (float)(mt_rng_u64(r) >> 40) * (1.0f / 16777216.0f); }

/* Uniform integer in [0, n), n > 0 (multiply-shift; bias < 2^-32 for n < 2^32). */
static inline uint32_t mt_rng_below(mt_rng *r, uint32_t n)
{
    return (uint32_t)(((mt_rng_u64(r) >> 32) * (uint64_t)n) >> 32);
}

/* Standard normal by Box-Muller (one value per call; the pair's second half
 * is dropped to keep the state a single word). */
static inline float mt_rng_normal(mt_rng *r)
{
    double u1 = ((double)(mt_rng_u64(r) >> 11) + 1.0) * (1.0 / 9007199254740993.0); /* (0,1] */
    double u2 = (double)(mt_rng_u64(r) >> 11) * (1.0 / 9007199254740992.0);
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

/* Fill x[0..n) with N(0, std^2) values, two per draw (Marsaglia's polar
 * method: no trigonometry, one log per pair; a fast path for initialising
 * large tensors). */
static inline void mt_rng_fill_normal(mt_rng *r, float *x, size_t n, float std)
{
    for (size_t i = 0; i < n; i += 2) {
        float u, v, s;
        do {
            uint64_t z = mt_rng_u64(r);
            u = (float)(int32_t)(uint32_t)z * (1.0f / 2147483648.0f);        /* [-1, 1) */
            v = (float)(int32_t)(uint32_t)(z >> 32) * (1.0f / 2147483648.0f);
            s = u * u + v * v;
        } while (s >= 1.0f || s == 0.0f);
        float f = std * sqrtf(-2.0f * logf(s) / s);
        x[i] = u * f;
        if (i + 1 < n)
            x[i + 1] = v * f;
    }
}

#endif

/*
 * matmul.h — the linear-layer products, all through cblas_sgemm.
 *
 * Conventions (row-major, PyTorch's nn.Linear layout):
 *   inp  (M, K)  activations, fp32, row stride ldi
 *   W    (N, K)  weight, row stride K, stored as fp32, bf16 or fp16
 *   out  (M, N)  fp32, row stride ldo
 * forward   out  = alpha * inp @ W^T + beta * out      sgemm(N, T)
 * backward  dinp = alpha * dout @ W + beta * dinp      sgemm(N, N)
 *           dW  += alpha * dout^T @ inp               sgemm(T, N)
 * M is usually B*T: all the rows of a micro-batch go through one call.
 *
 * 16-bit weights and gradients are handled in row tiles of W: a tile is
 * widened into an fp32 buffer (`mt_tiles`, MT_WORKSPACE), multiplied in fp32,
 * and gradient tiles are rounded back (round-to-nearest-even) into storage.
 */
#ifndef MT_MATMUL_H
#define MT_MATMUL_H

#include <stddef.h>

#include "precision.h"

/* A weight as stored: pointer and storage type. */
typedef struct mt_wref {
    const void *p;
    mt_dtype dt;
} mt_wref;

/* A gradient buffer to accumulate into; p == NULL means "no gradient wanted"
 * (frozen weights). */
typedef struct mt_gref {
    void *p;
    mt_dtype dt;
} mt_gref;

/* fp32 conversion tiles for 16-bit operands (NULL/0 when training in fp32). */
typedef struct mt_tiles {
    float *w; /* weight tile: n floats */
    float *g; /* gradient tile: n floats */
    size_t n;
} mt_tiles;

static inline mt_wref mt_w(const void *p, mt_dtype dt)
{
    mt_wref r = {p, dt};
    return r;
}
static inline mt_gref mt_g(void *p, mt_dtype dt)
{
    mt_gref r = {p, dt};
    return r;
}
/* Element offset into a stored tensor. */
static inline mt_wref mt_w_off(mt_wref w, size_t off)
{
    w.p = (const char *)w.p + off * mt_dtype_size(w.dt);
    return w;
}
static inline mt_gref mt_g_off(mt_gref g, size_t off)
{
    if (g.p)
        g.p = (char *)g.p + off * mt_dtype_size(g.dt);
    return g;
}

void mt_mm_fwd(const mt_tiles *t, float *out, size_t ldo, const float *inp, size_t ldi, mt_wref W,
               size_t M, size_t N, size_t K, float alpha, float beta);
void mt_mm_bwd_in(const mt_tiles *t, float *dinp, size_t ldn, const float *dout, size_t ldd,
                  mt_wref W, size_t M, size_t N, size_t K, float alpha, float beta);
void mt_mm_bwd_w(const mt_tiles *t, mt_gref dW, const float *dout, size_t ldd, const float *inp,
                 size_t ldi, size_t M, size_t N, size_t K, float alpha);

/* Plain fp32 sgemm, row-major: C = alpha * op(A) @ op(B) + beta * C. */
void mt_sgemm(int transa, int transb, size_t M, size_t N, size_t K, float alpha, const float *A,
              size_t lda, const float *B, size_t ldb, float beta, float *C, size_t ldc);

#endif

/*
 * matmul.c — linear-layer products through OpenBLAS (see matmul.h).
 */
#include "matmul.h"

#include <cblas.h>

void mt_sgemm(int transa, int transb, size_t M, size_t N, size_t K, float alpha, const float *A,
              size_t lda, const float *B, size_t ldb, float beta, float *C, size_t ldc)
{
    if (M == 0 || N == 0)
        return;
    cblas_sgemm(CblasRowMajor, transa ? CblasTrans : CblasNoTrans,
                transb ? CblasTrans : CblasNoTrans, (blasint)M, (blasint)N, (blasint)K, alpha, A,
                (blasint)lda, B, (blasint)ldb, beta, C, (blasint)ldc);
}

/* Rows of W per tile: at least one. */
static size_t tile_rows(const mt_tiles *t, size_t K)
{
    size_t r = t->n / K;
    return r ? r : 1;
}

void mt_mm_fwd(const mt_tiles *t, float *out, size_t ldo, const float *inp, size_t ldi, mt_wref W,
               size_t M, size_t N, size_t K, float alpha, float beta)
{
    if (W.dt == MT_F32) {
        /* out (M,N) = inp (M,K) @ W^T (K,N) */
        mt_sgemm(0, 1, M, N, K, alpha, inp, ldi, W.p, K, beta, out, ldo);
        return;
    }
    size_t rows = tile_rows(t, K);
    for (size_t n0 = 0; n0 < N; n0 += rows) {
        size_t nr = N - n0 < rows ? N - n0 : rows;
        mt_to_f32(t->w, mt_w_off(W, n0 * K).p, W.dt, nr * K);
        mt_sgemm(0, 1, M, nr, K, alpha, inp, ldi, t->w, K, beta, out + n0, ldo);
    }
}

void mt_mm_bwd_in(const mt_tiles *t, float *dinp, size_t ldn, const float *dout, size_t ldd,
                  mt_wref W, size_t M, size_t N, size_t K, float alpha, float beta)
{
    if (W.dt == MT_F32) {
        /* dinp (M,K) = dout (M,N) @ W (N,K) */
        mt_sgemm(0, 0, M, K, N, alpha, dout, ldd, W.p, K, beta, dinp, ldn);
        return;
    }
    size_t rows = tile_rows(t, K);
    for (size_t n0 = 0; n0 < N; n0 += rows) {
        size_t nr = N - n0 < rows ? N - n0 : rows;
        mt_to_f32(t->w, mt_w_off(W, n0 * K).p, W.dt, nr * K);
        mt_sgemm(0, 0, M, K, nr, alpha, dout + n0, ldd, t->w, K, n0 == 0 ? beta : 1.0f, dinp, ldn);
    }
}

void mt_mm_bwd_w(const mt_tiles *t, mt_gref dW, const float *dout, size_t ldd, const float *inp,
                 size_t ldi, size_t M, size_t N, size_t K, float alpha)
{
    if (!dW.p)
        return;
    if (dW.dt == MT_F32) {
        /* dW (N,K) += dout^T (N,M) @ inp (M,K) */
        mt_sgemm(1, 0, N, K, M, alpha, dout, ldd, inp, ldi, 1.0f, dW.p, K);
        return;
    }
    size_t rows = tile_rows(t, K);
    for (size_t n0 = 0; n0 < N; n0 += rows) {
        size_t nr = N - n0 < rows ? N - n0 : rows;
        void *g = mt_g_off(dW, n0 * K).p;
        mt_to_f32(t->g, g, dW.dt, nr * K);
        mt_sgemm(1, 0, nr, K, M, alpha, dout + n0, ldd, inp, ldi, 1.0f, t->g, K);
        mt_from_f32(g, dW.dt, t->g, nr * K);
    }
}

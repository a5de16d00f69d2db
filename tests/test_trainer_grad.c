/*
 * test_trainer_grad.c — memtrain's gradients against central finite
 * differences, layer type by layer type, on tiny models; and the sgemm fast
 * paths against a naive reference matmul.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "check.h"
#include "config.h"
#include "matmul.h"
#include "model.h"
#include "precision.h"
#include "rng.h"
#include "model/model.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"

/* ---------- naive reference matmuls ---------- */

/* out (M,N) = inp (M,K) @ W^T, W (N,K), in double */
/* dst (cols, rows) = src (rows, cols) transposed */
static void transpose(float *dst, const float *src, size_t rows, size_t cols)
{
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++)
            dst[c * rows + r] = src[r * cols + c];
}

static void ref_fwd(double *out, const float *inp, const float *W, size_t M, size_t N, size_t K)
{
    for (size_t i = 0; i < M; i++)
        for (size_t j = 0; j < N; j++) {
            double s = 0;
            for (size_t k = 0; k < K; k++)
                s += (double)inp[i * K + k] * W[j * K + k];
            out[i * N + j] = s;
        }
}

static double max_rel(const float *got, const double *want, size_t n)
{
    double mx = 0, scale = 1e-6;
    for (size_t i = 0; i < n; i++)
        scale = fmax(scale, fabs(want[i]));
    for (size_t i = 0; i < n; i++)
        mx = fmax(mx, fabs(got[i] - want[i]) / scale);
    return mx;
}

static void test_matmul(void)
{
    size_t M = 13, N = 37, K = 21;
    mt_rng r;
    mt_rng_seed(&r, 1);
    float *inp = malloc(M * K * 4), *W = malloc(N * K * 4), *dout = malloc(M * N * 4);
    float *out = malloc(M * N * 4), *dinp = malloc(M * K * 4), *dW = calloc(N * K, 4);
    uint16_t *W16 = malloc(N * K * 2), *dW16 = calloc(N * K, 2);
    double *ref = malloc(M * N * 8 + M * K * 8 + N * K * 8);
    for (size_t i = 0; i < M * K; i++) inp[i] = mt_rng_normal(&r);
    for (size_t i = 0; i < N * K; i++) W[i] = mt_rng_normal(&r);
    for (size_t i = 0; i < M * N; i++) dout[i] = mt_rng_normal(&r);
    mt_tiles none = {NULL, NULL, 0};

    mt_mm_fwd(&none, out, N, inp, K, mt_w(W, MT_F32), M, N, K, 1.0f, 0.0f);
    ref_fwd(ref, inp, W, M, N, K);
    CHECK(max_rel(out, ref, M * N) < 1e-5, "sgemm forward (N,T) matches the naive matmul (%.2g)",
          max_rel(out, ref, M * N));
    /* dinp = dout @ W: reference via the transposed weight */
    float *Wt = malloc(N * K * 4);
    transpose(Wt, W, N, K);
    mt_mm_bwd_in(&none, dinp, K, dout, N, mt_w(W, MT_F32), M, N, K, 1.0f, 0.0f);
    ref_fwd(ref, dout, Wt, M, K, N);
    CHECK(max_rel(dinp, ref, M * K) < 1e-5, "sgemm input gradient (N,N) matches (%.2g)",
          max_rel(dinp, ref, M * K));
    /* dW = dout^T @ inp */
    float *doutT = malloc(M * N * 4), *inpT = malloc(M * K * 4);
    transpose(doutT, dout, M, N);
    transpose(inpT, inp, M, K);
    mt_mm_bwd_w(&none, mt_g(dW, MT_F32), dout, N, inp, K, M, N, K, 1.0f);
    ref_fwd(ref, doutT, inpT, N, K, M);
    CHECK(max_rel(dW, ref, N * K) < 1e-5, "sgemm weight gradient (T,N) matches (%.2g)",
          max_rel(dW, ref, N * K));

    /* bf16 weights through small tiles (4 rows of K per tile -> 10 tiles) */
    float *tw = malloc(4 * K * 4), *tg = malloc(4 * K * 4);
    mt_tiles tiles = {tw, tg, 4 * K};
    mt_from_f32(W16, MT_BF16, W, N * K);
    float *Wr = malloc(N * K * 4);
    mt_to_f32(Wr, W16, MT_BF16, N * K);
    mt_mm_fwd(&tiles, out, N, inp, K, mt_w(W16, MT_BF16), M, N, K, 1.0f, 0.0f);
    ref_fwd(ref, inp, Wr, M, N, K);
    CHECK(max_rel(out, ref, M * N) < 1e-5, "tiled bf16 forward matches (%.2g)",
          max_rel(out, ref, M * N));
    transpose(Wt, Wr, N, K);
    mt_mm_bwd_in(&tiles, dinp, K, dout, N, mt_w(W16, MT_BF16), M, N, K, 1.0f, 0.0f);
    ref_fwd(ref, dout, Wt, M, K, N);
    CHECK(max_rel(dinp, ref, M * K) < 1e-5, "tiled bf16 input gradient matches (%.2g)",
          max_rel(dinp, ref, M * K));
    mt_mm_bwd_w(&tiles, mt_g(dW16, MT_BF16), dout, N, inp, K, M, N, K, 1.0f);
    mt_to_f32(dW, dW16, MT_BF16, N * K);
    ref_fwd(ref, doutT, inpT, N, K, M);
    CHECK(max_rel(dW, ref, N * K) < 8e-3, "tiled bf16 weight gradient matches to bf16 (%.2g)",
          max_rel(dW, ref, N * K));
    free(inp); free(W); free(dout); free(out); free(dinp); free(dW); free(W16); free(dW16);
    free(ref); free(Wt); free(doutT); free(inpT); free(tw); free(tg); free(Wr);
}

/* ---------- finite differences on whole tiny models ---------- */

#define B_ 2
#define T_ 8
#define ROWS 4 /* the most rows a test runs: 2 pairs */
static int32_t inputs[ROWS * T_], targets[ROWS * T_];

static void make_tokens(int V)
{
    mt_rng r;
    mt_rng_seed(&r, 99);
    for (int i = 0; i < ROWS * T_; i++) {
        inputs[i] = (int32_t)mt_rng_below(&r, (uint32_t)V);
        targets[i] = (int32_t)mt_rng_below(&r, (uint32_t)V);
    }
}

static void tiny(mt_config *c, mt_family fam)
{
    mt_config_default(c);
    c->shape.family = fam;
    c->shape.layers = 2;
    c->shape.hidden = 16;
    c->shape.heads = 4;
    c->shape.kv_heads = fam == MT_LLAMA ? 2 : 0;
    c->shape.ffn = fam == MT_LLAMA ? 24 : 0;
    c->shape.vocab = 64;
    c->s.seq = T_;
    c->s.batch = B_;
    c->shape.max_pos = 12;
    c->own.init_std = 0.2f; /* larger weights: larger, better-conditioned gradients */
}

static float loss_of(mt_model *m)
{
    float loss = 0;
    if (mt_model_forward(m, inputs, targets, 0.0f, &loss) != 0)
        return NAN;
    mt_model_release(m);
    return loss;
}

/* Accessors so the same checker works for base tensors and LoRA. */
typedef struct acc {
    mt_model *m;
    int t;      /* a parameter tensor, or -1: LoRA parameters from `off` */
    size_t off;
} acc;
static float a_get(acc *a, size_t i)
{
    return a->t < 0 ? mt_model_lora_get(a->m, a->off + i) : mt_model_param_get(a->m, a->t, i);
}
static void a_set(acc *a, size_t i, float v)
{
    if (a->t < 0)
        mt_model_lora_set(a->m, a->off + i, v);
    else
        mt_model_param_set(a->m, a->t, i, v);
}
static float a_grad(acc *a, size_t i)
{
    return a->t < 0 ? mt_model_lora_grad_get(a->m, a->off + i) : mt_model_grad_get(a->m, a->t, i);
}

/* Compare analytic and numerical gradients on a few elements of a tensor: the
 * three largest analytic gradients and three random ones. */
static void fd_check(acc *a, size_t n, const char *what)
{
    size_t idx[6] = {0};
    float best[3] = {-1, -1, -1};
    for (size_t i = 0; i < n; i++) {
        float g = fabsf(a_grad(a, i));
        for (int k = 0; k < 3; k++) {
            if (g > best[k]) {
                for (int j = 2; j > k; j--) {
                    best[j] = best[j - 1];
                    idx[j] = idx[j - 1];
                }
                best[k] = g;
                idx[k] = i;
                break;
            }
        }
    }
    mt_rng r;
    mt_rng_seed(&r, n);
    for (int k = 3; k < 6; k++)
        idx[k] = mt_rng_below(&r, (uint32_t)n);
    float gmax = best[0];
    double worst = 0;
    for (int k = 0; k < 6; k++) {
        size_t i = idx[k];
        float w0 = a_get(a, i), h = 1e-2f;
        a_set(a, i, w0 + h);
        float lp = loss_of(a->m);
        a_set(a, i, w0 - h);
        float lm = loss_of(a->m);
        a_set(a, i, w0);
        double num = ((double)lp - lm) / (2.0 * h), ana = a_grad(a, i);
        /* relative to the tensor's largest gradient: float losses carry ~1e-7 noise */
        double err = fabs(num - ana) / fmax(fabs(ana) + fabs(num), 0.05 * gmax + 1e-4);
        worst = fmax(worst, err);
    }
    CHECK(worst < 0.03, "%s: analytic vs finite-difference gradient, worst rel. error %.2g", what,
          worst);
}

static mt_model *grad_model(mt_config *c)
{
    char err[MT_ERR_LEN];
    if (mt_config_finish(c, err) != 0) {
        CHECK(0, "config: %s", err);
        return NULL;
    }
    mt_model *m;
    if (mt_model_create(c, &m) != 0) {
        CHECK(0, "create: %s", mt_last_error());
        return NULL;
    }
    make_tokens(c->shape.vocab);
    return m;
}

static void backward_once(mt_model *m)
{
    float loss;
    mt_model_zero_grad(m);
    int rc = mt_model_forward(m, inputs, targets, 1.0f, &loss);
    rc |= mt_model_backward(m);
    CHECK(rc == 0 && isfinite(loss), "forward+backward run (loss %.4f)", loss);
}

static void check_tensors(mt_model *m, const int *ts, int nt, const char *label)
{
    for (int k = 0; k < nt; k++) {
        mt_param_info info;
        mt_model_param_info(m, ts[k], &info);
        acc a = {m, ts[k], 0};
        char what[96];
        snprintf(what, sizeof what, "%s %s", label, info.name);
        fd_check(&a, mt_model_param_count(m, ts[k]), what);
    }
}

/* Every parameter tensor of the family against finite differences with eager
 * attention and the full loss; a few, through each kernel, with the others. */
static void test_family(mt_family fam, mp_attention attn, mp_ce ce, int chunk, int tile,
                        const char *label)
{
    static const int gpt2_all[] = {MT_P_WTE,  MT_P_WPE,  MT_P_LN1W,  MT_P_LN1B,  MT_P_WQKV, MT_P_BQKV,
                                   MT_P_WO,   MT_P_BO,   MT_P_LN2W,  MT_P_LN2B,  MT_P_WFC,  MT_P_BFC,
                                   MT_P_WPROJ, MT_P_BPROJ, MT_P_LNFW, MT_P_LNFB};
    static const int gpt2_some[] = {MT_P_WTE, MT_P_WQKV, MT_P_LN1W};
    static const int llama_all[] = {MT_P_WTE, MT_P_LN1W, MT_P_WQKV, MT_P_WO,  MT_P_LN2W,
                                    MT_P_WFC, MT_P_WPROJ, MT_P_LNFW, MT_P_HEAD};
    mt_config c;
    tiny(&c, fam);
    c.s.attention = attn;
    c.s.ce = ce;
    c.s.ce_chunk = chunk;
    c.s.attn_tile = tile;
    mt_model *m = grad_model(&c);
    if (!m)
        return;
    backward_once(m);
    if (fam == MT_LLAMA)
        check_tensors(m, llama_all, (int)(sizeof llama_all / sizeof llama_all[0]), label);
    else if (attn == MP_ATTN_EAGER && ce == MP_CE_FULL)
        check_tensors(m, gpt2_all, (int)(sizeof gpt2_all / sizeof gpt2_all[0]), label);
    else
        check_tensors(m, gpt2_some, (int)(sizeof gpt2_some / sizeof gpt2_some[0]), label);
    mt_model_free(m);
}

static void test_lora(mt_family fam, const char *label)
{
    mt_config c;
    tiny(&c, fam);
    c.s.lora_rank = 2;
    c.s.lora_targets = MP_LORA_ALL;
    c.own.lora_alpha = 4.0f;
    mt_model *m = grad_model(&c);
    if (!m)
        return;
    /* B starts at zero (then dA == 0); give it values so both are exercised */
    mt_rng r;
    mt_rng_seed(&r, 5);
    const mt_lora_layout *lo = mt_model_lora(m);
    size_t per = lo->per_layer;
    for (size_t l = 0; l < (size_t)c.shape.layers; l++)
        for (int k = 0; k < lo->n; k++)
            for (size_t i = 0; i < lo->mods[k].out * lo->r; i++)
                mt_model_lora_set(m, l * per + lo->mods[k].b_off + i, 0.3f * mt_rng_normal(&r));
    backward_once(m);
    CHECK(mt_model_grad_get(m, MT_P_WQKV, 0) == 0.0f, "%s: the base has no gradient", label);
    /* check A and B of every module of layer 0 separately */
    for (int k = 0; k < lo->n; k++) {
        const mt_lora_mod *md = &lo->mods[k];
        for (int part = 0; part < 2; part++) {
            size_t off = part ? md->b_off : md->a_off;
            size_t cnt = part ? md->out * lo->r : lo->r * md->in;
            char what[96];
            snprintf(what, sizeof what, "%s lora %s.%s", label, md->name, part ? "B" : "A");
            acc a = {m, -1, off};
            fd_check(&a, cnt, what);
        }
    }
    mt_model_free(m);
}

/* ---------- the preference losses ---------- */

/* The policy moved away from its reference: every base parameter (or the LoRA
 * adapters, whose B starts at zero) nudged by noise, so the log-ratios differ
 * from zero and the losses sit off their symmetric points. */
static void perturb(mt_model *m, bool lora)
{
    mt_rng r;
    mt_rng_seed(&r, 17);
    if (lora) {
        for (size_t i = 0; i < mt_model_lora_count(m); i++)
            mt_model_lora_set(m, i, mt_model_lora_get(m, i) + 0.3f * mt_rng_normal(&r));
        return;
    }
    for (int t = 0; t < MT_NPARAM; t++)
        for (size_t i = 0; i < mt_model_param_count(m, t); i++)
            mt_model_param_set(m, t, i, mt_model_param_get(m, t, i) + 0.05f * mt_rng_normal(&r));
}

/* One method's gradients against finite differences of its loss, 2 pairs (4 rows). */
static void test_pairwise(mp_method method, mt_family fam, int lora, mp_ce ce, float beta, const char *label)
{
    static const int some[] = {MT_P_WTE, MT_P_WQKV, MT_P_LN1W, MT_P_LNFW, MT_P_HEAD};
    mt_config c;
    tiny(&c, fam);
    c.s.method = method;
    c.s.batch = ROWS / 2;
    c.s.ce = ce;
    c.s.ce_chunk = 5;
    c.s.lora_rank = lora;
    c.s.lora_targets = MP_LORA_ALL;
    c.own.beta = beta;
    mt_model *m = grad_model(&c);
    if (!m)
        return;
    if (mp_method_desc_of(method)->reference) {
        /* the log-ratios are zero: dpo's -logsigmoid(0), ipo's (0 - 1/(2 beta))^2 */
        double want = method == MP_METHOD_DPO ? log(2.0) : 1.0 / (4.0 * beta * beta), l0 = loss_of(m);
        CHECK(fabs(l0 - want) < 1e-6 * want, "%s: the policy is its reference before training: loss %.7f (want %.7f)",
              label, l0, want);
    }
    bool score = mp_method_desc_of(method)->score_head;
    if (score) {
        /* the score head: C weights, no bias; at zero every score is 0 and the loss
         * is -logsigmoid(0) = log 2 whatever the rest of the model */
        size_t C = (size_t)c.shape.hidden;
        CHECK(mt_model_param_count(m, MT_P_HEAD) == C, "%s: the score head has %zu weights (hidden %zu)", label,
              mt_model_param_count(m, MT_P_HEAD), C);
        for (size_t i = 0; i < C; i++)
            mt_model_param_set(m, MT_P_HEAD, i, 0.0f);
        perturb(m, false);
        for (size_t i = 0; i < C; i++)
            mt_model_param_set(m, MT_P_HEAD, i, 0.0f);
        double l0 = loss_of(m);
        CHECK(fabs(l0 - log(2.0)) < 1e-7, "%s: a zero score head scores every row 0: loss %.8f (log 2)", label, l0);
    }
    perturb(m, lora > 0);
    backward_once(m);
    if (!lora) {
        /* the head: the vocabulary head is checked by test_family; the score head here */
        check_tensors(m, some, (int)(sizeof some / sizeof some[0]) - (score ? 0 : 1), label);
    } else {
        const mt_lora_layout *lo = mt_model_lora(m);
        for (int part = 0; part < 2; part++) {
            const mt_lora_mod *md = &lo->mods[0];
            char what[96];
            snprintf(what, sizeof what, "%s lora %s.%s", label, md->name, part ? "B" : "A");
            acc a = {m, -1, part ? md->b_off : md->a_off};
            fd_check(&a, part ? md->out * lo->r : lo->r * md->in, what);
        }
    }
    mt_model_free(m);
}

int main(void)
{
    test_matmul();
    test_family(MT_GPT2, MP_ATTN_EAGER, MP_CE_FULL, 64, 64,
                "gpt2 (embedding, positions, layernorm, eager attention, gelu, ce full):");
    test_family(MT_GPT2, MP_ATTN_FLASH, MP_CE_CHUNKED, 5, 3, "gpt2 flash (tile 3) + chunked ce (5):");
    test_family(MT_LLAMA, MP_ATTN_EAGER, MP_CE_FULL, 64, 64,
                "llama (rmsnorm, rotary, GQA eager, swiglu, untied head):");
    test_family(MT_LLAMA, MP_ATTN_FLASH, MP_CE_CHUNKED, 7, 3, "llama flash GQA (tile 3) + chunked ce (7):");
    test_lora(MT_LLAMA, "llama lora (q,k,v,o,gate,up,down)");
    test_lora(MT_GPT2, "gpt2 lora (fused qkv, o, up, down)");
    test_pairwise(MP_METHOD_DPO, MT_GPT2, 0, MP_CE_FULL, 0.5f, "dpo, reference model, ce full");
    test_pairwise(MP_METHOD_DPO, MT_LLAMA, 0, MP_CE_CHUNKED, 0.1f, "dpo, reference model, llama, ce chunked (5)");
    test_pairwise(MP_METHOD_DPO, MT_LLAMA, 2, MP_CE_FULL, 0.5f, "dpo, reference adapter");
    test_pairwise(MP_METHOD_IPO, MT_GPT2, 0, MP_CE_FULL, 0.1f, "ipo, reference model");
    test_pairwise(MP_METHOD_SIMPO, MT_GPT2, 0, MP_CE_FULL, 2.0f, "simpo");
    test_pairwise(MP_METHOD_CPO, MT_GPT2, 0, MP_CE_CHUNKED, 0.1f, "cpo, ce chunked (5)");
    test_pairwise(MP_METHOD_ORPO, MT_LLAMA, 0, MP_CE_FULL, 0.1f, "orpo");
    test_pairwise(MP_METHOD_REWARD, MT_GPT2, 0, MP_CE_FULL, 0.1f, "reward, gpt2 (score head untied)");
    test_pairwise(MP_METHOD_REWARD, MT_LLAMA, 0, MP_CE_CHUNKED, 0.1f, "reward, llama (ce chunked: ignored)");
    return check_summary();
}

/*
 * test_trainer_techniques.c — every memory-saving technique against the fp32
 * baseline: checkpointing (bit-identical), gradient accumulation, chunked
 * cross-entropy, flash attention, mixed precision, 8-bit AdamW, LoRA and
 * QLoRA; plus the loss falling on the built-in corpus and checkpoint resume.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "check.h"
#include "config.h"
#include "model.h"
#include "quant.h"
#include "rng.h"
#include "train.h"
#include "model/model.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"

static char err[MT_ERR_LEN];

static void small(mt_config *c, mt_family fam)
{
    mt_config_default(c);
    c->shape.family = fam;
    c->shape.layers = 2;
    c->shape.hidden = 32;
    c->shape.heads = 4;
    c->shape.kv_heads = fam == MT_LLAMA ? 2 : 0;
    c->shape.vocab = 256;
    c->s.seq = 16;
    c->s.batch = 4;
    c->shape.max_pos = 32;
    c->own.init_std = 0.1f;
}

static mt_model *make(mt_config *c)
{
    if (mt_config_finish(c, err) != 0) {
        CHECK(0, "config: %s", err);
        return NULL;
    }
    mt_model *m;
    if (mt_model_create(c, &m) != 0) {
        CHECK(0, "create: %s", mt_last_error());
        return NULL;
    }
    return m;
}

static int32_t toks[4096], tgts[4096];
static void make_tokens(int V, size_t n)
{
    mt_rng r;
    mt_rng_seed(&r, 42);
    for (size_t i = 0; i < n; i++) {
        toks[i] = (int32_t)mt_rng_below(&r, (uint32_t)V);
        tgts[i] = (int32_t)mt_rng_below(&r, (uint32_t)V);
    }
}

/* Forward + backward on the first B*T tokens (offset `off`) with dscale. */
static float fb(mt_model *m, size_t off, float dscale)
{
    float loss = NAN;
    if (mt_model_forward(m, toks + off, tgts + off, dscale, &loss) != 0 ||
        mt_model_backward(m) != 0)
        return NAN;
    return loss;
}

/* Largest |a-b| / max|b| over the trainable gradients of two models. */
static double grad_diff(mt_model *a, mt_model *b)
{
    mt_group ga, gb;
    mt_model_trainable(a, &ga);
    mt_model_trainable(b, &gb);
    if (ga.n != gb.n)
        return INFINITY;
    double mx = 0, scale = 1e-30;
    for (size_t i = 0; i < ga.n; i++) {
        double x = mt_load1(ga.grad, ga.dt, i), y = mt_load1(gb.grad, gb.dt, i);
        mx = fmax(mx, fabs(x - y));
        scale = fmax(scale, fabs(y));
    }
    return mx / scale;
}

static bool grads_identical(mt_model *a, mt_model *b)
{
    mt_group ga, gb;
    mt_model_trainable(a, &ga);
    mt_model_trainable(b, &gb);
    return ga.n == gb.n && memcmp(ga.grad, gb.grad, ga.n * mt_dtype_size(ga.dt)) == 0;
}

/* ---------- checkpointing: bit-identical ---------- */

static void test_ckpt(mt_family fam, mp_attention attn, mp_precision prec, const char *label)
{
    mt_model *m[3] = {NULL, NULL, NULL};
    float loss[3];
    for (int k = 0; k < 3; k++) {
        mt_config c;
        small(&c, fam);
        c.s.attention = attn;
        c.s.precision = prec;
        c.s.checkpointing = (mp_ckpt)k;
        if (fam == MT_LLAMA) { /* LoRA inside recomputation too */
            c.s.lora_rank = k == 0 ? 0 : 0;
        }
        m[k] = make(&c);
        if (!m[k])
            return;
        make_tokens(c.shape.vocab, 64);
        loss[k] = fb(m[k], 0, 1.0f);
        /* a second micro-batch accumulates into the same gradients */
        fb(m[k], 0, 1.0f);
    }
    CHECK(memcmp(&loss[0], &loss[1], 4) == 0 && grads_identical(m[0], m[1]),
          "%s: selective checkpointing is bit-identical (loss %.6f)", label, loss[1]);
    CHECK(memcmp(&loss[0], &loss[2], 4) == 0 && grads_identical(m[0], m[2]),
          "%s: full checkpointing is bit-identical (loss %.6f)", label, loss[2]);
    for (int k = 0; k < 3; k++)
        mt_model_free(m[k]);
}

static void test_ckpt_lora(void)
{
    mt_model *m[2];
    float loss[2];
    for (int k = 0; k < 2; k++) {
        mt_config c;
        small(&c, MT_LLAMA);
        c.s.lora_rank = 4;
        c.s.lora_targets = MP_LORA_ALL;
        c.s.checkpointing = k ? MP_CKPT_FULL : MP_CKPT_NONE;
        m[k] = make(&c);
        if (!m[k])
            return;
        for (size_t i = 0; i < mt_model_lora_count(m[k]); i++) /* non-zero B */
            mt_model_lora_set(m[k], i, 0.01f * (float)((i * 37) % 11) - 0.05f);
        loss[k] = fb(m[k], 0, 1.0f);
    }
    CHECK(memcmp(&loss[0], &loss[1], 4) == 0 && grads_identical(m[0], m[1]),
          "llama LoRA: full checkpointing is bit-identical");
    mt_model_free(m[0]);
    mt_model_free(m[1]);
}

/* ---------- accumulation ---------- */

static void test_accum(void)
{
    mt_config c1, c2;
    small(&c1, MT_GPT2);
    small(&c2, MT_GPT2);
    c1.s.batch = 4;
    c2.s.batch = 2;
    mt_model *one = make(&c1), *two = make(&c2);
    if (!one || !two)
        return;
    make_tokens(256, 64);
    float l1 = fb(one, 0, 1.0f);
    float la = fb(two, 0, 0.5f), lb = fb(two, 32, 0.5f);
    double gd = grad_diff(two, one);
    CHECK(fabs(0.5 * (la + lb) - l1) < 1e-5 * fabs(l1),
          "accumulation: mean of 2 micro-batch losses %.6f == batch-of-4 loss %.6f",
          0.5 * (la + lb), l1);
    CHECK(gd < 1e-5, "accumulation: 2 x B=2 gradients equal one B=4 batch (max rel. diff %.2g)",
          gd);
    mt_model_free(one);
    mt_model_free(two);

    /* the same through the trainer: memory loader, consecutive windows */
    mt_config t1, t2;
    small(&t1, MT_GPT2);
    small(&t2, MT_GPT2);
    t1.s.batch = 4;
    t2.s.batch = 2;
    t2.s.accum = 2;
    t1.s.optimizer = t2.s.optimizer = MP_SGD;
    t1.own.opt.lr = t2.own.opt.lr = 0.1f;
    mt_trainer *a, *b;
    if (mt_config_finish(&t1, err) || mt_config_finish(&t2, err) ||
        mt_trainer_create(&t1, &a, err) || mt_trainer_create(&t2, &b, err)) {
        CHECK(0, "trainer: %s", err);
        return;
    }
    mt_step_result ra, rb;
    double worst = 0;
    for (int s = 0; s < 3; s++) {
        mt_trainer_step(a, &ra, err);
        mt_trainer_step(b, &rb, err);
        worst = fmax(worst, fabs(ra.loss - rb.loss) / ra.loss);
    }
    CHECK(worst < 1e-5, "trainer: accum=2 x B=2 follows B=4 over 3 SGD steps (rel. diff %.2g)",
          worst);
    mt_trainer_free(a);
    mt_trainer_free(b);
}

/* ---------- chunked cross-entropy, flash attention ---------- */

static void pair_check(mt_config *base, void (*mod)(mt_config *), double tol, const char *label)
{
    mt_config c2 = *base;
    mod(&c2);
    mt_model *a = make(base), *b = make(&c2);
    if (!a || !b)
        return;
    make_tokens(base->shape.vocab, 64);
    float la = fb(a, 0, 1.0f), lb = fb(b, 0, 1.0f);
    double gd = grad_diff(b, a);
    CHECK(fabs(la - lb) <= tol * fabs(la) && gd <= tol,
          "%s: loss %.7f vs %.7f, gradients max rel. diff %.2g", label, lb, la, gd);
    mt_model_free(a);
    mt_model_free(b);
}

static void mod_chunked(mt_config *c)
{
    c->s.ce = MP_CE_CHUNKED;
    c->s.ce_chunk = 23; /* does not divide N = 64 */
}
static void mod_flash(mt_config *c)
{
    c->s.attention = MP_ATTN_FLASH;
    c->s.attn_tile = 5; /* partial and diagonal tiles */
}

/* ---------- training runs ---------- */

static int run_steps(mt_config *c, int steps, float *first, float *last)
{
    mt_trainer *t;
    if (mt_config_finish(c, err) != 0 || mt_trainer_create(c, &t, err) != 0)
        return -1;
    mt_step_result r;
    double tail = 0;
    for (int s = 0; s < steps; s++) {
        if (mt_trainer_step(t, &r, err) != 0) {
            mt_trainer_free(t);
            return -1;
        }
        if (s == 0)
            *first = r.loss;
        if (s >= steps - 5)
            tail += r.loss;
    }
    *last = (float)(tail / 5);
    long skipped = r.skipped_total;
    mt_trainer_free(t);
    return (int)skipped;
}

static void trainer_cfg(mt_config *c)
{
    small(c, MT_GPT2);
    c->shape.layers = 2;
    c->shape.hidden = 64;
    c->s.seq = 32;
    c->s.batch = 4;
    c->shape.max_pos = 32;
    c->own.opt.lr = 3e-3f;
    c->own.init_std = 0.02f;
}

static void test_precisions_and_optimizers(void)
{
    const int steps = 40;
    mt_config c;
    float f0, f32, l;
    trainer_cfg(&c);
    if (run_steps(&c, steps, &f0, &f32) < 0) {
        CHECK(0, "fp32 run: %s", err);
        return;
    }
    CHECK(f32 < f0 - 1.0f, "fp32 AdamW: loss %.3f -> %.3f in %d steps", f0, f32, steps);

    trainer_cfg(&c);
    c.s.precision = MP_MIXED_BF16;
    int sk = run_steps(&c, steps, &f0, &l);
    CHECK(sk >= 0 && fabsf(l - f32) < 0.05f * f32,
          "mixed-bf16 AdamW: loss %.3f after %d steps, fp32 %.3f", l, steps, f32);

    trainer_cfg(&c);
    c.s.precision = MP_MIXED_FP16;
    sk = run_steps(&c, steps, &f0, &l);
    CHECK(sk >= 0 && fabsf(l - f32) < 0.05f * f32,
          "mixed-fp16 with loss scaling: loss %.3f, fp32 %.3f (%d steps skipped)", l, f32, sk);

    trainer_cfg(&c);
    c.s.optimizer = MP_ADAMW_8BIT;
    sk = run_steps(&c, steps, &f0, &l);
    CHECK(sk >= 0 && fabsf(l - f32) < 0.05f * f32,
          "8-bit AdamW (block 256): loss %.3f after %d steps, fp32 AdamW %.3f", l, steps, f32);

    trainer_cfg(&c);
    c.s.optimizer = MP_ADAMW_8BIT;
    c.s.adam8_block = 64;
    c.s.precision = MP_MIXED_BF16;
    sk = run_steps(&c, steps, &f0, &l);
    CHECK(sk >= 0 && fabsf(l - f32) < 0.06f * f32,
          "8-bit AdamW (block 64) + mixed-bf16: loss %.3f, fp32 AdamW %.3f", l, f32);

    trainer_cfg(&c);
    c.s.optimizer = MP_SGD_MOMENTUM;
    c.own.opt.lr = 0.3f;
    sk = run_steps(&c, steps, &f0, &l);
    CHECK(sk >= 0 && l < f0 - 0.5f, "SGD with momentum: loss %.3f -> %.3f", f0, l);

    trainer_cfg(&c);
    c.s.optimizer = MP_SGD;
    c.own.opt.lr = 0.5f;
    sk = run_steps(&c, steps, &f0, &l);
    CHECK(sk >= 0 && l < f0 - 0.3f, "plain SGD: loss %.3f -> %.3f", f0, l);
}

static void test_fp16_overflow_skips(void)
{
    /* An absurd initial scale overflows fp16 gradients: steps are skipped and
     * the scale halves until it fits. */
    mt_config c;
    trainer_cfg(&c);
    c.s.precision = MP_MIXED_FP16;
    c.own.loss_scale = 4194304.0f; /* 2^22 */
    mt_trainer *t;
    if (mt_config_finish(&c, err) || mt_trainer_create(&c, &t, err)) {
        CHECK(0, "fp16 trainer: %s", err);
        return;
    }
    mt_step_result r;
    int skipped = 0;
    float scale = 0;
    for (int s = 0; s < 12; s++) {
        mt_trainer_step(t, &r, err);
        skipped += r.skipped;
        scale = r.loss_scale;
    }
    CHECK(skipped >= 1 && r.skipped_total == skipped && !r.skipped && scale < c.own.loss_scale,
          "fp16: %d overflowing steps skipped, scale down to %g, training resumed", skipped,
          scale);
    mt_trainer_free(t);
}

static void test_loss_falls(void)
{
    mt_config c;
    mt_config_default(&c);
    c.shape.layers = 4;
    c.shape.hidden = 64;
    c.shape.heads = 4;
    c.s.seq = 64;
    c.s.batch = 4;
    c.own.opt.lr = 2e-3f;
    float first, last;
    if (run_steps(&c, 100, &first, &last) < 0) {
        CHECK(0, "run: %s", err);
        return;
    }
    CHECK(last < 2.6f && last < first - 2.5f,
          "built-in corpus, 4 layers x 64 wide, 100 steps: loss %.3f -> %.3f", first, last);
}

/* ---------- LoRA / QLoRA ---------- */

static void test_lora(mt_family fam, mp_precision prec)
{
    mt_config cb, cl;
    small(&cb, fam);
    cb.s.precision = prec;
    cl = cb;
    cl.s.lora_rank = 4;
    cl.s.lora_targets = MP_LORA_ALL;
    mt_model *base = make(&cb), *lora = make(&cl);
    if (!base || !lora)
        return;
    make_tokens(256, 64);
    float lb, ll;
    mt_model_forward(base, toks, tgts, 0.0f, &lb);
    mt_model_release(base);
    mt_model_forward(lora, toks, tgts, 0.0f, &ll);
    mt_model_release(lora);
    CHECK(memcmp(&lb, &ll, 4) == 0, "%s %s LoRA with B = 0: loss %.7f is exactly the base's %.7f",
          mt_family_name(fam), mp_precision_name(prec), ll, lb);
    mt_group g;
    mt_model_trainable(lora, &g);
    CHECK(g.n == mt_model_lora_count(lora) && mt_model_ntrainable(lora) < mt_model_nparams(lora),
          "%s LoRA trains only the adapters (%zu of %zu parameters)", mt_family_name(fam), g.n,
          mt_model_nparams(lora));
    mt_model_free(base);
    mt_model_free(lora);
}

static void test_qlora(bool dq)
{
    mt_config cb, cq;
    small(&cb, MT_LLAMA);
    cq = cb;
    cq.s.lora_rank = 4;
    cq.s.lora_targets = MP_LORA_ALL;
    cq.s.quant = dq ? MP_QUANT_NF4_DQ : MP_QUANT_NF4;
    mt_model *base = make(&cb), *q = make(&cq);
    if (!base || !q)
        return;
    /* dequantised base weights are close to the originals */
    double se = 0, ss = 0;
    size_t n = mt_model_param_count(base, MT_P_WQKV);
    for (size_t i = 0; i < n; i++) {
        double a = mt_model_param_get(base, MT_P_WQKV, i), b = mt_model_param_get(q, MT_P_WQKV, i);
        se += (a - b) * (a - b);
        ss += a * a;
    }
    double rel = sqrt(se / ss);
    CHECK(rel < 0.12, "QLoRA %s: NF4 weights within %.3f relative RMS of the originals",
          dq ? "nf4-dq" : "nf4", rel);
    make_tokens(256, 64);
    float lb, lq;
    mt_model_forward(base, toks, tgts, 0.0f, &lb);
    mt_model_release(base);
    mt_model_forward(q, toks, tgts, 0.0f, &lq);
    mt_model_release(q);
    CHECK(fabsf(lb - lq) < 0.01f * lb, "QLoRA %s: step-0 loss %.5f close to the base's %.5f",
          dq ? "nf4-dq" : "nf4", lq, lb);
    mt_model_free(base);
    mt_model_free(q);

    /* and it trains */
    mt_config c;
    trainer_cfg(&c);
    c.shape.family = MT_LLAMA;
    c.shape.kv_heads = 2;
    c.s.lora_rank = 8;
    c.s.lora_targets = MP_LORA_ALL;
    c.s.quant = cq.s.quant;
    c.s.precision = MP_MIXED_BF16;
    c.own.opt.lr = 1e-2f;
    c.own.init_std = 0.1f;
    float f0, f1;
    int sk = run_steps(&c, 30, &f0, &f1);
    CHECK(sk >= 0 && f1 < f0 - 0.3f, "QLoRA %s + mixed-bf16 trains: loss %.3f -> %.3f",
          dq ? "nf4-dq" : "nf4", f0, f1);
}

static void test_nf4(void)
{
    size_t n = 64 * 300 + 17;
    float *w = malloc(n * 4), *out = malloc(n * 4);
    mt_rng r;
    mt_rng_seed(&r, 3);
    for (size_t i = 0; i < n; i++)
        w[i] = mt_rng_normal(&r);
    for (int dq = 0; dq < 2; dq++) {
        mt_nf4 q;
        if (mt_nf4_init(&q, n, dq) != 0 || mt_nf4_quantize(&q, w) != 0) {
            CHECK(0, "nf4: %s", mt_last_error());
            break;
        }
        mt_nf4_dequantize(&q, out, MT_F32);
        double se = 0, ss = 0, amax_err = 0;
        for (size_t i = 0; i < n; i++) {
            se += (w[i] - out[i]) * (w[i] - out[i]);
            ss += w[i] * w[i];
        }
        for (size_t j = 0; j < q.nblocks; j++) {
            float a = 0;
            for (size_t i = j * 64; i < n && i < (j + 1) * 64; i++)
                a = fmaxf(a, fabsf(w[i]));
            amax_err = fmax(amax_err, fabs(mt_nf4_block_absmax(&q, j) - a) / a);
        }
        CHECK(sqrt(se / ss) < 0.12 && amax_err < (dq ? 0.01 : 1e-7),
              "nf4%s round trip: relative RMS error %.3f, block absmax error %.2g",
              dq ? " with double quantisation" : "", sqrt(se / ss), amax_err);
        CHECK(mt_nf4_bytes(n, dq) ==
                  (n + 1) / 2 + (dq ? q.nblocks + ((q.nblocks + 255) / 256 + 1) * 4 : q.nblocks * 4),
              "nf4%s storage: %zu bytes for %zu weights (%.3f bits each)", dq ? "-dq" : "",
              mt_nf4_bytes(n, dq), n, 8.0 * mt_nf4_bytes(n, dq) / n);
        mt_nf4_free(&q);
    }
    free(w);
    free(out);
}

/* ---------- checkpoint resume ---------- */

static void test_resume(mp_loader loader, mp_optimizer opt, mp_precision prec)
{
    mt_config c;
    trainer_cfg(&c);
    c.s.loader = loader;
    c.s.shuffle_buffer = 8;
    c.s.optimizer = opt;
    c.s.precision = prec;
    mt_trainer *a, *b;
    if (mt_config_finish(&c, err) || mt_trainer_create(&c, &a, err) ||
        mt_trainer_create(&c, &b, err)) {
        CHECK(0, "resume: %s", err);
        return;
    }
    mt_step_result r;
    for (int s = 0; s < 3; s++)
        mt_trainer_step(a, &r, err);
    size_t n = mt_trainer_state_size(a);
    void *buf = malloc(n);
    int rc = mt_trainer_state_save(a, buf, n, err);
    float la[3], lb[3];
    for (int s = 0; s < 3; s++) {
        mt_trainer_step(a, &r, err);
        la[s] = r.loss;
    }
    rc |= mt_trainer_state_load(b, buf, n, err);
    for (int s = 0; s < 3; s++) {
        mt_trainer_step(b, &r, err);
        lb[s] = r.loss;
    }
    CHECK(rc == 0 && memcmp(la, lb, sizeof la) == 0 && mt_trainer_steps(b) == 6,
          "resume (%s loader, %s, %s): 3 steps after loading a %zu-byte state are bit-identical",
          mp_loader_name(loader), mp_optimizer_name(opt), mp_precision_name(prec), n);
    ((unsigned char *)buf)[9] ^= 1; /* corrupt the fingerprint */
    CHECK(mt_trainer_state_load(b, buf, n, err) != 0, "a state from another configuration is refused: %s",
          err);
    free(buf);
    mt_trainer_free(a);
    mt_trainer_free(b);
}

int main(void)
{
    test_ckpt(MT_GPT2, MP_ATTN_EAGER, MP_FP32, "gpt2 eager fp32");
    test_ckpt(MT_GPT2, MP_ATTN_FLASH, MP_FP32, "gpt2 flash fp32");
    test_ckpt(MT_LLAMA, MP_ATTN_EAGER, MP_FP32, "llama GQA eager fp32");
    test_ckpt(MT_LLAMA, MP_ATTN_FLASH, MP_MIXED_BF16, "llama GQA flash mixed-bf16");
    test_ckpt(MT_GPT2, MP_ATTN_EAGER, MP_MIXED_FP16, "gpt2 eager mixed-fp16");
    test_ckpt_lora();
    test_accum();
    {
        mt_config c;
        small(&c, MT_GPT2);
        pair_check(&c, mod_chunked, 2e-6, "gpt2 chunked cross-entropy (chunk 23) == full");
        small(&c, MT_LLAMA);
        pair_check(&c, mod_chunked, 2e-6, "llama chunked cross-entropy (chunk 23) == full");
        small(&c, MT_GPT2);
        pair_check(&c, mod_flash, 2e-5, "gpt2 flash attention (tile 5) == eager");
        small(&c, MT_LLAMA);
        pair_check(&c, mod_flash, 2e-5, "llama GQA flash attention (tile 5) == eager");
    }
    test_lora(MT_GPT2, MP_FP32);
    test_lora(MT_LLAMA, MP_FP32);
    test_lora(MT_LLAMA, MP_MIXED_BF16);
    test_nf4();
    test_qlora(false);
    test_qlora(true);
    test_precisions_and_optimizers();
    test_fp16_overflow_skips();
    test_loss_falls();
    test_resume(MP_LOAD_MEMORY, MP_ADAMW, MP_FP32);
    test_resume(MP_LOAD_STREAM, MP_ADAMW_8BIT, MP_MIXED_FP16);
    test_resume(MP_LOAD_STREAM, MP_SGD_MOMENTUM, MP_MIXED_BF16);
    return check_summary();
}

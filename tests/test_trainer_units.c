/*
 * test_trainer_units.c — memtrain's small parts: 16-bit conversions, the loss
 * scaler, the 8-bit optimizer code maps, optimizer updates against a scalar
 * reference, the tokenizer, the built-in corpus and both data loaders.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "check.h"
#include "config.h"
#include "data.h"
#include "optim.h"
#include "precision.h"
#include "rng.h"
#include "simd.h"
#include "model/model.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"

static void test_conversions(void)
{
    /* bf16: round to nearest even on the 16 dropped bits */
    CHECK(mt_f32_to_bf16(1.0f) == 0x3f80 && mt_bf16_to_f32(0x3f80) == 1.0f, "bf16 1.0");
    CHECK(mt_f32_to_bf16(mt_bits_f32(0x3f808000)) == 0x3f80 &&
              mt_f32_to_bf16(mt_bits_f32(0x3f818000)) == 0x3f82 &&
              mt_f32_to_bf16(mt_bits_f32(0x3f808001)) == 0x3f81,
          "bf16 ties go to even, above a tie rounds up");
    CHECK(mt_f32_to_bf16(INFINITY) == 0x7f80 && (mt_f32_to_bf16(NAN) & 0x7fc0) == 0x7fc0 &&
              mt_f32_to_bf16(3.4028235e38f) == 0x7f80,
          "bf16 inf, NaN stays NaN, FLT_MAX rounds to inf");
    /* fp16 */
    CHECK(mt_f32_to_f16(1.0f) == 0x3c00 && mt_f16_to_f32(0x3c00) == 1.0f &&
              mt_f32_to_f16(-2.5f) == 0xc100 && mt_f16_to_f32(0x7bff) == 65504.0f,
          "fp16 1.0, -2.5, max 65504");
    CHECK(mt_f32_to_f16(65519.0f) == 0x7bff && mt_f32_to_f16(65520.0f) == 0x7c00 &&
              mt_f32_to_f16(1e6f) == 0x7c00 && (mt_f32_to_f16(NAN) & 0x7c00) == 0x7c00 &&
              (mt_f32_to_f16(NAN) & 0x3ff) != 0,
          "fp16 overflow to inf at 65520, NaN");
    CHECK(mt_f32_to_f16(1.0f + 1.0f / 2048) == 0x3c00 &&
              mt_f32_to_f16(1.0f + 3.0f / 2048) == 0x3c02,
          "fp16 ties to even");
    CHECK(mt_f32_to_f16(5.9604645e-8f) == 0x0001 && mt_f32_to_f16(2.9802322e-8f) == 0 &&
              mt_f32_to_f16(4.4703484e-8f) == 0x0001 && mt_f16_to_f32(0x0001) == 5.9604645e-8f &&
              mt_f16_to_f32(0x03ff) == 6.0975552e-5f && mt_f32_to_f16(6.0975552e-5f) == 0x03ff,
          "fp16 subnormals (2^-24 smallest, ties to even at 2^-25)");
    /* every fp16 value survives f16 -> f32 -> f16 */
    int bad = 0;
    for (unsigned h = 0; h < 65536; h++) {
        float f = mt_f16_to_f32((uint16_t)h);
        if (f == f && mt_f32_to_f16(f) != h)
            bad++;
    }
    CHECK(bad == 0, "all 63488 finite and infinite fp16 values round-trip (%d bad)", bad);
    float x[5] = {1.0f, 1.0f + 1.0f / 256, 70000.0f, -3.14159f, 1e-9f}, y[5];
    memcpy(y, x, sizeof x);
    mt_round_f32(y, MT_BF16, 5);
    CHECK(y[0] == 1.0f && y[1] == 1.0f && fabsf(y[3] + 3.140625f) < 1e-6f,
          "rounding in place to bf16 precision");
    memcpy(y, x, sizeof x);
    mt_round_f32(y, MT_F16, 5);
    CHECK(isinf(y[2]) && y[4] == 0.0f, "rounding in place to fp16: 70000 -> inf, 1e-9 -> 0");
    /* bulk (vectorised) conversions agree with the scalar ones on random bits */
    enum { NB = 4099 };
    static float src[NB], rnd[NB];
    static uint16_t bulk[NB];
    mt_rng r;
    mt_rng_seed(&r, 8);
    for (int i = 0; i < NB; i++) {
        uint32_t u = (uint32_t)mt_rng_u64(&r);
        if (i % 7 == 0)
            u |= 0x7f800000u; /* inf and NaN patterns */
        if (i % 11 == 0)
            u = (u & 0x80000000u) | ((u & 0xffffu) << 8) | 0x7fffu; /* near-ties */
        src[i] = rnd[i] = mt_bits_f32(u);
    }
    mt_from_f32(bulk, MT_BF16, src, NB);
    mt_round_f32(rnd, MT_BF16, NB);
    int mism = 0;
    for (int i = 0; i < NB; i++)
        mism += bulk[i] != mt_f32_to_bf16(src[i]) ||
                mt_f32_bits(rnd[i]) != ((uint32_t)mt_f32_to_bf16(src[i]) << 16);
    CHECK(mism == 0, "vectorised bf16 conversion and rounding match the scalar code (%d mismatches)",
          mism);
    /* the same for fp16, with values spread over its whole range */
    for (int i = 0; i < NB; i++) {
        uint32_t u = (uint32_t)mt_rng_u64(&r);
        u = (u & 0x807fffffu) | ((uint32_t)(96 + (i * 37) % 64) << 23); /* 2^-31 .. 2^32 */
        if (i % 13 == 0)
            u |= 0x7f800000u;
        if (i % 17 == 0)
            u = (u & 0x80000000u) | ((uint32_t)(102 + i % 40) << 23) | 0x1000u; /* ties */
        src[i] = rnd[i] = mt_bits_f32(u);
    }
    mt_from_f32(bulk, MT_F16, src, NB);
    mt_round_f32(rnd, MT_F16, NB);
    mism = 0;
    for (int i = 0; i < NB; i++) {
        uint16_t want = mt_f32_to_f16(src[i]);
        float back = mt_f16_to_f32(want);
        mism += bulk[i] != want ||
                (back == back ? mt_f32_bits(rnd[i]) != mt_f32_bits(back) : rnd[i] == rnd[i]);
    }
    static uint16_t all[65536];
    static float wide[65536];
    for (int i = 0; i < 65536; i++)
        all[i] = (uint16_t)i;
    mt_to_f32(wide, all, MT_F16, 65536);
    for (int i = 0; i < 65536; i++) {
        float w = mt_f16_to_f32((uint16_t)i);
        mism += w == w ? mt_f32_bits(wide[i]) != mt_f32_bits(w) : wide[i] == wide[i];
    }
    CHECK(mism == 0, "vectorised fp16 conversions match the scalar code (%d mismatches)", mism);
    uint16_t g[3] = {0x3c00, 0x3c00, 0x7c00};
    CHECK(!mt_all_finite(g, MT_F16, 3) && mt_all_finite(g, MT_F16, 2), "inf detection in fp16");
}

static void test_scaler(void)
{
    mt_scaler s;
    mt_scaler_init(&s, true, 65536.0f, 3);
    bool skip = mt_scaler_update(&s, false);
    CHECK(skip && s.scale == 32768.0f && s.skipped == 1, "inf gradients: skip, halve the scale");
    mt_scaler_update(&s, true);
    mt_scaler_update(&s, true);
    CHECK(s.scale == 32768.0f, "not yet doubled after 2 good steps (window 3)");
    mt_scaler_update(&s, true);
    CHECK(s.scale == 65536.0f && s.good_steps == 0, "doubled after 3 good steps");
    mt_scaler_init(&s, false, 65536.0f, 2000);
    CHECK(s.scale == 1.0f && !mt_scaler_update(&s, false), "disabled (bf16, fp32): scale 1, never skips");
}

static void test_exp(void)
{
    double worst = 0;
    for (float x = -80.0f; x < 80.0f; x += 0.01234f) {
        double e = exp((double)x), got = mt_expf(x);
        worst = fmax(worst, fabs(got - e) / e);
    }
    CHECK(worst < 5e-7, "vector exp: max relative error %.2g on [-80, 80]", worst);
    CHECK(isnan(mt_expf(NAN)) && mt_expf(-1e30f) < 1e-37f && isfinite(mt_expf(1e30f)),
          "vector exp: NaN propagates, clamps at the ends");
}

static void test_q8_maps(void)
{
    int mono = 1, round = 1, near = 1;
    for (int c = 1; c < 255; c++)
        mono &= mt_q8_signed_value((uint8_t)c) > mt_q8_signed_value((uint8_t)(c - 1));
    for (int c = 1; c < 256; c++)
        mono &= mt_q8_unsigned_value((uint8_t)c) > mt_q8_unsigned_value((uint8_t)(c - 1));
    for (int c = 0; c < 255; c++)
        round &= mt_q8_signed_code(mt_q8_signed_value((uint8_t)c)) == c;
    for (int c = 0; c < 256; c++)
        round &= mt_q8_unsigned_code(mt_q8_unsigned_value((uint8_t)c)) == c;
    mt_rng r;
    mt_rng_seed(&r, 11);
    for (int i = 0; i < 20000; i++) {
        float x = powf(10.0f, -8.0f * mt_rng_uniform(&r));
        uint8_t c = mt_q8_unsigned_code(x);
        float d = fabsf(mt_q8_unsigned_value(c) - x);
        for (int k = 0; k < 256; k++)
            if (fabsf(mt_q8_unsigned_value((uint8_t)k) - x) < d)
                near = 0;
        float xs = (mt_rng_u64(&r) & 1) ? -x : x;
        uint8_t cs = mt_q8_signed_code(xs);
        float ds = fabsf(mt_q8_signed_value(cs) - xs);
        for (int k = 0; k < 255; k++)
            if (fabsf(mt_q8_signed_value((uint8_t)k) - xs) < ds)
                near = 0;
    }
    CHECK(mono && round, "8-bit maps: strictly increasing, every code decodes and re-encodes to itself");
    CHECK(near, "8-bit maps: encoding picks the nearest code (20000 values over 8 decades)");
    CHECK(mt_q8_signed_value(127) == 0.0f && mt_q8_signed_value(254) == 1.0f &&
              mt_q8_unsigned_value(255) == 1.0f && mt_q8_unsigned_value(1) < 2e-7f,
          "8-bit maps: exact 0 and 1; unsigned reaches down to 1e-7 (%.3g)",
          mt_q8_unsigned_value(1));
}

/* AdamW / SGD steps against a direct scalar transcription. */
static void test_optimizers(void)
{
    size_t n = 1003;
    float *w = malloc(n * 4), *g = malloc(n * 4), *wr = malloc(n * 4), *mr = calloc(n, 4),
          *vr = calloc(n, 4), *gcopy = malloc(n * 4);
    mt_rng r;
    mt_rng_seed(&r, 1);
    for (size_t i = 0; i < n; i++)
        w[i] = wr[i] = mt_rng_normal(&r);
    mt_seg segs[2] = {{0, 500, true}, {500, n - 500, false}};
    mt_opt_hparams hp = {1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.9f};
    /* the optimizer, its block and its state's element are the planner's settings */
    mp_settings adamw, adamw8, sgdm;
    mp_settings_default(&adamw, NULL);
    adamw8 = sgdm = adamw;
    adamw8.optimizer = MP_ADAMW_8BIT, adamw8.adam8_block = 256, sgdm.optimizer = MP_SGD_MOMENTUM;
    mt_optim o;
    mt_optim_init(&o, &adamw, &hp, n, segs, 2);
    double worst = 0;
    for (int step = 1; step <= 3; step++) {
        for (size_t i = 0; i < n; i++)
            g[i] = gcopy[i] = mt_rng_normal(&r) * 4.0f; /* scaled by 4, unscaled by 1/4 */
        mt_optim_step(&o, w, g, MT_F32, 0.25f, NULL, MT_F32, true);
        for (size_t i = 0; i < n; i++) {
            double gi = gcopy[i] * 0.25;
            mr[i] = (float)(0.9 * mr[i] + 0.1 * gi);
            vr[i] = (float)(0.95 * vr[i] + 0.05 * gi * gi);
            double mh = mr[i] / (1 - pow(0.9, step)), vh = vr[i] / (1 - pow(0.95, step));
            double wd = i < 500 ? 0.1 : 0.0;
            wr[i] = (float)(wr[i] * (1 - 1e-2 * wd) - 1e-2 * mh / (sqrt(vh) + 1e-8));
        }
        for (size_t i = 0; i < n; i++)
            worst = fmax(worst, fabs(w[i] - wr[i]));
    }
    int zeroed = 1;
    for (size_t i = 0; i < n; i++)
        zeroed &= g[i] == 0.0f;
    CHECK(worst < 1e-5 && zeroed,
          "AdamW (fused, vectorised, decay on matrices only) matches the formula (%.2g); grads zeroed",
          worst);
    mt_optim_free(&o);

    /* 8-bit AdamW follows fp32 AdamW closely on a smooth problem */
    float *w8 = malloc(n * 4);
    for (size_t i = 0; i < n; i++)
        w[i] = w8[i] = mt_rng_normal(&r);
    mt_optim a, b;
    mt_optim_init(&a, &adamw, &hp, n, segs, 2);
    mt_optim_init(&b, &adamw8, &hp, n, segs, 2);
    for (int step = 0; step < 50; step++) {
        for (size_t i = 0; i < n; i++)
            g[i] = w[i] - 0.5f; /* gradient of 0.5 (w - 0.5)^2 */
        mt_optim_step(&a, w, g, MT_F32, 1.0f, NULL, MT_F32, true);
        for (size_t i = 0; i < n; i++)
            g[i] = w8[i] - 0.5f;
        mt_optim_step(&b, w8, g, MT_F32, 1.0f, NULL, MT_F32, true);
    }
    double diff = 0, f32 = 0, f8 = 0, f0 = 0;
    for (size_t i = 0; i < n; i++) {
        diff += fabs(w[i] - w8[i]);
        f32 += 0.5 * (w[i] - 0.5) * (w[i] - 0.5);
        f8 += 0.5 * (w8[i] - 0.5) * (w8[i] - 0.5);
        f0 += 0.5 * (gcopy[i] - 0.5) * (gcopy[i] - 0.5);
    }
    CHECK(fabs(f8 - f32) < 0.05 * f32 && diff / n < 0.05,
          "8-bit AdamW tracks fp32 AdamW over 50 steps: objective %.4g vs %.4g, mean |dw| %.2g",
          f8, f32, diff / n);
    CHECK(mt_optim_state_bytes(&adamw8, n) == 2 * n + 2 * 4 * 4,
          "8-bit AdamW state: 2 bytes per parameter + 8 bytes per block of 256");
    mt_optim_free(&a);
    mt_optim_free(&b);

    /* SGD with momentum, 16-bit gradients and weights with a master copy */
    uint16_t g16[4], w16[4];
    float m32[4] = {1, 2, 3, 4};
    float gv[4] = {0.5f, -0.5f, 1.0f, 0.0f};
    mt_from_f32(g16, MT_BF16, gv, 4);
    mt_seg one = {0, 4, false};
    hp.lr = 0.1f;
    mt_optim_init(&o, &sgdm, &hp, 4, &one, 1);
    mt_optim_step(&o, m32, g16, MT_BF16, 1.0f, w16, MT_BF16, true);
    mt_from_f32(g16, MT_BF16, gv, 4);
    mt_optim_step(&o, m32, g16, MT_BF16, 1.0f, w16, MT_BF16, true);
    /* buf1 = g, buf2 = 0.9 g + g = 1.9 g; w = w0 - 0.1 * 2.9 g */
    CHECK(fabsf(m32[0] - (1 - 0.29f * 0.5f)) < 1e-6f && fabsf(m32[2] - (3 - 0.29f)) < 1e-6f &&
              mt_bf16_to_f32(w16[0]) == mt_bf16_to_f32(mt_f32_to_bf16(m32[0])) && g16[0] == 0,
          "SGD momentum on bf16 gradients updates the fp32 master and its bf16 copy");
    mt_optim_free(&o);
    free(w); free(g); free(wr); free(mr); free(vr); free(gcopy); free(w8);
}

/* ---------- data ---------- */

static void test_corpus_and_tokenizer(void)
{
    char *a = malloc(MT_CORPUS_BYTES), *b = malloc(MT_CORPUS_BYTES);
    mt_corpus_generate(a, MT_CORPUS_BYTES);
    mt_corpus_generate(b, MT_CORPUS_BYTES);
    int printable = 1, sentences = 0;
    for (size_t i = 0; i < MT_CORPUS_BYTES; i++) {
        printable &= (a[i] >= 32 && a[i] < 127) || a[i] == '\n';
        sentences += a[i] == '.';
    }
    CHECK(memcmp(a, b, MT_CORPUS_BYTES) == 0 && printable && sentences > 3000,
          "built-in corpus: %u bytes, deterministic, printable, %d sentences: \"%.60s...\"",
          MT_CORPUS_BYTES, sentences, a);
    uint16_t t[4];
    mt_tokenize((const uint8_t *)"\xffGo!", 4, t);
    CHECK(t[0] == 255 && t[1] == 'G' && t[3] == '!', "byte tokenizer: token = byte value");
    free(a);
    free(b);
}

static void test_loaders(void)
{
    char path[] = "/tmp/memtrain-test-XXXXXX";
    int fd = mkstemp(path);
    size_t len = 200000;
    char *text = malloc(len);
    for (size_t i = 0; i < len; i++)
        text[i] = (char)('a' + (i * 7 + i / 13) % 26);
    CHECK(fd >= 0 && write(fd, text, len) == (ssize_t)len, "temporary data file %s", path);
    close(fd);
    size_t B = 3, T = 50;
    int32_t in[150], tg[150];

    mt_data *d;
    CHECK(mt_data_open(&d, path, MP_LOAD_MEMORY, B, T, 0, 1) == 0, "memory loader opens a file");
    int ok = 1;
    for (int k = 0; k < 3; k++) {
        mt_data_next(d, in, tg);
        for (size_t i = 0; i < B * T; i++)
            ok &= in[i] == (uint8_t)text[k * B * T + i] && tg[i] == (uint8_t)text[k * B * T + i + 1];
    }
    CHECK(ok, "memory loader: consecutive windows, targets shifted by one");
    mt_data_close(d);

    mt_data *s1, *s2;
    CHECK(mt_data_open(&s1, path, MP_LOAD_STREAM, B, T, 16, 7) == 0 &&
              mt_data_open(&s2, path, MP_LOAD_STREAM, B, T, 16, 7) == 0,
          "stream loader opens a file");
    int same = 1, inside = 1;
    for (int k = 0; k < 4000; k++) { /* 4000 batches x 3 x 51 tokens: wraps the file 3 times */
        int32_t in2[150], tg2[150];
        mt_data_next(s1, in, tg);
        mt_data_next(s2, in2, tg2);
        same &= memcmp(in, in2, sizeof in) == 0 && memcmp(tg, tg2, sizeof tg) == 0;
        for (size_t b = 0; b < B; b++) { /* each row is a real window of the file */
            for (size_t t = 0; t + 1 < T; t++)
                inside &= tg[b * T + t] == in[b * T + t + 1];
        }
    }
    CHECK(same && inside, "stream loader: seeded and deterministic; targets are inputs shifted");
    /* resume: state after 10 batches, compare the next 5 */
    size_t n = mt_data_state_size(s1);
    unsigned char *st = malloc(n);
    mt_data_state_save(s1, st);
    int32_t ref[5][150], got[150];
    for (int k = 0; k < 5; k++)
        mt_data_next(s1, ref[k], tg);
    CHECK(mt_data_state_load(s2, st) == 0, "stream loader state loads");
    int resumed = 1;
    for (int k = 0; k < 5; k++) {
        mt_data_next(s2, got, tg);
        resumed &= memcmp(got, ref[k], sizeof got) == 0;
    }
    CHECK(resumed, "stream loader: resumes exactly from a saved state (%zu bytes)", n);
    mt_data_close(s1);
    mt_data_close(s2);
    free(st);

    CHECK(mt_data_open(&d, "/nonexistent/file", MP_LOAD_MEMORY, B, T, 0, 1) != 0 &&
              strstr(mt_last_error(), "cannot open"),
          "a missing file is an error: %s", mt_last_error());
    CHECK(mt_data_open(&d, NULL, MP_LOAD_STREAM, B, T, 4, 1) == 0, "stream loader on the built-in corpus");
    mt_data_next(d, in, tg);
    mt_data_close(d);
    unlink(path);
    free(text);
}

static void test_config(void)
{
    mt_config c;
    char err[MT_ERR_LEN];
    mt_config_default(&c);
    c.shape.family = MT_LLAMA;
    c.shape.hidden = 96;
    c.shape.heads = 6;
    c.shape.kv_heads = 4;
    CHECK(mt_config_finish(&c, err) != 0 && strstr(err, "kv_heads"), "GQA needs NH %% KV == 0: %s", err);
    mt_config_default(&c);
    c.s.quant = MP_QUANT_NF4;
    CHECK(mt_config_finish(&c, err) != 0 && strstr(err, "LoRA"), "NF4 needs LoRA: %s", err);
    mt_config_default(&c);
    c.s.seq = 100;
    c.shape.max_pos = 64;
    CHECK(mt_config_finish(&c, err) != 0, "gpt2 seq beyond max_pos is refused: %s", err);
    mt_config_default(&c);
    c.shape.family = MT_LLAMA;
    c.shape.hidden = 128;
    CHECK(mt_config_finish(&c, err) == 0 && c.shape.ffn == 384 && c.shape.kv_heads == c.shape.heads,
          "llama defaults: F = 8C/3 rounded to 64 (%d), KV = NH", c.shape.ffn);
    unsigned bits;
    CHECK(mp_lora_targets_parse("q,v,down", &bits) == 0 &&
              bits == (MP_LORA_Q | MP_LORA_V | MP_LORA_DOWN) &&
              mp_lora_targets_parse("all", &bits) == 0 && bits == MP_LORA_ALL &&
              mp_lora_targets_parse("q,x", &bits) != 0,
          "LoRA target lists parse");
    mp_precision p;
    mp_optimizer o;
    CHECK(mp_precision_parse("mixed-bf16", &p) == 0 && p == MP_MIXED_BF16 &&
              mp_optimizer_parse("adamw-8bit", &o) == 0 && o == MP_ADAMW_8BIT &&
              !strcmp(mp_precision_name(MP_MIXED_FP16), "mixed-fp16"),
          "names round-trip");
}

int main(void)
{
    test_conversions();
    test_scaler();
    test_exp();
    test_q8_maps();
    test_optimizers();
    test_corpus_and_tokenizer();
    test_loaders();
    test_config();
    return check_summary();
}

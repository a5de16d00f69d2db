/*
 * test_trainer_memory.c — the allocator, and the buffer sizes of memtrain
 * against what the trainer really allocates, byte for byte, over a matrix of
 * configurations. predict() below is the test's own transcription of the
 * sizes, kept apart from planner/memtrain/memtrain_inventory.c (the table the trainer
 * allocates from and memplan predicts with), so that the two are compared.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>

#include "alloc.h"
#include "check.h"
#include "config.h"
#include "train.h"
#include "model/model.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"

static char err[MT_ERR_LEN];

/* ---------- the allocator ---------- */

static void test_alloc(void)
{
    mt_mem_stats s0, s;
    mt_mem_get(&s0);
    mt_mem_reset_peaks();
    char *a = mt_alloc(MT_WEIGHTS, 1000), *b = mt_calloc(MT_ACTIVATIONS, 333);
    mt_mem_get(&s);
    CHECK(a && b && ((uintptr_t)a % 64) == 0 && ((uintptr_t)b % 64) == 0,
          "blocks are 64-byte aligned");
    CHECK(s.cur[MT_WEIGHTS] == s0.cur[MT_WEIGHTS] + 1000 &&
              s.cur[MT_ACTIVATIONS] == s0.cur[MT_ACTIVATIONS] + 333,
          "requested bytes are counted per tag (1000 weights, 333 activations)");
    int zero = 1;
    for (int i = 0; i < 333; i++)
        zero &= b[i] == 0;
    CHECK(zero && mt_alloc_size(b) == 333 && mt_alloc_tag(b) == MT_ACTIVATIONS,
          "calloc zeroes; size and tag are kept in the header");
    mt_free(b);
    char *c = mt_alloc(MT_WORKSPACE, 5000);
    mt_mem_get(&s);
    CHECK(s.total_peak == s0.total + 1333 + 0 || s.total_peak == s0.total + 6000,
          "total peak %zu", s.total_peak - s0.total);
    CHECK(s.total_peak - s0.total == 6000 && s.at_peak[MT_WORKSPACE] - s0.cur[MT_WORKSPACE] == 5000 &&
              s.at_peak[MT_ACTIVATIONS] == s0.cur[MT_ACTIVATIONS],
          "the total peak and each tag's value at that moment");
    CHECK(s.peak[MT_ACTIVATIONS] - s0.cur[MT_ACTIVATIONS] == 333,
          "a tag's own peak survives its free");
    mt_free(a);
    mt_free(c);
    char *d = mt_alloc(MT_DATA, 1000);
    mt_mem_get(&s);
    CHECK(d == a && s.nreuse > s0.nreuse, "a freed block of the same size is reused from the cache");
    mt_free(d);
    mt_clear_error();
    void *huge = mt_alloc(MT_OPTIMIZER, (size_t)1 << 62);
    CHECK(huge == NULL && strstr(mt_last_error(), "test_trainer_memory.c") &&
              strstr(mt_last_error(), "optimizer"),
          "a failed allocation reports where and what: %s", mt_last_error());
    void *ovf = mt_alloc_n(MT_DATA, SIZE_MAX / 2, 4);
    CHECK(ovf == NULL && strstr(mt_last_error(), "overflow"), "size overflow is caught: %s",
          mt_last_error());
    mt_mem_trim();
    mt_mem_get(&s);
    CHECK(s.cached == 0, "trim empties the cache");
    /* RSS first, then the high-water mark: the kernel's per-thread RSS counters
     * are folded in lazily, so allow a few pages of disagreement. */
    double rss = (double)mt_rss_bytes(), hwm = (double)mt_peak_rss_bytes();
    CHECK(rss > 0 && hwm + 256 * 1024 >= rss, "RSS %.1f MiB, high-water mark %.1f MiB", rss / 1048576.0,
          hwm / 1048576.0);
}

/* ---------- the sizes, transcribed independently of the inventory ---------- */

typedef struct pred {
    double persist[MT_NTAGS]; /* persistent bytes per tag */
    double act_dyn;           /* per micro-batch activations at the end of forward */
    double ref_dyn;           /* a reference forward's activations, freed before the policy's forward */
} pred;

static double cdiv(double a, double b) { return ceil(a / b); }

static void predict(const mt_config *c, pred *p)
{
    memset(p, 0, sizeof *p);
    bool gpt2 = c->shape.family == MT_GPT2, mixed = c->s.precision != MP_FP32;
    bool lora = c->s.lora_rank > 0, qlora = c->s.quant != MP_QUANT_NONE, full_ft = !lora;
    /* a reward model: a (1, C) score head, logits N x 1 whatever ce says, no log-sum-exps */
    bool score = c->s.method == MP_METHOD_REWARD;
    bool eager = c->s.attention == MP_ATTN_EAGER, chunked = c->s.ce == MP_CE_CHUNKED && !score;
    bool pairwise = c->s.method != MP_METHOD_SFT, ref_model = c->s.reference == MP_REF_MODEL;
    bool ref_fwd = ref_model || c->s.reference == MP_REF_ADAPTER;
    /* a preference method's batch counts pairs, of 2 rows each */
    double B = c->s.batch * (pairwise ? 2 : 1), T = c->s.seq, N = B * T, C = c->shape.hidden, L = c->shape.layers, NH = c->shape.heads;
    double KV = c->shape.kv_heads, HD = C / NH, F = c->shape.ffn, V = c->shape.vocab, maxpos = c->shape.max_pos;
    double r = c->s.lora_rank, QW = (NH + 2 * KV) * HD, AW = NH * HD, FW = gpt2 ? F : 2 * F;
    double P = mixed ? 2 : 4, A = P;

    double n_lin = QW * C + C * AW + FW * C + C * F;
    double n_vec = gpt2 ? 6 * C + QW + FW : 2 * C, n_fvec = gpt2 ? 2 * C : C;
    double n_base_all = V * C + (gpt2 ? maxpos * C : 0) + L * (n_lin + n_vec) + n_fvec +
                        (score ? C : gpt2 ? 0 : V * C);
    double n_base = n_base_all - (qlora ? L * n_lin : 0);
    double mods = 0;
    unsigned t = c->s.lora_targets;
    if (lora) {
        if (gpt2) {
            if (t & (MP_LORA_Q | MP_LORA_K | MP_LORA_V)) mods += C + 3 * C;
            if (t & MP_LORA_O) mods += C + C;
            if (t & MP_LORA_UP) mods += C + F;
            if (t & MP_LORA_DOWN) mods += F + C;
        } else {
            if (t & MP_LORA_Q) mods += C + NH * HD;
            if (t & MP_LORA_K) mods += C + KV * HD;
            if (t & MP_LORA_V) mods += C + KV * HD;
            if (t & MP_LORA_O) mods += AW + C;
            if (t & MP_LORA_GATE) mods += C + F;
            if (t & MP_LORA_UP) mods += C + F;
            if (t & MP_LORA_DOWN) mods += F + C;
        }
    }
    int nmods = 0;
    if (lora) {
        if (gpt2)
            nmods = !!(t & (MP_LORA_Q | MP_LORA_K | MP_LORA_V)) + !!(t & MP_LORA_O) +
                    !!(t & MP_LORA_UP) + !!(t & MP_LORA_DOWN);
        else
            for (int k = 0; k < 7; k++)
                nmods += !!(t & (1u << k));
    }
    double n_lora = L * r * mods, n_train = full_ft ? n_base : n_lora;

    /* weights, master, gradients, optimizer */
    double nf4 = 0;
    if (qlora) {
        double nb = cdiv(n_lin, 64), ng = cdiv(nb, 256);
        nf4 = cdiv(n_lin, 2) + (c->s.quant == MP_QUANT_NF4_DQ ? nb + 4 * (ng + 1) : 4 * nb);
    }
    p->persist[MT_WEIGHTS] = n_base * P * (ref_model ? 2 : 1) + n_lora * P + L * nf4;
    p->persist[MT_MASTER] = mixed ? 4 * n_train : 0;
    p->persist[MT_GRADIENTS] = P * n_train;
    if (c->s.zero == 2 && full_ft) /* ZeRO-2: one layer's gradients, the others', the fp32 shard (all: one rank) */
        p->persist[MT_GRADIENTS] = P * (n_lin + n_vec) + P * (n_base - L * (n_lin + n_vec)) + 4 * n_train;
    if (c->s.zero >= 3 && full_ft) { /* ZeRO-3 (one rank): the shard (all), two layer slots, the outer weights */
        p->persist[MT_GRADIENTS] = P * (n_lin + n_vec) + P * (n_base - L * (n_lin + n_vec)) + 4 * n_train;
        p->persist[MT_WEIGHTS] = P * n_base + 2 * P * (n_lin + n_vec) + P * (n_base - L * (n_lin + n_vec));
    }
    double n = n_train, blk = c->s.adam8_block;
    switch (c->s.optimizer) {
    case MP_ADAMW: p->persist[MT_OPTIMIZER] = 8 * n; break;
    case MP_ADAMW_8BIT: p->persist[MT_OPTIMIZER] = 2 * n + 8 * cdiv(n, blk); break;
    case MP_SGD_MOMENTUM: p->persist[MT_OPTIMIZER] = 4 * n; break;
    default: break;
    }

    /* workspace */
    double tile = c->s.attn_tile, ws = 0;
    ws += eager ? 4 * T * T * (c->s.checkpointing == MP_CKPT_NONE ? 1 : 2)
                : 4 * (2 * tile * tile + T + 2 * tile);
    ws += 4 * N * (2 * C + QW + AW + FW + F);
    if (lora)
        ws += 4 * N * r;
    if (chunked)
        ws += 4 * fmin(c->s.ce_chunk, N) * V + 4 * N * C;
    if (mixed) {
        ws += 2 * 4 * fmax(fmax(1048576, C), fmax(AW, F));
        ws += 4 * fmax(n_vec, n_fvec) * (full_ft ? 2 : 1);
    }
    if (qlora)
        ws += P * n_lin;
    if (c->s.optimizer == MP_ADAMW_8BIT)
        ws += 8 * blk;
    ws += (ref_fwd ? 4 * B : 0) + (pairwise ? 2 * 4 * B : 0); /* the sums per row, the policy's CE scales */
    p->persist[MT_WORKSPACE] = ws;

    /* activation slots */
    enum { LN1, LN1M, LN1R, QKV, ATT, LSE, ATTY, RES2, LN2, LN2M, LN2R, FCH, FCG, LU, NS };
    double el[NS] = {N * C, gpt2 ? N : 0, N, N * QW, eager ? B * NH * T * T : 0,
                     eager ? 0 : B * NH * T, N * AW, N * C, N * C, gpt2 ? N : 0, N, N * FW,
                     N * F, N * r * nmods};
    bool stat[NS] = {0, 1, 1, 0, 0, 1, 0, 0, 0, 1, 1, 0, 0, 0};
    double scratch = 0, saved_layer = 0;
    for (int s = 0; s < NS; s++) {
        if (!el[s])
            continue;
        bool saved = c->s.checkpointing == MP_CKPT_NONE ||
                     (c->s.checkpointing == MP_CKPT_SELECTIVE && s != ATT);
        bool fp32 = stat[s] || !mixed;
        if (saved)
            saved_layer += el[s] * (stat[s] ? 4 : A);
        if (!(saved && fp32) && !(s == ATT && !saved))
            scratch += 4 * el[s];
        else if (saved && ref_fwd && s != ATT && s != LU) /* the reference computes one layer here */
            p->ref_dyn += 4 * el[s];
    }
    if (ref_fwd) /* fp32: its residual stream in and out; ce full: its logits */
        p->ref_dyn += (mixed ? 0 : 2 * 4 * N * C) + (chunked ? 0 : 4 * N * V);
    if (mixed)
        scratch += 2 * 4 * N * C;
    p->persist[MT_ACTIVATIONS] = scratch;
    p->act_dyn = (L + 1) * A * N * C + L * saved_layer + A * N * C + 4 * N * (gpt2 + 1) +
                 (score ? 4 * N : chunked ? 0 : 4 * N * V + 4 * N);

    /* data */
    double S = c->own.data_path[0] ? 0 : 327680, d = 2 * 4 * N;
    if (c->s.loader == MP_LOAD_MEMORY)
        d += 2 * S;
    else
        d += 65536 + 2 * c->s.shuffle_buffer * (T + 1) + (c->own.data_path[0] ? 0 : S);
    p->persist[MT_DATA] = d;
    /* other: rope tables and pointer tables (+ structs, not predicted) */
    p->persist[MT_OTHER] = (gpt2 ? 0 : 2 * 4 * T * (HD / 2)) + 8 * (L + 1) + 8 * 20 * L +
                           (qlora ? 56 * L : 0);
}

/* ---------- measured vs predicted ---------- */

static int nconf;

static void check_config(mt_config *c, const char *label)
{
    if (mt_config_finish(c, err) != 0) {
        CHECK(0, "%s: %s", label, err);
        return;
    }
    mt_mem_trim();
    mt_mem_stats s0, s;
    mt_mem_get(&s0);
    mt_mem_reset_peaks();
    mt_trainer *t;
    if (mt_trainer_create(c, &t, err) != 0) {
        CHECK(0, "%s: %s", label, err);
        return;
    }
    mt_mem_stats sc;
    mt_mem_get(&sc);
    mt_step_result r;
    size_t allocs[3];
    for (int k = 0; k < 3; k++) {
        mt_mem_stats a, b;
        mt_mem_get(&a);
        if (mt_trainer_step(t, &r, err) != 0) {
            CHECK(0, "%s: %s", label, err);
            mt_trainer_free(t);
            return;
        }
        mt_mem_get(&b);
        allocs[k] = b.nalloc - a.nalloc;
    }
    mt_mem_get(&s);
    pred p;
    predict(c, &p);
    bool ok = true;
    char detail[512] = "";
    size_t used = 0;
    double sum_persist = 0;
    for (int tag = 0; tag < MT_NTAGS; tag++) {
        double cur = (double)(s.cur[tag] - s0.cur[tag]);
        double peak = (double)s.peak[tag] - (double)s0.cur[tag];
        double at = (double)s.at_peak[tag] - (double)s0.cur[tag];
        double want_cur = p.persist[tag], want_peak = want_cur;
        if (tag == MT_ACTIVATIONS)
            want_peak += p.act_dyn;
        bool good;
        if (tag == MT_OTHER) /* structs on top: a few KiB */
            good = cur >= want_cur && cur - want_cur < 16384 && peak == cur;
        else
            good = cur == want_cur && peak == want_peak && at == want_peak;
        if (!good) {
            ok = false;
            used += (size_t)snprintf(detail + used, sizeof detail - used,
                                     " [%s cur %.0f want %.0f, peak %.0f want %.0f, at_peak %.0f]",
                                     mt_tag_name(tag), cur, want_cur, peak, want_peak, at);
            if (used >= sizeof detail)
                used = sizeof detail - 1;
        }
        sum_persist += tag == MT_OTHER ? cur : want_cur;
    }
    double total_peak = (double)s.total_peak - (double)s0.total;
    double want_total = sum_persist + p.act_dyn;
    nconf++;
    CHECK(ok && total_peak == want_total,
          "%s: every tag matches the transcription; total peak %.0f bytes (predicted %.0f)%s", label,
          total_peak, want_total, detail);
    CHECK(allocs[1] == allocs[2] && s.cur[MT_ACTIVATIONS] - s0.cur[MT_ACTIVATIONS] ==
                                        (size_t)p.persist[MT_ACTIVATIONS],
          "%s: %zu allocations per step, every step alike; activations freed after each", label,
          allocs[2]);
    if (p.ref_dyn > 0) { /* the reference's forward alone: its transients, all freed */
        size_t n = (size_t)(2 * c->s.batch * c->s.seq);
        int32_t *tok = calloc(n, sizeof *tok);
        const float *lp;
        mt_mem_reset_peaks();
        mt_mem_get(&s0);
        int rc = tok ? mt_model_reference(mt_trainer_model(t), tok, tok, &lp) : -1;
        mt_mem_get(&s);
        CHECK(rc == 0 && (double)(s.peak[MT_ACTIVATIONS] - s0.cur[MT_ACTIVATIONS]) == p.ref_dyn &&
                  s.cur[MT_ACTIVATIONS] == s0.cur[MT_ACTIVATIONS] && p.ref_dyn < p.act_dyn,
              "%s: the reference's forward allocates %.0f bytes (predicted %.0f), frees them, less than the "
              "policy's %.0f", label, (double)(s.peak[MT_ACTIVATIONS] - s0.cur[MT_ACTIVATIONS]), p.ref_dyn, p.act_dyn);
        free(tok);
    }
    mt_trainer_free(t);
}

static void base(mt_config *c, mt_family fam)
{
    mt_config_default(c);
    c->shape.family = fam;
    c->shape.layers = 2;
    c->shape.hidden = 48;
    c->shape.heads = 4;
    c->shape.kv_heads = fam == MT_LLAMA ? 2 : 0;
    c->shape.vocab = 300;
    c->s.seq = 24;
    c->s.batch = 3;
    c->shape.max_pos = 40;
    c->s.ce_chunk = 20;
    c->s.attn_tile = 16;
    c->s.shuffle_buffer = 7;
}

int main(void)
{
    test_alloc();
    static const mp_precision precs[] = {MP_FP32, MP_MIXED_BF16, MP_MIXED_FP16};
    static const mp_optimizer opts[] = {MP_ADAMW, MP_ADAMW_8BIT, MP_SGD_MOMENTUM, MP_SGD};
    mt_config c;
    char label[160];
    for (int fam = 0; fam < 2; fam++)
        for (int pr = 0; pr < 3; pr++)
            for (int ck = 0; ck < 3; ck++)
                for (int at = 0; at < 2; at++) {
                    base(&c, (mt_family)fam);
                    c.s.precision = precs[pr];
                    c.s.checkpointing = (mp_ckpt)ck;
                    c.s.attention = (mp_attention)at;
                    c.s.ce = (ck + at) % 2 ? MP_CE_CHUNKED : MP_CE_FULL;
                    c.s.optimizer = opts[(pr + ck + at) % 4];
                    c.s.loader = (pr + at) % 2 ? MP_LOAD_STREAM : MP_LOAD_MEMORY;
                    snprintf(label, sizeof label, "%s %s %s-ckpt %s ce-%s %s %s",
                             mt_family_name(c.shape.family), mp_precision_name(c.s.precision),
                             mp_ckpt_name(c.s.checkpointing), mp_attention_name(c.s.attention),
                             mp_ce_name(c.s.ce), mp_optimizer_name(c.s.optimizer),
                             mp_loader_name(c.s.loader));
                    check_config(&c, label);
                }
    /* LoRA and QLoRA */
    base(&c, MT_LLAMA);
    c.s.lora_rank = 4;
    c.s.lora_targets = MP_LORA_Q | MP_LORA_V | MP_LORA_DOWN;
    check_config(&c, "llama lora r=4 q,v,down fp32");
    base(&c, MT_GPT2);
    c.s.lora_rank = 3;
    c.s.lora_targets = MP_LORA_ALL;
    c.s.precision = MP_MIXED_BF16;
    c.s.checkpointing = MP_CKPT_FULL;
    check_config(&c, "gpt2 lora r=3 all (fused qkv) mixed-bf16 full-ckpt");
    base(&c, MT_LLAMA);
    c.s.lora_rank = 8;
    c.s.lora_targets = MP_LORA_ALL;
    c.s.quant = MP_QUANT_NF4;
    c.s.precision = MP_MIXED_BF16;
    check_config(&c, "llama qlora nf4 r=8 all mixed-bf16");
    base(&c, MT_LLAMA);
    c.s.lora_rank = 2;
    c.s.lora_targets = MP_LORA_ATTN;
    c.s.quant = MP_QUANT_NF4_DQ;
    c.s.optimizer = MP_ADAMW_8BIT;
    c.s.adam8_block = 64;
    c.s.checkpointing = MP_CKPT_SELECTIVE;
    c.s.ce = MP_CE_CHUNKED;
    check_config(&c, "llama qlora nf4-dq r=2 attn adamw-8bit(64) selective chunked fp32");
    base(&c, MT_GPT2);
    c.s.accum = 3;
    c.s.optimizer = MP_ADAMW_8BIT;
    c.s.adam8_block = 100;
    check_config(&c, "gpt2 accum=3 adamw-8bit block 100");
    /* ZeRO-2 on one process: the layer slot, the other gradients, the fp32 shard */
    base(&c, MT_GPT2);
    c.s.zero = 2;
    c.s.accum = 2;
    check_config(&c, "gpt2 zero=2 accum=2 fp32");
    base(&c, MT_LLAMA);
    c.s.zero = 2;
    c.s.precision = MP_MIXED_BF16;
    c.s.checkpointing = MP_CKPT_FULL;
    check_config(&c, "llama zero=2 mixed-bf16 full-ckpt");
    base(&c, MT_GPT2);
    c.s.zero = 2;
    c.s.precision = MP_MIXED_FP16;
    c.s.ce = MP_CE_CHUNKED;
    c.s.optimizer = MP_ADAMW_8BIT;
    check_config(&c, "gpt2 zero=2 mixed-fp16 chunked adamw-8bit");
    /* ZeRO-3 on one process: the shard is every parameter (and every master weight), plus the two
     * layer slots and the outer weights */
    base(&c, MT_GPT2);
    c.s.zero = 3;
    c.s.accum = 2;
    check_config(&c, "gpt2 zero=3 accum=2 fp32");
    base(&c, MT_LLAMA);
    c.s.zero = 3;
    c.s.checkpointing = MP_CKPT_FULL;
    c.s.optimizer = MP_SGD_MOMENTUM;
    check_config(&c, "llama zero=3 full-ckpt sgd-momentum fp32");
    base(&c, MT_GPT2);
    c.s.zero = 3;
    c.s.precision = MP_MIXED_FP16;
    c.s.ce = MP_CE_CHUNKED;
    check_config(&c, "gpt2 zero=3 mixed-fp16 chunked");
    /* preference methods: 2 rows a pair; the reference model's copy, the adapter reference */
    static const struct {
        mp_method method;
        mp_reference ref;
        mt_family fam;
        mp_precision prec;
        mp_ckpt ckpt;
        mp_attention attn;
        mp_ce ce;
        int lora;
    } pairs[] = {
        {MP_METHOD_DPO, MP_REF_MODEL, MT_GPT2, MP_FP32, MP_CKPT_NONE, MP_ATTN_EAGER, MP_CE_FULL, 0},
        {MP_METHOD_DPO, MP_REF_MODEL, MT_LLAMA, MP_MIXED_BF16, MP_CKPT_NONE, MP_ATTN_FLASH, MP_CE_CHUNKED, 0},
        {MP_METHOD_IPO, MP_REF_MODEL, MT_GPT2, MP_MIXED_FP16, MP_CKPT_FULL, MP_ATTN_EAGER, MP_CE_FULL, 0},
        {MP_METHOD_DPO, MP_REF_ADAPTER, MT_LLAMA, MP_FP32, MP_CKPT_SELECTIVE, MP_ATTN_EAGER, MP_CE_FULL, 4},
        {MP_METHOD_DPO, MP_REF_ADAPTER, MT_GPT2, MP_MIXED_BF16, MP_CKPT_NONE, MP_ATTN_FLASH, MP_CE_CHUNKED, 2},
        {MP_METHOD_SIMPO, MP_REF_NONE, MT_GPT2, MP_FP32, MP_CKPT_NONE, MP_ATTN_EAGER, MP_CE_FULL, 0},
        {MP_METHOD_CPO, MP_REF_NONE, MT_LLAMA, MP_MIXED_BF16, MP_CKPT_FULL, MP_ATTN_FLASH, MP_CE_CHUNKED, 0},
        {MP_METHOD_ORPO, MP_REF_NONE, MT_LLAMA, MP_FP32, MP_CKPT_NONE, MP_ATTN_EAGER, MP_CE_FULL, 3},
        {MP_METHOD_REWARD, MP_REF_NONE, MT_GPT2, MP_FP32, MP_CKPT_NONE, MP_ATTN_EAGER, MP_CE_FULL, 0},
        {MP_METHOD_REWARD, MP_REF_NONE, MT_LLAMA, MP_MIXED_BF16, MP_CKPT_FULL, MP_ATTN_FLASH, MP_CE_CHUNKED, 0},
        {MP_METHOD_REWARD, MP_REF_NONE, MT_GPT2, MP_MIXED_FP16, MP_CKPT_SELECTIVE, MP_ATTN_EAGER, MP_CE_FULL, 0},
    };
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        base(&c, pairs[i].fam);
        c.s.method = pairs[i].method, c.s.reference = pairs[i].ref, c.s.precision = pairs[i].prec;
        c.s.checkpointing = pairs[i].ckpt, c.s.attention = pairs[i].attn, c.s.ce = pairs[i].ce;
        c.s.lora_rank = pairs[i].lora;
        snprintf(label, sizeof label, "%s reference %s %s %s %s-ckpt %s ce-%s lora %d", mp_method_name(c.s.method),
                 mp_reference_name(c.s.reference), mt_family_name(c.shape.family), mp_precision_name(c.s.precision),
                 mp_ckpt_name(c.s.checkpointing), mp_attention_name(c.s.attention), mp_ce_name(c.s.ce), (int)c.s.lora_rank);
        check_config(&c, label);
    }
    /* a reward model's ZeRO-2 and ZeRO-3 (one rank): the score head is among the outer tensors */
    for (int zero = 2; zero <= 3; zero++) {
        base(&c, MT_LLAMA);
        c.s.method = MP_METHOD_REWARD, c.s.zero = zero, c.s.precision = MP_MIXED_BF16;
        snprintf(label, sizeof label, "reward llama zero=%d mixed-bf16", zero);
        check_config(&c, label);
    }
    CHECK(nconf == 60, "%d configurations checked", nconf);
    return check_summary();
}

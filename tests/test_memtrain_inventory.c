/* test_memtrain_inventory.c — the table of memtrain's buffers
 * (planner/memtrain/memtrain_inventory.c): every row well formed, the LoRA modules the
 * planner's list gives, the checkpointing rules of the slots, and the sums for
 * MEMORY.md's worked example against the figures the trainer measured there.
 * (The allocator against an independent transcription of the sizes is
 * test_trainer_memory.c.) */
#include <string.h>

#include "check.h"
#include "memtrain/memtrain_inventory.h"
#include "model/model.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"

static void test_rows(void)
{
    int bad = 0;
    for (int id = 0; id < MEMTRAIN_NROWS; id++) {
        const memtrain_row *r = &memtrain_rows[id];
        bool ok = r->name && r->tag >= 0 && r->tag < MEMTRAIN_NTAGS && r->copies >= 0 &&
                  r->copies < MEMTRAIN_NQ;
        for (int k = 0; k < 3; k++) ok = ok && r->factors[k] >= 0 && r->factors[k] < MEMTRAIN_NQ;
        for (int j = 0; ok && j < id; j++) ok = strcmp(memtrain_rows[j].name, r->name) != 0;
        if (!ok) {
            bad++;
            printf("     row %d (%s) is malformed or a duplicate\n", id, r->name ? r->name : "?");
        }
    }
    CHECK(bad == 0, "%d rows, each named once, with a tag and its quantities", MEMTRAIN_NROWS);
    bool slots = true;
    for (int id = 0; id < MEMTRAIN_NROWS; id++)
        slots &= (memtrain_rows[id].lifetime == MEMTRAIN_LAYER_SLOT) ==
                 (id >= MEMTRAIN_LN1 && id <= MEMTRAIN_LORA_U);
    CHECK(slots && MEMTRAIN_NSLOTS == 20, "the slot rows are contiguous: %d slots with 7 LoRA u's",
          MEMTRAIN_NSLOTS);
    CHECK(!strcmp(memtrain_tag_name(MEMTRAIN_TAG_WORKSPACE), "workspace") &&
              memtrain_tag_component(MEMTRAIN_TAG_MASTER) == MP_OPTIMIZER &&
              memtrain_tag_component(MEMTRAIN_TAG_OTHER) == MP_OVERHEAD &&
              memtrain_tag_component(MEMTRAIN_TAG_DATA) == -1,
          "tags: names, and master weights as optimizer state, tables as overhead, data as host");
    CHECK(!strcmp(memtrain_tag_name(MEMTRAIN_TAG_COMM), "comm") &&
              memtrain_tag_component(MEMTRAIN_TAG_COMM) == MP_OVERHEAD,
          "communication buffers: their own tag, counted as overhead");
    char f[112];
    memtrain_dims one = {0};
    memtrain_row_formula(&one, MEMTRAIN_RES, f, sizeof f);
    CHECK(!strcmp(f, "(L+1) x N x C x A"), "a row's size as text: %s", f);
    memtrain_row_formula(&one, MEMTRAIN_OPT_M, f, sizeof f);
    CHECK(!strcmp(f, "n_train x 4"), "one process: the optimizer holds n_train: %s", f);
    memtrain_dims zero1 = {.ranks = 4, .zero = 1};
    memtrain_row_formula(&zero1, MEMTRAIN_OPT_M, f, sizeof f);
    CHECK(!strcmp(f, "ceil(n_train/ranks) x 4"), "ZeRO-1: the optimizer holds a shard: %s", f);
}

static void test_linears(void)
{
    mp_linear lin[8];
    int n = memtrain_linears(true, 768, 12, 12, 64, 3072, lin, 8);
    CHECK(n == 4 && !strcmp(lin[0].name, "qkv") && lin[0].in == 768 && lin[0].out == 2304 &&
              lin[0].target == (MP_LORA_Q | MP_LORA_K | MP_LORA_V) && !strcmp(lin[3].name, "down"),
          "gpt2: one fused qkv (768 -> 2304), o, up, down (no gate)");
    n = memtrain_linears(false, 256, 8, 2, 32, 688, lin, 8);
    CHECK(n == 7 && !strcmp(lin[1].name, "k") && lin[1].out == 64 && lin[2].out == 64 &&
              !strcmp(lin[4].name, "gate") && lin[6].in == 688,
          "llama: q, k, v (GQA: 64 wide), o, gate, up, down");
}

static memtrain_dims gpt2_124m(void)
{
    memtrain_dims d = {.gpt2 = true, .L = 12, .C = 768, .NH = 12, .KV = 12, .HD = 64, .F = 3072,
                       .V = 50257, .maxpos = 1024, .B = 4, .T = 64, .precision = MP_FP32,
                       .optimizer = MP_ADAMW, .adam8_block = 256, .attn_tile = 64,
                       .ce_chunk = 1024, .loader = MP_LOAD_MEMORY, .shuffle_buffer = 256};
    memtrain_dims_finish(&d);
    return d;
}

static void tag_sums(const memtrain_dims *d, double *persistent, double *micro_batch)
{
    memset(persistent, 0, MEMTRAIN_NTAGS * sizeof *persistent);
    *micro_batch = 0;
    for (int id = 0; id < MEMTRAIN_NROWS; id++) {
        size_t p, mb;
        memtrain_row_bytes(d, id, &p, &mb);
        persistent[memtrain_rows[id].tag] += (double)p;
        *micro_batch += (double)mb;
    }
}

static void test_worked_example(void)
{
    memtrain_dims d = gpt2_124m();
    double t[MEMTRAIN_NTAGS], mb;
    tag_sums(&d, t, &mb);
    CHECK(d.q[MEMTRAIN_Q_NBASE] == 124439808, "GPT-2 124M: %zu parameters", d.q[MEMTRAIN_Q_NBASE]);
    CHECK(t[MEMTRAIN_TAG_WEIGHTS] == 497759232 && t[MEMTRAIN_TAG_GRADIENTS] == 497759232 &&
              t[MEMTRAIN_TAG_OPTIMIZER] == 995518464 && t[MEMTRAIN_TAG_MASTER] == 0,
          "weights, gradients, AdamW state: %.0f, %.0f, %.0f", t[MEMTRAIN_TAG_WEIGHTS],
          t[MEMTRAIN_TAG_GRADIENTS], t[MEMTRAIN_TAG_OPTIMIZER]);
    CHECK(t[MEMTRAIN_TAG_WORKSPACE] == 11026432 && t[MEMTRAIN_TAG_ACTIVATIONS] == 0 &&
              t[MEMTRAIN_TAG_DATA] == 657408 && t[MEMTRAIN_TAG_OTHER] == 8 * 13 + 8 * 20 * 12,
          "workspace %.0f, no fp32 layer buffers, data %.0f, pointer tables %.0f",
          t[MEMTRAIN_TAG_WORKSPACE], t[MEMTRAIN_TAG_DATA], t[MEMTRAIN_TAG_OTHER]);
    CHECK(mb == 213520384, "per micro-batch at the end of the forward: %.0f bytes", mb);
}

static void test_slots(void)
{
    memtrain_dims d = gpt2_124m();
    d.checkpointing = MP_CKPT_SELECTIVE;
    memtrain_dims_finish(&d);
    bool selective = !memtrain_slot_saved(&d, MEMTRAIN_ATT) && memtrain_slot_saved(&d, MEMTRAIN_QKV) &&
                     !memtrain_slot_buffer(&d, MEMTRAIN_ATT) && !memtrain_slot_buffer(&d, MEMTRAIN_QKV);
    d.checkpointing = MP_CKPT_FULL;
    memtrain_dims_finish(&d);
    bool full = !memtrain_slot_saved(&d, MEMTRAIN_QKV) && memtrain_slot_buffer(&d, MEMTRAIN_QKV) &&
                !memtrain_slot_buffer(&d, MEMTRAIN_ATT) && !memtrain_elems(&d, MEMTRAIN_LSE);
    d.precision = MP_MIXED_BF16, d.checkpointing = MP_CKPT_NONE;
    memtrain_dims_finish(&d);
    bool mixed = memtrain_slot_saved(&d, MEMTRAIN_ATT) && memtrain_slot_buffer(&d, MEMTRAIN_ATT) &&
                 !memtrain_slot_buffer(&d, MEMTRAIN_LN1_RSTD);
    CHECK(selective && full && mixed,
          "slots: selective drops the probabilities only; full saves none and works on fp32 "
          "copies; mixed keeps fp32 copies of the 16-bit slots, not of the fp32 statistics");
}

/* Data parallel: ZeRO-1 partitions the optimizer state over the ranks (the ZeRO
 * paper's P_os, Rajbhandari et al. 2020, eq. for K*Psi/N_d), the heaviest rank
 * holding ceil(n/ranks); 16-bit gradients go through one fp32 bucket of at most
 * 2^20 elements, and the ring all-reduce receives ceil(2^20/ranks) floats per
 * exchange; ZeRO-0 and one process keep everything. */
static void test_data_parallel(void)
{
    memtrain_dims d = gpt2_124m();
    double t[MEMTRAIN_NTAGS], mb;
    d.ranks = 4, d.zero = 1;
    memtrain_dims_finish(&d);
    tag_sums(&d, t, &mb);
    CHECK(t[MEMTRAIN_TAG_OPTIMIZER] == 2.0 * 4 * 31109952 && t[MEMTRAIN_TAG_WEIGHTS] == 497759232 &&
              t[MEMTRAIN_TAG_GRADIENTS] == 497759232 && t[MEMTRAIN_TAG_COMM] == 4.0 * 262144,
          "ZeRO-1 on 4 ranks, fp32: AdamW's m and v of 124439808/4 parameters each (%.0f), no bucket, "
          "the ring's receive chunk of 2^20/4 floats (%.0f)", t[MEMTRAIN_TAG_OPTIMIZER], t[MEMTRAIN_TAG_COMM]);
    d.ranks = 3;
    memtrain_dims_finish(&d);
    tag_sums(&d, t, &mb);
    CHECK(t[MEMTRAIN_TAG_OPTIMIZER] == 2.0 * 4 * 41479936, "3 ranks: the heaviest holds ceil(n/3): %.0f",
          t[MEMTRAIN_TAG_OPTIMIZER]);
    d.precision = MP_MIXED_BF16, d.zero = 0;
    memtrain_dims_finish(&d);
    tag_sums(&d, t, &mb);
    CHECK(t[MEMTRAIN_TAG_COMM] == 4.0 * 1048576 + 4.0 * 349526 && t[MEMTRAIN_TAG_OPTIMIZER] == 2.0 * 4 * 124439808,
          "ZeRO-0, bf16: a 4 MiB fp32 bucket and the ring's receive chunk of ceil(2^20/3) floats (%.0f), "
          "the whole optimizer state", t[MEMTRAIN_TAG_COMM]);
    d.ranks = 1;
    memtrain_dims_finish(&d);
    tag_sums(&d, t, &mb);
    CHECK(t[MEMTRAIN_TAG_COMM] == 0, "one process: no communication buffer");
    /* ZeRO-2: one layer's gradients (12 C^2 + 13 C), the embeddings' and final norm's
     * (V C + maxpos C + 2 C) and the fp32 shard, ceil(n/4), instead of all n */
    d = gpt2_124m();
    d.ranks = 4, d.zero = 2;
    memtrain_dims_finish(&d);
    tag_sums(&d, t, &mb);
    CHECK(t[MEMTRAIN_TAG_GRADIENTS] == 4.0 * (7087872 + 39385344) + 4.0 * 31109952 &&
              t[MEMTRAIN_TAG_OPTIMIZER] == 2.0 * 4 * 31109952 && t[MEMTRAIN_TAG_COMM] == 0,
          "ZeRO-2 on 4 ranks, fp32: gradients %.0f bytes (ZeRO-1: 497759232), no bucket",
          t[MEMTRAIN_TAG_GRADIENTS]);
    d.precision = MP_MIXED_BF16;
    memtrain_dims_finish(&d);
    tag_sums(&d, t, &mb);
    CHECK(t[MEMTRAIN_TAG_GRADIENTS] == 2.0 * (7087872 + 39385344) + 4.0 * 31109952 &&
              t[MEMTRAIN_TAG_COMM] == 4.0 * 262144,
          "ZeRO-2 on 4 ranks, bf16: 16-bit slot and others, fp32 shard (%.0f); a 1 MiB bucket (%.0f)",
          t[MEMTRAIN_TAG_GRADIENTS], t[MEMTRAIN_TAG_COMM]);
    /* ZeRO-3: the parameters' shard, ceil(n/4), two layer slots and the embeddings' and
     * final norm's weights instead of all n; gradients as ZeRO-2 */
    d = gpt2_124m();
    d.ranks = 4, d.zero = 3;
    memtrain_dims_finish(&d);
    tag_sums(&d, t, &mb);
    CHECK(t[MEMTRAIN_TAG_WEIGHTS] == 4.0 * (31109952 + 2 * 7087872 + 39385344) &&
              t[MEMTRAIN_TAG_GRADIENTS] == 4.0 * (7087872 + 39385344) + 4.0 * 31109952 &&
              t[MEMTRAIN_TAG_OPTIMIZER] == 2.0 * 4 * 31109952 && t[MEMTRAIN_TAG_COMM] == 0,
          "ZeRO-3 on 4 ranks, fp32: weights %.0f bytes (ZeRO-2: 497759232)", t[MEMTRAIN_TAG_WEIGHTS]);
    char f[128];
    memtrain_row_formula(&d, MEMTRAIN_PARAM_LAYER, f, sizeof f);
    CHECK(strcmp(f, "(prefetch+1) x n_layer x P") == 0, "params.layer is %s", f);
    memtrain_row_formula(&d, MEMTRAIN_PARAM_SHARD, f, sizeof f);
    CHECK(strcmp(f, "ceil(n_train/ranks) x P") == 0, "params.shard is %s", f);
    d.precision = MP_MIXED_BF16;
    memtrain_dims_finish(&d);
    tag_sums(&d, t, &mb);
    CHECK(t[MEMTRAIN_TAG_WEIGHTS] == 2.0 * (31109952 + 2 * 7087872 + 39385344) &&
              t[MEMTRAIN_TAG_MASTER] == 4.0 * 31109952,
          "ZeRO-3 on 4 ranks, bf16: 16-bit weights %.0f, the master weights' shard %.0f",
          t[MEMTRAIN_TAG_WEIGHTS], t[MEMTRAIN_TAG_MASTER]);
}

int main(void)
{
    test_rows();
    test_linears();
    test_worked_example();
    test_slots();
    test_data_parallel();
    return check_summary();
}

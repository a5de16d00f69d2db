/* memtrain_inventory.c — the table of memtrain's buffers (see memtrain_inventory.h).
 *
 * Adding a buffer to the trainer is adding its row here (with its id in the
 * header's enum) and, for a buffer of the model, the field it lives in
 * (trainer/model_buffers.c binds rows to fields). The prediction, its --explain
 * terms, and the trainer's allocation and freeing follow; the independent
 * transcription in tests/test_trainer_memory.c is what then checks it. */
#include "memtrain/memtrain_inventory.h"
#include "common/errors.h"
#include "model/model.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"

#include <stdio.h>
#include <string.h>

#define IF(c) MEMTRAIN_IF_##c
#define ALWAYS 0u
#define ROW(nm, tag, life, dt, by, when, copies, f0, f1, f2)                                  \
    {nm, MEMTRAIN_TAG_##tag, MEMTRAIN_##life, MEMTRAIN_DT_##dt, MEMTRAIN_BY_##by, when,       \
     MEMTRAIN_Q_##copies, {MEMTRAIN_Q_##f0, MEMTRAIN_Q_##f1, MEMTRAIN_Q_##f2}, false}
/* a layer's activation slot: counted as activations, stored as A or always fp32 */
#define SLOT(nm, dt, when, copies, f0, f1, f2, drops)                                         \
    {nm, MEMTRAIN_TAG_ACTIVATIONS, MEMTRAIN_LAYER_SLOT, MEMTRAIN_DT_##dt, MEMTRAIN_BY_MODEL,  \
     when, MEMTRAIN_Q_##copies, {MEMTRAIN_Q_##f0, MEMTRAIN_Q_##f1, MEMTRAIN_Q_##f2}, drops}

const memtrain_row memtrain_rows[MEMTRAIN_NROWS] = {
    [MEMTRAIN_PARAMS] = ROW("params", WEIGHTS, PERSISTENT, P, MODEL, IF(PARAMS_FULL), 1, NBASE, 1, 1),
    [MEMTRAIN_PARAM_SHARD] = ROW("params.shard", WEIGHTS, PERSISTENT, P, MODEL, IF(ZERO3), 1, SHARD, 1, 1),
    [MEMTRAIN_PARAM_LAYER] = ROW("params.layer", WEIGHTS, PERSISTENT, P, MODEL, IF(ZERO3), 1, WSLOTS, NLAYER, 1),
    [MEMTRAIN_PARAM_OUTER] = ROW("params.outer", WEIGHTS, PERSISTENT, P, MODEL, IF(ZERO3), 1, NOUTER, 1, 1),
    [MEMTRAIN_MASTER] = ROW("master", MASTER, PERSISTENT, F32, MODEL, IF(MIXED) | IF(FULL_FT) | IF(PARAMS_FULL), 1, NBASE, 1, 1),
    [MEMTRAIN_MASTER_SHARD] = ROW("master.shard", MASTER, PERSISTENT, F32, MODEL, IF(MIXED) | IF(ZERO3), 1, SHARD, 1, 1),
    [MEMTRAIN_GRADS] = ROW("grads", GRADIENTS, PERSISTENT, P, MODEL, IF(GRADS_FULL), 1, NBASE, 1, 1),
    [MEMTRAIN_GRAD_LAYER] = ROW("grads.layer", GRADIENTS, PERSISTENT, P, MODEL, IF(ZERO2), 1, NLAYER, 1, 1),
    [MEMTRAIN_GRAD_OUTER] = ROW("grads.outer", GRADIENTS, PERSISTENT, P, MODEL, IF(ZERO2), 1, NOUTER, 1, 1),
    [MEMTRAIN_NF4] = ROW("nf4", OTHER, PERSISTENT, NF4_STORE, MODEL, IF(QLORA), 1, L, 1, 1),
    [MEMTRAIN_NF4_CODES] = ROW("nf4.codes", WEIGHTS, PERSISTENT, NF4, NF4, IF(QLORA), L, NLIN, 1, 1),
    [MEMTRAIN_NF4_ABSMAX] = ROW("nf4.absmax", WEIGHTS, PERSISTENT, F32, NF4, IF(NF4), L, NF4_BLOCKS, 1, 1),
    [MEMTRAIN_NF4_ABSMAX_Q] = ROW("nf4.absmax_q", WEIGHTS, PERSISTENT, U8, NF4, IF(NF4_DQ), L, NF4_BLOCKS, 1, 1),
    [MEMTRAIN_NF4_SCALES] = ROW("nf4.scales", WEIGHTS, PERSISTENT, F32, NF4, IF(NF4_DQ), L, NF4_SCALES, 1, 1),
    [MEMTRAIN_DEQ] = ROW("deq", WORKSPACE, PERSISTENT, P, MODEL, IF(QLORA), 1, NLIN, 1, 1),
    [MEMTRAIN_LW] = ROW("lw", WEIGHTS, PERSISTENT, P, MODEL, IF(LORA), 1, NLORA, 1, 1),
    [MEMTRAIN_LMASTER] = ROW("lmaster", MASTER, PERSISTENT, F32, MODEL, IF(MIXED) | IF(LORA), 1, NLORA, 1, 1),
    [MEMTRAIN_LGRAD] = ROW("lgrad", GRADIENTS, PERSISTENT, P, MODEL, IF(LORA), 1, NLORA, 1, 1),
    [MEMTRAIN_REF_PARAMS] = ROW("ref.params", WEIGHTS, PERSISTENT, P, MODEL, IF(REF_MODEL), 1, NBASE, 1, 1),
    [MEMTRAIN_REF_LOGPS] = ROW("ref.logps", WORKSPACE, PERSISTENT, F32, MODEL, IF(REF_FWD), 1, B, 1, 1),
    [MEMTRAIN_PAIR_LOGPS] = ROW("pair.logps", WORKSPACE, PERSISTENT, F32, MODEL, IF(PAIRWISE), 1, 2, B, 1),

    [MEMTRAIN_TILE_W] = ROW("tiles.w", WORKSPACE, PERSISTENT, F32, MODEL, IF(MIXED), 1, TILE, 1, 1),
    [MEMTRAIN_TILE_G] = ROW("tiles.g", WORKSPACE, PERSISTENT, F32, MODEL, IF(MIXED), 1, TILE, 1, 1),
    [MEMTRAIN_WVEC] = ROW("wvec", WORKSPACE, PERSISTENT, F32, MODEL, IF(MIXED), 1, VEC, 1, 1),
    [MEMTRAIN_GVEC] = ROW("gvec", WORKSPACE, PERSISTENT, F32, MODEL, IF(MIXED) | IF(FULL_FT), 1, VEC, 1, 1),
    [MEMTRAIN_ATTN_WS] = ROW("attn_ws", WORKSPACE, PERSISTENT, F32, MODEL, ALWAYS, 1, ATTN, 1, 1),
    [MEMTRAIN_DRES] = ROW("dres", WORKSPACE, PERSISTENT, F32, MODEL, ALWAYS, 1, N, C, 1),
    [MEMTRAIN_DLN] = ROW("dln", WORKSPACE, PERSISTENT, F32, MODEL, ALWAYS, 1, N, C, 1),
    [MEMTRAIN_DQKV] = ROW("dqkv", WORKSPACE, PERSISTENT, F32, MODEL, ALWAYS, 1, N, QW, 1),
    [MEMTRAIN_DATTY] = ROW("datty", WORKSPACE, PERSISTENT, F32, MODEL, ALWAYS, 1, N, AW, 1),
    [MEMTRAIN_DFCH] = ROW("dfch", WORKSPACE, PERSISTENT, F32, MODEL, ALWAYS, 1, N, FW, 1),
    [MEMTRAIN_DFCG] = ROW("dfcg", WORKSPACE, PERSISTENT, F32, MODEL, ALWAYS, 1, N, F, 1),
    [MEMTRAIN_DU] = ROW("du", WORKSPACE, PERSISTENT, F32, MODEL, IF(LORA), 1, N, R, 1),
    [MEMTRAIN_CE_BUF] = ROW("ce_buf", WORKSPACE, PERSISTENT, F32, MODEL, IF(CE_CHUNKED), 1, CE_ROWS, V, 1),
    [MEMTRAIN_DLNF] = ROW("dlnf", WORKSPACE, PERSISTENT, F32, MODEL, IF(CE_CHUNKED), 1, N, C, 1),

    [MEMTRAIN_LN1] = SLOT("ln1", A, ALWAYS, 1, N, C, 1, false),
    [MEMTRAIN_LN1_MEAN] = SLOT("ln1_mean", F32, IF(GPT2), 1, N, 1, 1, false),
    [MEMTRAIN_LN1_RSTD] = SLOT("ln1_rstd", F32, ALWAYS, 1, N, 1, 1, false),
    [MEMTRAIN_QKV] = SLOT("qkv", A, ALWAYS, 1, N, QW, 1, false),
    [MEMTRAIN_ATT] = SLOT("att", A, IF(EAGER), 1, BNH, T, T, true),
    [MEMTRAIN_LSE] = SLOT("lse", F32, IF(FLASH), 1, BNH, T, 1, false),
    [MEMTRAIN_ATTY] = SLOT("atty", A, ALWAYS, 1, N, AW, 1, false),
    [MEMTRAIN_RES2] = SLOT("res2", A, ALWAYS, 1, N, C, 1, false),
    [MEMTRAIN_LN2] = SLOT("ln2", A, ALWAYS, 1, N, C, 1, false),
    [MEMTRAIN_LN2_MEAN] = SLOT("ln2_mean", F32, IF(GPT2), 1, N, 1, 1, false),
    [MEMTRAIN_LN2_RSTD] = SLOT("ln2_rstd", F32, ALWAYS, 1, N, 1, 1, false),
    [MEMTRAIN_FCH] = SLOT("fch", A, ALWAYS, 1, N, FW, 1, false),
    [MEMTRAIN_FCG] = SLOT("fcg", A, ALWAYS, 1, N, F, 1, false),
    [MEMTRAIN_LORA_U] = SLOT("lora_u", A, IF(LORA), MODULES, N, R, 1, false),

    [MEMTRAIN_X32] = ROW("x32", ACTIVATIONS, PERSISTENT, F32, MODEL, IF(MIXED), 1, N, C, 1),
    [MEMTRAIN_OUT32] = ROW("out32", ACTIVATIONS, PERSISTENT, F32, MODEL, IF(MIXED), 1, N, C, 1),
    [MEMTRAIN_ROPE_COS] = ROW("rope_cos", OTHER, PERSISTENT, F32, MODEL, IF(LLAMA), 1, ROPE, 1, 1),
    [MEMTRAIN_ROPE_SIN] = ROW("rope_sin", OTHER, PERSISTENT, F32, MODEL, IF(LLAMA), 1, ROPE, 1, 1),
    [MEMTRAIN_RES_TABLE] = ROW("res table", OTHER, PERSISTENT, PTR, MODEL, ALWAYS, 1, L1, 1, 1),
    [MEMTRAIN_SAVED_TABLE] = ROW("saved table", OTHER, PERSISTENT, PTR, MODEL, ALWAYS, 1, L, NSLOT, 1),

    [MEMTRAIN_OPT_M] = ROW("opt.m", OPTIMIZER, PERSISTENT, F32, OPTIM, IF(MOMENTUM), 1, SHARD, 1, 1),
    [MEMTRAIN_OPT_V] = ROW("opt.v", OPTIMIZER, PERSISTENT, F32, OPTIM, IF(ADAMW), 1, SHARD, 1, 1),
    [MEMTRAIN_OPT_M8] = ROW("opt.m8", OPTIMIZER, PERSISTENT, U8, OPTIM, IF(ADAMW_8BIT), 1, SHARD, 1, 1),
    [MEMTRAIN_OPT_V8] = ROW("opt.v8", OPTIMIZER, PERSISTENT, U8, OPTIM, IF(ADAMW_8BIT), 1, SHARD, 1, 1),
    [MEMTRAIN_OPT_M_AMAX] = ROW("opt.m_amax", OPTIMIZER, PERSISTENT, F32, OPTIM, IF(ADAMW_8BIT), 1, ADAM8_BLOCKS, 1, 1),
    [MEMTRAIN_OPT_V_AMAX] = ROW("opt.v_amax", OPTIMIZER, PERSISTENT, F32, OPTIM, IF(ADAMW_8BIT), 1, ADAM8_BLOCKS, 1, 1),
    [MEMTRAIN_OPT_SCRATCH] = ROW("opt.scratch", WORKSPACE, PERSISTENT, F32, OPTIM, IF(ADAMW_8BIT), 1, 2, BLOCK, 1),

    [MEMTRAIN_TEXT] = ROW("data.text", DATA, PERSISTENT, U8, DATA, IF(LOAD_STREAM) | IF(BUILTIN_CORPUS), 1, SOURCE, 1, 1),
    [MEMTRAIN_TOK] = ROW("data.tok", DATA, PERSISTENT, U16, DATA, IF(LOAD_MEMORY), 1, SOURCE, 1, 1),
    [MEMTRAIN_READ_CHUNK] = ROW("data.chunk", DATA, PERSISTENT, U8, DATA, IF(LOAD_STREAM), 1, READ, 1, 1),
    [MEMTRAIN_SHUF] = ROW("data.shuf", DATA, PERSISTENT, U16, DATA, IF(LOAD_STREAM), 1, SHUFFLE, T1, 1),
    [MEMTRAIN_INPUTS] = ROW("inputs", DATA, PERSISTENT, I32, TRAINER, ALWAYS, 1, N, 1, 1),
    [MEMTRAIN_TARGETS] = ROW("targets", DATA, PERSISTENT, I32, TRAINER, ALWAYS, 1, N, 1, 1),

    [MEMTRAIN_COMM_BUCKET] = ROW("comm.bucket", COMM, PERSISTENT, F32, DIST, IF(DP) | IF(MIXED), 1, BUCKET, 1, 1),
    [MEMTRAIN_COMM_RECV] = ROW("comm.recv", COMM, PERSISTENT, F32, DIST, IF(ALLREDUCE), 1, RECV, 1, 1),
    [MEMTRAIN_GRAD_SHARD] = ROW("grads.shard", GRADIENTS, PERSISTENT, F32, DIST, IF(ZERO2), 1, SHARD, 1, 1),

    [MEMTRAIN_REF_RES] = ROW("ref.res", ACTIVATIONS, REF_FORWARD, F32, FORWARD, IF(REF_FWD) | IF(FP32), 2, N, C, 1),
    [MEMTRAIN_REF_LOGITS] = ROW("ref.logits", ACTIVATIONS, REF_FORWARD, F32, FORWARD, IF(REF_FWD) | IF(CE_FULL), 1, N, V, 1),
    [MEMTRAIN_RES] = ROW("res", ACTIVATIONS, MICRO_BATCH, A, FORWARD, ALWAYS, L1, N, C, 1),
    [MEMTRAIN_LNF] = ROW("lnf", ACTIVATIONS, MICRO_BATCH, A, FORWARD, ALWAYS, 1, N, C, 1),
    [MEMTRAIN_LNF_MEAN] = ROW("lnf_mean", ACTIVATIONS, MICRO_BATCH, F32, FORWARD, IF(GPT2), 1, N, 1, 1),
    [MEMTRAIN_LNF_RSTD] = ROW("lnf_rstd", ACTIVATIONS, MICRO_BATCH, F32, FORWARD, ALWAYS, 1, N, 1, 1),
    [MEMTRAIN_LOGITS] = ROW("logits", ACTIVATIONS, MICRO_BATCH, F32, FORWARD, IF(CE_FULL), 1, N, HEAD_OUT, 1),
    [MEMTRAIN_CE_LSE] = ROW("ce_lse", ACTIVATIONS, MICRO_BATCH, F32, FORWARD, IF(CE_FULL) | IF(LM_HEAD), 1, N, 1, 1),
};

/* ---------- tags ---------- */

const char *memtrain_tag_name(int tag)
{
    static const char *const names[MEMTRAIN_NTAGS] = {
        "weights", "master", "gradients", "optimizer", "activations", "workspace", "data", "other",
        "comm"};
    return tag >= 0 && tag < MEMTRAIN_NTAGS ? names[tag] : "?";
}

/* Master weights count as optimizer state (as the ZeRO paper counts them);
 * workspaces, small tables and communication buffers are overhead; the data
 * loader is host memory. */
int memtrain_tag_component(int tag)
{
    static const int comp[MEMTRAIN_NTAGS] = {MP_WEIGHTS,     MP_OPTIMIZER, MP_GRADIENTS,
                                             MP_OPTIMIZER,   MP_ACTIVATIONS, MP_OVERHEAD,
                                             -1,             MP_OVERHEAD,
                                             MP_OVERHEAD};
    return tag >= 0 && tag < MEMTRAIN_NTAGS ? comp[tag] : -1;
}

/* ---------- dimensions ---------- */

int memtrain_linears(bool gpt2, size_t C, size_t NH, size_t KV, size_t HD, size_t F,
                     mp_linear *out, int max)
{
    mp_model m;
    char err[MP_ERR_LEN];
    memset(&m, 0, sizeof m);
    mp_model_preset(&m, gpt2 ? "gpt2" : "llama", err);
    m.hidden = (int64_t)C, m.heads = (int64_t)NH, m.kv_heads = (int64_t)KV;
    m.head_dim = (int64_t)HD, m.ffn = (int64_t)F;
    return mp_model_linears(&m, out, max);
}

static unsigned conditions(const memtrain_dims *d)
{
    unsigned h = d->precision != MP_FP32 ? IF(MIXED) : 0;
    h |= d->lora_rank ? IF(LORA) : IF(FULL_FT);
    h |= d->lora_rank ? 0 : d->zero >= 2 ? IF(ZERO2) : IF(GRADS_FULL);
    h |= !d->lora_rank && d->zero >= 3 ? IF(ZERO3) : IF(PARAMS_FULL);
    h |= d->quant == MP_QUANT_NF4 ? IF(QLORA) | IF(NF4) : 0;
    h |= d->quant == MP_QUANT_NF4_DQ ? IF(QLORA) | IF(NF4_DQ) : 0;
    h |= d->attention == MP_ATTN_EAGER ? IF(EAGER) : IF(FLASH);
    /* a score head's logits are N x 1, always whole: nothing to chunk */
    bool score = mp_method_desc_of(d->method)->score_head;
    h |= d->ce == MP_CE_FULL || score ? IF(CE_FULL) : IF(CE_CHUNKED);
    h |= score ? 0 : IF(LM_HEAD);
    h |= d->gpt2 ? IF(GPT2) : IF(LLAMA);
    h |= d->optimizer == MP_ADAMW ? IF(ADAMW) | IF(MOMENTUM) : 0;
    h |= d->optimizer == MP_SGD_MOMENTUM ? IF(MOMENTUM) : 0;
    h |= d->optimizer == MP_ADAMW_8BIT ? IF(ADAMW_8BIT) : 0;
    h |= d->loader == MP_LOAD_MEMORY ? IF(LOAD_MEMORY) : IF(LOAD_STREAM);
    h |= d->source_bytes ? 0 : IF(BUILTIN_CORPUS);
    h |= d->ranks > 1 ? IF(DP) : 0;
    h |= d->ranks > 1 && (d->lora_rank || d->zero < 2) ? IF(ALLREDUCE) : 0;
    h |= d->method != MP_METHOD_SFT ? IF(PAIRWISE) : 0;
    h |= d->reference == MP_REF_MODEL || d->reference == MP_REF_ADAPTER ? IF(REF_FWD) : 0;
    h |= d->reference == MP_REF_MODEL ? IF(REF_MODEL) : 0;
    h |= d->precision == MP_FP32 ? IF(FP32) : 0;
    return h;
}

static size_t max3(size_t a, size_t b, size_t c) { return a > b ? (a > c ? a : c) : (b > c ? b : c); }
static size_t cdiv(size_t a, size_t b) { return (a + b - 1) / b; }

/* The LoRA modules the targets select: their count and sum of (in + out). */
static size_t lora_modules(const memtrain_dims *d, size_t *io)
{
    mp_linear lin[MEMTRAIN_MAX_LORA];
    int n = memtrain_linears(d->gpt2, d->C, d->NH, d->KV, d->HD, d->F, lin, MEMTRAIN_MAX_LORA);
    size_t count = 0;
    *io = 0;
    for (int k = 0; k < n && k < MEMTRAIN_MAX_LORA && d->lora_rank; k++) {
        if (!(lin[k].target & d->lora_targets)) continue;
        count++;
        *io += (size_t)(lin[k].in + lin[k].out);
    }
    return count;
}

/* Parameter counts: n_lin, n_base, n_lora, n_train and what follows from them. */
static void parameter_quantities(memtrain_dims *d)
{
    size_t *q = d->q, C = d->C, L = d->L, QW = q[MEMTRAIN_Q_QW], FW = q[MEMTRAIN_Q_FW];
    size_t n_lin = QW * C + C * q[MEMTRAIN_Q_AW] + FW * C + C * d->F;
    size_t n_vec = d->gpt2 ? 6 * C + QW + FW : 2 * C, n_fvec = d->gpt2 ? 2 * C : C;
    /* the head: llama's own V x C, gpt2's tied to the embedding, a reward model's C x 1 score */
    size_t head = q[MEMTRAIN_Q_HEAD_OUT] == 1 ? C : d->gpt2 ? 0 : d->V * C;
    size_t n_all = d->V * C + (d->gpt2 ? d->maxpos * C : 0) + L * (n_lin + n_vec) + n_fvec + head;
    q[MEMTRAIN_Q_NLIN] = n_lin;
    q[MEMTRAIN_Q_NLAYER] = n_lin + n_vec;
    q[MEMTRAIN_Q_NOUTER] = n_all - L * (n_lin + n_vec);
    q[MEMTRAIN_Q_WSLOTS] = MEMTRAIN_PREFETCH + 1;
    q[MEMTRAIN_Q_NBASE] = n_all - (d->holds & IF(QLORA) ? L * n_lin : 0);
    q[MEMTRAIN_Q_NF4_BLOCKS] = cdiv(n_lin, 64);
    q[MEMTRAIN_Q_NF4_SCALES] = cdiv(q[MEMTRAIN_Q_NF4_BLOCKS], 256) + 1;
    q[MEMTRAIN_Q_MODULES] = lora_modules(d, &d->lora_io);
    q[MEMTRAIN_Q_NLORA] = L * d->lora_rank * d->lora_io;
    q[MEMTRAIN_Q_NTRAIN] = d->lora_rank ? q[MEMTRAIN_Q_NLORA] : q[MEMTRAIN_Q_NBASE];
    size_t ranks = d->ranks > 1 ? d->ranks : 1;
    q[MEMTRAIN_Q_SHARD] = d->zero >= 1 ? cdiv(q[MEMTRAIN_Q_NTRAIN], ranks) : q[MEMTRAIN_Q_NTRAIN];
    size_t bucket = d->holds & IF(ZERO2) ? MEMTRAIN_RS_BUCKET : MEMTRAIN_BUCKET;
    q[MEMTRAIN_Q_BUCKET] = q[MEMTRAIN_Q_NTRAIN] < bucket ? q[MEMTRAIN_Q_NTRAIN] : bucket;
    q[MEMTRAIN_Q_RECV] = cdiv(q[MEMTRAIN_Q_BUCKET], ranks);
    q[MEMTRAIN_Q_ADAM8_BLOCKS] = d->adam8_block ? cdiv(q[MEMTRAIN_Q_SHARD], d->adam8_block) : 0;
    q[MEMTRAIN_Q_VEC] = n_vec > n_fvec ? n_vec : n_fvec;
}

void memtrain_dims_finish(memtrain_dims *d)
{
    size_t *q = d->q, N = d->B * d->T, tile = d->attn_tile;
    d->holds = conditions(d);
    q[MEMTRAIN_Q_1] = 1, q[MEMTRAIN_Q_2] = 2;
    q[MEMTRAIN_Q_B] = d->B, q[MEMTRAIN_Q_T] = d->T, q[MEMTRAIN_Q_T1] = d->T + 1;
    q[MEMTRAIN_Q_N] = N, q[MEMTRAIN_Q_C] = d->C, q[MEMTRAIN_Q_L] = d->L;
    q[MEMTRAIN_Q_L1] = d->L + 1, q[MEMTRAIN_Q_F] = d->F, q[MEMTRAIN_Q_V] = d->V;
    q[MEMTRAIN_Q_QW] = (d->NH + 2 * d->KV) * d->HD, q[MEMTRAIN_Q_AW] = d->NH * d->HD;
    q[MEMTRAIN_Q_FW] = d->gpt2 ? d->F : 2 * d->F;
    q[MEMTRAIN_Q_R] = d->lora_rank, q[MEMTRAIN_Q_BNH] = d->B * d->NH;
    q[MEMTRAIN_Q_ROPE] = d->T * d->HD / 2;
    q[MEMTRAIN_Q_HEAD_OUT] = d->holds & IF(LM_HEAD) ? d->V : 1;
    parameter_quantities(d);
    q[MEMTRAIN_Q_BLOCK] = d->adam8_block;
    q[MEMTRAIN_Q_TILE] = max3((size_t)1 << 20, d->C, q[MEMTRAIN_Q_AW] > d->F ? q[MEMTRAIN_Q_AW] : d->F);
    /* flash: S/P and dP/dS tiles, D (T), running max and sum; eager: dP (T,T), and
     * the recomputed probabilities when they are not saved (checkpointing) */
    q[MEMTRAIN_Q_ATTN] = d->attention == MP_ATTN_FLASH
                             ? 2 * tile * tile + d->T + 2 * tile
                             : d->T * d->T * (d->checkpointing == MP_CKPT_NONE ? 1 : 2);
    q[MEMTRAIN_Q_CE_ROWS] = d->ce_chunk < N ? d->ce_chunk : N;
    q[MEMTRAIN_Q_NSLOT] = MEMTRAIN_NSLOTS;
    q[MEMTRAIN_Q_SOURCE] = d->source_bytes ? d->source_bytes : MEMTRAIN_CORPUS_BYTES;
    q[MEMTRAIN_Q_READ] = MEMTRAIN_READ_BYTES;
    q[MEMTRAIN_Q_SHUFFLE] = d->shuffle_buffer ? d->shuffle_buffer : 1;
}

void memtrain_dims_from(const mp_model *m, const mp_settings *s, memtrain_dims *d)
{
    memset(d, 0, sizeof *d);
    d->gpt2 = m->mlp == MP_MLP_GELU; /* a GELU MLP makes it gpt2-like */
    d->L = (size_t)m->layers, d->C = (size_t)m->hidden, d->NH = (size_t)m->heads;
    d->KV = (size_t)m->kv_heads, d->HD = (size_t)m->head_dim, d->F = (size_t)m->ffn;
    d->V = (size_t)m->vocab, d->maxpos = (size_t)(m->max_pos > 0 ? m->max_pos : s->seq);
    /* a preference method's batch counts pairs: 2 rows each, chosen then rejected */
    d->method = s->method, d->reference = mp_reference_used(s);
    d->B = (size_t)s->batch * (size_t)mp_method_desc_of(s->method)->rows_per_example, d->T = (size_t)s->seq;
    d->precision = s->precision, d->optimizer = s->optimizer;
    d->adam8_block = (size_t)s->adam8_block;
    d->checkpointing = s->checkpointing, d->attention = s->attention, d->attn_tile = (size_t)s->attn_tile;
    d->ce = s->ce, d->ce_chunk = (size_t)s->ce_chunk;
    d->lora_rank = (size_t)s->lora_rank, d->lora_targets = s->lora_targets;
    d->quant = s->quant, d->loader = s->loader, d->shuffle_buffer = (size_t)s->shuffle_buffer;
    d->source_bytes = s->dataset_bytes > 0 ? (size_t)s->dataset_bytes : 0;
    d->ranks = s->gpus > 1 ? (size_t)s->gpus : 1, d->zero = s->zero; /* per rank: the heaviest */
    memtrain_dims_finish(d);
}

/* ---------- sizes ---------- */

size_t memtrain_elems(const memtrain_dims *d, int id)
{
    const memtrain_row *r = &memtrain_rows[id];
    if (r->when & ~d->holds) return 0;
    return d->q[r->factors[0]] * d->q[r->factors[1]] * d->q[r->factors[2]];
}

size_t memtrain_copies(const memtrain_dims *d, int id)
{
    return memtrain_elems(d, id) ? d->q[memtrain_rows[id].copies] : 0;
}

size_t memtrain_alloc_bytes(const memtrain_dims *d, int id)
{
    size_t n = memtrain_elems(d, id), storage = (size_t)mp_element_bytes(d->precision);
    switch (memtrain_rows[id].dtype) {
    case MEMTRAIN_DT_P:
    case MEMTRAIN_DT_A: return n * storage;
    case MEMTRAIN_DT_F32:
    case MEMTRAIN_DT_I32: return 4 * n;
    case MEMTRAIN_DT_U16: return 2 * n;
    case MEMTRAIN_DT_U8: return n;
    case MEMTRAIN_DT_NF4: return (n + 1) / 2;
    case MEMTRAIN_DT_PTR: return 8 * n;
    case MEMTRAIN_DT_NF4_STORE: return 56 * n;
    }
    return 0;
}

bool memtrain_slot_saved(const memtrain_dims *d, int id)
{
    const memtrain_row *r = &memtrain_rows[id];
    if (r->lifetime != MEMTRAIN_LAYER_SLOT || !memtrain_elems(d, id)) return false;
    return d->checkpointing == MP_CKPT_NONE ||
           (d->checkpointing == MP_CKPT_SELECTIVE && !r->selective_drops);
}

bool memtrain_slot_buffer(const memtrain_dims *d, int id)
{
    const memtrain_row *r = &memtrain_rows[id];
    if (r->lifetime != MEMTRAIN_LAYER_SLOT || !memtrain_elems(d, id)) return false;
    bool saved = memtrain_slot_saved(d, id);
    bool fp32 = r->dtype == MEMTRAIN_DT_F32 || d->precision == MP_FP32;
    /* saved in fp32: the layer works on the saved copy; dropped and not saved:
     * recomputed one (batch, head) at a time inside the attention scratch */
    return !(saved && fp32) && !(r->selective_drops && !saved);
}

void memtrain_row_bytes(const memtrain_dims *d, int id, size_t *persistent, size_t *micro_batch)
{
    size_t all = memtrain_copies(d, id) * memtrain_alloc_bytes(d, id);
    *persistent = *micro_batch = 0;
    switch (memtrain_rows[id].lifetime) {
    case MEMTRAIN_PERSISTENT: *persistent = all; break;
    case MEMTRAIN_MICRO_BATCH: *micro_batch = all; break;
    case MEMTRAIN_REF_FORWARD: break; /* never live with the others: memtrain_ref_forward_bytes */
    case MEMTRAIN_LAYER_SLOT:
        if (memtrain_slot_buffer(d, id))
            *persistent = memtrain_copies(d, id) * memtrain_elems(d, id) * 4;
        if (memtrain_slot_saved(d, id)) *micro_batch = d->L * all;
        break;
    }
}

size_t memtrain_ref_forward_bytes(const memtrain_dims *d, int id)
{
    const memtrain_row *r = &memtrain_rows[id];
    if (!(d->holds & IF(REF_FWD))) return 0;
    if (r->lifetime == MEMTRAIN_REF_FORWARD) return memtrain_copies(d, id) * memtrain_alloc_bytes(d, id);
    if (r->lifetime != MEMTRAIN_LAYER_SLOT || id == MEMTRAIN_ATT || id == MEMTRAIN_LORA_U) return 0;
    bool fp32_saved = memtrain_slot_saved(d, id) && !memtrain_slot_buffer(d, id);
    return fp32_saved ? memtrain_copies(d, id) * memtrain_elems(d, id) * 4 : 0;
}

/* ---------- formulas ---------- */

static const char *quantity_name(int q)
{
    static const char *const names[MEMTRAIN_NQ] = {
        [MEMTRAIN_Q_1] = "1", [MEMTRAIN_Q_2] = "2", [MEMTRAIN_Q_B] = "B", [MEMTRAIN_Q_T] = "T",
        [MEMTRAIN_Q_T1] = "(T+1)", [MEMTRAIN_Q_N] = "N", [MEMTRAIN_Q_C] = "C",
        [MEMTRAIN_Q_L] = "L", [MEMTRAIN_Q_L1] = "(L+1)", [MEMTRAIN_Q_F] = "F",
        [MEMTRAIN_Q_V] = "V", [MEMTRAIN_Q_QW] = "QW", [MEMTRAIN_Q_AW] = "AW",
        [MEMTRAIN_Q_FW] = "FW", [MEMTRAIN_Q_R] = "r", [MEMTRAIN_Q_BNH] = "B x NH",
        [MEMTRAIN_Q_ROPE] = "T x HD/2", [MEMTRAIN_Q_NBASE] = "n_base",
        [MEMTRAIN_Q_NLIN] = "n_lin", [MEMTRAIN_Q_NF4_BLOCKS] = "ceil(n_lin/64)",
        [MEMTRAIN_Q_NF4_SCALES] = "(ceil(n_lin/16384)+1)", [MEMTRAIN_Q_NLORA] = "n_lora",
        [MEMTRAIN_Q_MODULES] = "modules", [MEMTRAIN_Q_NTRAIN] = "n_train",
        [MEMTRAIN_Q_ADAM8_BLOCKS] = "ceil(n_train/block)", [MEMTRAIN_Q_BLOCK] = "block",
        [MEMTRAIN_Q_TILE] = "max(2^20,C,AW,F)", [MEMTRAIN_Q_VEC] = "max(n_vec,n_fvec)",
        [MEMTRAIN_Q_ATTN] = "attention scratch", [MEMTRAIN_Q_CE_ROWS] = "min(ce_chunk,N)",
        [MEMTRAIN_Q_NSLOT] = "slots", [MEMTRAIN_Q_SOURCE] = "S", [MEMTRAIN_Q_READ] = "65536",
        [MEMTRAIN_Q_SHUFFLE] = "shuffle_buffer", [MEMTRAIN_Q_SHARD] = "n_train",
        [MEMTRAIN_Q_BUCKET] = "min(n_train,2^20)", [MEMTRAIN_Q_RECV] = "ceil(min(n_train,2^20)/ranks)", [MEMTRAIN_Q_NLAYER] = "n_layer",
        [MEMTRAIN_Q_NOUTER] = "n_outer", [MEMTRAIN_Q_WSLOTS] = "(prefetch+1)", [MEMTRAIN_Q_HEAD_OUT] = "V",
    };
    return q >= 0 && q < MEMTRAIN_NQ && names[q] ? names[q] : "?";
}

/* A quantity's name in this configuration: ZeRO-1 over several ranks shards the
 * optimizer's state, which is n_train otherwise. */
static const char *quantity_name_in(const memtrain_dims *d, int q)
{
    bool sharded = d->zero >= 1 && d->ranks > 1;
    if (sharded && q == MEMTRAIN_Q_SHARD) return "ceil(n_train/ranks)";
    if (sharded && q == MEMTRAIN_Q_ADAM8_BLOCKS) return "ceil(ceil(n_train/ranks)/block)";
    if ((d->holds & IF(ZERO2)) && q == MEMTRAIN_Q_BUCKET) return "min(n_train,2^18)";
    if (!(d->holds & IF(LM_HEAD)) && q == MEMTRAIN_Q_HEAD_OUT) return "1";
    return quantity_name(q);
}

void memtrain_row_formula(const memtrain_dims *d, int id, char *buf, size_t len)
{
    static const char *const dtype_names[] = {"P", "A", "4", "4", "2", "1", "1/2", "8", "56"};
    const memtrain_row *r = &memtrain_rows[id];
    int q[4] = {r->copies, r->factors[0], r->factors[1], r->factors[2]};
    size_t used = 0;
    buf[0] = 0;
    for (int i = 0; i < 4 && used < len; i++)
        if (q[i] != MEMTRAIN_Q_1)
            used += (size_t)snprintf(buf + used, len - used, "%s x ", quantity_name_in(d, q[i]));
    if (used < len) snprintf(buf + used, len - used, "%s", dtype_names[r->dtype]);
}

/*
 * memtrain_inventory.h — every buffer memplan's reference trainer (memtrain)
 * allocates, as one table: the trainer allocates and frees its model's buffers
 * by walking it, the `--framework memtrain` prediction sums it (and shows its
 * rows as the --explain terms), trainer/MEMORY.md refers to it.
 *
 * A row is one buffer: its name, the allocator tag it is counted under, its
 * lifetime, its element type, when it exists, who allocates it, and its
 * element count as a product of the quantities below (times `copies`
 * allocations). The rows are in the order the trainer allocates them.
 *
 * Quantities (trainer/config.h's legend): B micro-batch, T sequence, N = B*T,
 * C hidden, L layers, NH heads, KV kv-heads, HD head dim, F MLP width,
 * V vocabulary, r LoRA rank, QW = (NH + 2 KV) HD, AW = NH HD, FW = F (gpt2)
 * or 2F (llama: gate | up); n_lin = QW C + C AW + FW C + C F (a layer's
 * linear weights), n_base (the parameters stored in the parameter buffer:
 * all but the NF4-quantised linears), n_lora = L r sum(in + out) over the
 * LoRA modules (`modules` of them), n_train (n_lora with LoRA, else n_base),
 * n_vec a layer's vectors (gpt2: 6C + QW + FW, llama: 2C) and n_fvec the final
 * norm's (2C or C); the attention scratch (flash: 2 tile^2 + T + 2 tile; eager:
 * T^2, twice unless checkpointing is none), block (8-bit AdamW), S the data
 * source's bytes, slots = MEMTRAIN_NSLOTS (a layer's slots with 7 LoRA u's),
 * shard the trainable parameters one rank's optimizer updates (ZeRO-1: n_train
 * split over the ranks, the first n_train mod ranks one more, so the heaviest
 * rank's ceil(n_train/ranks); else n_train), bucket = min(n_train, 2^20) the
 * fp32 elements one all-reduce of 16-bit gradients goes through (ZeRO-2:
 * min(n_train, 2^18), one reduce-scatter's), recv = ceil(bucket/ranks) the chunk
 * one exchange of the ring all-reduce receives (ZeRO-0/1); ZeRO-2:
 * n_layer = n_lin + n_vec (one layer's gradients, the slot every layer's
 * backward writes and reduce-scatters) and n_outer = n_base - L n_layer (the
 * embeddings', final norm's and untied head's, reduce-scattered once per
 * micro-batch). ZeRO-3 (full fine-tuning) keeps this rank's shard of the
 * parameters (shard = ceil(n_base/ranks)), (prefetch+1) layer slots of n_layer the
 * layers' weights are all-gathered into (the one in use and the one gathered
 * ahead) and n_outer for the embeddings', final norm's and head's weights,
 * all-gathered at the start of each forward (kept, like the slots); in mixed
 * precision the fp32 master weights are this rank's shard too (master.shard).
 * Preference methods (dpo, ipo, simpo, cpo, orpo) run B = 2 x batch rows: the
 * batch's pairs, chosen rows then rejected rows. With a reference forward (the
 * reference model, or the policy with its adapters disabled) ref.params is the
 * frozen copy of the parameters (reference model only) and the forward's
 * transients are the rows of lifetime MEMTRAIN_REF_FORWARD plus one layer of
 * the slots saved in fp32 (memtrain_ref_forward_bytes).
 * A reward model (method reward) runs the same 2 x batch rows with a C x 1 score
 * head of its own in place of the vocabulary head (n_base counts C where the LM
 * head counted V C, and gpt2's embedding is no longer the head): its logits are
 * N x 1 (head_out = 1; ce_lse, ce_buf and dlnf are gone, whatever `ce` says) and
 * pair.logps holds the rows' scores, then d loss / d score.
 * Element types: P is the parameter storage and A the activation storage
 * (4 bytes in fp32, 2 in the mixed precisions).
 */
#ifndef MEMTRAIN_INVENTORY_H
#define MEMTRAIN_INVENTORY_H

#include <stdbool.h>
#include <stddef.h>

#include "model/model.h"
#include "settings/settings.h"

/* The allocator's tags (trainer/alloc.h's MT_WEIGHTS.. have these values). */
enum {
    MEMTRAIN_TAG_WEIGHTS, MEMTRAIN_TAG_MASTER, MEMTRAIN_TAG_GRADIENTS, MEMTRAIN_TAG_OPTIMIZER,
    MEMTRAIN_TAG_ACTIVATIONS, MEMTRAIN_TAG_WORKSPACE, MEMTRAIN_TAG_DATA, MEMTRAIN_TAG_OTHER,
    MEMTRAIN_TAG_COMM, /* data parallel: communication buffers */
    MEMTRAIN_NTAGS
};
/* "weights", "master", "gradients", "optimizer", "activations", "workspace", "data", "other",
 * "comm" */
const char *memtrain_tag_name(int tag);
/* The planner's component of a tag (MP_WEIGHTS..), or -1 for host memory (data). */
int memtrain_tag_component(int tag);

/* Every row, in allocation order. */
enum {
    /* parameters: model_setup.c, the NF4 stores by quant.c, one per layer */
    MEMTRAIN_PARAMS, MEMTRAIN_PARAM_SHARD, MEMTRAIN_PARAM_LAYER, MEMTRAIN_PARAM_OUTER, MEMTRAIN_MASTER,
    MEMTRAIN_MASTER_SHARD, MEMTRAIN_GRADS, MEMTRAIN_GRAD_LAYER, MEMTRAIN_GRAD_OUTER,
    MEMTRAIN_NF4, MEMTRAIN_NF4_CODES,
    MEMTRAIN_NF4_ABSMAX, MEMTRAIN_NF4_ABSMAX_Q, MEMTRAIN_NF4_SCALES, MEMTRAIN_DEQ, MEMTRAIN_LW,
    MEMTRAIN_LMASTER, MEMTRAIN_LGRAD,
    /* preference methods: the reference model's frozen parameters, the reference's
     * log-probability sums per row, and the policy's sums then d loss / d sum per row */
    MEMTRAIN_REF_PARAMS, MEMTRAIN_REF_LOGPS, MEMTRAIN_PAIR_LOGPS,
    /* the model's workspaces */
    MEMTRAIN_TILE_W, MEMTRAIN_TILE_G, MEMTRAIN_WVEC, MEMTRAIN_GVEC, MEMTRAIN_ATTN_WS,
    MEMTRAIN_DRES, MEMTRAIN_DLN, MEMTRAIN_DQKV, MEMTRAIN_DATTY, MEMTRAIN_DFCH, MEMTRAIN_DFCG,
    MEMTRAIN_DU, MEMTRAIN_CE_BUF, MEMTRAIN_DLNF,
    /* a layer's activation slots, in trainer/model.h's MT_S_* order */
    MEMTRAIN_LN1, MEMTRAIN_LN1_MEAN, MEMTRAIN_LN1_RSTD, MEMTRAIN_QKV, MEMTRAIN_ATT, MEMTRAIN_LSE,
    MEMTRAIN_ATTY, MEMTRAIN_RES2, MEMTRAIN_LN2, MEMTRAIN_LN2_MEAN, MEMTRAIN_LN2_RSTD,
    MEMTRAIN_FCH, MEMTRAIN_FCG, MEMTRAIN_LORA_U,
    /* the fp32 residual stream, rotary and pointer tables */
    MEMTRAIN_X32, MEMTRAIN_OUT32, MEMTRAIN_ROPE_COS, MEMTRAIN_ROPE_SIN, MEMTRAIN_RES_TABLE,
    MEMTRAIN_SAVED_TABLE,
    /* optimizer state (optim.c) */
    MEMTRAIN_OPT_M, MEMTRAIN_OPT_V, MEMTRAIN_OPT_M8, MEMTRAIN_OPT_V8, MEMTRAIN_OPT_M_AMAX,
    MEMTRAIN_OPT_V_AMAX, MEMTRAIN_OPT_SCRATCH,
    /* data (data.c) and the batch (train.c) */
    MEMTRAIN_TEXT, MEMTRAIN_TOK, MEMTRAIN_READ_CHUNK, MEMTRAIN_SHUF, MEMTRAIN_INPUTS,
    MEMTRAIN_TARGETS,
    /* data parallel (dist.c, ring.c): the fp32 bucket 16-bit gradients are all-reduced
     * through, the chunk one exchange of the ring all-reduce receives;
     * ZeRO-2: this rank's shard of the summed gradients (train.c) */
    MEMTRAIN_COMM_BUCKET, MEMTRAIN_COMM_RECV, MEMTRAIN_GRAD_SHARD,
    /* the reference's forward (model.c), before the policy's, freed at its end */
    MEMTRAIN_REF_RES, MEMTRAIN_REF_LOGITS,
    /* one micro-batch's forward (model.c), freed by its backward */
    MEMTRAIN_RES, MEMTRAIN_LNF, MEMTRAIN_LNF_MEAN, MEMTRAIN_LNF_RSTD, MEMTRAIN_LOGITS,
    MEMTRAIN_CE_LSE,
    MEMTRAIN_NROWS
};
#define MEMTRAIN_NSLOT_ROWS (MEMTRAIN_LORA_U - MEMTRAIN_LN1 + 1)
/* LoRA modules a layer can have (q, k, v, o, gate, up, down): one u slot each */
#define MEMTRAIN_MAX_LORA 7
/* a layer's slots: the fixed ones, then one per LoRA module */
#define MEMTRAIN_NSLOTS (MEMTRAIN_NSLOT_ROWS - 1 + MEMTRAIN_MAX_LORA)
/* the built-in corpus (no data file) and the stream loader's read size */
#define MEMTRAIN_CORPUS_BYTES 327680
#define MEMTRAIN_READ_BYTES 65536
/* fp32 elements of the data-parallel all-reduce bucket (at most) */
#define MEMTRAIN_BUCKET ((size_t)1 << 20)
/* ZeRO-2: elements of one reduce-scatter (at most), the bucket's size then: OpenMPI's
 * reduce-scatter keeps temporaries of the whole count outside memtrain's allocator */
#define MEMTRAIN_RS_BUCKET ((size_t)1 << 18)
/* ZeRO-3: layers gathered ahead of the one in use (the layer slots are this + 1);
 * each all-gather moves at most MEMTRAIN_RS_BUCKET elements, like a reduce-scatter */
#define MEMTRAIN_PREFETCH 1

typedef enum {
    MEMTRAIN_PERSISTENT,  /* from creation to the end */
    MEMTRAIN_LAYER_SLOT,  /* L saved copies per micro-batch (by checkpointing), and an fp32
                             working copy for one layer where the trainer needs one */
    MEMTRAIN_MICRO_BATCH, /* allocated by the forward, all live at its end, freed by the backward */
    MEMTRAIN_REF_FORWARD, /* allocated by the reference's forward, freed at its end, before the
                             policy's forward (never live with the micro-batch rows) */
} memtrain_lifetime;

/* Bytes per element: P and A are 4 (fp32) or 2 (mixed); NF4 is half a byte
 * (rounded up per allocation); PTR and NF4_STORE are C structures (their
 * LP64 sizes here; the trainer allocates sizeof). */
typedef enum {
    MEMTRAIN_DT_P, MEMTRAIN_DT_A, MEMTRAIN_DT_F32, MEMTRAIN_DT_I32, MEMTRAIN_DT_U16,
    MEMTRAIN_DT_U8, MEMTRAIN_DT_NF4, MEMTRAIN_DT_PTR, MEMTRAIN_DT_NF4_STORE
} memtrain_dtype;

/* Who allocates a row. */
typedef enum {
    MEMTRAIN_BY_MODEL,   /* mt_model_create, from this table; freed by mt_model_free */
    MEMTRAIN_BY_NF4,     /* mt_nf4_init, per layer, for mt_model_create */
    MEMTRAIN_BY_OPTIM,   /* mt_optim_init */
    MEMTRAIN_BY_DATA,    /* mt_data_open */
    MEMTRAIN_BY_TRAINER, /* mt_trainer_create */
    MEMTRAIN_BY_FORWARD, /* mt_model_forward, from this table */
    MEMTRAIN_BY_DIST,    /* mt_trainer_create, for data parallel (dist.c) */
} memtrain_owner;

/* Conditions a row needs (all of them). */
enum {
    MEMTRAIN_IF_MIXED = 1u << 0, MEMTRAIN_IF_FULL_FT = 1u << 1, MEMTRAIN_IF_LORA = 1u << 2,
    MEMTRAIN_IF_QLORA = 1u << 3, MEMTRAIN_IF_NF4 = 1u << 4, MEMTRAIN_IF_NF4_DQ = 1u << 5,
    MEMTRAIN_IF_EAGER = 1u << 6, MEMTRAIN_IF_FLASH = 1u << 7, MEMTRAIN_IF_CE_FULL = 1u << 8,
    MEMTRAIN_IF_CE_CHUNKED = 1u << 9, MEMTRAIN_IF_GPT2 = 1u << 10, MEMTRAIN_IF_LLAMA = 1u << 11,
    MEMTRAIN_IF_ADAMW = 1u << 12, MEMTRAIN_IF_ADAMW_8BIT = 1u << 13,
    MEMTRAIN_IF_MOMENTUM = 1u << 14, /* an fp32 first moment: adamw or sgd-momentum */
    MEMTRAIN_IF_LOAD_MEMORY = 1u << 15, MEMTRAIN_IF_LOAD_STREAM = 1u << 16,
    MEMTRAIN_IF_BUILTIN_CORPUS = 1u << 17,
    MEMTRAIN_IF_DP = 1u << 18, /* more than one rank */
    MEMTRAIN_IF_ZERO2 = 1u << 19,      /* ZeRO-2 (full fine-tuning): gradients reduce-scattered */
    MEMTRAIN_IF_GRADS_FULL = 1u << 20, /* full fine-tuning without ZeRO-2: every gradient kept */
    MEMTRAIN_IF_ZERO3 = 1u << 21,       /* ZeRO-3 (full fine-tuning): parameters sharded, gathered per layer */
    MEMTRAIN_IF_PARAMS_FULL = 1u << 22, /* not ZeRO-3: every parameter kept */
    MEMTRAIN_IF_ALLREDUCE = 1u << 23,   /* several ranks summing whole gradients (ZeRO-0/1, LoRA) */
    MEMTRAIN_IF_PAIRWISE = 1u << 24,    /* a preference method: pairs, a loss over per-row sums */
    MEMTRAIN_IF_REF_FWD = 1u << 25,     /* a reference forward in each micro-batch (model or adapter) */
    MEMTRAIN_IF_REF_MODEL = 1u << 26,   /* the reference is a frozen copy of the parameters */
    MEMTRAIN_IF_FP32 = 1u << 27,        /* fp32 storage (not mixed) */
    MEMTRAIN_IF_LM_HEAD = 1u << 28,     /* the vocabulary head: every method but reward */
};

/* The quantities element counts are products of. */
enum {
    MEMTRAIN_Q_1, MEMTRAIN_Q_2, MEMTRAIN_Q_B, MEMTRAIN_Q_T, MEMTRAIN_Q_T1, MEMTRAIN_Q_N,
    MEMTRAIN_Q_C, MEMTRAIN_Q_L, MEMTRAIN_Q_L1, MEMTRAIN_Q_F, MEMTRAIN_Q_V, MEMTRAIN_Q_QW,
    MEMTRAIN_Q_AW, MEMTRAIN_Q_FW, MEMTRAIN_Q_R, MEMTRAIN_Q_BNH, MEMTRAIN_Q_ROPE,
    MEMTRAIN_Q_NBASE, MEMTRAIN_Q_NLIN, MEMTRAIN_Q_NF4_BLOCKS, MEMTRAIN_Q_NF4_SCALES,
    MEMTRAIN_Q_NLORA, MEMTRAIN_Q_MODULES, MEMTRAIN_Q_NTRAIN, MEMTRAIN_Q_ADAM8_BLOCKS,
    MEMTRAIN_Q_BLOCK, MEMTRAIN_Q_TILE, MEMTRAIN_Q_VEC, MEMTRAIN_Q_ATTN, MEMTRAIN_Q_CE_ROWS,
    MEMTRAIN_Q_NSLOT, MEMTRAIN_Q_SOURCE, MEMTRAIN_Q_READ, MEMTRAIN_Q_SHUFFLE,
    MEMTRAIN_Q_SHARD, MEMTRAIN_Q_BUCKET, MEMTRAIN_Q_RECV, MEMTRAIN_Q_NLAYER, MEMTRAIN_Q_NOUTER, MEMTRAIN_Q_WSLOTS,
    MEMTRAIN_Q_HEAD_OUT, /* the head's outputs: V, or reward's score head 1 */
    MEMTRAIN_NQ
};

typedef struct memtrain_row {
    const char *name;         /* the buffer, as the trainer names it */
    int tag;                  /* MEMTRAIN_TAG_*: what the allocator counts it under */
    memtrain_lifetime lifetime;
    memtrain_dtype dtype;
    memtrain_owner by;
    unsigned when;            /* MEMTRAIN_IF_* */
    int copies;               /* MEMTRAIN_Q_*: allocations of this row */
    int factors[3];           /* MEMTRAIN_Q_*: elements of one allocation, their product */
    bool selective_drops;     /* slot: selective checkpointing drops it; when not saved it is
                                 recomputed inside the attention scratch */
} memtrain_row;

extern const memtrain_row memtrain_rows[MEMTRAIN_NROWS];

/* What the sizes depend on: the model as memtrain builds it, and the settings
 * (in the planner's enums). Fill the inputs, then call memtrain_dims_finish. */
typedef struct memtrain_dims {
    bool gpt2;                /* LayerNorm + biases, GELU, fused qkv, learned positions, tied
                                 head; else llama: RMSNorm, SwiGLU, rotary, untied head */
    size_t L, C, NH, KV, HD, F, V, maxpos, B, T;
    mp_precision precision;   /* MP_FP32, MP_MIXED_BF16 or MP_MIXED_FP16 */
    mp_optimizer optimizer;   /* MP_ADAMW, MP_ADAMW_8BIT, MP_SGD_MOMENTUM or MP_SGD */
    size_t adam8_block;
    mp_ckpt checkpointing;
    mp_attention attention;
    size_t attn_tile;         /* flash tile edge */
    mp_ce ce;
    size_t ce_chunk;
    size_t lora_rank;         /* 0: full fine-tuning */
    unsigned lora_targets;    /* MP_LORA_* */
    mp_quant quant;           /* MP_QUANT_NONE, MP_QUANT_NF4 or MP_QUANT_NF4_DQ */
    mp_loader loader;
    size_t shuffle_buffer;
    mp_method method;         /* sft, or a preference method (B is then 2 x the pairs) */
    mp_reference reference;   /* the reference a run uses (mp_reference_used: never DEFAULT) */
    size_t source_bytes;      /* the data file's size; 0: the built-in corpus */
    size_t ranks;             /* data-parallel ranks (0 or 1: one process) */
    int zero;                 /* 0: replicated; 1: optimizer state sharded over the ranks;
                                 2: and the gradients (full fine-tuning); 3: and the parameters */
    /* filled by memtrain_dims_finish */
    unsigned holds;           /* the MEMTRAIN_IF_* conditions that hold */
    size_t q[MEMTRAIN_NQ];    /* every quantity */
    size_t lora_io;           /* sum over the LoRA modules of (in + out) */
} memtrain_dims;

void memtrain_dims_finish(memtrain_dims *d);
/* The dimensions of a run: the model as memtrain builds it (memtrain_shape_model)
 * and the settings, one rank's share of them (gpus: the ranks). Both the planner's
 * prediction and the trainer's buffers size from this one. */
void memtrain_dims_from(const mp_model *m, const mp_settings *s, memtrain_dims *d);

/* The layer's linear modules of memtrain's model (mp_model_linears of the
 * gpt2 or llama preset with these widths): the list LoRA adapters are put on. */
int memtrain_linears(bool gpt2, size_t C, size_t NH, size_t KV, size_t HD, size_t F,
                     mp_linear *out, int max);

/* Elements of one allocation of row `id`, 0 when the row is absent. */
size_t memtrain_elems(const memtrain_dims *d, int id);
/* Allocations of row `id` (0 when absent). */
size_t memtrain_copies(const memtrain_dims *d, int id);
/* Bytes of one allocation of row `id`, 0 when absent. */
size_t memtrain_alloc_bytes(const memtrain_dims *d, int id);
/* A slot row: whether its L copies are saved from the forward to the backward,
 * and whether the trainer keeps an fp32 working copy of it (one layer). */
bool memtrain_slot_saved(const memtrain_dims *d, int id);
bool memtrain_slot_buffer(const memtrain_dims *d, int id);
/* Bytes of row `id` by lifetime: allocated at creation, and allocated by each
 * micro-batch's forward (a slot's saved copies, over all layers). */
void memtrain_row_bytes(const memtrain_dims *d, int id, size_t *persistent,
                        size_t *micro_batch);
/* Bytes of row `id` the reference's forward allocates, all live at its end and
 * freed then: its own rows (MEMTRAIN_REF_FORWARD), and for a slot row one layer
 * of it when the slot is saved in fp32 (no working copy to compute in; the
 * attention probabilities are recomputed in the scratch, LoRA is off). */
size_t memtrain_ref_forward_bytes(const memtrain_dims *d, int id);
/* The row's size as text in this configuration, e.g. "(L+1) x N x C x A". */
void memtrain_row_formula(const memtrain_dims *d, int id, char *buf, size_t len);

#endif

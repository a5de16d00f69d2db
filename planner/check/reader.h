/* reader.h — what a config format is for memplan check (one file per format,
 * a row in check.c's table): how to know it, its keys (each one row: what it
 * sets, or that it is known and sets nothing memplan counts, or that it
 * changes memory in a way memplan does not model), its defaults and `auto`s,
 * and how to say a setting in its words. */
#ifndef MP_CHECK_READER_H
#define MP_CHECK_READER_H

#include <stdbool.h>
#include <stdint.h>

#include "check/check.h"
#include "check/doc.h"
#include "memtrain/shape.h"
#include "settings/settings.h"

/* What the keys of one run's files say, read file by file. */
typedef struct ck_state {
    mp_check *c;                 /* origins and unknown keys go here */
    const char *file;            /* the file being read, as named */
    mp_settings s;               /* the settings so far (mp_settings_default, then keys) */
    unsigned given;              /* MP_PIN_* of the settings a key set */
    char model_ref[1024];        /* the model a file names (a Hub id, a folder, a builder) */
    char named[CK_MAX_FILES][1024]; /* files a file names (a DeepSpeed JSON) */
    char path[CK_MAX_FILES][4096];  /* each file's path as read: `file` points at one (a named
                                       file's path is built on read_named's stack) */
    int nnamed;
    int64_t procs;               /* processes a file says (accelerate num_processes), 0: none */
    const mp_gpu *gpu;           /* the budget's GPU, for what depends on it (bf16: auto) */
    /* what a format reads before it can decide (its finish() resolves them) */
    int precision16;             /* 0 none, 1 bf16, 2 fp16 asked; -1 bf16: auto */
    char precision_key[64];
    unsigned offloaded;          /* 1 << MP_OFFLOAD_* for each offload a key asked */
    bool memtrain;               /* a memtrain config: the model is its shape */
    memtrain_shape shape;
    char param_offload_key[96];      /* the key that asked (an engine's, when no trainer's file resolves it) */
    bool pure16, engine_masters; /* 16-bit weights kept (no upcast); an engine keeps fp32 masters (DeepSpeed) */
    bool fp32_load;              /* the file loads the weights in fp32 (a LoRA base too) */
    bool deepspeed, fsdp;        /* the run shards through DeepSpeed or FSDP */
    int quant_bits;              /* a quantised base: 4 or 8 */
    bool double_quant;
    bool lora;                   /* an adapter is trained */
    bool trl;                    /* the Trainer's config is TRL's (its ModelConfig and SFT keys): TRL's defaults */
    bool bf16_off;               /* bf16: false said (TRL's bf16 default then off) */
    char lora_modules[512];      /* the target modules as the file names them, comma-separated */
    char lora_key[96];           /* the key that named them */
    /* a format's keys that decide only together (axolotl.c's readers note them, its finish resolves them) */
    uint64_t fmt_bits;
    int64_t fmt_count[2];
    /* a preference config (trainer.c, axolotl.c, llamafactory.c): what its keys
     * said, resolved by the format's finish with ck_preference() */
    unsigned pref_bits;          /* the format's CK_PREF-like bits */
    int pref_method;             /* the method the keys name plus one (0: none) */
    mp_reference pref_ref;       /* the reference the keys ask for (MP_REF_DEFAULT: the tool's) */
    char pref_key[64];           /* the key that named the method (or the first preference key) */
    char pref_ref_key[64];       /* the key that named the reference */
    char pref_keys[10][64];      /* a format's keys that decide together (trainer.c: which trainer) */
    /* values a TRL config's keys give that mean something only once the method is
     * known (trainer.c: GRPO's beta and completion length, a server-mode vLLM) */
    double trl_beta;
    bool trl_beta_set;
    int64_t trl_completion_len;  /* max_completion_length, 0: none */
    char trl_completion_key[64];
    bool trl_vllm_server;        /* vllm_mode server: the vLLM is on other GPUs */
    /* the generating configs (trainer.c): GRPOConfig, OnlineDPOConfig, PPOConfig share keys */
    unsigned gen_mask;           /* the configs every generation key read so far is a field of; 0: none read */
    char gen_first[64];          /* the first such key */
    char gen_own[3][64];         /* per config, the first key only it has */
    char reward_ref[1024];       /* reward_model_path: the reward model (a Hub id or a folder) */
    bool sft_model;              /* PPOConfig's sft_model_path named the policy */
    int64_t ppo_mini_batches, ppo_rollout_chunk; /* num_mini_batches, local_rollout_forward_batch_size; 0: unsaid */
    bool sample_generations;     /* PPO's num_sample_generations above 0 */
} ck_state;

/* One key of a format, by its dotted path. read NULL: known, and nothing memplan
 * counts (learning rate, logging); else it sets settings (ck_set records the
 * origin) or refuses with err. */
typedef struct ck_key {
    const char *key;
    int (*read)(ck_state *st, const ck_node *v, const char *key, char *err);
} ck_key;

typedef struct ck_format {
    const char *name;            /* "axolotl", "trainer", "deepspeed"... */
    const char *framework;       /* the profile its stack is estimated with; NULL: the run's other file's */
    /* how surely a file's keys are this format: 0 not at all; the highest wins */
    int (*detect)(const ck_node *root);
    const ck_key *keys;          /* ended by a row with key NULL */
    /* maps whose keys are this format's too, read whole ("fsdp_config") */
    const char *const *sections;
    /* after the keys: defaults and `auto`, as the tool resolves them; 0 or -1 with err */
    int (*finish)(ck_state *st, char *err);
    /* a setting's value in the format's words ("micro_batch_size: 1"); 0, or -1: it has none */
    int (*spell)(const char *setting, const mp_settings *s, char *buf, size_t len);
    /* a format whose keys are rows held elsewhere (memtrain's: memtrain_keys.h) reads
     * each key itself instead of by `keys`: 0, -1 with err */
    int (*read_key)(ck_state *st, const ck_node *v, const char *key, char *err);
} ck_format;

/* The formats (one file each). */
extern const ck_format ck_format_memtrain;
extern const ck_format ck_format_axolotl, ck_format_trainer, ck_format_deepspeed, ck_format_accelerate, ck_format_torchtune,
    ck_format_llamafactory;

/* Record that `setting` is `value`, from `key` of the file read (how: why, when
 * not as written; NULL otherwise). */
void ck_set(ck_state *st, const char *setting, const char *value, const char *key, const char *how);
/* A key's value that is not what the key takes: one line naming both. */
int ck_bad(const char *key, const ck_node *v, const char *want, char *err);
/* A key read but not understood, listed as such (an argument of a component a
 * reader walks itself). */
void ck_unknown(ck_state *st, const char *key);
/* Keys that change memory in ways memplan does not model: a refusal naming the key. */
int ck_refuse(const char *key, const char *why, char *err);

/* A note on the report (check.h's notes), once. */
void ck_note(ck_state *st, const char *text);
/* Whether `setting` was given on the command line (--method: its origin's key). */
bool ck_from_flag(const ck_state *st, const char *setting);
/* Add `how` to the record of a setting the files set (its origin). */
void ck_set_how(ck_state *st, const char *setting, const char *how);
/* A preference method and its reference, after a format's keys (st->pref_method,
 * pref_ref, pref_key, pref_ref_key) and the adapter are resolved: the method
 * unless --method gave one, the reference the keys asked for unless
 * --reference did, else the tool's default, recorded with `ref_how` (why the
 * tool uses what mp_reference_used gives); the batch said to count pairs. 0,
 * or -1 with err: a reference the method has none of. */
int ck_preference(ck_state *st, const char *method_how, const char *ref_how, char *err);

/* Shared readers of values (shared.c): */
int ck_read_batch(ck_state *st, const ck_node *v, const char *key, char *err);
int ck_read_accum(ck_state *st, const ck_node *v, const char *key, char *err);
int ck_read_seq(ck_state *st, const ck_node *v, const char *key, char *err);
int ck_read_checkpointing(ck_state *st, const ck_node *v, const char *key, char *err);
int ck_read_lora_rank(ck_state *st, const ck_node *v, const char *key, char *err);
int ck_read_lora_dropout(ck_state *st, const ck_node *v, const char *key, char *err);
int ck_read_optimizer(ck_state *st, const ck_node *v, const char *key, char *err);
int ck_read_model(ck_state *st, const ck_node *v, const char *key, char *err);
int ck_read_deepspeed_ref(ck_state *st, const ck_node *v, const char *key, char *err);
int ck_read_compile(ck_state *st, const ck_node *v, const char *key, char *err);
/* DeepSpeed's offload device for the optimizer or the parameters (cpu or none). */
int ck_read_offload_device(ck_state *st, const ck_node *v, const char *key, mp_offload to, char *err);
/* Refuse what the offload keys together say that memplan does not model. */
int ck_check_offload(const ck_state *st, char *err);
/* PEFT's target_modules (a list or a comma string, "all-linear") into s.lora_targets. */
int ck_read_lora_targets(ck_state *st, const ck_node *v, const char *key, char *err);
/* attn_implementation's words: sdpa and flash_attention_2 tile, eager stores the scores. */
int ck_read_attn_implementation(ck_state *st, const ck_node *v, const char *key, char *err);
/* The Trainer's bf16/fp16 flags into st->precision16 (and "auto" for axolotl's bf16). */
int ck_read_bf16(ck_state *st, const ck_node *v, const char *key, char *err);
int ck_read_fp16(ck_state *st, const ck_node *v, const char *key, char *err);
/* The precision the 16-bit flags, the weights kept and the engine make, recorded. */
void ck_resolve_precision(ck_state *st, const char *key_bf16, const char *why);

#endif

/* family.h — the transformers architectures memplan knows, one row per
 * config.json model_type (family.c): the preset a config's numbers sit in,
 * what a config leaves implied, the module names LoRA targets, the attention
 * implementations the modeling file declares, the layer FSDP wraps. The
 * config reader (hfconfig.c), the emitters and the LoRA target names read
 * this one table. */
#ifndef MP_FAMILY_H
#define MP_FAMILY_H

#include <stdbool.h>
#include <stdint.h>

#include "model/model.h"

/* The roles LoRA's target bits name, in MP_LORA_* bit order (q, k, v, o, gate, up, down). */
enum { MP_LORA_NROLES = 7 };
/* memplan's name of role r ("q", ..., "down"), NULL past the end. */
const char *mp_lora_role_name(int r);

typedef struct mp_family {
    const char *model_type;        /* transformers config.model_type (profiles' `family`) */
    const char *preset;            /* "gpt2" (LayerNorm, GELU, learned positions, biases) or "llama" */
    /* For each role, the target_modules string PEFT matches (a module name or a
     * dotted suffix where a leaf is shared, as GPT-2's c_proj); fused projections
     * repeat one name; NULL: no such module, or none tabulated (no row of modules). */
    const char *module[MP_LORA_NROLES];
    bool sdpa;                     /* the PreTrainedModel class declares _supports_sdpa */
    bool remote_code;              /* the hub model needs trust_remote_code=True */
    const char *layer_class;       /* its _no_split_modules: what FSDP wraps; NULL: not read */
    /* What a config.json leaves implied, over the preset: */
    int pos;                       /* an mp_pos, or -1: the preset's */
    int64_t pos_offset;            /* extra learned position rows (OPT: 2) */
    int64_t max_pos;               /* positions when the config states none, 0: the preset's */
    bool embed_norm, qkv_bias, head_bias, fused_qkv, unfused_qkv;
    int norms_per_layer;           /* 0: the preset's */
    bool parallel_residual;        /* attention and MLP both read the layer's input, unless a key says */
    const char *parallel_key;      /* the config key that says (gpt_neox, falcon), NULL: none */
    double rotary;                 /* the rotary fraction when the config states none, 0: whole heads */
    bool untied;                   /* the head is not tied unless tie_word_embeddings says so */
    /* Falcon states its positions, biases and block layout in keys of its own */
    const char *alibi_key, *bias_key, *new_arch_key;
} mp_family;

/* The row of a model_type, or NULL. */
const mp_family *mp_family_of(const char *model_type);
/* The i-th row, NULL past the end. */
const mp_family *mp_family_at(int i);
/* Whether the row tabulates transformers' module names (the emitters need them). */
bool mp_family_has_modules(const mp_family *f);
/* The distinct target_modules strings for the MP_LORA_* bits `targets`, in
 * role order, into `out` (at most MP_LORA_NROLES); returns how many. */
int mp_family_targets(const mp_family *f, unsigned targets, const char **out);

#endif

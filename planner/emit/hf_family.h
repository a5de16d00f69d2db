/* hf_family.h — what the Hugging Face emitter needs to know about each
 * transformers architecture: one row per model_type (hf_family.c). */
#ifndef MP_HF_FAMILY_H
#define MP_HF_FAMILY_H

#include <stdbool.h>

/* The roles a LoRA target bit names, in MP_LORA_* bit order. */
enum { HF_ROLE_Q, HF_ROLE_K, HF_ROLE_V, HF_ROLE_O, HF_ROLE_GATE, HF_ROLE_UP, HF_ROLE_DOWN, HF_NROLES };

typedef struct hf_family {
    const char *model_type;        /* transformers config.model_type (profiles' `family`) */
    /* For each role, the target_modules string PEFT matches (a module name or
     * a dotted suffix where a leaf is shared, as GPT-2's c_proj); fused
     * projections repeat one name; NULL: the architecture has no such module. */
    const char *module[HF_NROLES];
    bool sdpa;                     /* the PreTrainedModel class declares _supports_sdpa */
    bool remote_code;              /* the hub model needs trust_remote_code=True */
    const char *layer_class;       /* its _no_split_modules: what FSDP wraps; NULL: not read (the
                                    * model's own declaration is used) */
} hf_family;

/* The row of a model_type, or NULL. */
const hf_family *hf_family_of(const char *model_type);
/* The i-th row, NULL past the end (for tests and listings). */
const hf_family *hf_family_at(int i);
/* The distinct target_modules strings for the MP_LORA_* bits `targets`, in
 * role order, into `out` (at most HF_NROLES); returns how many. */
int hf_family_targets(const hf_family *f, unsigned targets, const char **out);

#endif

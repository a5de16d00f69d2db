/* hf.h — what the hf target's train.py is made of (hf.c), for the TRL part
 * of it (trl.c): a preference or RL plan's script loads the model, its
 * quantisation and its adapter as a supervised one does, and trains with TRL's
 * trainer for the method instead of transformers' Trainer. Internal to emit/. */
#ifndef MP_EMIT_HF_H
#define MP_EMIT_HF_H

#include <stdbool.h>

#include "emit/emitters.h"

/* The script's view of the plan's precision. */
typedef struct hf_precision {
    const char *flag;          /* TrainingArguments flag set True: "bf16", "fp16" or NULL */
    const char *load_dtype;    /* from_pretrained's torch_dtype */
    const char *compute;       /* a quantised base's compute (and kept 16-bit) dtype */
    bool pure;                 /* 16-bit trainable weights, no fp32 masters */
} hf_precision;

hf_precision hf_precision_of(const mp_settings *s);
/* Quantised at load by bitsandbytes (not a checkpoint stored quantised). */
bool hf_quantised_at_load(const mp_model *m, const mp_settings *s);
/* transformers' attn_implementation for the plan's attention. */
const char *hf_attn(const mp_settings *s);
/* What loading the base needs installed beyond transformers (NULL: nothing). */
const char *hf_package(const mp_settings *s);

/* The pieces of train.py, in their order. */
void hf_summary(sbuf *b, const mp_plan *pl, const mp_family *f);
/* The guard against a bitsandbytes older than the plan assumed; `imported`: Version and
 * package_version are imported already. */
void hf_bitsandbytes_check(sbuf *b, const mp_model *m, const mp_settings *s, bool imported);
/* MODEL, the command line and SEQ; `data_help` says what DATA is, `lr` the default rate; `more`
 * (or NULL) adds the script's further arguments before they are parsed. */
void hf_command_line(sbuf *b, const mp_model *m, const mp_settings *s, const char *data_help, const char *lr,
                     void (*more)(sbuf *b, const mp_settings *s));
/* `quant = BitsAndBytesConfig(...)` where the base is quantised at load (or a comment). */
void hf_quant_config(sbuf *b, const mp_model *m, const mp_settings *s);
/* `NAME = CLASS.from_pretrained(MODEL, ...EXTRA)`, loaded as the plan counts it. */
void hf_from_pretrained(sbuf *b, const mp_model *m, const mp_settings *s, const mp_family *f, const char *name,
                        const char *cls, const char *extra);
/* `lora = LoraConfig(...)` for TASK_TYPE; with `wrap`, get_peft_model too. */
void hf_lora_config(sbuf *b, const mp_model *m, const mp_settings *s, const mp_family *f, const char *task_type,
                    bool wrap);
/* The tokenizer (pad token: the end-of-text one where the model has none). */
void hf_tokenizer(sbuf *b, const mp_family *f);

/* The TRL part (trl.c). A method other than sft is TRL's: */
bool emit_trl_plan(const mp_settings *s);
/* 0, or -1 with err: the plan has no form in TRL's config class or trainer at the commit read. */
int emit_trl_check(const mp_model *m, const mp_settings *s, char *err);
/* train.py for a TRL plan, whole. */
void emit_trl_script(sbuf *b, const mp_plan *p);
/* train.py's header lines for the method (summary) and the packages the run needs. */
void emit_trl_summary(sbuf *b, const mp_settings *s);
const char *emit_trl_packages(const mp_settings *s);
/* The bundle's trl.yaml: the config's keys as train.py passes them, with the model's. */
extern const emit_file emit_trl_yaml;
/* README.txt's RUN and DATA for a TRL plan. */
void emit_trl_readme(sbuf *b, const mp_plan *p);

#endif

/* torchtune_models.h — the torchtune model builders memplan's profiles map to:
 * one row per profile (torchtune_models.c). */
#ifndef MP_TORCHTUNE_MODELS_H
#define MP_TORCHTUNE_MODELS_H

#include <stdbool.h>

#include "model/model.h"

typedef struct tt_model {
    const char *profile;          /* memplan's profile name (profiles/models.csv) */
    const char *package;          /* under torchtune.models: "llama3_2" */
    const char *builder;          /* the full model's builder: "llama3_2_3b" */
    const char *lora_builder;     /* its LoRA builder: "lora_llama3_2_3b" */
    const char *qlora_builder;    /* its QLoRA builder, or NULL: the LoRA builder with quantize_base */
    bool output_arg;              /* the LoRA builder takes apply_lora_to_output */
    bool output_lora;             /* ... and accepts True (a tied embedding's builder raises) */
    const char *model_type;       /* FullModelHFCheckpointer's model_type */
    const char *tokenizer;        /* under torchtune.models: "llama3.llama3_tokenizer" */
    const char *tokenizer_path;   /* its file in the Hugging Face checkpoint folder */
    const char *merges_file;      /* a BPE tokenizer's merges_file there, or NULL */
} tt_model;

/* The row for a model: its profile name, or the Hugging Face id of a profile's
 * (a config.json the user gave), and the profile's shape, which the builder
 * fixes (a 70B-shaped config named llama-3.2-1b gets no builder); NULL when
 * torchtune has no builder for it. */
const tt_model *tt_model_of(const mp_model *m);
/* The i-th row, NULL past the end (listings, tests). */
const tt_model *tt_model_at(int i);

/* Which of a row's builders a config names. */
typedef enum { TT_FULL, TT_LORA, TT_QLORA } tt_kind;
/* The row whose builder a config's model._component_ names
 * ("torchtune.models.llama3_2.qlora_llama3_2_1b"), and which builder it is;
 * NULL when no row has that builder. */
const tt_model *tt_model_by_builder(const char *component, tt_kind *kind);

#endif

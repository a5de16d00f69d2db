/* torchtune_models.c — which torchtune builder, checkpointer model_type and
 * tokenizer each memplan profile takes. Copied, with the commit of every file
 * read, from torchtune's own source into tests/data/engines/torchtune_models.csv
 * (its README says which files): torchtune/models/<family>/_model_builders.py
 * and _component_builders.py for the builders and their arguments, the
 * recipes' configs for model_type and the tokenizer's file. Every builder's
 * hard-coded dimensions equal the profile's (layers, width, heads, KV heads,
 * FFN, vocabulary, tied head). tests/test_emit_torchtune.py checks this table
 * against that file. Left out, for want of a torchtune builder: GPT-2, OPT,
 * BLOOM, Falcon, Pythia, Phi-1.5/2, Phi-3-medium, Mixtral and the MoE models,
 * TinyLlama, and Mistral 7B v0.3 (mistral_7b fixes the vocabulary at 32000). */
#include "emit/torchtune_models.h"
#include "model/model.h"
#include "profiles/profiles.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static const tt_model models[] = {
    /* profile, package, builder, LoRA builder, QLoRA builder, output arg, output LoRA,
     * model_type, tokenizer, its file, merges file */
    {"llama-2-7b", "llama2", "llama2_7b", "lora_llama2_7b", "qlora_llama2_7b", true, true, "LLAMA2", "llama2.llama2_tokenizer", "tokenizer.model", NULL},
    {"llama-2-13b", "llama2", "llama2_13b", "lora_llama2_13b", "qlora_llama2_13b", true, true, "LLAMA2", "llama2.llama2_tokenizer", "tokenizer.model", NULL},
    {"llama-2-70b", "llama2", "llama2_70b", "lora_llama2_70b", "qlora_llama2_70b", true, true, "LLAMA2", "llama2.llama2_tokenizer", "tokenizer.model", NULL},
    {"llama-3-8b", "llama3", "llama3_8b", "lora_llama3_8b", "qlora_llama3_8b", true, true, "LLAMA3", "llama3.llama3_tokenizer", "original/tokenizer.model", NULL},
    {"llama-3-70b", "llama3", "llama3_70b", "lora_llama3_70b", "qlora_llama3_70b", true, true, "LLAMA3", "llama3.llama3_tokenizer", "original/tokenizer.model", NULL},
    /* Llama 3.1 and 3.3 checkpoints load as LLAMA3: ModelType has no member of their own */
    {"llama-3.1-8b", "llama3_1", "llama3_1_8b", "lora_llama3_1_8b", "qlora_llama3_1_8b", true, true, "LLAMA3", "llama3.llama3_tokenizer", "original/tokenizer.model", NULL},
    {"llama-3.1-70b", "llama3_1", "llama3_1_70b", "lora_llama3_1_70b", "qlora_llama3_1_70b", true, true, "LLAMA3", "llama3.llama3_tokenizer", "original/tokenizer.model", NULL},
    {"llama-3.1-405b", "llama3_1", "llama3_1_405b", "lora_llama3_1_405b", "qlora_llama3_1_405b", true, true, "LLAMA3", "llama3.llama3_tokenizer", "original/mp8/tokenizer.model", NULL},
    /* tied embeddings: the LoRA builders raise on apply_lora_to_output=True */
    {"llama-3.2-1b", "llama3_2", "llama3_2_1b", "lora_llama3_2_1b", "qlora_llama3_2_1b", true, false, "LLAMA3_2", "llama3.llama3_tokenizer", "original/tokenizer.model", NULL},
    {"llama-3.2-3b", "llama3_2", "llama3_2_3b", "lora_llama3_2_3b", "qlora_llama3_2_3b", true, false, "LLAMA3_2", "llama3.llama3_tokenizer", "original/tokenizer.model", NULL},
    {"llama-3.3-70b", "llama3_3", "llama3_3_70b", "lora_llama3_3_70b", "qlora_llama3_3_70b", true, true, "LLAMA3", "llama3.llama3_tokenizer", "original/tokenizer.model", NULL},
    {"mistral-7b", "mistral", "mistral_7b", "lora_mistral_7b", "qlora_mistral_7b", true, true, "MISTRAL", "mistral.mistral_tokenizer", "tokenizer.model", NULL},
    /* Qwen2.5: no QLoRA builders; the instruct builders where the configs use them (the
     * base ones differ in max_seq_len and a norm's epsilon, not in memory) */
    {"qwen2.5-0.5b", "qwen2_5", "qwen2_5_0_5b", "lora_qwen2_5_0_5b", NULL, true, false, "QWEN2", "qwen2_5.qwen2_5_tokenizer", "vocab.json", "merges.txt"},
    {"qwen2.5-1.5b", "qwen2_5", "qwen2_5_1_5b_instruct", "lora_qwen2_5_1_5b_instruct", NULL, true, false, "QWEN2", "qwen2_5.qwen2_5_tokenizer", "vocab.json", "merges.txt"},
    {"qwen2.5-3b", "qwen2_5", "qwen2_5_3b", "lora_qwen2_5_3b", NULL, true, false, "QWEN2", "qwen2_5.qwen2_5_tokenizer", "vocab.json", "merges.txt"},
    {"qwen2.5-7b", "qwen2_5", "qwen2_5_7b_instruct", "lora_qwen2_5_7b_instruct", NULL, true, true, "QWEN2", "qwen2_5.qwen2_5_tokenizer", "vocab.json", "merges.txt"},
    {"qwen2.5-14b", "qwen2_5", "qwen2_5_14b_instruct", "lora_qwen2_5_14b_instruct", NULL, true, true, "QWEN2", "qwen2_5.qwen2_5_tokenizer", "vocab.json", "merges.txt"},
    {"qwen2.5-32b", "qwen2_5", "qwen2_5_32b_instruct", "lora_qwen2_5_32b_instruct", NULL, true, true, "QWEN2", "qwen2_5.qwen2_5_tokenizer", "vocab.json", "merges.txt"},
    {"qwen2.5-72b", "qwen2_5", "qwen2_5_72b_instruct", "lora_qwen2_5_72b_instruct", NULL, true, true, "QWEN2", "qwen2_5.qwen2_5_tokenizer", "vocab.json", "merges.txt"},
    /* torchtune's Phi-3 keeps q, k, v and gate, up as separate projections (the checkpointer splits them) */
    {"phi-3-mini", "phi3", "phi3_mini", "lora_phi3_mini", "qlora_phi3_mini", true, true, "PHI3_MINI", "phi3.phi3_mini_tokenizer", "tokenizer.model", NULL},
    /* Gemma's LoRA builders take no apply_lora_to_output */
    {"gemma-2b", "gemma", "gemma_2b", "lora_gemma_2b", "qlora_gemma_2b", false, false, "GEMMA", "gemma.gemma_tokenizer", "tokenizer.model", NULL},
    {"gemma-7b", "gemma", "gemma_7b", "lora_gemma_7b", "qlora_gemma_7b", false, false, "GEMMA", "gemma.gemma_tokenizer", "tokenizer.model", NULL},
    {"gemma-2-2b", "gemma2", "gemma2_2b", "lora_gemma2_2b", "qlora_gemma2_2b", false, false, "GEMMA2", "gemma.gemma_tokenizer", "tokenizer.model", NULL},
    {"gemma-2-9b", "gemma2", "gemma2_9b", "lora_gemma2_9b", "qlora_gemma2_9b", false, false, "GEMMA2", "gemma.gemma_tokenizer", "tokenizer.model", NULL},
    {"gemma-2-27b", "gemma2", "gemma2_27b", "lora_gemma2_27b", "qlora_gemma2_27b", false, false, "GEMMA2", "gemma.gemma_tokenizer", "tokenizer.model", NULL},
};
enum { NMODELS = sizeof models / sizeof *models };

const tt_model *tt_model_at(int i) { return i >= 0 && i < NMODELS ? &models[i] : NULL; }

/* A builder fixes its model's shape: the model must have it, whatever its name. */
static bool same_shape(const mp_model *a, const mp_model *b)
{
    return a->layers == b->layers && a->hidden == b->hidden && a->heads == b->heads &&
           a->kv_heads == b->kv_heads && a->head_dim == b->head_dim && a->ffn == b->ffn && a->vocab == b->vocab &&
           a->tied == b->tied && a->experts == b->experts && a->mlp == b->mlp && a->norm == b->norm;
}

static const mp_model *profile_named(const char *name)
{
    const mp_model *p;
    for (int j = 0; (p = mp_model_at(j)); j++)
        if (!strcmp(p->name, name)) return p;
    return NULL;
}

const tt_model *tt_model_of(const mp_model *m)
{
    for (int i = 0; i < NMODELS; i++) {
        const mp_model *p = profile_named(models[i].profile);
        if (!p || !same_shape(p, m)) continue;
        /* the profile itself, or a config.json with its Hugging Face id */
        if (!strcmp(models[i].profile, m->name) || (m->hf_id[0] && !strcasecmp(p->hf_id, m->hf_id)))
            return &models[i];
    }
    return NULL;
}

/* name is the row's builder, or its LoRA or QLoRA one */
static bool builds(const tt_model *t, const char *name, tt_kind *kind)
{
    if (!strcmp(name, t->builder)) return *kind = TT_FULL, true;
    if (t->lora_builder && !strcmp(name, t->lora_builder)) return *kind = TT_LORA, true;
    if (t->qlora_builder && !strcmp(name, t->qlora_builder)) return *kind = TT_QLORA, true;
    return false;
}

const tt_model *tt_model_by_builder(const char *component, tt_kind *kind)
{
    static const char prefix[] = "torchtune.models.";
    if (!component || strncmp(component, prefix, sizeof prefix - 1)) return NULL;
    const char *package = component + sizeof prefix - 1, *dot = strchr(package, '.');
    if (!dot || strchr(dot + 1, '.')) return NULL;
    const char *name = dot + 1;
    /* Qwen2.5's _base builders have their _instruct twins' shapes (max_seq_len
     * differs: pytorch/torchtune@bd2a0fc7c314 torchtune/models/qwen2_5/_model_builders.py) */
    char twin[96] = "";
    size_t n = strlen(name);
    if (n > 5 && n < sizeof twin - 8 && !strcmp(name + n - 5, "_base"))
        snprintf(twin, sizeof twin, "%.*s_instruct", (int)(n - 5), name);
    for (int i = 0; i < NMODELS; i++) {
        const tt_model *t = &models[i];
        if (strlen(t->package) != (size_t)(dot - package) || strncmp(t->package, package, (size_t)(dot - package)))
            continue;
        if (builds(t, name, kind) || (twin[0] && builds(t, twin, kind))) return t;
    }
    return NULL;
}

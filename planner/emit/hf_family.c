/* hf_family.c — the transformers architectures memplan's profiles name: module
 * names for LoRA's targets and the attention implementations each declares.
 * Module names are the nn.Linear / Conv1D attributes of each modeling file and
 * sdpa its PreTrainedModel's _supports_sdpa and the layer class its
 * _no_split_modules, as tabulated with commits in tests/data/engines/
 * hf_modules.csv, hf_attention_support.csv and hf_layer_classes.csv (their
 * README names the files); tests/test_emit_hf.c checks this table against them. */
#include "emit/hf_family.h"

#include <stddef.h>
#include <string.h>

/*                         q        k        v        o        gate     up       down */
#define LLAMA_NAMES {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}
/* BLOOM, Falcon, GPT-NeoX: one fused query_key_value, "dense" out, a 4h MLP. */
#define FUSED_NEOX_NAMES {"query_key_value", "query_key_value", "query_key_value", "dense", NULL, \
                          "dense_h_to_4h", "dense_4h_to_h"}

static const hf_family families[] = {
    /* GPT-2's c_proj is both the attention output and the MLP's down projection:
     * the parent's name keeps them apart (PEFT matches a dotted suffix). */
    {"gpt2", {"c_attn", "c_attn", "c_attn", "attn.c_proj", NULL, "c_fc", "mlp.c_proj"}, true, false, "GPT2Block"},
    {"llama", LLAMA_NAMES, true, false, "LlamaDecoderLayer"},
    {"mistral", LLAMA_NAMES, true, false, "MistralDecoderLayer"},
    /* experts are per-expert Linear w1 (gate), w3 (up), w2 (down); `gate` is the router */
    {"mixtral", {"q_proj", "k_proj", "v_proj", "o_proj", "w1", "w3", "w2"}, true, false, "MixtralDecoderLayer"},
    {"qwen2", LLAMA_NAMES, true, false, "Qwen2DecoderLayer"},
    /* gate_proj/up_proj/down_proj reach the routed experts, the shared expert and dense layers */
    {"qwen2_moe", LLAMA_NAMES, true, false, "Qwen2MoeDecoderLayer"},
    {"phi", {"q_proj", "k_proj", "v_proj", "dense", NULL, "fc1", "fc2"}, true, false, "PhiDecoderLayer"},
    {"phi3", {"qkv_proj", "qkv_proj", "qkv_proj", "o_proj", "gate_up_proj", "gate_up_proj", "down_proj"}, true, false, "Phi3DecoderLayer"},
    {"gemma", LLAMA_NAMES, true, false, "GemmaDecoderLayer"},
    {"gemma2", LLAMA_NAMES, true, false, "Gemma2DecoderLayer"},
    {"opt", {"q_proj", "k_proj", "v_proj", "out_proj", NULL, "fc1", "fc2"}, false, false, "OPTDecoderLayer"},
    {"bloom", FUSED_NEOX_NAMES, false, false, "BloomBlock"},
    {"falcon", FUSED_NEOX_NAMES, true, false, "FalconDecoderLayer"},
    {"gpt_neox", FUSED_NEOX_NAMES, false, false, "GPTNeoXLayer"},
    /* DeepSeek-MoE is not merged in transformers: the hub's modeling file runs as remote code */
    {"deepseek", LLAMA_NAMES, true, true, NULL},
};
enum { NFAMILIES = sizeof families / sizeof *families };

const hf_family *hf_family_of(const char *model_type)
{
    for (int i = 0; i < NFAMILIES; i++)
        if (model_type && !strcmp(families[i].model_type, model_type)) return &families[i];
    return NULL;
}

const hf_family *hf_family_at(int i) { return i >= 0 && i < NFAMILIES ? &families[i] : NULL; }

int hf_family_targets(const hf_family *f, unsigned targets, const char **out)
{
    int n = 0;
    for (int r = 0; r < HF_NROLES; r++) {
        const char *name = f->module[r];
        if (!(targets & (1u << r)) || !name) continue;
        bool seen = false;
        for (int j = 0; j < n; j++) seen = seen || !strcmp(out[j], name);
        if (!seen) out[n++] = name;
    }
    return n;
}

/* family.c — the transformers architectures memplan knows (family.h), one row
 * per model_type.
 *
 * Module names are the nn.Linear / Conv1D attributes of each modeling file,
 * sdpa its PreTrainedModel's _supports_sdpa, the layer class its
 * _no_split_modules, as tabulated with commits in tests/data/engines/
 * hf_modules.csv, hf_attention_support.csv and hf_layer_classes.csv (their
 * README names the files); tests/test_emit_hf.c checks this table against
 * them. What a config leaves implied is each configuration class's default
 * and each modeling file's layout: OPT's two extra position rows
 * (OPTLearnedPositionalEmbedding offset 2), BLOOM's ALiBi and embedding
 * LayerNorm, GPT-NeoX's fused query_key_value and parallel residual
 * (use_parallel_residual, default True) with rotary_pct 0.25, Phi's partial
 * rotary (0.5), one LayerNorm and biased head, Qwen2's q/k/v biases, Falcon's
 * alibi, bias, parallel_attn and new_decoder_architecture keys. */
#include "model/family.h"

#include <stddef.h>
#include <string.h>

static const char *const role_names[MP_LORA_NROLES] = {"q", "k", "v", "o", "gate", "up", "down"};

const char *mp_lora_role_name(int r) { return r >= 0 && r < MP_LORA_NROLES ? role_names[r] : NULL; }

/*                         q        k        v        o        gate     up       down */
#define LLAMA_NAMES {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}
/* BLOOM, Falcon, GPT-NeoX: one fused query_key_value, "dense" out, a 4h MLP. */
#define FUSED_NEOX_NAMES {"query_key_value", "query_key_value", "query_key_value", "dense", NULL, \
                          "dense_h_to_4h", "dense_4h_to_h"}

static const mp_family families[] = {
    /* GPT-2's c_proj is both the attention output and the MLP's down projection:
     * the parent's name keeps them apart (PEFT matches a dotted suffix). */
    {"gpt2", "gpt2", {"c_attn", "c_attn", "c_attn", "attn.c_proj", NULL, "c_fc", "mlp.c_proj"}, true, false,
     "GPT2Block", .pos = -1},
    {"llama", "llama", LLAMA_NAMES, true, false, "LlamaDecoderLayer", .pos = -1, .untied = true},
    {"mistral", "llama", LLAMA_NAMES, true, false, "MistralDecoderLayer", .pos = -1},
    /* experts are per-expert Linear w1 (gate), w3 (up), w2 (down); `gate` is the router */
    {"mixtral", "llama", {"q_proj", "k_proj", "v_proj", "o_proj", "w1", "w3", "w2"}, true, false,
     "MixtralDecoderLayer", .pos = -1},
    {"qwen2", "llama", LLAMA_NAMES, true, false, "Qwen2DecoderLayer", .pos = -1, .qkv_bias = true},
    /* gate_proj/up_proj/down_proj reach the routed experts, the shared expert and dense layers */
    {"qwen2_moe", "llama", LLAMA_NAMES, true, false, "Qwen2MoeDecoderLayer", .pos = -1, .qkv_bias = true},
    {"phi", "gpt2", {"q_proj", "k_proj", "v_proj", "dense", NULL, "fc1", "fc2"}, true, false, "PhiDecoderLayer",
     .pos = MP_POS_ROPE, .head_bias = true, .norms_per_layer = 1, .unfused_qkv = true, .parallel_residual = true,
     .rotary = 0.5},
    {"phi3", "llama", {"qkv_proj", "qkv_proj", "qkv_proj", "o_proj", "gate_up_proj", "gate_up_proj", "down_proj"},
     true, false, "Phi3DecoderLayer", .pos = -1, .fused_qkv = true},
    {"gemma", "llama", LLAMA_NAMES, true, false, "GemmaDecoderLayer", .pos = -1},
    {"gemma2", "llama", LLAMA_NAMES, true, false, "Gemma2DecoderLayer", .pos = -1},
    {"opt", "gpt2", {"q_proj", "k_proj", "v_proj", "out_proj", NULL, "fc1", "fc2"}, true, false, "OPTDecoderLayer",
     .pos = -1, .pos_offset = 2},
    {"bloom", "gpt2", FUSED_NEOX_NAMES, false, false, "BloomBlock", .pos = MP_POS_ALIBI, .max_pos = 2048,
     .embed_norm = true},
    {"falcon", "gpt2", FUSED_NEOX_NAMES, true, false, "FalconDecoderLayer", .pos = MP_POS_ROPE,
     .parallel_residual = true, .parallel_key = "parallel_attn", .alibi_key = "alibi", .bias_key = "bias",
     .new_arch_key = "new_decoder_architecture"},
    {"gpt_neox", "gpt2", FUSED_NEOX_NAMES, true, false, "GPTNeoXLayer", .pos = MP_POS_ROPE, .fused_qkv = true,
     .parallel_residual = true, .parallel_key = "use_parallel_residual", .rotary = 0.25, .untied = true},
    /* DeepSeek-MoE is not merged in transformers: the hub's modeling file runs as remote code */
    {"deepseek", "llama", LLAMA_NAMES, true, true, NULL, .pos = -1},
    /* read from configs, with no modules tabulated */
    {"gptj", "gpt2", {NULL}, false, false, NULL, .pos = -1},
    {"gpt_bigcode", "gpt2", {NULL}, false, false, NULL, .pos = -1},
    {"stablelm", "llama", {NULL}, false, false, NULL, .pos = -1, .rotary = 0.25},
};
enum { NFAMILIES = sizeof families / sizeof *families };

const mp_family *mp_family_of(const char *model_type)
{
    for (int i = 0; i < NFAMILIES; i++)
        if (model_type && !strcmp(families[i].model_type, model_type)) return &families[i];
    return NULL;
}

const mp_family *mp_family_at(int i) { return i >= 0 && i < NFAMILIES ? &families[i] : NULL; }

bool mp_family_has_modules(const mp_family *f)
{
    for (int r = 0; f && r < MP_LORA_NROLES; r++)
        if (f->module[r]) return true;
    return false;
}

int mp_family_targets(const mp_family *f, unsigned targets, const char **out)
{
    int n = 0;
    for (int r = 0; r < MP_LORA_NROLES; r++) {
        const char *name = f->module[r];
        if (!(targets & (1u << r)) || !name) continue;
        bool seen = false;
        for (int j = 0; j < n; j++) seen = seen || !strcmp(out[j], name);
        if (!seen) out[n++] = name;
    }
    return n;
}

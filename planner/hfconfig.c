/* hfconfig.c — a model from a Hugging Face config.json (jansson).
 * Keys differ between architectures (n_embd vs hidden_size...), so each field
 * is read from the first of its known names; model_type picks the preset. */
#include "memplan.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

static json_t *first_key(json_t *root, const char *const *names)
{
    for (; *names; names++) {
        json_t *v = json_object_get(root, *names);
        if (v && !json_is_null(v)) return v;
    }
    return NULL;
}

/* Read an integer field; 0 if absent. -1 (with err) if present but not a positive integer. */
static int get_int(json_t *root, const char *const *names, int64_t *out, const char *path, char *err)
{
    json_t *v = first_key(root, names);
    if (!v) return 0;
    if (!json_is_integer(v) || json_integer_value(v) <= 0) {
        snprintf(err, MP_ERR_LEN, "config '%.150s': '%s' must be a positive integer", path, names[0]);
        return -1;
    }
    *out = json_integer_value(v);
    return 0;
}

static bool get_bool(json_t *root, const char *name, bool dflt)
{
    json_t *v = json_object_get(root, name);
    return v && json_is_boolean(v) ? json_is_true(v) : dflt;
}

static json_t *load_config(const char *path, char *err)
{
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    if (!root) {
        if (je.line <= 0 || strstr(je.text, "unable to open"))
            snprintf(err, MP_ERR_LEN, "cannot read config '%.150s': %.60s", path, je.text);
        else
            snprintf(err, MP_ERR_LEN, "config '%.150s' is not valid JSON (line %d): %.40s", path, je.line, je.text);
        return NULL;
    }
    if (!json_is_object(root)) {
        json_decref(root);
        snprintf(err, MP_ERR_LEN, "config '%.150s' is not a JSON object", path);
        return NULL;
    }
    return root;
}

/* The shape's numbers, each from the first of its known keys; 0, or -1 with err. */
static int read_shape(json_t *root, mp_model *m, const char *path, char *err)
{
    static const char *const k_layers[] = {"num_hidden_layers", "n_layer", "num_layers", "n_layers", NULL};
    static const char *const k_hidden[] = {"hidden_size", "n_embd", "d_model", "dim", NULL};
    static const char *const k_heads[] = {"num_attention_heads", "n_head", "num_heads", "n_heads", NULL};
    static const char *const k_kv[] = {"num_key_value_heads", "num_kv_heads", "n_head_kv", "multi_query_group_num", NULL};
    static const char *const k_hd[] = {"head_dim", NULL};
    static const char *const k_ffn[] = {"intermediate_size", "n_inner", "ffn_dim", "ffn_hidden_size", NULL};
    static const char *const k_vocab[] = {"vocab_size", "padded_vocab_size", NULL};
    static const char *const k_pos[] = {"max_position_embeddings", "n_positions", "seq_length", "max_seq_len", NULL};
    static const char *const k_experts[] = {"num_local_experts", "n_routed_experts", "num_experts", NULL};
    static const char *const k_topk[] = {"num_experts_per_tok", "moe_top_k", NULL};
    static const char *const k_eff[] = {"moe_intermediate_size", NULL};
    static const char *const k_shared[] = {"n_shared_experts", NULL};
    static const char *const k_sffn[] = {"shared_expert_intermediate_size", NULL};
    static const char *const k_dense[] = {"first_k_dense_replace", NULL};
    int rc = 0;
    rc |= get_int(root, k_layers, &m->layers, path, err);
    rc |= rc ? 0 : get_int(root, k_hidden, &m->hidden, path, err);
    rc |= rc ? 0 : get_int(root, k_heads, &m->heads, path, err);
    rc |= rc ? 0 : get_int(root, k_kv, &m->kv_heads, path, err);
    rc |= rc ? 0 : get_int(root, k_hd, &m->head_dim, path, err);
    rc |= rc ? 0 : get_int(root, k_ffn, &m->ffn, path, err);
    rc |= rc ? 0 : get_int(root, k_vocab, &m->vocab, path, err);
    rc |= rc ? 0 : get_int(root, k_pos, &m->max_pos, path, err);
    rc |= rc ? 0 : get_int(root, k_experts, &m->experts, path, err);
    rc |= rc ? 0 : get_int(root, k_topk, &m->top_k, path, err);
    rc |= rc ? 0 : get_int(root, k_eff, &m->expert_ffn, path, err);
    rc |= rc ? 0 : get_int(root, k_shared, &m->shared_experts, path, err);
    rc |= rc ? 0 : get_int(root, k_sffn, &m->shared_ffn, path, err);
    rc |= rc ? 0 : get_int(root, k_dense, &m->dense_layers, path, err);
    if (rc) return -1;
    const char *missing = !m->layers ? "num_hidden_layers" : !m->hidden ? "hidden_size"
                        : !m->heads ? "num_attention_heads" : !m->vocab ? "vocab_size" : NULL;
    if (missing) {
        snprintf(err, MP_ERR_LEN, "config '%.150s' lacks '%s'", path, missing);
        return -1;
    }
    return 0;
}

/* Experts' widths where the config leaves them implied, and Falcon's multi-query flag. */
static void implied_widths(json_t *root, mp_model *m)
{
    if (m->shared_ffn && !m->shared_experts) m->shared_experts = 1;
    /* DeepSeek-MoE: n_shared_experts experts of the routed width, fused into one MLP */
    if (m->shared_experts && !m->shared_ffn) m->shared_ffn = m->shared_experts * m->expert_ffn;
    if (m->experts && m->expert_ffn == 0) m->expert_ffn = m->ffn;
    if (get_bool(root, "multi_query", false) && !m->kv_heads) m->kv_heads = 1;
}

/* Per-architecture details that change the parameter count: positions,
 * biases, fused projections, norms, and whether the head is tied. */
static void architecture_details(json_t *root, const char *type, bool gpt, mp_model *m)
{
    if (!strcmp(type, "opt")) m->pos_offset = 2;
    if (!strcmp(type, "bloom")) m->pos = MP_POS_ALIBI, m->embed_norm = true, m->max_pos = m->max_pos ? m->max_pos : 2048;
    if (!strcmp(type, "falcon")) {
        m->pos = get_bool(root, "alibi", false) ? MP_POS_ALIBI : MP_POS_ROPE;
        m->qkv_bias = m->out_bias = m->mlp_bias = get_bool(root, "bias", false);
        if (get_bool(root, "parallel_attn", true) && !get_bool(root, "new_decoder_architecture", false))
            m->norms_per_layer = 1;
    }
    if (!strcmp(type, "gpt_neox")) m->pos = MP_POS_ROPE, m->fused_qkv = true;
    if (!strcmp(type, "phi")) m->pos = MP_POS_ROPE, m->head_bias = true, m->norms_per_layer = 1, m->fused_qkv = false;
    if (!strcmp(type, "qwen2") || !strcmp(type, "qwen2_moe")) m->qkv_bias = true;
    if (!strcmp(type, "phi3")) m->fused_qkv = true;
    json_t *ab = json_object_get(root, "attention_bias");
    if (ab && json_is_boolean(ab)) m->qkv_bias = m->out_bias = json_is_true(ab);
    json_t *mb = json_object_get(root, "mlp_bias");
    if (mb && json_is_boolean(mb)) m->mlp_bias = json_is_true(mb);
    /* Hugging Face's default ties the head; Llama-family configs say so explicitly */
    json_t *tie = json_object_get(root, "tie_word_embeddings");
    if (tie && json_is_boolean(tie)) m->tied = json_is_true(tie);
    else m->tied = gpt || strcmp(type, "llama") != 0;
    if (!strcmp(type, "gpt_neox") && !tie) m->tied = false;
}

int mp_model_from_hf_config(const char *path, mp_model *m, char *err)
{
    json_t *root = load_config(path, err);
    if (!root) return -1;
    memset(m, 0, sizeof *m);
    const char *type = json_string_value(json_object_get(root, "model_type"));
    if (!type) type = "";
    bool gpt = !strcmp(type, "gpt2") || !strcmp(type, "opt") || !strcmp(type, "bloom") ||
               !strcmp(type, "gpt_neox") || !strcmp(type, "phi") || !strcmp(type, "falcon") ||
               !strcmp(type, "gptj") || !strcmp(type, "gpt_bigcode");
    /* an unknown type: RMSNorm's epsilon key marks a Llama-like model */
    if (!*type) gpt = !json_object_get(root, "rms_norm_eps");
    mp_model_preset(m, gpt ? "gpt2" : "llama", err);
    snprintf(m->family, sizeof m->family, "%s", *type ? type : (gpt ? "gpt2" : "llama"));
    if (read_shape(root, m, path, err)) {
        json_decref(root);
        return -1;
    }
    implied_widths(root, m);
    architecture_details(root, type, gpt, m);
    const char *name = json_string_value(json_object_get(root, "_name_or_path"));
    const char *slash = strrchr(path, '/');
    snprintf(m->name, sizeof m->name, "%s", name && *name ? name : (slash ? slash + 1 : path));
    /* the repo id the checkpoint was saved from, when the config records one */
    if (name && *name) snprintf(m->hf_id, sizeof m->hf_id, "%s", name);
    snprintf(m->source, sizeof m->source, "Hugging Face config.json '%.200s'", path);
    json_decref(root);
    return mp_model_finish(m, err);
}

/* hfconfig.c — a model from a Hugging Face config.json (jansson).
 * Keys differ between architectures (n_embd vs hidden_size...), so each field
 * is read from the first of its known names; model_type picks the preset. */
#include "common/errors.h"
#include "common/files.h"
#include "model/family.h"
#include "model/model.h"
#include "model/quantization_config.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static json_t *first_key(json_t *root, const char *const *names)
{
    for (; *names; names++) {
        json_t *v = json_object_get(root, *names);
        if (v && !json_is_null(v)) return v;
    }
    return NULL;
}

/* Read an integer field; 0 if absent. -1 (with err) if present but not a positive
 * integer up to `max`: the range of memplan's flag for the same dimension
 * (planner/cmd/args.c), since a width near 2^63 overflowed the shape's
 * arithmetic (heads x head_dim, 8 x hidden) as signed 64-bit integers. */
static int get_int(json_t *root, const char *const *names, int64_t max, int64_t *out, const char *path, char *err)
{
    json_t *v = first_key(root, names);
    if (!v) return 0;
    if (!json_is_integer(v) || json_integer_value(v) <= 0) {
        snprintf(err, MP_ERR_LEN, "config '%.150s': '%s' must be a positive integer", path, names[0]);
        return -1;
    }
    if (json_integer_value(v) > max) {
        snprintf(err, MP_ERR_LEN, "config '%.150s': '%s' is '%lld', above %lld", path, names[0],
                 (long long)json_integer_value(v), (long long)max);
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

/* The parsed text as a JSON object, or NULL with err (root NULL: jansson's je says why). */
static json_t *config_object(json_t *root, const json_error_t *je, const char *path, char *err)
{
    if (!root) {
        char q[120];
        mp_quote(path, q, sizeof q);
        if (je->line <= 0)
            snprintf(err, MP_ERR_LEN, "cannot read config '%s': %.90s", q, je->text);
        else
            snprintf(err, MP_ERR_LEN, "config '%s' is not valid JSON (line %d): %.80s", q, je->line, je->text);
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
    rc |= get_int(root, k_layers, 100000, &m->layers, path, err);
    rc |= rc ? 0 : get_int(root, k_hidden, 1 << 20, &m->hidden, path, err);
    rc |= rc ? 0 : get_int(root, k_heads, 1 << 16, &m->heads, path, err);
    rc |= rc ? 0 : get_int(root, k_kv, 1 << 16, &m->kv_heads, path, err);
    rc |= rc ? 0 : get_int(root, k_hd, 1 << 16, &m->head_dim, path, err);
    rc |= rc ? 0 : get_int(root, k_ffn, 1 << 22, &m->ffn, path, err);
    rc |= rc ? 0 : get_int(root, k_vocab, 1 << 24, &m->vocab, path, err);
    rc |= rc ? 0 : get_int(root, k_pos, 1 << 24, &m->max_pos, path, err);
    rc |= rc ? 0 : get_int(root, k_experts, 4096, &m->experts, path, err);
    rc |= rc ? 0 : get_int(root, k_topk, 4096, &m->top_k, path, err);
    rc |= rc ? 0 : get_int(root, k_eff, 1 << 22, &m->expert_ffn, path, err);
    rc |= rc ? 0 : get_int(root, k_shared, 64, &m->shared_experts, path, err);
    rc |= rc ? 0 : get_int(root, k_sffn, 1 << 22, &m->shared_ffn, path, err);
    rc |= rc ? 0 : get_int(root, k_dense, 100000, &m->dense_layers, path, err);
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
 * biases, fused projections, norms, and whether the head is tied; what the
 * family's row (family.c) implies, and the keys that say otherwise. */
static void architecture_details(json_t *root, const mp_family *f, mp_model *m)
{
    if (f) {
        if (f->pos >= 0) m->pos = (mp_pos)f->pos;
        if (f->alibi_key) m->pos = get_bool(root, f->alibi_key, false) ? MP_POS_ALIBI : MP_POS_ROPE;
        if (f->pos_offset) m->pos_offset = f->pos_offset;
        if (f->max_pos && !m->max_pos) m->max_pos = f->max_pos;
        if (f->embed_norm) m->embed_norm = true;
        if (f->qkv_bias) m->qkv_bias = true;
        if (f->head_bias) m->head_bias = true;
        if (f->fused_qkv) m->fused_qkv = true;
        if (f->unfused_qkv) m->fused_qkv = false;
        if (f->norms_per_layer) m->norms_per_layer = f->norms_per_layer;
        if (f->bias_key) m->qkv_bias = m->out_bias = m->mlp_bias = get_bool(root, f->bias_key, false);
        bool parallel = f->parallel_key ? get_bool(root, f->parallel_key, f->parallel_residual) : f->parallel_residual;
        if (f->new_arch_key) {
            /* FalconDecoderLayer: parallel_attn or the new architecture (ln_attn and ln_mlp);
             * the old parallel layout has one LayerNorm */
            bool new_arch = get_bool(root, f->new_arch_key, false);
            if (parallel && !new_arch) m->norms_per_layer = 1;
            parallel = parallel || new_arch;
        }
        if (f->parallel_residual || f->parallel_key) m->parallel_residual = parallel;
    }
    /* Gemma 2 caps attention scores and logits with tanh: a number here, null when off */
    m->attn_softcap = json_is_number(json_object_get(root, "attn_logit_softcapping"));
    m->logit_softcap = json_is_number(json_object_get(root, "final_logit_softcapping"));
    json_t *ab = json_object_get(root, "attention_bias");
    if (ab && json_is_boolean(ab)) m->qkv_bias = m->out_bias = json_is_true(ab);
    json_t *mb = json_object_get(root, "mlp_bias");
    if (mb && json_is_boolean(mb)) m->mlp_bias = json_is_true(mb);
    /* Hugging Face's default ties the head; Llama's and GPT-NeoX's configs untie it */
    json_t *tie = json_object_get(root, "tie_word_embeddings");
    if (tie && json_is_boolean(tie)) m->tied = json_is_true(tie);
    else m->tied = !(f && f->untied);
    /* Rotary on part of each head: GPT-NeoX's rotary_pct, Phi's and StableLM's
     * partial_rotary_factor, else the family's default */
    double rotary = f && f->rotary > 0 ? f->rotary : 1;
    json_t *rp = json_object_get(root, "rotary_pct");
    if (!rp) rp = json_object_get(root, "partial_rotary_factor");
    if (rp && json_is_number(rp)) rotary = json_number_value(rp);
    m->rope_partial = m->pos == MP_POS_ROPE && rotary < 1;
    /* the activation as transformers names it (GPT-2: activation_function, others: hidden_act) */
    const char *act = json_string_value(json_object_get(root, "activation_function"));
    if (!act) act = json_string_value(json_object_get(root, "hidden_act"));
    m->gelu_python = act && !strcmp(act, "gelu_new");
}

/* What transformers fills in when a nested text_config leaves a key out: the
 * defaults of its config class (LlamaConfig: huggingface/transformers
 * src/transformers/models/llama/configuration_llama.py @4bdeeced; MistralConfig:
 * .../mistral/configuration_mistral.py @0b07a74c). A top-level config.json
 * carries its keys; multimodal checkpoints often nest a partial one. */
static const struct text_defaults {
    const char *type;
    int64_t vocab, hidden, ffn, layers, heads, kv, max_pos;
    bool tied;
} text_defaults[] = {
    {"llama", 32000, 4096, 11008, 32, 32, 0, 2048, false},
    {"mistral", 32000, 4096, 14336, 32, 32, 8, 4096 * 32, false},
};

static const struct text_defaults *defaults_of(const char *type)
{
    for (size_t i = 0; i < sizeof text_defaults / sizeof *text_defaults; i++)
        if (!strcmp(type, text_defaults[i].type)) return &text_defaults[i];
    return NULL;
}

static void apply_defaults(const struct text_defaults *d, mp_model *m)
{
    m->vocab = d->vocab, m->hidden = d->hidden, m->ffn = d->ffn, m->layers = d->layers;
    m->heads = d->heads, m->kv_heads = d->kv, m->max_pos = d->max_pos;
}

/* A model folder (as saved by save_pretrained or downloaded from the Hub) holds its config.json. */
static const char *config_path(const char *path, char *buf, size_t len)
{
    struct stat st;
    if (stat(path, &st) || !S_ISDIR(st.st_mode)) return path;
    size_t n = strlen(path);
    snprintf(buf, len, "%s%sconfig.json", path, n && path[n - 1] == '/' ? "" : "/");
    return buf;
}

/* A multimodal checkpoint (LLaVA, Gemma 3, Mistral 3...) nests its language
 * model's config under text_config: that is the model trained here. */
static json_t *text_model(json_t *root, const char *path, bool *nested, char *err)
{
    json_t *tc = json_object_get(root, "text_config");
    *nested = tc != NULL && !json_is_null(tc);
    if (!*nested) return root;
    if (!json_is_object(tc)) {
        snprintf(err, MP_ERR_LEN, "config '%.150s': 'text_config' is not an object", path);
        return NULL;
    }
    return tc;
}

/* A name for a model known only by its file: the folder's name, or the file's. */
static void file_label(const char *given, bool folder, char *out, size_t len)
{
    size_t n = strlen(given);
    while (folder && n > 1 && given[n - 1] == '/') n--;
    size_t start = n;
    while (start > 0 && given[start - 1] != '/') start--;
    char base[4096];
    snprintf(base, sizeof base, "%.*s", (int)(n - start), given + start);
    mp_quote(base, out, len);
}

/* The model of a parsed config.json (its reference is taken): `given` is what
 * the user named (a file or a folder), `path` the file read. */
static int model_from_json(json_t *file, const char *given, const char *path, mp_model *m, char *err)
{
    bool nested;
    json_t *root = text_model(file, path, &nested, err);
    if (!root) {
        json_decref(file);
        return -1;
    }
    memset(m, 0, sizeof *m);
    const char *type = json_string_value(json_object_get(root, "model_type"));
    if (!type) type = "";
    /* the family's preset; no model_type: RMSNorm's epsilon key marks a Llama-like model */
    const mp_family *f = mp_family_of(type);
    bool gpt = f ? !strcmp(f->preset, "gpt2") : !*type && !json_object_get(root, "rms_norm_eps");
    mp_model_preset(m, gpt ? "gpt2" : "llama", err);
    /* labels are shown (reports, comments): written as one line of plain text */
    mp_quote(*type ? type : (gpt ? "gpt2" : "llama"), m->family, sizeof m->family);
    const struct text_defaults *dflt = nested ? defaults_of(type) : NULL;
    if (dflt) apply_defaults(dflt, m); /* the keys given override them below */
    if (read_shape(root, m, path, err)) {
        json_decref(file);
        return -1;
    }
    implied_widths(root, m);
    architecture_details(root, f, m);
    if (hf_quantization_config(file, path, m, err)) { /* the checkpoint's, not its text model's */
        json_decref(file);
        return -1;
    }
    if (dflt && !json_object_get(root, "tie_word_embeddings")) m->tied = dflt->tied;
    /* the checkpoint's own name, not its text model's */
    const char *name = json_string_value(json_object_get(file, "_name_or_path"));
    /* the repo id (or folder) the checkpoint was saved from, when the config records
     * one: kept whole, since an emitted script loads it, or refused */
    if (name && strlen(name) >= sizeof m->hf_id) {
        snprintf(err, MP_ERR_LEN, "%.120s: _name_or_path is %zu bytes long; a Hub id or a folder of at most %zu "
                 "is read", path, strlen(name), sizeof m->hf_id - 1);
        json_decref(file); /* after: name lives in it */
        return -1;
    }
    if (name && *name) mp_quote(name, m->name, sizeof m->name);
    else file_label(given, path != given, m->name, sizeof m->name);
    if (name && *name) snprintf(m->hf_id, sizeof m->hf_id, "%s", name);
    snprintf(m->source, sizeof m->source, "Hugging Face config.json '%.180s'%s", path,
             nested ? " (its text_config: the language model only)" : "");
    json_decref(file);
    if (mp_model_finish(m, err)) return -1;
    return hf_quantization_groups_check(m, path, err);
}

bool mp_hf_id_not_file(const char *given)
{
    struct stat st;
    const char *slash = given ? strchr(given, '/') : NULL;
    return slash && slash != given && slash[1] && !strchr(slash + 1, '/') && given[0] != '.' && stat(given, &st);
}

int mp_model_from_hf_config(const char *given, mp_model *m, char *err)
{
    char folder_config[4096];
    const char *path = config_path(given, folder_config, sizeof folder_config);
    if (mp_hf_id_not_file(given)) {
        /* a Hub id, whose config.json must be fetched first: the whole line, the URL
         * left out where the id is too long for both */
        char q[160];
        mp_quote(given, q, sizeof q);
        int n = snprintf(err, MP_ERR_LEN, "'%s' is no file here: --hf-config reads a config.json; fetch it with "
                         "huggingface-cli download %s config.json (it prints the path) or from "
                         "https://huggingface.co/%s/resolve/main/config.json", q, q, q);
        if (n >= MP_ERR_LEN)
            n = snprintf(err, MP_ERR_LEN, "'%s' is no file here: --hf-config reads a config.json; fetch it with "
                         "huggingface-cli download %s config.json", q, q);
        if (n >= MP_ERR_LEN)
            snprintf(err, MP_ERR_LEN, "'%s' is no file here: --hf-config reads a config.json (fetch it with "
                     "huggingface-cli download)", q);
        return -1;
    }
    if (mp_check_input_file("config", path, 16.0 * 1048576, err)) return -1;
    /* opened here, so that why it cannot be says so whole (jansson's message, the path
     * again in 160 bytes, was cut mid-word) */
    FILE *f = fopen(path, "rb");
    if (!f) {
        char q[160];
        snprintf(err, MP_ERR_LEN, "cannot read config '%s': %s", mp_quote(path, q, sizeof q), strerror(errno));
        return -1;
    }
    json_error_t je;
    json_t *file = config_object(json_loadf(f, 0, &je), &je, path, err);
    fclose(f);
    if (!file) return -1;
    return model_from_json(file, given, path, m, err);
}

int mp_model_from_hf_json(const char *text, size_t len, const char *name, mp_model *m, char *err)
{
    json_error_t je;
    json_t *file = config_object(json_loadb(text, len, 0, &je), &je, name, err);
    if (!file) return -1;
    return model_from_json(file, name, name, m, err);
}

/* model.c — architecture presets, exact parameter counts and module shapes. */
#include "common/errors.h"
#include "model/family.h"
#include "model/model.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int mp_model_preset(mp_model *m, const char *family, char *err)
{
    if (strcmp(family, "gpt2") == 0) {
        /* GPT-2: LayerNorm with bias, GELU MLP, learned positions, biases, tied head. */
        m->norm = MP_NORM_LAYER, m->mlp = MP_MLP_GELU, m->pos = MP_POS_LEARNED;
        m->qkv_bias = m->out_bias = m->mlp_bias = m->norm_bias = true;
        m->tied = true, m->fused_qkv = true;
    } else if (strcmp(family, "llama") == 0) {
        /* Llama: RMSNorm, SwiGLU, rotary positions, no biases, untied head. */
        m->norm = MP_NORM_RMS, m->mlp = MP_MLP_GATED, m->pos = MP_POS_ROPE;
        m->qkv_bias = m->out_bias = m->mlp_bias = m->norm_bias = false;
        m->tied = false, m->fused_qkv = false;
    } else {
        snprintf(err, MP_ERR_LEN, "unknown family '%s' (use gpt2 or llama)", family);
        return -1;
    }
    snprintf(m->family, sizeof m->family, "%s", family);
    m->head_bias = false, m->embed_norm = false;
    m->final_norm = true, m->norms_per_layer = 2;
    return 0;
}

/* Llama's rule for the SwiGLU width: 2/3 of 4C, rounded up to a multiple of 256. */
static int64_t llama_ffn(int64_t c)
{
    int64_t f = (8 * c) / 3;
    return (f + 255) / 256 * 256;
}

int mp_model_finish(mp_model *m, char *err)
{
    if (m->layers <= 0 || m->hidden <= 0 || m->heads <= 0 || m->vocab <= 0) {
        snprintf(err, MP_ERR_LEN, "model needs positive --layers, --hidden, --heads and --vocab"
                                  " (got %lld, %lld, %lld, %lld)",
                 (long long)m->layers, (long long)m->hidden, (long long)m->heads,
                 (long long)m->vocab);
        return -1;
    }
    if (!m->head_dim) {
        if (m->hidden % m->heads) {
            snprintf(err, MP_ERR_LEN, "heads '%lld' do not divide the hidden size '%lld'",
                     (long long)m->heads, (long long)m->hidden);
            return -1;
        }
        m->head_dim = m->hidden / m->heads;
    }
    if (!m->kv_heads) m->kv_heads = m->heads;
    if (m->kv_heads < 0 || m->kv_heads > m->heads || m->heads % m->kv_heads) {
        snprintf(err, MP_ERR_LEN, "kv-heads '%lld' must divide heads '%lld'",
                 (long long)m->kv_heads, (long long)m->heads);
        return -1;
    }
    if (!m->ffn) m->ffn = m->mlp == MP_MLP_GATED ? llama_ffn(m->hidden) : 4 * m->hidden;
    if (m->ffn < 0) {
        snprintf(err, MP_ERR_LEN, "invalid ffn '%lld'", (long long)m->ffn);
        return -1;
    }
    if (!m->max_pos) m->max_pos = 2048;
    if (!m->norms_per_layer) m->norms_per_layer = 2;
    if (m->experts < 0 || m->top_k < 0 || (m->experts && (m->top_k < 1 || m->top_k > m->experts))) {
        snprintf(err, MP_ERR_LEN, "top-k '%lld' must be between 1 and the experts '%lld'",
                 (long long)m->top_k, (long long)m->experts);
        return -1;
    }
    /* DeepSeek's first_k_dense_replace beyond the layers left a negative count of MoE layers */
    if (m->dense_layers < 0 || m->dense_layers > m->layers) {
        snprintf(err, MP_ERR_LEN, "dense layers '%lld' must be from 0 to the layers '%lld'",
                 (long long)m->dense_layers, (long long)m->layers);
        return -1;
    }
    if (m->experts && !m->expert_ffn) m->expert_ffn = m->ffn;
    if (m->shared_experts && !m->shared_ffn) m->shared_ffn = m->shared_experts * m->expert_ffn;
    if (!m->name[0])
        snprintf(m->name, sizeof m->name, "custom-%s-%lldx%lld", m->family[0] ? m->family : "model",
                 (long long)m->layers, (long long)m->hidden);
    return 0;
}

/* One MLP of inner width f: up and down (GELU), or gate, up and down (gated). */
static double mlp_params(const mp_model *m, int64_t f)
{
    double c = (double)m->hidden;
    if (m->mlp == MP_MLP_GATED)
        return 3.0 * c * f + (m->mlp_bias ? 2.0 * f + c : 0);
    return 2.0 * c * f + (m->mlp_bias ? (double)f + c : 0);
}

void mp_param_count(const mp_model *m, mp_params *p)
{
    memset(p, 0, sizeof *p);
    double c = (double)m->hidden, L = (double)m->layers;
    double q = (double)(m->heads * m->head_dim), kv = (double)(m->kv_heads * m->head_dim);
    double norm = m->norm_bias ? 2 * c : c;

    p->embed = (double)m->vocab * c;
    if (m->pos == MP_POS_LEARNED) p->pos = (double)(m->max_pos + m->pos_offset) * c;
    if (!m->tied) p->head = mp_head_outputs(m) * c;
    if (m->head_bias) p->head += mp_head_outputs(m);

    double attn = c * q + 2 * c * kv + q * c;
    if (m->qkv_bias) attn += q + 2 * kv;
    if (m->out_bias) attn += c;
    p->attn = L * attn;

    double mlp_all, mlp_active;
    if (m->experts) {
        double one = mlp_params(m, m->expert_ffn);
        double shared = m->shared_experts ? mlp_params(m, m->shared_ffn) : 0;
        double dense = (double)m->dense_layers, moe = L - dense;
        mlp_all = m->experts * one + shared;
        mlp_active = m->top_k * one + shared;
        p->router = moe * c * (double)m->experts;
        p->mlp = moe * mlp_all + dense * mlp_params(m, m->ffn);
        /* per token, a dense layer is fully active */
        mlp_active = (moe * mlp_active + dense * mlp_params(m, m->ffn)) / L;
        mlp_all = p->mlp / L;
    } else {
        mlp_all = mlp_active = mlp_params(m, m->ffn);
        p->mlp = L * mlp_all;
    }
    p->norms = L * m->norms_per_layer * norm + (m->final_norm ? norm : 0) +
               (m->embed_norm ? 2 * c : 0);
    p->total = p->embed + p->pos + p->head + p->attn + p->mlp + p->norms + p->router;
    p->active = p->total - L * (mlp_all - mlp_active);
}

/* The LoRA target bits a linear module answers to: its role's, or q|k|v for a fused "qkv". */
static unsigned linear_target_bit(const char *nm)
{
    if (!strcmp(nm, "qkv")) return MP_LORA_Q | MP_LORA_K | MP_LORA_V;
    for (int r = 0; r < MP_LORA_NROLES; r++)
        if (!strcmp(nm, mp_lora_role_name(r))) return 1u << r;
    return 0;
}

int mp_model_linears(const mp_model *m, mp_linear *out, int max)
{
    int n = 0;
    int64_t c = m->hidden, q = m->heads * m->head_dim, kv = m->kv_heads * m->head_dim;
    int64_t experts = m->experts ? m->experts : 1;
#define ADD(nm, i, o, cnt) \
    do { if (n < max) out[n] = (mp_linear){nm, linear_target_bit(nm), i, o, cnt}; n++; } while (0)
    if (m->fused_qkv) {
        ADD("qkv", c, q + 2 * kv, 1);
    } else {
        ADD("q", c, q, 1);
        ADD("k", c, kv, 1);
        ADD("v", c, kv, 1);
    }
    ADD("o", q, c, 1);
    int64_t f = m->experts ? m->expert_ffn : m->ffn;
    if (m->mlp == MP_MLP_GATED) ADD("gate", c, f, experts);
    ADD("up", c, f, experts);
    ADD("down", f, c, experts);
    if (m->shared_experts) {
        if (m->mlp == MP_MLP_GATED) ADD("gate", c, m->shared_ffn, 1);
        ADD("up", c, m->shared_ffn, 1);
        ADD("down", m->shared_ffn, c, 1);
    }
#undef ADD
    return n;
}

/* Hidden width for about `params` parameters with Llama's proportions:
 * head dim 128, L = C/128 (Llama 2 7B: 4096/32, 13B: 5120/40), V = 32000. */
int mp_model_from_params(double params, mp_model *m, char *err)
{
    if (!(params >= 1e5 && params <= 1e13)) {
        snprintf(err, MP_ERR_LEN, "invalid --params '%g' (between 1e5 and 1e13)", params);
        return -1;
    }
    memset(m, 0, sizeof *m);
    mp_model_preset(m, "llama", err);
    m->vocab = 32000;
    m->max_pos = 4096;
    double best_err = INFINITY;
    mp_model best = *m;
    for (int64_t c = 128; c <= 32768; c += 128) {
        mp_model t = *m;
        t.hidden = c;
        t.heads = c >= 128 ? c / 128 : 1;
        t.head_dim = 0, t.ffn = 0;
        t.layers = 1;
        if (mp_model_finish(&t, err)) continue;
        mp_params p1;
        mp_param_count(&t, &p1);
        double per_layer = p1.attn + p1.mlp + 2.0 * c;
        double fixed = p1.total - per_layer;
        double l = round((params - fixed) / per_layer);
        if (l < 1) continue;
        t.layers = (int64_t)l;
        /* prefer the Llama aspect ratio L = C/128, then the closest count */
        double aspect = fabs(log((double)t.layers / ((double)c / 128.0)));
        mp_params p;
        mp_param_count(&t, &p);
        double e = aspect + fabs(p.total - params) / params * 10;
        if (e < best_err) best_err = e, best = t;
    }
    if (!isfinite(best_err)) {
        snprintf(err, MP_ERR_LEN, "cannot infer a shape for --params '%g'", params);
        return -1;
    }
    *m = best;
    mp_params p;
    mp_param_count(m, &p);
    snprintf(m->name, sizeof m->name, "inferred-%.3gB", p.total / 1e9);
    snprintf(m->source, sizeof m->source,
             "shape inferred from --params with Llama proportions (head dim 128, layers = hidden/128, vocab 32000)");
    return mp_model_finish(m, err);
}

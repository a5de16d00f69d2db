/* activations.c — what one transformer layer saves for backward, and the logits.
 *
 * Per layer, for B sequences of T tokens (sb = B*T), following Korthikanti et
 * al. 2022, Sec. 4.1: with 16-bit activations, a GPT-style layer with dropout
 * saves sbh(34 + 5as/h) bytes; the terms below reproduce that count and extend
 * it (GQA, gated MLPs, RMSNorm, flash attention, experts, LoRA, autocast). */
#include "activations.h"
#include "framework.h"

/* How many copies of a norm's output the linears reading it keep (those
 * answering to the bits). Without autocast they share the one tensor. Under
 * autocast each linear casts its fp32 input to 16 bits for itself, so separate
 * q, k and v projections keep three copies where a fused qkv keeps one. With a
 * frozen base only the adapted linears keep one (their adapter's A casts it). */
static double norm_output_copies(const mp_linear *lin, int n, const mp_settings *s, unsigned bits)
{
    const bool amp = s->precision == MP_AMP_BF16 || s->precision == MP_AMP_FP16;
    int copies = 0, readers = 0;
    for (int i = 0; i < n; i++) {
        if (!(lin[i].target & bits)) continue;
        readers++;
        if (s->lora_rank == 0 || (lin[i].target & s->lora_targets)) copies++;
    }
    if (readers == 0) return 0;
    return amp ? copies : copies > 0;
}

void activations_per_layer(const mp_model *m, const mp_settings *s, act_breakdown *ab)
{
    const mp_framework *fw = settings_framework(s);
    const bool torch = fw->kind == MP_FW_PYTORCH;
    const double sb = (double)s->batch * (double)s->seq, T = (double)s->seq;
    const double C = (double)m->hidden, NH = (double)m->heads;
    const double QD = NH * (double)m->head_dim, KVD = (double)m->kv_heads * (double)m->head_dim;
    const bool amp = s->precision == MP_AMP_BF16 || s->precision == MP_AMP_FP16;
    const double a = s->precision == MP_FP32 ? 4 : 2;   /* activation element */
    const double r = amp ? 4 : a;                        /* the residual stream stays fp32 under autocast */
    const double scores = (double)s->batch * NH * T * T; /* B*NH*T*T */
    /* A dropout mask: a bool per element on GPUs (native_dropout), the
     * activation's own type where the framework multiplies by a float mask. */
    const double mask = fw->dropout_mask_bytes > 0 ? fw->dropout_mask_bytes : a;
    mp_linear lin[16];
    int nlin = mp_model_linears(m, lin, 16);
    if (nlin > 16) nlin = 16;

    /* Norms save their input; LayerNorm adds mean and rstd (fp32), RMSNorm rstd.
     * Hugging Face's eager RMSNorm upcasts its input to fp32 (kept by pow), keeps
     * the normalised input (in the input's type) for the weight's gradient, and
     * on torch 1.x mean() keeps x^2 as well. */
    const bool frozen = s->lora_rank > 0;
    double norm = r * sb * C + (m->norm == MP_NORM_LAYER ? 8 : 4) * sb;
    if (m->norm == MP_NORM_RMS && torch)
        norm = 4 * sb * C + (frozen ? 0 : r * sb * C) + 4 * sb + (fw->mean_keeps_input ? 4 * sb * C : 0);
    /* The norm's output is the next linear's input (a 16-bit cast under autocast).
     * Autograd keeps a linear's input only for its weight's gradient: with a
     * frozen base, only where an adapter reads it. */
#define KEEPS(bits) (!frozen || (s->lora_targets & (bits)))
    double attn = norm + norm_output_copies(lin, nlin, s, MP_LORA_Q | MP_LORA_K | MP_LORA_V) * a * sb * C;
    /* Q and K (after rotary) for Q K^T, V for the probabilities times V.
     * Hugging Face's eager attention repeats grouped K/V heads (repeat_kv) first. */
    double kv_saved = s->attention == MP_ATTN_EAGER && torch ? QD : KVD;
    attn += a * sb * (QD + 2 * kv_saved);
    double core = 0;
    if (s->attention == MP_ATTN_EAGER) {
        /* The softmax output. Under autocast it is fp32 with a 16-bit copy for
         * the next matmul, where autocast runs softmax in fp32 (CUDA) or the model
         * asks for it (Llama-lineage code: softmax(..., dtype=float32)); CPU
         * autocast leaves GPT-2-style softmax in 16 bits. */
        bool fp32_softmax = amp && (fw->autocast_softmax_fp32 || m->norm == MP_NORM_RMS);
        core = (fp32_softmax ? 4 + 2 : a) * scores;
        if (s->dropout) core += (mask + a) * scores; /* mask and dropped probabilities */
        if (KEEPS(MP_LORA_O)) attn += a * sb * QD;     /* attention output: o-proj input */
    } else {
        attn += a * sb * QD + 4 * sb * NH;             /* output and row logsumexp */
    }
    if (s->dropout) attn += mask * sb * C;             /* mask after the o-proj */

    double mlp = norm + norm_output_copies(lin, nlin, s, MP_LORA_GATE | MP_LORA_UP) * a * sb * C;
    double f = (double)(m->experts ? m->expert_ffn : m->ffn);
    double down_in = KEEPS(MP_LORA_DOWN) ? 1 : 0;    /* the down projection's input */
    double one_mlp = m->mlp == MP_MLP_GATED ? (3 + down_in) * a * sb * f  /* gate, silu(gate), up, product */
                                            : (1 + down_in) * a * sb * f; /* GELU input and output */
    if (m->experts) {
        double k = (double)m->top_k;
        mlp += k * one_mlp;                        /* each token through top_k experts */
        mlp += k * a * sb * C;                     /* tokens gathered per expert */
        mlp += 2 * 4 * sb * (double)m->experts;    /* router logits and probabilities (fp32) */
        if (m->shared_experts)
            mlp += (m->mlp == MP_MLP_GATED ? 3 + down_in : 1 + down_in) * a * sb * (double)m->shared_ffn;
    } else {
        mlp += one_mlp;
    }
    if (s->dropout) mlp += mask * sb * C;

    /* LoRA: each adapted module saves A's output (rank r); its input is shared. */
    double lora = 0;
    if (s->lora_rank > 0) {
        for (int i = 0; i < nlin; i++) {
            unsigned bit = lin[i].target;
            if (bit & s->lora_targets) {
                double tok = m->experts && (bit & MP_LORA_MLP) ? sb * (double)m->top_k : sb;
                lora += a * tok * (double)s->lora_rank;
            }
        }
    }

    ab->attn_core = core;
    ab->total = attn + core + mlp + lora;
    ab->layer_input = r * sb * C;
    ab->final_norm = norm + (frozen ? 0 : a * sb * C); /* a frozen head keeps no input */
#undef KEEPS
    ab->embed_mask = s->dropout ? mask * sb * C : 0;
    /* Backward: gradients of the scores (eager) and of the widest tensors. */
    ab->backward_temp = 2 * a * sb * f * (m->experts ? (double)m->top_k : 1) + 3 * a * sb * C +
                        (s->attention == MP_ATTN_EAGER ? 2 * a * scores : a * sb * (QD + 2 * KVD));
    /* a calibrated profile scales every activation term alike */
    const double k = fw->act_scale > 0 ? fw->act_scale : 1;
    ab->total *= k, ab->attn_core *= k, ab->layer_input *= k, ab->final_norm *= k;
    ab->embed_mask *= k, ab->backward_temp *= k;
}

void logits_model(const mp_model *m, const mp_settings *s, double tokens, double *fwd, double *bwd)
{
    const double V = (double)m->vocab;
    const double a = s->precision == MP_FP32 ? 4 : 2;
    /* fwd: the loss's peak in forward; bwd: what the loss's backward adds to it. */
    if (settings_framework(s)->fp32_logits) {
        /* Hugging Face's loss: the logits, their fp32 copy (16-bit logits only)
         * and the fp32 log-softmax are live together while the loss is computed.
         * In the loss's backward the logits are gone (the Trainer keeps only the
         * loss): the saved log-softmax, the NLL's gradient and the log-softmax
         * input's gradient, all fp32, 12 bytes per logit. */
        *fwd = (a + (a == 2 ? 4 : 0) + 4) * tokens * V;
        *bwd = 12 * tokens * V - *fwd;
    } else {
        *fwd = a == 4 ? 4 * tokens * V : (a + 4) * tokens * V; /* log-softmax in place of the copy */
        *bwd = 8 * tokens * V;
    }
    const double k = settings_framework(s)->act_scale;
    if (k > 0) *fwd *= k, *bwd *= k;
}

/* estimate.c — memory of one training step, component by component.
 *
 * The model follows what a framework allocates, in the order a step runs:
 *   forward   saved activations pile up layer by layer, then the logits;
 *   backward  the loss gradient appears, activations are freed as each layer's
 *             gradients appear;
 *   optimizer the state exists (allocated at the first step) next to weights
 *             and gradients, plus the optimizer's temporaries.
 * The peak is the largest of these moments, not the sum of each component's
 * maximum. Activation terms follow Korthikanti et al. 2022 ("Reducing
 * Activation Recomputation in Large Transformer Models", Sec. 4), extended to
 * GQA, gated MLPs, RMSNorm, flash attention and mixture of experts. */
#include "memplan.h"
#include "estimate.h"
#include "activations.h"
#include "framework.h"
#include "host.h"
#include "memtrain_model.h"
#include "params.h"
#include "speed.h"

#include <math.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static bool is_16bit_storage(mp_precision p)
{
    return p == MP_MIXED_BF16 || p == MP_MIXED_FP16 || p == MP_PURE_BF16;
}
static bool is_amp(mp_precision p) { return p == MP_AMP_BF16 || p == MP_AMP_FP16; }

/* ---------- terms (for --explain) ---------- */

static void term(mp_estimate *e, bool explain, int comp, const char *name, double bytes,
                 const char *fmt, ...)
{
    if (!explain || e->nterms >= MP_MAX_TERMS || bytes == 0) return;
    mp_term *t = &e->terms[e->nterms++];
    t->component = comp;
    snprintf(t->name, sizeof t->name, "%s", name);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->formula, sizeof t->formula, fmt, ap);
    va_end(ap);
    t->bytes = bytes;
}

static void phase(mp_estimate *e, const char *name, const double comp[MP_NCOMP])
{
    if (e->nphases >= MP_MAX_PHASES) return;
    mp_phase *p = &e->phases[e->nphases++];
    p->name = name;
    p->total = 0;
    for (int c = 0; c < MP_NCOMP; c++) {
        p->comp[c] = comp[c];
        p->total += comp[c];
    }
}

/* Optimizer state bytes per trainable parameter (before sharding), and master weights. */
static double optimizer_state_bytes(const mp_settings *s, double n, const mp_model *m)
{
    double sb = s->precision == MP_PURE_BF16 ? 2 : 4; /* state element size */
    switch (s->optimizer) {
    case MP_ADAMW:
    case MP_PAGED_ADAMW: return 2 * sb * n; /* m and v */
    case MP_ADAMW_8BIT:
    case MP_PAGED_ADAMW_8BIT:
        /* two 1-byte states plus one fp32 absmax per block each (Dettmers et al. 2022) */
        return 2 * n + 2 * 4 * ceil(n / (double)s->adam8_block);
    case MP_SGD: return 0;
    case MP_SGD_MOMENTUM: return sb * n;
    case MP_LION: return sb * n; /* momentum only (Chen et al. 2023) */
    case MP_ADAFACTOR: {
        /* factored second moment: rows + columns per matrix (Shazeer & Stern 2018),
         * no first moment (beta1 = None, Hugging Face's default). */
        /* a C x F matrix keeps C + F numbers instead of C*F: about n/F + n/C */
        double c = (double)m->hidden, f = (double)(m->ffn > 0 ? m->ffn : m->hidden);
        return sb * (n / c + n / f);
    }
    default: return 0;
    }
}

int mp_estimate_run(const mp_model *m, const mp_settings *s, const mp_gpu *gpu, mp_estimate *e,
                    char *err)
{
    return mp_estimate_ex(m, s, gpu, e, true, err);
}

int mp_estimate_ex(const mp_model *m, const mp_settings *s, const mp_gpu *gpu, mp_estimate *e,
                   bool explain, char *err)
{
    if (mp_settings_check(m, s, err)) return -1;
    memset(e, 0, offsetof(mp_estimate, terms)); /* the terms array is filled only with explain */
    if (settings_framework(s)->kind == MP_FW_MEMTRAIN) {
        mp_param_count(m, &e->params);
        return memtrain_estimate(m, s, e, explain, err);
    }
    const mp_framework *fw = settings_framework(s);
    mp_param_count(m, &e->params);
    const double P = e->params.total;
    const double B = (double)s->batch, T = (double)s->seq;
    const double L = (double)m->layers, V = (double)m->vocab;
    const double tp = (double)s->tp, pp = (double)s->pp;
    const double dp = (double)(s->gpus / (s->tp * s->pp));
    const double shard_model = tp * pp; /* model parallel split of weights */
    const bool lora = s->lora_rank > 0;
    const bool amp = is_amp(s->precision), half = is_16bit_storage(s->precision);

    /* ---------------- weights ---------------- */
    double w_elt = half ? 2 : 4;  /* trainable weights' storage */
    double trainable, frozen_lin = 0, frozen_rest = 0;
    if (lora) {
        trainable = mp_lora_params(m, s->lora_rank, s->lora_targets);
        frozen_lin = linear_params(m);
        frozen_rest = P - frozen_lin;
    } else {
        trainable = P;
    }
    e->trainable_params = trainable;

    /* Expert parallelism splits the experts' weights, tensor and pipeline split everything. */
    double ep_div = 1;
    if (m->experts && s->ep > 1) ep_div = (double)s->ep;
    double expert_share = m->experts ? e->params.mlp / P : 0;
    /* split: the effective divisor of the parameter count on one GPU */
    double split = 1.0 / ((1 - expert_share) / shard_model + expert_share / (shard_model * ep_div));

    double zero_div_p = s->zero >= 3 ? dp : 1, zero_div_g = s->zero >= 2 ? dp : 1,
           zero_div_o = s->zero >= 1 ? dp : 1;

    double weights = 0, weights_host = 0;
    if (lora) {
        double base_elt = s->quant != MP_QUANT_NONE ? mp_quant_bytes_per_param(s->quant)
                        : (half || s->quant != MP_QUANT_NONE) ? 2 : 4;
        /* Quantised bases keep embeddings, norms and the head in 16 bits. */
        double rest_elt = s->quant != MP_QUANT_NONE ? 2 : (half ? 2 : 4);
        double base_lin = frozen_lin * base_elt / split, base_rest = frozen_rest * rest_elt / split;
        /* adapters are stored like trainable weights: 16-bit under mixed and pure
         * precision (fp32 masters in the optimizer for mixed), fp32 otherwise */
        double adapters = trainable * (half ? 2 : 4) / split;
        weights = (base_lin + base_rest) / zero_div_p + adapters / zero_div_p;
        term(e, explain, MP_WEIGHTS, "frozen base (linear layers)", base_lin / zero_div_p,
             "%.0f params x %.4g B (%s)", frozen_lin / split, base_elt,
             s->quant != MP_QUANT_NONE ? mp_quant_name(s->quant) : (base_elt == 2 ? "16-bit" : "fp32"));
        term(e, explain, MP_WEIGHTS, "frozen base (embeddings, norms, head)", base_rest / zero_div_p,
             "%.0f params x %.0f B", frozen_rest / split, rest_elt);
        term(e, explain, MP_WEIGHTS, "LoRA adapters", adapters / zero_div_p,
             "%.0f params (rank %lld) x %d B", trainable, (long long)s->lora_rank, half ? 2 : 4);
        w_elt = half ? 2 : 4;
    } else {
        weights = P * w_elt / split / zero_div_p;
        term(e, explain, MP_WEIGHTS, "parameters", weights, "%.0f params x %.0f B%s%s", P / split,
             w_elt, s->zero >= 3 ? " / dp (ZeRO-3)" : "", split > 1 ? " / model-parallel" : "");
    }
    if (s->offload == MP_OFFLOAD_PARAMS) {
        weights_host = weights;
        /* ZeRO-Infinity keeps the parameters on the host; the GPU holds the layers in flight. */
        double in_flight = 2.0 * (P / L) * 2 / split;
        term(e, explain, MP_WEIGHTS, "parameters in flight (offload)", in_flight,
             "2 layers x %.0f params x 2 B", P / L / split);
        weights = in_flight;
    }
    /* ZeRO-3 gathers each layer's full parameters for its forward and backward. */
    double gathered = 0;
    if (s->zero >= 3 && s->offload != MP_OFFLOAD_PARAMS) {
        gathered = 2.0 * (P / L) * (lora ? 2 : w_elt) / split;
        term(e, explain, MP_WEIGHTS, "gathered layer (ZeRO-3)", gathered,
             "prefetch 2 layers x %.0f params", P / L / split);
    }
    /* Autocast keeps 16-bit copies of the weights it casts until backward. */
    double cast_cache = 0, cast_after_fwd = 0;
    if (amp && fw->autocast_cache) {
        /* the head's matrix is cast too, the embedding's when the head is tied */
        double head_matrix = (double)m->vocab * (double)m->hidden;
        double castable = lora ? (s->quant == MP_QUANT_NONE ? frozen_lin + head_matrix : 0) + trainable
                               : linear_params(m) + head_matrix;
        cast_cache = castable * 2 / split / (s->zero >= 3 ? dp : 1);
        if (s->zero >= 3) cast_cache = 2.0 * (P / L) * 2 / split; /* per layer in flight */
        term(e, explain, MP_WEIGHTS, "autocast 16-bit weight copies", cast_cache,
             "%.0f params x 2 B, cached from forward to backward", castable / split);
        /* Under full checkpointing the layers' copies are made without a graph:
         * they go when autocast's cache is cleared at the end of forward, and
         * each layer's are made again when it is recomputed. The head's stay. */
        if (s->checkpointing == MP_CKPT_FULL && s->zero < 3 && (!lora || s->quant == MP_QUANT_NONE)) {
            double head_cast = head_matrix * 2 / split;
            cast_after_fwd = head_cast + (cast_cache - head_cast) / L;
        } else {
            cast_after_fwd = cast_cache;
        }
    }

    /* ---------------- gradients ---------------- */
    double g_elt = half ? 2 : 4;
    /* Megatron accumulates 16-bit training in fp32 main_grad buffers. */
    if (half && !lora && fw->kind == MP_FW_MEGATRON) g_elt = 4;
    double grads = trainable * g_elt / split / zero_div_g;
    term(e, explain, MP_GRADIENTS, "gradients", grads, "%.0f trainable x %.0f B%s", trainable / split,
         g_elt, s->zero >= 2 ? " / dp (ZeRO-2+)" : "");
    /* PyTorch DDP copies gradients into its buckets (gradient_as_bucket_view=False). */
    double ddp_buckets = 0;
    if (dp > 1 && s->zero == 0 && fw->kind == MP_FW_PYTORCH) {
        ddp_buckets = trainable * g_elt / split;
        term(e, explain, MP_GRADIENTS, "DDP gradient buckets", ddp_buckets,
             "a second copy of the gradients for all-reduce");
    }
    /* ZeRO-2 reduces through a bucket instead of holding all gradients. */
    if (s->zero >= 2) {
        double bucket = fmin(trainable / split, 5e8) * g_elt;
        if (fw->kind == MP_FW_DEEPSPEED) {
            ddp_buckets = bucket;
            term(e, explain, MP_GRADIENTS, "reduce bucket", bucket,
                 "min(params, 5e8) x %.0f B (DeepSpeed reduce_bucket_size)", g_elt);
        }
    }

    /* ---------------- optimizer ---------------- */
    double opt_states = optimizer_state_bytes(s, trainable / split, m) / zero_div_o;
    double master = 0;
    if (half && s->precision != MP_PURE_BF16) master = trainable * 4 / split / zero_div_o;
    term(e, explain, MP_OPTIMIZER, "optimizer state", opt_states, "%s on %.0f params%s",
         mp_optimizer_name(s->optimizer), trainable / split, s->zero >= 1 ? " / dp (ZeRO-1+)" : "");
    term(e, explain, MP_OPTIMIZER, "fp32 master weights", master, "%.0f params x 4 B",
         trainable / split);
    double optimizer = opt_states + master;
    e->model_states_bytes = weights + grads + optimizer;
    double opt_host = 0;
    if (s->offload != MP_OFFLOAD_NONE) {
        /* ZeRO-Offload: states, master weights and fp32 gradients live on the host. */
        opt_host = optimizer + trainable * 4 / split / zero_div_o;
        optimizer = 0;
        term(e, explain, -1, "offloaded optimizer, master weights, fp32 grads", opt_host,
             "on the host (ZeRO-Offload)");
    }
    /* Optimizer temporaries: PyTorch's foreach AdamW materialises sqrt(v) for
     * all parameters at once; mixed precision unscales into an fp32 copy. */
    double opt_temp = 0;
    if (s->offload == MP_OFFLOAD_NONE) {
        if ((s->optimizer == MP_ADAMW || s->optimizer == MP_PAGED_ADAMW) &&
            fw->kind == MP_FW_PYTORCH)
            opt_temp = fw->adam_temps * trainable * (s->precision == MP_PURE_BF16 ? 2 : 4) / split / zero_div_o;
        if (half && s->precision != MP_PURE_BF16 && !lora)
            opt_temp = fmax(opt_temp, trainable * 4 / split / zero_div_o);
        term(e, explain, MP_OPTIMIZER, "step temporaries", opt_temp,
             "%.0f parameter-sized tensor(s) during the step (%s profile)",
             fw->kind == MP_FW_PYTORCH ? fw->adam_temps : 1, fw->name);
    }

    /* ---------------- activations ---------------- */
    act_breakdown ab;
    activations_per_layer(m, s, &ab);
    double layers_here = L / pp;
    /* Pipeline: the first stage holds pp micro-batches in flight (1F1B schedule). */
    double inflight = pp > 1 ? pp : 1;
    double saved_layers = 0, layer_full = ab.total / tp;
    switch (s->checkpointing) {
    case MP_CKPT_NONE: saved_layers = layers_here * layer_full; break;
    case MP_CKPT_SELECTIVE: saved_layers = layers_here * (ab.total - ab.attn_core) / tp; break;
    case MP_CKPT_FULL: saved_layers = layers_here * ab.layer_input / tp; break;
    default: break;
    }
    saved_layers *= inflight;
    e->act_per_layer = ab.total;
    term(e, explain, MP_ACTIVATIONS, "saved activations", saved_layers,
         "%.0f layers x %.0f B (B=%lld T=%lld%s)", layers_here * inflight,
         saved_layers / (layers_here * inflight), (long long)s->batch, (long long)s->seq,
         s->checkpointing == MP_CKPT_FULL ? ", layer inputs only" :
         s->checkpointing == MP_CKPT_SELECTIVE ? ", attention scores recomputed" : "");
    double recompute = s->checkpointing == MP_CKPT_FULL ? layer_full
                     : s->checkpointing == MP_CKPT_SELECTIVE ? ab.attn_core / tp : 0;
    term(e, explain, MP_ACTIVATIONS, "recomputed layer (backward)", recompute,
         "one layer rebuilt during backward");

    /* Logits and the loss: the head's output, an fp32 copy, and log-softmax. */
    double tokens_logits = B * T;
    if (s->ce == MP_CE_CHUNKED) tokens_logits = fmin((double)s->ce_chunk, B * T);
    double logits_fwd, logits_bwd;
    logits_model(m, s, tokens_logits, &logits_fwd, &logits_bwd);
    logits_fwd /= tp, logits_bwd /= tp;
    term(e, explain, MP_ACTIVATIONS, "logits and loss", logits_fwd,
         "%.0f tokens x %.0f vocab%s", tokens_logits, V,
         s->ce == MP_CE_CHUNKED ? " (one chunk)" : "");
    double final_norm = (ab.final_norm + ab.embed_mask) / tp;
    double act_bwd_temp = ab.backward_temp / tp;
    term(e, explain, MP_ACTIVATIONS, "backward temporaries", act_bwd_temp,
         "activation gradients of one layer");

    /* ---------------- fixed allocations ---------------- */
    double fixed = fw->workspace_bytes + fw->fixed_bytes;

    /* ---------------- the step, moment by moment ---------------- */
    /* Steady state (step 2 on): the optimizer state is resident throughout.
     * With accumulation the gradients persist between micro-batches. */
    double grads_resident = s->accum > 1 ? grads + ddp_buckets : 0;
    double acts_fwd = saved_layers + final_norm + logits_fwd;
    double c[MP_NCOMP];

    c[MP_WEIGHTS] = weights + gathered + cast_cache, c[MP_GRADIENTS] = grads_resident;
    c[MP_OPTIMIZER] = optimizer, c[MP_ACTIVATIONS] = acts_fwd, c[MP_OVERHEAD] = fixed;
    phase(e, "forward end", c);

    c[MP_WEIGHTS] = weights + gathered + cast_after_fwd;
    c[MP_ACTIVATIONS] = acts_fwd + logits_bwd;
    phase(e, "loss backward", c);

    /* First layers of backward: all activations minus the logits, one layer's
     * recomputation and its activation gradients, the head's gradient. */
    double head_grad = lora ? 0 : (m->tied ? e->params.embed : e->params.head) * g_elt / split / zero_div_g;
    c[MP_GRADIENTS] = s->accum > 1 ? grads_resident : head_grad;
    c[MP_ACTIVATIONS] = saved_layers + final_norm + recompute + act_bwd_temp;
    phase(e, "backward start", c);

    /* autocast's 16-bit weight copies went with the graph */
    c[MP_WEIGHTS] = weights + gathered;
    c[MP_GRADIENTS] = grads + ddp_buckets;
    c[MP_ACTIVATIONS] = act_bwd_temp;
    phase(e, "backward end", c);

    c[MP_WEIGHTS] = weights;
    c[MP_OPTIMIZER] = optimizer + opt_temp;
    /* between steps: the weights and the optimizer's state (gradients are set to None) */
    e->resident_bytes = weights + optimizer + fixed;
    c[MP_ACTIVATIONS] = 0;
    phase(e, "optimizer step", c);

    /* ---------------- peak ---------------- */
    int pk = 0;
    for (int i = 0; i < e->nphases; i++)
        if (e->phases[i].total > e->phases[pk].total) pk = i;
    e->peak_phase = pk;
    for (int k = 0; k < MP_NCOMP; k++) {
        e->at_peak[k] = e->phases[pk].comp[k];
        for (int i = 0; i < e->nphases; i++) e->peak[k] = fmax(e->peak[k], e->phases[i].comp[k]);
    }
    /* Activations' peak component includes the logits; report their share. */
    e->logits_bytes = pk <= 1 ? logits_fwd + (pk == 1 ? logits_bwd : 0) : 0;
    e->total_bytes = e->phases[pk].total;
    double rounded = e->total_bytes;
    if (fw->round_bytes > 0) rounded = ceil(rounded / fw->round_bytes) * fw->round_bytes;
    e->reserved_bytes = rounded * (1 + fw->frag);
    e->device_bytes = e->reserved_bytes + fw->context_bytes;
    /* Overhead: what the device holds beyond the tensors themselves. */
    double slack = e->device_bytes - e->total_bytes;
    e->at_peak[MP_OVERHEAD] += slack;
    e->peak[MP_OVERHEAD] += slack;
    term(e, explain, MP_OVERHEAD, "CUDA context", fw->context_bytes, "%s profile", fw->name);
    term(e, explain, MP_OVERHEAD, "library workspaces", fw->workspace_bytes, "%s profile", fw->name);
    term(e, explain, MP_OVERHEAD, "allocator rounding and fragmentation", e->reserved_bytes - e->total_bytes,
         "%.0f%% of allocated (%s profile)", fw->frag * 100, fw->name);

    /* ---------------- host ---------------- */
    host_model(m, s, e, opt_host + weights_host, explain);

    /* ---------------- speed ---------------- */
    speed_model(m, s, gpu, e, trainable, dp);
    return 0;
}

bool mp_fits(const mp_estimate *e, double budget, double headroom)
{
    return e->device_bytes <= budget * (1 - headroom);
}

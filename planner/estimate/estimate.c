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
#include "common/errors.h"
#include "common/units.h"
#include "estimate/estimate.h"
#include "model/model.h"
#include "profiles/profiles.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"
#include "estimate/rollout.h"
#include "estimate/activations.h"
#include "profiles/framework.h"
#include "estimate/host.h"
#include "estimate/memtrain_model.h"
#include "model/params.h"
#include "model/partition.h"
#include "estimate/reserve.h"
#include "estimate/speed.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* What every step of the estimate reads (the run's shape and how it is split
 * across GPUs) and what each step leaves for the later ones: bytes on one GPU. */
typedef struct est_ctx {
    const mp_model *m;
    const mp_settings *s;
    const mp_framework *fw;
    const mp_precision_desc *prec; /* the precision's row: bytes stored, autocast, masters */
    mp_estimate *e;
    bool explain;
    bool replay;                   /* replay the step through the caching allocator (est_peak) */
    char replay_err[MP_ERR_LEN];   /* the replay refused: too much work for one estimate */
    bool lora, amp, half;          /* adapters on a frozen base; autocast; 16-bit storage */
    double P, B, T, L;             /* parameters, micro-batch, sequence, layers */
    double tp, pp, dp;             /* tensor, pipeline and data parallel degrees */
    double split;                  /* the effective divisor of the parameter count on one GPU */
    double zero_p, zero_g, zero_o; /* ZeRO's data-parallel divisors: parameters, gradients, optimizer */
    double trainable, frozen_lin, frozen_rest;
    double largest_held;           /* the largest trainable tensor this GPU's optimizer holds */
    double zero1_share;            /* ZeRO-1 by whole tensors: the heaviest rank's share; 0: even */
    /* weights */
    double w_elt, weights, weights_host, gathered, cast_cache, cast_after_fwd;
    double root_gathered;          /* FSDP: the root unit's parameters, kept whole from forward to backward's end */
    double quant_stats_elt;        /* bytes per frozen weight of quantisation statistics every GPU keeps whole */
    double quant_stats;            /* those statistics on this GPU */
    double adapter_weights;        /* LoRA's adapters on this GPU */
    /* gradients */
    double g_elt, grads, ddp_buckets;
    double unit_grad_build;        /* FSDP over mixed units: a unit's gradient assembled in its backward */
    double unit_grad, root_grad;   /* FSDP: a block's gradient as autograd builds it, whole; the root's */
    bool grads_whole;              /* FSDP over mixed units: gradients kept unsharded through accumulation */
    bool buckets_from_wrap;        /* DDP's buckets exist from the wrap, not from the backward */
    /* optimizer: on the GPU, offloaded to the host, the step's temporaries */
    double optimizer, opt_host, opt_temp;
    double paged_states;           /* a paged optimizer's state in CUDA managed memory, outside the allocator */
    double act_host;               /* saved activations offloaded to host RAM */
    /* activations */
    double saved_layers, recompute, logits_fwd, logits_bwd, logits_kept, final_norm, act_bwd_temp;
    double loss_chunks;            /* the pieces the loss runs in (1: all the logits at once) */
    double logits_head, logits_cast; /* a loop that keeps the logits: the head's moment (logits_cost) */
    double loss_logits, logit_elt;  /* Hugging Face's loss for the replay (logits_cost.hf_elems, elt) */
    double prev_graph;             /* the last step's graph, held into this forward: its 4-bit inputs */
    double held_layer, held_head;  /* ... per layer and the head's, for the replay */
    double dequant_head, dequant_layer; /* a 4-bit matmul's dequantised weight: the head's, a layer's largest */
    double w_lin_elt, w_rest_elt, w_adapter_elt; /* bytes per element as stored: linears, the rest, adapters */
    const mp_gpu *gpu;             /* the card, when one is named: its measured context */
    mp_estimate_ctx *x;            /* what estimates of this model share (facts below), or NULL */
    struct model_facts *mf;        /* x's facts of the model as run, or NULL */
    const act_breakdown *ab;       /* one layer's activations, tensor by tensor */
    double layer_lump;             /* a layer's forward as one block where it is not the layer's own list */
    /* a preference method (s->batch already counts its rows): the reference */
    double ref_weights;            /* a frozen copy of the model, stored and sharded like it */
    double logits_after;           /* the policy's logits and loss while the reference runs */
    double ref_fwd;                /* the reference's no-grad forward at its peak: its logits and one row */
    int ph_fwd_end, ph_loss_bwd, ph_ref; /* the phases the logits' share is read at (ph_ref -1: none) */
    /* a generating method (GRPO): the rollout before the steps (rollout.c) */
    mp_rollout_cost ro;
    double rollout_at[MP_MAX_PHASES]; /* a colocated vLLM's bytes during each phase */
    double other_weights;          /* frozen models beside the policy and its reference: a reward model */
    double ppo_stats;              /* PPO: the no-grad statistics after the step, beside the kept logits */
    double value_trainable;        /* PPO: the value model's parameters, trained too */
} est_ctx;

/* ---------- what estimates of one model share ----------
 * A search screens thousands of combinations of one model: the model's counts
 * and layer shapes are the same for all of them, and a layer's activations
 * the same for every combination that differs only in settings they do not
 * read (the optimizer, checkpointing, ZeRO, offload, accumulation). Each is
 * worked out once here, by the same functions, and read back. */

/* Facts of the model as one stack runs it (estimate(): tied as given, or untied). */
typedef struct model_facts {
    bool have_params, have_linear_params, have_largest, have_layer_tensor, have_share;
    mp_params params;
    double linear_params, largest, layer_tensor, share;
    bool have_lin[2];             /* by the layout's fused_qkv */
    mp_linear lin[2][16];
    int nlin[2];
    struct { bool set; int64_t rank; unsigned targets; double v; } lora[4];
    struct { bool set; int64_t ranks; tensor_split ts; } split[4];
    int next_lora, next_split;
} model_facts;

/* The activations of the combinations last estimated, by their settings with
 * the fields activations_per_layer does not read cleared (act_key). */
#define ACT_SLOTS 32
typedef struct act_slot {
    bool used;
    mp_settings key;
    act_breakdown ab;
} act_slot;

/* fmax and fmin as libm defines them (a NaN loses), inline: the search calls
 * them millions of times, and without -ffinite-math-only they are calls. */
static inline double max_d(double a, double b)
{
    return a > b || b != b ? a : b;
}

static inline double min_d(double a, double b)
{
    return a < b || b != b ? a : b;
}

struct mp_estimate_ctx {
    mp_model m;                   /* the model, as given */
    model_facts facts[3];         /* by as_run.tied, or [2] with a score head (a reward model) */
    act_slot act[ACT_SLOTS];
};

mp_estimate_ctx *mp_estimate_ctx_new(const mp_model *m)
{
    mp_estimate_ctx *x = calloc(1, sizeof *x);
    if (x) x->m = *m;
    return x;
}

void mp_estimate_ctx_free(mp_estimate_ctx *x)
{
    free(x);
}

void mp_estimate_release(void)
{
    replay_release();
    partition_release();
}

const mp_model *mp_estimate_ctx_model(const mp_estimate_ctx *x)
{
    return &x->m;
}

static const mp_params *facts_params(est_ctx *c, mp_params *tmp)
{
    model_facts *f = c->mf;
    if (!f) return mp_param_count(c->m, tmp), tmp;
    if (!f->have_params) mp_param_count(c->m, &f->params), f->have_params = true;
    return &f->params;
}

static double facts_linear_params(est_ctx *c)
{
    model_facts *f = c->mf;
    if (!f) return linear_params(c->m);
    if (!f->have_linear_params) f->linear_params = linear_params(c->m), f->have_linear_params = true;
    return f->linear_params;
}

static double facts_lora_params(est_ctx *c, int64_t rank, unsigned targets)
{
    model_facts *f = c->mf;
    if (!f) return mp_lora_params(c->m, rank, targets);
    for (int i = 0; i < 4; i++)
        if (f->lora[i].set && f->lora[i].rank == rank && f->lora[i].targets == targets) return f->lora[i].v;
    int i = f->next_lora++ & 3;
    f->lora[i].set = true, f->lora[i].rank = rank, f->lora[i].targets = targets;
    return f->lora[i].v = mp_lora_params(c->m, rank, targets);
}

/* mp_model_linears of the model with fused_qkv set as given: at most 16, into *out. */
static int facts_linears(est_ctx *c, bool fused, const mp_linear **out, mp_linear buf[16])
{
    model_facts *f = c->mf;
    if (f && f->have_lin[fused]) {
        *out = f->lin[fused];
        return f->nlin[fused];
    }
    mp_model layout;
    const mp_model *m = c->m;
    if (m->fused_qkv != fused) layout = *m, layout.fused_qkv = fused, m = &layout;
    mp_linear *to = f ? f->lin[fused] : buf;
    int n = mp_model_linears(m, to, 16);
    if (f) f->nlin[fused] = n, f->have_lin[fused] = true;
    *out = to;
    return n;
}

static void facts_split(est_ctx *c, int64_t ranks, tensor_split *ts)
{
    model_facts *f = c->mf;
    if (!f) {
        whole_tensor_split(c->m, ranks, ts);
        return;
    }
    for (int i = 0; i < 4; i++)
        if (f->split[i].set && f->split[i].ranks == ranks) {
            *ts = f->split[i].ts;
            return;
        }
    int i = f->next_split++ & 3;
    whole_tensor_split(c->m, ranks, &f->split[i].ts);
    f->split[i].set = true, f->split[i].ranks = ranks;
    *ts = f->split[i].ts;
}

static double facts_layer_tensor(est_ctx *c)
{
    model_facts *f = c->mf;
    if (!f) return largest_layer_tensor(c->m);
    if (!f->have_layer_tensor) f->layer_tensor = largest_layer_tensor(c->m), f->have_layer_tensor = true;
    return f->layer_tensor;
}

static double facts_share(est_ctx *c, double min_numel)
{
    model_facts *f = c->mf;
    if (!f) return share_in_tensors_of_at_least(c->m, min_numel);
    if (!f->have_share) f->share = share_in_tensors_of_at_least(c->m, min_numel), f->have_share = true;
    return f->share; /* one threshold is ever asked (BNB_PAGED_MIN_NUMEL) */
}

/* The settings activations_per_layer reads: all but those cleared here (it
 * reads none of them; activations.c). */
static void act_key(mp_settings *k, const mp_settings *s)
{
    memcpy(k, s, sizeof *k);
    k->optimizer = 0;
    k->checkpointing = 0;
    k->zero = 0;
    k->offload = 0;
    k->accum = 0;
}

static uint64_t act_hash(const mp_settings *k)
{
    const unsigned char *p = (const unsigned char *)k;
    uint64_t h = 0x9e3779b97f4a7c15u;
    for (size_t i = 0; i + 8 <= sizeof *k; i += 8) {
        uint64_t v;
        memcpy(&v, p + i, 8);
        h = (h ^ v) * 0xff51afd7ed558ccdu;
        h ^= h >> 29;
    }
    return h;
}

/* One layer's activations under s: the memo's, or worked out into it. */
static const act_breakdown *facts_activations(est_ctx *c, act_breakdown *own)
{
    if (!c->x) {
        memset(own, 0, sizeof *own);
        activations_per_layer(c->m, c->s, own);
        return own;
    }
    mp_settings k;
    act_key(&k, c->s);
    act_slot *slot = &c->x->act[act_hash(&k) % ACT_SLOTS];
    if (!slot->used || memcmp(&slot->key, &k, sizeof k) != 0) {
        slot->key = k;
        slot->used = true;
        memset(&slot->ab, 0, sizeof slot->ab);
        activations_per_layer(c->m, c->s, &slot->ab);
    }
    return &slot->ab;
}

/* ---------- terms (for --explain) ---------- */

static void term(const est_ctx *c, int comp, const char *name, double bytes, const char *fmt, ...)
{
    mp_estimate *e = c->e;
    if (!c->explain || e->nterms >= MP_MAX_TERMS || bytes == 0) return;
    mp_term *t = &e->terms[e->nterms++];
    t->component = comp;
    snprintf(t->name, sizeof t->name, "%s", name);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->formula, sizeof t->formula, fmt, ap);
    va_end(ap);
    t->bytes = bytes;
}
/* Only with explain: the search's estimates skip the terms and their arguments. */
#define TERM(c, ...)                              \
    do {                                          \
        if ((c)->explain) term((c), __VA_ARGS__); \
    } while (0)


static inline void phase(mp_estimate *e, const char *name, const double comp[MP_NCOMP])
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

/* ---------- the shared context ---------- */

/* The largest trainable tensor: a LoRA factor (r x the wider side), or the model's own. */
static double largest_trainable(est_ctx *c)
{
    if (!c->lora) {
        tensor_split ts;
        facts_split(c, 1, &ts);
        return ts.largest / c->split;
    }
    mp_linear buf[16];
    const mp_linear *lin;
    int n = facts_linears(c, c->m->fused_qkv, &lin, buf);
    double widest = 0;
    for (int i = 0; i < n && i < 16; i++)
        if (lin[i].target & c->s->lora_targets) widest = max_d(widest, (double)(lin[i].in > lin[i].out ? lin[i].in : lin[i].out));
    if (c->s->lora_targets & MP_LORA_HEAD) widest = max_d(widest, mp_head_outputs(c->m)); /* the head's B */
    return widest * (double)c->s->lora_rank;
}

/* The step takes one tensor at a time: a for-loop step, a step in the backward,
 * or a compiled step per tensor (torchao). */
static bool per_tensor_step(const mp_settings *s)
{
    return s->step_impl == MP_STEP_FOR_LOOP || s->optimizer_in_backward ||
           mp_optimizer_desc_of(s->optimizer)->step_bytes > 0;
}

/* With the step in the backward a tensor is stepped when its gradient is
 * whole: a layer's, or an untied head's (its backward comes first), while the
 * layers' backward runs; a tied embedding's only after the first layer's. */
static double largest_stepped_in_layers(est_ctx *c)
{
    if (c->lora) return c->largest_held;
    double n = facts_layer_tensor(c);
    if (!c->m->tied) n = max_d(n, mp_head_outputs(c->m) * (double)c->m->hidden);
    return min_d(n / c->split, c->largest_held);
}

/* What this GPU's optimizer holds. PyTorch's ZeRO-1 (ZeroRedundancyOptimizer)
 * deals whole tensors to ranks: the heaviest rank, whose state and step this GPU
 * is, holds more than 1/dp. The largest tensor held is needed only by a
 * for-loop step, so the tensor list is not walked otherwise (the search's hot path). */
static void zero1_split(est_ctx *c)
{
    if (c->s->zero == 1 && c->fw->zero1_whole_tensors && !c->lora && c->split == 1 && c->dp >= 2) {
        tensor_split ts;
        facts_split(c, (int64_t)c->dp, &ts);
        if (ts.heaviest > 0) {
            c->zero_o = c->trainable / ts.heaviest;
            c->largest_held = ts.largest_held;
            c->zero1_share = ts.heaviest / c->trainable;
            return;
        }
    }
    if (per_tensor_step(c->s)) c->largest_held = largest_trainable(c);
}

/* The effective divisor of the parameter count on one GPU: tensor and pipeline
 * parallelism split everything, expert parallelism the experts' weights too. */
static double parallel_split(const est_ctx *c)
{
    const double shard_model = c->tp * c->pp;
    double ep_div = 1;
    if (c->m->experts && c->s->ep > 1) ep_div = (double)c->s->ep;
    double expert_share = c->m->experts ? c->e->params.mlp / c->P : 0;
    return 1.0 / ((1 - expert_share) / shard_model + expert_share / (shard_model * ep_div));
}

static void est_setup(est_ctx *c, mp_estimate_ctx *x, const mp_model *m, const mp_settings *s, mp_estimate *e,
                      bool explain)
{
    *c = (est_ctx){.m = m, .s = s, .fw = settings_framework(s), .e = e, .explain = explain, .x = x,
                   .mf = x ? &x->facts[m->head_out > 0 ? 2 : m->tied] : NULL};
    e->params = *facts_params(c, &e->params);
    c->P = e->params.total;
    c->B = (double)s->batch, c->T = (double)s->seq, c->L = (double)m->layers;
    c->tp = (double)s->tp, c->pp = (double)s->pp;
    c->dp = (double)mp_dp_degree(s);
    c->lora = s->lora_rank > 0;
    c->prec = mp_precision_desc_of(s->precision);
    c->amp = c->prec->autocast, c->half = c->prec->stored_bytes == 2;
    if (c->lora) {
        c->trainable = facts_lora_params(c, s->lora_rank, s->lora_targets);
        c->frozen_lin = facts_linear_params(c);
        /* Lightning's bitsandbytes plugin swaps every nn.Linear, the head's too */
        if (framework_quantises_head(m, s)) c->frozen_lin += mp_head_outputs(m) * (double)m->hidden;
        c->frozen_rest = c->P - c->frozen_lin;
    } else {
        c->trainable = c->P;
    }
    e->trainable_params = c->trainable;
    c->split = parallel_split(c);
    c->zero_p = s->zero >= 3 ? c->dp : 1;
    c->zero_g = s->zero >= 2 ? c->dp : 1;
    c->zero_o = s->zero >= 1 ? c->dp : 1;
    zero1_split(c);
}

/* ---------- weights ---------- */

/* An adapter's weight, gradient and optimizer-state element: fp32 where the stack
 * upcasts 16-bit adapters (PEFT cast_adapter_dtype, huggingface/peft@831fd03e0403
 * src/peft/tuners/tuners_utils.py), else stored like trainable weights: 16-bit
 * under mixed and pure precision (fp32 masters in the optimizer for mixed). */
static double adapter_bytes(const est_ctx *c)
{
    return c->fw->adapter_fp32 || !c->half ? 4 : 2;
}

/* A quantised base keeps embeddings, norms and the head in 16 bits, unless the
 * stack casts them to fp32: PEFT's prepare_model_for_kbit_training casts every
 * fp16/bf16 parameter to fp32 (huggingface/peft@012c0d5a9674
 * src/peft/utils/other.py), and TRL's SFTTrainer calls it except for sharded
 * QLoRA on FSDP or ZeRO-3 (huggingface/trl@d11f0f530ee5
 * trl/trainer/sft_trainer.py: is_qlora and not is_sharded_qlora). */
static double quantised_rest_bytes(const est_ctx *c)
{
    return c->fw->kbit_fp32_rest && c->s->zero < 3 ? 4 : 2;
}

/* ZeRO-3 shards a bitsandbytes layer's packed codes, its parameter, and not its
 * statistics: Linear4bit keeps its quant_state (the absmax and, double-quantised,
 * their own constants) on the module, outside the parameter FSDP flattens and
 * DeepSpeed partitions, and hands it back to the gathered weight at each forward
 * (bitsandbytes-foundation/bitsandbytes@005a63c2bada bitsandbytes/nn/modules.py
 * fix_4bit_weight_quant_state_from_module: "the quant state got lost when the
 * parameter got converted. This happens for example for fsdp"). Every GPU holds
 * the whole model's statistics: bytes per weight beyond the codes' bits. */
static double replicated_quant_stats(const est_ctx *c, double base_elt)
{
    const mp_quant_desc *q = mp_quant_desc_of(c->s->quant);
    if (c->s->zero < 3 || !q->bitsandbytes || q->bits <= 0) return 0;
    return max_d(base_elt - q->bits / 8.0, 0);
}

/* A frozen base, quantised or not, with LoRA's adapters beside it. */
static void weights_lora(est_ctx *c)
{
    const mp_settings *s = c->s;
    const bool half = c->half;
    double base_elt = s->quant != MP_QUANT_NONE ? mp_quant_bytes_per_param(c->m, s->quant) : half ? 2 : 4;
    double rest_elt = s->quant != MP_QUANT_NONE ? quantised_rest_bytes(c) : (half ? 2 : 4);
    c->quant_stats_elt = replicated_quant_stats(c, base_elt);
    double stats = c->quant_stats = c->frozen_lin * c->quant_stats_elt / c->split;
    double base_lin = (c->frozen_lin * (base_elt - c->quant_stats_elt) + mp_quant_index_bytes(c->m, s->quant)) /
                      c->split;
    double base_rest = c->frozen_rest * rest_elt / c->split;
    double adapters = c->trainable * adapter_bytes(c) / c->split;
    c->weights = (base_lin + base_rest) / c->zero_p + stats + adapters / c->zero_p;
    c->adapter_weights = adapters / c->zero_p;
    c->w_lin_elt = base_elt, c->w_rest_elt = rest_elt, c->w_adapter_elt = adapter_bytes(c);
    TERM(c, MP_WEIGHTS, "frozen base (linear layers)", base_lin / c->zero_p,
         "%.0f params x %.4g B (%s)", c->frozen_lin / c->split, base_elt - c->quant_stats_elt,
         s->quant != MP_QUANT_NONE ? mp_quant_name(s->quant) : (base_elt == 2 ? "16-bit" : "fp32"));
    TERM(c, MP_WEIGHTS, "quantisation statistics", stats,
         "%.4g B a weight, whole on every GPU: bitsandbytes keeps them outside the sharded parameter",
         c->quant_stats_elt);
    TERM(c, MP_WEIGHTS, "frozen base (embeddings, norms, head)", base_rest / c->zero_p,
         "%.0f params x %.0f B", c->frozen_rest / c->split, rest_elt);
    TERM(c, MP_WEIGHTS, "LoRA adapters", adapters / c->zero_p,
         "%.0f params (rank %lld) x %.0f B", c->trainable, (long long)s->lora_rank, adapter_bytes(c));
}

/* Autocast keeps 16-bit copies of the weights it casts until backward. */
static void weights_autocast(est_ctx *c)
{
    const mp_model *m = c->m;
    const mp_settings *s = c->s;
    if (!c->amp || !c->fw->autocast_cache) return;
    /* the head's matrix is cast too, the embedding's when the head is tied */
    double head_matrix = mp_head_outputs(m) * (double)m->hidden;
    double castable = c->lora ? (s->quant == MP_QUANT_NONE ? c->frozen_lin + head_matrix : 0) + c->trainable
                              : facts_linear_params(c) + head_matrix;
    c->cast_cache = castable * 2 / c->split / (s->zero >= 3 ? c->dp : 1);
    if (s->zero >= 3) c->cast_cache = 2.0 * (castable / c->L) * 2 / c->split; /* per layer in flight */
    TERM(c, MP_WEIGHTS, "autocast 16-bit weight copies", c->cast_cache,
         "%.0f params x 2 B, cached from forward to backward", castable / c->split);
    /* Under full checkpointing the layers' copies are made without a graph:
     * they go when autocast's cache is cleared at the end of forward, and
     * each layer's are made again when it is recomputed. The head's stay. */
    if (s->checkpointing == MP_CKPT_FULL && s->zero < 3 && (!c->lora || s->quant == MP_QUANT_NONE)) {
        /* the blocks not checkpointed (--checkpoint-every) keep theirs with their graph */
        double head_cast = head_matrix * 2 / c->split;
        const double ck = (double)mp_layers_checkpointed(s, (int64_t)c->L);
        c->cast_after_fwd = head_cast + (c->cast_cache - head_cast) * (c->L - ck + (ck > 0 ? 1 : 0)) / c->L;
    } else {
        c->cast_after_fwd = c->cast_cache;
    }
}

/* The parameters outside the transformer blocks: embeddings, positions, an
 * untied head (FSDP's root unit holds them, with the final norm). */
static double outside_blocks(const mp_params *p)
{
    return p->embed + p->pos + p->head;
}

/* FSDP's root unit (what the wrapped blocks leave out: the embeddings, the
 * final norm, the head) is gathered at the forward's start and not freed after
 * it: "Do not free the root's parameters in the post-forward for FULL_SHARD
 * with the intention that they are immediately used for backward computation"
 * (pytorch/pytorch@3ade90a6aaa9 torch/distributed/fsdp/_runtime_utils.py
 * _post_forward_reshard: free_unsharded_flat_param = not state._is_root and
 * ...). Its whole parameter stays beside its shard until the backward's end.
 * FSDP2 (fully_shard, torchtune's) does the same: "For the root, do not
 * reshard after forward since for training, the parameters would be freed and
 * all-gathered immediately" (torch/distributed/_composable/fsdp/_fsdp_state.py
 * _lazy_init: post_forward_mesh_info = None). DeepSpeed's ZeRO-3 gathers and
 * releases module by module instead. */
static void fsdp_root_unit(est_ctx *c)
{
    const mp_settings *s = c->s;
    if (s->zero < 3 || c->dp < 2 || mp_runs_deepspeed(s) || s->offload == MP_OFFLOAD_PARAMS) return;
    const mp_params *p = &c->e->params;
    const double n = outside_blocks(p) + (double)c->m->hidden; /* the final norm's weight */
    c->root_gathered = n * c->w_rest_elt / c->split;
    TERM(c, MP_WEIGHTS, "root unit kept whole (FSDP)", c->root_gathered,
         "%.0f params x %.0f B: embeddings, final norm, head, gathered from forward to backward's end",
         n / c->split, c->w_rest_elt);
}

/* The weights as stored, what parameter offload and ZeRO-3 bring onto the GPU
 * for the layers in flight, and autocast's copies. */
/* A preference method's reference as a second model (--reference model):
 * TRL loads it like the policy (create_model_from_path with the same
 * model_init_kwargs, dpo_trainer.py 892-908 at huggingface/trl@f2cd577) and
 * prepares it with the policy's engine, so ZeRO-3 and FSDP shard it
 * (prepare_deepspeed, evaluation_mode); under LoRA it is the base as stored,
 * without adapters. The disabled adapter and precomputed log-probabilities hold
 * no weights. */
static void reference_weights(est_ctx *c)
{
    if (mp_reference_used(c->s) != MP_REF_MODEL) return;
    c->ref_weights = c->weights - c->adapter_weights;
    TERM(c, MP_WEIGHTS, "reference model (frozen copy)", c->ref_weights,
         "the model again, stored like the policy%s, no gradients, no optimizer state",
         c->s->zero >= 3 ? ", sharded / dp (ZeRO-3)" : "");
}

static void est_weights(est_ctx *c)
{
    const mp_settings *s = c->s;
    const double P = c->P, L = c->L, split = c->split;
    c->w_elt = c->half ? 2 : 4; /* trainable weights' storage */
    c->w_lin_elt = c->w_rest_elt = c->w_elt;
    if (c->lora) {
        weights_lora(c);
    } else {
        c->weights = P * c->w_elt / split / c->zero_p;
        TERM(c, MP_WEIGHTS, "parameters", c->weights, "%.0f params x %.0f B%s%s", P / split,
             c->w_elt, s->zero >= 3 ? " / dp (ZeRO-3)" : "", split > 1 ? " / model-parallel" : "");
    }
    reference_weights(c);
    /* a reward model (PPO, online DPO; GRPO's by name): loaded like the
     * reference, frozen, prepared with the policy's engine (sharded under ZeRO-3) */
    c->other_weights = mp_reward_weights(c->m, s, c->lora ? c->w_rest_elt : c->w_elt) / c->zero_p;
    TERM(c, MP_WEIGHTS, "reward model (frozen)", c->other_weights, "its parameters with a one-output score head%s",
         s->zero >= 3 ? ", sharded / dp (ZeRO-3)" : "");
    if (s->offload == MP_OFFLOAD_PARAMS) {
        c->weights_host = c->weights - c->quant_stats;
        /* ZeRO-Infinity keeps the parameters on the host; the GPU holds the layers in flight. */
        double in_flight = 2.0 * (P / L) * 2 / split;
        TERM(c, MP_WEIGHTS, "parameters in flight (offload)", in_flight,
             "2 layers x %.0f params x 2 B", P / L / split);
        c->weights = in_flight + c->quant_stats; /* not parameters: they stay */
    }
    /* ZeRO-3 gathers each layer's full parameters for its forward and backward. */
    if (s->zero >= 3 && s->offload != MP_OFFLOAD_PARAMS) {
        double elt = c->lora ? (s->quant != MP_QUANT_NONE ? c->w_lin_elt - c->quant_stats_elt : 2) : c->w_elt;
        c->gathered = 2.0 * (P / L) * elt / split;
        TERM(c, MP_WEIGHTS, "gathered layer (ZeRO-3)", c->gathered,
             "prefetch 2 layers x %.0f params", P / L / split);
    }
    fsdp_root_unit(c);
    weights_autocast(c);
}

/* ---------- gradients ---------- */

/* FSDP (ZeRO-3 without DeepSpeed) over LoRA, where the stack wraps each block
 * whole: with use_orig_params=True one FlatParameter holds the block's frozen
 * base and its adapters, and it requires grad as soon as one of them does
 * (pytorch/pytorch@c21c0f9e580c torch/distributed/fsdp/flat_param.py
 * _validate_tensors_to_flatten: "permit non-uniform requires_grad",
 * flat_param_requires_grad = ... or tensor.requires_grad). A 16-bit base only:
 * 4-bit weights cannot share a flat parameter with 16-bit ones. */
static bool fsdp_mixed_grads(const est_ctx *c)
{
    return c->lora && c->s->zero >= 3 && c->dp > 1 && c->fw->fsdp_mixed_units && !mp_runs_deepspeed(c->s) &&
           c->s->quant == MP_QUANT_NONE && c->s->offload == MP_OFFLOAD_NONE;
}

/* The gradient then spans every element of the units that hold an adapter:
 * the blocks, and the root (embedding, head) when the head is adapted. It is
 * reduce-scattered to a 1/dp shard at the step that syncs; under no_sync()
 * (accumulation micro-batches) FSDP keeps it unsharded until that step
 * (torch FullyShardedDataParallel.no_sync: "accumulate the full model
 * gradients (instead of gradient shards) until the eventual sync"). */
static void fsdp_unit_gradients(est_ctx *c)
{
    const mp_params *p = &c->e->params;
    const double blocks = p->attn + p->mlp + p->norms + p->router + c->trainable;
    const double root = c->s->lora_targets & MP_LORA_HEAD ? outside_blocks(p) : 0;
    const double elems = blocks + root;
    const double elt = c->half ? 2 : 4; /* the flat parameter's dtype: the base's */
    const bool unsharded = c->grads_whole = c->fw->fsdp_no_sync && c->s->accum > 1;
    c->g_elt = elt;
    c->grads = elems * elt / c->split / (unsharded ? 1 : c->dp);
    TERM(c, MP_GRADIENTS, "gradients (FSDP units, frozen base included)", c->grads,
         "%.0f params x %.0f B%s", elems / c->split, elt,
         unsharded ? ", unsharded through accumulation (no_sync)" : " / dp");
    /* A unit's gradient is built at the end of its backward: the blocks'
     * modules hold views of the flat parameter, split by numel
     * (pytorch/pytorch@c21c0f9e580c torch/distributed/fsdp/flat_param.py
     * _get_unflat_views: tensor.split(flat_param._numels, dim=0)), so autograd
     * keeps every view's gradient, frozen ones included, until the split's
     * backward concatenates them into one unit-sized tensor
     * (torch/csrc/autograd/FunctionsManual.cpp split_with_sizes_backward:
     * at::cat). That tensor becomes the unit's gradient where none was
     * accumulated before (no_sync, first micro-batch); otherwise it is added
     * in place, or reduce-scattered, and goes: one unit's views, and then one
     * more unit for the concatenation. */
    c->unit_grad = blocks / c->L * elt / c->split;
    c->root_grad = root * elt / c->split;
    const bool becomes_grad = unsharded && c->s->prev_seq == 0;
    c->unit_grad_build = (becomes_grad ? 1 : 2) * c->unit_grad;
    TERM(c, MP_GRADIENTS, "unit gradient being built (FSDP)", c->unit_grad_build,
         "%s x %.0f params x %.0f B: the views' gradients%s, in the unit's backward", becomes_grad ? "1" : "2",
         blocks / c->L / c->split, elt, becomes_grad ? "" : " and their concatenation");
}

static void est_gradients(est_ctx *c)
{
    const mp_settings *s = c->s;
    const mp_framework *fw = c->fw;
    c->g_elt = c->half ? 2 : 4;
    /* e.g. Megatron accumulates 16-bit training in fp32 main_grad buffers */
    if (c->half && !c->lora && fw->fp32_main_grad) c->g_elt = 4;
    if (c->lora) c->g_elt = adapter_bytes(c); /* a gradient has its parameter's dtype */
    c->grads = c->trainable * c->g_elt / c->split / c->zero_g;
    if (s->optimizer_in_backward) {
        /* torchtune's optimizer_in_bwd steps and frees each gradient from its
         * post-accumulate hook (pytorch/torchtune torchtune/training/
         * _optimizer_in_bwd / recipes full_finetune_single_device.py): one
         * parameter's gradient is alive at a time, the largest the worst */
        c->grads = c->largest_held * c->g_elt;
        TERM(c, MP_GRADIENTS, "gradients", c->grads, "one tensor at a time, the largest: %.0f x %.0f B (optimizer in "
             "backward)", c->largest_held, c->g_elt);
    } else if (s->offload != MP_OFFLOAD_NONE) {
        /* ZeRO-Offload reduces each gradient through the bucket into its fp32
         * partition on the host, and frees it (deepspeedai/DeepSpeed
         * deepspeed/runtime/zero/stage_1_and_2.py, cpu_offload: gradients copied
         * to single_partition_of_fp32_groups on the CPU): none stay on the GPU. */
        c->grads = 0;
        TERM(c, MP_GRADIENTS, "gradients", 0, "%.0f trainable: streamed to the host (ZeRO-Offload)",
             c->trainable / c->split);
    } else if (fsdp_mixed_grads(c)) {
        fsdp_unit_gradients(c);
    } else {
        TERM(c, MP_GRADIENTS, "gradients", c->grads, "%.0f trainable x %.0f B%s", c->trainable / c->split,
             c->g_elt, s->zero >= 2 ? " / dp (ZeRO-2+)" : "");
        /* FSDP units of their own: a block's trained tensors, the root's (full fine-tuning) */
        const double root = c->lora ? 0 : outside_blocks(&c->e->params);
        c->unit_grad = (c->trainable - root) / c->L * c->g_elt / c->split;
        c->root_grad = root * c->g_elt / c->split;
    }
    /* PyTorch DDP copies gradients into its buckets (gradient_as_bucket_view=False).
     * PyTorch's ZeRO-1 runs on top of DDP, so its buckets stay; they are allocated
     * when the model is wrapped and live through the whole run. DeepSpeed wraps
     * no DDP. */
    const bool ds = mp_runs_deepspeed(s);
    if (c->dp > 1 && s->zero <= 1 && fw->ddp_grad_copy && !ds) {
        c->ddp_buckets = c->trainable * c->g_elt / c->split;
        c->buckets_from_wrap = true;
        TERM(c, MP_GRADIENTS, "DDP gradient buckets", c->ddp_buckets,
             "a second copy of the gradients for all-reduce");
    }
    /* ZeRO reduces through a flat bucket of reduce_bucket_size elements: the
     * profile's figure, else DeepSpeed's default wherever the plan runs under
     * DeepSpeed (ZeRO-Offload's gradient partitions go to the host, the bucket
     * stays). The bucket is made whole however few parameters train: stage 3
     * at its start (deepspeedai/DeepSpeed@007cca6a2ffe stage3.py
     * _setup_for_real_optimizer: torch.empty(self.reduce_bucket_size) for each
     * communication type, with contiguous_gradients, on by default), stages 1-2
     * at each backward (stage_1_and_2.py backward: buf_0). */
    double bucket = fw->zero_reduce_bucket > 0 ? fw->zero_reduce_bucket : ds ? MP_DEEPSPEED_BUCKET : 0;
    if (bucket > 0 && (s->zero >= 2 || (ds && s->zero == 1))) {
        c->ddp_buckets = bucket * c->g_elt;
        TERM(c, MP_GRADIENTS, "reduce bucket", c->ddp_buckets, "%.3g elements x %.0f B (DeepSpeed reduce_bucket_size, "
             "whole whatever trains)", bucket, c->g_elt);
    }
}

/* ---------- optimizer ---------- */

/* Optimizer state bytes for n trainable parameters (before sharding), from the
 * optimizer's row: parameter-sized states, 8-bit block-wise states, or factored. */
static double optimizer_state_bytes(const mp_settings *s, double n, const mp_model *m)
{
    const mp_optimizer_desc *od = mp_optimizer_desc_of(s->optimizer);
    double sb = mp_precision_desc_of(s->precision)->state_bytes; /* state element size */
    if (s->lora_rank > 0 && settings_framework(s)->adapter_fp32) sb = 4; /* states follow fp32 adapters */
    if (od->low_bit) /* 8- or 4-bit codes plus one fp32 absmax per block each (Dettmers et al. 2022) */
        return od->states * n * mp_state_value_bytes(s) + od->states * 4 * ceil(n / (double)s->adam8_block);
    if (od->factored) {
        /* a C x F matrix keeps C + F numbers instead of C*F: about n/F + n/C */
        double c = (double)m->hidden, f = (double)(m->ffn > 0 ? m->ffn : m->hidden);
        return sb * (n / c + n / f);
    }
    return od->states * sb * n;
}

/* bitsandbytes' paged optimizers keep the state of each tensor of 1e5 elements
 * or more in CUDA managed memory (bitsandbytes/optim/optimizer.py
 * get_state_buffer: F.get_paged, cudaMallocManaged through cget_managed_ptr,
 * wrapped by torch.frombuffer), the smaller ones in ordinary tensors. The share
 * of the trained elements in such tensors: each LoRA factor (r x in, out x r)
 * on its own; the whole model's tensors; a flat shard (ZeRO) always. */
#define BNB_PAGED_MIN_NUMEL 1e5
typedef struct paged_tally {
    double all, large; /* elements in every tensor, in the paged ones */
} paged_tally;

static void tally_tensor(paged_tally *t, double numel, double copies)
{
    t->all += numel * copies;
    if (numel >= BNB_PAGED_MIN_NUMEL) t->large += numel * copies;
}

static double paged_share(est_ctx *c)
{
    /* DeepSpeed and FSDP hand the optimizer flat shards; PyTorch's ZeRO-1
     * (ZeroRedundancyOptimizer) whole tensors, as without ZeRO */
    const bool whole_tensors = c->s->zero == 1 && c->fw->zero1_whole_tensors && !mp_runs_deepspeed(c->s);
    if (c->s->zero >= 1 && !whole_tensors) return 1;
    if (!c->lora) return facts_share(c, BNB_PAGED_MIN_NUMEL);
    mp_linear buf[16];
    const mp_linear *lin;
    int n = facts_linears(c, c->m->fused_qkv, &lin, buf);
    const double r = (double)c->s->lora_rank;
    /* a stack that fuses q, k and v (LitGPT's LoRAQKVLinear) keeps one A of
     * r x in per enabled projection stacked, and one B over their outputs */
    const unsigned qkv = MP_LORA_Q | MP_LORA_K | MP_LORA_V;
    const bool stack_fuses = c->fw->fused_qkv && !c->m->fused_qkv;
    double fused_a = 0, fused_b = 0;
    paged_tally t = {0, 0}; /* per layer */
    for (int i = 0; i < n && i < 16; i++) {
        if (!(lin[i].target & c->s->lora_targets)) continue;
        const double a = r * (double)lin[i].in, b = (double)lin[i].out * r;
        if (stack_fuses && (lin[i].target & qkv)) {
            fused_a += a, fused_b += b;
        } else {
            tally_tensor(&t, a, (double)lin[i].count);
            tally_tensor(&t, b, (double)lin[i].count);
        }
    }
    tally_tensor(&t, fused_a, 1);
    tally_tensor(&t, fused_b, 1);
    if (c->s->lora_targets & MP_LORA_HEAD) { /* once for the model: a 1/L share of a layer */
        tally_tensor(&t, r * (double)c->m->hidden, 1 / c->L);
        tally_tensor(&t, mp_head_outputs(c->m) * r, 1 / c->L);
    }
    return t.all > 0 ? t.large / t.all : 0;
}

/* Optimizer temporaries: PyTorch's foreach AdamW materialises sqrt(v) for
 * all parameters at once; mixed precision unscales into an fp32 copy. */
static void optimizer_temporaries(est_ctx *c)
{
    const mp_settings *s = c->s;
    const mp_framework *fw = c->fw;
    if (s->offload != MP_OFFLOAD_NONE) return;
    const mp_optimizer_desc *od = mp_optimizer_desc_of(s->optimizer);
    if (od->step_bytes > 0) { /* its own compiled step, one tensor at a time, and each state's new scales */
        const double per_value = od->step_bytes + od->states * 4 / (double)s->adam8_block;
        c->opt_temp = per_value * c->largest_held;
        TERM(c, MP_OPTIMIZER, "step temporaries", c->opt_temp, "%s's compiled step (as torch 2.11 compiles it): "
             "%.2f B per value of the largest tensor%s", mp_optimizer_name(s->optimizer), per_value,
             s->optimizer_in_backward ? ", stepped in the backward" : "");
        return;
    }
    const bool adam_step = od->adamw_class && !od->low_bit && fw->adam_temps > 0;
    const bool per_tensor = per_tensor_step(s);
    if (adam_step && per_tensor) /* one tensor at a time: the largest */
        c->opt_temp = fw->adam_temps * c->largest_held * c->prec->state_bytes;
    else if (adam_step && s->step_impl == MP_STEP_FOREACH) /* every tensor at once */
        c->opt_temp = fw->adam_temps * c->trainable * c->prec->state_bytes / c->split / c->zero_o;
    if (c->prec->master_copy && !c->lora)
        c->opt_temp = max_d(c->opt_temp, (per_tensor ? c->largest_held : c->trainable / c->split / c->zero_o) * 4);
    if (s->optimizer_in_backward)
        TERM(c, MP_OPTIMIZER, "step temporaries", c->opt_temp, "each tensor's step in the backward: %.0f x the "
             "largest tensor (%s profile)", fw->adam_temps, fw->name);
    else if (s->step_impl == MP_STEP_FOREACH)
        TERM(c, MP_OPTIMIZER, "step temporaries", c->opt_temp,
             "%.0f parameter-sized tensor(s) during the step (%s profile)", fw->adam_temps > 0 ? fw->adam_temps : 1,
             fw->name);
    else
        TERM(c, MP_OPTIMIZER, "step temporaries", c->opt_temp, "%s step: %.0f x the largest tensor (%s profile)",
             mp_step_impl_name(s->step_impl), s->step_impl == MP_STEP_FOR_LOOP ? fw->adam_temps : 0, fw->name);
}

/* The state and fp32 master weights, on the GPU or offloaded, and the step's temporaries. */
static void est_optimizer(est_ctx *c)
{
    const mp_settings *s = c->s;
    const double trainable = c->trainable, split = c->split;
    double opt_states = optimizer_state_bytes(s, trainable / split, c->m) / c->zero_o;
    double master = 0;
    if (c->prec->master_copy) master = trainable * 4 / split / c->zero_o;
    if (c->zero1_share > 0)
        TERM(c, MP_OPTIMIZER, "optimizer state", opt_states,
             "%s on the heaviest rank's %.1f%% of %.0f params (whole tensors; 1/%g = %.1f%%)",
             mp_optimizer_name(s->optimizer), 100 * c->zero1_share, trainable, c->dp, 100 / c->dp);
    else
        TERM(c, MP_OPTIMIZER, "optimizer state", opt_states, "%s on %.0f params%s",
             mp_optimizer_name(s->optimizer), trainable / split, s->zero >= 1 ? " / dp (ZeRO-1+)" : "");
    TERM(c, MP_OPTIMIZER, "fp32 master weights", master, "%.0f params x 4 B", trainable / split);
    const mp_optimizer_desc *od = mp_optimizer_desc_of(s->optimizer);
    if (od->paged && c->fw->managed_paging && s->offload == MP_OFFLOAD_NONE) {
        /* outside PyTorch's allocator: not allocated nor reserved, on the device while it fits */
        c->paged_states = opt_states * paged_share(c);
        opt_states -= c->paged_states;
        TERM(c, MP_OPTIMIZER, "paged state (managed memory)", c->paged_states,
             "of the state above, that of tensors of 1e5 elements or more: CUDA managed memory, in device "
             "memory but not allocated or reserved (bitsandbytes get_paged)");
    }
    c->optimizer = opt_states + master;
    if (s->offload != MP_OFFLOAD_NONE) {
        /* ZeRO-Offload: states, master weights and fp32 gradients live on the host. */
        c->opt_host = c->optimizer + trainable * 4 / split / c->zero_o;
        c->optimizer = 0;
        TERM(c, -1, "offloaded optimizer, master weights, fp32 grads", c->opt_host,
             "on the host (ZeRO-Offload)");
    }
    optimizer_temporaries(c);
}

/* ---------- activations ---------- */

/* torchtune's OffloadActivations copies every saved tensor of 1 KiB or more to
 * pinned host memory as the forward saves it, keeping the last
 * max_fwd_stash_size (5) alive on the GPU until their copies land, and brings
 * one autograd node's tensors back at a time in the backward (pytorch/torchtune
 * torchtune/training/_activation_offloading.py @05cda5e9). Under full
 * checkpointing a layer saves one tensor, its input: five layers' inputs stay;
 * otherwise the stash is within one layer, whose saved tensors stay. */
static void offload_saved(est_ctx *c, double layer_input, double layer_full, double layers)
{
    const double stash = 5;
    double on_gpu = c->s->checkpointing == MP_CKPT_FULL ? min_d(layers, stash) * layer_input
                  : c->s->checkpointing == MP_CKPT_NONE ? min_d(layers, 1) * layer_full
                                                          : min_d(c->saved_layers, layer_full);
    c->act_host = c->saved_layers;
    c->saved_layers = min_d(c->saved_layers, on_gpu);
    TERM(c, -1, "offloaded activations", c->act_host, "saved activations in pinned host RAM (per process)");
}

/* A 4-bit matmul dequantises its whole weight to run: bitsandbytes' MatMul4Bit
 * in forward and backward (F.dequantize_4bit(B, quant_state).to(A.dtype),
 * bitsandbytes-foundation/bitsandbytes@012c660699cc bitsandbytes/autograd/_functions.py),
 * torchao's NF4 likewise (weight.to(input.dtype)). One weight at a time: the
 * largest of a layer's, and the head's where the stack quantises it. */
static void est_dequant(est_ctx *c)
{
    const mp_settings *s = c->s;
    if (!c->lora || (s->quant != MP_QUANT_NF4 && s->quant != MP_QUANT_NF4_DQ)) return;
    mp_linear buf[16];
    const mp_linear *lin;
    int n = facts_linears(c, c->m->fused_qkv || c->fw->fused_qkv, &lin, buf);
    double largest = 0;
    for (int i = 0; i < n && i < 16; i++) largest = max_d(largest, (double)lin[i].in * (double)lin[i].out);
    const double b = c->fw->dequant_bytes;
    c->dequant_layer = largest * b / c->split;
    if (framework_quantises_head(c->m, s))
        c->dequant_head = mp_head_outputs(c->m) * (double)c->m->hidden * b / c->split;
    double w = max_d(c->dequant_layer, c->dequant_head);
    TERM(c, MP_ACTIVATIONS, "dequantised weight (4-bit matmul)", w, "%.0f weights x %.0f B, one matmul at a time (%s)",
         w / b, b, c->dequant_head > c->dequant_layer ? "the head" : "a layer's largest");
}

/* Saved layers (per checkpointing), the recomputed layer, logits and loss,
 * and the activation gradients of one layer in backward. */
static void est_activations(est_ctx *c, act_breakdown *own)
{
    const mp_settings *s = c->s;
    const double tp = c->tp, pp = c->pp;
    const act_breakdown *ab = c->ab = facts_activations(c, own); /* not copied: the search's hot path */
    double layers_here = c->L / pp;
    /* Pipeline: the first stage holds pp micro-batches in flight (1F1B schedule). */
    double inflight = pp > 1 ? pp : 1;
    double layer_full = ab->total / tp;
    switch (s->checkpointing) {
    case MP_CKPT_NONE: c->saved_layers = layers_here * layer_full; break;
    case MP_CKPT_SELECTIVE: c->saved_layers = layers_here * (ab->total - ab->attn_core) / tp; break;
    case MP_CKPT_FULL: { /* the blocks checkpointed keep their input, the others all they save */
        const double ck = (double)mp_layers_checkpointed(s, (int64_t)layers_here);
        c->saved_layers = (ck * ab->layer_input + (layers_here - ck) * ab->total) / tp;
        break;
    }
    default: break;
    }
    c->saved_layers *= inflight;
    c->e->act_per_layer = ab->total;
    if (s->offload_activations) offload_saved(c, ab->layer_input / tp, layer_full, layers_here * inflight);
    /* where a layer's forward is not its own tensor list (offloaded, pipelined,
     * tensor-parallel), the allocator sees one block per layer */
    if (s->offload_activations || inflight > 1 || tp > 1) c->layer_lump = c->saved_layers / layers_here;
    if (s->offload_activations)
        TERM(c, MP_ACTIVATIONS, "saved activations", c->saved_layers,
             "kept on the GPU while the rest are offloaded: %.0f B of %.0f B (B=%lld T=%lld)", c->saved_layers,
             c->act_host, (long long)s->batch, (long long)s->seq);
    else
        TERM(c, MP_ACTIVATIONS, "saved activations", c->saved_layers,
             "%.0f layers x %.0f B (B=%lld T=%lld%s)", layers_here * inflight,
             c->saved_layers / (layers_here * inflight), (long long)s->batch, (long long)s->seq,
             s->checkpointing == MP_CKPT_FULL ? ", layer inputs only" :
             s->checkpointing == MP_CKPT_SELECTIVE ? ", attention scores recomputed" : "");
    if (ab->kbit_inputs > 0 && s->checkpointing != MP_CKPT_FULL && !s->offload_activations) {
        char v[32];
        TERM(c, MP_ACTIVATIONS, "  of which 4-bit layers' inputs", layers_here * inflight * ab->kbit_inputs / tp,
             "bitsandbytes %s keeps each quantised layer's input (fixed in 0.43.2)",
             mp_version_name(s->bnb_version, v, sizeof v));
    }
    /* A loop that holds the last step's logits (LitGPT: logits = model(...)
     * until the next step's forward has returned, the logits_kept column) holds
     * its graph with them, and old bitsandbytes' nodes hold their inputs as
     * long as the graph lives (activations.c kbit_held): the last step's
     * inputs are still there when this forward ends. Under full checkpointing
     * the forward keeps no 4-bit nodes (they run without grad). */
    if (c->fw->logits_kept && ab->kbit_held > 0 && s->checkpointing != MP_CKPT_FULL && !s->offload_activations) {
        char v[32];
        const double share = previous_batch_share(s) / tp;
        c->held_layer = ab->kbit_held * share, c->held_head = ab->kbit_held_head * share;
        c->prev_graph = layers_here * inflight * c->held_layer + c->held_head;
        TERM(c, MP_ACTIVATIONS, "last step's 4-bit inputs", c->prev_graph,
             "the loop still holds the last step's graph; bitsandbytes %s keeps its inputs on it",
             mp_version_name(s->bnb_version, v, sizeof v));
    }
    c->recompute = s->checkpointing == MP_CKPT_FULL ? (mp_layers_checkpointed(s, (int64_t)layers_here) > 0 ? layer_full : 0)
                 : s->checkpointing == MP_CKPT_SELECTIVE ? ab->attn_core / tp : 0;
    TERM(c, MP_ACTIVATIONS, "recomputed layer (backward)", c->recompute,
         "one layer rebuilt during backward");

    /* Logits and the loss: the head's output, an fp32 copy, and log-softmax. */
    double tokens_logits = c->B * c->T;
    const double listed = c->fw->ce_output_chunks; /* torchtune: so many pieces of every sequence */
    if (s->ce == MP_CE_CHUNKED)
        tokens_logits = listed > 0 ? c->B * ceil(c->T / listed) : min_d((double)s->ce_chunk, c->B * c->T);
    c->loss_chunks = ceil(c->B * c->T / tokens_logits);
    logits_cost lc;
    if (s->method != MP_METHOD_SFT) {
        preference_logits_cost pc;
        const mp_method_desc *md = mp_method_desc_of(s->method);
        /* GRPO's head runs on the completion and one more position only
         * (logits_to_keep + 1, grpo_trainer.py 1499-1502 at huggingface/trl@f2cd577) */
        preference_logits(c->m, s, c->B, md->grouped ? (double)s->completion_len + 1 : c->T, &pc);
        lc = pc.policy;
        c->logits_after = pc.after / tp;
        /* GRPO's and PPO's reference runs in the rollout, before the step
         * (rollout.c); online DPO's in the step, then the reward model's */
        c->ref_fwd = md->grouped || md->value_model ? 0 : max_d(pc.reference, c->ro.reward_pass) / tp;
        if (md->value_model) /* PPO's statistics after the step: a softmax and its product with the logits */
            c->ppo_stats = 2 * mp_element_bytes(s->precision) * c->B * (double)s->completion_len *
                           mp_head_outputs(c->m) / tp;
    } else {
        logits_model(c->m, s, tokens_logits, c->B * c->T, &lc);
    }
    c->logits_fwd = lc.fwd / tp, c->logits_bwd = lc.bwd / tp, c->logits_kept = lc.kept / tp;
    c->loss_logits = lc.hf_elems / tp, c->logit_elt = lc.elt;
    c->logits_head = lc.head / tp, c->logits_cast = lc.cast / tp;
    const bool kept = c->fw->logits_kept;
    const bool all_chunks = kept || (listed > 0 && s->ce == MP_CE_CHUNKED);
    TERM(c, MP_ACTIVATIONS, "logits and loss", c->logits_fwd, "%.0f tokens x %.0f %s%s",
         all_chunks ? c->B * c->T : tokens_logits, mp_head_outputs(c->m), c->m->head_out > 0 ? "score" : "vocab",
         kept                 ? ", every chunk's logits kept by the loop"
         : all_chunks         ? ", every chunk's logits listed by the model before the loss"
         : s->ce == MP_CE_CHUNKED ? " (one chunk)" : "");
    if (c->ref_fwd > 0)
        TERM(c, MP_ACTIVATIONS, "reference forward (no grad)", c->ref_fwd,
             c->fw->ce_output_chunks > 0 /* torchtune: activations.c torchtune_dpo_logits */
                 ? "its own fp32 logits for the %.0f rows, their copy and log-softmax, beside the policy's graph"
                 : "its own logits for the %.0f rows and one row's log-probabilities, beside the policy's graph",
             c->B);
    c->final_norm = (ab->final_norm + ab->embed_mask) / tp;
    c->act_bwd_temp = ab->backward_temp / tp;
    TERM(c, MP_ACTIVATIONS, "backward temporaries", c->act_bwd_temp,
         "activation gradients of one layer");
}

/* ---------- a generating method's rollout ---------- */

/* GRPO (trl/trainer/grpo_trainer.py at huggingface/trl@f2cd577): once per
 * generation batch, at the start of an accumulation cycle (gradients set to
 * None), the completions are generated, then the log-probabilities the loss
 * compares with are taken under no_grad; the batch, its ids and per-token
 * log-probabilities stay for the steps that train on it (1571-1579,
 * 2815-2830). A colocated vLLM holds its share all run, unless asleep while
 * the policy trains (then awake for the generation only). */
static void est_rollout(est_ctx *c)
{
    mp_estimate *e = c->e;
    const mp_rollout_cost *ro = &c->ro;
    const double fixed = c->fw->workspace_bytes + c->fw->fixed_bytes;
    const double wrap = c->buckets_from_wrap ? c->ddp_buckets : 0;
    /* the step's phases so far keep the generation batch and see vLLM awake unless it sleeps */
    for (int i = 0; i < e->nphases; i++) {
        e->phases[i].comp[MP_ACTIVATIONS] += ro->kept + ro->scores_kept;
        e->phases[i].total += ro->kept + ro->scores_kept;
        c->rollout_at[i] = ro->engine_awake_in_step;
    }
    double p[MP_NCOMP] = {0};
    /* autocast caches its 16-bit copy of every weight that requires grad,
     * no_grad or not (measured: tests/validation/grpo.README.txt, amp-bf16) */
    p[MP_WEIGHTS] = c->weights + c->ref_weights + c->other_weights + ro->gathered + c->cast_cache;
    p[MP_GRADIENTS] = wrap, p[MP_OPTIMIZER] = c->optimizer, p[MP_OVERHEAD] = fixed;
    p[MP_ACTIVATIONS] = ro->kept + ro->generate;
    c->rollout_at[e->nphases] = ro->engine;
    phase(e, "rollout generation", p);
    if (ro->logps_pass > 0) {
        p[MP_WEIGHTS] = c->weights + c->ref_weights + c->other_weights;
        p[MP_ACTIVATIONS] = ro->kept + ro->scores_kept + ro->logps_pass;
        c->rollout_at[e->nphases] = ro->engine_awake_in_step;
        phase(e, "rollout log-probabilities", p);
    }
    e->rollout_cache_bytes = ro->kv_cache;
    e->rollout_rows = ro->generation_rows;
    TERM(c, MP_ACTIVATIONS, "rollout logits kept (PPO)", ro->scores_kept, "%.0f rows x %lld tokens x %.0f x 4 B: "
         "generate's scores, kept through the update", ro->generation_rows, (long long)c->s->completion_len,
         mp_head_outputs(c->m));
    TERM(c, MP_ACTIVATIONS, "generation batch kept", ro->kept, "%.0f completions: ids, masks and per-token "
         "log-probabilities", ro->generation_rows);
    if (c->s->rollout == MP_ROLLOUT_GENERATE)
        TERM(c, MP_ACTIVATIONS, "rollout KV cache (generate)", ro->kv_cache, "%.0f rows x %lld tokens x %lld "
             "layers x 2 x %lld kv heads x %lld", ro->generation_rows, (long long)c->s->seq,
             (long long)c->m->layers, (long long)c->m->kv_heads, (long long)c->m->head_dim);
    if (ro->logps_pass > 0)
        TERM(c, MP_ACTIVATIONS, "rollout log-probabilities", ro->logps_pass, "no-grad forwards of %.0f rows: "
             "the completion's logits, or a block's work", mp_method_desc_of(c->s->method)->value_model
             ? (ro->generation_rows < 64 ? ro->generation_rows : 64) : c->B);
}

/* ---------- the step, moment by moment ---------- */

/* Steady state (step 2 on): the optimizer state is resident throughout.
 * With accumulation the gradients persist between micro-batches. */
static void est_timeline(est_ctx *c)
{
    mp_estimate *e = c->e;
    const double fixed = c->fw->workspace_bytes + c->fw->fixed_bytes;
    const double wrap = c->buckets_from_wrap ? c->ddp_buckets : 0; /* there from the start */
    /* the gradients of earlier micro-batches, unless the one planned is the
     * run's first (--previous-seq 0): then they appear during its backward */
    const bool accumulated = c->s->accum > 1 && c->s->prev_seq != 0;
    double grads_resident = accumulated ? c->grads + c->ddp_buckets : wrap;
    const double gathered = c->gathered + c->root_gathered;
    double acts_fwd = c->saved_layers + c->final_norm + c->logits_fwd;
    double p[MP_NCOMP];

    /* The forward's end: the loss over the logits, or, where the loop keeps
     * them, the head's last chunk (its dequantised weight where it is 4-bit)
     * and the cast beside the last step's logits, and its graph */
    double head = c->logits_head > 0 ? c->logits_head + max_d(c->logits_cast, c->dequant_head) : 0;
    const double ref = c->ref_weights + c->other_weights;
    /* KTO: before the step's forward, the policy runs under no_grad on the KL
     * batch (each completion paired with another example's prompt) and keeps
     * only its log-probabilities: its logits and one row's work
     * (kto_trainer.py 1096-1111, 1280-1330, 1487 at huggingface/trl@f2cd577) */
    if (mp_method_desc_of(c->s->method)->kl_batch) {
        const double a = c->logit_elt, row = c->T * mp_head_outputs(c->m);
        p[MP_WEIGHTS] = c->weights + gathered + c->cast_cache + ref, p[MP_GRADIENTS] = grads_resident;
        p[MP_OPTIMIZER] = c->optimizer, p[MP_OVERHEAD] = fixed;
        p[MP_ACTIVATIONS] = c->prev_graph + (a * c->B * row + (a == 4 ? 4 : a) * row) / c->tp;
        phase(e, "KL batch forward", p);
    }
    p[MP_WEIGHTS] = c->weights + gathered + c->cast_cache + ref, p[MP_GRADIENTS] = grads_resident;
    p[MP_OPTIMIZER] = c->optimizer, p[MP_OVERHEAD] = fixed;
    p[MP_ACTIVATIONS] = c->saved_layers + c->final_norm + c->prev_graph + max_d(c->logits_fwd, head);
    c->ph_fwd_end = e->nphases;
    phase(e, "forward end", p);

    /* A preference method's reference runs next, under no_grad, while the
     * policy's graph and logits wait for the loss's backward */
    c->ph_ref = -1;
    if (c->ref_fwd > 0) {
        p[MP_ACTIVATIONS] = c->saved_layers + c->final_norm + c->prev_graph + c->logits_after + c->ref_fwd;
        c->ph_ref = e->nphases;
        phase(e, "reference forward", p);
    }

    /* The head's gradient: a loss in chunks runs the head's backward once per
     * chunk, and each makes a whole weight gradient that is added into the
     * one before, so two are live from the second chunk on (one beside the
     * earlier micro-batches' gradients). Measured with torchtune's chunked
     * loss on an H200 (tests/validation/gpu/torchtune_probe.json,
     * optim-in-bwd: 5.17 GiB over the weights and state at the peak, where the
     * listed logits, the checkpoints and the final norm hold 3.5). */
    double head_grad = c->lora ? 0
        : (c->m->tied ? e->params.embed : e->params.head) * c->g_elt / c->split / c->zero_g;
    const double chunk_head_grads = c->loss_chunks > 1 ? head_grad * (accumulated ? 1 : 2) : 0;

    p[MP_WEIGHTS] = c->weights + gathered + c->cast_after_fwd + ref;
    p[MP_GRADIENTS] = grads_resident + chunk_head_grads;
    /* the head's backward follows the loss's: its dequantised weight replaces the loss's temporaries */
    p[MP_ACTIVATIONS] = acts_fwd + max_d(c->logits_bwd, c->dequant_head);
    c->ph_loss_bwd = e->nphases;
    phase(e, "loss backward", p);

    /* First layers of backward: all activations minus the logits, one layer's
     * recomputation and its activation gradients, the head's gradient. */
    p[MP_GRADIENTS] = (accumulated ? grads_resident : head_grad + wrap) + c->unit_grad_build;
    p[MP_ACTIVATIONS] = c->saved_layers + c->final_norm + c->recompute + c->act_bwd_temp + c->logits_kept +
                        c->dequant_layer;
    /* with the optimizer in the backward, each tensor is stepped (and its
     * gradient freed) there: one gradient and one step's temporaries */
    const bool in_bwd = c->s->optimizer_in_backward;
    if (in_bwd) { /* the temporaries scale with the tensor stepped: here the largest a layer has */
        const double share = c->largest_held > 0 ? largest_stepped_in_layers(c) / c->largest_held : 0;
        p[MP_GRADIENTS] = c->grads, p[MP_OPTIMIZER] = c->optimizer + c->opt_temp * share;
    }
    phase(e, "backward start", p);

    /* autocast's 16-bit weight copies went with the graph; a loop that keeps
     * the logits (LitGPT: logits = model(...) lives until the next forward)
     * still holds them through the optimizer's step */
    const double logits_after = c->fw->logits_kept || c->ppo_stats > 0 ? c->logits_kept : 0;
    /* the last layer's backward: every other gradient made, this layer
     * recomputed (checkpointing), its activation gradients and, under FSDP,
     * its unit's gradient being built */
    p[MP_WEIGHTS] = c->weights + gathered + ref;
    p[MP_GRADIENTS] = c->grads + c->ddp_buckets + c->unit_grad_build;
    p[MP_ACTIVATIONS] = c->recompute + c->act_bwd_temp + logits_after;
    phase(e, "backward end", p);

    p[MP_WEIGHTS] = c->weights + ref;
    /* the step, or in the backward the last tensor's (a tied embedding's) beside its gradient */
    p[MP_OPTIMIZER] = c->optimizer + c->opt_temp;
    /* between steps: the weights and the optimizer's state (gradients are set to None) */
    e->resident_bytes = c->weights + ref + c->optimizer + fixed + wrap;
    p[MP_ACTIVATIONS] = logits_after;
    phase(e, "optimizer step", p);
    if (c->ppo_stats > 0) { /* after the step, the gradients set to None unless accumulating */
        p[MP_GRADIENTS] = accumulated ? grads_resident : wrap, p[MP_OPTIMIZER] = c->optimizer;
        p[MP_ACTIVATIONS] = logits_after + c->ppo_stats;
        phase(e, "update statistics", p);
    }

    /* Evaluation between steps (transformers' Trainer evaluates after an
     * optimizer step and zero_grad, so no gradients): a forward of --eval-batch
     * sequences under no_grad with the labels, its loss taken and the logits
     * dropped (evaluate() asks for the loss only without compute_metrics), a
     * block's work or the logits and the loss at their widest; autocast makes
     * its weight copies again, ZeRO-3 gathers as in training */
    if (c->s->eval_batch > 0) {
        logits_cost ev;
        const double rows = (double)c->s->eval_batch, tokens = rows * c->T;
        logits_model(c->m, c->s, tokens, tokens, &ev);
        /* the model's last hidden state stays referenced while its loss runs
         * (the head reads it inside the model's forward) */
        const double hidden = (double)c->m->hidden * tokens * c->logit_elt;
        const double work = max_d(no_grad_block(c->m, c->s, rows, c->T, c->logit_elt), ev.fwd + hidden) / c->tp;
        p[MP_WEIGHTS] = c->weights + gathered + c->cast_cache + ref, p[MP_GRADIENTS] = wrap;
        p[MP_OPTIMIZER] = c->optimizer;
        p[MP_ACTIVATIONS] = work;
        phase(e, "evaluation", p);
        TERM(c, MP_ACTIVATIONS, "evaluation forward (no grad)", work, "%lld sequences x %lld tokens: "
             "the logits and the loss, or a block's work", (long long)c->s->eval_batch, (long long)c->T);
    }
    /* precompute_ref_log_probs: before the first step, the policy's no-grad pass
     * over the data at the training batch (dpo_trainer.py 957-978): its logits
     * and one row, before any gradient or optimizer state exists */
    if (mp_reference_used(c->s) == MP_REF_PRECOMPUTED) {
        const double a = c->logit_elt, row = c->T * mp_head_outputs(c->m);
        p[MP_WEIGHTS] = c->weights + gathered, p[MP_GRADIENTS] = wrap, p[MP_OPTIMIZER] = 0;
        p[MP_ACTIVATIONS] = (a * c->B * row + (a == 4 ? 4 : a) * row) / c->tp;
        phase(e, "reference precompute", p);
    }
    if (mp_method_desc_of(c->s->method)->generates) est_rollout(c);
}

/* ---------- peak ---------- */

/* ZeRO-3 on the GPU, run as FSDP or by DeepSpeed: its gathers and gradients
 * are replayed (reserve.c); parameter offload's are not. */
static bool zero3_replayed(const est_ctx *c)
{
    const mp_settings *s = c->s;
    return s->zero >= 3 && c->dp > 1 && s->offload == MP_OFFLOAD_NONE && !s->optimizer_in_backward;
}

/* What the caching allocator holds beyond the tensors: the step replayed
 * through its rules (reserve.c); -1 when the replay could not run. */
static double allocator_overhead(est_ctx *c)
{
    const mp_settings *s = c->s;
    const mp_optimizer_desc *od = mp_optimizer_desc_of(s->optimizer);
    replay_in in = {
        .m = c->m, .s = s, .ab = c->ab, .layers = c->L / c->pp, .numel_div = c->tp,
        .weights = c->weights, .w_lin = c->w_lin_elt, .w_rest = c->w_rest_elt, .w_adapter = c->w_adapter_elt,
        .grads = s->optimizer_in_backward ? 0 : c->grads, .grad_elt = c->g_elt / c->zero_g,
        .states = c->optimizer, .nstates = (int)od->states + (c->prec->master_copy ? 1 : 0),
        /* a reference copy: alive all run, as one block (its tensors' own rounding is not replayed) */
        .persistent = c->fw->workspace_bytes + c->fw->fixed_bytes + c->ddp_buckets + c->gathered + c->cast_cache +
                      c->ref_weights + c->other_weights,
        .layer_lump = c->layer_lump,
        .logits_fwd = c->logits_fwd, .logits_bwd = c->logits_bwd, .logits_kept = c->logits_kept,
        .final_norm = c->final_norm, .dequant = c->dequant_layer,
        .loss_logits = c->loss_logits, .logit_elt = c->logit_elt,
        .staged_16bit = c->lora && s->quant != MP_QUANT_NONE && c->fw->bnb_4bit && s->zero < 3,
        .held_layer = c->held_layer, .held_head = c->held_head,
    };
    if (zero3_replayed(c)) {
        in.zero3 = true, in.deepspeed = mp_runs_deepspeed(s);
        in.gather = c->gathered / 2, in.gather_root = c->root_gathered;
        in.unit_grad = c->unit_grad, in.root_grad = c->root_grad;
        in.grad_keep = c->grads_whole ? 1 : 1 / c->dp;
        in.persistent -= c->gathered; /* replayed layer by layer */
        /* DeepSpeed's 16-bit gradient partitions: one flat buffer made at the
         * engine's start (stage3.py grad_partitions_flat_buffer) */
        if (in.deepspeed) in.persistent += c->grads;
    }
    if (in.nstates < 1) in.nstates = 1;
    if (per_tensor_step(s)) in.temp_elt = c->largest_held > 0 ? c->opt_temp / c->largest_held : 0;
    else in.temps = c->opt_temp;
    if (s->optimizer_in_backward && c->largest_held > 0) in.grad_elt = c->grads / c->largest_held;
    return replay_overhead(&in, s->expandable_segments, c->replay_err);
}

/* NCCL's buffers, allocated by NCCL itself, outside PyTorch's allocator:
 * per communicator (NVIDIA/nccl issue #964, measured with PyTorch on 4 x A100
 * with NVLink, one 4 MB all-reduce per process group: 544 MB for a group of 2
 * GPUs, 688 MB for a larger one). Their size grows with the channels NCCL
 * opens (NVIDIA/nccl#986, maintainer: "linearly tied to the number of
 * channels"), which the figures for newer cards may exceed. */
static double nccl_bytes(const est_ctx *c)
{
    const double ranks = c->dp * c->tp * c->pp;
    if (ranks < 2 || c->fw->nccl_comms <= 0) return 0;
    return c->fw->nccl_comms * (ranks == 2 ? 544 : 688) * 1048576.0;
}

/* The largest moment, then what the allocator and the CUDA context add to it. */
static void est_peak(est_ctx *c)
{
    mp_estimate *e = c->e;
    const mp_framework *fw = c->fw;
    int pk = 0;
    for (int i = 0; i < e->nphases; i++)
        if (e->phases[i].total > e->phases[pk].total) pk = i;
    e->peak_phase = pk;
    for (int k = 0; k < MP_NCOMP; k++) {
        e->at_peak[k] = e->phases[pk].comp[k];
        for (int i = 0; i < e->nphases; i++) e->peak[k] = max_d(e->peak[k], e->phases[i].comp[k]);
    }
    /* Activations' peak component includes the logits; report their share. */
    e->logits_bytes = pk == c->ph_fwd_end ? c->logits_fwd
                    : pk == c->ph_loss_bwd ? c->logits_fwd + c->logits_bwd
                    : pk == c->ph_ref ? c->logits_after + c->ref_fwd : 0;
    e->reference_bytes = c->ref_weights;
    e->reward_model_bytes = c->other_weights;
    e->total_bytes = e->phases[pk].total;
    double rounded = e->total_bytes;
    /* a rounding below one byte is none (a profile's 1e-300 made it infinite) */
    if (fw->round_bytes >= 1) rounded = ceil(rounded / fw->round_bytes) * fw->round_bytes;
    /* The replay (PyTorch's CUDA caching allocator, not a CPU's): requests
     * rounded, carved out of segments, blocks cached across phases, for
     * tensors as an eager loop allocates them, ZeRO-3's gathers and gradient
     * shards on their own streams (FSDP's, DeepSpeed's). The profile's frag:
     * what micro-batches of other shapes leave cached. */
    const bool caching = fw->round_bytes >= 1 && (c->s->zero < 3 || zero3_replayed(c));
    e->allocator_cache_bytes = c->replay && caching ? max_d(allocator_overhead(c), 0) : 0;
    e->reserved_bytes = rounded + e->allocator_cache_bytes + rounded * fw->frag;
    /* outside the allocator: the card's measured figure where it has one */
    const bool measured = c->gpu && c->gpu->context_bytes > 0;
    const double context = measured ? c->gpu->context_bytes : fw->context_bytes;
    const double nccl = nccl_bytes(c);
    e->device_bytes = e->reserved_bytes + context + nccl;
    /* Overhead: what the device holds beyond the tensors themselves. */
    double slack = e->device_bytes - e->total_bytes; /* before the rollout engine, added below */
    e->at_peak[MP_OVERHEAD] += slack;
    e->peak[MP_OVERHEAD] += slack;
    /* a colocated vLLM: its share of the device, outside the training's tensors,
     * in every phase or, asleep, in the rollout's generation alone; the device
     * peaks where the tensors and the slack of the peak beside it are largest */
    if (c->ro.engine > 0) {
        double device = 0;
        for (int i = 0; i < e->nphases; i++) {
            if (c->rollout_at[i] <= 0) continue;
            const double d = e->phases[i].total + slack + c->rollout_at[i];
            if (d > device) device = d, e->rollout_bytes = c->rollout_at[i];
            e->rollout_base_bytes = max_d(e->rollout_base_bytes, e->phases[i].total + slack);
        }
        if (device > e->device_bytes) {
            e->at_peak[MP_OVERHEAD] += device - e->device_bytes;
            e->device_bytes = device;
        } else {
            e->rollout_bytes = 0; /* asleep at the peak */
        }
        e->peak[MP_OVERHEAD] += c->ro.engine;
        e->rollout_engine_bytes = c->ro.engine;
        e->rollout_nonkv_bytes = c->ro.engine_nonkv;
        e->rollout_kv_token_bytes = c->ro.kv_token_bytes;
        TERM(c, MP_OVERHEAD, "rollout engine (vLLM)", c->ro.engine, "%.2f x the GPU (gpu_memory_utilization)%s",
             mp_rollout_memory(c->s), c->s->rollout_sleep ? ", asleep while the policy trains" : "");
    }
    /* a paged optimizer's managed state: on the device, beside the allocator */
    e->device_bytes += c->paged_states;
    e->at_peak[MP_OPTIMIZER] += c->paged_states;
    e->peak[MP_OPTIMIZER] += c->paged_states;
    if (measured)
        TERM(c, MP_OVERHEAD, "CUDA context and libraries", context, "measured on %s", c->gpu->name);
    else
        TERM(c, MP_OVERHEAD, "CUDA context", fw->context_bytes, "%s profile", fw->name);
    TERM(c, MP_OVERHEAD, "library workspaces", fw->workspace_bytes, "%s profile", fw->name);
    if (nccl > 0)
        TERM(c, MP_OVERHEAD, "NCCL communicators", nccl, "%.0f x %.0f MiB (%s profile), outside the allocator",
             fw->nccl_comms, nccl / fw->nccl_comms / 1048576, fw->name);
    TERM(c, MP_OVERHEAD, "allocator segments and cache", rounded - e->total_bytes + e->allocator_cache_bytes,
         "the step replayed through PyTorch's caching allocator%s",
         c->s->expandable_segments ? " (expandable segments)" : "");
    TERM(c, MP_OVERHEAD, "micro-batches of other shapes", rounded * fw->frag,
         "%.0f%% of allocated (%s profile)", fw->frag * 100, fw->name);
}

int mp_estimate_run(const mp_model *m, const mp_settings *s, const mp_gpu *gpu, mp_estimate *e,
                    char *err)
{
    return mp_estimate_ex(m, s, gpu, e, true, err);
}

static int estimate(mp_estimate_ctx *x, const mp_model *m, const mp_settings *s, const mp_gpu *gpu,
                    mp_estimate *e, bool explain, bool replay, char *err);

int mp_estimate_ex(const mp_model *m, const mp_settings *s, const mp_gpu *gpu, mp_estimate *e,
                   bool explain, char *err)
{
    return estimate(NULL, m, s, gpu, e, explain, true, err);
}

int mp_estimate_screen(const mp_model *m, const mp_settings *s, const mp_gpu *gpu, mp_estimate *e, char *err)
{
    return estimate(NULL, m, s, gpu, e, false, false, err);
}

int mp_estimate_screen_in(mp_estimate_ctx *x, const mp_settings *s, const mp_gpu *gpu, mp_estimate *e, char *err)
{
    return estimate(x, &x->m, s, gpu, e, false, false, err);
}

int mp_estimate_whole_in(mp_estimate_ctx *x, const mp_settings *s, const mp_gpu *gpu, mp_estimate *e, char *err)
{
    return estimate(x, &x->m, s, gpu, e, false, true, err);
}

/* PPO's value model: AutoModelForSequenceClassification (the reward model's
 * shape unless --value-model), trained whole by the policy's optimizer
 * (PolicyAndValueWrapper, ppo_trainer.py 275-294 and 492-496 at
 * huggingface/trl@f2cd577): its own step estimated as supervised fine-tuning
 * of a score-head model on the same rows, in the policy's precision, and its
 * components added phase by phase to the policy's (its forward runs after the
 * policy's, both graphs alive at the loss); the phases of its own it lacks
 * (the rollout's) hold its weights and state. Its allocations are not
 * replayed through the allocator. */
static int est_value_model(est_ctx *c, const mp_model *policy, const mp_gpu *gpu, char *err)
{
    const mp_settings *s = c->s;
    mp_model vm = s->value_model ? *s->value_model : s->reward_model ? *s->reward_model : *policy;
    vm.head_out = 1, vm.tied = false;
    mp_settings sv = *s;
    sv.method = MP_METHOD_SFT, sv.reference = MP_REF_DEFAULT;
    /* ms-swift prepares the value model like the policy, adapters and all
     * (modelscope/ms-swift@3602360a swift/pipelines/train/rlhf.py 100-112:
     * prepare_model for the value key); TRL's PPOTrainer trains it whole */
    if (!s->value_lora) sv.lora_rank = 0, sv.quant = MP_QUANT_NONE;
    sv.eval_batch = 0, sv.generations = 8, sv.prompt_len = 0, sv.completion_len = 0;
    sv.rollout = MP_ROLLOUT_GENERATE, sv.rollout_memory = 0, sv.rollout_sleep = false, sv.rollout_max_len = 0;
    sv.reward_model = sv.value_model = NULL, sv.reward_none = false, sv.value_lora = false;
    mp_estimate ve;
    if (estimate(NULL, &vm, &sv, gpu, &ve, false, false, err)) return -1;
    int rest = -1;
    for (int j = 0; j < ve.nphases; j++)
        if (!strcmp(ve.phases[j].name, "backward end")) rest = j;
    mp_estimate *e = c->e;
    for (int i = 0; i < e->nphases; i++) {
        int j = rest;
        for (int k = 0; k < ve.nphases; k++)
            if (!strcmp(ve.phases[k].name, e->phases[i].name)) j = k;
        if (j < 0) continue;
        const bool own = !strcmp(ve.phases[j].name, e->phases[i].name);
        for (int k = 0; k < MP_NCOMP; k++) {
            if (k == MP_OVERHEAD || (!own && k != MP_WEIGHTS && k != MP_OPTIMIZER)) continue;
            e->phases[i].comp[k] += ve.phases[j].comp[k];
            e->phases[i].total += ve.phases[j].comp[k];
        }
    }
    c->value_trainable = ve.trainable_params;
    if (rest >= 0)
        e->value_model_bytes = ve.phases[rest].comp[MP_WEIGHTS] + ve.phases[rest].comp[MP_GRADIENTS] +
                               ve.phases[rest].comp[MP_OPTIMIZER];
    if (rest >= 0) {
        TERM(c, MP_WEIGHTS, "value model (trained)", ve.phases[rest].comp[MP_WEIGHTS], "%.0f params trained, a "
             "score head%s", ve.trainable_params, s->value_lora ? ", the policy's adapters" : ", trained whole");
        TERM(c, MP_OPTIMIZER, "value model's optimizer state", ve.phases[rest].comp[MP_OPTIMIZER],
             "the policy's optimizer over its parameters too");
    }
    return 0;
}

static int estimate(mp_estimate_ctx *x, const mp_model *m, const mp_settings *s, const mp_gpu *gpu,
                    mp_estimate *e, bool explain, bool replay, char *err)
{
    /* a stated ZeRO stage on one GPU runs and is estimated; the planner never proposes it */
    if (mp_settings_runnable(m, s, err)) return -1;
    memset(e, 0, offsetof(mp_estimate, terms)); /* the terms array is filled only with explain */
    if (settings_framework(s)->kind == MP_FW_MEMTRAIN) {
        mp_param_count(m, &e->params);
        return memtrain_estimate(m, s, e, explain, err);
    }
    /* A stack that builds its own head runs a tied checkpoint with an untied copy
     * of the embedding (LitGPT's GPT has lm_head and wte, never shared). */
    /* a preference method runs its pairs as rows of one batch (chosen over
     * rejected, padded to one width): the step is that of rows_per_example x
     * --batch sequences (vocabulary.c's methods) */
    mp_settings rows;
    const int per_example = mp_method_desc_of(s->method)->rows_per_example;
    if (per_example > 1) {
        rows = *s;
        rows.batch *= per_example;
        s = &rows;
    }
    /* a reward model: AutoModelForSequenceClassification puts a hidden x 1
     * score head (its own, never tied) where the LM head was
     * (trl/trainer/reward_trainer.py 385-388, 744-747 at huggingface/trl@f2cd577) */
    const bool score = mp_method_desc_of(s->method)->score_head;
    mp_model as_run;
    if ((settings_framework(s)->untied_head && m->tied) || score) {
        as_run = *m;
        as_run.tied = false;
        if (score) as_run.head_out = 1;
        m = &as_run;
    }
    est_ctx c;
    act_breakdown own; /* the activations, where no context keeps them */
    est_setup(&c, x, m, s, e, explain);
    c.replay = replay;
    c.replay_err[0] = 0;
    c.gpu = gpu;
    est_weights(&c);
    est_gradients(&c);
    est_optimizer(&c);
    if (mp_method_desc_of(s->method)->generates && mp_rollout_model(m, s, gpu, c.weights, c.dp, &c.ro, err))
        return -1;
    est_activations(&c, &own);
    est_dequant(&c);
    est_timeline(&c);
    if (mp_method_desc_of(s->method)->value_model) {
        if (est_value_model(&c, m, gpu, err)) return -1;
        e->trainable_params += c.value_trainable;
    }
    est_peak(&c);
    if (c.replay_err[0]) {
        snprintf(err, MP_ERR_LEN, "%s", c.replay_err);
        return -1;
    }
    host_model(m, s, e, c.opt_host + c.weights_host + c.act_host, explain);
    /* the paper's figure is for the report (explain), not for the search's many estimates */
    if (explain) e->model_states_bytes = mp_model_states_bytes(m, s, e->params.total);
    speed_model(m, s, gpu, e, c.trainable, c.dp);
    return 0;
}

bool mp_fits(const mp_estimate *e, double budget, double headroom)
{
    return e->device_bytes <= budget * (1 - headroom);
}

/* activations.c — what one transformer layer saves for backward, and the logits.
 *
 * Per layer, for B sequences of T tokens (sb = B*T), following Korthikanti et
 * al. 2022, Sec. 4.1: with 16-bit activations, a GPT-style layer with dropout
 * saves sbh(34 + 5as/h) bytes; the terms below reproduce that count and extend
 * it (GQA, gated MLPs, RMSNorm, flash attention, experts, LoRA, autocast). */
#include "estimate/activations.h"
#include "profiles/framework.h"
#include "model/model.h"
#include "profiles/profiles.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"


/* What every part of one layer's count reads: the run's sizes and element sizes. */
typedef struct layer_ctx {
    const mp_model *m;
    const mp_settings *s;
    const mp_framework *fw;
    bool torch, amp, frozen;  /* PyTorch's habits; autocast; a frozen base (LoRA) */
    double sb, T, C, NH, QD, KVD, f;
    double a;                 /* activation element */
    double r;                 /* the residual stream's element: fp32 under autocast */
    double scores;            /* B*NH*T*T */
    double mask;              /* a dropout mask's element */
    double ad;                /* what an adapter reads and keeps: its input's element */
    bool own_input;           /* each adapted module keeps its own input, none shared */
    bool kbit_input;          /* each quantised linear keeps its input too (bitsandbytes_keeps_input) */
    bool fused_qkv;           /* one qkv projection: the checkpoint's, or the stack's (LitGPT) */
    bool eager;               /* attention as matmuls and a softmax: asked for, or forced by soft-capping */
    bool compiled;            /* torch.compile: pointwise intermediates recomputed (layer_setup) */
    mp_linear lin[16];
    int nlin;
    act_tensors *saved, *core; /* where each kept tensor is listed, or NULL */
} layer_ctx;

static double note(act_tensors *to, double count, double bytes)
{
    if (to && count > 0 && bytes > 0 && to->n < ACT_MAX_KINDS) to->t[to->n++] = (act_tensor){count, bytes};
    return count * bytes;
}

/* `count` tensors of `bytes` kept for the backward: their bytes, listed. */
static double kept(const layer_ctx *l, double count, double bytes)
{
    return note(l->saved, count, bytes);
}

/* PEFT's fp32 adapters: PEFT upcasts 16-bit adapter weights to fp32
 * (huggingface/peft@831fd03e0403 src/peft/tuners/tuners_utils.py
 * cast_adapter_dtype, autocast_adapter_dtype=True) and each adapted module casts
 * its input to the adapter's dtype before lora_A (peft@b28a09c44695
 * src/peft/tuners/lora/layer.py Linear.forward: x = self._cast_input_dtype(x,
 * lora_A.weight.dtype)), so lora_A keeps its own fp32 copy of the input. Under
 * autocast the adapter's matmul runs in 16 bits again and keeps the 16-bit cast. */
static double adapter_input_bytes(const layer_ctx *l)
{
    return l->frozen && l->fw->adapter_fp32 && !l->amp && l->a == 2 ? 4 : l->a;
}

/* bitsandbytes before 0.43.2: the 4-bit matmul kept its input for the backward
 * in every quantised layer, adapted or not, though a frozen weight's gradient
 * never reads it (the release and the source: vocabulary.c, quants[] and
 * bnb_keeps_input_before). Stacks whose 4-bit base is not bitsandbytes'
 * (torchtune's torchao NF4) never did. The published peaks this explains:
 * LitGPT's QLoRA rows, run on bitsandbytes 0.41.1 (tests/validation/published). */
static bool bitsandbytes_keeps_input(const mp_settings *s, const mp_framework *fw)
{
    int before = mp_quant_desc_of(s->quant)->bnb_keeps_input_before;
    return s->lora_rank > 0 && fw->bnb_4bit && before > 0 && s->bnb_version > 0 && s->bnb_version < before;
}

static void layer_setup(layer_ctx *l, const mp_model *m, const mp_settings *s)
{
    l->m = m, l->s = s, l->fw = settings_framework(s);
    l->saved = l->core = NULL;
    l->torch = l->fw->hf_modeling;
    l->amp = mp_precision_desc_of(s->precision)->autocast;
    l->frozen = s->lora_rank > 0;
    l->sb = (double)s->batch * (double)s->seq, l->T = (double)s->seq;
    l->C = (double)m->hidden, l->NH = (double)m->heads;
    l->QD = l->NH * (double)m->head_dim, l->KVD = (double)m->kv_heads * (double)m->head_dim;
    l->f = (double)(m->experts ? m->expert_ffn : m->ffn);
    l->a = mp_element_bytes(s->precision);
    l->r = l->amp ? 4 : l->a;
    l->scores = (double)s->batch * l->NH * l->T * l->T;
    /* A dropout mask: a bool per element on GPUs (native_dropout), the
     * activation's own type where the framework multiplies by a float mask. */
    l->mask = l->fw->dropout_mask_bytes > 0 ? l->fw->dropout_mask_bytes : l->a;
    /* A stack that fuses q, k and v (LitGPT) runs one qkv module, with one LoRA
     * dropout and one A for the enabled projections, whatever the checkpoint's layout. */
    l->fused_qkv = m->fused_qkv || l->fw->fused_qkv;
    mp_model layout = *m;
    layout.fused_qkv = l->fused_qkv;
    l->nlin = mp_model_linears(&layout, l->lin, 16);
    if (l->nlin > 16) l->nlin = 16;
    l->ad = adapter_input_bytes(l);
    l->own_input = l->frozen && (s->lora_dropout > 0 || l->ad != l->a);
    l->kbit_input = bitsandbytes_keeps_input(s, l->fw);
    /* LitGPT cannot hand soft-capped scores to SDPA and computes them by hand
     * (Lightning-AI/litgpt@04205815e884 litgpt/model.py scaled_dot_product_attention:
     * "with softcapping we cannot use SDPA") */
    l->eager = s->attention == MP_ATTN_EAGER || (m->attn_softcap && l->fw->softcap_eager);
    /* torch.compile's partitioner (pytorch/pytorch@c28ba8e5893e
     * torch/_functorch/partitioners.py min_cut_rematerialization_partition,
     * solve_min_cut) keeps the cheapest cut of the forward for the backward:
     * matmul and attention outputs (compute-intensive, never recomputed), a
     * matmul's input wherever the backward reads it for the weight's gradient
     * (materialized in the backward), small reductions (a norm's rstd:
     * ban_if_reduction, output 4x smaller than the input), random masks; any
     * other pointwise intermediate is recomputed from those. Against eager a
     * layer stops keeping a norm's fp32 upcast and normalised input (the norm
     * keeps its input, as the residual stream holds it, and rstd) and a gated
     * MLP's activation output (silu(gate) comes back from gate). Eager
     * attention's T x T part is left as eager keeps it. */
    l->compiled = s->compile;
}

/* Autograd keeps a linear's input only for its weight's gradient: with a
 * frozen base, only where an adapter reads it, or where the quantised matmul
 * keeps it anyway. */
static bool keeps(const layer_ctx *l, unsigned bits)
{
    return !l->frozen || l->kbit_input || (!l->own_input && (l->s->lora_targets & bits));
}

/* How many copies of a norm's output the linears reading it keep (those
 * answering to the bits). Without autocast they share the one tensor. Under
 * autocast each linear casts its fp32 input to 16 bits for itself, so separate
 * q, k and v projections keep three copies where a fused qkv keeps one. With a
 * frozen base only the adapted linears keep one (their adapter's A casts it). */
static double norm_output_copies(const layer_ctx *l, unsigned bits)
{
    int copies = 0, readers = 0;
    for (int i = 0; i < l->nlin; i++) {
        if (!(l->lin[i].target & bits)) continue;
        readers++;
        if (l->s->lora_rank == 0 || (l->lin[i].target & l->s->lora_targets)) copies++;
    }
    /* every quantised reader keeps it: the one tensor, or its own 16-bit cast under autocast */
    if (readers > 0 && l->kbit_input) return l->amp ? readers : 1;
    if (readers == 0 || l->own_input) return 0; /* the adapters' own copies: adapter_input_saved */
    return l->amp ? copies : copies > 0;
}

/* Norms save their input; LayerNorm adds mean and rstd (fp32), RMSNorm rstd.
 * Hugging Face's eager RMSNorm upcasts its input to fp32 (kept by pow), keeps
 * the normalised input (in the input's type) for the weight's gradient, and
 * on torch 1.x mean() keeps x^2 as well. LitGPT's multiplies the weight in fp32
 * and casts after (Lightning-AI/litgpt@04205815e884 litgpt/model.py RMSNorm:
 * (x_normed * weight.float()).to(dtype)), so a trained weight keeps the fp32
 * normalised input (counted on an H200: tests/validation/gpu/litgpt_probe.json,
 * tinyllama-full). input_shared: another norm already keeps this input (a
 * parallel block's second norm), so only what this one computes is new; an
 * upcast to fp32 is its own tensor unless the input is fp32 already. */
static double norm_saves(const layer_ctx *l, bool input_shared)
{
    const double sb = l->sb, C = l->C;
    if (l->m->norm == MP_NORM_RMS && l->torch && !l->compiled) {
        const double normed = l->fw->norm_fp32_product ? 4 : l->r;
        return kept(l, input_shared && l->r == 4 ? 0 : 1, 4 * sb * C) + kept(l, l->frozen ? 0 : 1, normed * sb * C) +
               kept(l, 1, 4 * sb) + kept(l, l->fw->mean_keeps_input ? 1 : 0, 4 * sb * C);
    }
    return kept(l, input_shared ? 0 : 1, l->r * sb * C) + kept(l, l->m->norm == MP_NORM_LAYER ? 2 : 1, 4 * sb);
}

static double norm_saved(const layer_ctx *l) { return norm_saves(l, false); }

/* K and V as attention keeps them: grouped heads (KVD wide), or repeated to
 * the query heads (QD wide) where the model repeats them first: transformers'
 * eager attention (repeat_kv), and under SDPA LitGPT (Lightning-AI/litgpt@981d0418516b
 * litgpt/model.py CausalSelfAttention: k.expand(...) then reshape, "flash
 * attention requires it") and torchtune (pytorch/torchtune@00c242bad053
 * torchtune/modules/attention.py MultiHeadAttention.forward: expand, reshape). */
static double kv_width(const layer_ctx *l)
{
    return (l->eager && l->torch) || (!l->eager && l->fw->sdpa_full_kv) ? l->QD : l->KVD;
}

/* A fused qkv projection whose V reaches attention as a view of its output:
 * rotary gives Q and K tensors of their own, but the saved V holds the whole
 * qkv output, so its Q and K parts stay alive too. V stays a view unless grouped
 * heads are repeated (a copy). LitGPT fuses every model's qkv and takes V as a
 * view (Lightning-AI/litgpt@04205815e884 litgpt/model.py CausalSelfAttention.forward:
 * qkv = self.qkv(x); q, k, v = qkv.split(...); v = v.view(...).transpose(1, 2);
 * repeat_interleave only when n_query_groups != n_head; the same with
 * qkv.split(..., dim=2) and reshape in lit-gpt 2023); transformers' fused
 * models (Phi-3 qkv_proj, GPT-NeoX query_key_value) slice V out the same way. */
static double fused_qkv_kept(const layer_ctx *l)
{
    const mp_model *m = l->m;
    bool v_is_view = m->kv_heads == m->heads;
    return l->fused_qkv && v_is_view && m->pos == MP_POS_ROPE ? l->a * l->sb * (l->QD + l->KVD) : 0;
}

/* The attention block's saved tensors; *core gets the T x T part. */
static double attention_saved(const layer_ctx *l, double *core)
{
    const mp_settings *s = l->s;
    const double a = l->a, sb = l->sb, QD = l->QD;
    /* The norm's output is the next linear's input (a 16-bit cast under autocast). */
    double attn = norm_saved(l) + kept(l, norm_output_copies(l, MP_LORA_Q | MP_LORA_K | MP_LORA_V), a * sb * l->C);
    /* Q and K (after rotary) for Q K^T, V for the probabilities times V. */
    attn += kept(l, 1, a * sb * QD) + kept(l, 2, a * sb * kv_width(l));
    attn += kept(l, 1, fused_qkv_kept(l));
    *core = 0;
    if (l->eager) {
        /* The softmax output. With 16-bit activations it is fp32 with a 16-bit
         * copy for the next matmul where the model asks for it, with or without
         * autocast (Llama-lineage code: softmax(..., dtype=torch.float32).to(q.dtype),
         * measured on an H200 at 6 bytes per score in pure bf16:
         * tests/validation/gpu, 1b-r16-all-eager), or where CUDA autocast runs
         * softmax in fp32; CPU autocast leaves GPT-2-style softmax in 16 bits.
         * Soft-capped scores (Gemma 2) add tanh's output, and that code asks for
         * an fp32 softmax (LitGPT: do_softcapping = tanh(x / c) * c, then
         * F.softmax(scores, dtype=torch.float).to(q.dtype); transformers' Gemma 2
         * eager attention alike). In fp32 the softmax's output is the only copy. */
        bool capped = l->m->attn_softcap;
        bool asks_fp32 = capped || l->m->norm == MP_NORM_RMS;
        bool fp32_softmax = a < 4 && (asks_fp32 || (l->amp && l->fw->autocast_softmax_fp32));
        *core = note(l->core, 1, (fp32_softmax ? 4 + a : a) * l->scores) + note(l->core, capped ? 1 : 0, a * l->scores);
        if (s->dropout) /* mask and dropped probabilities */
            *core += note(l->core, 1, l->mask * l->scores) + note(l->core, 1, a * l->scores);
        if (keeps(l, MP_LORA_O)) attn += kept(l, 1, a * sb * QD); /* attention output: o-proj input */
    } else {
        attn += kept(l, 1, a * sb * QD) + kept(l, 1, 4 * sb * l->NH); /* output and row logsumexp */
        /* The o-projection reads SDPA's output itself where the queries arrive
         * token-major (transformers' Llama: the projection's output viewed and
         * transposed, so transpose(1, 2).contiguous() copies nothing). Where q
         * is built head-major by a cat after rotary, SDPA's output follows q's
         * layout and the reshape for the projection copies it; the projection
         * keeps the copy where it keeps its input. LitGPT always concatenates
         * (Lightning-AI/litgpt@04205815e884 litgpt/model.py; counted on an H200,
         * tests/validation/gpu/litgpt_probe.json, tinyllama-full); transformers
         * does where rotary covers part of each head (GPT-NeoX and Phi
         * apply_rotary_pos_emb: torch.cat([q_embed, q_pass], dim=-1); counted on
         * an H100, tests/validation/gpu/hf_layer_probe.json, pythia-1b, phi-2). */
        bool copy = l->fw->attn_out_copy || l->m->rope_partial;
        if (copy && keeps(l, MP_LORA_O)) attn += kept(l, 1, a * sb * QD);
    }
    if (s->dropout) attn += kept(l, 1, l->mask * sb * l->C);          /* mask after the o-proj */
    return attn;
}

/* The MLP's norm. A parallel block feeds attention and MLP from the layer's
 * input (transformers' GPTNeoXLayer with use_parallel_residual, PhiDecoderLayer,
 * FalconDecoderLayer; LitGPT's Block with parallel_residual): with one norm
 * (Phi, Falcon-7B) the MLP reads the attention's normed tensor and its norm
 * keeps nothing of its own; with two (GPT-NeoX) the second norm's input is the
 * tensor the first keeps. Counted on an H200: LitGPT's phi-1_5 and
 * stablelm-base-alpha-3b blocks keep one LayerNorm input per layer
 * (tests/validation/gpu/litgpt_probe.json). */
static double mlp_norm_saved(const layer_ctx *l)
{
    if (!l->m->parallel_residual) return norm_saved(l);
    return l->m->norms_per_layer < 2 ? 0 : norm_saves(l, true);
}

/* Copies of the MLP's normed input its linears keep: in a block with one
 * shared norm the attention's tensor, which a second reader does not copy
 * (each reader's 16-bit cast under autocast is its own). */
static double mlp_norm_output_copies(const layer_ctx *l)
{
    double mlp = norm_output_copies(l, MP_LORA_GATE | MP_LORA_UP);
    if (!l->m->parallel_residual || l->m->norms_per_layer >= 2 || l->amp) return mlp;
    return norm_output_copies(l, MP_LORA_Q | MP_LORA_K | MP_LORA_V) > 0 ? 0 : mlp;
}

/* transformers' gelu_new (GPT-2, Phi) is NewGELUActivation, written out in
 * Python: 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))
 * (huggingface/transformers src/transformers/activations.py). Autograd keeps
 * x (for the cube, the one tensor a fused GELU keeps too), tanh's output, and
 * both factors of the last product, 0.5 * x and 1 + tanh: three tensors of the
 * MLP's width beyond a fused GELU. Counted on an H100, phi-2's layer keeps
 * these five (tests/validation/gpu/hf_layer_probe.json). Stacks that run their
 * own fused GELU (LitGPT's F.gelu(approximate="tanh")) keep one; under
 * torch.compile the partitioner recomputes them. */
static double python_gelu_tensors(const layer_ctx *l)
{
    const mp_model *m = l->m;
    if (!m->gelu_python || !l->fw->python_gelu || m->mlp != MP_MLP_GELU || l->compiled) return 0;
    return (m->experts ? (double)m->top_k : 1) * 3;
}

static double mlp_saved(const layer_ctx *l)
{
    const mp_model *m = l->m;
    const double a = l->a, sb = l->sb, C = l->C, f = l->f;
    double mlp = mlp_norm_saved(l) + kept(l, mlp_norm_output_copies(l), a * sb * C);
    double down_in = keeps(l, MP_LORA_DOWN) ? 1 : 0;  /* the down projection's input */
    /* per token and ffn unit: gate, silu(gate) (recomputed from gate when compiled), up and the
     * product; or GELU's input and output */
    double per_f = m->mlp == MP_MLP_GATED ? 2 + (l->compiled ? 0 : 1) + down_in : 1 + down_in;
    if (m->experts) {
        double k = (double)m->top_k;
        mlp += kept(l, k * per_f, a * sb * f);               /* each token through top_k experts */
        mlp += kept(l, k, a * sb * C);                       /* tokens gathered per expert */
        mlp += kept(l, 2, 4 * sb * (double)m->experts);      /* router logits and probabilities (fp32) */
        if (m->shared_experts)
            mlp += kept(l, per_f, a * sb * (double)m->shared_ffn);
    } else {
        mlp += kept(l, per_f, a * sb * f);
    }
    mlp += kept(l, python_gelu_tensors(l), a * sb * f);
    if (l->s->dropout) mlp += kept(l, 1, l->mask * sb * C);
    return mlp;
}

/* What one adapted module of `in` inputs keeps of its input per token, when it
 * keeps its own: LoRA dropout (peft lora/layer.py Linear.forward
 * lora_B(lora_A(dropout(x))); LitGPT lora.py LoRALinear.forward
 * self.lora_dropout(x) @ lora_A) keeps the dropped-out input for lora_A and the
 * mask for the dropout's backward, one pair per module, so projections that
 * read one tensor no longer share it; without dropout, PEFT's fp32 cast. */
static double adapter_input_saved(const layer_ctx *l, double in)
{
    if (!l->own_input) return 0;
    return in * (l->ad + (l->s->lora_dropout > 0 ? l->mask : 0));
}

/* The width of an adapted module's A output: the rank, or under LitGPT's fused
 * qkv the rank times the projections enabled (Lightning-AI/litgpt@04205815e884
 * litgpt/lora.py LoRAQKVLinear: lora_A is (r * sum(enable_lora), in_features)). */
static double a_width(const layer_ctx *l, unsigned bit)
{
    unsigned on = bit & l->s->lora_targets;
    double n = 0;
    for (; on; on &= on - 1) n++;
    return (double)l->s->lora_rank * (l->fw->fused_qkv ? n : 1);
}

/* LoRA: each adapted module saves A's output (rank r, in the adapter's dtype);
 * its input is shared, or its own (adapter_input_saved). */
static double lora_saved(const layer_ctx *l)
{
    const mp_settings *s = l->s;
    double lora = 0;
    if (s->lora_rank > 0) {
        for (int i = 0; i < l->nlin; i++) {
            unsigned bit = l->lin[i].target;
            if (bit & s->lora_targets) {
                double tok = l->m->experts && (bit & MP_LORA_MLP) ? l->sb * (double)l->m->top_k : l->sb;
                double in = (double)l->lin[i].in;
                lora += kept(l, 1, tok * l->ad * a_width(l, bit));
                if (l->own_input) /* adapter_input_saved, tensor by tensor */
                    lora += kept(l, 1, tok * in * l->ad) + kept(l, l->s->lora_dropout > 0 ? 1 : 0, tok * in * l->mask);
            }
        }
    }
    return lora;
}

/* LitGPT's LoRA on its fused qkv with some of q, k and v left out (lora_query
 * and lora_value, say) pads B's output to the qkv width with index_copy
 * (Lightning-AI/litgpt@01e39f5069f5 litgpt/lora.py LoRAQKVLinear.zero_pad;
 * with all three enabled it returns B's output as is), and index_copy's
 * backward keeps its source, whose shape it needs (pytorch/pytorch@d327a7877826
 * tools/autograd/derivatives.yaml index_copy: grad.index_select(dim,
 * index).expand_as(source)): B's output for the enabled projections, per token.
 * Counted on an H100 (tests/validation/gpu/litgpt_probe.json: IndexCopyBackward0
 * source, 8192 wide on Llama 2 7B's q and v, 5120 on Mistral 7B's). */
static double qkv_zero_pad_saved(const layer_ctx *l)
{
    const unsigned qkv = MP_LORA_Q | MP_LORA_K | MP_LORA_V, on = l->s->lora_targets & qkv;
    if (!l->fw->lora_zero_pad || !l->fused_qkv || l->s->lora_rank == 0 || !on || on == qkv) return 0;
    double width = (on & MP_LORA_Q ? l->QD : 0) + (on & MP_LORA_K ? l->KVD : 0) + (on & MP_LORA_V ? l->KVD : 0);
    return kept(l, 1, l->sb * l->ad * width);
}

/* LoRA on the output head (LitGPT lora_head: the head is a LoRALinear like the
 * layers' projections): A keeps the final norm's output, or its own copy, and B
 * keeps A's output. A frozen head without an adapter keeps nothing. */
static double head_adapter_saved(const layer_ctx *l)
{
    if (!l->frozen || !(l->s->lora_targets & MP_LORA_HEAD)) return 0;
    double input = l->own_input ? adapter_input_saved(l, l->C) : l->a * l->C;
    return l->sb * (input + l->ad * (double)l->s->lora_rank);
}

/* A 4-bit head (Lightning's plugin quantises it) keeps the final norm's output
 * where bitsandbytes keeps inputs, unless the head's adapter already holds it. */
static double quantised_head_input(const layer_ctx *l)
{
    if (!l->kbit_input || !framework_quantises_head(l->m, l->s)) return 0;
    if ((l->s->lora_targets & MP_LORA_HEAD) && !l->own_input) return 0;
    return l->sb * l->a * l->C;
}

/* What bitsandbytes' MatMul4Bit holds of one layer for as long as the graph
 * lives: every quantised linear's input, one tensor per group of linears that
 * read the same one (a 16-bit cast of its own each under autocast), whether or
 * not another op saves the same tensor. It keeps them as a plain ctx attribute
 * (ctx.tensors = (A, B)), not through save_for_backward, and the autograd
 * engine frees only saved variables as each node's backward runs
 * (PyNode::release_variables clears saved_variables): the inputs go when the
 * graph does. */
static double kbit_held(const layer_ctx *l)
{
    if (!l->kbit_input) return 0;
    const double a = l->a, sb = l->sb, k = l->m->experts ? (double)l->m->top_k : 1;
    double held = norm_output_copies(l, MP_LORA_Q | MP_LORA_K | MP_LORA_V) * a * sb * l->C + a * sb * l->QD;
    held += k * (mlp_norm_output_copies(l) * a * sb * l->C + a * sb * l->f);
    if (l->m->experts && l->m->shared_experts) held += a * sb * (double)l->m->shared_ffn;
    return held;
}

/* Everything one layer saves, without the T x T core (*core). */
static double layer_saved(const layer_ctx *l, double *core)
{
    double attn = attention_saved(l, core);
    return attn + mlp_saved(l) + lora_saved(l) + qkv_zero_pad_saved(l);
}

void activations_per_layer(const mp_model *m, const mp_settings *s, act_breakdown *ab)
{
    layer_ctx l;
    layer_setup(&l, m, s);
    const double a = l.a, sb = l.sb, C = l.C;
    double core, without_kbit = 0, norm = norm_saved(&l); /* the final norm's, unlisted */
    ab->saved.n = ab->core.n = ab->backward.n = 0;
    l.saved = &ab->saved, l.core = &ab->core;
    double saved = layer_saved(&l, &core);
    if (l.kbit_input) { /* the same layer without them: their share, for --explain */
        layer_ctx plain = l;
        plain.kbit_input = false;
        plain.saved = plain.core = NULL;
        without_kbit = layer_saved(&plain, &(double){0});
    }

    ab->attn_core = core;
    ab->total = saved + core;
    ab->kbit_inputs = l.kbit_input ? saved - without_kbit : 0;
    ab->kbit_held = kbit_held(&l);
    ab->kbit_held_head = l.kbit_input && framework_quantises_head(m, s) ? sb * a * C : 0;
    ab->layer_input = l.r * sb * C;
    ab->final_norm = norm + (l.frozen ? head_adapter_saved(&l) + quantised_head_input(&l) : a * sb * C);
    ab->embed_mask = s->dropout ? l.mask * sb * C : 0;
    /* Backward: gradients of the widest tensors. A block's backward runs its
     * MLP's, then its attention's: the MLP's inner gradients are gone before
     * the scores' (eager) or the query and key/value gradients are made, so
     * the larger of the two meets the residual stream's gradients, not their
     * sum (measured: the reward models of tests/validation/pairwise_measurements.csv,
     * whose small loss leaves this moment the step's peak, +5.4..+6.8% with
     * the sum, +1.8..+3.3% with the larger). The replay lists them all. */
    act_tensors *bw = &ab->backward;
    const double mlp_bw = note(bw, 2 * (m->experts ? (double)m->top_k : 1), a * sb * l.f);
    const double res_bw = note(bw, 3, a * sb * C);
    const double attn_bw = l.eager ? note(bw, 2, a * l.scores) : note(bw, 1, a * sb * l.QD) + note(bw, 2, a * sb * l.KVD);
    ab->backward_temp = res_bw + (mlp_bw > attn_bw ? mlp_bw : attn_bw);
    /* a calibrated profile scales every activation term alike */
    const double k = l.fw->act_scale > 0 ? l.fw->act_scale : 1;
    ab->total *= k, ab->attn_core *= k, ab->layer_input *= k, ab->final_norm *= k;
    ab->embed_mask *= k, ab->backward_temp *= k, ab->kbit_inputs *= k, ab->kbit_held *= k, ab->kbit_held_head *= k;
    act_tensors *lists[] = {&ab->saved, &ab->core, &ab->backward};
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < lists[i]->n; j++) lists[i]->t[j].bytes *= k;
}

/* Under no_grad a block keeps nothing: its widest moment is the MLP's inner
 * tensors (gate, up and their product, or the GELU's input and output) or,
 * eager, the scores and their softmax, beside the block's input and output. */
double no_grad_block(const mp_model *m, const mp_settings *s, double rows, double tokens, double a)
{
    const double n = rows * tokens, C = (double)m->hidden;
    const double F = (double)(m->experts ? m->expert_ffn : m->ffn);
    const double mlp = (m->mlp == MP_MLP_GATED ? 3 : 2) * F * n * a;
    const double attn = s->attention == MP_ATTN_EAGER ? 2 * a * rows * (double)m->heads * tokens * tokens : 0;
    return 2 * C * n * a + (mlp > attn ? mlp : attn);
}

double previous_batch_share(const mp_settings *s)
{
    return s->prev_seq < 0 || s->seq < 1 ? 1 : (double)s->prev_seq / (double)s->seq;
}

void logits_model(const mp_model *m, const mp_settings *s, double tokens, double all_tokens, logits_cost *cost)
{
    const mp_framework *fw = settings_framework(s);
    const double V = mp_head_outputs(m);
    const double a = mp_element_bytes(s->precision);
    *cost = (logits_cost){.elt = a};
    double *fwd = &cost->fwd, *bwd = &cost->bwd, *kept = &cost->kept;
    /* fwd: the loss's peak in forward; bwd: what the loss's backward adds to it;
     * kept: what stays into the layers' backward. */
    if (fw->logits_kept) {
        /* LitGPT's loop holds the list of logit chunks (logits = model(...)) until
         * the next step's forward has made its own, and Fabric hands them back in
         * fp32 (_FabricModule.forward: precision.convert_output casts every
         * float output to the default dtype). Each chunk's cross-entropy keeps its
         * log-softmax: every chunk's logits and log-softmax at once, and the old
         * step's logits beside the new ones before the loss; one chunk's gradient
         * and softmax in the loss's backward. The logits outlive the loss. */
        const double out = fw->fp32_logits ? 4 : a;
        *fwd = 2 * out * all_tokens * V;
        *bwd = 2 * out * tokens * V; /* tokens: one chunk's, or all of them unchunked */
        *kept = out * all_tokens * V;
        /* Before the loss, while the head runs: the old step's list and the
         * head's own 16-bit chunks; then Fabric's cast makes the new list beside
         * both, before the model call returns and the old list goes. */
        cost->head = (out * previous_batch_share(s) + a) * all_tokens * V;
        cost->cast = out != a ? out * all_tokens * V : 0;
    } else if (fw->ce_output_chunks > 0 && s->ce == MP_CE_CHUNKED) {
        /* torchtune: the model's head makes every chunk's 16-bit logits, returned
         * as one list (TransformerDecoder.chunked_output), before the loss takes
         * them one at a time (CEWithChunkedOutputLoss). Measured on an H200
         * (tests/validation/gpu/chunked_ce_probe.json), bytes per logit of all
         * chunks: compiled (training.compile_loss), each chunk's cross-entropy
         * keeps its 16-bit input and nothing else, and its backward adds one
         * chunk's gradient (2.00 after the loss, 2.25 at the backward's peak);
         * eager, each keeps its fp32 log-softmax, and one chunk's fp32 cast lives
         * while it runs (6.51 at the loss's peak, 5.01 at the backward's). */
        *fwd = a * all_tokens * V;
        if (s->compile) {
            *bwd = a * tokens * V;
        } else {
            *fwd += 4 * all_tokens * V + 4 * tokens * V;
            *bwd = 4 * all_tokens * V + 8 * tokens * V - *fwd;
        }
    } else if (s->logits != MP_LOGITS_STACK) {
        /* as the user states the loss takes them (vocabulary.c's logits_kinds),
         * bytes per logit measured at the allocator
         * (tests/validation/logits_loss_probe.csv, PyTorch 1.13 on the CPU): the
         * logits, an fp32 copy unless they are fp32 already or the loss runs in
         * their dtype, a shifted copy (fp32-shifted), and the log-softmax, all
         * live at the loss (bf16: 4.0, 10.0 and 14.0; fp32: 8.0, 8.0, 12.0); the
         * backward holds three of the loss's dtype, the saved log-softmax and two
         * gradients (bf16 5.8, 11.8, 11.7; fp32 11.5) */
        const double l = s->logits == MP_LOGITS_MODEL && !mp_precision_desc_of(s->precision)->autocast ? a : 4;
        *fwd = (a + (l != a ? l : 0) + (s->logits == MP_LOGITS_FP32_SHIFTED ? l : 0) + l) * tokens * V;
        *bwd = 3 * l * tokens * V - *fwd;
    } else if (fw->fp32_logits) {
        /* Hugging Face's loss: the logits, their fp32 copy (16-bit logits only)
         * and the fp32 log-softmax are live together while the loss is computed.
         * In the loss's backward the logits are gone (the Trainer keeps only the
         * loss): the saved log-softmax, the NLL's gradient and the log-softmax
         * input's gradient, all fp32, 12 bytes per logit. */
        *fwd = (a + (a == 2 ? 4 : 0) + 4) * tokens * V;
        *bwd = 12 * tokens * V - *fwd;
        /* reserve.c lays these tensors out one by one, unchunked and unscaled */
        bool plain = s->ce != MP_CE_CHUNKED && !m->logit_softcap && (fw->act_scale <= 0 || fw->act_scale == 1);
        if (plain) cost->hf_elems = tokens * V;
    } else {
        *fwd = a == 4 ? 4 * tokens * V : (a + 4) * tokens * V; /* log-softmax in place of the copy */
        *bwd = 8 * tokens * V;
    }
    /* Soft-capped logits: tanh keeps its 16-bit output for each logit until the head's backward */
    if (m->logit_softcap) {
        *fwd += a * (fw->logits_kept ? all_tokens : tokens) * V;
        if (fw->logits_kept) cost->head += a * all_tokens * V;
    }
    const double k = fw->act_scale;
    if (k > 0) *fwd *= k, *bwd *= k, *kept *= k, cost->head *= k, cost->cast *= k;
}

/* TRL's preference loss at the loss's backward peak, bytes per logit of the
 * whole batch, measured at the allocator (tests/validation/pairwise_loss_probe.csv,
 * PyTorch 1.13 on the CPU, the three shapes of 2,048,000 logits or more: fp32
 * 11.38 to 11.48, with the chosen NLL 15.38 to 15.49; bf16 3.73 to 3.79 and
 * 5.76 to 5.81). The fp32 path's logsumexp saves its input rows, and autograd's
 * unbind gathers every row's gradient before it stacks them beside the
 * gather's; the 16-bit path keeps only the rows' log-softmax outputs, freed row
 * by row as the backward reaches them. */
#define PREF_BWD_FP32 11.45
#define PREF_BWD_FP32_NLL 15.45
#define PREF_BWD_16 3.75
#define PREF_BWD_16_NLL 5.8

/* The online methods' policy logits, from TRL's code at huggingface/trl@f2cd577
 * (arithmetic on the tensors' sizes; no CPU measurement of these two yet):
 * online DPO's _forward (online_dpo_trainer.py 1059-1095) computes the logits of
 * every position, slices the completion's and keeps a full log-softmax of them
 * for the backward; its reference repeats that under no_grad beside the
 * policy's graph (1163-1172). PPO's update (ppo_trainer.py 809-860) keeps the
 * model's output, every position's logits, through the backward and the
 * no-grad statistics after the step (a softmax and its product with the
 * logits), the completion's slice divided in place and taken by
 * selective_log_softmax. The slices' backward makes a whole zero-filled
 * gradient of the logits (as measured for GRPO). */
static void online_logits(const mp_method_desc *md, const mp_settings *s, double rows, double seq, double V, double a,
                          preference_logits_cost *cost)
{
    const double C = (double)s->completion_len;
    const double nT = rows * seq * V, nC = rows * (C < seq ? C : seq) * V, row = (C < seq ? C : seq) * V;
    const bool fp32 = a == 4;
    if (md->per_micro_batch) {
        const double held = a * nT + a * nC;
        cost->policy.fwd = held;
        cost->policy.bwd = 2 * a * nC + a * nT; /* the log-softmax's gradient, its input's, the slice's whole one */
        cost->after = held;
        if (mp_reference_used(s) == MP_REF_MODEL || mp_reference_used(s) == MP_REF_ADAPTER)
            cost->reference = a * nT + a * nC;
        return;
    }
    const double held = a * nT + (fp32 ? 0 : a * nC);
    cost->policy.fwd = held + (fp32 ? 4 * row : 0);
    /* at the loss's backward: the slice's as the pairs measure it, the rest of
     * the logits, and the slice's whole-size gradient */
    const double total = (fp32 ? PREF_BWD_FP32 : PREF_BWD_16 * a / 2) * nC + a * (nT - nC) + a * nT;
    cost->policy.bwd = total - cost->policy.fwd;
    cost->policy.kept = a * nT;
    cost->after = held;
}

/* torchtune's DPO recipes (pytorch/torchtune@bd2a0fc7c314; the rows:
 * tests/data/engines/torchtune_dpo.csv). The model returns the whole logits,
 * upcast to fp32 (TransformerDecoder.unembed: self.output(h).float(),
 * torchtune/modules/transformer.py 687: no recipe sets num_output_chunks), and
 * rlhf.get_batch_log_probs slices them (a view), divides them by the
 * temperature 1.0 (a copy) and takes their fp32 log-softmax, gathered
 * (torchtune/rlhf/sequence_processing.py 95-99, 167-178): the logits, the
 * copy and the log-softmax live together. The LoRA recipes take all 2B rows at
 * once (lora_dpo_single_device.py 470-490, lora_dpo_distributed.py 605-625);
 * full_dpo_distributed.py takes the chosen half, then the rejected (776-786),
 * so a half's copy and log-softmax, beside the other half's kept. The recipe
 * deletes the logits after the policy's forward (lora_dpo_single_device.py
 * 528-532): the log-softmax stays for the backward. The reference repeats the
 * forward under no_grad (543-546, the adapter disabled; full_dpo_distributed.py
 * 865-874, the reference model) and keeps nothing. Bytes per logit of the
 * 2B x T x V logits measured at the allocator
 * (tests/validation/torchtune_dpo_probe.csv, PyTorch 1.13 on the CPU, the
 * three shapes of 2,048,000 logits or more): the forward's peak 11.88 to 11.99
 * (all rows; halves 9.91 to 10.01), what stays 3.94 to 4.02, the reference's
 * peak with it 15.82 to 15.98 (halves 11.88 to 11.99), the backward's peak
 * fp32 11.32 to 11.53 and bf16 11.57 to 11.81 (the gather's zero-filled
 * gradient, the log-softmax's and its saved output, then the slice's
 * whole-size one). */
#define TT_DPO_FWD_ALL 12.0
#define TT_DPO_FWD_HALVES 10.0
#define TT_DPO_KEPT 4.0
#define TT_DPO_REF_ALL 12.0    /* beside what stays: 16 in all */
#define TT_DPO_REF_HALVES 8.0  /* 12 in all */
#define TT_DPO_BWD_FP32 11.45
#define TT_DPO_BWD_16 11.75

static void torchtune_dpo_logits(const mp_settings *s, double n, preference_logits_cost *cost)
{
    const bool halves = s->lora_rank == 0; /* full_dpo_distributed */
    const double fwd = (halves ? TT_DPO_FWD_HALVES : TT_DPO_FWD_ALL) * n;
    const double bwd = (mp_element_bytes(s->precision) == 4 ? TT_DPO_BWD_FP32 : TT_DPO_BWD_16) * n;
    *cost = (preference_logits_cost){.policy = {.elt = 4, .fwd = fwd, .bwd = bwd - fwd}, .after = TT_DPO_KEPT * n};
    if (mp_reference_used(s) == MP_REF_MODEL || mp_reference_used(s) == MP_REF_ADAPTER)
        cost->reference = (halves ? TT_DPO_REF_HALVES : TT_DPO_REF_ALL) * n;
}

void preference_logits(const mp_model *m, const mp_settings *s, double rows, double seq,
                       preference_logits_cost *cost)
{
    const mp_method_desc *md = mp_method_desc_of(s->method);
    const double V = mp_head_outputs(m), a16 = mp_element_bytes(s->precision);
    if (settings_framework(s)->ce_output_chunks > 0) { /* torchtune's loop: settings.c allows its DPO */
        torchtune_dpo_logits(s, rows * seq * V, cost);
        return;
    }
    /* the Trainer's stacks hand the loss fp32 logits under autocast
     * (frameworks.csv fp32_outputs: accelerate's convert_outputs_to_fp32),
     * made beside the 16-bit ones */
    const bool converted = settings_framework(s)->fp32_outputs && mp_precision_desc_of(s->precision)->autocast && a16 < 4;
    const double a = converted ? 4 : a16;
    const double n = rows * seq * V, row = seq * V;
    const bool fp32 = a == 4;
    *cost = (preference_logits_cost){.policy.elt = a};
    if (md->per_micro_batch || md->value_model) {
        online_logits(md, s, rows, seq, V, a, cost);
        if (converted && (a16 + 4) * n > cost->policy.fwd) cost->policy.fwd = (a16 + 4) * n;
        return;
    }
    /* selective_log_softmax (trl/trainer/utils.py 479-518 at huggingface/trl@f2cd577):
     * fp32 takes the picked logit minus a logsumexp, one row at a time (its work
     * is one row's exponentials, its saved tensors views of the logits); 16-bit
     * takes a log-softmax row by row and keeps each for the backward */
    double held = fp32 ? a * n : 2 * a * n;
    double fwd = held + (fp32 ? 4 * row : 0);
    double total_bwd = (fp32 ? (md->chosen_nll ? PREF_BWD_FP32_NLL : PREF_BWD_FP32)
                             : (md->chosen_nll ? PREF_BWD_16_NLL : PREF_BWD_16) * a / 2) * n;
    if (md->chosen_nll) {
        /* cross_entropy on the chosen half, shifted and .contiguous(): a copy
         * unless the half is one row (cpo_trainer.py 825-844, orpo_trainer.py
         * 782-803), and its log-softmax, kept */
        const double half = a * n / 2;
        held += half;
        const double with_copy = held + (rows > 2 ? half : 0);
        if (with_copy > fwd) fwd = with_copy;
    }
    if (md->generates) {
        /* GRPO also takes the entropy of every completion position under
         * no_grad (compute_entropy=True, grpo_trainer.py 3001-3007, 1524-1533):
         * entropy_from_logits reshapes the sliced logits, not contiguous, into
         * a copy, then 128 rows at a time holds their log-softmax, its exp
         * and their product (trl/trainer/utils.py 526-560) */
        const double positions = rows * (seq - 1);
        const double entropy = a * positions * V + 3 * a * (positions < 128 ? positions : 128) * V;
        if (held + entropy > fwd) fwd = held + entropy;
        /* the log-probabilities read a slice of the logits (logits[:, :-1]):
         * its backward makes a whole zero-filled gradient of the logits, one
         * more value per logit than the contiguous pairs' (measured:
         * tests/validation/grpo_measurements.csv, 16.0 bytes per fp32 logit
         * at the loss's backward where the pairs take 11.45) */
        total_bwd += a * n;
    }
    if (converted && (a16 + 4) * n > fwd) fwd = (a16 + 4) * n;
    cost->policy.fwd = fwd;
    cost->policy.bwd = total_bwd - fwd;
    cost->after = held;
    /* the reference's forward under no_grad (dpo_trainer.py 1373-1394): its own
     * logits and one row's work, nothing kept */
    if (mp_reference_used(s) == MP_REF_MODEL || mp_reference_used(s) == MP_REF_ADAPTER)
        cost->reference = (converted ? a16 + 4 : a) * n + (fp32 ? 4 : a) * row;
}

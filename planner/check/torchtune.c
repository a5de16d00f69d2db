/* torchtune.c — a torchtune recipe config (tune run RECIPE --config FILE):
 * the keys of full_finetune_single_device, lora_finetune_single_device,
 * full_finetune_distributed and lora_finetune_distributed, as
 * tests/data/engines/torchtune_config_keys.csv tabulates them with their
 * commits (its README says which), read against torchtune 0.6.1's recipes
 * (pytorch/torchtune@a6290a5b4075, the release memplan's --emit torchtune
 * writes for) and main (pytorch/torchtune@bd2a0fc7c314). torchtune has no
 * `auto`: what a config leaves out is the recipe's default or the builder's.
 *
 * The builder (model._component_) decides the model and the recipe's kind:
 * full, lora_ or qlora_ (emit/torchtune_models.c maps builders to profiles).
 * The processes are tune run's (--nproc_per_node), not the YAML's: --gpus N
 * makes the run a distributed recipe on FSDP2. */
#include "check/reader.h"

#include <stdio.h>
#include <string.h>

#include "common/errors.h"
#include "emit/torchtune_models.h"
#include "settings/vocabulary.h"

/* What a key says that finish() decides with the others (ck_state.fmt_bits). */
enum {
    TT_MODEL = 1 << 0, TT_OPTIMIZER = 1 << 1, TT_LOSS = 1 << 2, TT_PACKED = 1 << 3, TT_CLIP = 1 << 4,
    TT_CPU_OFFLOAD = 1 << 5, TT_NO_RESHARD = 1 << 6, TT_RESHARD_KEY = 1 << 7, TT_CUSTOM_SHARDED = 1 << 8,
    TT_HSDP = 1 << 9, TT_OIB = 1 << 10, TT_AC_FULL = 1 << 11, TT_AC_SELECTIVE = 1 << 12, TT_EXPANDABLE = 1 << 13,
    TT_SEQ_NULL = 1 << 14, TT_DPO = 1 << 15, TT_REF_CKPT = 1 << 16,
};

/* Components of torchtune's own: a config whose maps name them is torchtune's. */
static int detect(const ck_node *root)
{
    if (!root || root->kind != CK_MAP) return 0;
    int n = 0;
    for (const ck_node *k = root->child; k; k = k->next) {
        const char *c = k->kind == CK_MAP ? ck_text(ck_get(k, "_component_")) : NULL;
        if (c && !strncmp(c, "torchtune.", 10)) n++;
    }
    return n ? 20 + n : 0; /* above a Trainer's guess from gradient_accumulation_steps and output_dir */
}

static int read_bool(const ck_node *v, const char *key, bool *on, char *err)
{
    if (ck_bool(v, on)) return ck_bad(key, v, "want True or False", err);
    return 0;
}

static void set_flag(ck_state *st, const char *setting, bool on, const char *key, const char *how)
{
    ck_set(st, setting, on ? "on" : "off", key, how);
}

/* ---------- the model: its builder and the builder's arguments ---------- */

/* The packages whose builders are not text decoders memplan models: vision
 * encoders and fusion layers (Llama 3.2 Vision, Llama 4's early fusion, CLIP),
 * diffusion (Flux) and T5's encoder (torchtune/models/ @bd2a0fc7c314). */
static const char *const multimodal[] = {"llama3_2_vision", "llama4", "clip", "flux", "t5"};

/* LORA_ATTN_MODULES (torchtune/modules/peft/_utils.py) as memplan's roles */
static const struct { const char *name; unsigned bit; } attn_modules[] = {
    {"q_proj", MP_LORA_Q}, {"k_proj", MP_LORA_K}, {"v_proj", MP_LORA_V}, {"output_proj", MP_LORA_O},
};

static int read_attn_modules(const ck_node *v, unsigned *bits, char *err)
{
    const char *key = "model.lora_attn_modules";
    if (!v || v->kind != CK_LIST) return ck_bad(key, v, "want a list of q_proj, k_proj, v_proj, output_proj", err);
    for (const ck_node *i = v->child; i; i = i->next) {
        const char *t = ck_text(i);
        size_t j = 0;
        while (t && j < sizeof attn_modules / sizeof *attn_modules && strcmp(t, attn_modules[j].name)) j++;
        if (!t || j == sizeof attn_modules / sizeof *attn_modules)
            return ck_bad(key, i, "torchtune's attention projections are q_proj, k_proj, v_proj and output_proj "
                                  "(another name gets no adapter)", err);
        *bits |= attn_modules[j].bit;
    }
    return 0;
}

/* The builder's name, its last dotted part, for messages. */
static const char *leaf(const char *component)
{
    const char *dot = strrchr(component, '.');
    return dot ? dot + 1 : component;
}

/* model: {_component_: a builder, then its keyword arguments}. The LoRA builders
 * all take lora_attn_modules (required), apply_lora_to_mlp, apply_lora_to_output,
 * lora_rank (8), lora_alpha (16), lora_dropout (0.0), use_dora and quantize_base
 * (False); qlora_ ones are functools.partial(lora_..., quantize_base=True); the
 * full builders take nothing (torchtune/models/<family>/_model_builders.py
 * @bd2a0fc7c314; torchtune_models.csv's lora_args). A keyword a builder does not
 * take raises TypeError. */
static int read_model(ck_state *st, const ck_node *v, const char *key, char *err)
{
    const char *comp = v && v->kind == CK_MAP ? ck_text(ck_get(v, "_component_")) : NULL;
    if (!comp || !*comp) return ck_bad(key, v, "want a map with the model's builder as _component_", err);
    char q[128], why[256];
    if (!strncmp(comp, "torchtune.models.", 17))
        for (size_t i = 0; i < sizeof multimodal / sizeof *multimodal; i++) {
            size_t n = strlen(multimodal[i]);
            if (!strncmp(comp + 17, multimodal[i], n) && comp[17 + n] == '.') {
                snprintf(why, sizeof why, "'%s' is a multimodal model (an image encoder, its fusion layers and "
                         "the images' tokens beside the text decoder)", mp_quote(comp, q, sizeof q));
                return ck_refuse("model._component_", why, err);
            }
        }
    if (strstr(comp, "_reward_") || strstr(comp, "classifier_model")) {
        snprintf(why, sizeof why, "'%s' is a reward model (a classifier head in place of the vocabulary's, "
                 "for RLHF)", mp_quote(comp, q, sizeof q));
        return ck_refuse("model._component_", why, err);
    }
    tt_kind kind = TT_FULL;
    const tt_model *row = tt_model_by_builder(comp, &kind);
    const char *name = leaf(comp);
    if (!row) kind = !strncmp(name, "qlora_", 6) ? TT_QLORA : !strncmp(name, "lora_", 5) ? TT_LORA : TT_FULL;
    /* a builder memplan has no row for names no profile: resolve_model says so, or --model plans it */
    if (strlen(row ? row->profile : comp) >= sizeof st->model_ref) return ck_bad(key, v, "want a shorter name", err);
    snprintf(st->model_ref, sizeof st->model_ref, "%s", row ? row->profile : comp);
    bool lora = kind != TT_FULL, quant = kind == TT_QLORA, mlp = false, head = false, modules = false;
    int64_t rank = 8;
    double dropout = 0;
    unsigned bits = 0;
    const char *rank_key = "(default)", *quant_key = quant ? "model._component_" : NULL;
    for (const ck_node *a = v->child; a; a = a->next) {
        char path[128];
        snprintf(path, sizeof path, "model.%s", a->key);
        bool on;
        if (!strcmp(a->key, "_component_")) continue;
        if (lora && !strcmp(a->key, "lora_attn_modules")) {
            if (read_attn_modules(a, &bits, err)) return -1;
            modules = true;
        } else if (lora && !strcmp(a->key, "apply_lora_to_mlp")) {
            if (read_bool(a, path, &mlp, err)) return -1;
        } else if (lora && !strcmp(a->key, "apply_lora_to_output") && (!row || row->output_arg)) {
            if (read_bool(a, path, &head, err)) return -1;
            /* a tied embedding's builder raises ValueError on True (torchtune_models.csv output_lora) */
            if (head && row && !row->output_lora)
                return snprintf(err, MP_ERR_LEN, "'%s': %s ties the output to the embedding and raises on "
                                "apply_lora_to_output: True", path, name), -1;
        } else if (lora && !strcmp(a->key, "lora_rank")) {
            if (ck_int(a, &rank) || rank < 1 || rank > 1 << 16) return ck_bad(path, a, "want a rank from 1 to 65536", err);
            rank_key = "model.lora_rank";
        } else if (lora && !strcmp(a->key, "lora_alpha")) {
            double alpha; /* scales the adapter's output: no memory */
            if (ck_real(a, &alpha)) return ck_bad(path, a, "want a number", err);
        } else if (lora && !strcmp(a->key, "lora_dropout")) {
            if (ck_real(a, &dropout) || dropout < 0 || dropout >= 1)
                return ck_bad(path, a, "want a probability from 0 to below 1", err);
        } else if (lora && !strcmp(a->key, "use_dora")) {
            if (read_bool(a, path, &on, err)) return -1;
            if (on) return ck_refuse(path, "DoRA's magnitude vectors and the weight norms it keeps", err);
        } else if (lora && !strcmp(a->key, "quantize_base")) {
            /* a call's keyword overrides the partial's: quantize_base: False un-quantises a qlora_ builder */
            if (read_bool(a, path, &quant, err)) return -1;
            quant_key = "model.quantize_base";
        } else if (row) {
            return snprintf(err, MP_ERR_LEN, "'%s' is no argument of torchtune's %s (it raises TypeError)",
                            mp_quote(path, q, sizeof q), name), -1;
        } else {
            ck_unknown(st, path);
        }
    }
    if (lora && !modules)
        return snprintf(err, MP_ERR_LEN, "'model.lora_attn_modules' is missing: torchtune's %s requires it", name), -1;
    if (lora && !bits && !mlp && !head)
        return snprintf(err, MP_ERR_LEN, "'model.lora_attn_modules' is empty and apply_lora_to_mlp is False: %s "
                        "would train no adapter", name), -1;
    st->fmt_bits |= TT_MODEL;
    st->lora = lora;
    st->s.lora_rank = lora ? rank : 0;
    st->given |= MP_PIN_LORA;
    if (!lora) return ck_set(st, "lora-rank", "0", "model._component_", "a full model's builder: every weight trained"), 0;
    char t[32], names[64];
    snprintf(t, sizeof t, "%lld", (long long)rank);
    ck_set(st, "lora-rank", t, rank_key, rank_key[0] == '(' ? "the LoRA builders' default" : NULL);
    st->s.lora_targets = bits | (mlp ? MP_LORA_MLP : 0) | (head ? MP_LORA_HEAD : 0);
    st->given |= MP_PIN_TARGETS;
    ck_set(st, "lora-targets", mp_lora_targets_name(st->s.lora_targets, names, sizeof names),
           "model.lora_attn_modules", mlp && head ? "with apply_lora_to_mlp and apply_lora_to_output"
                                      : mlp ? "with apply_lora_to_mlp" : head ? "with apply_lora_to_output" : NULL);
    st->s.lora_dropout = (float)dropout;
    snprintf(t, sizeof t, "%g", dropout);
    ck_set(st, "lora-dropout", t, ck_get(v, "lora_dropout") ? "model.lora_dropout" : "(default)", NULL);
    /* torchao's NF4Tensor (FrozenNF4Linear, torchtune/modules/low_precision/nf4_linear.py @bd2a0fc7c314):
     * 4-bit blocks with their scales quantised again, memplan's nf4-dq */
    st->s.quant = quant ? MP_QUANT_NF4_DQ : MP_QUANT_NONE;
    st->given |= MP_PIN_QUANT;
    if (quant_key) ck_set(st, "quant", mp_quant_name(st->s.quant), quant_key, quant ? "torchao's NF4" : NULL);
    return 0;
}

/* ---------- the data: the sequence ---------- */

/* tokenizer.max_seq_len cuts each sample (the dataset builders' truncate); the
 * tokenizers' builders default it to None: nothing is cut. Its other arguments
 * pick the text, not its length. */
static int read_tokenizer(ck_state *st, const ck_node *v, const char *key, char *err)
{
    if (!v || v->kind != CK_MAP) return ck_bad(key, v, "want the tokenizer's _component_ and arguments", err);
    const ck_node *n = ck_get(v, "max_seq_len");
    if (!n || ck_null(n)) {
        if (n) st->fmt_bits |= TT_SEQ_NULL;
        return 0;
    }
    return ck_read_seq(st, n, "tokenizer.max_seq_len", err);
}

/* dataset (a map, or a list torchtune concatenates): packed packs samples into
 * max_seq_len tokens (PackedDataset); the rest chooses the text. */
static int read_dataset(ck_state *st, const ck_node *v, const char *key, char *err)
{
    const ck_node *one = v && v->kind == CK_MAP ? v : NULL;
    if (!one && (!v || v->kind != CK_LIST)) return ck_bad(key, v, "want a dataset's map or a list of them", err);
    for (const ck_node *d = one ? one : v->child; d; d = one ? NULL : d->next) {
        const ck_node *p = ck_get(d, "packed");
        bool on;
        if (p && !ck_null(p) && read_bool(p, "dataset.packed", &on, err)) return -1;
        if (p && !ck_null(p) && on) st->fmt_bits |= TT_PACKED;
    }
    return 0;
}

/* ---------- the step ---------- */

/* get_dtype's strings (torchtune/training/precision.py @05a4cec1ec9a): the recipes
 * keep every weight, gradient and state in it, no autocast, no fp32 copy */
static int read_dtype(ck_state *st, const ck_node *v, const char *key, char *err)
{
    const char *t = ck_text(v);
    if (ck_null(v)) return 0; /* get_dtype(None): fp32, finish's default */
    if (t && !strcmp(t, "fp16"))
        return ck_refuse(key, "fp16: torchtune's recipes raise ValueError (\"fp16 ... not supported\")", err);
    if (t && !strcmp(t, "fp64")) return ck_refuse(key, "fp64 training", err);
    if (!t || (strcmp(t, "bf16") && strcmp(t, "fp32"))) return ck_bad(key, v, "want bf16 or fp32", err);
    st->s.precision = !strcmp(t, "bf16") ? MP_PURE_BF16 : MP_FP32;
    st->given |= MP_PIN_PRECISION;
    ck_set(st, "precision", mp_precision_name(st->s.precision), key,
           st->s.precision == MP_PURE_BF16 ? "every weight, gradient and state in bf16" : NULL);
    return 0;
}

/* optimizer._component_ as memplan's optimizers: torch.optim's, bitsandbytes'
 * (bitsandbytes/optim/__init__.py; PagedAdamW is PagedAdamW32bit, optim_bits
 * 32: bitsandbytes-foundation/bitsandbytes@06029dd6edcc bitsandbytes/optim/adamw.py)
 * and torchao's low-bit AdamW (torchao/prototype/low_bit_optim, as torchtune's
 * memory tutorial names it), as emit/torchtune.c writes them. */
static const struct {
    const char *component;
    mp_optimizer o;
    int64_t block;                 /* torchao's block_size default (pytorch/ao@0d7edae961ee adam.py) */
} optimizers[] = {
    {"torch.optim.AdamW", MP_ADAMW, 0}, {"torch.optim.SGD", MP_SGD, 0},
    {"bitsandbytes.optim.AdamW8bit", MP_ADAMW_8BIT, 0}, {"bitsandbytes.optim.PagedAdamW", MP_PAGED_ADAMW, 0},
    {"bitsandbytes.optim.PagedAdamW32bit", MP_PAGED_ADAMW, 0},
    {"bitsandbytes.optim.PagedAdamW8bit", MP_PAGED_ADAMW_8BIT, 0}, {"bitsandbytes.optim.Lion32bit", MP_LION, 0},
    {"torchao.prototype.low_bit_optim.AdamW8bit", MP_ADAMW_8BIT_TORCHAO, 256},
    {"torchao.prototype.low_bit_optim.AdamW4bit", MP_ADAMW_4BIT_TORCHAO, 128},
};

/* The optimizer's arguments that change nothing memplan counts. */
static const char *const optimizer_neutral[] = {"lr", "betas", "eps", "weight_decay", "maximize", "dampening",
                                                "nesterov", "capturable", "bf16_stochastic_round"};

static int read_optimizer(ck_state *st, const ck_node *v, const char *key, char *err)
{
    const char *comp = v && v->kind == CK_MAP ? ck_text(ck_get(v, "_component_")) : NULL;
    if (!comp) return ck_bad(key, v, "want the optimizer's _component_ and arguments", err);
    size_t i = 0;
    while (i < sizeof optimizers / sizeof *optimizers && strcmp(comp, optimizers[i].component)) i++;
    char q[96], why[192];
    if (i == sizeof optimizers / sizeof *optimizers) {
        snprintf(why, sizeof why, "'%s' keeps state memplan has no row for (CPUOffloadOptimizer steps on the host)",
                 mp_quote(comp, q, sizeof q));
        return ck_refuse("optimizer._component_", why, err);
    }
    bool torch_optim = !strncmp(comp, "torch.optim.", 12), torchao = optimizers[i].block > 0;
    mp_optimizer o = optimizers[i].o;
    /* torch.optim on CUDA tensors: foreach unless told (torch/optim/optimizer.py
     * _default_to_fused_or_foreach: foreach when every parameter is on CUDA) */
    mp_step_impl impl = MP_STEP_FOREACH;
    const char *impl_key = "(default)";
    int64_t block = optimizers[i].block;
    const char *block_key = "(default)";
    for (const ck_node *a = v->child; a; a = a->next) {
        char path[128];
        snprintf(path, sizeof path, "optimizer.%s", a->key);
        bool on;
        double m;
        size_t j = 0;
        while (j < sizeof optimizer_neutral / sizeof *optimizer_neutral && strcmp(a->key, optimizer_neutral[j])) j++;
        if (!strcmp(a->key, "_component_") || j < sizeof optimizer_neutral / sizeof *optimizer_neutral) continue;
        if (torch_optim && (!strcmp(a->key, "fused") || !strcmp(a->key, "foreach"))) {
            if (ck_null(a)) continue;
            if (read_bool(a, path, &on, err)) return -1;
            /* fused wins over foreach; foreach: False is the for-loop (optimizer.py) */
            if (!strcmp(a->key, "fused") && on) impl = MP_STEP_FUSED, impl_key = "optimizer.fused";
            else if (!strcmp(a->key, "foreach") && impl != MP_STEP_FUSED)
                impl = on ? MP_STEP_FOREACH : MP_STEP_FOR_LOOP, impl_key = "optimizer.foreach";
        } else if (o == MP_SGD && !strcmp(a->key, "momentum")) {
            if (ck_real(a, &m) || m < 0) return ck_bad(path, a, "want a momentum from 0", err);
            if (m > 0) o = MP_SGD_MOMENTUM; /* a momentum buffer per parameter */
        } else if (!strcmp(a->key, "amsgrad")) {
            if (read_bool(a, path, &on, err)) return -1;
            /* torch's and torchao's keep max_exp_avg_sq; bitsandbytes' AdamW classes take the
             * argument and never pass it on (bitsandbytes/optim/adamw.py) */
            if (on && (torch_optim || torchao)) return ck_refuse(path, "AMSGrad's third state tensor", err);
        } else if (torchao && !strcmp(a->key, "block_size")) {
            if (ck_int(a, &block) || block < 1 || block > 1 << 20)
                return ck_bad(path, a, "want a block size from 1", err);
            block_key = "optimizer.block_size";
        } else {
            ck_unknown(st, path);
        }
    }
    st->s.optimizer = o;
    st->given |= MP_PIN_OPTIMIZER;
    st->fmt_bits |= TT_OPTIMIZER;
    ck_set(st, "optimizer", mp_optimizer_name(o), "optimizer._component_", NULL);
    if (torch_optim) {
        st->s.step_impl = impl;
        ck_set(st, "optimizer-impl", mp_step_impl_name(impl), impl_key,
               impl_key[0] == '(' ? "torch.optim's default on CUDA: foreach" : NULL);
    }
    if (torchao) {
        char b[24];
        snprintf(b, sizeof b, "%lld", (long long)block);
        st->s.adam8_block = block;
        ck_set(st, "adam8-block", b, block_key, block_key[0] == '(' ? "the class's default" : NULL);
    }
    return 0;
}

/* loss._component_: the chunked loss 0.6's recipes wire (they set the model's
 * num_output_chunks from it: recipes/full_finetune_single_device.py @a6290a5b4075
 * setup), the full one, or what memplan does not model. */
static int read_loss(ck_state *st, const ck_node *v, const char *key, char *err)
{
    const char *comp = v && v->kind == CK_MAP ? ck_text(ck_get(v, "_component_")) : NULL;
    if (!comp) return ck_bad(key, v, "want the loss's _component_", err);
    const char *ckey = "loss._component_";
    char q[96], why[224];
    if (!strcmp(comp, "torchtune.modules.loss.LinearCrossEntropyLoss"))
        return ck_refuse(ckey, "LinearCrossEntropyLoss projects the hidden states chunk by chunk inside the loss "
                               "(torchtune after 0.6): memplan has no row for its memory", err);
    /* the DPO recipes' losses (torchtune/rlhf/loss/__init__.py 8-15: DPOLoss, and
     * RSOLoss, deprecated, with the same inputs: the memory of DPO), read as
     * --method dpo with the recipe's reference (tests/data/engines/torchtune_dpo.csv) */
    bool dpo = !strcmp(comp, "torchtune.rlhf.loss.DPOLoss"), rso = !strcmp(comp, "torchtune.rlhf.loss.RSOLoss");
    if (dpo || rso) {
        for (const ck_node *a = v->child; a; a = a->next) {
            double x;
            const bool known = dpo ? !strcmp(a->key, "beta") || !strcmp(a->key, "label_smoothing")
                                   : !strcmp(a->key, "gamma");
            if (!strcmp(a->key, "_component_")) continue;
            char path[128];
            snprintf(path, sizeof path, "loss.%s", a->key);
            if (!known) ck_unknown(st, path);
            else if (ck_real(a, &x)) return ck_bad(path, a, "want a number", err);
        }
        st->pref_method = MP_METHOD_DPO + 1;
        snprintf(st->pref_key, sizeof st->pref_key, "%s", ckey);
        st->s.ce = MP_CE_FULL;
        st->given |= MP_PIN_CE;
        st->fmt_bits |= TT_LOSS | TT_DPO;
        ck_set(st, "ce", "full", ckey, "rlhf.get_batch_log_probs: the whole logits, upcast to fp32");
        return 0;
    }
    if (!strncmp(comp, "torchtune.rlhf.", 15))
        return ck_refuse(ckey, "an RL loss (PPO: policy, reference, value and reward models, and generation)", err);
    if (strstr(comp, "KLLoss")) return ck_refuse(ckey, "knowledge distillation (a teacher model's logits)", err);
    bool chunked = !strcmp(comp, "torchtune.modules.loss.CEWithChunkedOutputLoss");
    if (!chunked && strcmp(comp, "torch.nn.CrossEntropyLoss")) {
        snprintf(why, sizeof why, "loss '%s' is none memplan has a row for", mp_quote(comp, q, sizeof q));
        return ck_refuse(ckey, why, err);
    }
    for (const ck_node *a = v->child; a; a = a->next) {
        int64_t n;
        if (!strcmp(a->key, "_component_") || !strcmp(a->key, "ignore_index")) continue;
        /* the torchtune profile counts the class's default, 8 chunks (ce_chunked_output_loss.py) */
        if (chunked && !strcmp(a->key, "num_output_chunks")) {
            if (ck_int(a, &n) || n < 1) return ck_bad("loss.num_output_chunks", a, "want a whole number", err);
            if (n != 8) return ck_refuse("loss.num_output_chunks", "chunks other than the 8 memplan's torchtune "
                                                                   "profile counts", err);
        } else {
            char path[128];
            snprintf(path, sizeof path, "loss.%s", a->key);
            ck_unknown(st, path);
        }
    }
    st->s.ce = chunked ? MP_CE_CHUNKED : MP_CE_FULL;
    st->given |= MP_PIN_CE;
    st->fmt_bits |= TT_LOSS;
    ck_set(st, "ce", mp_ce_name(st->s.ce), ckey,
           chunked ? "the model returns 8 chunks of logits, each upcast to fp32 in the loss" : NULL);
    return 0;
}

static int read_checkpointing(ck_state *st, const ck_node *v, const char *key, char *err)
{
    bool on;
    if (ck_null(v)) return 0;
    if (read_bool(v, key, &on, err)) return -1;
    st->s.checkpointing = on ? MP_CKPT_FULL : MP_CKPT_NONE; /* every TransformerSelfAttentionLayer */
    st->given |= MP_PIN_CKPT;
    ck_set(st, "checkpointing", mp_ckpt_name(st->s.checkpointing), key, NULL);
    return 0;
}

/* ac_mode: full_finetune_distributed's, used when enable_activation_checkpointing is False */
static int read_ac_mode(ck_state *st, const ck_node *v, const char *key, char *err)
{
    const char *t = ck_text(v);
    if (ck_null(v) || (t && !strcmp(t, "none"))) return 0;
    if (t && !strcmp(t, "full")) st->fmt_bits |= TT_AC_FULL;
    else if (t && !strcmp(t, "selective")) st->fmt_bits |= TT_AC_SELECTIVE;
    else return ck_bad(key, v, "want full, selective or none", err);
    return 0;
}

static int read_offloading(ck_state *st, const ck_node *v, const char *key, char *err)
{
    bool on;
    if (ck_null(v)) return 0;
    if (read_bool(v, key, &on, err)) return -1;
    st->s.offload_activations = on;
    set_flag(st, "offload-activations", on, key, NULL);
    return 0;
}

static int read_oib(ck_state *st, const ck_node *v, const char *key, char *err)
{
    bool on;
    if (ck_null(v)) return 0;
    if (read_bool(v, key, &on, err)) return -1;
    st->s.optimizer_in_backward = on;
    if (on) st->fmt_bits |= TT_OIB;
    set_flag(st, "optimizer-in-backward", on, key, NULL);
    return 0;
}

static int read_clip(ck_state *st, const ck_node *v, const char *key, char *err)
{
    double x;
    if (ck_null(v)) return 0;
    if (ck_real(v, &x)) return ck_bad(key, v, "want a number or null", err);
    st->fmt_bits |= TT_CLIP;
    return 0;
}

/* compile: a bool, or full_finetune_distributed's map (model, loss,
 * optimizer_step, scale_grads; the model's default True) */
static int read_compile(ck_state *st, const ck_node *v, const char *key, char *err)
{
    if (ck_null(v)) return 0;
    if (v->kind != CK_MAP) return ck_read_compile(st, v, key, err);
    const ck_node *m = ck_get(v, "model");
    bool on = true;
    if (m && read_bool(m, "compile.model", &on, err)) return -1;
    st->s.compile = on;
    set_flag(st, "compile", on, m ? "compile.model" : key, NULL);
    return 0;
}

static int read_device(ck_state *st, const ck_node *v, const char *key, char *err)
{
    const char *t = ck_text(v);
    if (!t) return ck_bad(key, v, "want cuda", err);
    if (strncmp(t, "cuda", 4) || (t[4] && t[4] != ':'))
        return ck_refuse(key, "a device other than a CUDA GPU (memplan models CUDA's allocator)", err);
    return 0;
}

/* enable_expandable_segments: the single-device recipes of mid-2025 set
 * PYTORCH_CUDA_ALLOC_CONF from it (default True; recipes @05516bb3c8c6) */
static int read_expandable(ck_state *st, const ck_node *v, const char *key, char *err)
{
    bool on;
    if (read_bool(v, key, &on, err)) return -1;
    st->s.expandable_segments = on;
    st->fmt_bits |= TT_EXPANDABLE;
    set_flag(st, "expandable-segments", on, key, NULL);
    return 0;
}

/* ---------- FSDP (the distributed recipes: training/_distributed.py shard_model) ---------- */

static int read_cpu_offload(ck_state *st, const ck_node *v, const char *key, char *err)
{
    bool on;
    if (ck_null(v)) return 0;
    if (read_bool(v, key, &on, err)) return -1;
    st->fmt_bits = on ? st->fmt_bits | TT_CPU_OFFLOAD : st->fmt_bits & ~(uint64_t)TT_CPU_OFFLOAD;
    return 0;
}

static int read_reshard(ck_state *st, const ck_node *v, const char *key, char *err)
{
    bool on;
    if (ck_null(v)) return 0;
    if (read_bool(v, key, &on, err)) return -1;
    st->fmt_bits |= TT_RESHARD_KEY;
    st->fmt_bits = on ? st->fmt_bits & ~(uint64_t)TT_NO_RESHARD : st->fmt_bits | TT_NO_RESHARD;
    return 0;
}

static int read_custom_sharded(ck_state *st, const ck_node *v, const char *key, char *err)
{
    if (ck_null(v) || (v->kind == CK_LIST && !v->child)) return 0;
    if (v->kind != CK_LIST) return ck_bad(key, v, "want a list of module names", err);
    st->fmt_bits |= TT_CUSTOM_SHARDED;
    return 0;
}

/* A parallel degree that must stay 1 (or -1, inferred) for memplan's data-parallel FSDP. */
static int read_degree(const ck_node *v, const char *key, bool inferred, int64_t *d, char *err)
{
    *d = 1;
    if (ck_null(v)) return 0;
    if (ck_int(v, d) || (*d < 1 && !(inferred && *d == -1))) return ck_bad(key, v, "want a degree from 1", err);
    return 0;
}

static int read_tp(ck_state *st, const ck_node *v, const char *key, char *err)
{
    int64_t d;
    if (read_degree(v, key, false, &d, err)) return -1;
    return d > 1 ? ck_refuse(key, "tensor parallelism in torchtune's recipes", err) : 0;
}

static int read_cp(ck_state *st, const ck_node *v, const char *key, char *err)
{
    int64_t d;
    if (read_degree(v, key, false, &d, err)) return -1;
    return d > 1 ? ck_refuse(key, "context parallelism (each GPU holds part of every sequence)", err) : 0;
}

static int read_replicate(ck_state *st, const ck_node *v, const char *key, char *err)
{
    int64_t d;
    if (read_degree(v, key, false, &d, err)) return -1;
    if (d > 1) st->fmt_bits |= TT_HSDP;
    return 0;
}

static int read_shard_dim(ck_state *st, const ck_node *v, const char *key, char *err)
{
    int64_t d;
    return read_degree(v, key, true, &d, err);
}

static int refuse_true(const ck_node *v, const char *key, const char *why, char *err)
{
    bool on;
    if (ck_null(v)) return 0;
    if (read_bool(v, key, &on, err)) return -1;
    return on ? ck_refuse(key, why, err) : 0;
}

static int refuse_fp8(ck_state *st, const ck_node *v, const char *key, char *err)
{
    return refuse_true(v, key, "float8 training (torchao's convert_to_float8_training)", err);
}

static int refuse_resize(ck_state *st, const ck_node *v, const char *key, char *err)
{
    return refuse_true(v, key, "embeddings resized to the tokenizer's vocabulary", err);
}

/* ---------- the recipes memplan does not model ---------- */

static int refuse_ppo(ck_state *st, const ck_node *v, const char *key, char *err)
{
    return ck_refuse(key, "PPO (ppo_full_finetune_single_device: policy, reference, value and reward models, "
                          "and generation)", err);
}

/* full_dpo_distributed's reference model (215-223): the DPO loss decides the run */
static int read_ref_checkpointer(ck_state *st, const ck_node *v, const char *key, char *err)
{
    if (ck_null(v)) return 0;
    if (v->kind != CK_MAP) return ck_bad(key, v, "want a checkpointer's map", err);
    st->fmt_bits |= TT_REF_CKPT;
    return 0;
}

static int refuse_kd(ck_state *st, const ck_node *v, const char *key, char *err)
{
    return ck_refuse(key, "knowledge distillation (a teacher model beside the student)", err);
}

static int refuse_qat(ck_state *st, const ck_node *v, const char *key, char *err)
{
    if (ck_null(v)) return 0;
    return ck_refuse(key, "quantization-aware training (fake-quantised weights and activations)", err);
}

static const ck_key keys[] = {
    {"model", read_model}, {"tokenizer", read_tokenizer}, {"dataset", read_dataset}, {"dtype", read_dtype},
    {"batch_size", ck_read_batch}, {"gradient_accumulation_steps", ck_read_accum},
    {"optimizer", read_optimizer}, {"optimizer_in_bwd", read_oib}, {"clip_grad_norm", read_clip},
    {"loss", read_loss}, {"compile", read_compile}, {"device", read_device},
    {"enable_activation_checkpointing", read_checkpointing}, {"ac_mode", read_ac_mode}, {"ac_option", NULL},
    {"enable_activation_offloading", read_offloading}, {"activation_offloading_use_streams", NULL},
    {"enable_expandable_segments", read_expandable},
    {"fsdp_cpu_offload", read_cpu_offload}, {"fsdp_reshard_after_forward", read_reshard},
    {"custom_sharded_layers", read_custom_sharded}, {"tensor_parallel_dim", read_tp}, {"tensor_parallel_plan", NULL},
    {"context_parallel_dim", read_cp}, {"context_parallel_rotate_method", NULL},
    {"data_parallel_replicate_dim", read_replicate}, {"data_parallel_shard_dim", read_shard_dim},
    {"enable_fp8_training", refuse_fp8}, {"fp8_recipe_name", NULL}, {"resize_token_embeddings", refuse_resize},
    /* PPO, DPO with a reference model, distillation, QAT */
    {"policy_model", refuse_ppo}, {"reward_and_value_model", refuse_ppo}, {"ref_policy_checkpointer", refuse_ppo},
    {"value_checkpointer", refuse_ppo}, {"reward_checkpointer", refuse_ppo}, {"ppo_epochs", refuse_ppo},
    {"ppo_batch_size", refuse_ppo}, {"forward_batch_size", refuse_ppo}, {"max_generated_tokens", refuse_ppo},
    {"kl_coeff", refuse_ppo}, {"ref_checkpointer", read_ref_checkpointer}, {"teacher_model", refuse_kd},
    {"teacher_checkpointer", refuse_kd}, {"kd_loss", refuse_kd}, {"kd_ratio", refuse_kd}, {"quantizer", refuse_qat},
    {"fake_quant_after_n_steps", refuse_qat},
    /* known, and nothing memplan counts: checkpoints, logs, schedules, validation
     * (under no_grad, at most the training batch), the host's RAM */
    {"output_dir", NULL}, {"checkpointer", NULL}, {"resume_from_checkpoint", NULL},
    {"enable_async_checkpointing", NULL}, {"save_adapter_weights_only", NULL}, {"save_every_n_steps", NULL},
    {"seed", NULL}, {"shuffle", NULL}, {"epochs", NULL}, {"max_steps_per_epoch", NULL}, {"collate_fn", NULL},
    {"metric_logger", NULL}, {"log_every_n_steps", NULL}, {"log_peak_memory_stats", NULL}, {"log_level", NULL},
    {"profiler", NULL}, {"lr_scheduler", NULL}, {"cudnn_deterministic_mode", NULL}, {"low_cpu_ram", NULL},
    {"dataset_val", NULL}, {"batch_size_val", NULL}, {"run_val_every_n_steps", NULL},
    {NULL, NULL},
};

/* A DPO config (loss._component_ DPOLoss or RSOLoss): lora_dpo_single_device,
 * lora_dpo_distributed or full_dpo_distributed, as the builder and the
 * processes say (tests/data/engines/torchtune_dpo.csv). */
static int dpo_finish(ck_state *st, bool distributed, char *err)
{
    mp_settings *s = &st->s;
    const uint64_t own = st->fmt_bits;
    if (own & TT_PACKED)
        return ck_refuse("dataset.packed", "packed preference pairs (torchtune's PreferenceDataset does not pack)", err);
    if (!st->lora && !distributed)
        return ck_refuse("loss._component_", "full DPO on one process: full_dpo_distributed runs on FSDP (give --gpus N, "
                                             "tune run --nproc_per_node N; or a lora_ builder)", err);
    if (!st->lora && !(own & TT_REF_CKPT))
        return snprintf(err, MP_ERR_LEN, "%s has no ref_checkpointer: full_dpo_distributed loads the reference model "
                        "from it", st->file ? st->file : "the config"), -1;
    if (!st->lora && (own & TT_CPU_OFFLOAD))
        return ck_refuse("fsdp_cpu_offload", "the reference model offloaded with the policy (full_dpo_distributed)", err);
    if (distributed && s->compile) {
        s->compile = false;
        ck_set(st, "compile", "off", "compile", "the distributed DPO recipes do not compile the model "
                                                "(full_dpo_distributed compiles the loss only)");
    }
    if (ck_preference(st, "torchtune's DPO recipe (loss._component_)",
                      st->lora ? "the adapter disabled (lora_dpo_*: disable_adapter under no_grad)"
                               : "a second model (full_dpo_distributed: ref_checkpointer)", err))
        return -1;
    if (st->lora && (own & TT_REF_CKPT))
        ck_set_how(st, "reference", "ref_checkpointer ignored: the LoRA DPO recipes never read it");
    return 0;
}

/* The recipe's defaults, what the keys together say, and the processes. */
static int finish(ck_state *st, char *err)
{
    mp_settings *s = &st->s;
    const uint64_t own = st->fmt_bits;
    const char *file = st->file ? st->file : "the config";
    if (!(own & TT_MODEL)) return snprintf(err, MP_ERR_LEN, "%s has no model: torchtune's recipes build cfg.model", file), -1;
    if (!(own & TT_OPTIMIZER))
        return snprintf(err, MP_ERR_LEN, "%s has no optimizer: torchtune's recipes build cfg.optimizer", file), -1;
    if (!(own & TT_LOSS)) return snprintf(err, MP_ERR_LEN, "%s has no loss: torchtune's recipes build cfg.loss", file), -1;
    if (!(st->given & MP_PIN_BATCH) || !(st->given & MP_PIN_ACCUM))
        return snprintf(err, MP_ERR_LEN, "%s has no %s: torchtune's recipes read it", file,
                        st->given & MP_PIN_BATCH ? "gradient_accumulation_steps" : "batch_size"), -1;
    if (!(st->given & MP_PIN_PRECISION)) {
        s->precision = MP_FP32, st->given |= MP_PIN_PRECISION;
        ck_set(st, "precision", "fp32", "(default)", "no dtype: get_dtype(None) is fp32");
    }
    if (s->precision == MP_PURE_BF16 && st->gpu && !st->gpu->bf16)
        return snprintf(err, MP_ERR_LEN, "'dtype' is bf16, which %s lacks: torchtune's get_dtype raises", st->gpu->name),
               -1;
    char t[32];
    if (!(st->given & MP_PIN_SEQ)) {
        if (own & TT_PACKED)
            return snprintf(err, MP_ERR_LEN, "'dataset.packed' is True without tokenizer.max_seq_len: torchtune's "
                            "PackedDataset raises"), -1;
        snprintf(t, sizeof t, "%lld", (long long)s->seq);
        ck_set(st, "seq", t, own & TT_SEQ_NULL ? "tokenizer.max_seq_len" : "(default)",
               "no max_seq_len: samples are not cut and a batch pads to its longest; memplan's default length");
    } else {
        snprintf(t, sizeof t, "%lld", (long long)s->seq);
        ck_set(st, "seq", t, "tokenizer.max_seq_len", own & TT_PACKED ? "dataset.packed: every sequence that long"
                                                                      : "samples cut to it: the longest batch");
    }
    /* the recipes' defaults (cfg.get(..., False)) */
    bool distributed = s->gpus > 1;
    if ((own & TT_DPO) && dpo_finish(st, distributed, err)) return -1;
    if ((own & TT_REF_CKPT) && !(own & TT_DPO))
        return ck_refuse("ref_checkpointer", "a reference model without torchtune's DPO loss (loss._component_)", err);
    if (!(st->given & MP_PIN_CKPT) || s->checkpointing == MP_CKPT_NONE) {
        /* ac_mode only in full_finetune_distributed, and only without enable_activation_checkpointing */
        bool ac = distributed && !st->lora;
        if (ac && (own & TT_AC_SELECTIVE))
            return ck_refuse("ac_mode", "selective checkpointing of every ac_option-th layer", err);
        if (ac && (own & TT_AC_FULL)) s->checkpointing = MP_CKPT_FULL, ck_set(st, "checkpointing", "full", "ac_mode", NULL);
        else if (!(st->given & MP_PIN_CKPT)) ck_set(st, "checkpointing", "none", "(default)", "the recipes' default");
        st->given |= MP_PIN_CKPT;
    }
    if (s->offload_activations && s->checkpointing != MP_CKPT_FULL)
        return snprintf(err, MP_ERR_LEN, "'enable_activation_offloading' is True without activation checkpointing: "
                        "torchtune's recipes raise RuntimeError"), -1;
    /* the LoRA recipes never read optimizer_in_bwd; the full ones step each
     * parameter in its gradient hook, which cannot accumulate or clip */
    if (st->lora && (own & TT_OIB)) {
        s->optimizer_in_backward = false;
        ck_set(st, "optimizer-in-backward", "off", "optimizer_in_bwd", "the LoRA recipes do not read it");
    } else if (s->optimizer_in_backward) {
        if (s->accum > 1 || (own & TT_CLIP))
            return snprintf(err, MP_ERR_LEN, "'optimizer_in_bwd' is True with %s: torchtune's recipes raise "
                            "RuntimeError", s->accum > 1 ? "gradient_accumulation_steps > 1" : "clip_grad_norm set"), -1;
        if (distributed)
            return ck_refuse("optimizer_in_bwd", "the step in the backward over FSDP's shards", err);
    }
    if (!(own & TT_EXPANDABLE))
        ck_set(st, "expandable-segments", "off", "(default)",
               "torchtune 0.6 keeps PyTorch's; since 9d91fe39 (June 2025) it sets expandable_segments:True at import");
    /* SDPA (torchtune/modules/attention_utils.py _sdpa_or_flex_attention), but Gemma 2's
     * attention multiplies q by k and soft-caps the scores itself, never through SDPA
     * (torchtune/models/gemma2/_attention.py Gemma2Attention, v0.6.1 and @bd2a0fc7c314) */
    if (!(st->given & MP_PIN_ATTENTION)) {
        bool gemma2 = !strncmp(st->model_ref, "gemma-2-", 8) || strstr(st->model_ref, "torchtune.models.gemma2.");
        s->attention = gemma2 ? MP_ATTN_EAGER : MP_ATTN_FLASH;
        st->given |= MP_PIN_ATTENTION;
        ck_set(st, "attention", mp_attention_name(s->attention), "model._component_",
               gemma2 ? "Gemma2Attention computes and soft-caps the scores itself (torchtune/models/gemma2/_attention.py)"
                      : "torchtune's attention calls SDPA");
    }
    /* FSDP2 over the processes: reshard_after_forward True is ZeRO-3, False
     * ZeRO-2; CPUOffloadPolicy moves parameters, gradients and optimizer state */
    if (!(st->given & MP_PIN_ZERO)) {
        if (distributed) {
            if (own & TT_CUSTOM_SHARDED)
                return ck_refuse("custom_sharded_layers", "the embeddings or the head sharded as units of their own "
                                                          "(memplan keeps them in FSDP's root unit)", err);
            if (own & TT_HSDP) return ck_refuse("data_parallel_replicate_dim", "HSDP (shards within groups)", err);
            s->zero = own & TT_NO_RESHARD ? 2 : 3;
            ck_set(st, "zero", own & TT_NO_RESHARD ? "2" : "3", own & TT_RESHARD_KEY ? "fsdp_reshard_after_forward"
                                                                                     : "(default)",
                   "FSDP2 over the processes: resharding after the forward is ZeRO-3");
        } else {
            s->zero = 0;
            ck_set(st, "zero", "0", "(default)", "one process: a single-device recipe (tune run --nproc_per_node N: "
                                                 "give --gpus N)");
        }
        st->given |= MP_PIN_ZERO;
    }
    st->fsdp = distributed;
    if (distributed && (own & TT_CPU_OFFLOAD) && !(st->given & MP_PIN_OFFLOAD)) {
        if (s->zero != 3)
            return ck_refuse("fsdp_cpu_offload", "parameters offloaded without resharding after the forward", err);
        s->offload = MP_OFFLOAD_PARAMS, st->given |= MP_PIN_OFFLOAD;
        ck_set(st, "offload", "params", "fsdp_cpu_offload", "parameters, gradients and optimizer state on the host");
    }
    return 0;
}

/* A change in torchtune's words; -1 where its recipes cannot say it. */
static int spell(const char *setting, const mp_settings *s, char *buf, size_t len)
{
    if (!strcmp(setting, "batch")) {
        if (s->optimizer_in_backward && s->accum > 1) return -1;
        snprintf(buf, len, "batch_size: %lld, gradient_accumulation_steps: %lld", (long long)s->batch,
                 (long long)s->accum);
    } else if (!strcmp(setting, "checkpointing")) {
        if (s->checkpointing != MP_CKPT_FULL) return -1;
        snprintf(buf, len, "enable_activation_checkpointing: True");
    } else if (!strcmp(setting, "offload-activations")) {
        snprintf(buf, len, "enable_activation_checkpointing: True, enable_activation_offloading: True");
    } else if (!strcmp(setting, "optimizer-in-backward")) {
        if (s->lora_rank || s->accum > 1 || s->gpus > 1) return -1;
        snprintf(buf, len, "optimizer_in_bwd: True, clip_grad_norm: null");
    } else if (!strcmp(setting, "optimizer")) {
        /* bitsandbytes in the single-device recipes only (torchtune's memory tutorial) */
        if (s->optimizer != MP_ADAMW_8BIT || s->gpus > 1) return -1;
        snprintf(buf, len, "optimizer._component_: bitsandbytes.optim.AdamW8bit");
    } else if (!strcmp(setting, "seq")) {
        snprintf(buf, len, "tokenizer.max_seq_len: %lld", (long long)s->seq);
    } else if (!strcmp(setting, "lora")) {
        /* the recipes keep adapters in the model's dtype: no other precision */
        if (s->precision != MP_PURE_BF16 && s->precision != MP_FP32) return -1;
        size_t o = (size_t)snprintf(buf, len, "model._component_: its lora_ builder, lora_rank: %lld, "
                                              "lora_attn_modules: [", (long long)s->lora_rank);
        for (size_t i = 0, n = 0; i < sizeof attn_modules / sizeof *attn_modules && o < len; i++)
            if (s->lora_targets & attn_modules[i].bit)
                o += (size_t)snprintf(buf + o, len - o, "%s'%s'", n++ ? ", " : "", attn_modules[i].name);
        if (o < len)
            snprintf(buf + o, len - o, "], apply_lora_to_mlp: %s", s->lora_targets & MP_LORA_MLP ? "True" : "False");
    } else if (!strcmp(setting, "quant")) {
        if (s->quant != MP_QUANT_NF4_DQ) return -1;
        snprintf(buf, len, "model.quantize_base: True");
    } else {
        return -1;
    }
    return 0;
}

const ck_format ck_format_torchtune = {
    .name = "torchtune", .framework = "torchtune", .detect = detect, .keys = keys, .finish = finish, .spell = spell,
};

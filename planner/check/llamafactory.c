/* llamafactory.c — a LLaMA-Factory training YAML (`llamafactory-cli train FILE`):
 * its keys as tests/data/engines/llamafactory_config_keys.csv tabulates them
 * from hiyouga/LLaMA-Factory@ff6d4d12eeb0 (defaults unchanged since
 * @000526908ae9, the commit its Llama-3 examples were copied at; the lines
 * cited here are @000526908ae9's unless said). Its TrainingArguments extend
 * transformers' Seq2SeqTrainingArguments (hparams/training_args.py), so the
 * Trainer's keys are its keys too (trainer_config_keys.csv).
 *
 * What LLaMA-Factory decides itself, and memplan follows:
 *   stage sft (finetuning_args.py:460), finetuning_type lora (:464), lora_rank 8
 *   (:77), lora_target "all": every nn.Linear leaf but lm_head
 *   (model/model_utils/misc.py:28-52), double_quantization on (model_args.py:293);
 *   cutoff_len 2048 (data_args.py:46), one less when packing is asked
 *   (data_args.py:179-183), packing on only for stage pt (hparams/parser.py:462);
 *   gradient checkpointing on unless disable_gradient_checkpointing
 *   (model/model_utils/checkpointing.py:164-178);
 *   the model loads in its checkpoint's dtype (model/loader.py:160 torch_dtype
 *   "auto"), then the trainable parameters are upcast to fp32 unless pure_bf16,
 *   BAdam, or ZeRO-3 without quantisation (model/adapter.py:341-353).
 * The stack is LLaMA-Factory's own profile (profiles/frameworks.csv
 * "llamafactory"); under DeepSpeed, DeepSpeed's ("deepspeed"), as memplan
 * estimates every run its engine holds. */
#include "check/reader.h"

#include <stdio.h>
#include <string.h>

#include "common/errors.h"
#include "model/family.h"
#include "settings/vocabulary.h"

/* What the keys said that only finish() can resolve (st->fmt_bits). */
enum {
    LF_PT = 1 << 0,             /* stage: pt */
    LF_FULL = 1 << 1,           /* finetuning_type: full */
    LF_TYPE_GIVEN = 1 << 2,     /* finetuning_type written */
    LF_RANK_GIVEN = 1 << 3,     /* lora_rank written */
    LF_DROPOUT_GIVEN = 1 << 4,  /* lora_dropout written */
    LF_PACKING_GIVEN = 1 << 5,  /* packing written (true or false) */
    LF_PACKING_ON = 1 << 6,     /* packing: true */
    LF_DQ_GIVEN = 1 << 7,       /* double_quantization written */
    LF_QUANT_OTHER = 1 << 8,    /* quantization_method other than bnb */
    LF_BF16 = 1 << 9,           /* bf16: true */
    LF_FP16 = 1 << 10,          /* fp16: true */
    LF_GC_GIVEN = 1 << 11,      /* disable_gradient_checkpointing written */
    LF_GC_OFF = 1 << 12,        /* disable_gradient_checkpointing: true */
    LF_GC_TRAINER = 1 << 13,    /* the Trainer's gradient_checkpointing: true */
    LF_RAY = 1 << 14,           /* ray_num_workers: Ray starts the workers, not torchrun */
    LF_SEQ_GIVEN = 1 << 15,     /* cutoff_len written */
};

/* LLaMA-Factory's templates with a multimodal plugin (mm_plugin=get_mm_plugin(...)
 * other than "base"), data/template.py @000526908ae9. */
static const char *const multimodal_templates[] = {
    "dots_ocr", "ernie_vl", "gemma3", "gemma3n", "glm4_5v", "glm4v", "granite3_vision", "intern_s1", "intern_vl",
    "keye_vl", "kimi_vl", "llama4", "llava", "llava_next", "llava_next_llama3", "llava_next_mistral",
    "llava_next_qwen", "llava_next_video", "llava_next_video_mistral", "llava_next_video_yi", "llava_next_yi",
    "mimo_vl", "minicpm_o", "minicpm_v", "ministral3", "mistral_small", "mllama", "paligemma", "paligemma_chat",
    "pixtral", "qwen2_audio", "qwen2_omni", "qwen2_vl", "qwen3_omni", "qwen3_omni_nothink", "qwen3_vl",
    "qwen3_vl_nothink", "video_llava", "yi_vl",
};

/* Keys that, set, change memory in ways memplan does not model: why, with the
 * field's line (model_args.py, finetuning_args.py, data_args.py @000526908ae9;
 * the last six @ff6d4d12eeb0). */
static const struct {
    const char *key, *why;
} unmodelled[] = {
    {"use_galore", "GaLore's projected optimizer state (finetuning_args.py:266)"},
    {"use_apollo", "APOLLO's projected optimizer state (finetuning_args.py:305)"},
    {"use_badam", "BAdam trains one block at a time in 16 bits (finetuning_args.py:356)"},
    {"use_adam_mini", "Adam-mini keeps one second moment per block (finetuning_args.py:472)"},
    {"use_muon", "the Muon optimizer's state (finetuning_args.py:485)"},
    {"use_llama_pro", "LLaMA Pro trains only the expanded blocks (finetuning_args.py:468)"},
    {"use_dora", "DoRA's magnitude vectors and their activations (finetuning_args.py:103)"},
    {"pissa_init", "PiSSA's SVD of every adapted weight at the start (finetuning_args.py:107)"},
    {"use_dft_loss", "the DFT loss (finetuning_args.py:489)"},
    {"use_unsloth", "unsloth's own kernels, loading and checkpointing (model_args.py:128)"},
    {"use_unsloth_gc", "unsloth's checkpointing, which offloads the saved hidden states (model_args.py:132)"},
    {"enable_liger_kernel", "Liger's fused kernels (its loss never holds the logits; model_args.py:136)"},
    {"use_liger_kernel", "Liger's fused kernels (its loss never holds the logits)"},
    {"shift_attn", "LongLoRA's shifted short attention (model_args.py:120)"},
    {"upcast_layernorm", "fp32 norm weights, and the fp32 outputs they make (model_args.py:152)"},
    {"upcast_lmhead_output", "an fp32 copy of the head's output (model_args.py:156)"},
    {"resize_vocab", "an embedding resized to the tokenizer (model_args.py:64)"},
    {"use_v1_kernels", "LLaMA-Factory's v1 kernels (model_args.py:176)"},
    {"use_kt", "KTransformers' CPU experts (model_args.py:485)"},
    {"fp8", "fp8 training (torchao, Transformer Engine, MS-AMP; model_args.py:301)"},
    {"fp8_enable_fsdp_float8_all_gather", "fp8 training, which this turns on (model_args.py:314; parser.py:149-151)"},
    {"neat_packing", "packing with a block-diagonal 4D attention mask (data_args.py:110)"},
    {"use_megatron_bridge", "Megatron's parallel training (finetuning_args.py, @ff6d4d12eeb0)"},
    {"use_hyper_parallel", "hyper-parallel training (finetuning_args.py, @ff6d4d12eeb0)"},
    {"use_asft_loss", "the ASFT loss (finetuning_args.py, @ff6d4d12eeb0)"},
    {"use_eaft_loss", "the EAFT loss (finetuning_args.py, @ff6d4d12eeb0)"},
    /* values rather than flags: set at all, they change memory */
    {"adapter_name_or_path", "an existing adapter trained on: its own rank and modules (model/adapter.py:159-212)"},
    {"additional_target", "modules trained in full beside LoRA (finetuning_args.py:59)"},
    {"mixture_of_depths", "mixture-of-depths layers (model_args.py:124)"},
    {"add_tokens", "tokens added to the vocabulary, an embedding resized (model_args.py:72)"},
    {"add_special_tokens", "tokens added to the vocabulary, an embedding resized (model_args.py:78)"},
    {"new_special_tokens_config", "tokens added to the vocabulary, an embedding resized (model_args.py:82)"},
    {"hyper_parallel_cp_size", "context parallelism (finetuning_args.py, @ff6d4d12eeb0)"},
};

static const char *unmodelled_why(const char *key)
{
    for (size_t i = 0; i < sizeof unmodelled / sizeof *unmodelled; i++)
        if (!strcmp(unmodelled[i].key, key)) return unmodelled[i].why;
    return "a technique memplan does not model";
}

/* A flag that, true, is refused. */
static int refuse_if_on(ck_state *st, const ck_node *v, const char *key, char *err)
{
    (void)st;
    bool on;
    if (ck_null(v)) return 0;
    if (ck_bool(v, &on)) return ck_bad(key, v, "want true or false", err);
    return on ? ck_refuse(key, unmodelled_why(key), err) : 0;
}

/* A value that, given at all (not null, not an empty list), is refused. */
static int refuse_if_set(ck_state *st, const ck_node *v, const char *key, char *err)
{
    (void)st;
    if (ck_null(v) || (v->kind == CK_LIST && !v->child)) return 0;
    return ck_refuse(key, unmodelled_why(key), err);
}

/* A count that above 1 is refused (context parallelism over several GPUs). */
static int refuse_above_one(ck_state *st, const ck_node *v, const char *key, char *err)
{
    (void)st;
    int64_t n;
    if (ck_null(v)) return 0;
    if (ck_int(v, &n) || n < 1) return ck_bad(key, v, "want a whole number from 1", err);
    return n > 1 ? ck_refuse(key, unmodelled_why(key), err) : 0;
}

static int read_flag(const ck_node *v, const char *key, bool *on, char *err)
{
    if (ck_bool(v, on)) return ck_bad(key, v, "want true or false", err);
    return 0;
}

/* the bit set or cleared; 0, for a reader to return */
static int set_bit(ck_state *st, uint64_t bit, bool on)
{
    if (on) st->fmt_bits |= bit;
    else st->fmt_bits &= ~bit;
    return 0;
}

static int detect(const ck_node *root)
{
    /* keys no other format has: LLaMA-Factory's own FinetuningArguments and DataArguments */
    static const char *const own[] = {"stage", "finetuning_type", "cutoff_len", "lora_target", "template",
                                      "quantization_bit", "flash_attn", "disable_gradient_checkpointing",
                                      "pure_bf16", "lora_rank"};
    int n = 0;
    for (size_t i = 0; i < sizeof own / sizeof *own; i++) n += ck_get(root, own[i]) != NULL;
    return n ? 8 + n : 0;
}

/* ---------- the method ---------- */

/* finetuning_args.py:460: pt and sft train the model on text; the others hold more */
static int read_stage(ck_state *st, const ck_node *v, const char *key, char *err)
{
    static const struct {
        const char *stage, *why;
    } refused[] = {
        {"rm", "stage 'rm' trains a reward model with a value head on chosen and rejected pairs"},
        {"ppo", "stage 'ppo' holds the policy, its value head, a reward model and a reference, and generates"},
        {"kto", "stage 'kto' runs pairs against a reference model"},
    };
    const char *t = ck_text(v);
    if (t && !strcmp(t, "sft")) return set_bit(st, LF_PT, false);
    if (t && !strcmp(t, "pt")) return set_bit(st, LF_PT, true);
    if (t && !strcmp(t, "dpo")) { /* the method: pref_loss (finish) */
        st->pref_method = MP_METHOD_DPO + 1;
        snprintf(st->pref_key, sizeof st->pref_key, "%s", key);
        return set_bit(st, LF_PT, false);
    }
    for (size_t i = 0; t && i < sizeof refused / sizeof *refused; i++)
        if (!strcmp(t, refused[i].stage)) return ck_refuse(key, refused[i].why, err);
    return ck_bad(key, v, "want pt, sft, rm, ppo, dpo or kto", err);
}

/* pref_loss (finetuning_args.py:183 @ff6d4d12, default sigmoid): which loss
 * CustomDPOTrainer computes (train/dpo/trainer.py:187-217 @ff6d4d12): sigmoid
 * and ipo against a reference, orpo and simpo without one (use_ref_model,
 * finetuning_args.py:593); hinge and kto_pair have no row here */
static int read_pref_loss(ck_state *st, const ck_node *v, const char *key, char *err)
{
    static const struct { const char *loss; mp_method m; } rows[] = {
        {"sigmoid", MP_METHOD_DPO}, {"ipo", MP_METHOD_IPO}, {"orpo", MP_METHOD_ORPO}, {"simpo", MP_METHOD_SIMPO},
    };
    const char *t = ck_text(v);
    if (ck_null(v)) return 0;
    if (!t || v->kind != CK_SCALAR) return ck_bad(key, v, "want sigmoid, hinge, ipo, kto_pair, orpo or simpo", err);
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++)
        if (!strcmp(t, rows[i].loss)) {
            st->pref_bits = rows[i].m + 1; /* applied with stage dpo (finish) */
            return 0;
        }
    if (!strcmp(t, "hinge") || !strcmp(t, "kto_pair")) {
        char why[120];
        snprintf(why, sizeof why, "pref_loss %s, a loss memplan has no row for (it models sigmoid, ipo, orpo, simpo)",
                 t);
        return ck_refuse(key, why, err);
    }
    return ck_bad(key, v, "want sigmoid, hinge, ipo, kto_pair, orpo or simpo", err);
}

/* ref_model (finetuning_args.py:223): another model loaded as the reference
 * (train/trainer_utils.py:123-135 @ff6d4d12), not the one trained */
static int read_ref_model(ck_state *st, const ck_node *v, const char *key, char *err)
{
    if (ck_null(v)) return 0;
    if (!ck_text(v) || v->kind != CK_SCALAR) return ck_bad(key, v, "want a model's path or Hub id", err);
    snprintf(st->pref_ref_key, sizeof st->pref_ref_key, "%s", key);
    st->pref_ref = MP_REF_MODEL; /* resolved in finish: only a method with a reference loads it */
    return 0;
}

/* finetuning_args.py:464; freeze trains some layers only (model/adapter.py:59-140), OFT its own adapters */
static int read_finetuning_type(ck_state *st, const ck_node *v, const char *key, char *err)
{
    const char *t = ck_text(v);
    st->fmt_bits |= LF_TYPE_GIVEN;
    if (t && !strcmp(t, "lora")) return set_bit(st, LF_FULL, false);
    if (t && !strcmp(t, "full")) return set_bit(st, LF_FULL, true);
    if (t && !strcmp(t, "freeze"))
        return ck_refuse(key, "freeze tuning trains only some layers' weights (model/adapter.py:59-140), which "
                              "memplan does not count apart", err);
    if (t && !strcmp(t, "oft")) return ck_refuse(key, "OFT's orthogonal adapters", err);
    return ck_bad(key, v, "want lora, full, freeze or oft", err);
}

static int read_lora_rank(ck_state *st, const ck_node *v, const char *key, char *err)
{
    int64_t r;
    if (ck_int(v, &r) || r < 1 || r > 1 << 16) return ck_bad(key, v, "want a rank from 1 to 65536", err);
    st->s.lora_rank = r; /* applied with finetuning_type lora (finish) */
    st->fmt_bits |= LF_RANK_GIVEN;
    return 0;
}

static int read_lora_dropout(ck_state *st, const ck_node *v, const char *key, char *err)
{
    double d;
    if (ck_real(v, &d) || d < 0 || d >= 1) return ck_bad(key, v, "want a probability from 0 to below 1", err);
    st->s.lora_dropout = (float)d;
    st->fmt_bits |= LF_DROPOUT_GIVEN;
    return 0;
}

/* finetuning_args.py:81 and :535: a comma string (or a YAML list), "all" alone the default */
static int read_lora_target(ck_state *st, const ck_node *v, const char *key, char *err)
{
    if (ck_read_lora_targets(st, v, key, err)) return -1;
    /* split_arg strips each name */
    char clean[sizeof st->lora_modules];
    size_t o = 0;
    for (const char *p = st->lora_modules; *p && o + 1 < sizeof clean; p++)
        if (*p != ' ' && *p != '\t') clean[o++] = *p;
    clean[o] = 0;
    memcpy(st->lora_modules, clean, o + 1);
    return 0;
}

static int read_pure_bf16(ck_state *st, const ck_node *v, const char *key, char *err)
{
    bool on;
    if (read_flag(v, key, &on, err)) return -1;
    st->pure16 = on;
    return 0;
}

/* ---------- the model ---------- */

static int read_template(ck_state *st, const ck_node *v, const char *key, char *err)
{
    (void)st;
    const char *t = ck_text(v);
    if (ck_null(v)) return 0;
    if (!t) return ck_bad(key, v, "want a template's name", err);
    for (size_t i = 0; i < sizeof multimodal_templates / sizeof *multimodal_templates; i++)
        if (!strcmp(t, multimodal_templates[i])) {
            char why[200], q[48];
            snprintf(why, sizeof why, "template '%s' is a multimodal one (data/template.py: its mm_plugin): the "
                     "vision or audio tower and the media tokens", mp_quote(t, q, sizeof q));
            return ck_refuse(key, why, err);
        }
    return 0;
}

/* model_args.py:116, extras/constants.py:112-117 AttentionFunction */
static int read_flash_attn(ck_state *st, const ck_node *v, const char *key, char *err)
{
    const char *t = ck_text(v);
    if (ck_null(v) || (t && !strcmp(t, "auto"))) return 0; /* finish: transformers' default */
    if (t && !strcmp(t, "disabled")) st->s.attention = MP_ATTN_EAGER;
    else if (t && (!strcmp(t, "sdpa") || !strcmp(t, "fa2") || !strcmp(t, "fa3"))) st->s.attention = MP_ATTN_FLASH;
    else return ck_bad(key, v, "want auto, disabled, sdpa, fa2 or fa3", err);
    st->given |= MP_PIN_ATTENTION;
    ck_set(st, "attention", mp_attention_name(st->s.attention), key, NULL);
    return 0;
}

static int read_disable_gc(ck_state *st, const ck_node *v, const char *key, char *err)
{
    bool on;
    if (read_flag(v, key, &on, err)) return -1;
    st->fmt_bits |= LF_GC_GIVEN;
    set_bit(st, LF_GC_OFF, on);
    return 0;
}

/* the Trainer's own flag: true, it checkpoints whatever LLaMA-Factory did */
static int read_trainer_gc(ck_state *st, const ck_node *v, const char *key, char *err)
{
    bool on;
    if (read_flag(v, key, &on, err)) return -1;
    set_bit(st, LF_GC_TRAINER, on);
    return 0;
}

/* ---------- quantisation (model_args.py:281-297; model_utils/quantization.py:166-194) ---------- */

static int read_quantization_bit(ck_state *st, const ck_node *v, const char *key, char *err)
{
    int64_t b;
    if (ck_null(v)) return st->quant_bits = 0, 0;
    if (ck_int(v, &b) || b < 1 || b > 8) return ck_bad(key, v, "want 4 or 8 (bitsandbytes)", err);
    st->quant_bits = (int)b;
    return 0;
}

static int read_quantization_method(ck_state *st, const ck_node *v, const char *key, char *err)
{
    static const char *const others[] = {"hqq", "eetq", "gptq", "awq", "aqlm", "quanto", "mxfp4", "fp8"};
    const char *t = ck_text(v);
    if (t && !strcmp(t, "bnb")) return set_bit(st, LF_QUANT_OTHER, false);
    for (size_t i = 0; t && i < sizeof others / sizeof *others; i++)
        if (!strcmp(t, others[i])) return set_bit(st, LF_QUANT_OTHER, true);
    return ck_bad(key, v, "want bnb, hqq or eetq", err);
}

/* FP4 stores the same 4 bits and scales as NF4 */
static int read_quantization_type(ck_state *st, const ck_node *v, const char *key, char *err)
{
    (void)st;
    const char *t = ck_text(v);
    if (!t || (strcmp(t, "nf4") && strcmp(t, "fp4"))) return ck_bad(key, v, "want nf4 or fp4", err);
    return 0;
}

static int read_double_quantization(ck_state *st, const ck_node *v, const char *key, char *err)
{
    bool on;
    if (read_flag(v, key, &on, err)) return -1;
    st->double_quant = on;
    st->fmt_bits |= LF_DQ_GIVEN;
    return 0;
}

/* parser.py:321-322: a device map is for inference; training with one raises */
static int read_quantization_device_map(ck_state *st, const ck_node *v, const char *key, char *err)
{
    (void)st;
    if (ck_null(v)) return 0;
    return ck_bad(key, v, "LLaMA-Factory refuses a device map for training (hparams/parser.py:321-322)", err);
}

/* ---------- the data ---------- */

static int read_cutoff_len(ck_state *st, const ck_node *v, const char *key, char *err)
{
    int64_t n;
    if (ck_int(v, &n) || n < 1 || n > 1 << 24) return ck_bad(key, v, "want a length from 1 to 16777216", err);
    st->s.seq = n; /* the rows the step sees: finish, with the stage and packing */
    st->fmt_bits |= LF_SEQ_GIVEN;
    return 0;
}

static int read_packing(ck_state *st, const ck_node *v, const char *key, char *err)
{
    bool on;
    if (ck_null(v)) return set_bit(st, LF_PACKING_GIVEN, false);
    if (read_flag(v, key, &on, err)) return -1;
    st->fmt_bits |= LF_PACKING_GIVEN;
    set_bit(st, LF_PACKING_ON, on);
    return 0;
}

/* ---------- the step (the Trainer's keys) ---------- */

static int read_bf16(ck_state *st, const ck_node *v, const char *key, char *err)
{
    bool on;
    if (ck_null(v)) return 0;
    if (read_flag(v, key, &on, err)) return -1;
    set_bit(st, LF_BF16, on);
    return 0;
}

static int read_fp16(ck_state *st, const ck_node *v, const char *key, char *err)
{
    bool on;
    if (ck_null(v)) return 0;
    if (read_flag(v, key, &on, err)) return -1;
    set_bit(st, LF_FP16, on);
    return 0;
}

/* TrainingArguments fsdp: "full_shard auto_wrap", "shard_grad_op", "offload" (a string or a list) */
static int read_fsdp(ck_state *st, const ck_node *v, const char *key, char *err)
{
    const char *t = ck_text(v);
    if (ck_null(v) || (t && !*t) || (v->kind == CK_LIST && !v->child)) return 0;
    char words[256] = "";
    size_t o = 0;
    if (v->kind == CK_LIST) {
        for (const ck_node *i = v->child; i; i = i->next) {
            if (!ck_text(i)) return ck_bad(key, v, "want FSDP's options", err);
            o += (size_t)snprintf(words + o, o < sizeof words ? sizeof words - o : 0, " %s", ck_text(i));
        }
        if (o >= sizeof words) return ck_bad(key, v, "want fewer FSDP options", err);
    } else if (t) {
        snprintf(words, sizeof words, " %s", t);
    } else {
        return ck_bad(key, v, "want FSDP's options", err);
    }
    st->fsdp = true;
    st->s.zero = strstr(words, "shard_grad_op") ? 2 : strstr(words, "no_shard") ? 0 : 3;
    if (strstr(words, "offload")) {
        st->s.offload = MP_OFFLOAD_PARAMS, st->given |= MP_PIN_OFFLOAD;
        st->offloaded |= 1u << MP_OFFLOAD_PARAMS | 1u << MP_OFFLOAD_OPTIMIZER; /* FSDP's CPUOffload moves both */
        ck_set(st, "offload", "params", key, "FSDP's CPU offload: parameters, gradients and optimizer state");
    }
    char z[8];
    snprintf(z, sizeof z, "%d", st->s.zero);
    st->given |= MP_PIN_ZERO;
    ck_set(st, "zero", z, key, "FSDP's sharding strategy as a ZeRO stage");
    return 0;
}

/* RayArguments.ray_num_workers (training_args.py:55): the GPUs Ray starts, with USE_RAY=1 */
static int read_ray_workers(ck_state *st, const ck_node *v, const char *key, char *err)
{
    int64_t n;
    if (ck_int(v, &n) || n < 1 || n > 4096) return ck_bad(key, v, "want 1 to 4096 workers", err);
    if (n > 1) st->procs = n, st->fmt_bits |= LF_RAY;
    return 0;
}

static const ck_key keys[] = {
    /* the model (model_args.py) */
    {"model_name_or_path", ck_read_model}, {"flash_attn", read_flash_attn},
    {"disable_gradient_checkpointing", read_disable_gc}, {"use_reentrant_gc", NULL},
    {"quantization_bit", read_quantization_bit}, {"quantization_method", read_quantization_method},
    {"quantization_type", read_quantization_type}, {"double_quantization", read_double_quantization},
    {"quantization_device_map", read_quantization_device_map},
    {"use_unsloth", refuse_if_on}, {"use_unsloth_gc", refuse_if_on}, {"enable_liger_kernel", refuse_if_on},
    {"shift_attn", refuse_if_on}, {"upcast_layernorm", refuse_if_on}, {"upcast_lmhead_output", refuse_if_on},
    {"resize_vocab", refuse_if_on}, {"use_v1_kernels", refuse_if_on}, {"use_kt", refuse_if_on},
    {"fp8", refuse_if_on}, {"fp8_enable_fsdp_float8_all_gather", refuse_if_on}, {"fp8_backend", NULL},
    {"adapter_name_or_path", refuse_if_set}, {"mixture_of_depths", refuse_if_set}, {"add_tokens", refuse_if_set},
    {"add_special_tokens", refuse_if_set}, {"new_special_tokens_config", refuse_if_set},
    /* the method (finetuning_args.py) */
    {"stage", read_stage}, {"finetuning_type", read_finetuning_type}, {"lora_rank", read_lora_rank},
    {"lora_alpha", NULL}, {"lora_dropout", read_lora_dropout}, {"lora_target", read_lora_target},
    {"additional_target", refuse_if_set}, {"pure_bf16", read_pure_bf16},
    {"use_galore", refuse_if_on}, {"use_apollo", refuse_if_on}, {"use_badam", refuse_if_on},
    {"use_adam_mini", refuse_if_on}, {"use_muon", refuse_if_on}, {"use_llama_pro", refuse_if_on},
    {"use_dora", refuse_if_on}, {"pissa_init", refuse_if_on}, {"use_dft_loss", refuse_if_on},
    {"use_megatron_bridge", refuse_if_on}, {"use_hyper_parallel", refuse_if_on},
    {"hyper_parallel_cp_size", refuse_above_one}, {"use_asft_loss", refuse_if_on}, {"use_eaft_loss", refuse_if_on},
    /* the data (data_args.py) */
    {"template", read_template}, {"cutoff_len", read_cutoff_len}, {"packing", read_packing},
    {"neat_packing", refuse_if_on},
    /* the step (transformers' TrainingArguments, which LLaMA-Factory's extend) */
    {"per_device_train_batch_size", ck_read_batch}, {"gradient_accumulation_steps", ck_read_accum},
    {"bf16", read_bf16}, {"fp16", read_fp16}, {"optim", ck_read_optimizer},
    {"gradient_checkpointing", read_trainer_gc}, {"gradient_checkpointing_kwargs", NULL},
    {"torch_compile", ck_read_compile}, {"use_liger_kernel", refuse_if_on},
    {"deepspeed", ck_read_deepspeed_ref}, {"fsdp", read_fsdp}, {"fsdp_config", NULL},
    {"fsdp_transformer_layer_cls_to_wrap", NULL}, {"ray_num_workers", read_ray_workers},
    /* known, and nothing memplan counts: a reference or reward model, preference
     * weights and generation serve the stages refused above; processor sizes serve
     * multimodal templates; inference and export keys serve other commands */
    {"adapter_folder", NULL}, {"cache_dir", NULL}, {"use_fast_tokenizer", NULL}, {"split_special_tokens", NULL},
    {"init_special_tokens", NULL}, {"model_revision", NULL}, {"low_cpu_mem_usage", NULL}, {"rope_scaling", NULL},
    {"moe_aux_loss_coef", NULL}, {"train_from_scratch", NULL}, {"infer_backend", NULL}, {"offload_folder", NULL},
    {"use_kv_cache", NULL}, {"infer_dtype", NULL}, {"hf_hub_token", NULL}, {"ms_hub_token", NULL},
    {"om_hub_token", NULL}, {"print_param_status", NULL}, {"trust_remote_code", NULL},
    {"image_max_pixels", NULL}, {"image_min_pixels", NULL}, {"image_do_pan_and_scan", NULL},
    {"crop_to_patches", NULL}, {"video_max_pixels", NULL}, {"video_min_pixels", NULL}, {"video_fps", NULL},
    {"video_maxlen", NULL}, {"use_audio_in_video", NULL}, {"audio_sampling_rate", NULL},
    {"freeze_vision_tower", NULL}, {"freeze_multi_modal_projector", NULL}, {"freeze_language_model", NULL},
    {"export_dir", NULL}, {"export_size", NULL}, {"export_device", NULL}, {"export_quantization_bit", NULL},
    {"export_quantization_dataset", NULL}, {"export_quantization_nsamples", NULL},
    {"export_quantization_maxlen", NULL}, {"export_legacy_format", NULL}, {"export_hub_model_id", NULL},
    {"vllm_maxlen", NULL}, {"vllm_gpu_util", NULL}, {"vllm_enforce_eager", NULL}, {"vllm_max_lora_rank", NULL},
    {"vllm_config", NULL}, {"sglang_maxlen", NULL}, {"sglang_mem_fraction", NULL}, {"sglang_tp_size", NULL},
    {"sglang_config", NULL}, {"sglang_lora_backend", NULL},
    {"freeze_trainable_layers", NULL}, {"freeze_trainable_modules", NULL}, {"freeze_extra_modules", NULL},
    {"loraplus_lr_ratio", NULL}, {"loraplus_lr_embedding", NULL}, {"use_rslora", NULL}, {"pissa_iter", NULL},
    {"pissa_convert", NULL}, {"create_new_adapter", NULL}, {"module_dropout", NULL}, {"oft_rank", NULL},
    {"oft_block_size", NULL}, {"oft_target", NULL},
    {"pref_beta", NULL}, {"pref_ftx", NULL}, {"pref_bco_weight", NULL}, {"pref_loss", read_pref_loss},
    {"dpo_label_smoothing", NULL}, {"kto_chosen_weight", NULL}, {"kto_rejected_weight", NULL},
    {"simpo_gamma", NULL}, {"ppo_buffer_size", NULL}, {"ppo_epochs", NULL}, {"ppo_score_norm", NULL},
    {"ppo_target", NULL}, {"ppo_whiten_rewards", NULL}, {"ref_model", read_ref_model}, {"ref_model_adapters", NULL},
    {"ref_model_quantization_bit", NULL}, {"reward_model", NULL}, {"reward_model_adapters", NULL},
    {"reward_model_quantization_bit", NULL}, {"reward_model_type", NULL}, {"ld_alpha", NULL},
    {"galore_target", NULL}, {"galore_rank", NULL}, {"galore_update_interval", NULL}, {"galore_scale", NULL},
    {"galore_proj_type", NULL}, {"galore_layerwise", NULL}, {"apollo_target", NULL}, {"apollo_rank", NULL},
    {"apollo_update_interval", NULL}, {"apollo_scale", NULL}, {"apollo_proj", NULL}, {"apollo_proj_type", NULL},
    {"apollo_scale_type", NULL}, {"apollo_layerwise", NULL}, {"apollo_scale_front", NULL}, {"badam_mode", NULL},
    {"badam_start_block", NULL}, {"badam_switch_mode", NULL}, {"badam_switch_interval", NULL},
    {"badam_update_ratio", NULL}, {"badam_mask_mode", NULL}, {"badam_verbose", NULL}, {"use_swanlab", NULL},
    {"swanlab_project", NULL}, {"swanlab_workspace", NULL}, {"swanlab_run_name", NULL}, {"swanlab_mode", NULL},
    {"swanlab_api_key", NULL}, {"swanlab_logdir", NULL}, {"swanlab_lark_webhook_url", NULL},
    {"swanlab_lark_secret", NULL}, {"use_mca", NULL}, {"megatron_bridge_args", NULL}, {"hyper_parallel_args", NULL},
    {"asft_alpha", NULL}, {"eaft_alpha", NULL}, {"compute_accuracy", NULL}, {"disable_shuffling", NULL},
    {"early_stopping_steps", NULL}, {"plot_loss", NULL}, {"include_effective_tokens_per_second", NULL},
    {"dataset", NULL}, {"eval_dataset", NULL}, {"dataset_dir", NULL}, {"media_dir", NULL},
    {"train_on_prompt", NULL}, {"mask_history", NULL}, {"streaming", NULL}, {"buffer_size", NULL},
    {"mix_strategy", NULL}, {"interleave_probs", NULL}, {"overwrite_cache", NULL},
    {"preprocessing_batch_size", NULL}, {"preprocessing_num_workers", NULL}, {"max_samples", NULL},
    {"eval_num_beams", NULL}, {"ignore_pad_token_for_loss", NULL}, {"val_size", NULL},
    {"eval_on_each_dataset", NULL}, {"tool_format", NULL}, {"default_system", NULL}, {"enable_thinking", NULL},
    {"preserve_thinking", NULL}, {"tokenized_path", NULL}, {"data_shared_file_system", NULL},
    {"do_sample", NULL}, {"temperature", NULL}, {"top_p", NULL}, {"top_k", NULL}, {"num_beams", NULL},
    {"max_length", NULL}, {"max_new_tokens", NULL}, {"repetition_penalty", NULL}, {"length_penalty", NULL},
    {"skip_special_tokens", NULL},
    {"ray_run_name", NULL}, {"ray_storage_path", NULL}, {"ray_storage_filesystem", NULL},
    {"resources_per_worker", NULL}, {"placement_strategy", NULL}, {"ray_init_kwargs", NULL},
    {"master_addr", NULL}, {"master_port", NULL}, {"enable_torch_profiler", NULL}, {"profiler_output_dir", NULL},
    {"profiler_wait_steps", NULL}, {"profiler_warmup_steps", NULL}, {"profiler_active_steps", NULL},
    {"profiler_repeat", NULL}, {"profiler_record_shapes", NULL}, {"profiler_profile_memory", NULL},
    {"profiler_with_stack", NULL}, {"profile_modules", NULL},
    /* the Trainer's, nothing memplan counts */
    {"learning_rate", NULL}, {"lr_scheduler_type", NULL}, {"lr_scheduler_kwargs", NULL}, {"warmup_ratio", NULL},
    {"warmup_steps", NULL}, {"weight_decay", NULL}, {"adam_beta1", NULL}, {"adam_beta2", NULL},
    {"adam_epsilon", NULL}, {"max_grad_norm", NULL}, {"num_train_epochs", NULL}, {"max_steps", NULL},
    {"seed", NULL}, {"data_seed", NULL}, {"output_dir", NULL}, {"overwrite_output_dir", NULL},
    {"resume_from_checkpoint", NULL}, {"logging_steps", NULL}, {"logging_strategy", NULL},
    {"logging_first_step", NULL}, {"logging_dir", NULL}, {"log_level", NULL}, {"report_to", NULL},
    {"run_name", NULL}, {"save_strategy", NULL}, {"save_steps", NULL}, {"save_total_limit", NULL},
    {"save_only_model", NULL}, {"eval_strategy", NULL}, {"evaluation_strategy", NULL}, {"eval_steps", NULL},
    {"per_device_eval_batch_size", NULL}, {"eval_accumulation_steps", NULL}, {"do_train", NULL},
    {"do_eval", NULL}, {"do_predict", NULL}, {"predict_with_generate", NULL}, {"generation_max_length", NULL},
    {"generation_num_beams", NULL}, {"load_best_model_at_end", NULL}, {"metric_for_best_model", NULL},
    {"push_to_hub", NULL}, {"hub_model_id", NULL}, {"hub_strategy", NULL}, {"hub_private_repo", NULL},
    {"remove_unused_columns", NULL}, {"label_names", NULL}, {"dataloader_num_workers", NULL},
    {"dataloader_pin_memory", NULL}, {"dataloader_persistent_workers", NULL}, {"ddp_timeout", NULL},
    {"ddp_find_unused_parameters", NULL}, {"ddp_backend", NULL}, {"tf32", NULL}, {"optim_args", NULL},
    {"optim_target_modules", NULL}, {"auto_find_batch_size", NULL}, {"torch_empty_cache_steps", NULL},
    {"include_tokens_per_second", NULL}, {"include_num_input_tokens_seen", NULL}, {"torch_compile_backend", NULL},
    {"torch_compile_mode", NULL}, {"disable_tqdm", NULL}, {"local_rank", NULL},
    {NULL, NULL},
};

/* ---------- defaults and what LLaMA-Factory resolves ---------- */

static bool run_has(const ck_state *st, const char *format)
{
    for (int i = 0; i < st->c->nfiles; i++)
        if (!strcmp(st->c->format[i], format)) return true;
    return false;
}

static const char *origin_key(const ck_state *st, const char *setting)
{
    for (int i = 0; i < st->c->norigins; i++)
        if (!strcmp(st->c->origin[i].setting, setting)) return st->c->origin[i].key;
    return NULL;
}

static void set_count(ck_state *st, const char *setting, int64_t v, const char *key, const char *how)
{
    char t[32];
    snprintf(t, sizeof t, "%lld", (long long)v);
    ck_set(st, setting, t, key, how);
}

/* stage, finetuning_type and the adapter: rank 8 on every linear layer but the head */
static int resolve_method(ck_state *st, char *err)
{
    const bool full = st->fmt_bits & LF_FULL;
    const char *type_key = st->fmt_bits & LF_TYPE_GIVEN ? "finetuning_type" : "(default)";
    st->lora = !full;
    st->given |= MP_PIN_LORA;
    if (full) {
        st->s.lora_rank = 0, st->lora_modules[0] = 0;
        ck_set(st, "lora-rank", "0", type_key, "finetuning_type full: every weight trained");
        return 0;
    }
    if (!(st->fmt_bits & LF_RANK_GIVEN)) st->s.lora_rank = 8; /* finetuning_args.py:77 */
    set_count(st, "lora-rank", st->s.lora_rank, st->fmt_bits & LF_RANK_GIVEN ? "lora_rank" : "(default)",
              st->fmt_bits & LF_RANK_GIVEN ? NULL
              : st->fmt_bits & LF_TYPE_GIVEN ? "lora_rank's default (finetuning_args.py:77)"
                                             : "finetuning_type's default: lora, rank 8 (finetuning_args.py:464, :77)");
    if (st->fmt_bits & LF_DROPOUT_GIVEN) {
        char d[32];
        snprintf(d, sizeof d, "%g", (double)st->s.lora_dropout);
        ck_set(st, "lora-dropout", d, "lora_dropout", NULL);
    } else {
        st->s.lora_dropout = 0; /* finetuning_args.py:73 */
    }
    /* "all" (the default, or written alone): find_all_linear_modules, misc.py:28-52 */
    if (st->lora_modules[0] && strcmp(st->lora_modules, "all")) return 0; /* names: check.c maps them */
    const mp_family *f = mp_family_of(st->c->model.family);
    const char *key = st->lora_modules[0] ? "lora_target" : "(default)";
    st->lora_modules[0] = 0;
    if (f && !strcmp(f->model_type, "gpt2"))
        return ck_refuse("lora_target", "'all' finds no nn.Linear in GPT-2 but its head (its projections are "
                                        "Conv1D: misc.py:48), so PEFT has no target: name them (c_attn, c_proj, c_fc)",
                         err);
    unsigned bits = MP_LORA_ALL;
    const char *how = "every nn.Linear but lm_head (model/model_utils/misc.py:28-52)";
    /* GPT-NeoX's head is embed_out, which the lm_head rule does not exclude
     * (tests/data/engines/hf_attention_support.csv head_module) */
    if (f && !strcmp(f->model_type, "gpt_neox")) bits |= MP_LORA_HEAD, how = "every nn.Linear but lm_head: GPT-NeoX's "
                                                                              "head is embed_out, so it too (misc.py:28-52)";
    else if (st->c->model.experts > 0)
        how = "every nn.Linear but lm_head (misc.py:28-52); the router's small adapter is not counted";
    st->s.lora_targets = bits;
    st->given |= MP_PIN_TARGETS;
    char names[64];
    ck_set(st, "lora-targets", mp_lora_targets_name(bits, names, sizeof names), key, how);
    return 0;
}

/* On-the-fly bitsandbytes (model_utils/quantization.py:166-194: nf4 with double
 * quantisation unless told, the compute dtype as storage), or the checkpoint's
 * own quantisation (PTQ: quantization.py:90-130, quantization_bit ignored). */
static int resolve_quant(ck_state *st, char *err)
{
    const mp_model *m = &st->c->model;
    if (m->stored_quant != MP_QUANT_NONE) {
        if (!st->lora) return ck_refuse("finetuning_type", "a pre-quantised checkpoint trained in full (LLaMA-Factory "
                                                           "refuses it: model/adapter.py:334-336)", err);
        st->s.quant = m->stored_quant, st->given |= MP_PIN_QUANT;
        ck_set(st, "quant", mp_quant_name(st->s.quant), "model_name_or_path",
               "the checkpoint is stored quantised (its quantization_config): quantization_bit does not apply");
        return 0;
    }
    if (!st->quant_bits) return 0;
    if (st->fmt_bits & LF_QUANT_OTHER)
        return ck_refuse("quantization_method", "on-the-fly quantisation other than bitsandbytes (HQQ, EETQ: "
                                                "model_utils/quantization.py:195-230)", err);
    if (!st->lora)
        return snprintf(err, MP_ERR_LEN, "'quantization_bit' with finetuning_type full: LLaMA-Factory trains a "
                        "quantised model with LoRA only (hparams/parser.py:125-127)"), -1;
    if (st->quant_bits != 4 && st->quant_bits != 8)
        return snprintf(err, MP_ERR_LEN, "'quantization_bit' is %d: bitsandbytes takes 4 or 8 (model_utils/"
                        "quantization.py:167-181)", st->quant_bits), -1;
    bool dq = st->fmt_bits & LF_DQ_GIVEN ? st->double_quant : true; /* model_args.py:293 */
    st->s.quant = st->quant_bits == 8 ? MP_QUANT_INT8 : dq ? MP_QUANT_NF4_DQ : MP_QUANT_NF4;
    st->given |= MP_PIN_QUANT;
    ck_set(st, "quant", mp_quant_name(st->s.quant), "quantization_bit",
           st->quant_bits == 8 ? NULL : st->fmt_bits & LF_DQ_GIVEN ? "double_quantization as written"
                                                                   : "double_quantization's default: on "
                                                                     "(model_args.py:293)");
    return 0;
}

/* The rows a step sees. sft: every sample cut at cutoff_len, packed ones
 * exactly cutoff_len (cutoff_len - 1 plus one pad: data_args.py:182-183,
 * data/processor/supervised.py:182-193), and the collator pads each batch to a
 * multiple of 8 (train/sft/workflow.py:61). pt: blocks of cutoff_len when
 * packing is left to the stage (parser.py:462 sets it after data_args.py's
 * cut), one less when packing is written true; unpacked, rows up to cutoff_len
 * (data/processor/pretrain.py:32-48, DataCollatorForLanguageModeling). */
static int resolve_seq(ck_state *st, char *err)
{
    const bool pt = st->fmt_bits & LF_PT, given = st->fmt_bits & LF_SEQ_GIVEN;
    const bool packing_written_on = (st->fmt_bits & LF_PACKING_GIVEN) && (st->fmt_bits & LF_PACKING_ON);
    int64_t cutoff = given ? st->s.seq : 2048, seq;
    const char *how;
    if (pt) {
        seq = cutoff - (packing_written_on ? 1 : 0);
        how = packing_written_on ? "packing: true cuts cutoff_len by one (data_args.py:182-183)"
              : (st->fmt_bits & LF_PACKING_GIVEN) ? "stage pt, unpacked: rows up to cutoff_len"
                                                  : "stage pt packs blocks of cutoff_len (parser.py:462)";
    } else {
        seq = (cutoff + 7) / 8 * 8;
        how = st->pref_method ? "stage dpo: prompt and each answer cut at cutoff_len (data/processor/pairwise.py:"
                                "58-59), padded to a multiple of 8 (train/dpo/workflow.py:50)"
              : seq != cutoff ? "stage sft: the collator pads to a multiple of 8 (train/sft/workflow.py:61)"
              : packing_written_on ? "packed rows of cutoff_len (data/processor/supervised.py:182-193)"
                                   : "stage sft: samples cut at cutoff_len";
    }
    if (seq < 1)
        return snprintf(err, MP_ERR_LEN, "'cutoff_len' is 1: packing: true leaves no token (data_args.py:182-183)"), -1;
    if (!given) how = pt ? "cutoff_len's default 2048 (data_args.py:46), in blocks" : "cutoff_len's default 2048 "
                                                                                      "(data_args.py:46)";
    st->s.seq = seq, st->given |= MP_PIN_SEQ;
    set_count(st, "seq", seq, given ? "cutoff_len" : "(default)", how);
    return 0;
}

/* LLaMA-Factory checkpoints every layer with trainable weights unless told not
 * to (model_utils/checkpointing.py:80-103, 164-178); the Trainer's own flag,
 * true, checkpoints too. An accelerate file's FSDP checkpointing is its own. */
static void resolve_checkpointing(ck_state *st)
{
    if ((st->given & MP_PIN_CKPT) && st->s.checkpointing != MP_CKPT_NONE) return;
    bool on = (st->fmt_bits & LF_GC_TRAINER) || !(st->fmt_bits & LF_GC_OFF);
    st->s.checkpointing = on ? MP_CKPT_FULL : MP_CKPT_NONE, st->given |= MP_PIN_CKPT;
    const char *key = st->fmt_bits & LF_GC_TRAINER ? "gradient_checkpointing"
                    : st->fmt_bits & LF_GC_GIVEN   ? "disable_gradient_checkpointing"
                                                   : "(default)";
    ck_set(st, "checkpointing", mp_ckpt_name(st->s.checkpointing), key,
           st->fmt_bits & (LF_GC_TRAINER | LF_GC_GIVEN) ? NULL
                                                        : "on unless disable_gradient_checkpointing "
                                                          "(model_utils/checkpointing.py:164-178)");
}

/* flash_attn auto leaves transformers' default (model_utils/attention.py:60-61),
 * SDPA where the model declares it; Gemma 2 takes FlashAttention-2 where it is
 * installed, else eager (attention.py:46-54). */
static void resolve_attention(ck_state *st)
{
    if (st->given & MP_PIN_ATTENTION) return;
    const mp_family *f = mp_family_of(st->c->model.family);
    const char *how;
    if (f && !strcmp(f->model_type, "gemma2")) {
        st->s.attention = MP_ATTN_FLASH;
        how = "auto on Gemma 2: FlashAttention-2 if installed, else eager (attention.py:46-54; flash_attn: disabled)";
    } else {
        st->s.attention = f && f->sdpa ? MP_ATTN_FLASH : MP_ATTN_EAGER;
        how = "flash_attn auto: transformers' default, SDPA where the model declares it (attention.py:60-61)";
    }
    st->given |= MP_PIN_ATTENTION;
    ck_set(st, "attention", mp_attention_name(st->s.attention), "(default)", how);
}

/* What the weights are kept in (model/adapter.py:341-353): trained weights are
 * upcast to fp32 unless pure_bf16 (or ZeRO-3 without quantisation, where
 * DeepSpeed keeps them); a LoRA base stays in the checkpoint's 16 bits
 * (loader.py:160) and the adapters are fp32. bf16/fp16 are the Trainer's
 * autocast; DeepSpeed and FSDP keep fp32 masters of 16-bit weights. */
static int resolve_precision(ck_state *st, char *err)
{
    const bool bf16 = st->fmt_bits & LF_BF16, fp16 = st->fmt_bits & LF_FP16;
    if (bf16 && fp16)
        return snprintf(err, MP_ERR_LEN, "'bf16' and 'fp16' are both true: transformers' TrainingArguments "
                        "takes one"), -1;
    /* a DeepSpeed JSON's own bf16/fp16 "enabled": true, when the YAML says neither */
    const int p16 = bf16 ? 1 : fp16 ? 2 : st->precision16 > 0 ? st->precision16 : 0;
    const char *key = bf16 ? "bf16" : fp16 ? "fp16" : p16 ? st->precision_key : "(no 16-bit flag)";
    const bool lora = st->s.lora_rank > 0, engine = st->deepspeed || st->fsdp;
    mp_precision p;
    const char *how;
    if (st->pure16) {
        if (engine)
            return ck_refuse("pure_bf16", "16-bit weights without fp32 masters under DeepSpeed or FSDP, whose "
                                          "optimizers keep masters (parser.py:331-332 refuses it with ZeRO-3)", err);
        if (p16 == 2) return ck_refuse("pure_bf16", "bf16 weights under fp16 autocast and its loss scaler", err);
        if (lora && p16 != 1)
            return ck_refuse("pure_bf16", "LoRA with pure_bf16 and no bf16: PEFT keeps the adapters in fp32 and they "
                                          "run outside autocast (add bf16: true)", err);
        p = lora ? MP_MIXED_BF16 : MP_PURE_BF16, key = "pure_bf16";
        how = lora ? "LoRA: the bf16 base, the adapters fp32 all the same (PEFT's autocast_adapter_dtype)"
                   : "the trained weights stay bf16, no fp32 copy (model/adapter.py:347-348)";
    } else if (!p16 && lora) {
        return ck_refuse("bf16", "LoRA with neither bf16 nor fp16: the base loads in the dtype LLaMA-Factory infers "
                                 "from the checkpoint and the GPU (extras/misc.py:214-221), run without autocast", err);
    } else if (engine) {
        p = p16 == 1 ? MP_MIXED_BF16 : p16 == 2 ? MP_MIXED_FP16 : MP_FP32;
        how = p16 ? (st->deepspeed ? "DeepSpeed keeps 16-bit weights and fp32 masters" : "FSDP keeps fp32 shards, "
                                                                                         "16-bit compute")
                  : "no 16-bit flag: fp32";
    } else if (lora) {
        p = p16 == 1 ? MP_MIXED_BF16 : MP_MIXED_FP16;
        how = "the base in the checkpoint's 16 bits (loader.py:160), fp32 adapters (adapter.py:314-316)";
    } else {
        p = p16 == 1 ? MP_AMP_BF16 : p16 == 2 ? MP_AMP_FP16 : MP_FP32;
        how = p16 ? "the trained weights upcast to fp32 (model/adapter.py:341-353), 16-bit autocast"
                  : "no 16-bit flag: the weights upcast to fp32 (model/adapter.py:341-353)";
    }
    st->s.precision = p, st->given |= MP_PIN_PRECISION;
    ck_set(st, "precision", mp_precision_name(p), key, how);
    return 0;
}

/* The launcher: llamafactory-cli train starts torchrun for several GPUs (and
 * DeepSpeed needs it: FORCE_TORCHRUN=1, parser.py:300-301), with
 * PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True unless OPTIM_TORCH=0
 * (launcher.py:60-82). accelerate launch and Ray start the processes otherwise. */
static void resolve_launcher(ck_state *st)
{
    int64_t gpus = st->given & MP_PIN_GPUS ? st->s.gpus : st->procs > 0 ? st->procs : st->s.gpus;
    if (st->fmt_bits & LF_RAY)
        set_count(st, "gpus", st->procs, "ray_num_workers", "Ray Train's workers, with USE_RAY=1 (training_args.py:55)");
    bool torchrun = !run_has(st, "accelerate") && !(st->fmt_bits & LF_RAY) && (st->deepspeed || gpus > 1);
    if (!torchrun) return;
    st->s.expandable_segments = true;
    ck_set(st, "expandable-segments", "on", "(launcher)",
           "llamafactory-cli's torchrun sets PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True unless OPTIM_TORCH=0 "
           "(launcher.py:60-82)");
}

/* stage dpo: the method by pref_loss, the reference as create_ref_model makes
 * it (train/trainer_utils.py:116-148 @ff6d4d12): ref_model names another
 * model (refused); else LoRA loads none and the trainer disables the adapter
 * (train/dpo/trainer.py:262-264), other types load the model again. No
 * precompute: CustomDPOTrainer sets precompute_ref_log_probs False (:70). */
static int resolve_preference(ck_state *st, char *err)
{
    if (!st->pref_method) return ck_preference(st, NULL, "LLaMA-Factory's default", err);
    if (st->pref_bits) st->pref_method = (int)st->pref_bits; /* pref_loss's method */
    mp_method m = (mp_method)(st->pref_method - 1);
    const bool uses_ref = mp_method_desc_of(m)->reference;
    if (st->pref_ref == MP_REF_MODEL && uses_ref && !ck_from_flag(st, "method"))
        return ck_refuse(st->pref_ref_key, "a reference model other than the one trained (train/trainer_utils.py:"
                                           "123-135)", err);
    st->pref_ref = MP_REF_DEFAULT; /* orpo and simpo never load ref_model (finetuning_args.py:593) */
    if (st->pref_bits) snprintf(st->pref_key, sizeof st->pref_key, "pref_loss");
    if (ck_preference(st, st->pref_bits ? "stage dpo with this pref_loss (train/dpo/trainer.py:187-217)"
                                        : "stage dpo, pref_loss's default sigmoid (finetuning_args.py:183)",
                      st->lora ? "finetuning_type lora: the policy with its adapter disabled (train/dpo/trainer.py:"
                                 "262-264)"
                               : "the model loaded again as the reference (train/trainer_utils.py:139-146)",
                      err))
        return -1;
    ck_note(st, "LLaMA-Factory's DPO upcasts the pair rows' logits to fp32 and keeps their log-softmax (train/dpo/"
                "trainer.py:231, trainer_utils.py:612): more than TRL's logits, which memplan counts");
    return 0;
}

static int finish(ck_state *st, char *err)
{
    if (resolve_method(st, err) || resolve_quant(st, err) || resolve_seq(st, err)) return -1;
    if (!(st->given & MP_PIN_BATCH)) { /* TrainingArguments' per_device_train_batch_size */
        st->s.batch = 8, st->given |= MP_PIN_BATCH;
        ck_set(st, "batch", "8", "(default)", "TrainingArguments' per_device_train_batch_size");
    }
    if (!(st->given & MP_PIN_OPTIMIZER))
        ck_set(st, "optimizer", mp_optimizer_name(st->s.optimizer), "(default)",
               "TrainingArguments' optim: adamw_torch (adamw_torch_fused from torch 2.8)");
    resolve_checkpointing(st);
    resolve_attention(st);
    /* DeepSpeed's ZeRO and bf16 optimizers keep fp32 master partitions, with or
     * without a bf16 block (deepspeed/runtime/zero/stage_1_and_2.py, stage3.py) */
    if (st->deepspeed || st->fsdp) st->engine_masters = true;
    if (resolve_precision(st, err)) return -1;
    /* DeepSpeed's engine holds the weights and reduces through its buckets:
     * memplan estimates such a run with DeepSpeed's profile, unless --framework */
    const char *fw = origin_key(st, "framework");
    if (st->deepspeed && !(fw && !strcmp(fw, "--framework"))) {
        const mp_framework *ds = mp_framework_find("deepspeed", err);
        if (!ds) return -1;
        st->s.framework = ds;
        ck_set(st, "framework", ds->name, "deepspeed", "the run is DeepSpeed's: its engine holds the weights");
    }
    resolve_launcher(st);
    return resolve_preference(st, err);
}

/* A setting's fix in LLaMA-Factory's words. */
static int spell(const char *setting, const mp_settings *s, char *buf, size_t len)
{
    if (!strcmp(setting, "batch"))
        snprintf(buf, len, "per_device_train_batch_size: %lld, gradient_accumulation_steps: %lld", (long long)s->batch,
                 (long long)s->accum);
    else if (!strcmp(setting, "checkpointing")) snprintf(buf, len, "disable_gradient_checkpointing: false");
    else if (!strcmp(setting, "attention")) snprintf(buf, len, "flash_attn: sdpa");
    else if (!strcmp(setting, "optimizer")) snprintf(buf, len, "optim: adamw_bnb_8bit");
    /* sft pads to a multiple of 8: a cutoff_len that is one never grows */
    else if (!strcmp(setting, "seq"))
        snprintf(buf, len, "cutoff_len: %lld", (long long)(s->seq >= 8 ? s->seq / 8 * 8 : s->seq));
    else if (!strcmp(setting, "lora"))
        snprintf(buf, len, "finetuning_type: lora, lora_rank: %lld, lora_target: all", (long long)s->lora_rank);
    else if (!strcmp(setting, "quant")) snprintf(buf, len, "quantization_bit: 4");
    else return -1;
    return 0;
}

const ck_format ck_format_llamafactory = {
    .name = "llamafactory", .framework = "llamafactory", .detect = detect, .keys = keys, .finish = finish,
    .spell = spell,
};

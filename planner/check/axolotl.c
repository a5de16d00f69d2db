/* axolotl.c — an axolotl config (`axolotl train config.yml`): the keys of
 * axolotl-ai-cloud/axolotl@067b021c8b87a9e5e380b9173c704cf7340e30f5 as
 * tests/data/engines/axolotl_config_keys.csv tabulates them (its pydantic
 * schema, src/axolotl/utils/schemas/), with the defaults and `auto`s resolved
 * as axolotl resolves them. Paths below without a folder are under
 * src/axolotl/utils/schemas/ at that commit.
 *
 * The weights load in the dtype axolotl trains in: resolve_dtype
 * (utils/config/__init__.py:156-196) sets torch_dtype bfloat16 for bf16, and
 * the loader passes it to from_pretrained (loaders/model.py:611-612). So full
 * fine-tuning in bf16 is pure bf16 (no fp32 copy), a LoRA base stays 16-bit
 * under fp32 adapters (PEFT's autocast_adapter_dtype), and DeepSpeed's bf16
 * and FSDP's mixed precision keep fp32 masters of what trains. The stack is
 * transformers' Trainer with PEFT: the hf profile. */
#include "check/reader.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/errors.h"
#include "model/family.h"
#include "settings/vocabulary.h"

/* What one key says and another decides with (st->fmt_bits), resolved in finish. */
#define AX_LORA           (UINT64_C(1) << 0) /* adapter: lora */
#define AX_QLORA          (UINT64_C(1) << 1) /* adapter: qlora */
#define AX_TARGET_LINEAR  (UINT64_C(1) << 2) /* lora_target_linear: true */
#define AX_TARGET_REGEX   (UINT64_C(1) << 3) /* lora_target_modules is one string: a regex over module paths */
#define AX_PACKING        (UINT64_C(1) << 4) /* sample_packing: true */
#define AX_PAD            (UINT64_C(1) << 5) /* pad_to_sequence_len: true */
#define AX_PAD_GIVEN      (UINT64_C(1) << 6) /* pad_to_sequence_len given (true or false) */
#define AX_RAY            (UINT64_C(1) << 7) /* use_ray: true */
#define AX_REENTRANT      (UINT64_C(1) << 8) /* gradient_checkpointing_kwargs.use_reentrant: true */
#define AX_CKPT           (UINT64_C(1) << 9) /* gradient_checkpointing: true */
#define AX_ATTN_GIVEN     (UINT64_C(1) << 10) /* attn_implementation given */
#define AX_ATTN_SDPA      (UINT64_C(1) << 11) /* ... and it is sdpa */
#define AX_ATTN_CAST      (UINT64_C(1) << 12) /* ... and it casts the embeddings back to 16 bits (not eager or sdpa) */
#define AX_BF16_ON        (UINT64_C(1) << 13) /* bf16: true */
#define AX_BF16_OFF       (UINT64_C(1) << 14) /* bf16: false (absent: "auto") */
#define AX_FP16_ON        (UINT64_C(1) << 15) /* fp16: true */
#define AX_FP16_OFF       (UINT64_C(1) << 16) /* fp16: false */
#define AX_BFLOAT16       (UINT64_C(1) << 17) /* bfloat16: true */
#define AX_FLOAT16        (UINT64_C(1) << 18) /* float16: true */
#define AX_FSDP           (UINT64_C(1) << 19) /* fsdp (the list) or fsdp_config given */
#define AX_FSDP2          (UINT64_C(1) << 20) /* fsdp_version 2 */
#define AX_RESHARD_OFF    (UINT64_C(1) << 21) /* fsdp_config.reshard_after_forward: false */
#define AX_FSDP_OFFLOAD   (UINT64_C(1) << 22) /* fsdp_config.offload_params or the list's offload */
#define AX_FSDP_CKPT      (UINT64_C(1) << 23) /* fsdp_config.activation_checkpointing: true */
#define AX_KERNEL_SET     (UINT64_C(1) << 24) /* a lora_*_kernel key given */
#define AX_KERNEL_ON      (UINT64_C(1) << 25) /* ... true */
#define AX_REMOTE_CODE    (UINT64_C(1) << 26) /* trust_remote_code: true */
#define AX_MODEL_CONFIG   (UINT64_C(1) << 27) /* base_model_config named the architecture */
#define AX_DROPOUT        (UINT64_C(1) << 28) /* lora_dropout given */
#define AX_COMPILE_AUTO   (UINT64_C(1) << 29) /* torch_compile: auto */
#define AX_LOAD4          (UINT64_C(1) << 30) /* load_in_4bit: true */
#define AX_LOAD8          (UINT64_C(1) << 31) /* load_in_8bit: true */
#define AX_CKPT_GIVEN     (UINT64_C(1) << 32) /* gradient_checkpointing given */
#define AX_OPTIMIZER      (UINT64_C(1) << 33) /* optimizer given */
#define AX_SHARD_GRAD_OP  (UINT64_C(1) << 34) /* the fsdp list's shard_grad_op (or hybrid_shard_zero2) */
#define AX_NO_SHARD       (UINT64_C(1) << 35) /* the fsdp list's no_shard */
#define AX_LEGACY         (UINT64_C(1) << 36) /* six legacy attention flags from here, in LEGACY's order */
enum { AX_RAY_WORKERS, AX_MULTIPLE_OF }; /* st->fmt_count[] */

/* The legacy attention flags, highest priority first, and the implementation
 * each maps to (schemas/enums.py LEGACY_ATTN_FLAG_TO_IMPL; config.py:1525-1575
 * maps the first one set when attn_implementation is not given, and refuses both). */
static const struct { const char *flag, *impl; } LEGACY[] = {
    {"xformers_attention", "xformers"}, {"sage_attention", "sage"}, {"flex_attention", "flex_attention"},
    {"flash_attention", "flash_attention_2"}, {"sdp_attention", "sdpa"}, {"eager_attention", "eager"},
};
enum { NLEGACY = sizeof LEGACY / sizeof *LEGACY };

static bool has(const ck_state *st, uint64_t bit) { return (st->fmt_bits & bit) != 0; }
static void put(ck_state *st, uint64_t bit, bool on)
{
    if (on) st->fmt_bits |= bit;
    else st->fmt_bits &= ~bit;
}

/* A note on the report (check.h's notes), once. */
static void note(ck_state *st, const char *text)
{
    mp_check *c = st->c;
    for (int i = 0; i < c->nnotes; i++)
        if (!strcmp(c->note[i], text)) return;
    if (c->nnotes < CK_MAX_NOTES) snprintf(c->note[c->nnotes++], sizeof c->note[0], "%s", text);
}

static int read_bool(const ck_node *v, const char *key, bool *on, char *err)
{
    *on = false;
    if (ck_null(v)) return 0;
    return ck_bool(v, on) ? ck_bad(key, v, "want true or false", err) : 0;
}

/* Python's truth, as axolotl tests a key (`if cfg.key:`): null, false, 0, "" and
 * empty lists and maps are off. */
static bool truthy(const ck_node *v)
{
    bool b;
    double d;
    if (ck_null(v)) return false;
    if (v->kind != CK_SCALAR) return v->child != NULL;
    if (!ck_bool(v, &b)) return b;
    if (!ck_real(v, &d)) return d != 0;
    return true;
}

/* ---------- what memplan does not model: refused when set ---------- */

/* Each key that changes memory in a way memplan does not count, and why: refused
 * when the file sets it (a true flag, a name, a non-empty list). */
static const struct { const char *key, *why; } UNMODELLED[] = {
    {"reward_model", "reward-model training (a classification head; config.py:282)"},
    {"process_reward_model", "process-reward-model training (a token classification head; config.py:293)"},
    {"relora", "ReLoRA's periodic merges and restarts (peft.py:257)"},
    {"lisa_n_layers", "LISA trains a few layers at a time (integrations.py:36)"},
    {"peft_use_dora", "DoRA: a magnitude vector and a weight norm per adapted module (peft.py:89)"},
    {"peft_layers_to_transform", "adapters on some layers only (peft.py:81)"},
    {"peft_layers_pattern", "adapters on some layers only (peft.py:87)"},
    {"peft_layer_replication", "replicated layers (peft.py:95)"},
    {"peft_trainable_token_indices", "trained embedding rows (peft.py:105)"},
    {"lora_modules_to_save", "modules trained in full beside the adapters (peft.py:62)"},
    {"lora_target_parameters", "adapters on parameters rather than modules (peft.py:57)"},
    {"lora_rank_pattern", "a rank per module (peft.py:68)"},
    {"lora_on_cpu", "the embeddings moved to the CPU (loaders/model.py:1031-1032)"},
    {"gptq", "a GPTQ checkpoint as the base (memplan reads one from its config.json: --hf-config)"},
    {"bnb_config_kwargs", "a 4-bit config other than axolotl's NF4 with double quantisation (peft.py:149)"},
    {"model_quantization_config", "MXFP4 or FP8 weights (model.py:96)"},
    {"model_quantization_config_kwargs", "MXFP4 or FP8 weights (model.py:102)"},
    {"model_kwargs", "from_pretrained arguments (deprecated.py:154)"},
    {"use_kernels", "the Hub's kernels (model.py:91)"},
    {"use_onebitllms", "1.58-bit weights (model.py:106)"},
    {"processor_type", "a multimodal model and its processor (model.py:64)"},
    {"processor_kwargs", "a multimodal processor (model.py:67)"},
    {"trainer_cls", "a trainer class of its own (config.py:255)"},
    {"qat", "quantisation-aware training's fake-quantised weights (config.py:280)"},
    {"fp8", "FP8 training (config.py:568)"},
    {"selective_checkpointing", "selective checkpointing inside each layer (config.py:612)"},
    {"activation_offloading", "activations offloaded by TRL's offloader in place of the Trainer's recompute "
                              "(config.py:623; core/builders/base.py:581-610)"},
    {"layer_offloading", "layer weights offloaded to the CPU (config.py:636)"},
    {"unfrozen_parameters", "the parameters its patterns name trained, the rest frozen (config.py:654)"},
    {"flash_attn_cross_entropy", "flash-attn's fused cross-entropy (config.py:810)"},
    {"flash_attn_fuse_mlp", "flash-attn's fused MLP (config.py:816)"},
    {"flash_optimum", "BetterTransformer (config.py:822)"},
    {"experts_implementation", "an experts implementation of its own (config.py:916)"},
    {"quantize_moe_experts", "quantised experts (config.py:923)"},
    {"chunked_cross_entropy", "torchtune's chunked loss over the whole logits, not the hf stack's (config.py:978; "
                              "monkeypatch/loss/chunked.py)"},
    {"use_eaft", "the entropy-aware loss over the logits (config.py:990)"},
    {"tiled_mlp", "ALST's tiled MLP (config.py:1009)"},
    {"deepcompile", "DeepSpeed's deepcompile (config.py:1038)"},
    {"max_memory", "a memory cap that places layers on the CPU (config.py:1320)"},
    {"gpu_memory_limit", "a memory cap that places layers on the CPU (config.py:1326)"},
    {"device_map", "a device map that spreads the model (config.py:472)"},
    {"ddp_bucket_cap_mb", "DDP buckets of another size than PyTorch's 25 MiB (config.py:494)"},
    {"plugins", "an integration plugin (CutCrossEntropy, Liger...: kernels and losses of their own; config.py:1423)"},
    {"cut_cross_entropy", "the Cut Cross-Entropy plugin's loss (integrations/cut_cross_entropy)"},
    {"liger_fused_linear_cross_entropy", "Liger's fused loss (integrations/liger)"},
    {"liger_rms_norm", "Liger's kernels (integrations/liger)"},
    {"liger_glu_activation", "Liger's kernels (integrations/liger)"},
    {"liger_rope", "Liger's kernels (integrations/liger)"},
    {"liger_cross_entropy", "Liger's loss (integrations/liger)"},
    {"rope_scaling", "rope scaling (deprecated.py:16)"},
    {"s2_attention", "shifted-sparse attention (removed: deprecated.py:26)"},
    {"flash_attn_rms_norm", "flash-attn's RMSNorm (removed: deprecated.py:27)"},
    {"unsloth_lora_mlp", "Unsloth's kernels (removed: validation.py:59-77)"},
    {"unsloth_lora_qkv", "Unsloth's kernels (removed: validation.py:59-77)"},
    {"unsloth_lora_o", "Unsloth's kernels (removed: validation.py:59-77)"},
    {"unsloth_cross_entropy_loss", "Unsloth's loss (removed: validation.py:59-77)"},
    {"unsloth_rms_norm", "Unsloth's kernels (removed: validation.py:59-77)"},
    {"unsloth_rope", "Unsloth's kernels (removed: validation.py:59-77)"},
    {"peft", "LoftQ's quantised base (peft.py:88, loaders/adapter.py:134-137)"},
    {"fsdp_config.mixed_precision_policy", "an FSDP2 mixed-precision policy of its own (fsdp.py:79)"},
    {"fsdp_config.fsdp_mixed_precision_policy", "an FSDP2 mixed-precision policy of its own (fsdp.py:79)"},
};

static int refuse_set(ck_state *st, const ck_node *v, const char *key, char *err)
{
    if (!truthy(v)) return 0;
    for (size_t i = 0; i < sizeof UNMODELLED / sizeof *UNMODELLED; i++)
        if (!strcmp(UNMODELLED[i].key, key)) return ck_refuse(key, UNMODELLED[i].why, err);
    return ck_refuse(key, "a technique memplan has no row for", err);
}

/* Parallelism of degree above 1 that memplan does not model (config.py:1091-1125). */
static int refuse_parallel(ck_state *st, const ck_node *v, const char *key, char *err)
{
    int64_t n;
    if (ck_null(v)) return 0;
    if (ck_int(v, &n) || n < 1) return ck_bad(key, v, "want a degree of 1 or more", err);
    if (n == 1) return 0;
    return ck_refuse(key, !strcmp(key, "tensor_parallel_size") ? "tensor parallelism"
                          : !strncmp(key, "dp_", 3)           ? "a device mesh of its own (HSDP, ND parallelism)"
                                                              : "context parallelism (each sequence split over "
                                                                "GPUs)", err);
}

/* ---------- the model ---------- */

static int read_base_model(ck_state *st, const ck_node *v, const char *key, char *err)
{
    if (has(st, AX_MODEL_CONFIG)) return 0; /* base_model_config names the architecture */
    return ck_read_model(st, v, key, err);
}

/* the config.json the architecture comes from when base_model has none
 * (model.py:22; utils/config/__init__.py:259-260 defaults it to base_model) */
static int read_base_model_config(ck_state *st, const ck_node *v, const char *key, char *err)
{
    if (ck_null(v)) return 0;
    put(st, AX_MODEL_CONFIG, true);
    return ck_read_model(st, v, key, err);
}

/* overrides of config.json (model_config, deprecated.py:147): the MoE router's
 * outputs change no shape; anything else may */
static int read_model_config(ck_state *st, const ck_node *v, const char *key, char *err)
{
    static const char *const neutral[] = {"output_router_logits", "router_aux_loss_coef", "use_cache"};
    if (ck_null(v)) return 0;
    if (v->kind != CK_MAP) return ck_bad(key, v, "want a map of config.json keys", err);
    for (const ck_node *k = v->child; k; k = k->next) {
        size_t i = 0;
        while (i < sizeof neutral / sizeof *neutral && strcmp(k->key, neutral[i])) i++;
        if (i == sizeof neutral / sizeof *neutral) {
            char why[160], q[64];
            snprintf(why, sizeof why, "overrides config.json's '%s', which may change the model's shapes",
                     mp_quote(k->key, q, sizeof q));
            return ck_refuse(key, why, err);
        }
    }
    return 0;
}

static int read_remote_code(ck_state *st, const ck_node *v, const char *key, char *err)
{
    bool on;
    if (read_bool(v, key, &on, err)) return -1;
    put(st, AX_REMOTE_CODE, on);
    return 0;
}

/* ---------- the adapter (peft.py) ---------- */

static int read_adapter(ck_state *st, const ck_node *v, const char *key, char *err)
{
    const char *a = ck_text(v);
    put(st, AX_LORA | AX_QLORA, false);
    if (ck_null(v)) return 0; /* empty: every parameter trains (peft.py:41) */
    if (!a) return ck_bad(key, v, "want lora or qlora", err);
    if (!strcmp(a, "lora")) put(st, AX_LORA, true);
    else if (!strcmp(a, "qlora")) put(st, AX_QLORA, true);
    else if (!strcmp(a, "llama-adapter")) return ck_refuse(key, "LLaMA-Adapter's prompts", err);
    else return ck_refuse(key, "an adapter a plugin provides (peft.py:177-199)", err);
    return 0;
}

static int read_lora_r(ck_state *st, const ck_node *v, const char *key, char *err)
{
    int64_t r;
    if (ck_null(v)) return 0;
    if (ck_int(v, &r) || r < 1 || r > 1 << 16) return ck_bad(key, v, "want a rank from 1 to 65536", err);
    st->s.lora_rank = r; /* applied in finish, with an adapter */
    return 0;
}

static int read_lora_dropout(ck_state *st, const ck_node *v, const char *key, char *err)
{
    double d;
    if (ck_null(v)) return 0;
    if (ck_real(v, &d) || d < 0 || d >= 1) return ck_bad(key, v, "want a probability from 0 to below 1", err);
    st->s.lora_dropout = (float)d;
    put(st, AX_DROPOUT, true);
    return 0;
}

/* a list of module names (PEFT matches each as a name), or one string, which
 * PEFT matches as a regex over module paths (config.py:1732-1751) */
static int read_lora_target_modules(ck_state *st, const ck_node *v, const char *key, char *err)
{
    const char *t = ck_text(v);
    put(st, AX_TARGET_REGEX, false);
    if (ck_null(v)) return 0;
    if (t && strcmp(t, "all-linear")) {
        put(st, AX_TARGET_REGEX, true);
        return 0;
    }
    if (has(st, AX_TARGET_LINEAR)) return 0; /* every linear module already */
    return ck_read_lora_targets(st, v, key, err);
}

/* every Linear module but the output head, added to lora_target_modules
 * (loaders/adapter.py:54-71, 174-182) */
static int read_lora_target_linear(ck_state *st, const ck_node *v, const char *key, char *err)
{
    bool on;
    if (read_bool(v, key, &on, err)) return -1;
    put(st, AX_TARGET_LINEAR, on);
    if (on) {
        snprintf(st->lora_modules, sizeof st->lora_modules, "all-linear");
        snprintf(st->lora_key, sizeof st->lora_key, "%s", key);
    }
    return 0;
}

static int read_load_in_4bit(ck_state *st, const ck_node *v, const char *key, char *err)
{
    bool on;
    if (read_bool(v, key, &on, err)) return -1;
    put(st, AX_LOAD4, on);
    return 0;
}

static int read_load_in_8bit(ck_state *st, const ck_node *v, const char *key, char *err)
{
    bool on;
    if (read_bool(v, key, &on, err)) return -1;
    put(st, AX_LOAD8, on);
    return 0;
}

/* PEFT keeps 16-bit adapters when told not to upcast (peft.py:124): the hf
 * profile counts PEFT's fp32 adapters */
static int read_autocast_adapter(ck_state *st, const ck_node *v, const char *key, char *err)
{
    bool on;
    if (ck_null(v)) return 0;
    if (ck_bool(v, &on)) return ck_bad(key, v, "want true or false", err);
    if (!on) return ck_refuse(key, "16-bit LoRA adapters (the hf profile counts PEFT's fp32 ones)", err);
    return 0;
}

/* the fused LoRA kernels (config.py:953-976), on by default for lora and qlora
 * when none of these keys is given (config.py:1899-2003) */
static int read_lora_kernel(ck_state *st, const ck_node *v, const char *key, char *err)
{
    bool on;
    if (ck_null(v)) return 0;
    if (ck_bool(v, &on)) return ck_bad(key, v, "want true or false", err);
    put(st, AX_KERNEL_SET, true);
    if (on) put(st, AX_KERNEL_ON, true);
    return 0;
}

/* ---------- the step ---------- */

static int read_sample_packing(ck_state *st, const ck_node *v, const char *key, char *err)
{
    bool on;
    if (read_bool(v, key, &on, err)) return -1;
    put(st, AX_PACKING, on);
    return 0;
}

static int read_pad_to_sequence_len(ck_state *st, const ck_node *v, const char *key, char *err)
{
    bool on;
    if (read_bool(v, key, &on, err)) return -1;
    put(st, AX_PAD, on);
    put(st, AX_PAD_GIVEN, !ck_null(v));
    return 0;
}

/* a batch padded to a multiple of N: past sequence_len unless N divides it (config.py:728) */
static int read_pad_to_multiple_of(ck_state *st, const ck_node *v, const char *key, char *err)
{
    int64_t n;
    if (ck_null(v)) return 0;
    if (ck_int(v, &n) || n < 1 || n > 1 << 24) return ck_bad(key, v, "want a whole number from 1", err);
    st->fmt_count[AX_MULTIPLE_OF] = n;
    return 0;
}

static int read_batch(ck_state *st, const ck_node *v, const char *key, char *err)
{
    return ck_null(v) ? 0 : ck_read_batch(st, v, key, err);
}

static int read_accum(ck_state *st, const ck_node *v, const char *key, char *err)
{
    return ck_null(v) ? 0 : ck_read_accum(st, v, key, err);
}

static int read_seq(ck_state *st, const ck_node *v, const char *key, char *err)
{
    return ck_null(v) ? 0 : ck_read_seq(st, v, key, err);
}

/* bf16: true, false or "auto" (the schema's default, config.py:559) */
static int read_bf16(ck_state *st, const ck_node *v, const char *key, char *err)
{
    bool on;
    const char *t = ck_text(v);
    put(st, AX_BF16_ON | AX_BF16_OFF, false);
    if (ck_null(v) || (t && !strcmp(t, "auto"))) return 0;
    if (ck_bool(v, &on)) return ck_bad(key, v, "want true, false or auto", err);
    put(st, on ? AX_BF16_ON : AX_BF16_OFF, true);
    return 0;
}

static int read_fp16(ck_state *st, const ck_node *v, const char *key, char *err)
{
    bool on;
    put(st, AX_FP16_ON | AX_FP16_OFF, false);
    if (ck_null(v)) return 0;
    if (ck_bool(v, &on)) return ck_bad(key, v, "want true or false", err);
    put(st, on ? AX_FP16_ON : AX_FP16_OFF, true);
    return 0;
}

/* pure 16-bit weights without autocast (config.py:582-591) */
static int read_bfloat16(ck_state *st, const ck_node *v, const char *key, char *err)
{
    bool on;
    if (read_bool(v, key, &on, err)) return -1;
    put(st, AX_BFLOAT16, on);
    return 0;
}

static int read_float16(ck_state *st, const ck_node *v, const char *key, char *err)
{
    bool on;
    if (read_bool(v, key, &on, err)) return -1;
    put(st, AX_FLOAT16, on);
    return 0;
}

/* The optimizer names axolotl accepts (tests/data/engines/axolotl_optimizers.txt):
 * its own (enums.py:83 CustomSupportedOptimizers) and transformers' OptimizerNames,
 * passed through as TrainingArguments.optim (core/builders/base.py:292-470). Those
 * memplan has a row for, with the step they run; the others are refused by name. */
static const struct { const char *name; mp_optimizer o; int step; } OPTIMIZERS[] = {
    {"adamw_torch", MP_ADAMW, MP_STEP_FOREACH}, {"adamw_torch_fused", MP_ADAMW, MP_STEP_FUSED},
    {"adamw_bnb_8bit", MP_ADAMW_8BIT, -1}, {"adamw_8bit", MP_ADAMW_8BIT, -1},
    {"paged_adamw_32bit", MP_PAGED_ADAMW, -1}, {"paged_adamw_8bit", MP_PAGED_ADAMW_8BIT, -1},
    {"sgd", MP_SGD, -1}, {"adafactor", MP_ADAFACTOR, -1}, {"lion_32bit", MP_LION, -1},
    {"adamw_torch_8bit", MP_ADAMW_8BIT_TORCHAO, -1}, {"adamw_torch_4bit", MP_ADAMW_4BIT_TORCHAO, -1},
};
static const char *const OTHER_OPTIMIZERS[] = {
    "optimi_adamw", "ao_adamw_4bit", "ao_adamw_8bit", "ao_adamw_fp8", "adopt_adamw", "came_pytorch", "muon",
    "dion", "sinkgd", "flash_adamw", "flash_adam", "flash_sgd", "flash_sgdw", "flash_lion", "q_galore_adamw8bit",
    "adamw_torch_xla", "adamw_torch_npu_fused", "adamw_apex_fused", "adamw_anyprecision", "ademamix", "adagrad",
    "ademamix_8bit", "lion_8bit", "paged_ademamix_32bit", "paged_ademamix_8bit", "paged_lion_32bit",
    "paged_lion_8bit", "rmsprop", "rmsprop_bnb", "rmsprop_bnb_8bit", "rmsprop_bnb_32bit", "galore_adamw",
    "galore_adamw_8bit", "galore_adafactor", "galore_adamw_layerwise", "galore_adamw_8bit_layerwise",
    "galore_adafactor_layerwise", "lomo", "adalomo", "grokadamw", "schedule_free_radam", "schedule_free_adamw",
    "schedule_free_sgd", "apollo_adamw", "apollo_adamw_layerwise", "stable_adamw",
};

static int set_optimizer(ck_state *st, const char *name, const char *key, const char *how)
{
    for (size_t i = 0; i < sizeof OPTIMIZERS / sizeof *OPTIMIZERS; i++) {
        if (strcmp(name, OPTIMIZERS[i].name)) continue;
        st->s.optimizer = OPTIMIZERS[i].o;
        if (OPTIMIZERS[i].step >= 0) {
            st->s.step_impl = (mp_step_impl)OPTIMIZERS[i].step;
            ck_set(st, "optimizer-impl", mp_step_impl_name(st->s.step_impl), key, how);
        }
        st->given |= MP_PIN_OPTIMIZER;
        ck_set(st, "optimizer", mp_optimizer_name(st->s.optimizer), key, how);
        return 0;
    }
    return -1;
}

static int read_optimizer(ck_state *st, const ck_node *v, const char *key, char *err)
{
    const char *name = ck_text(v);
    if (ck_null(v)) return 0;
    if (!name) return ck_bad(key, v, "want an optimizer's name", err);
    if (!set_optimizer(st, name, key, NULL)) return put(st, AX_OPTIMIZER, true), 0;
    for (size_t i = 0; i < sizeof OTHER_OPTIMIZERS / sizeof *OTHER_OPTIMIZERS; i++)
        if (!strcmp(name, OTHER_OPTIMIZERS[i])) {
            char why[128], q[48];
            snprintf(why, sizeof why, "optimizer '%s' keeps state memplan has no row for",
                     mp_quote(name, q, sizeof q));
            return ck_refuse(key, why, err);
        }
    return ck_bad(key, v, "want an optimizer axolotl knows (its own or transformers' OptimizerNames)", err);
}

/* true or false; "offload" and "offload_disk" also offload activations
 * (validation.py:1425-1442), which is not modelled */
static int read_gradient_checkpointing(ck_state *st, const ck_node *v, const char *key, char *err)
{
    bool on;
    const char *t = ck_text(v);
    if (ck_null(v)) return 0;
    if (t && (!strcmp(t, "offload") || !strcmp(t, "offload_disk")))
        return ck_refuse(key, "activations offloaded with the recompute (validation.py:1425-1442)", err);
    if (ck_bool(v, &on)) return ck_bad(key, v, "want true, false, offload or offload_disk", err);
    put(st, AX_CKPT_GIVEN, true);
    put(st, AX_CKPT, on);
    return 0;
}

/* gradient_checkpointing_enable's kwargs: use_reentrant recomputes the same layers
 * either way; the other arguments change nothing memplan counts */
static int read_gc_kwargs(ck_state *st, const ck_node *v, const char *key, char *err)
{
    if (ck_null(v)) return 0;
    if (v->kind != CK_MAP) return ck_bad(key, v, "want a map (use_reentrant: false)", err);
    const ck_node *r = ck_get(v, "use_reentrant");
    bool on;
    if (r && read_bool(r, "gradient_checkpointing_kwargs.use_reentrant", &on, err)) return -1;
    put(st, AX_REENTRANT, r && on);
    return 0;
}

/* torch_compile: true, false or "auto" (true with torch 2.5.1 or later: config.py:2040-2064) */
static int read_torch_compile(ck_state *st, const ck_node *v, const char *key, char *err)
{
    const char *t = ck_text(v);
    if (ck_null(v)) return 0;
    if (t && !strcmp(t, "auto")) {
        put(st, AX_COMPILE_AUTO, true);
        st->s.compile = true;
        ck_set(st, "compile", "on", key, "auto: on with torch 2.5.1 or later (config.py:2040-2064)");
        return 0;
    }
    put(st, AX_COMPILE_AUTO, false);
    return ck_read_compile(st, v, key, err);
}

/* CUDA graphs keep static buffers: not modelled */
static int read_torch_compile_mode(ck_state *st, const ck_node *v, const char *key, char *err)
{
    const char *t = ck_text(v);
    if (t && !strcmp(t, "reduce-overhead")) return ck_refuse(key, "CUDA graphs' static buffers", err);
    return 0;
}

/* ---------- attention ---------- */

/* attn_implementation (config.py:839): eager stores the scores; every other
 * backend axolotl names tiles them (schemas/enums.py CANONICAL_ATTN_IMPLS and
 * the hub kernels of ATTN_IMPLS_SUPPORTING_PACKING); all but eager and sdpa
 * have the embeddings cast back to 16 bits (ATTN_IMPLS_WITHOUT_DTYPE_CAST,
 * loaders/model.py:458-476) */
static int read_attn_implementation(ck_state *st, const ck_node *v, const char *key, char *err)
{
    static const char *const cast[] = {"flash_attention_2", "flash_attention_3", "flex_attention", "xformers",
                                       "sage", "kernels-community/flash-attn2", "kernels-community/flash-attn3",
                                       "kernels-community/sage-attention"};
    const char *a = ck_text(v);
    put(st, AX_ATTN_GIVEN | AX_ATTN_SDPA | AX_ATTN_CAST, false);
    if (ck_null(v)) return 0;
    if (!a) return ck_bad(key, v, "want an attention implementation", err);
    for (int i = 0; i < NLEGACY; i++)
        if (has(st, AX_LEGACY << i))
            return ck_refuse(key, "given with a legacy attention flag: axolotl refuses both (config.py:1546-1551)",
                             err);
    if (!strcmp(a, "flash") || !strcmp(a, "flex") || !strcmp(a, "sdp"))
        return ck_bad(key, v, "axolotl rejects the short form (enums.py SHORT_FORM_ALIAS_TO_CANONICAL): write "
                              "flash_attention_2, flex_attention or sdpa", err);
    if (!strcmp(a, "fp8")) return ck_refuse(key, "FP8 attention", err);
    bool tiled = !strcmp(a, "sdpa");
    for (size_t i = 0; i < sizeof cast / sizeof *cast && !tiled; i++)
        if (!strcmp(a, cast[i])) tiled = true, put(st, AX_ATTN_CAST, true);
    if (!tiled && strcmp(a, "eager")) {
        if (strchr(a, '/')) return ck_refuse(key, "a Hub attention kernel memplan has no row for", err);
        return ck_bad(key, v, "want eager, sdpa, flash_attention_2, flash_attention_3, flex_attention, xformers "
                              "or sage", err);
    }
    put(st, AX_ATTN_GIVEN, true);
    put(st, AX_ATTN_SDPA, !strcmp(a, "sdpa"));
    st->s.attention = tiled ? MP_ATTN_FLASH : MP_ATTN_EAGER;
    return 0;
}

static int read_legacy_attention(ck_state *st, const ck_node *v, const char *key, char *err)
{
    bool on;
    if (read_bool(v, key, &on, err)) return -1;
    for (int i = 0; i < NLEGACY; i++)
        if (!strcmp(key, LEGACY[i].flag)) {
            if (on && has(st, AX_ATTN_GIVEN))
                return ck_refuse(key, "given with attn_implementation: axolotl refuses both (config.py:1546-1551)",
                                 err);
            put(st, AX_LEGACY << i, on);
        }
    return 0;
}

/* ---------- sharding ---------- */

/* a DeepSpeed JSON's path, read beside the YAML or given as another FILE; axolotl
 * replaces the path with the file's JSON (utils/config/__init__.py:236-240) */
static int read_deepspeed(ck_state *st, const ck_node *v, const char *key, char *err)
{
    if (v && v->kind == CK_MAP)
        return ck_refuse(key, "a DeepSpeed config written inline (memplan reads it as a JSON file: give it as "
                              "another FILE)", err);
    return ck_read_deepspeed_ref(st, v, key, err);
}

/* transformers' FSDP options, which axolotl passes through as
 * TrainingArguments.fsdp (core/builders/base.py:684-686) */
static int read_fsdp(ck_state *st, const ck_node *v, const char *key, char *err)
{
    if (ck_null(v)) return 0;
    if (v->kind != CK_LIST) return ck_bad(key, v, "want a list of FSDP options (full_shard, auto_wrap...)", err);
    for (const ck_node *i = v->child; i; i = i->next) {
        const char *t = ck_text(i);
        if (!t) return ck_bad(key, v, "want FSDP options", err);
        if (!strcmp(t, "shard_grad_op") || !strcmp(t, "hybrid_shard_zero2")) put(st, AX_SHARD_GRAD_OP, true);
        else if (!strcmp(t, "no_shard")) put(st, AX_NO_SHARD, true);
        else if (!strcmp(t, "offload")) {
            put(st, AX_FSDP_OFFLOAD, true);
            ck_set(st, "offload", mp_offload_name(MP_OFFLOAD_PARAMS), key,
                   "FSDP's CPU offload: parameters, gradients and the optimizer step on the host");
        }
        else if (strcmp(t, "full_shard") && strcmp(t, "hybrid_shard") && strcmp(t, "auto_wrap"))
            return ck_bad(key, v, "want full_shard, shard_grad_op, hybrid_shard, no_shard, offload or auto_wrap", err);
    }
    if (v->child) put(st, AX_FSDP, true);
    return 0;
}

static int read_fsdp_version(ck_state *st, const ck_node *v, const char *key, char *err)
{
    int64_t n;
    if (ck_null(v)) return 0;
    if (ck_int(v, &n) || n < 1 || n > 2) return ck_bad(key, v, "want 1 or 2", err);
    put(st, AX_FSDP2, n == 2);
    if (!strncmp(key, "fsdp_config.", 12)) put(st, AX_FSDP, true);
    return 0;
}

/* fsdp_config's keys, with or without the old fsdp_ prefix (validation.py:1083-1103) */
static int fsdp_flag(ck_state *st, const ck_node *v, const char *key, uint64_t bit, bool when, char *err)
{
    bool on;
    put(st, AX_FSDP, true);
    if (read_bool(v, key, &on, err)) return -1;
    if (!ck_null(v)) put(st, bit, on == when);
    return 0;
}

/* FSDP's CPU offload keeps parameters, gradients and the optimizer step on the host */
static int read_fsdp_offload(ck_state *st, const ck_node *v, const char *key, char *err)
{
    if (fsdp_flag(st, v, key, AX_FSDP_OFFLOAD, true, err)) return -1;
    if (has(st, AX_FSDP_OFFLOAD))
        ck_set(st, "offload", mp_offload_name(MP_OFFLOAD_PARAMS), key, "FSDP's CPU offload: parameters, gradients "
                                                                      "and the optimizer step on the host");
    return 0;
}

static int read_fsdp_ckpt(ck_state *st, const ck_node *v, const char *key, char *err)
{
    return fsdp_flag(st, v, key, AX_FSDP_CKPT, true, err);
}

static int read_fsdp_reshard(ck_state *st, const ck_node *v, const char *key, char *err)
{
    return fsdp_flag(st, v, key, AX_RESHARD_OFF, false, err);
}

/* a key of fsdp_config that changes nothing memplan counts: it marks FSDP on */
static int read_fsdp_neutral(ck_state *st, const ck_node *v, const char *key, char *err)
{
    put(st, AX_FSDP, true);
    return 0;
}

/* ---------- Ray Train: its workers are the GPUs (integrations.py:160-173) ---------- */

static int read_use_ray(ck_state *st, const ck_node *v, const char *key, char *err)
{
    bool on;
    if (read_bool(v, key, &on, err)) return -1;
    put(st, AX_RAY, on);
    return 0;
}

static int read_ray_workers(ck_state *st, const ck_node *v, const char *key, char *err)
{
    int64_t n;
    if (ck_null(v)) return 0;
    if (ck_int(v, &n) || n < 1 || n > 4096) return ck_bad(key, v, "want 1 to 4096 workers", err);
    st->fmt_count[AX_RAY_WORKERS] = n;
    return 0;
}

/* ---------- preference training (rl) ----------
 * rl (schemas/config.py:262, enums.py:28-38 RLType) picks TRL's trainer
 * (core/builders/rl.py:55-91 @067b021c): dpo and ipo DPOTrainer (ipo is
 * loss_type ["ipo"]: core/trainers/dpo/__init__.py:30-31), orpo ORPOTrainer,
 * simpo CPOTrainer with loss_type simpo (rl.py:134-142); kto, grpo, gdpo and
 * ebft are refused. The reference (train.py:137-154): none for orpo; under an
 * adapter none is loaded and TRL disables the adapter (dpo_trainer.py
 * 894-898 @f2cd5771); a full fine-tune loads a second model and passes it to
 * DPOTrainer (rl.py:71-73), which keeps it even with precompute_ref_log_probs
 * (dpo_trainer.py 909-910). (simpo loads one too and never passes it: freed
 * before training when the builder goes, not counted.) sequence_len is every
 * RL trainer's max_length (core/builders/base.py:680-682). */
#define AX_PREF_PRECOMPUTE 1u /* precompute_ref_log_probs: true (st->pref_bits) */
#define AX_PREF_LOSS_IPO   2u /* dpo_loss_type: [ipo] */

static int read_rl(ck_state *st, const ck_node *v, const char *key, char *err)
{
    static const struct { const char *rl, *why; } refused[] = {
        {"kto", "rl: kto (KTOTrainer: unpaired rows, a KL batch, a reference)"},
        {"grpo", "rl: grpo (GRPOTrainer: generation, reward functions, a rollout engine)"},
        {"gdpo", "rl: gdpo (GRPOTrainer with several rewards: generation and a rollout engine)"},
        {"ebft", "rl: ebft (its own trainer and generation)"},
    };
    const char *t = ck_text(v);
    if (ck_null(v)) return 0;
    if (!t || v->kind != CK_SCALAR) return ck_bad(key, v, "want dpo, ipo, orpo, simpo, kto, grpo, gdpo or ebft", err);
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++)
        if (!strcmp(t, refused[i].rl)) return ck_refuse(key, refused[i].why, err);
    mp_method m;
    if (!strcmp(t, "dpo")) m = MP_METHOD_DPO;
    else if (!strcmp(t, "ipo")) m = MP_METHOD_IPO;
    else if (!strcmp(t, "orpo")) m = MP_METHOD_ORPO;
    else if (!strcmp(t, "simpo")) m = MP_METHOD_SIMPO;
    else return ck_bad(key, v, "want dpo, ipo, orpo, simpo, kto, grpo, gdpo or ebft", err);
    st->pref_method = m + 1;
    snprintf(st->pref_key, sizeof st->pref_key, "%s", key);
    return 0;
}

/* dpo_loss_type (config.py:329, a list of at least one), passed as loss_type for rl: dpo only */
static int read_dpo_loss_type(ck_state *st, const ck_node *v, const char *key, char *err)
{
    if (ck_null(v)) return 0;
    if (v->kind != CK_LIST || !v->child) return ck_bad(key, v, "want a list of one loss name", err);
    const char *t = ck_text(v->child);
    if (!t || v->child->kind != CK_SCALAR) return ck_bad(key, v, "want a list of one loss name", err);
    if (v->child->next)
        return ck_refuse(key, "several DPO losses combined (dpo_loss_weights): memplan has no row for the mix", err);
    if (!strcmp(t, "ipo")) st->pref_bits |= AX_PREF_LOSS_IPO;
    else if (strcmp(t, "sigmoid")) {
        char q[48], why[160];
        snprintf(why, sizeof why, "DPO loss '%s', which memplan has no row for (it models sigmoid and ipo)",
                 mp_quote(t, q, sizeof q));
        return ck_refuse(key, why, err);
    }
    return 0;
}

static int read_precompute(ck_state *st, const ck_node *v, const char *key, char *err)
{
    bool on;
    if (read_bool(v, key, &on, err)) return -1;
    if (on) st->pref_bits |= AX_PREF_PRECOMPUTE;
    else st->pref_bits &= ~AX_PREF_PRECOMPUTE;
    return 0;
}

static int finish_rl(ck_state *st, char *err)
{
    if (!st->pref_method) return ck_preference(st, NULL, "TRL's default", err);
    mp_method m = (mp_method)(st->pref_method - 1);
    if (m == MP_METHOD_DPO && (st->pref_bits & AX_PREF_LOSS_IPO)) {
        st->pref_method = MP_METHOD_IPO + 1;
        snprintf(st->pref_key, sizeof st->pref_key, "dpo_loss_type");
    }
    bool dpo = m == MP_METHOD_DPO || m == MP_METHOD_IPO, lora = st->s.lora_rank > 0;
    const char *ref_how = lora ? "an adapter: no reference loaded (train.py:139-142), TRL disables the adapter "
                                 "(dpo_trainer.py 894-898)"
                               : "a full fine-tune: axolotl loads a second model (train.py:143-153) for DPOTrainer";
    if (dpo && (st->pref_bits & AX_PREF_PRECOMPUTE)) {
        snprintf(st->pref_ref_key, sizeof st->pref_ref_key, "precompute_ref_log_probs");
        if (lora) {
            st->pref_ref = MP_REF_PRECOMPUTED;
            ref_how = "computed before training with the adapter disabled, kept on the host (dpo_trainer.py 957-978)";
        } else {
            st->pref_ref = MP_REF_MODEL;
            ref_how = "a full fine-tune: axolotl still loads and passes a reference model (train.py:143-153), which "
                      "TRL keeps with precompute_ref_log_probs (dpo_trainer.py 909-910)";
            note(st, "precompute_ref_log_probs with a full fine-tune: the reference model axolotl passes stays in "
                     "memory; memplan counts it and its forward each step: an upper bound");
        }
    }
    return ck_preference(st, "axolotl's rl (core/builders/rl.py:55-91)", ref_how, err);
}

/* The keys: each a row. read NULL: known, and nothing memplan counts (logging,
 * data, schedules, evaluation, saving, the hub); a key the RL trainers alone
 * read is known too (rl itself is refused). */
#define FSDP_KEY(name, fn) {"fsdp_config." name, fn}, {"fsdp_config.fsdp_" name, fn}
static const ck_key keys[] = {
    /* the model (model.py, deprecated.py's remapped names) */
    {"base_model", read_base_model}, {"base_model_config", read_base_model_config},
    {"model_config", read_model_config}, {"overrides_of_model_config", read_model_config},
    {"model_kwargs", refuse_set}, {"overrides_of_model_kwargs", refuse_set},
    {"model_type", NULL}, {"type_of_model", NULL}, {"model_revision", NULL}, {"revision_of_model", NULL},
    {"cls_model_config", NULL}, {"tokenizer_config", NULL}, {"tokenizer_use_fast", NULL}, {"tokenizer_legacy", NULL},
    {"tokenizer_use_mistral_common", NULL}, {"tokenizer_type", NULL}, {"tokenizer_save_jinja_files", NULL},
    {"processor_type", refuse_set}, {"processor_kwargs", refuse_set}, {"trust_remote_code", read_remote_code},
    {"experimental_skip_move_to_device", NULL}, {"use_kernels", refuse_set},
    {"model_quantization_config", refuse_set}, {"model_quantization_config_kwargs", refuse_set},
    {"use_onebitllms", refuse_set},
    /* the adapter (peft.py) */
    {"adapter", read_adapter}, {"lora_model_dir", NULL}, {"lora_r", read_lora_r}, {"lora_alpha", NULL},
    {"lora_fan_in_fan_out", NULL}, {"lora_target_modules", read_lora_target_modules},
    {"lora_target_linear", read_lora_target_linear}, {"lora_target_parameters", refuse_set},
    {"lora_modules_to_save", refuse_set}, {"lora_rank_pattern", refuse_set}, {"lora_alpha_pattern", NULL},
    {"lora_dropout", read_lora_dropout}, {"peft_layers_to_transform", refuse_set},
    {"peft_layers_pattern", refuse_set}, {"peft", refuse_set}, {"peft_use_dora", refuse_set},
    {"peft_use_rslora", NULL}, {"peft_layer_replication", refuse_set}, {"peft_init_lora_weights", NULL},
    {"peft_trainable_token_indices", refuse_set}, {"peft_ensure_weight_tying", NULL},
    {"peft_autocast_adapter_dtype", read_autocast_adapter},
    /* shard-by-shard loading changes the load, not the step */
    {"qlora_sharded_model_loading", NULL},
    {"lora_on_cpu", refuse_set}, {"gptq", refuse_set}, {"bnb_config_kwargs", refuse_set},
    {"load_in_8bit", read_load_in_8bit}, {"load_in_4bit", read_load_in_4bit},
    {"loraplus_lr_ratio", NULL}, {"loraplus_lr_embedding", NULL}, {"merge_lora", NULL}, {"merge_method", NULL},
    {"relora", refuse_set}, {"relora_prune_ratio", NULL}, {"relora_prune_method", NULL}, {"relora_cpu_offload", NULL},
    {"jagged_restart_steps", NULL}, {"jagged_restart_warmup_steps", NULL}, {"jagged_restart_anneal_steps", NULL},
    {"lora_mlp_kernel", read_lora_kernel}, {"lora_qkv_kernel", read_lora_kernel}, {"lora_o_kernel", read_lora_kernel},
    {"lora_embedding_kernel", read_lora_kernel},
    /* the step (training.py, config.py) */
    {"micro_batch_size", read_batch}, {"gradient_accumulation_steps", read_accum},
    /* batch_size derives the accumulation only when gradient_accumulation_steps is
     * null, whose schema default is 1 (training.py:71; utils/config/__init__.py:199-205) */
    {"batch_size", NULL},
    /* evaluation runs without gradients or optimizer state */
    {"eval_batch_size", NULL}, {"eval_sequence_len", NULL}, {"eval_sample_packing", NULL},
    /* the batch memplan checks is the one configured; transformers may halve it after an OOM */
    {"auto_find_batch_size", NULL},
    {"sequence_len", read_seq}, {"sample_packing", read_sample_packing},
    {"pad_to_sequence_len", read_pad_to_sequence_len}, {"pad_to_multiple_of", read_pad_to_multiple_of},
    {"excess_length_strategy", NULL}, {"min_sample_len", NULL}, {"sample_packing_group_size", NULL},
    {"sample_packing_bin_size", NULL}, {"sample_packing_sequentially", NULL}, {"sample_packing_mp_start_method", NULL},
    {"sample_packing_eff_est", NULL}, {"multipack_real_batches", NULL}, {"curriculum_sampling", NULL},
    /* padding-free batches hold at most the padded batch memplan counts */
    {"batch_flattening", NULL},
    {"use_pose", NULL}, {"pose_split_on_token_ids", NULL}, {"pose_max_context_len", NULL}, {"pose_num_chunks", NULL},
    {"pretrain_multipack_buffer_size", NULL}, {"pretrain_multipack_attn", NULL},
    {"pretraining_sample_concatenation", NULL}, {"streaming", NULL}, {"streaming_multipack_buffer_size", NULL},
    {"bf16", read_bf16}, {"fp16", read_fp16}, {"bfloat16", read_bfloat16}, {"float16", read_float16},
    /* resolve_dtype never reads float32 (utils/config/__init__.py:189-196) */
    {"float32", NULL}, {"tf32", NULL}, {"fp8", refuse_set}, {"fp8_enable_fsdp_float8_all_gather", NULL},
    /* the embeddings are cast back to 16 bits for an adapter (loaders/model.py:447-476) */
    {"embeddings_skip_upcast", NULL},
    {"optimizer", read_optimizer}, {"optim_args", NULL}, {"optim_target_modules", NULL}, {"torchdistx_path", NULL},
    {"gradient_checkpointing", read_gradient_checkpointing}, {"gradient_checkpointing_kwargs", read_gc_kwargs},
    {"selective_checkpointing", refuse_set}, {"activation_offloading", refuse_set}, {"layer_offloading", refuse_set},
    {"unfrozen_parameters", refuse_set}, {"freeze_mm_modules", NULL},
    {"torch_compile", read_torch_compile}, {"torch_compile_backend", NULL},
    {"torch_compile_mode", read_torch_compile_mode}, {"torch_compile_options", NULL},
    /* attention (config.py:784-915) */
    {"attn_implementation", read_attn_implementation}, {"xformers_attention", read_legacy_attention},
    {"sage_attention", read_legacy_attention}, {"flex_attention", read_legacy_attention},
    {"flash_attention", read_legacy_attention}, {"sdp_attention", read_legacy_attention},
    {"eager_attention", read_legacy_attention}, {"flex_attn_compile_kwargs", NULL},
    /* variants of tiled kernels: what they keep is what tiling keeps */
    {"gemma4_hybrid_attn_impl", NULL}, {"large_head_attention", NULL}, {"flash_attn_d512", NULL},
    {"sdpa_varlen", NULL}, {"fused_attn_kernel", NULL}, {"scaling_softmax", NULL}, {"scaling_softmax_factor", NULL},
    {"scaling_softmax_bias", NULL}, {"heads_k_stride", NULL}, {"ring_attn_func", NULL},
    {"flash_attn_cross_entropy", refuse_set}, {"flash_attn_fuse_mlp", refuse_set}, {"flash_optimum", refuse_set},
    {"experts_implementation", refuse_set}, {"quantize_moe_experts", refuse_set},
    {"llama4_linearized_experts", NULL},
    {"chunked_cross_entropy", refuse_set}, {"chunked_cross_entropy_num_chunks", NULL},
    {"use_eaft", refuse_set}, {"eaft_alpha", NULL}, {"eaft_k", NULL},
    {"tiled_mlp", refuse_set}, {"tiled_mlp_num_shards", NULL}, {"tiled_mlp_use_original_mlp", NULL},
    /* sharding and parallelism */
    {"deepspeed", read_deepspeed}, {"deepcompile", refuse_set}, {"fsdp", read_fsdp},
    {"fsdp_version", read_fsdp_version},
    FSDP_KEY("version", read_fsdp_version), FSDP_KEY("offload_params", read_fsdp_offload),
    FSDP_KEY("activation_checkpointing", read_fsdp_ckpt), FSDP_KEY("reshard_after_forward", read_fsdp_reshard),
    FSDP_KEY("sync_module_states", read_fsdp_neutral), FSDP_KEY("cpu_ram_efficient_loading", read_fsdp_neutral),
    FSDP_KEY("cpu_offload_pin_memory", read_fsdp_neutral), FSDP_KEY("use_orig_params", read_fsdp_neutral),
    FSDP_KEY("state_dict_type", read_fsdp_neutral), FSDP_KEY("final_state_dict_type", read_fsdp_neutral),
    FSDP_KEY("auto_wrap_policy", read_fsdp_neutral), FSDP_KEY("transformer_layer_cls_to_wrap", read_fsdp_neutral),
    FSDP_KEY("min_num_params", read_fsdp_neutral), FSDP_KEY("mixed_precision_policy", refuse_set),
    /* no fields of FSDPConfig: pydantic drops them (fsdp.py:10-85); the fsdp list shards */
    FSDP_KEY("sharding_strategy", read_fsdp_neutral), FSDP_KEY("limit_all_gathers", read_fsdp_neutral),
    FSDP_KEY("backward_prefetch", read_fsdp_neutral), FSDP_KEY("forward_prefetch", read_fsdp_neutral),
    /* FSDP2 keeps norms in fp32 (config.py:1056): a few vectors */
    {"fp32_norms", NULL}, {"fp32_norm_classes", NULL}, {"fsdp_final_state_dict_type", NULL},
    {"dp_shard_size", refuse_parallel}, {"dp_replicate_size", refuse_parallel},
    {"sequence_parallel_degree", refuse_parallel}, {"context_parallel_size", refuse_parallel},
    {"tensor_parallel_size", refuse_parallel},
    {"use_ray", read_use_ray}, {"ray_num_workers", read_ray_workers}, {"ray_run_name", NULL},
    {"resources_per_worker", NULL},
    {"device", NULL}, {"device_map", refuse_set}, {"world_size", NULL}, {"local_rank", NULL}, {"ddp", NULL},
    {"ddp_timeout", NULL}, {"ddp_bucket_cap_mb", refuse_set}, {"ddp_broadcast_buffers", NULL},
    {"ddp_find_unused_parameters", NULL}, {"accelerator_config", NULL},
    {"max_memory", refuse_set}, {"gpu_memory_limit", refuse_set}, {"low_cpu_mem_usage", NULL},
    /* empty_cache between steps returns reserved memory; the step's peak is the same */
    {"torch_empty_cache_steps", NULL}, {"gc_steps", NULL}, {"gc_collect_steps", NULL},
    /* what trains, other than an adapter or everything: not modelled */
    {"rl", read_rl}, {"reward_model", refuse_set}, {"process_reward_model", refuse_set},
    {"lisa_n_layers", refuse_set}, {"lisa_step_interval", NULL}, {"lisa_layers_attribute", NULL},
    {"qat", refuse_set}, {"trainer_cls", refuse_set}, {"plugins", refuse_set},
    {"cut_cross_entropy", refuse_set}, {"liger_fused_linear_cross_entropy", refuse_set},
    {"liger_rms_norm", refuse_set}, {"liger_glu_activation", refuse_set}, {"liger_rope", refuse_set},
    {"liger_cross_entropy", refuse_set},
    /* read by the RL trainers (rl, above): the reference and the loss; the rest
     * scalars of the loss, KTO's (refused by rl) and GRPO's (likewise) */
    {"precompute_ref_log_probs", read_precompute}, {"dpo_loss_type", read_dpo_loss_type},
    {"trl", NULL}, {"vllm", NULL}, {"ebft", NULL}, {"center_rewards_coefficient", NULL}, {"num_labels", NULL},
    {"dpo_use_weighting", NULL}, {"dpo_label_smoothing", NULL}, 
    {"dpo_use_liger_kernel", NULL}, {"dpo_padding_free", NULL}, {"dpo_loss_weights", NULL},
    {"max_prompt_len", NULL}, {"orpo_alpha", NULL}, {"simpo_gamma", NULL}, {"cpo_alpha", NULL},
    {"kto_desirable_weight", NULL}, {"kto_undesirable_weight", NULL}, {"rl_beta", NULL}, {"dpo_beta", NULL},
    {"dpo_use_logits_to_keep", NULL}, {"dpo_generate_during_eval", NULL}, {"dpo_norm_loss", NULL},
    {"rpo_alpha", NULL},
    /* the vocabulary grows only where the tokenizer outgrows the embedding (loaders/model.py:370-391) */
    {"special_tokens", NULL}, {"tokens", NULL}, {"added_tokens_overrides", NULL},
    {"resize_token_embeddings_to_32x", NULL}, {"mean_resizing_embeddings", NULL}, {"shrink_embeddings", NULL},
    {"reinit_weights", NULL}, {"chat_template", NULL}, {"chat_template_jinja", NULL}, {"chat_template_kwargs", NULL},
    {"eot_tokens", NULL}, {"default_system_message", NULL}, {"fix_untrained_tokens", NULL},
    /* data */
    {"datasets", NULL}, {"test_datasets", NULL}, {"shuffle_merged_datasets", NULL},
    {"shuffle_before_merging_datasets", NULL}, {"dataset_prepared_path", NULL}, {"dataset_shard_num", NULL},
    {"dataset_shard_idx", NULL}, {"skip_prepare_dataset", NULL}, {"num_dataset_shards_to_save", NULL},
    {"pretraining_dataset", NULL}, {"dataset_processes", NULL}, {"dataset_num_proc", NULL},
    {"dataset_exact_deduplication", NULL}, {"dataset_keep_in_memory", NULL}, {"dataloader_pin_memory", NULL},
    {"dataloader_num_workers", NULL}, {"dataloader_prefetch_factor", NULL}, {"dataloader_drop_last", NULL},
    {"remove_unused_columns", NULL}, {"push_dataset_to_hub", NULL}, {"hf_use_auth_token", NULL},
    {"val_set_size", NULL}, {"train_on_inputs", NULL}, {"group_by_length", NULL}, {"is_preprocess", NULL},
    {"preprocess_iterable", NULL}, {"total_num_tokens", NULL}, {"total_supervised_tokens", NULL},
    {"image_size", NULL}, {"image_resize_algorithm", NULL}, {"role_boundaries", NULL},
    /* the schedule and the optimizer's hyper-parameters */
    {"learning_rate", NULL}, {"embedding_lr", NULL}, {"embedding_lr_scale", NULL}, {"weight_decay", NULL},
    {"lr_scheduler", NULL}, {"lr_scheduler_kwargs", NULL}, {"lr_quadratic_warmup", NULL},
    {"cosine_min_lr_ratio", NULL}, {"cosine_constant_lr_ratio", NULL}, {"lr_div_factor", NULL}, {"lr_groups", NULL},
    {"adam_epsilon", NULL}, {"adam_epsilon2", NULL}, {"adam_beta1", NULL}, {"adam_beta2", NULL}, {"adam_beta3", NULL},
    {"dion_lr", NULL}, {"dion_momentum", NULL}, {"dion_rank_fraction", NULL}, {"dion_rank_multiple_of", NULL},
    {"qgalore_rank", NULL}, {"qgalore_update_proj_gap", NULL}, {"qgalore_scale", NULL}, {"qgalore_proj_type", NULL},
    {"qgalore_proj_quant", NULL}, {"qgalore_proj_bits", NULL}, {"qgalore_proj_group_size", NULL},
    {"qgalore_cos_threshold", NULL}, {"qgalore_gamma_proj", NULL}, {"qgalore_queue_size", NULL},
    {"max_grad_norm", NULL}, {"num_epochs", NULL}, {"max_steps", NULL}, {"warmup_steps", NULL},
    {"warmup_ratio", NULL}, {"neftune_noise_alpha", NULL}, {"noisy_embedding_alpha", NULL}, {"seed", NULL},
    /* evaluation, saving, logging, the hub */
    {"output_dir", NULL}, {"hub_model_id", NULL}, {"hub_strategy", NULL}, {"hub_revision", NULL},
    {"save_safetensors", NULL}, {"strict", NULL}, {"resume_from_checkpoint", NULL},
    {"auto_resume_from_checkpoints", NULL}, {"dynamic_checkpoint", NULL}, {"eval_steps", NULL},
    {"evals_per_epoch", NULL}, {"eval_strategy", NULL}, {"evaluation_strategy", NULL}, {"save_steps", NULL},
    {"saves_per_epoch", NULL}, {"save_strategy", NULL}, {"save_total_limit", NULL}, {"save_first_step", NULL},
    {"save_only_model", NULL}, {"logging_steps", NULL}, {"early_stopping_patience", NULL},
    {"load_best_model_at_end", NULL}, {"metric_for_best_model", NULL}, {"greater_is_better", NULL},
    {"do_causal_lm_eval", NULL}, {"eval_causal_lm_metrics", NULL}, {"do_bench_eval", NULL}, {"bench_dataset", NULL},
    {"bench_split", NULL}, {"eval_table_size", NULL}, {"eval_max_new_tokens", NULL}, {"loss_watchdog_threshold", NULL},
    {"loss_watchdog_patience", NULL}, {"use_tensorboard", NULL}, {"profiler_steps", NULL},
    {"profiler_steps_start", NULL}, {"include_tokens_per_second", NULL}, {"include_tkps", NULL},
    {"generate_samples", NULL}, {"num_generation_samples", NULL}, {"generation_max_new_tokens", NULL},
    {"generation_temperature", NULL}, {"generation_top_p", NULL}, {"generation_top_k", NULL},
    {"generation_prompt_ratio", NULL}, {"generation_do_sample", NULL}, {"quantization", NULL},
    {"axolotl_config_path", NULL}, {"is_falcon_derived_model", NULL}, {"is_llama_derived_model", NULL},
    {"is_mistral_derived_model", NULL}, {"is_qwen_derived_model", NULL}, {"max_packed_sequence_len", NULL},
    {"rope_scaling", refuse_set}, {"s2_attention", refuse_set}, {"flash_attn_rms_norm", refuse_set},
    {"unsloth_lora_mlp", refuse_set}, {"unsloth_lora_qkv", refuse_set}, {"unsloth_lora_o", refuse_set},
    {"unsloth_cross_entropy_loss", refuse_set}, {"unsloth_rms_norm", refuse_set}, {"unsloth_rope", refuse_set},
    /* trackers (integrations.py) */
    {"use_wandb", NULL}, {"wandb_name", NULL}, {"wandb_run_id", NULL}, {"wandb_mode", NULL}, {"wandb_project", NULL},
    {"wandb_entity", NULL}, {"wandb_watch", NULL}, {"wandb_log_model", NULL}, {"use_mlflow", NULL},
    {"mlflow_tracking_uri", NULL}, {"mlflow_experiment_name", NULL}, {"mlflow_run_name", NULL},
    {"hf_mlflow_log_artifacts", NULL}, {"use_comet", NULL}, {"comet_api_key", NULL}, {"comet_workspace", NULL},
    {"comet_project_name", NULL}, {"comet_experiment_key", NULL}, {"comet_mode", NULL}, {"comet_online", NULL},
    {"comet_experiment_config", NULL}, {"use_trackio", NULL}, {"trackio_project_name", NULL},
    {"trackio_run_name", NULL}, {"trackio_space_id", NULL}, {"use_otel_metrics", NULL}, {"otel_metrics_host", NULL},
    {"otel_metrics_port", NULL}, {"gradio_title", NULL}, {"gradio_share", NULL}, {"gradio_server_name", NULL},
    {"gradio_server_port", NULL}, {"gradio_max_new_tokens", NULL}, {"gradio_temperature", NULL},
    {NULL, NULL},
};

static const char *const sections[] = {"fsdp_config", NULL};

/* axolotl's own keys (a Trainer's YAML has none of them): base_model is required
 * (model.py:17), the rest are axolotl's names */
static int detect(const ck_node *root)
{
    static const char *const own[] = {"micro_batch_size", "sequence_len", "num_epochs", "datasets", "val_set_size",
                                      "sample_packing", "dataset_prepared_path", "lora_target_linear", "adapter",
                                      "lr_scheduler", "special_tokens"};
    if (!ck_text(ck_get(root, "base_model"))) return 0;
    int n = 0;
    for (size_t i = 0; i < sizeof own / sizeof *own; i++) n += ck_get(root, own[i]) != NULL;
    return 10 + n;
}

/* ---------- finish: the defaults and autos, as axolotl resolves them ---------- */

/* resolve_dtype (utils/config/__init__.py:156-196): bf16 "auto" is bf16 where the
 * GPU has it, else fp16 unless fp16 or float16 says otherwise; the weights load in
 * the dtype that results (loaders/model.py:611-612). 1 bf16, 2 fp16, 0 fp32;
 * *key the key that decided, *autobf16 when bf16: auto decided. */
static int resolve_dtype(const ck_state *st, const char **key, bool *autobf16)
{
    bool bf16 = has(st, AX_BF16_ON), bf16_auto = !has(st, AX_BF16_ON | AX_BF16_OFF);
    bool fp16 = has(st, AX_FP16_ON), fp16_unset = !has(st, AX_FP16_ON | AX_FP16_OFF);
    bool gpu_bf16 = !st->gpu || st->gpu->bf16;
    *autobf16 = false;
    if (!fp16 && bf16_auto) {
        *autobf16 = true;
        bf16 = gpu_bf16;
        if (!gpu_bf16 && fp16_unset && !has(st, AX_FLOAT16)) fp16 = true;
    }
    if (bf16) fp16 = false;
    if (bf16 || has(st, AX_BFLOAT16)) return *key = bf16 ? "bf16" : "bfloat16", 1;
    if (has(st, AX_LOAD8) || fp16 || has(st, AX_FLOAT16)) {
        *key = fp16 ? "fp16" : has(st, AX_FLOAT16) ? "float16" : "load_in_8bit";
        return 2;
    }
    *autobf16 = false;
    return *key = "bf16", 0;
}

/* The attention implementation: attn_implementation, else the first legacy flag
 * set, else transformers' default (SDPA where the model declares it). */
static void resolve_attention(ck_state *st, const char **key, const char **impl)
{
    *key = "attn_implementation", *impl = NULL;
    if (has(st, AX_ATTN_GIVEN)) return;
    for (int i = 0; i < NLEGACY; i++)
        if (has(st, AX_LEGACY << i)) {
            const char *a = LEGACY[i].impl;
            *key = LEGACY[i].flag, *impl = a;
            put(st, AX_ATTN_SDPA, !strcmp(a, "sdpa"));
            put(st, AX_ATTN_CAST, strcmp(a, "sdpa") && strcmp(a, "eager"));
            st->s.attention = strcmp(a, "eager") ? MP_ATTN_FLASH : MP_ATTN_EAGER;
            return;
        }
    const mp_family *f = mp_family_of(st->c->model.family);
    *key = "(default)";
    st->s.attention = f && f->sdpa ? MP_ATTN_FLASH : MP_ATTN_EAGER;
    put(st, AX_ATTN_SDPA, st->s.attention == MP_ATTN_FLASH);
}

static int finish_adapter(ck_state *st, char *err)
{
    bool lora = has(st, AX_LORA), qlora = has(st, AX_QLORA);
    /* peft.py:177-224: k-bit loading needs an adapter; qlora needs 4-bit and not 8-bit */
    if (has(st, AX_LOAD4) && has(st, AX_LOAD8)) return ck_refuse("load_in_4bit", "with load_in_8bit as well", err);
    if (!lora && !qlora) {
        if (has(st, AX_LOAD4 | AX_LOAD8))
            return ck_refuse(has(st, AX_LOAD4) ? "load_in_4bit" : "load_in_8bit",
                             "a quantised base without an adapter (axolotl refuses it: peft.py:177-199)", err);
        st->s.lora_rank = 0, st->lora = false;
        return 0;
    }
    if (qlora && !has(st, AX_LOAD4))
        return ck_refuse("adapter", "qlora without load_in_4bit: true (axolotl refuses it: peft.py:201-224)", err);
    if (lora && has(st, AX_LOAD4))
        return ck_refuse("load_in_4bit", "with adapter: lora, axolotl loads the base unquantised (loaders/model.py:"
                                         "712) and PEFT's prepare_model_for_kbit_training casts it to fp32: use "
                                         "adapter: qlora", err);
    if (!st->s.lora_rank) return ck_refuse("adapter", "an adapter without lora_r (PEFT needs the rank)", err);
    if (has(st, AX_TARGET_REGEX) && !has(st, AX_TARGET_LINEAR))
        return ck_refuse("lora_target_modules", "one string is a regex over module paths: memplan cannot tell which "
                                                "modules it matches (list the module names)", err);
    if (!st->lora_modules[0])
        return ck_refuse("adapter", "no lora_target_modules and no lora_target_linear (PEFT finds no module)", err);
    st->lora = true;
    char r[24];
    snprintf(r, sizeof r, "%lld", (long long)st->s.lora_rank);
    st->given |= MP_PIN_LORA;
    ck_set(st, "lora-rank", r, "lora_r", NULL);
    /* an adapter's dropout is 0.0 unless given (peft.py:233-238) */
    if (!has(st, AX_DROPOUT)) st->s.lora_dropout = 0;
    char d[32];
    snprintf(d, sizeof d, "%g", (double)st->s.lora_dropout);
    ck_set(st, "lora-dropout", d, has(st, AX_DROPOUT) ? "lora_dropout" : "(default)",
           has(st, AX_DROPOUT) ? NULL : "0.0 with an adapter (peft.py:233-238)");
    if (qlora) {
        /* nf4 with double quantisation, computing in torch_dtype (loaders/model.py:712-720) */
        st->s.quant = MP_QUANT_NF4_DQ, st->quant_bits = 4, st->double_quant = true;
        ck_set(st, "quant", mp_quant_name(st->s.quant), "load_in_4bit",
               "adapter: qlora: NF4 with double quantisation (loaders/model.py:712-720)");
    } else if (has(st, AX_LOAD8)) {
        st->s.quant = MP_QUANT_INT8, st->quant_bits = 8;
        ck_set(st, "quant", mp_quant_name(st->s.quant), "load_in_8bit", NULL);
    }
    st->given |= MP_PIN_QUANT;
    return 0;
}

/* FSDP through transformers' fsdp options and accelerate's plugin: ZeRO-3 unless
 * shard_grad_op (or FSDP2 without resharding); accelerate upcasts what trains to
 * fp32 under mixed precision (its FSDP "Upcasted low precision parameters"), so
 * the masters are fp32 as under DeepSpeed. */
static int finish_fsdp(ck_state *st, char *err)
{
    if (!has(st, AX_FSDP)) return 0;
    if (st->deepspeed)
        return ck_refuse("fsdp", "with deepspeed as well (axolotl refuses both: validation.py:1224-1229)", err);
    st->fsdp = true, st->engine_masters = true;
    /* FSDP2 keeps the gathered weights between forward and backward without resharding */
    bool keep = has(st, AX_FSDP2) && has(st, AX_RESHARD_OFF);
    int z = has(st, AX_NO_SHARD) ? 0 : has(st, AX_SHARD_GRAD_OP) || keep ? 2 : 3;
    const char *key = has(st, AX_NO_SHARD | AX_SHARD_GRAD_OP) ? "fsdp"
                    : keep                                     ? "fsdp_config.reshard_after_forward"
                                                               : "(default)";
    st->s.zero = z, st->given |= MP_PIN_ZERO;
    char t[8];
    snprintf(t, sizeof t, "%d", z);
    ck_set(st, "zero", t, key, z == 3 && !strcmp(key, "(default)") ? "FSDP's full sharding as ZeRO-3"
                                                                      : "FSDP's sharding as a ZeRO stage");
    if (has(st, AX_FSDP_OFFLOAD)) {
        if (z != 3) return ck_refuse("fsdp_config.offload_params", "CPU offload without full sharding", err);
        st->s.offload = MP_OFFLOAD_PARAMS, st->given |= MP_PIN_OFFLOAD; /* its origin: the key's reader */
    }
    return 0;
}

static int finish(ck_state *st, char *err)
{
    /* the step's shape: axolotl's defaults (training.py:71-82; config.py:665) */
    if (!(st->given & MP_PIN_BATCH)) {
        st->s.batch = 1, st->given |= MP_PIN_BATCH;
        ck_set(st, "batch", "1", "(default)", "axolotl's micro_batch_size (training.py:77)");
    }
    if (!(st->given & MP_PIN_ACCUM)) {
        st->s.accum = 1, st->given |= MP_PIN_ACCUM;
        ck_set(st, "accum", "1", "(default)", "axolotl's gradient_accumulation_steps (training.py:71)");
    }
    bool packed = has(st, AX_PACKING), padded = has(st, AX_PAD) || (packed && !has(st, AX_PAD_GIVEN));
    bool seq_given = st->given & MP_PIN_SEQ;
    if (!seq_given) st->s.seq = 512, st->given |= MP_PIN_SEQ; /* config.py:665 */
    char seq[24];
    snprintf(seq, sizeof seq, "%lld", (long long)st->s.seq);
    int64_t mult = st->fmt_count[AX_MULTIPLE_OF];
    if (mult > 1 && st->s.seq % mult)
        return ck_refuse("pad_to_multiple_of", "pads batches past sequence_len (it does not divide it)", err);
    ck_set(st, "seq", seq, seq_given ? "sequence_len" : "(default)",
           packed   ? (seq_given ? "sample_packing: rows packed full (validation.py:228-242)"
                                 : "axolotl's sequence_len (config.py:665), rows packed full")
           : padded ? (seq_given ? "pad_to_sequence_len: every row padded to it"
                                 : "axolotl's sequence_len (config.py:665), every row padded to it")
                    : (seq_given ? "no packing: a batch padded to its longest row, at most this (an upper bound)"
                                 : "axolotl's sequence_len (config.py:665), at most (no packing)"));
    /* the adapter and what it trains */
    if (finish_adapter(st, err) || finish_fsdp(st, err) || finish_rl(st, err)) return -1;
    /* Ray Train: one worker a GPU */
    if (has(st, AX_RAY) && st->fmt_count[AX_RAY_WORKERS] > 0) {
        st->procs = st->fmt_count[AX_RAY_WORKERS];
        char g[24];
        snprintf(g, sizeof g, "%lld", (long long)st->procs);
        ck_set(st, "gpus", g, "ray_num_workers", "use_ray: one Ray worker a GPU");
    }
    /* checkpointing: off unless asked (config.py:600), each decoder layer when on,
     * use_reentrant false unless the kwargs say (core/builders/base.py:581-610) */
    if (has(st, AX_CKPT) || has(st, AX_FSDP_CKPT)) {
        st->s.checkpointing = MP_CKPT_FULL;
        ck_set(st, "checkpointing", "full", has(st, AX_CKPT) ? "gradient_checkpointing"
                                                             : "fsdp_config.activation_checkpointing",
               has(st, AX_REENTRANT) ? "use_reentrant: true" : "use_reentrant: false (axolotl's default kwargs)");
    } else {
        st->s.checkpointing = MP_CKPT_NONE;
        ck_set(st, "checkpointing", "none", has(st, AX_CKPT_GIVEN) ? "gradient_checkpointing" : "(default)",
               has(st, AX_CKPT_GIVEN) ? NULL : "axolotl's default: off (config.py:600)");
    }
    st->given |= MP_PIN_CKPT;
    /* the optimizer: adamw_torch_fused unless named (training.py:122) */
    if (!has(st, AX_OPTIMIZER)) set_optimizer(st, "adamw_torch_fused", "(default)", "axolotl's adamw_torch_fused");
    /* DeepSpeed's offload steps on the host: bitsandbytes' optimizers step CUDA tensors only */
    const mp_optimizer_desc *od = mp_optimizer_desc_of(st->s.optimizer);
    if (st->deepspeed && st->s.offload != MP_OFFLOAD_NONE && (od->low_bit || od->paged))
        return ck_refuse("optimizer", "a low-bit or paged optimizer under ZeRO-Offload, which steps on the CPU", err);
    /* attention */
    const char *akey, *impl;
    resolve_attention(st, &akey, &impl);
    char ahow[96] = "";
    if (impl) snprintf(ahow, sizeof ahow, "attn_implementation %s (schemas/enums.py LEGACY_ATTN_FLAG_TO_IMPL)", impl);
    st->given |= MP_PIN_ATTENTION;
    ck_set(st, "attention", mp_attention_name(st->s.attention), akey,
           !strcmp(akey, "(default)") ? "transformers' default: SDPA where the model declares it" : ahow);
    /* precision: the weights in torch_dtype; an engine's masters fp32 */
    const char *pkey;
    bool autobf16;
    int p16 = resolve_dtype(st, &pkey, &autobf16);
    bool lora = st->s.lora_rank > 0;
    if (p16 == 2 && !lora && !st->engine_masters)
        return ck_refuse(pkey, "full fine-tuning of fp16 weights (torch's GradScaler refuses to unscale fp16 "
                               "gradients; use bf16 or an adapter)", err);
    /* a full fine-tune off FSDP keeps the embeddings and the head in fp32 unless the
     * attention backend casts them back (loaders/model.py:427-476) */
    if (p16 && !lora && !st->fsdp && !st->engine_masters && !has(st, AX_ATTN_CAST))
        return ck_refuse(akey, "attention without the 16-bit cast: axolotl keeps a full fine-tune's embeddings and "
                               "head in fp32 over 16-bit layers (loaders/model.py:427-476), a mix memplan has no "
                               "precision for; use flash_attention_2", err);
    st->precision16 = autobf16 ? -1 : p16;
    st->pure16 = p16 != 0;
    ck_resolve_precision(st, pkey, p16 && !st->engine_masters ? "the weights load in that dtype (resolve_dtype)"
                                                             : NULL);
    /* what the estimate counts differently from axolotl, said */
    if (lora && !has(st, AX_KERNEL_SET) && !(st->s.quant == MP_QUANT_INT8) && !has(st, AX_REMOTE_CODE) &&
        !(st->fsdp && !has(st, AX_FSDP2)))
        note(st, "axolotl turns on its fused LoRA kernels here (config.py:1899-2003): they keep fewer activations "
                 "than the PEFT layers counted, so the estimate is an upper bound");
    else if (lora && has(st, AX_KERNEL_ON))
        note(st, "lora_*_kernel: axolotl's fused LoRA kernels keep fewer activations than the PEFT layers counted: "
                 "the estimate is an upper bound");
    if (st->s.quant != MP_QUANT_NONE && st->s.zero < 3)
        note(st, "axolotl casts a k-bit base's norms and embeddings back to 16 bits (loaders/model.py:447-476); "
                 "the hf profile counts them in fp32: a little high");
    if (packed && has(st, AX_ATTN_SDPA) && st->s.attention == MP_ATTN_FLASH)
        note(st, "sdpa with sample_packing: axolotl may mask the packed rows with a T x T block-diagonal mask "
                 "(config.py:882-895), which is not counted");
    return 0;
}

/* A change in axolotl's words. A full fine-tune in 16 bits needs a backend that
 * casts the embeddings back (finish), hence flash_attention_2 there. */
static int spell(const char *setting, const mp_settings *s, char *buf, size_t len)
{
    if (!strcmp(setting, "batch"))
        snprintf(buf, len, "micro_batch_size: %lld, gradient_accumulation_steps: %lld", (long long)s->batch,
                 (long long)s->accum);
    else if (!strcmp(setting, "checkpointing")) snprintf(buf, len, "gradient_checkpointing: true");
    else if (!strcmp(setting, "attention"))
        snprintf(buf, len, "attn_implementation: %s",
                 !s->lora_rank && s->precision != MP_FP32 ? "flash_attention_2" : "sdpa");
    else if (!strcmp(setting, "optimizer")) snprintf(buf, len, "optimizer: adamw_bnb_8bit");
    else if (!strcmp(setting, "seq")) snprintf(buf, len, "sequence_len: %lld", (long long)s->seq);
    else if (!strcmp(setting, "lora"))
        snprintf(buf, len, "adapter: lora, lora_r: %lld, lora_target_linear: true", (long long)s->lora_rank);
    else if (!strcmp(setting, "quant")) snprintf(buf, len, "adapter: qlora, load_in_4bit: true");
    else return -1;
    return 0;
}

const ck_format ck_format_axolotl = {
    .name = "axolotl", .framework = "hf", .detect = detect, .keys = keys, .sections = sections,
    .finish = finish, .spell = spell,
};

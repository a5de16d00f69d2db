/* trainer.c — transformers' TrainingArguments and TRL's configs as YAML or JSON
 * (`trl sft --config`, alignment-handbook's recipes): the keys that change
 * memory, and their defaults, as tests/data/engines/trainer_config_keys.csv
 * tabulates them from transformers@00349ae8 training_args.py and
 * trl@f2cd5771 (main) / trl@accf7383 (v0.19.1, alignment-handbook's):
 * ModelConfig's model and PEFT keys, SFTConfig's sequence and packing,
 * _BaseConfig's defaults (gradient_checkpointing and bf16 on). */
#include "check/reader.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "common/errors.h"
#include "model/family.h"
#include "model/model.h"
#include "profiles/profiles.h"
#include "settings/vocabulary.h"

/* A TRL config, not a bare TrainingArguments: TRL's own keys are there. */
static bool trl_keys(const ck_node *root)
{
    static const char *const keys[] = {"use_peft", "max_seq_length", "max_length", "packing", "dataset_text_field",
                                       "lora_r", "torch_dtype", "dtype", "model_name_or_path", "dataset_mixture",
                                       "dataset_name", "chat_template", "load_in_4bit", "beta", "loss_type",
                                       "precompute_ref_log_probs"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        if (ck_get(root, keys[i])) return true;
    return false;
}

static int detect(const ck_node *root)
{
    static const char *const keys[] = {"per_device_train_batch_size", "gradient_accumulation_steps",
                                       "learning_rate", "num_train_epochs", "output_dir", "max_steps"};
    int n = 0;
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) n += ck_get(root, keys[i]) != NULL;
    return n ? 1 + n + trl_keys(root) : 0;
}

/* ---------- the model, as TRL's ModelConfig loads it ---------- */

static int read_dtype(ck_state *st, const ck_node *v, const char *key, char *err)
{
    const char *t = ck_text(v);
    if (ck_null(v)) return 0;
    if (!t) return ck_bad(key, v, "want bfloat16, float16, float32 or auto", err);
    /* the weights as loaded: 16-bit ones are trained as they are (no fp32 copy) */
    if (!strcmp(t, "bfloat16") || !strcmp(t, "float16") || !strcmp(t, "auto")) st->pure16 = true;
    else if (!strcmp(t, "float32")) st->pure16 = false, st->fp32_load = true;
    else return ck_bad(key, v, "want bfloat16, float16, float32 or auto", err);
    return 0;
}

static int read_use_peft(ck_state *st, const ck_node *v, const char *key, char *err)
{
    bool on;
    if (ck_bool(v, &on)) return ck_bad(key, v, "want true or false", err);
    st->lora = on, st->trl = true;
    return 0;
}

/* TRL's ModelConfig and SFTConfig keys: a TRL config, with TRL's defaults */
static int read_trl_model(ck_state *st, const ck_node *v, const char *key, char *err)
{
    st->trl = true;
    if (!st->sft_model) return ck_read_model(st, v, key, err);
    return ck_text(v) ? 0 : ck_bad(key, v, "want a model's Hub id or folder", err); /* PPO's policy: sft_model_path */
}

static int read_trl_seq(ck_state *st, const ck_node *v, const char *key, char *err)
{
    st->trl = true;
    return ck_null(v) ? 0 : ck_read_seq(st, v, key, err);
}

static int refuse_flag(const ck_node *v, const char *key, const char *why, char *err)
{
    bool on;
    if (ck_null(v) || (!ck_bool(v, &on) && !on)) return 0;
    return ck_refuse(key, why, err);
}

static int refuse_dora(ck_state *st, const ck_node *v, const char *key, char *err)
{
    return refuse_flag(v, key, "DoRA's magnitude vectors and their activations", err);
}

static int refuse_modules_to_save(ck_state *st, const ck_node *v, const char *key, char *err)
{
    if (ck_null(v) || (v->kind == CK_LIST && !v->child)) return 0;
    return ck_refuse(key, "modules trained in full beside the adapter", err);
}

static int read_lora_r(ck_state *st, const ck_node *v, const char *key, char *err)
{
    int64_t r;
    if (ck_int(v, &r) || r < 1 || r > 1 << 16) return ck_bad(key, v, "want a rank from 1 to 65536", err);
    st->s.lora_rank = r; /* applied only with use_peft (finish) */
    return 0;
}

static int read_4bit(ck_state *st, const ck_node *v, const char *key, char *err)
{
    bool on;
    if (ck_bool(v, &on)) return ck_bad(key, v, "want true or false", err);
    if (on) st->quant_bits = 4;
    return 0;
}

static int read_8bit(ck_state *st, const ck_node *v, const char *key, char *err)
{
    bool on;
    if (ck_bool(v, &on)) return ck_bad(key, v, "want true or false", err);
    if (on && st->quant_bits == 4) return ck_refuse(key, "4-bit and 8-bit at once (transformers refuses both)", err);
    if (on) st->quant_bits = 8;
    return 0;
}

static int read_quant_type(ck_state *st, const ck_node *v, const char *key, char *err)
{
    const char *t = ck_text(v);
    if (!t || (strcmp(t, "nf4") && strcmp(t, "fp4"))) return ck_bad(key, v, "want nf4 or fp4", err);
    return 0; /* FP4 stores the same 4 bits and scales as NF4 */
}

static int read_nested_quant(ck_state *st, const ck_node *v, const char *key, char *err)
{
    bool on;
    if (ck_bool(v, &on)) return ck_bad(key, v, "want true or false", err);
    st->double_quant = on;
    return 0;
}

/* ---------- the Trainer's sharding ---------- */

/* TrainingArguments fsdp: "full_shard auto_wrap", "shard_grad_op", "offload" */
static int read_fsdp(ck_state *st, const ck_node *v, const char *key, char *err)
{
    const char *t = ck_text(v);
    if (ck_null(v) || (t && !*t)) return 0;
    char words[256] = "";
    if (v->kind == CK_LIST)
        for (const ck_node *i = v->child; i; i = i->next)
            snprintf(words + strlen(words), sizeof words - strlen(words), " %s", ck_text(i) ? ck_text(i) : "");
    else if (t) snprintf(words, sizeof words, " %s", t);
    else return ck_bad(key, v, "want FSDP's options", err);
    st->fsdp = true;
    st->s.zero = strstr(words, "shard_grad_op") ? 2 : strstr(words, "no_shard") ? 0 : 3;
    if (strstr(words, "offload")) st->s.offload = MP_OFFLOAD_PARAMS;
    char z[8];
    snprintf(z, sizeof z, "%d", st->s.zero);
    st->given |= MP_PIN_ZERO;
    ck_set(st, "zero", z, key, "FSDP's sharding strategy as a ZeRO stage");
    return 0;
}

static int refuse_liger(ck_state *st, const ck_node *v, const char *key, char *err)
{
    bool on;
    if (ck_bool(v, &on) || !on) return 0;
    return ck_refuse(key, "Liger's fused kernels (its loss never holds the logits)", err);
}

static int read_activation_offloading(ck_state *st, const ck_node *v, const char *key, char *err)
{
    bool on;
    if (ck_bool(v, &on)) return ck_bad(key, v, "want true or false", err);
    st->s.offload_activations = on;
    ck_set(st, "offload-activations", on ? "on" : "off", key, NULL);
    return 0;
}

/* ---------- TRL's preference configs ----------
 * A TRL YAML names no trainer: `trl dpo --config` or a script does. The keys
 * say which config class holds them (huggingface/trl@f2cd5771, the fields
 * tabulated in tests/data/engines/trl_config_keys.csv):
 *   DPOConfig alone: precompute_ref_log_probs (dpo_config.py:216; KTOConfig has
 *     it too, kto_config.py:174, but KTO's own keys are refused below),
 *     precompute_ref_batch_size, loss_type as a list (:234), loss_weights,
 *     ld_alpha, f_divergence_type, use_weighting, discopop_tau, sync_ref_model
 *     and its mixup keys (:224-327); up to v0.28.0 also ref_model_init_kwargs,
 *     rpo_alpha, use_logits_to_keep.
 *   CPOConfig alone: cpo_alpha, simpo_gamma, alpha (cpo_config.py:133-141);
 *     loss_type "simpo"/"alphapo" (:122-126, alphapo is simpo with cpo_alpha 0,
 *     :176-180).
 *   ORPOConfig has no key of its own (orpo_config.py:75-131: beta, max_length,
 *     max_completion_length, padding_value are DPO's or CPO's too): an ORPO file
 *     is told by --method orpo.
 *   beta, label_smoothing, max_prompt_length, max_completion_length,
 *   generate_during_eval, is_encoder_decoder, padding_value and a loss_type
 *   string sigmoid/ipo/hinge are shared by DPO, CPO and ORPO (and KTO's,
 *   online DPO's, GRPO's configs): alone they name no trainer, and the
 *   reference they imply differs by a whole model, so check asks for --method.
 * DPOTrainer: loss_type sigmoid is DPO, ipo IPO (dpo_trainer.py 1396-1451);
 * CPOTrainer: sigmoid is CPO, simpo SimPO (cpo_trainer.py 714-721). */
enum {
    TP_ANY = 1 << 0,     /* a key every preference config has (beta...) */
    TP_DPO = 1 << 1,     /* a DPOConfig key */
    TP_CPO = 1 << 2,     /* a CPOConfig key */
    TP_LOSS_IPO = 1 << 3, /* loss_type ipo */
    TP_LOSS_SIMPO = 1 << 4, /* loss_type simpo or alphapo */
    TP_LOSS_SIGMOID = 1 << 5, /* loss_type sigmoid */
    TP_NO_NLL = 1 << 6,  /* cpo_alpha 0 (or alphapo): no NLL term */
    TP_KTO = 1 << 7,     /* a KTOConfig key (kto_config.py:119-213) */
    TP_GRPO = 1 << 8,    /* a GRPOConfig key (grpo_config.py:474-915) */
    TP_REWARD = 1 << 9,  /* RewardConfig's own key (reward_config.py:155) */
    TP_PRECOMPUTE = 1 << 10, /* precompute_ref_log_probs: DPOConfig's and KTOConfig's */
    TP_VLLM = 1 << 11,   /* use_vllm given */
    TP_NGEN = 1 << 12,   /* num_generations given */
    TP_ODPO = 1 << 13,   /* an OnlineDPOConfig key (online_dpo_config.py:167-370) */
    TP_PPO = 1 << 14,    /* a PPOConfig key (ppo_config.py:124-273) */
};

/* st->pref_keys: the first key of each kind, for the refusals */
enum { TK_ANY, TK_DPO, TK_CPO, TK_LOSS, TK_KTO, TK_GRPO, TK_REWARD, TK_PRECOMPUTE, TK_ODPO, TK_PPO };

static void pref_key(ck_state *st, unsigned bit, const char *key)
{
    int i = bit == TP_DPO ? TK_DPO : bit == TP_CPO ? TK_CPO : bit == TP_KTO ? TK_KTO : bit == TP_GRPO ? TK_GRPO
          : bit == TP_REWARD ? TK_REWARD : bit == TP_PRECOMPUTE ? TK_PRECOMPUTE : bit == TP_ODPO ? TK_ODPO
          : bit == TP_PPO ? TK_PPO : TK_ANY;
    char *slot = st->pref_keys[i];
    if (!(st->pref_bits & bit)) snprintf(slot, sizeof st->pref_keys[0], "%s", key);
    st->pref_bits |= bit;
    st->trl = true;
}

static int pref_any(ck_state *st, const ck_node *v, const char *key, char *err)
{
    if (!ck_null(v)) pref_key(st, TP_ANY, key);
    return 0;
}

static int pref_dpo(ck_state *st, const ck_node *v, const char *key, char *err)
{
    if (!ck_null(v)) pref_key(st, TP_DPO, key);
    return 0;
}

static int pref_cpo(ck_state *st, const ck_node *v, const char *key, char *err)
{
    if (!ck_null(v)) pref_key(st, TP_CPO, key);
    return 0;
}

/* cpo_alpha (cpo_config.py:133, default 1.0): 0 drops the chosen NLL (cpo_trainer.py 841-844) */
static int read_cpo_alpha(ck_state *st, const ck_node *v, const char *key, char *err)
{
    double a;
    if (ck_null(v)) return 0;
    if (ck_real(v, &a)) return ck_bad(key, v, "want a number", err);
    pref_key(st, TP_CPO, key);
    if (a == 0) st->pref_bits |= TP_NO_NLL;
    return 0;
}

/* precompute_ref_log_probs (dpo_config.py:216): the reference's sums computed
 * before training and kept with the data on the host (dpo_trainer.py 957-978) */
static int read_precompute(ck_state *st, const ck_node *v, const char *key, char *err)
{
    bool on;
    if (ck_null(v)) return 0;
    if (ck_bool(v, &on)) return ck_bad(key, v, "want true or false", err);
    pref_key(st, TP_PRECOMPUTE, key);
    st->pref_ref = on ? MP_REF_PRECOMPUTED : MP_REF_DEFAULT;
    snprintf(st->pref_ref_key, sizeof st->pref_ref_key, "%s", key);
    return 0;
}

/* One loss name: what it says of the trainer, or a refusal by name. */
static int loss_name(ck_state *st, const ck_node *v, const char *key, bool in_list, char *err)
{
    const char *t = ck_text(v);
    if (!t || v->kind != CK_SCALAR) return ck_bad(key, v, "want a loss name (sigmoid, ipo, simpo)", err);
    char q[48], why[200];
    if (!strcmp(t, "sigmoid")) st->pref_bits |= TP_LOSS_SIGMOID;
    else if (!strcmp(t, "ipo")) st->pref_bits |= TP_LOSS_IPO;
    else if (!in_list && (!strcmp(t, "simpo") || !strcmp(t, "alphapo"))) {
        st->pref_bits |= TP_LOSS_SIMPO;
        if (!strcmp(t, "alphapo")) st->pref_bits |= TP_NO_NLL; /* cpo_config.py:176-180 */
        pref_key(st, TP_CPO, key);
    } else if (!in_list && !strcmp(t, "kto")) {
        pref_key(st, TP_KTO, key); /* KTOConfig's (kto_config.py:192) */
    } else if (!in_list && !strcmp(t, "apo_zero_unpaired")) {
        return ck_refuse(key, "KTO's apo_zero_unpaired, which runs no KL batch (kto_trainer.py 777): memplan's kto "
                              "counts one", err);
    } else if (!in_list && (!strcmp(t, "dapo") || !strcmp(t, "grpo") || !strcmp(t, "dr_grpo") || !strcmp(t, "bnpo"))) {
        pref_key(st, TP_GRPO, key); /* GRPOConfig's per-token losses (grpo_config.py:791): one memory */
    } else {
        snprintf(why, sizeof why, "loss_type '%s', a loss memplan has no row for (it models sigmoid, ipo and simpo)",
                 mp_quote(t, q, sizeof q));
        return ck_refuse(key, why, err);
    }
    return 0;
}

/* loss_type: DPOConfig's is a list (dpo_config.py:234, a string becomes a list
 * at :344-345); CPOConfig's, KTOConfig's and others' a string */
static int read_loss_type(ck_state *st, const ck_node *v, const char *key, char *err)
{
    if (ck_null(v)) return 0;
    snprintf(st->pref_keys[TK_LOSS], sizeof st->pref_keys[0], "%s", key);
    if (v->kind == CK_LIST) {
        if (!v->child) return ck_bad(key, v, "want one loss name", err);
        if (v->child->next)
            return ck_refuse(key, "several losses combined (loss_weights, MPO): memplan has no row for the mix", err);
        pref_key(st, TP_DPO, key);
        return loss_name(st, v->child, key, true, err);
    }
    if (v->kind != CK_SCALAR) return ck_bad(key, v, "want a loss name or a list of one", err);
    pref_key(st, TP_ANY, key);
    return loss_name(st, v, key, false, err);
}

/* KTOConfig's own keys (kto_config.py:119, 206-213): a weight, or the sampling order */
static int read_kto_key(ck_state *st, const ck_node *v, const char *key, char *err)
{
    double w;
    if (ck_null(v)) return 0;
    if (strcmp(key, "train_sampling_strategy") && (ck_real(v, &w) || w < 0))
        return ck_bad(key, v, "want a weight of 0 or more", err);
    pref_key(st, TP_KTO, key);
    return 0;
}

/* RewardConfig's own key (reward_config.py:155): written, even as null, only in a reward model's config */
static int read_center_rewards(ck_state *st, const ck_node *v, const char *key, char *err)
{
    double c;
    if (!ck_null(v) && ck_real(v, &c)) return ck_bad(key, v, "want a number or null", err);
    pref_key(st, TP_REWARD, key);
    return 0;
}

/* beta: every preference config's (pref_any); GRPO's decides its reference (grpo_trainer.py 953-971) */
static int read_beta(ck_state *st, const ck_node *v, const char *key, char *err)
{
    double b;
    if (ck_null(v)) return 0;
    /* OnlineDPOConfig's is a list, one value an epoch (online_dpo_config.py:246, one value a float: 381-382) */
    const ck_node *x = v->kind == CK_LIST ? v->child : v;
    for (const ck_node *i = x; v->kind == CK_LIST && i; i = i->next)
        if (ck_real(i, &b) || b < 0 || b > 1e6) return ck_bad(key, v, "want a number from 0, or a list of them", err);
    if (!x || ck_real(x, &b) || b < 0 || b > 1e6) return ck_bad(key, v, "want a number from 0", err);
    st->trl_beta = b, st->trl_beta_set = true;
    pref_key(st, TP_ANY, key);
    return 0;
}

/* max_completion_length: GRPO's completion (grpo_config.py:488); CPO's and ORPO's cut nothing memplan counts */
static int read_completion_len(ck_state *st, const ck_node *v, const char *key, char *err)
{
    int64_t n;
    if (ck_null(v)) return 0;
    if (ck_int(v, &n) || n < 1 || n > 1 << 24) return ck_bad(key, v, "want a token count from 1 to 16777216", err);
    st->trl_completion_len = n;
    snprintf(st->trl_completion_key, sizeof st->trl_completion_key, "%s", key);
    pref_key(st, TP_ANY, key);
    return 0;
}

/* ---------- GRPO (GRPOConfig at trl@f2cd5771, trl_methods.csv) ---------- */

/* The generating configs' keys (trl_config_keys.csv at trl@f2cd5771): which of GRPOConfig,
 * OnlineDPOConfig and PPOConfig has each. A file's config is one that has every such key. */
enum { CG_GRPO = 1, CG_ODPO = 2, CG_PPO = 4 };
static const char *const gen_config[3] = {"GRPOConfig", "OnlineDPOConfig", "PPOConfig"};
static const struct { const char *key; unsigned in; } gen_keys[] = {
    {"use_vllm", CG_GRPO | CG_ODPO}, {"vllm_mode", CG_GRPO | CG_ODPO}, {"vllm_gpu_memory_utilization", CG_GRPO | CG_ODPO},
    {"vllm_enable_sleep_mode", CG_GRPO | CG_ODPO}, {"vllm_server_base_url", CG_GRPO | CG_ODPO},
    {"vllm_server_host", CG_GRPO | CG_ODPO}, {"vllm_server_port", CG_GRPO | CG_ODPO},
    {"vllm_server_timeout", CG_GRPO | CG_ODPO}, {"vllm_group_port", CG_GRPO | CG_ODPO},
    {"vllm_model_impl", CG_GRPO | CG_ODPO}, {"vllm_tensor_parallel_size", CG_GRPO | CG_ODPO},
    {"vllm_structured_outputs_regex", CG_GRPO | CG_ODPO}, {"top_p", CG_GRPO | CG_ODPO}, {"top_k", CG_GRPO | CG_ODPO},
    {"min_p", CG_GRPO | CG_ODPO}, {"repetition_penalty", CG_GRPO | CG_ODPO}, {"reward_weights", CG_GRPO | CG_ODPO},
    {"generation_kwargs", CG_GRPO | CG_ODPO}, {"cache_implementation", CG_GRPO | CG_ODPO},
    {"temperature", CG_GRPO | CG_ODPO | CG_PPO}, {"ds3_gather_for_generation", CG_GRPO | CG_ODPO | CG_PPO},
    {"reward_model_path", CG_ODPO | CG_PPO}, {"missing_eos_penalty", CG_ODPO | CG_PPO},
    {"max_new_tokens", CG_ODPO},
    {"num_ppo_epochs", CG_PPO}, {"num_mini_batches", CG_PPO}, {"local_rollout_forward_batch_size", CG_PPO},
    {"num_sample_generations", CG_PPO}, {"response_length", CG_PPO}, {"stop_token", CG_PPO},
    {"stop_token_id", CG_PPO}, {"sft_model_path", CG_PPO}, {"total_episodes", CG_PPO}, {"world_size", CG_PPO},
    {"num_total_batches", CG_PPO}, {"micro_batch_size", CG_PPO}, {"local_batch_size", CG_PPO},
    {"batch_size", CG_PPO}, {"local_mini_batch_size", CG_PPO}, {"mini_batch_size", CG_PPO},
    {"model_adapter_name", CG_PPO}, {"ref_adapter_name", CG_PPO}, {"whiten_rewards", CG_PPO}, {"kl_coef", CG_PPO},
    {"kl_estimator", CG_PPO}, {"cliprange", CG_PPO}, {"vf_coef", CG_PPO}, {"cliprange_value", CG_PPO},
    {"gamma", CG_PPO}, {"lam", CG_PPO},
};

/* A generation key read: the configs that have it (GRPOConfig alone unless gen_keys says more). */
static int gen_key(ck_state *st, const char *key, char *err)
{
    unsigned in = CG_GRPO;
    for (size_t i = 0; i < sizeof gen_keys / sizeof *gen_keys; i++)
        if (!strcmp(gen_keys[i].key, key)) in = gen_keys[i].in;
    st->trl = true;
    if (st->gen_mask && !(st->gen_mask & in)) {
        char why[240], q[64], a[64] = "", b[64] = "";
        for (int c = 0; c < 3; c++) {
            if (in & 1u << c) snprintf(a + strlen(a), sizeof a - strlen(a), "%s%s", *a ? " or " : "", gen_config[c]);
            if (st->gen_mask & 1u << c)
                snprintf(b + strlen(b), sizeof b - strlen(b), "%s%s", *b ? " or " : "", gen_config[c]);
        }
        snprintf(why, sizeof why, "a key of %s beside '%s' and the keys of %s before it: no one config has all",
                 a, mp_quote(st->gen_first, q, sizeof q), b);
        return ck_refuse(key, why, err);
    }
    if (!st->gen_mask) snprintf(st->gen_first, sizeof st->gen_first, "%s", key);
    st->gen_mask = st->gen_mask ? st->gen_mask & in : in;
    for (int c = 0; c < 3; c++)
        if (in == 1u << c && !st->gen_own[c][0]) snprintf(st->gen_own[c], sizeof st->gen_own[c], "%s", key);
    return 0;
}

static int read_num_generations(ck_state *st, const ck_node *v, const char *key, char *err)
{
    int64_t n;
    if (ck_null(v)) return 0;
    if (ck_int(v, &n) || n < 2 || n > 1 << 16) return ck_bad(key, v, "want 2 to 65536 completions a prompt", err);
    st->s.generations = n;
    if (gen_key(st, key, err)) return -1;
    st->pref_bits |= TP_NGEN;
    char t[24];
    snprintf(t, sizeof t, "%lld", (long long)n);
    ck_set(st, "generations", t, key, NULL);
    return 0;
}

static int read_use_vllm(ck_state *st, const ck_node *v, const char *key, char *err)
{
    bool on;
    if (ck_null(v)) return 0;
    if (ck_bool(v, &on)) return ck_bad(key, v, "want true or false", err);
    st->s.rollout = on ? MP_ROLLOUT_VLLM : MP_ROLLOUT_GENERATE;
    if (gen_key(st, key, err)) return -1;
    st->pref_bits |= TP_VLLM;
    return 0;
}

/* vllm_mode (grpo_config.py:584): colocate shares the GPU, server runs on others (trl vllm-serve) */
static int read_vllm_mode(ck_state *st, const ck_node *v, const char *key, char *err)
{
    const char *t = ck_text(v);
    if (ck_null(v)) return 0;
    if (!t || v->kind != CK_SCALAR || (strcmp(t, "colocate") && strcmp(t, "server")))
        return ck_bad(key, v, "want colocate or server", err);
    st->trl_vllm_server = !strcmp(t, "server");
    if (gen_key(st, key, err)) return -1;
    return 0;
}

static int read_vllm_memory(ck_state *st, const ck_node *v, const char *key, char *err)
{
    double f;
    if (ck_null(v)) return 0;
    if (ck_real(v, &f) || !(f >= 0.01 && f <= 1)) return ck_bad(key, v, "want a fraction of the GPU from 0.01 to 1", err);
    st->s.rollout_memory = f;
    if (gen_key(st, key, err)) return -1;
    char t[32];
    snprintf(t, sizeof t, "%g", f);
    ck_set(st, "rollout-memory", t, key, NULL);
    return 0;
}

static int read_vllm_sleep(ck_state *st, const ck_node *v, const char *key, char *err)
{
    bool on;
    if (ck_null(v)) return 0;
    if (ck_bool(v, &on)) return ck_bad(key, v, "want true or false", err);
    st->s.rollout_sleep = on;
    if (gen_key(st, key, err)) return -1;
    ck_set(st, "rollout-sleep", on ? "on" : "off", key, NULL);
    return 0;
}

static int read_vllm_max_len(ck_state *st, const ck_node *v, const char *key, char *err)
{
    int64_t n;
    if (ck_null(v)) return 0;
    if (ck_int(v, &n) || n < 1 || n > 1 << 24) return ck_bad(key, v, "want a token count from 1 to 16777216", err);
    st->s.rollout_max_len = n;
    if (gen_key(st, key, err)) return -1;
    char t[24];
    snprintf(t, sizeof t, "%lld", (long long)n);
    ck_set(st, "rollout-max-len", t, key, NULL);
    return 0;
}

/* a GRPOConfig key memplan reads as nothing it counts */
static int grpo_known(ck_state *st, const ck_node *v, const char *key, char *err)
{
    return ck_null(v) ? 0 : gen_key(st, key, err);
}

/* a GRPOConfig key whose non-default value memplan does not model */
static int grpo_refuse(ck_state *st, const ck_node *v, const char *key, char *err)
{
    bool on;
    int64_t n;
    double x;
    if (ck_null(v) || (!ck_bool(v, &on) && !on) || (!ck_real(v, &x) && x == 0) ||
        (!strcmp(key, "vllm_tensor_parallel_size") && !ck_int(v, &n) && n == 1))
        return 0;
    const char *why = !strcmp(key, "steps_per_generation") || !strcmp(key, "generation_batch_size")
                          ? "a generation batch other than micro-batch x GPUs x accumulation (memplan plans that one)"
                      : !strcmp(key, "vllm_tensor_parallel_size") ? "a colocated vLLM split over several GPUs"
                      : !strcmp(key, "cast_lm_head_to_fp32")      ? "an fp32 copy of the output layer"
                      : !strcmp(key, "entropy_coef")              ? "an entropy bonus, which keeps the entropy's graph"
                                                                  : "another generation engine than generate or vLLM";
    return ck_refuse(key, why, err);
}

/* reward_funcs (the TRL CLI's): functions by name cost nothing; a Hub id is a reward model beside the policy */
static int read_reward_funcs(ck_state *st, const ck_node *v, const char *key, char *err)
{
    if (ck_null(v)) return 0;
    if (v->kind == CK_MAP) return ck_bad(key, v, "want reward function names", err);
    for (const ck_node *i = v->kind == CK_LIST ? v->child : v; i; i = v->kind == CK_LIST ? i->next : NULL) {
        const char *t = ck_text(i);
        if (!t || i->kind != CK_SCALAR) return ck_bad(key, v, "want reward function names", err);
        if (strchr(t, '/'))
            return ck_refuse(key, "a reward model loaded beside the policy (memplan plans reward functions)", err);
    }
    if (gen_key(st, key, err)) return -1;
    return 0;
}

/* OnlineDPOConfig's max_new_tokens (online_dpo_config.py:180), PPOConfig's response_length (ppo_config.py:151):
 * the completion, as GRPOConfig's max_completion_length */
static int read_gen_completion(ck_state *st, const ck_node *v, const char *key, char *err)
{
    int64_t n;
    if (ck_null(v)) return 0;
    if (ck_int(v, &n) || n < 1 || n > 1 << 24) return ck_bad(key, v, "want a token count from 1 to 16777216", err);
    if (gen_key(st, key, err)) return -1;
    st->trl_completion_len = n;
    snprintf(st->trl_completion_key, sizeof st->trl_completion_key, "%s", key);
    return 0;
}

/* reward_model_path (online_dpo_config.py:176, ppo_config.py:220): the reward model, resolved once the model is */
static int read_reward_path(ck_state *st, const ck_node *v, const char *key, char *err)
{
    const char *t = ck_text(v);
    if (ck_null(v)) return 0;
    if (!t || v->kind != CK_SCALAR || !*t || strlen(t) >= sizeof st->reward_ref)
        return ck_bad(key, v, "want a reward model's Hub id or folder", err);
    if (gen_key(st, key, err)) return -1;
    snprintf(st->reward_ref, sizeof st->reward_ref, "%s", t);
    return 0;
}

/* PPOConfig's sft_model_path (ppo_config.py:181): the policy examples/scripts/ppo/ppo.py trains (96),
 * model_name_or_path only its tokenizer (88) */
static int read_sft_path(ck_state *st, const ck_node *v, const char *key, char *err)
{
    if (ck_null(v)) return 0;
    if (ck_read_model(st, v, key, err) || gen_key(st, key, err)) return -1;
    st->sft_model = true;
    return 0;
}

/* num_mini_batches (ppo_config.py:133), local_rollout_forward_batch_size (141): checked against the batch
 * once it is known; num_sample_generations (145): sampling on the eval set between updates */
static int read_ppo_count(ck_state *st, const ck_node *v, const char *key, char *err)
{
    int64_t n;
    if (ck_null(v)) return 0;
    bool samples = !strcmp(key, "num_sample_generations");
    if (ck_int(v, &n) || n < (samples ? 0 : 1) || n > 1 << 24)
        return ck_bad(key, v, samples ? "want a count from 0" : "want a count from 1 to 16777216", err);
    if (gen_key(st, key, err)) return -1;
    if (samples) st->sample_generations = n > 0;
    else if (!strcmp(key, "num_mini_batches")) st->ppo_mini_batches = n;
    else st->ppo_rollout_chunk = n;
    return 0;
}

/* ref_adapter_name (ppo_config.py:228): a second adapter as the reference, which memplan does not plan */
static int read_ref_adapter(ck_state *st, const ck_node *v, const char *key, char *err)
{
    if (ck_null(v)) return 0;
    if (gen_key(st, key, err)) return -1;
    return ck_refuse(key, "a second adapter loaded as the reference (null_ref_context, ppo_trainer.py 577-588): "
                          "memplan plans the adapter disabled", err);
}


/* After the keys: which trainer, which method (trl_methods.csv). */
static int resolve_trl_method(ck_state *st, char *err)
{
    bool flag = ck_from_flag(st, "method");
    if (st->gen_mask) {
        /* the generating config every generation key belongs to; GRPOConfig where it is one of them
         * (as before online DPO and PPO were read), else --method */
        static const unsigned bits[3] = {TP_GRPO, TP_ODPO, TP_PPO};
        static const mp_method named[3] = {MP_METHOD_GRPO, MP_METHOD_ONLINE_DPO, MP_METHOD_PPO};
        const unsigned m = st->gen_mask;
        int pick = -1;
        for (int c = 0; c < 3; c++)
            if (m == 1u << c || (flag && (m & 1u << c) && st->s.method == named[c])) pick = c;
        if (pick < 0 && (m & CG_GRPO)) pick = 0;
        if (pick < 0) {
            char q[64];
            snprintf(err, MP_ERR_LEN, "'%s': a key of OnlineDPOConfig and PPOConfig alike, and no key here says "
                     "which: give --method online-dpo or ppo", mp_quote(st->gen_first, q, sizeof q));
            return -1;
        }
        pref_key(st, bits[pick], st->gen_own[pick][0] ? st->gen_own[pick] : st->gen_first);
    }
    unsigned b = st->pref_bits;
    if (!b) return 0;
    /* one config class: the families' keys exclude each other */
    static const struct { unsigned bit; int slot; const char *config; } fam[] = {
        {TP_DPO, TK_DPO, "DPOConfig"}, {TP_CPO, TK_CPO, "CPOConfig"}, {TP_KTO, TK_KTO, "KTOConfig"},
        {TP_GRPO, TK_GRPO, "GRPOConfig"}, {TP_REWARD, TK_REWARD, "RewardConfig"},
        {TP_ODPO, TK_ODPO, "OnlineDPOConfig"}, {TP_PPO, TK_PPO, "PPOConfig"},
    };
    for (size_t i = 0; i < sizeof fam / sizeof *fam; i++)
        for (size_t j = i + 1; j < sizeof fam / sizeof *fam; j++)
            if ((b & fam[i].bit) && (b & fam[j].bit)) {
                char why[200], q[64];
                snprintf(why, sizeof why, "a %s key beside the %s key '%s': no one trainer takes both", fam[j].config,
                         fam[i].config, mp_quote(st->pref_keys[fam[i].slot], q, sizeof q));
                return ck_refuse(st->pref_keys[fam[j].slot], why, err);
            }
    if ((b & TP_PRECOMPUTE) && (b & (TP_CPO | TP_GRPO | TP_REWARD | TP_ODPO | TP_PPO))) {
        char why[200];
        snprintf(why, sizeof why, "precompute_ref_log_probs (DPOConfig's and KTOConfig's) beside '%s', whose trainer "
                 "has no such key", st->pref_keys[b & TP_CPO ? TK_CPO : b & TP_GRPO ? TK_GRPO : b & TP_ODPO ? TK_ODPO
                                                  : b & TP_PPO ? TK_PPO : TK_REWARD]);
        return ck_refuse(st->pref_keys[TK_PRECOMPUTE], why, err);
    }
    int m = -1;
    const char *key = NULL;
    if (b & TP_KTO) {
        m = MP_METHOD_KTO, key = st->pref_keys[TK_KTO];
    } else if (b & TP_GRPO) {
        m = MP_METHOD_GRPO, key = st->pref_keys[TK_GRPO];
    } else if (b & TP_ODPO) {
        m = MP_METHOD_ONLINE_DPO, key = st->pref_keys[TK_ODPO];
    } else if (b & TP_PPO) {
        m = MP_METHOD_PPO, key = st->pref_keys[TK_PPO];
    } else if (b & TP_REWARD) {
        m = MP_METHOD_REWARD, key = st->pref_keys[TK_REWARD];
    } else if (b & (TP_DPO | TP_PRECOMPUTE)) {
        if (!(b & TP_DPO)) snprintf(st->pref_keys[TK_DPO], sizeof st->pref_keys[0], "%s", st->pref_keys[TK_PRECOMPUTE]);
        m = b & TP_LOSS_IPO ? MP_METHOD_IPO : MP_METHOD_DPO;
        key = b & (TP_LOSS_IPO | TP_LOSS_SIGMOID) ? st->pref_keys[TK_LOSS] : st->pref_keys[TK_DPO];
    } else if (b & TP_CPO) {
        if (b & TP_LOSS_IPO)
            return ck_refuse(st->pref_keys[TK_LOSS], "CPOTrainer's ipo loss, which memplan has no row for (cpo, simpo)", err);
        m = b & TP_LOSS_SIMPO ? MP_METHOD_SIMPO : MP_METHOD_CPO;
        key = b & TP_LOSS_SIMPO ? st->pref_keys[TK_LOSS] : st->pref_keys[TK_CPO];
        if (b & TP_NO_NLL)
            ck_note(st, "cpo_alpha 0 (or alphapo): CPOTrainer adds no NLL term (cpo_trainer.py 841-844); memplan "
                        "counts its logits copy: a little high");
    } else if (!flag) {
        char k[64];
        bool loss = b & (TP_LOSS_SIGMOID | TP_LOSS_IPO);
        snprintf(err, MP_ERR_LEN, "'%s': %s, and no key here says which trainer runs (their references differ by a "
                 "whole model): give --method dpo, ipo, simpo, cpo, orpo, kto or reward",
                 mp_quote(loss ? st->pref_keys[TK_LOSS] : st->pref_keys[TK_ANY], k, sizeof k),
                 loss ? "a loss DPOConfig and CPOConfig both name" : "a key of DPOConfig, CPOConfig and ORPOConfig alike");
        return -1;
    }
    if (m >= 0) st->pref_method = m + 1, snprintf(st->pref_key, sizeof st->pref_key, "%s", key);
    return 0;
}

static const ck_key keys[] = {
    /* the model */
    {"model_name_or_path", read_trl_model}, {"torch_dtype", read_dtype}, {"dtype", read_dtype},
    {"attn_implementation", ck_read_attn_implementation}, {"model_revision", NULL}, {"trust_remote_code", NULL},
    /* PEFT */
    {"use_peft", read_use_peft}, {"lora_r", read_lora_r}, {"lora_alpha", NULL}, {"lora_dropout", ck_read_lora_dropout},
    {"lora_target_modules", ck_read_lora_targets}, {"lora_task_type", NULL}, {"use_dora", refuse_dora},
    {"lora_modules_to_save", refuse_modules_to_save},
    {"load_in_4bit", read_4bit}, {"load_in_8bit", read_8bit}, {"bnb_4bit_quant_type", read_quant_type},
    {"use_bnb_nested_quant", read_nested_quant},
    /* the step */
    {"per_device_train_batch_size", ck_read_batch}, {"gradient_accumulation_steps", ck_read_accum},
    {"max_seq_length", read_trl_seq}, {"max_length", read_trl_seq}, {"packing", NULL}, {"padding_free", NULL},
    {"bf16", ck_read_bf16}, {"fp16", ck_read_fp16}, {"tf32", NULL},
    {"optim", ck_read_optimizer}, {"optim_args", NULL},
    {"gradient_checkpointing", ck_read_checkpointing}, {"gradient_checkpointing_kwargs", NULL},
    {"torch_compile", ck_read_compile}, {"torch_compile_backend", NULL}, {"torch_compile_mode", NULL},
    {"use_liger_kernel", refuse_liger}, {"activation_offloading", read_activation_offloading},
    {"fsdp", read_fsdp}, {"fsdp_config", NULL}, {"deepspeed", ck_read_deepspeed_ref},
    /* preference training (DPOConfig, CPOConfig, ORPOConfig: see above) */
    {"beta", read_beta}, {"label_smoothing", pref_any}, {"max_prompt_length", pref_any},
    {"max_completion_length", read_completion_len}, {"generate_during_eval", pref_any}, {"is_encoder_decoder", pref_any},
    {"padding_value", pref_any}, {"disable_dropout", NULL}, {"truncation_mode", NULL},
    {"loss_type", read_loss_type}, {"precompute_ref_log_probs", read_precompute},
    {"precompute_ref_batch_size", pref_dpo}, {"loss_weights", pref_dpo}, {"ld_alpha", pref_dpo},
    {"f_divergence_type", pref_dpo}, {"f_alpha_divergence_coef", pref_dpo}, {"use_weighting", pref_dpo},
    {"discopop_tau", pref_dpo}, {"sync_ref_model", pref_dpo}, {"ref_model_mixup_alpha", pref_dpo},
    {"ref_model_sync_steps", pref_dpo}, {"ref_model_init_kwargs", pref_dpo}, {"rpo_alpha", pref_dpo},
    {"use_logits_to_keep", pref_dpo}, {"router_aux_loss_coef", NULL},
    {"cpo_alpha", read_cpo_alpha}, {"simpo_gamma", pref_cpo}, {"alpha", pref_cpo},
    /* KTOConfig (kto_config.py:119-213), RewardConfig (reward_config.py:155) */
    {"desirable_weight", read_kto_key}, {"undesirable_weight", read_kto_key},
    {"train_sampling_strategy", read_kto_key}, {"center_rewards_coefficient", read_center_rewards},
    {"chat_template_path", NULL},
    /* GRPOConfig (grpo_config.py:447-915) */
    {"num_generations", read_num_generations}, {"use_vllm", read_use_vllm}, {"vllm_mode", read_vllm_mode},
    {"vllm_gpu_memory_utilization", read_vllm_memory}, {"vllm_enable_sleep_mode", read_vllm_sleep},
    {"vllm_max_model_length", read_vllm_max_len}, {"reward_funcs", read_reward_funcs},
    {"vllm_server_base_url", grpo_known}, {"vllm_server_host", grpo_known}, {"vllm_server_port", grpo_known},
    {"vllm_server_timeout", grpo_known}, {"vllm_group_port", grpo_known}, {"vllm_model_impl", grpo_known},
    {"vllm_importance_sampling_correction", grpo_known}, {"vllm_importance_sampling_mode", grpo_known},
    {"num_iterations", grpo_known}, {"epsilon", grpo_known}, {"epsilon_high", grpo_known},
    {"temperature", grpo_known}, {"top_p", grpo_known}, {"top_k", grpo_known}, {"min_p", grpo_known},
    {"repetition_penalty", grpo_known}, {"scale_rewards", grpo_known}, {"reward_weights", grpo_known},
    {"mask_truncated_completions", grpo_known}, {"importance_sampling_level", grpo_known},
    {"log_completions", grpo_known}, {"num_completions_to_print", grpo_known}, {"ds3_gather_for_generation", grpo_known},
    {"shuffle_dataset", grpo_known}, {"top_entropy_quantile", grpo_known},
    {"steps_per_generation", grpo_refuse}, {"generation_batch_size", grpo_refuse},
    {"vllm_tensor_parallel_size", grpo_refuse}, {"cast_lm_head_to_fp32", grpo_refuse}, {"entropy_coef", grpo_refuse},
    {"use_transformers_paged", grpo_refuse}, {"use_transformers_continuous_batching", grpo_refuse},
    {"vllm_structured_outputs_regex", grpo_known}, {"generation_kwargs", grpo_known},
    {"cache_implementation", grpo_known},
    /* OnlineDPOConfig (online_dpo_config.py:167-370) and PPOConfig (ppo_config.py:124-273) */
    {"max_new_tokens", read_gen_completion}, {"response_length", read_gen_completion},
    {"reward_model_path", read_reward_path}, {"sft_model_path", read_sft_path}, {"missing_eos_penalty", grpo_known},
    {"num_mini_batches", read_ppo_count}, {"local_rollout_forward_batch_size", read_ppo_count},
    {"num_sample_generations", read_ppo_count}, {"ref_adapter_name", read_ref_adapter},
    {"num_ppo_epochs", grpo_known}, {"kl_coef", grpo_known}, {"kl_estimator", grpo_known}, {"cliprange", grpo_known},
    {"vf_coef", grpo_known}, {"cliprange_value", grpo_known}, {"gamma", grpo_known}, {"lam", grpo_known},
    {"whiten_rewards", grpo_known}, {"stop_token", grpo_known}, {"stop_token_id", grpo_known},
    {"total_episodes", grpo_known}, {"world_size", grpo_known}, {"num_total_batches", grpo_known},
    {"micro_batch_size", grpo_known}, {"local_batch_size", grpo_known}, {"batch_size", grpo_known},
    {"local_mini_batch_size", grpo_known}, {"mini_batch_size", grpo_known}, {"model_adapter_name", grpo_known},
    /* known, and nothing memplan counts */
    {"learning_rate", NULL}, {"lr_scheduler_type", NULL}, {"lr_scheduler_kwargs", NULL}, {"warmup_ratio", NULL},
    {"warmup_steps", NULL}, {"weight_decay", NULL}, {"adam_beta1", NULL}, {"adam_beta2", NULL},
    {"adam_epsilon", NULL}, {"max_grad_norm", NULL}, {"num_train_epochs", NULL}, {"max_steps", NULL},
    {"seed", NULL}, {"data_seed", NULL}, {"output_dir", NULL}, {"overwrite_output_dir", NULL},
    {"logging_steps", NULL}, {"logging_strategy", NULL}, {"logging_first_step", NULL}, {"log_level", NULL},
    {"report_to", NULL}, {"run_name", NULL}, {"save_strategy", NULL}, {"save_steps", NULL},
    {"save_total_limit", NULL}, {"save_only_model", NULL}, {"eval_strategy", NULL}, {"evaluation_strategy", NULL},
    {"eval_steps", NULL}, {"do_eval", NULL}, {"do_train", NULL}, {"per_device_eval_batch_size", NULL},
    {"push_to_hub", NULL}, {"hub_model_id", NULL}, {"hub_strategy", NULL}, {"hub_private_repo", NULL},
    {"remove_unused_columns", NULL}, {"dataloader_num_workers", NULL}, {"dataloader_pin_memory", NULL},
    {"dataset_text_field", NULL}, {"dataset_name", NULL}, {"dataset_config", NULL}, {"dataset_mixture", NULL},
    {"dataset_num_proc", NULL}, {"dataset_kwargs", NULL}, {"chat_template", NULL}, {"use_cache", NULL},
    {"auto_find_batch_size", NULL}, {"ddp_timeout", NULL}, {"ddp_find_unused_parameters", NULL},
    {"completion_only_loss", NULL}, {"assistant_only_loss", NULL}, {"eos_token", NULL}, {"pad_token", NULL},
    {"model_init_kwargs", NULL}, {"torch_empty_cache_steps", NULL}, {"include_tokens_per_second", NULL},
    {NULL, NULL},
};

/* The generating configs once the method is known (trl_methods.csv): the completion's key and default,
 * the sequence's (OnlineDPOConfig's max_length is prompt and completion; GRPOConfig and PPOConfig have no
 * prompt length at the commit: --prompt-len, else memplan's 512). */
static const struct online_config {
    mp_method method;
    const char *config, *completion_how, *seq_how;
    const char *completion;      /* the default completion, tokens */
    int64_t seq;                 /* the default max_length (prompt and completion), 0: no such key */
} online_configs[] = {
    {MP_METHOD_GRPO, "GRPOConfig", "GRPOConfig's max_completion_length (grpo_config.py:488)", NULL, "512", 0},
    {MP_METHOD_ONLINE_DPO, "OnlineDPOConfig", "OnlineDPOConfig's max_new_tokens (online_dpo_config.py:180)",
     "OnlineDPOConfig's max_length (online_dpo_config.py:184): the prompt and completion", "64", 512},
    {MP_METHOD_PPO, "PPOConfig", "PPOConfig's response_length (ppo_config.py:151)", NULL, "53", 0},
};

/* The reward model a config names (reward_model_path; PPOConfig's default), as check names the policy:
 * a profile, else a folder with its config.json; else the policy's shape, noted. */
static void resolve_reward(ck_state *st, const char *ref, const char *key)
{
    mp_check *c = st->c;
    char err[MP_ERR_LEN], q[96], note[240], cfg[1100];
    struct stat sb;
    memset(&c->reward_model, 0, sizeof c->reward_model);
    bool ok = !mp_model_lookup(ref, &c->reward_model, err);
    if (!ok) {
        memset(&c->reward_model, 0, sizeof c->reward_model);
        ok = snprintf(cfg, sizeof cfg, "%s/config.json", ref) < (int)sizeof cfg && !stat(cfg, &sb) &&
             !mp_model_from_hf_config(ref, &c->reward_model, err);
    }
    if (ok && !mp_model_finish(&c->reward_model, err)) {
        st->s.reward_model = &c->reward_model;
        ck_set(st, "reward-model", c->reward_model.name, key, "frozen, with a one-output score head");
        return;
    }
    snprintf(note, sizeof note, "%s '%s' is no profile memplan knows (nor a folder with a config.json): the reward "
             "model is planned with the policy's shape", key, mp_quote(ref, q, sizeof q));
    ck_note(st, note);
}

/* GRPO's, online DPO's and PPO's rollout: the completion, the prompt and sequence; use_vllm with vllm_mode
 * colocate a vLLM on the GPU, server a vLLM on other GPUs (--rollout server); GRPO's beta 0 (the default,
 * grpo_config.py:671) no reference, above 0 the adapter disabled under PEFT or a copy (grpo_trainer.py
 * 953-971); the reward model online DPO and PPO name. */
static int finish_online(ck_state *st, const struct online_config *oc, char *err)
{
    mp_settings *s = &st->s;
    char t[32], note[240];
    if (st->trl_completion_len) {
        s->completion_len = st->trl_completion_len;
        snprintf(t, sizeof t, "%lld", (long long)s->completion_len);
        ck_set(st, "completion-len", t, st->trl_completion_key, NULL);
    } else if (!ck_from_flag(st, "completion-len")) {
        s->completion_len = 0; /* the method's default */
        ck_set(st, "completion-len", oc->completion, "(default)", oc->completion_how);
    }
    if (oc->seq && !(st->given & MP_PIN_SEQ)) {
        s->seq = oc->seq, st->given |= MP_PIN_SEQ;
        snprintf(t, sizeof t, "%lld", (long long)oc->seq);
        ck_set(st, "seq", t, "(default)", oc->seq_how);
    }
    if (!(st->given & MP_PIN_SEQ) && !ck_from_flag(st, "prompt-len") && !s->prompt_len) {
        snprintf(note, sizeof note, "%s has no prompt length at trl@f2cd5771: the prompts are planned at 512 tokens "
                 "(--prompt-len N says yours)", oc->config);
        ck_note(st, note);
    }
    const bool seq_given = (st->given & MP_PIN_SEQ) != 0;
    if (mp_settings_rollout_lengths(s, seq_given, err)) return -1;
    if (!ck_from_flag(st, "prompt-len")) {
        char how[80];
        snprintf(how, sizeof how, "memplan's: %s has no prompt length", oc->config);
        snprintf(t, sizeof t, "%lld", (long long)s->prompt_len);
        ck_set(st, "prompt-len", t, "(default)", seq_given ? "the sequence less the completion" : how);
    }
    snprintf(t, sizeof t, "%lld", (long long)s->seq);
    if (!oc->seq || !seq_given) ck_set(st, "seq", t, "(prompt and completion)", "a row is the prompt and its completion");
    st->given |= MP_PIN_SEQ;
    if (st->trl_vllm_server && s->rollout == MP_ROLLOUT_VLLM) {
        s->rollout = MP_ROLLOUT_SERVER;
        if (s->rollout_memory > 0 || s->rollout_sleep || s->rollout_max_len)
            ck_note(st, "vllm_mode server: the colocated engine's keys (vllm_gpu_memory_utilization, "
                        "vllm_enable_sleep_mode, vllm_max_model_length) configure nothing on these GPUs");
        s->rollout_memory = 0, s->rollout_sleep = false, s->rollout_max_len = 0;
        ck_set(st, "rollout", "server", "vllm_mode", "a vLLM server on other GPUs (trl vllm-serve): none of it here");
    } else if (!ck_from_flag(st, "rollout")) {
        ck_set(st, "rollout", mp_rollout_name(s->rollout), st->pref_bits & TP_VLLM ? "use_vllm" : "(default)",
               s->rollout == MP_ROLLOUT_VLLM ? "vllm_mode colocate: a vLLM on the training GPU"
                                             : "transformers' generate in the training process");
    }
    if (oc->method == MP_METHOD_GRPO) {
        if (!ck_from_flag(st, "generations") && !(st->pref_bits & TP_NGEN))
            ck_set(st, "generations", "8", "(default)", "GRPOConfig's num_generations (grpo_config.py:474)");
        if (st->trl_beta_set && st->trl_beta > 0) {
            st->pref_ref = st->lora ? MP_REF_ADAPTER : MP_REF_MODEL;
            snprintf(st->pref_ref_key, sizeof st->pref_ref_key, "beta");
        }
        return 0;
    }
    if (st->reward_ref[0]) resolve_reward(st, st->reward_ref, "reward_model_path");
    else if (oc->method == MP_METHOD_PPO) {
        ck_note(st, "no reward_model_path: PPOConfig's default EleutherAI/pythia-160m (ppo_config.py:220) is the reward "
                    "and the value model (examples/scripts/ppo/ppo.py 90-95)");
        resolve_reward(st, "EleutherAI/pythia-160m", "reward_model_path (default)");
    } else {
        ck_note(st, "no reward_model_path: the reward model OnlineDPOTrainer is given (reward_funcs) is planned with "
                    "the policy's shape");
    }
    if (oc->method == MP_METHOD_PPO && !st->sft_model)
        ck_note(st, "no sft_model_path: ppo.py trains PPOConfig's default EleutherAI/pythia-160m (ppo_config.py:181); "
                    "planned with model_name_or_path's model unless --model says");
    if (oc->method == MP_METHOD_PPO && st->sample_generations)
        ck_note(st, "num_sample_generations above 0: completions sampled on the eval set between updates "
                    "(per_device_eval_batch_size rows, ppo_trainer.py generate_completions) are not planned");
    return 0;
}

/* PPO's rollout batch, once the micro-batch is known: the local batch (micro-batch x accumulation,
 * ppo_trainer.py 463) divided into num_mini_batches (465-471, TRL refuses a remainder) and generated
 * local_rollout_forward_batch_size sequences at a time (698), planned at 64 */
static int finish_ppo_batch(ck_state *st, char *err)
{
    const int64_t local = st->s.batch * st->s.accum;
    char why[200];
    if (st->ppo_mini_batches && local % st->ppo_mini_batches) {
        snprintf(why, sizeof why, "%lld mini-batches do not divide the local batch of %lld (micro-batch x "
                 "accumulation): TRL refuses it (ppo_trainer.py 465-471)", (long long)st->ppo_mini_batches,
                 (long long)local);
        return ck_refuse("num_mini_batches", why, err);
    }
    const int64_t chunk = st->ppo_rollout_chunk, planned = local < 64 ? local : 64;
    if (chunk && (local < chunk ? local : chunk) != planned) {
        snprintf(why, sizeof why, "rollout chunks of %lld sequences: memplan plans local_rollout_forward_batch_size "
                 "64 (ppo_config.py:141), %lld of the local batch at a time", (long long)chunk, (long long)planned);
        return ck_refuse("local_rollout_forward_batch_size", why, err);
    }
    return 0;
}

static int finish(ck_state *st, char *err)
{
    const mp_model *m = &st->c->model;
    if (resolve_trl_method(st, err)) return -1;
    /* the method as it stands (the keys', or --method, applied before the formats finish) */
    const mp_method method = st->pref_method ? (mp_method)(st->pref_method - 1) : st->s.method;
    for (size_t i = 0; i < sizeof online_configs / sizeof *online_configs; i++)
        if (online_configs[i].method == method) {
            st->s.method = method; /* for the rollout's lengths */
            if (finish_online(st, &online_configs[i], err)) return -1;
        }
    /* TrainingArguments' micro-batch default (training_args.py): 8 */
    if (!(st->given & MP_PIN_BATCH)) {
        st->s.batch = 8, st->given |= MP_PIN_BATCH;
        ck_set(st, "batch", "8", "(default)", "TrainingArguments' per_device_train_batch_size");
    }
    if (method == MP_METHOD_PPO && finish_ppo_batch(st, err)) return -1;
    /* TRL's configs checkpoint the model's layers and train in bf16 unless told
     * otherwise (trl base_config.py @f2cd5771: gradient_checkpointing=True, bf16 =
     * not fp16), and SFT cuts sequences at 1024 tokens (sft_config.py: max_length) */
    if (!(st->given & MP_PIN_CKPT)) {
        st->s.checkpointing = st->trl ? MP_CKPT_FULL : MP_CKPT_NONE;
        ck_set(st, "checkpointing", mp_ckpt_name(st->s.checkpointing), "(default)",
               st->trl ? "TRL's default: on" : "TrainingArguments' default: off");
    }
    /* TRL's ModelConfig loads in float32 unless told (model_config.py @f2cd5771: dtype) */
    if (st->trl && !st->pure16) st->fp32_load = true;
    /* bf16=None becomes `not fp16` (base_config.py 104-105): a file that says bf16 false trains without it */
    bool bf16_default = st->trl && !st->precision16 && !st->bf16_off;
    if (bf16_default) st->precision16 = 1;
    if ((st->trl || method != MP_METHOD_SFT) && !(st->given & MP_PIN_SEQ)) { /* GRPO's: finish_grpo */
        /* SFTConfig's, DPOConfig's, CPOConfig's and ORPOConfig's max_length: 1024
         * (sft_config.py:205, dpo_config.py:188, cpo_config.py:100, orpo_config.py:80);
         * a pair's row is its prompt and one completion */
        st->s.seq = 1024, st->given |= MP_PIN_SEQ;
        ck_set(st, "seq", "1024", "(default)",
               method == MP_METHOD_SFT ? "TRL SFTConfig's max_length"
                                       : "TRL's max_length for preference configs: a row is prompt and completion");
    }
    if (!st->lora) st->s.lora_rank = 0;
    else {
        if (!st->s.lora_rank) st->s.lora_rank = 16; /* ModelConfig lora_r */
        char r[16];
        snprintf(r, sizeof r, "%lld", (long long)st->s.lora_rank);
        ck_set(st, "lora-rank", r, "use_peft, lora_r", NULL);
        st->given |= MP_PIN_LORA;
        /* no target_modules: PEFT's default for the architecture (peft/utils/constants.py
         * TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING: q_proj and v_proj for Llama-likes) */
        if (!st->lora_modules[0]) {
            st->s.lora_targets = MP_LORA_Q | MP_LORA_V;
            ck_set(st, "lora-targets", "q,v", "(default)", "PEFT's default target_modules for the architecture");
        }
    }
    if (st->quant_bits) {
        if (!st->lora) return ck_refuse("load_in_4bit", "a quantised base trained without an adapter", err);
        st->s.quant = st->quant_bits == 8 ? MP_QUANT_INT8 : st->double_quant ? MP_QUANT_NF4_DQ : MP_QUANT_NF4;
        st->given |= MP_PIN_QUANT;
        ck_set(st, "quant", mp_quant_name(st->s.quant), st->quant_bits == 8 ? "load_in_8bit" : "load_in_4bit",
               st->quant_bits == 4 && !st->double_quant ? "use_bnb_nested_quant off: NF4 without quantised scales" : NULL);
    }
    /* transformers picks SDPA where the modeling file declares it */
    if (!(st->given & MP_PIN_ATTENTION)) {
        const mp_family *f = mp_family_of(m->family);
        st->s.attention = f && f->sdpa ? MP_ATTN_FLASH : MP_ATTN_EAGER;
        ck_set(st, "attention", mp_attention_name(st->s.attention), "(default)",
               "transformers' default: SDPA where the model declares it");
    }
    /* the reference DPOTrainer uses (dpo_trainer.py 892-910): none kept with
     * precompute_ref_log_probs, the adapter disabled under PEFT, else a second
     * model loaded from the policy's name (in fp32 unless model_init_kwargs
     * says a dtype: utils.py 1144-1148) */
    const bool grpo = method == MP_METHOD_GRPO, kto = method == MP_METHOD_KTO;
    const bool online = method == MP_METHOD_ONLINE_DPO || method == MP_METHOD_PPO;
    if (ck_preference(st, "TRL's trainer for the config's keys (trl_methods.csv)",
                      grpo && st->pref_ref == MP_REF_DEFAULT ? "beta 0 (GRPOConfig's default, grpo_config.py:671): "
                                                               "no reference (grpo_trainer.py 953-957)"
                      : grpo ? (st->lora ? "beta above 0 and use_peft: the adapter disabled (grpo_trainer.py 958-961)"
                                         : "beta above 0: a copy of the model (grpo_trainer.py 962-971)")
                      : online && method == MP_METHOD_PPO
                          ? (st->lora ? "use_peft: the policy with its adapter disabled (ppo_trainer.py 439-444, 577-588)"
                                      : "no PEFT: a copy of the policy (ppo_trainer.py 439-444)")
                      : online ? (st->lora ? "use_peft: the policy with its adapter disabled (online_dpo_trainer.py 317-328)"
                                           : "no PEFT: a copy of the policy (online_dpo_trainer.py 317-328)")
                      : st->pref_ref == MP_REF_PRECOMPUTED ? (kto ? "computed before training, kept on the host "
                                                                    "(kto_trainer.py 983-1004)"
                                                              : "computed before training, kept on the host "
                                                                "(dpo_trainer.py 957-978)")
                      : st->lora ? (kto ? "use_peft: the policy with its adapter disabled (kto_trainer.py 1535-1541)"
                                        : "use_peft: the policy with its adapter disabled (dpo_trainer.py 894-898)")
                                 : (kto ? "no PEFT: a second model loaded like the policy (kto_trainer.py 912-929)"
                                        : "no PEFT: a second model loaded like the policy (dpo_trainer.py 899-908)"),
                      err))
        return -1;
    ck_resolve_precision(st, bf16_default ? "(default)" : st->precision16 == 2 ? "fp16" : "bf16",
                         st->pure16 && !st->engine_masters ? "the weights load in 16 bits (torch_dtype)"
                         : bf16_default                    ? "TRL's default: bf16 unless fp16"
                                                           : NULL);
    return 0;
}

static int spell(const char *setting, const mp_settings *s, char *buf, size_t len)
{
    if (!strcmp(setting, "batch"))
        snprintf(buf, len, "per_device_train_batch_size: %lld, gradient_accumulation_steps: %lld", (long long)s->batch,
                 (long long)s->accum);
    else if (!strcmp(setting, "checkpointing")) snprintf(buf, len, "gradient_checkpointing: true");
    else if (!strcmp(setting, "attention")) snprintf(buf, len, "attn_implementation: sdpa");
    else if (!strcmp(setting, "optimizer")) snprintf(buf, len, "optim: adamw_bnb_8bit");
    else if (!strcmp(setting, "seq")) snprintf(buf, len, "max_length: %lld", (long long)s->seq);
    else if (!strcmp(setting, "lora")) snprintf(buf, len, "use_peft: true, lora_r: %lld, lora_target_modules: all-linear",
                                               (long long)s->lora_rank);
    else if (!strcmp(setting, "quant")) snprintf(buf, len, "load_in_4bit: true, use_bnb_nested_quant: true");
    else return -1;
    return 0;
}

const ck_format ck_format_trainer = {
    .name = "trainer", .framework = "hf", .detect = detect, .keys = keys, .finish = finish, .spell = spell,
};

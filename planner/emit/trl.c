/* trl.c — the hf bundle for a preference or RL plan: train.py trains with TRL's
 * trainer for the method, its config class given the plan's settings as keys,
 * and trl.yaml states the same keys (with the model's, as TRL's ModelConfig
 * spells them) for memplan check to read back. One row per method: the
 * classes, where they are imported from, the keys the method adds; every key
 * is a field of the class at huggingface/trl@f2cd57710ae345ea6428ae95363267fcf38a3dc8
 * (tests/data/engines/trl_config_keys.csv; TrainingArguments' fields:
 * transformers_training_args.txt), the facts in trl_methods.csv. */
#include "emit/hf.h"
#include "emitters.h"
#include "common/errors.h"
#include "model/family.h"
#include "model/model.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* The TRL the keys were read at: VERSION at the commit says 1.10.0.dev0. */
#define TRL_COMMIT "f2cd57710ae345ea6428ae95363267fcf38a3dc8"
#define TRL_VERSION "1.10.0.dev0"

/* A key of the config, as both files write it. */
typedef enum { KV_BOOL, KV_INT, KV_REAL, KV_STR, KV_STRLIST, KV_NONE, KV_DICT } kv_kind;
typedef struct trl_kv {
    const char *key;
    kv_kind kind;
    char value[1100];            /* KV_DICT: "k1=v1,k2=v2" with v a bool, a name or a string; KV_STR
                                    may be a Hub id or a folder (any bytes: the quoting writers) */
    const char *py;              /* train.py gives a variable of the script instead (MODEL); NULL: the value */
} trl_kv;
enum { TRL_MAX_KEYS = 32 };

/* A method's constant key: its value as written. */
typedef struct trl_const {
    const char *key;
    kv_kind kind;
    const char *value;
} trl_const;

/* Where the reward comes from, as the trainer takes it. */
typedef enum {
    RW_NONE,                     /* no reward: an offline method */
    RW_FUNCTION,                 /* reward_funcs= a Python function in train.py (GRPO: no model on the GPU) */
    RW_FUNCS,                    /* reward_funcs= the reward model, loaded in train.py (a function under
                                    --reward-model none) */
    RW_MODEL_ARGS                /* reward_model= and value_model=, loaded from reward_model_path (PPO) */
} trl_reward;

/* How the trainer is called: model= first (most), or PPOTrainer's own order
 * (args, processing_class, model, ref_model, reward_model, train_dataset,
 * value_model: ppo_trainer.py 349-357, every one required but ref_model). */
typedef enum { CALL_MODEL, CALL_PPO } trl_call;

/* A method as TRL runs it (trl_methods.csv rows trainer_class, config_class, location). */
typedef struct trl_row {
    const char *config, *trainer;
    const char *module;          /* where both are imported from at the commit */
    const char *model_class;     /* what the policy is loaded as */
    const char *extra;           /* from_pretrained's further keywords */
    const char *lr;              /* the class's default learning_rate (trl_config_keys.csv) */
    const char *columns;         /* the data file's fields */
    const char *loss;            /* what the loss is, for the header */
    trl_const keys[6];           /* the method's own keys, ended by key NULL */
    bool max_length;             /* the class cuts rows at max_length: the plan's sequence */
    bool peft_in_trainer;        /* PEFT's adapter made by the trainer (peft_config=): a PeftModel given
                                    without one gets a second, reference adapter (dpo_trainer.py 649-670) */
    bool ref_model_arg;          /* the trainer takes ref_model= */
    bool precompute;             /* the class has precompute_ref_log_probs */
    /* an online method's rollout, in the class's words (NULL: the class has no such key) */
    const char *completion_key;  /* the completion's length */
    const char *generations_key; /* completions a prompt (GRPO's; online DPO makes 2, PPO 1) */
    bool vllm;                   /* use_vllm, vllm_mode, vllm_gpu_memory_utilization, vllm_enable_sleep_mode */
    const char *vllm_max_len_key;/* vLLM's longest sequence */
    trl_reward reward;
    trl_call call;
    bool beta_by_reference;      /* GRPO: beta 0.0 without a reference, 0.04 with (grpo_config.py 671) */
    bool value_model;            /* a value model trained whole beside the policy (PPO) */
    const char *ref_cite;        /* where the trainer takes its reference: a copy, or the adapter disabled */
} trl_row;

static const trl_row rows[MP_NMETHOD] = {
    /* trl/trainer/dpo_config.py: loss_type a list (234), beta 0.1 (283), max_length 1024 (188) */
    [MP_METHOD_DPO] = {"DPOConfig", "DPOTrainer", "trl", "AutoModelForCausalLM", "", "1.0e-6", "prompt, chosen, rejected",
                       "TRL's DPO loss (loss_type [\"sigmoid\"], dpo_trainer.py 1396-1435)",
                       {{"loss_type", KV_STRLIST, "sigmoid"}, {"beta", KV_REAL, "0.1"}}, true, true, true, true},
    [MP_METHOD_IPO] = {"DPOConfig", "DPOTrainer", "trl", "AutoModelForCausalLM", "", "1.0e-6", "prompt, chosen, rejected",
                       "TRL's IPO loss (DPOConfig loss_type [\"ipo\"], dpo_trainer.py 1440-1451)",
                       {{"loss_type", KV_STRLIST, "ipo"}, {"beta", KV_REAL, "0.1"}}, true, true, true, true},
    /* trl/experimental/cpo/cpo_config.py: loss_type sigmoid (122), cpo_alpha 1.0 (133), simpo_gamma 0.5 (137) */
    [MP_METHOD_CPO] = {"CPOConfig", "CPOTrainer", "trl.experimental.cpo", "AutoModelForCausalLM", "", "1.0e-6",
                       "prompt, chosen, rejected", "TRL's CPO loss and the chosen NLL (cpo_trainer.py 825-889)",
                       {{"loss_type", KV_STR, "sigmoid"}, {"beta", KV_REAL, "0.1"}, {"cpo_alpha", KV_REAL, "1.0"}},
                       true, false, false, false},
    [MP_METHOD_SIMPO] = {"CPOConfig", "CPOTrainer", "trl.experimental.cpo", "AutoModelForCausalLM", "", "1.0e-6",
                         "prompt, chosen, rejected",
                         "SimPO: CPOConfig loss_type \"simpo\" and the chosen NLL (cpo_trainer.py 714-721, 841-844)",
                         {{"loss_type", KV_STR, "simpo"}, {"beta", KV_REAL, "0.1"}, {"cpo_alpha", KV_REAL, "1.0"},
                          {"simpo_gamma", KV_REAL, "0.5"}},
                         true, false, false, false},
    /* trl/experimental/orpo/orpo_config.py: beta 0.1 (91), max_length 1024 (80); no key of its own */
    [MP_METHOD_ORPO] = {"ORPOConfig", "ORPOTrainer", "trl.experimental.orpo", "AutoModelForCausalLM", "", "1.0e-6",
                        "prompt, chosen, rejected", "TRL's ORPO loss: the chosen NLL and the odds ratio "
                        "(orpo_trainer.py 782-851)",
                        {{"beta", KV_REAL, "0.1"}}, true, false, false, false},
    /* trl/trainer/kto_config.py: loss_type kto (192), beta 0.1 (199), the weights 1.0 (206-213) */
    [MP_METHOD_KTO] = {"KTOConfig", "KTOTrainer", "trl", "AutoModelForCausalLM", "", "1.0e-6",
                       "prompt, completion, label (true: desirable)",
                       "TRL's KTO loss with its KL batch (kto_trainer.py 1096-1111, 1280-1330)",
                       {{"loss_type", KV_STR, "kto"}, {"beta", KV_REAL, "0.1"}, {"desirable_weight", KV_REAL, "1.0"},
                        {"undesirable_weight", KV_REAL, "1.0"}},
                       true, true, true, true},
    /* trl/trainer/reward_config.py: max_length 1024 (142), center_rewards_coefficient None (155), the
     * only key of its own: written at its default so the file says which class it is */
    [MP_METHOD_REWARD] = {"RewardConfig", "RewardTrainer", "trl", "AutoModelForSequenceClassification",
                          ", num_labels=1", "1.0e-4", "chosen, rejected (and prompt, if any)",
                          "Bradley-Terry on one score per row (reward_trainer.py 744-756)",
                          {{"center_rewards_coefficient", KV_NONE, ""}}, true, false, false, false},
    /* trl/trainer/grpo_config.py: num_generations (474), max_completion_length (488), beta (671); no
     * max_length nor max_prompt_length at the commit: train.py cuts the prompts */
    [MP_METHOD_GRPO] = {"GRPOConfig", "GRPOTrainer", "trl", "AutoModelForCausalLM", "", "1.0e-6", "prompt",
                        "TRL's GRPO loss (loss_type \"dapo\", grpo_config.py 791) on the generated completions",
                        {{NULL}}, false, true, false, false, "max_completion_length", "num_generations", true,
                        "vllm_max_model_length", RW_FUNCTION, CALL_MODEL, true, false, NULL},
    /* trl/experimental/online_dpo/online_dpo_config.py: max_new_tokens 64 (180), max_length 512 (184, the
     * prompt and completion: online_dpo_trainer.py 465), beta [0.1] (246, one value a float: 381-382),
     * loss_type sigmoid (255), vLLM keys (266-340; no vllm_max_model_length: vLLM serves max_length +
     * max_new_tokens, online_dpo_trainer.py 465); reward_model_path (176) is the examples' key
     * (examples/scripts/online_dpo.py 85-95): the trainer takes reward_funcs */
    [MP_METHOD_ONLINE_DPO] = {"OnlineDPOConfig", "OnlineDPOTrainer", "trl.experimental.online_dpo",
                              "AutoModelForCausalLM", "", "5.0e-7", "prompt",
                              "TRL's online DPO loss (loss_type \"sigmoid\") on two completions a prompt, ranked by "
                              "the reward (online_dpo_trainer.py 1097-1240)",
                              {{"loss_type", KV_STR, "sigmoid"}, {"beta", KV_REAL, "0.1"}}, true, true, true, false,
                              "max_new_tokens", NULL, true, NULL, RW_FUNCS, CALL_MODEL, false, false,
                              "online_dpo_trainer.py 317-328"},
    /* trl/experimental/ppo/ppo_config.py: num_mini_batches 1 (133), local_rollout_forward_batch_size 64
     * (141), num_sample_generations (145), response_length (151), sft_model_path (181),
     * reward_model_path (220), num_ppo_epochs 4 (232); no max_length, no prompt length, no vLLM */
    [MP_METHOD_PPO] = {"PPOConfig", "PPOTrainer", "trl.experimental.ppo", "AutoModelForCausalLM", "", "3.0e-6",
                       "prompt", "TRL's PPO: the clipped policy loss and the value loss (vf_coef 0.1) on generated "
                       "completions (ppo_trainer.py 826-848)",
                       {{"num_ppo_epochs", KV_INT, "4"}, {"num_mini_batches", KV_INT, "1"},
                        {"local_rollout_forward_batch_size", KV_INT, "64"}, {"num_sample_generations", KV_INT, "0"}},
                       false, true, true, false, "response_length", NULL, false, NULL, RW_MODEL_ARGS, CALL_PPO,
                       false, true, "ppo_trainer.py 439-444, 577-588"},
};

static const trl_row *row_of(const mp_settings *s)
{
    return s->method > MP_METHOD_SFT && s->method < MP_NMETHOD && rows[s->method].config ? &rows[s->method] : NULL;
}

bool emit_trl_plan(const mp_settings *s) { return s->method != MP_METHOD_SFT; }

/* What train.py and trl.yaml name where memplan has no Hub id (hf.c's MODEL says the same). */
#define MODEL_PLACEHOLDER "path/to/model"
#define REWARD_PLACEHOLDER "path/to/reward-model"

/* The reward model as the plan counts it: --reward-model's Hub id or folder, else none known. */
static const char *reward_id(const mp_settings *s)
{
    return s->reward_model && s->reward_model->hf_id[0] ? s->reward_model->hf_id : REWARD_PLACEHOLDER;
}

/* GRPO's beta: 0.0 (TRL's default since v0.19.0, grpo_config.py 671) unless a
 * reference is planned, then 0.04 (TRL's default before it). */
static bool grpo_reference(const mp_settings *s)
{
    mp_reference r = mp_reference_used(s);
    return r == MP_REF_MODEL || r == MP_REF_ADAPTER;
}

#define NOFORM(...) do { snprintf(err, MP_ERR_LEN, __VA_ARGS__); return -1; } while (0)
int emit_trl_check(const mp_model *m, const mp_settings *s, char *err)
{
    (void)m;
    const trl_row *r = row_of(s);
    const char *method = mp_method_name(s->method);
    if (!r)
        NOFORM("--method %s has no form in 'hf' yet: memplan plans TRL's %s but writes no script for it", method,
               mp_method_desc_of(s->method)->trainer);
    const mp_reference ref = mp_reference_used(s);
    if (!r->ref_model_arg && r->beta_by_reference && ref == MP_REF_MODEL && s->lora_rank)
        NOFORM("--method %s --reference model with LoRA has no form in TRL: %s takes no ref_model "
               "(grpo_trainer.py 303-324) and under PEFT its reference is the adapter disabled (--reference adapter)",
               method, r->trainer);
    if (ref == MP_REF_PRECOMPUTED && !r->precompute)
        NOFORM("--reference precomputed has no form in TRL's %s: %s has no precompute_ref_log_probs (the "
               "reference runs each step on the completions it generates)", r->trainer, r->config);
    if (s->value_lora)
        NOFORM("--value-lora has no form in TRL's %s: it trains the value model whole beside the policy's "
               "adapters (ppo_trainer.py 275-294, 492-496); the value model with the policy's adapters is "
               "ms-swift's", r->trainer);
    if (s->rollout != MP_ROLLOUT_GENERATE && !r->vllm)
        NOFORM("--rollout %s has no form in TRL's %s: %s has no use_vllm (it generates with transformers)",
               mp_rollout_name(s->rollout), r->trainer, r->config);
    if (s->rollout_max_len && !r->vllm_max_len_key)
        NOFORM("--rollout-max-len has no form in TRL's %s: its vLLM serves max_length + max_new_tokens, %lld "
               "tokens here (online_dpo_trainer.py 465): leave --rollout-max-len out", r->trainer,
               (long long)(s->seq + s->completion_len));
    if (r->reward == RW_MODEL_ARGS && !mp_reward_model_used(s))
        NOFORM("--reward-model none has no form in TRL's %s: it scores with a reward model (reward_model=, "
               "ppo_trainer.py 349-357)", r->trainer);
    /* the value model trains whole in the plan's precision: 16-bit weights with fp32 masters are DeepSpeed's
     * or FSDP's, not the Trainer's alone (hf.c check_hf) */
    emit_engine e;
    if (r->value_model && s->lora_rank && mp_precision_desc_of(s->precision)->master_copy &&
        !emit_engine_of(s, &e, err) && e.kind != EMIT_DEEPSPEED && e.kind != EMIT_FSDP)
        NOFORM("--method %s with LoRA under --precision %s has no form in the Trainer alone: TRL trains the value "
               "model whole, and its 16-bit weights with fp32 masters need DeepSpeed or FSDP: use --precision %s",
               method, mp_precision_name(s->precision),
               mp_precision_desc_of(s->precision)->needs_bf16 ? "amp-bf16" : "amp-fp16");
    if (r->peft_in_trainer && s->lora_rank && mp_precision_pure16(mp_precision_desc_of(s->precision)))
        NOFORM("--precision %s with LoRA has no form in TRL's %s: it wraps the model with PEFT's default, which "
               "upcasts the adapters to fp32 (dpo_trainer.py 627-647): use --precision mixed-bf16",
               mp_precision_name(s->precision), r->trainer);
    /* the Trainer's gradient_checkpointing checkpoints whole layers (trl base_config.py 61-66) */
    if (s->checkpointing == MP_CKPT_SELECTIVE)
        NOFORM("--checkpointing selective has no form in TRL's %s: its gradient_checkpointing checkpoints whole "
               "layers (--checkpointing full)", r->config);
    /* a quantised base loads its other weights in the compute dtype (hf.c): the mixed-* plan, not autocast's */
    if (s->quant != MP_QUANT_NONE && !mp_precision_desc_of(s->precision)->master_copy && s->precision != MP_FP32 &&
        !mp_precision_pure16(mp_precision_desc_of(s->precision)))
        NOFORM("--precision %s with a quantised base has no form in the script TRL runs: the base's other weights "
               "load in 16 bits (--precision %s)", mp_precision_name(s->precision),
               mp_precision_desc_of(s->precision)->needs_bf16 ? "mixed-bf16" : "mixed-fp16");
    if (s->loader == MP_LOAD_STREAM)
        NOFORM("--loader stream has no form in TRL's %s: it tokenises the whole dataset before training", r->trainer);
    return 0;
}

/* ---------- the keys ---------- */

static trl_kv *kv_add(trl_kv *kv, int *n, const char *key, kv_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static trl_kv *kv_add(trl_kv *kv, int *n, const char *key, kv_kind kind, const char *fmt, ...)
{
    if (*n == TRL_MAX_KEYS) return NULL;
    trl_kv *k = &kv[(*n)++];
    k->key = key, k->kind = kind, k->py = NULL;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(k->value, sizeof k->value, fmt, ap);
    va_end(ap);
    return k;
}

/* A Python float's digits: 0.3, 1.0 */
static const char *real_text(double v, char *buf, size_t len)
{
    snprintf(buf, len, "%g", v);
    if (!strpbrk(buf, ".en")) snprintf(buf + strlen(buf), len - strlen(buf), ".0");
    return buf;
}

/* torch.bfloat16 -> bfloat16 */
static const char *dtype_word(const char *torch_dtype)
{
    const char *dot = strchr(torch_dtype, '.');
    return dot ? dot + 1 : torch_dtype;
}

/* The keys train.py gives the config, in order: the Trainer's (as the SFT
 * script gives TrainingArguments), then the method's. */
static int trl_keys(const mp_plan *p, trl_kv *kv)
{
    const mp_settings *s = p->s;
    const trl_row *r = row_of(s);
    const hf_precision pr = hf_precision_of(s);
    const bool ckpt = s->checkpointing != MP_CKPT_NONE;
    char num[32];
    int n = 0;
    kv_add(kv, &n, "per_device_train_batch_size", KV_INT, "%lld", (long long)s->batch);
    kv_add(kv, &n, "gradient_accumulation_steps", KV_INT, "%lld", (long long)s->accum);
    /* TRL's _BaseConfig turns bf16 on unless fp16 (base_config.py 67-74): both are written */
    kv_add(kv, &n, "bf16", KV_BOOL, "%s", pr.flag && !strcmp(pr.flag, "bf16") ? "true" : "false");
    kv_add(kv, &n, "fp16", KV_BOOL, "%s", pr.flag && !strcmp(pr.flag, "fp16") ? "true" : "false");
    /* and gradient checkpointing on (61-66): written either way */
    kv_add(kv, &n, "gradient_checkpointing", KV_BOOL, "%s", ckpt ? "true" : "false");
    if (ckpt) kv_add(kv, &n, "gradient_checkpointing_kwargs", KV_DICT, "use_reentrant=false");
    kv_add(kv, &n, "optim", KV_STR, "%s", emit_hf_optim(s->optimizer));
    if (s->compile) kv_add(kv, &n, "torch_compile", KV_BOOL, "true");
    kv_add(kv, &n, "logging_steps", KV_INT, "10");
    kv_add(kv, &n, "report_to", KV_STR, "none");
    if (!r) return n;
    for (const trl_const *c = r->keys; c->key; c++) kv_add(kv, &n, c->key, c->kind, "%s", c->value);
    if (r->max_length) kv_add(kv, &n, "max_length", KV_INT, "%lld", (long long)s->seq);
    if (r->precompute)
        kv_add(kv, &n, "precompute_ref_log_probs", KV_BOOL, "%s",
               mp_reference_used(s) == MP_REF_PRECOMPUTED ? "true" : "false");
    if (r->generations_key) kv_add(kv, &n, r->generations_key, KV_INT, "%lld", (long long)s->generations);
    if (r->completion_key) kv_add(kv, &n, r->completion_key, KV_INT, "%lld", (long long)s->completion_len);
    if (r->beta_by_reference) {
        kv_add(kv, &n, "beta", KV_REAL, "%s", grpo_reference(s) ? "0.04" : "0.0");
        /* the reference copy GRPOTrainer loads itself (grpo_trainer.py 962-971): like the policy */
        if (mp_reference_used(s) == MP_REF_MODEL) {
            const mp_family *f = emit_family_of(p->m);
            kv_add(kv, &n, "model_init_kwargs", KV_DICT, "dtype=\"%s\",attn_implementation=\"%s\"%s",
                   dtype_word(pr.load_dtype), hf_attn(s), f && f->remote_code ? ",trust_remote_code=true" : "");
        }
    }
    /* the models PPOConfig names (ppo_config.py 181, 220; examples/scripts/ppo/ppo.py 90-96 loads them),
     * OnlineDPOConfig's reward_model_path (176; examples/scripts/online_dpo.py 85-95): train.py's
     * variables, the plan's models in trl.yaml */
    if (r->call == CALL_PPO) {
        trl_kv *k = kv_add(kv, &n, "sft_model_path", KV_STR, "%s", p->m->hf_id[0] ? p->m->hf_id : MODEL_PLACEHOLDER);
        if (k) k->py = "MODEL";
    }
    if ((r->reward == RW_FUNCS || r->reward == RW_MODEL_ARGS) && mp_reward_model_used(s)) {
        trl_kv *k = kv_add(kv, &n, "reward_model_path", KV_STR, "%s", reward_id(s));
        if (k) k->py = "REWARD";
    }
    if (r->call == CALL_PPO) {
        /* PPOTrainer runs total_episodes / (batch x accumulation x processes) updates and ignores max_steps
         * (ppo_trainer.py 449-478, 669): train.py counts them from --steps */
        trl_kv *k = kv_add(kv, &n, "total_episodes", KV_INT, "%lld",
                           (long long)(1000 * s->batch * s->accum * (mp_dp_degree(s) > 0 ? mp_dp_degree(s) : 1)));
        if (k) k->py = "EPISODES";
    }
    if (r->vllm) {
        const bool vllm = s->rollout != MP_ROLLOUT_GENERATE;
        kv_add(kv, &n, "use_vllm", KV_BOOL, "%s", vllm ? "true" : "false");
        if (s->rollout == MP_ROLLOUT_SERVER) {
            kv_add(kv, &n, "vllm_mode", KV_STR, "server");
        } else if (vllm) {
            kv_add(kv, &n, "vllm_mode", KV_STR, "colocate");
            kv_add(kv, &n, "vllm_gpu_memory_utilization", KV_REAL, "%s", real_text(mp_rollout_memory(s), num, sizeof num));
            kv_add(kv, &n, "vllm_enable_sleep_mode", KV_BOOL, "%s", s->rollout_sleep ? "true" : "false");
            if (s->rollout_max_len && r->vllm_max_len_key)
                kv_add(kv, &n, r->vllm_max_len_key, KV_INT, "%lld", (long long)s->rollout_max_len);
        }
    }
    return n;
}

/* One value in Python (py) or YAML. Strings are memplan's own words. */
static void put_value(sbuf *b, const trl_kv *k, bool py)
{
    if (py && k->py) return sbuf_put(b, "%s", k->py);
    switch (k->kind) {
    case KV_BOOL:
        sbuf_put(b, "%s", py ? (!strcmp(k->value, "true") ? "True" : "False") : k->value);
        break;
    case KV_INT: case KV_REAL: sbuf_put(b, "%s", k->value); break;
    case KV_NONE: sbuf_put(b, "%s", py ? "None" : "null"); break;
    case KV_STR:
        if (py) put_python_str(b, k->key, k->value);
        else put_yaml_str(b, k->key, k->value);
        break;
    case KV_STRLIST:
        sbuf_put(b, "[");
        if (py) put_python_str(b, k->key, k->value);
        else put_yaml_str(b, k->key, k->value);
        sbuf_put(b, "]");
        break;
    case KV_DICT: {
        char buf[sizeof k->value];
        snprintf(buf, sizeof buf, "%s", k->value);
        sbuf_put(b, "{");
        int i = 0;
        for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save), i++) {
            char *eq = strchr(t, '=');
            if (!eq) continue;
            *eq = 0;
            const char *v = eq + 1;
            if (py) sbuf_put(b, "%s\"%s\": %s", i ? ", " : "", t,
                             !strcmp(v, "true") ? "True" : !strcmp(v, "false") ? "False" : v);
            else sbuf_put(b, "%s%s: %s", i ? ", " : "", t, v);
        }
        sbuf_put(b, "}");
        break;
    }
    }
}

/* ---------- train.py ---------- */

const char *emit_trl_packages(const mp_settings *s)
{
    if (!emit_trl_plan(s)) return "";
    const trl_row *r = row_of(s);
    return r && r->vllm && s->rollout != MP_ROLLOUT_GENERATE ? ", trl " TRL_VERSION ", vllm"
                                                                           : ", trl " TRL_VERSION;
}

static const char *reference_words(const mp_settings *s)
{
    switch (mp_reference_used(s)) {
    case MP_REF_MODEL: return "a frozen copy of the model, loaded like the policy";
    case MP_REF_ADAPTER: return "the policy with its LoRA adapter disabled (no second model)";
    case MP_REF_PRECOMPUTED: return "log-probabilities computed before training (precompute_ref_log_probs)";
    default: return "none";
    }
}

/* How many completions a prompt the trainer makes (GRPO's is a key). */
static long long per_prompt(const mp_settings *s, const trl_row *r)
{
    return r->generations_key ? (long long)s->generations : r->call == CALL_PPO ? 1 : 2;
}

static void rollout_words(sbuf *b, const mp_settings *s)
{
    if (s->rollout == MP_ROLLOUT_SERVER)
        sbuf_put(b, "a vLLM server on other GPUs (trl vllm-serve, vllm_mode server): none of it here\n");
    else if (s->rollout == MP_ROLLOUT_VLLM)
        sbuf_put(b, "a colocated vLLM keeping %g of the GPU%s\n", mp_rollout_memory(s),
                 s->rollout_sleep ? ", asleep while the policy trains" : "");
    else sbuf_put(b, "transformers' generate in this process\n");
}

void emit_trl_summary(sbuf *b, const mp_settings *s)
{
    const trl_row *r = row_of(s);
    if (!r) return;
    sbuf_put(b, "#   method         %s: TRL's %s with %s (from %s; TRL " TRL_VERSION ", huggingface/trl@%.8s)\n",
             mp_method_name(s->method), r->trainer, r->config, r->module, TRL_COMMIT);
    sbuf_put(b, "#   loss           %s\n", r->loss);
    sbuf_put(b, "#   reference      %s: %s\n", mp_reference_name(mp_reference_used(s)), reference_words(s));
    if (r->completion_key) {
        sbuf_put(b, "#   rollout        %lld completion%s a prompt, prompts of %lld tokens, completions of %lld, ",
                 per_prompt(s, r), per_prompt(s, r) == 1 ? "" : "s", (long long)s->prompt_len,
                 (long long)s->completion_len);
        rollout_words(b, s);
    }
    if (r->reward != RW_FUNCTION && mp_reward_model_used(s))
        sbuf_put(b, "#   reward model   %s, frozen, with a one-output score head\n",
                 s->reward_model ? "--reward-model's" : "the policy's shape (memplan has no other)");
    if (r->value_model)
        sbuf_put(b, "#   value model    %s, trained whole beside the policy by its optimizer\n",
                 s->value_model ? "--value-model's" : "the reward model's shape");
}

/* The reference, as the trainer takes it: a comment that says which. */
static void trl_reference(sbuf *b, const mp_plan *p, const trl_row *r, const mp_family *f)
{
    const mp_settings *s = p->s;
    const mp_reference ref = mp_reference_used(s);
    if (r->beta_by_reference) {
        if (ref == MP_REF_NONE)
            sbuf_put(b, "# no reference: beta 0.0 (GRPOConfig's default since TRL v0.19.0, grpo_config.py 671), so the\n"
                        "# trainer loads none and runs no reference forward (grpo_trainer.py 953-957)\n");
        else
            sbuf_put(b, "# the reference the plan counts: beta 0.04 (TRL's default before v0.19.0) and %s\n",
                     ref == MP_REF_ADAPTER ? "the policy with its\n# adapter disabled (grpo_trainer.py 958-961)"
                                           : "a copy the trainer\n# loads with model_init_kwargs, like the policy "
                                             "(grpo_trainer.py 962-971)");
        return;
    }
    if (!r->ref_model_arg) {
        sbuf_put(b, "# no reference model: %s computes its loss from the policy alone\n", r->trainer);
        return;
    }
    if (ref == MP_REF_PRECOMPUTED) {
        sbuf_put(b, "# the reference: precompute_ref_log_probs, a pass %s before training whose sums are kept\n"
                    "# with the data on the host (dpo_trainer.py 957-978): no reference on the GPU while it trains\n",
                 s->lora_rank ? "with the adapter disabled" : "of the policy");
    } else if (ref == MP_REF_ADAPTER && r->ref_cite) {
        sbuf_put(b, "# the reference: TRL's default under PEFT, the policy with its adapter disabled (%s):\n"
                    "# no second model. The trainer makes the adapter (peft_config).\n", r->ref_cite);
    } else if (ref == MP_REF_ADAPTER) {
        sbuf_put(b, "# the reference: TRL's default under PEFT, the policy with its adapter disabled\n"
                    "# (dpo_trainer.py 894-898): no second model. The trainer makes the adapter (peft_config):\n"
                    "# a PeftModel given without it would get a second, reference adapter (649-670).\n");
    } else if (ref == MP_REF_MODEL && r->ref_cite) {
        sbuf_put(b, "# the reference: a frozen copy of the model, loaded here like the policy%s (TRL would %s, %s)\n",
                 s->lora_rank ? " (the base, without\n# adapters)" : "",
                 s->lora_rank ? "disable the adapter instead" : "deepcopy the policy", r->ref_cite);
        hf_from_pretrained(b, p->m, s, f, "ref_model", "AutoModelForCausalLM", "");
    } else if (ref == MP_REF_MODEL) {
        sbuf_put(b, "# the reference: a frozen copy of the model, loaded here like the policy%s. %s\n",
                 s->lora_rank ? " (the base, without\n# adapters)" : "",
                 s->lora_rank ? "Under PEFT TRL would disable the adapter instead: an explicit ref_model keeps the copy."
                              : "TRL would load one itself\n# (dpo_trainer.py 899-908), in float32 unless "
                                "model_init_kwargs names a dtype.");
        hf_from_pretrained(b, p->m, s, f, "ref_model", "AutoModelForCausalLM", "");
    }
}

/* train.py's arguments for the other models: their Hub ids or folders. */
static void trl_more_args(sbuf *b, const mp_settings *s)
{
    const trl_row *r = row_of(s);
    if (!r || r->reward == RW_FUNCTION || r->reward == RW_NONE || !mp_reward_model_used(s)) return;
    if (s->reward_model && s->reward_model->hf_id[0]) {
        sbuf_put(b, "cli.add_argument(\"--reward-model\", default=");
        put_python_str(b, "the reward model's Hub id", s->reward_model->hf_id);
        sbuf_put(b, ",\n                 help=\"the reward model, a Hub id or a folder (default: the one planned)\")\n");
    } else {
        sbuf_put(b, "# memplan has no Hub id for the reward model it planned (%s, with a one-output score head):\n"
                    "# give yours, a sequence classifier of that shape\n"
                    "cli.add_argument(\"--reward-model\", required=True,\n"
                    "                 help=\"the reward model, a Hub id or a folder: SET IT (the plan counted %s)\")\n",
                 s->reward_model ? "--reward-model's shape" : "the policy's shape",
                 s->reward_model ? "--reward-model's shape" : "one of the policy's shape");
    }
    if (!r->value_model) return;
    sbuf_put(b, "cli.add_argument(\"--value-model\", default=");
    if (s->value_model && s->value_model->hf_id[0]) put_python_str(b, "the value model's Hub id", s->value_model->hf_id);
    else sbuf_put(b, "None");
    sbuf_put(b, ",\n                 help=\"PPO's value model (default: %s)\")\n",
             s->value_model && s->value_model->hf_id[0] ? "the one planned"
                                                        : "the reward model, as examples/scripts/ppo/ppo.py 90-92");
}

/* The reward model (and PPO's value model), loaded as the plan counts them: unquantised, the reward
 * in the policy's load dtype, the value model trained whole as a full fine-tune loads. */
static void trl_other_models(sbuf *b, const mp_plan *p, const trl_row *r, const mp_family *f)
{
    const mp_settings *s = p->s;
    const hf_precision pr = hf_precision_of(s);
    const char *remote = f && f->remote_code ? ", trust_remote_code=True" : "";
    if (r->reward == RW_FUNCTION || r->reward == RW_NONE || !mp_reward_model_used(s)) return;
    sbuf_put(b, "REWARD = ARGS.reward_model\n# the reward model, frozen: AutoModelForSequenceClassification with one "
                "output, as %s\nreward_model = AutoModelForSequenceClassification.from_pretrained(REWARD, num_labels=1, "
                "torch_dtype=%s,\n    attn_implementation=\"%s\"%s)\n",
             r->call == CALL_PPO ? "examples/scripts/ppo/ppo.py 93-95"
                                 : "OnlineDPOTrainer loads one by name (online_dpo_trainer.py 211-216)",
             s->quant != MP_QUANT_NONE ? pr.compute : pr.load_dtype, hf_attn(s), remote);
    if (!r->value_model) return;
    sbuf_put(b, "VALUE = ARGS.value_model or REWARD\n# the value model, trained whole by the policy's optimizer "
                "(ppo_trainer.py 275-294, 492-496)\nvalue_model = AutoModelForSequenceClassification.from_pretrained("
                "VALUE, num_labels=1, torch_dtype=%s,\n    attn_implementation=\"%s\"%s)\n",
             pr.pure ? "torch.bfloat16" : "torch.float32", hf_attn(s), remote);
}

static void trl_data(sbuf *b, const mp_settings *s, const trl_row *r)
{
    sbuf_put(b, "ds = load_dataset(\"json\", data_files=DATA, split=\"train\")  # %s\n", r->columns);
    if (!r->completion_key) return;
    if (r->max_length)
        sbuf_put(b, "\nPROMPT_LEN = %lld  # prompt tokens, as the plan assumed: max_length less %s\n\n",
                 (long long)s->prompt_len, r->completion_key);
    else
        sbuf_put(b, "\nPROMPT_LEN = %lld  # prompt tokens, as the plan assumed: %s has no prompt length at the commit\n\n",
                 (long long)s->prompt_len, r->config);
    if (r->call == CALL_PPO) {
        sbuf_put(b, "def cut(example):  # PPOTrainer takes tokenised prompts (examples/scripts/ppo/ppo.py 115-130)\n"
                    "    return {\"input_ids\": tok(example[\"prompt\"], add_special_tokens=False)[\"input_ids\"][:PROMPT_LEN]}\n\n"
                    "ds = ds.map(cut, remove_columns=ds.column_names)\n"
                    "eval_ds = ds.select(range(min(8, len(ds))))  # PPOTrainer makes an eval loader; it samples none "
                    "(num_sample_generations 0)\n");
        return;
    }
    sbuf_put(b, "def cut(example):\n"
                "    ids = tok(example[\"prompt\"], add_special_tokens=False)[\"input_ids\"][:PROMPT_LEN]\n"
                "    return {\"prompt\": tok.decode(ids)}\n\n"
                "ds = ds.map(cut)\n");
    if (r->reward == RW_FUNCTION || (r->reward == RW_FUNCS && !mp_reward_model_used(s)))
        sbuf_put(b, "\ndef reward(completions, **kwargs):\n"
                    "    \"\"\"Put your reward here: one score per completion. A function costs no GPU memory; a reward\n"
                    "    model given as reward_funcs would load beside the policy, which the plan did not count.\n"
                    "    This one rewards completions that repeat themselves less.\"\"\"\n"
                    "    return [len(set(c.split())) / max(1, len(c.split())) for c in completions]\n");
}

static void trl_train(sbuf *b, const mp_plan *p, const trl_row *r)
{
    const mp_settings *s = p->s;
    trl_kv kv[TRL_MAX_KEYS];
    int n = trl_keys(p, kv);
    if (r->call == CALL_PPO)
        sbuf_put(b, "\n# PPOTrainer runs total_episodes / (micro-batch x accumulation x processes) updates and ignores\n"
                    "# max_steps (ppo_trainer.py 449-478, 669): --steps updates\n"
                    "EPISODES = ARGS.steps * %lld * int(os.environ.get(\"WORLD_SIZE\", \"1\"))\n",
                 (long long)(s->batch * s->accum));
    sbuf_put(b, "\nargs = %s(output_dir=ARGS.output, learning_rate=ARGS.lr, max_steps=ARGS.steps,\n"
                "                deepspeed=ARGS.deepspeed", r->config);
    for (int i = 0; i < n; i++) {
        sbuf_put(b, ",%s%s=", i % 3 == 0 ? "\n                " : " ", kv[i].key);
        put_value(b, &kv[i], true);
    }
    sbuf_put(b, ")\n");
    const mp_reference ref = mp_reference_used(s);
    const bool reward_model = r->reward != RW_FUNCTION && mp_reward_model_used(s);
    if (r->call == CALL_PPO) {
        /* PPOTrainer(args, processing_class, model, ref_model, reward_model, train_dataset, value_model, ...)
         * (ppo_trainer.py 349-364) */
        sbuf_put(b, "trainer = %s(args=args, processing_class=tok, model=model, ref_model=%s,\n"
                    "                     reward_model=reward_model, train_dataset=ds, value_model=value_model,\n"
                    "                     eval_dataset=eval_ds%s)\n",
                 r->trainer, ref == MP_REF_MODEL ? "ref_model" : "None",
                 s->lora_rank && r->peft_in_trainer ? ", peft_config=lora" : "");
    } else {
        sbuf_put(b, "trainer = %s(model=model, args=args, train_dataset=ds, processing_class=tok", r->trainer);
        if (r->reward == RW_FUNCTION || r->reward == RW_FUNCS)
            sbuf_put(b, ", reward_funcs=%s", reward_model ? "reward_model" : "reward");
        if (r->ref_model_arg && ref == MP_REF_MODEL) sbuf_put(b, ", ref_model=ref_model");
        if (s->lora_rank && r->peft_in_trainer) sbuf_put(b, ", peft_config=lora");
        sbuf_put(b, ")\n");
    }
    sbuf_put(b, "trainer.train()\ntrainer.save_model(ARGS.output)\ntok.save_pretrained(ARGS.output)\n");
}

void emit_trl_script(sbuf *b, const mp_plan *p)
{
    const mp_model *m = p->m;
    const mp_settings *s = p->s;
    const mp_family *f = emit_family_of(m);
    const trl_row *r = row_of(s);
    if (!r) return sbuf_fail(b, "--method %s has no TRL trainer memplan writes", mp_method_name(s->method));
    const bool wrap = s->lora_rank && !r->peft_in_trainer;
    const bool scorer = r->reward != RW_FUNCTION && r->reward != RW_NONE && mp_reward_model_used(s);
    hf_summary(b, p, f);
    sbuf_put(b, "import argparse\n");
    if (s->expandable_segments)
        sbuf_put(b, "import os\n\nos.environ.setdefault(\"PYTORCH_CUDA_ALLOC_CONF\", \"expandable_segments:True\")\n");
    else if (r->call == CALL_PPO)
        sbuf_put(b, "import os\n");
    sbuf_put(b, "from importlib.metadata import version as package_version\n\nimport torch\n"
                "from datasets import load_dataset\nfrom packaging.version import Version\n");
    sbuf_put(b, "from transformers import %s, AutoTokenizer%s%s\n", r->model_class,
             scorer && strcmp(r->model_class, "AutoModelForSequenceClassification") ? ", AutoModelForSequenceClassification"
                                                                                     : "",
             hf_quantised_at_load(m, s) ? ", BitsAndBytesConfig" : "");
    if (s->lora_rank) sbuf_put(b, "from peft import LoraConfig%s\n", wrap ? ", get_peft_model" : "");
    sbuf_put(b, "from %s import %s, %s\n\n", r->module, r->config, r->trainer);
    /* the keys are the class's at the commit: an older TRL lacks some, a later one may rename them */
    sbuf_put(b, "# the config keys below are %s's at huggingface/trl@" TRL_COMMIT " (" TRL_VERSION ")\n"
                "if Version(package_version(\"trl\")) < Version(\"" TRL_VERSION "\"):\n"
                "    raise SystemExit(\"this script needs trl >= " TRL_VERSION ": pip install \"\n"
                "                     \"git+https://github.com/huggingface/trl@" TRL_COMMIT "\")\n\n", r->config);
    hf_bitsandbytes_check(b, m, s, true);
    char help[160];
    snprintf(help, sizeof help, "a JSON-lines file, one example a line: %s", r->columns);
    hf_command_line(b, m, s, help, r->lr, trl_more_args);
    hf_quant_config(b, m, s);
    hf_from_pretrained(b, m, s, f, "model", r->model_class, r->extra);
    if (s->lora_rank) {
        hf_lora_config(b, m, s, f, s->method == MP_METHOD_REWARD ? "SEQ_CLS" : "CAUSAL_LM", wrap);
        if (s->method == MP_METHOD_REWARD)
            sbuf_put(b, "# PEFT's SEQ_CLS task trains the score head (hidden size x 1) in full beside the adapter\n");
    }
    trl_reference(b, p, r, f);
    trl_other_models(b, p, r, f);
    hf_tokenizer(b, f);
    if (s->method == MP_METHOD_REWARD) sbuf_put(b, "model.config.pad_token_id = tok.pad_token_id\n");
    if (scorer) {
        sbuf_put(b, "reward_model.config.pad_token_id = tok.pad_token_id  # the score is read at the last real token\n");
        if (r->value_model) sbuf_put(b, "value_model.config.pad_token_id = tok.pad_token_id\n");
    }
    if (r->completion_key && r->reward != RW_FUNCTION)
        sbuf_put(b, "tok.padding_side = \"left\"  # the prompts are continued: padded on the left (%s)\n",
                 r->call == CALL_PPO ? "examples/scripts/ppo/ppo.py 88" : "examples/scripts/online_dpo.py 102-105");
    trl_data(b, s, r);
    trl_train(b, p, r);
}

/* ---------- trl.yaml ---------- */

static void yaml_line(sbuf *b, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void yaml_line(sbuf *b, const char *key, const char *fmt, ...)
{
    char v[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v, sizeof v, fmt, ap);
    va_end(ap);
    sbuf_put(b, "%s: %s\n", key, v);
}

static void write_trl_yaml(sbuf *b, const mp_plan *p)
{
    const mp_model *m = p->m;
    const mp_settings *s = p->s;
    const trl_row *r = row_of(s);
    emit_engine e;
    char err[MP_ERR_LEN];
    if (!r) return sbuf_fail(b, "--method %s has no TRL trainer memplan writes", mp_method_name(s->method));
    if (emit_engine_of(s, &e, err)) return sbuf_fail(b, "%s", err);
    emit_summary_comment(b, p, &e);
    sbuf_put(b, "# The keys train.py gives TRL's %s (huggingface/trl@%.8s, " TRL_VERSION "), and the model it\n"
                "# loads in TRL ModelConfig's words: `memplan check trl.yaml` reads the plan back from them.\n",
             r->config, TRL_COMMIT);
    if (r->completion_key && !r->max_length)
        sbuf_put(b, "# The prompts are cut to %lld tokens in train.py: %s has no prompt length at the commit\n"
                    "# (memplan check --prompt-len %lld says it).\n", (long long)s->prompt_len, r->config,
                 (long long)s->prompt_len);
    if (r->reward != RW_FUNCTION && mp_reward_model_used(s) && !strcmp(reward_id(s), REWARD_PLACEHOLDER))
        sbuf_put(b, "# reward_model_path: memplan has no Hub id for the reward model it planned (%s):\n"
                    "# put yours here and give it to train.py (--reward-model).\n",
                 s->reward_model ? "--reward-model's shape" : "the policy's shape");
    if (r->value_model)
        sbuf_put(b, "# The value model is train.py's (%s): no PPOConfig\n"
                    "# key says it, and memplan check plans the reward model's shape.\n",
                 s->value_model ? "--value-model's" : "the reward model, as examples/scripts/ppo/ppo.py 90-92");
    if (r->ref_model_arg && mp_reference_used(s) == MP_REF_MODEL && s->lora_rank)
        sbuf_put(b, "# train.py gives the trainer a reference copy (ref_model): no key says so (memplan check\n"
                    "# --reference model).\n");
    if (s->method == MP_METHOD_ORPO)
        sbuf_put(b, "# ORPOConfig has no key of its own: memplan check --method orpo reads it as ORPO.\n");
    /* the model, as ModelConfig names it */
    if (m->hf_id[0]) {
        sbuf_put(b, "model_name_or_path: ");
        put_yaml_str(b, "the model's Hub id", m->hf_id);
        sbuf_put(b, "\n");
    }
    const hf_precision pr = hf_precision_of(s);
    yaml_line(b, "dtype", "%s", dtype_word(pr.load_dtype));
    yaml_line(b, "attn_implementation", "%s", hf_attn(s));
    if (s->lora_rank) {
        const mp_family *f = emit_family_of(m), *names = f ? f : mp_family_of("llama");
        const char *mods[MP_LORA_NROLES];
        int n = mp_family_targets(names, s->lora_targets, mods);
        char dropout[32];
        yaml_line(b, "use_peft", "true");
        yaml_line(b, "lora_r", "%lld", (long long)s->lora_rank);
        yaml_line(b, "lora_alpha", "%lld", (long long)(2 * s->lora_rank));
        yaml_line(b, "lora_dropout", "%s", real_text(s->lora_dropout, dropout, sizeof dropout));
        sbuf_put(b, "lora_target_modules: [");
        for (int i = 0; i < n; i++) sbuf_put(b, "%s%s", i ? ", " : "", mods[i]);
        sbuf_put(b, "]\n");
        yaml_line(b, "lora_task_type", "%s", s->method == MP_METHOD_REWARD ? "SEQ_CLS" : "CAUSAL_LM");
    }
    if (hf_quantised_at_load(m, s)) {
        const mp_quant_desc *qd = mp_quant_desc_of(s->quant);
        if (qd->bits == 4) {
            yaml_line(b, "load_in_4bit", "true");
            yaml_line(b, "bnb_4bit_quant_type", "nf4");
            yaml_line(b, "use_bnb_nested_quant", "%s", qd->double_quant ? "true" : "false");
        } else {
            yaml_line(b, "load_in_8bit", "true");
        }
    }
    /* the run's: what train.py's command line gives by default */
    yaml_line(b, "output_dir", "out");
    yaml_line(b, "max_steps", "1000");
    yaml_line(b, "learning_rate", "%s", r->lr);
    if (e.kind == EMIT_DEEPSPEED) yaml_line(b, "deepspeed", "ds_config.json");
    trl_kv kv[TRL_MAX_KEYS];
    int n = trl_keys(p, kv);
    for (int i = 0; i < n; i++) {
        sbuf_put(b, "%s: ", kv[i].key);
        put_value(b, &kv[i], false);
        sbuf_put(b, "\n");
    }
}

const emit_file emit_trl_yaml = {"trl.yaml", write_trl_yaml, 0644};

/* ---------- README.txt ---------- */

void emit_trl_readme(sbuf *b, const mp_plan *p)
{
    const mp_settings *s = p->s;
    const trl_row *r = row_of(s);
    emit_engine e;
    char err[MP_ERR_LEN];
    if (!r) return sbuf_fail(b, "--method %s has no TRL trainer memplan writes", mp_method_name(s->method));
    if (emit_engine_of(s, &e, err)) return sbuf_fail(b, "%s", err);
    const char *pkgs = hf_package(s);
    const char *engine_pkg = e.kind == EMIT_DEEPSPEED ? ", deepspeed" : e.kind == EMIT_FSDP ? ", accelerate" : "";
    sbuf_put(b, "RUN\n  bash launch.sh DATA_FILE [--steps N] [--lr RATE] [--output DIR]\n"
                "  (defaults: 1000 steps, learning rate %s, output in ./out). It needs python3 with torch,\n"
                "  transformers, datasets%s%s%s%s, and TRL " TRL_VERSION ", the version whose %s keys\n"
                "  train.py writes (huggingface/trl@" TRL_COMMIT "):\n"
                "    pip install \"git+https://github.com/huggingface/trl@" TRL_COMMIT "\"\n"
                "  train.py stops at once under an older TRL. At the end the %s is saved in the output folder.\n\n",
             r->lr, s->lora_rank ? ", peft" : "", pkgs ? ", " : "", pkgs ? pkgs : "", engine_pkg,
             r->config, s->lora_rank ? "adapter (PEFT's, not the base)" : "model");
    if (r->vllm && s->rollout == MP_ROLLOUT_VLLM)
        sbuf_put(b, "  vLLM generates the completions in the same process (use_vllm, vllm_mode colocate): install vllm.\n\n");
    if (r->vllm && s->rollout == MP_ROLLOUT_SERVER)
        sbuf_put(b, "  vLLM generates the completions as a server on other GPUs (use_vllm, vllm_mode server): start\n"
                    "  `trl vllm-serve --model MODEL` there first (TRL's client looks for it at 0.0.0.0:8000 unless\n"
                    "  vllm_server_host and vllm_server_port say otherwise). The plan counts none of it.\n\n");
    if (r->reward != RW_FUNCTION && mp_reward_model_used(s))
        sbuf_put(b, "  train.py --reward-model names the reward model%s%s.\n\n",
                 strcmp(reward_id(s), REWARD_PLACEHOLDER) ? " (default: the one planned)"
                                                          : ": memplan has no Hub id for the one it planned, give yours",
                 r->value_model ? "; --value-model PPO's value model (default: the reward model)" : "");
    sbuf_put(b, "TRAINER\n  %s: TRL's %s with %s (from %s). %s.\n  Reference: %s.\n\n", mp_method_name(s->method),
             r->trainer, r->config, r->module, r->loss, reference_words(s));
    sbuf_put(b, "DATA\n  DATA_FILE is JSON lines (datasets' \"json\" loader), one example a line with the fields\n"
                "  %s, as TRL's %s takes them.\n",
             r->columns, r->trainer);
    if (r->completion_key)
        sbuf_put(b, "  Each prompt is cut to %lld tokens and %lld completion%s of up to %lld tokens %s generated for\n"
                    "  it; %s.\n\n",
                 (long long)s->prompt_len, per_prompt(s, r), per_prompt(s, r) == 1 ? "" : "s",
                 (long long)s->completion_len, per_prompt(s, r) == 1 ? "is" : "are",
                 r->reward != RW_FUNCTION && mp_reward_model_used(s) ? "the reward model scores them"
                                                                     : "reward() in train.py scores them: put your reward there");
    else
        sbuf_put(b, "  Rows are cut at %lld tokens (max_length), the sequence the plan counted.\n\n", (long long)s->seq);
    sbuf_put(b, "TRL.YAML\n  trl.yaml states the keys train.py gives %s and the model it loads, in TRL's words:\n"
                "  `memplan check trl.yaml` reads the plan back from it.\n\n", r->config);
}

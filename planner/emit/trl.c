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
    char value[96];              /* KV_DICT: "k1=v1,k2=v2" with v a bool, a name or a string */
} trl_kv;
enum { TRL_MAX_KEYS = 32 };

/* A method's constant key: its value as written. */
typedef struct trl_const {
    const char *key;
    kv_kind kind;
    const char *value;
} trl_const;

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
     * max_length nor max_prompt_length at the commit */
    [MP_METHOD_GRPO] = {"GRPOConfig", "GRPOTrainer", "trl", "AutoModelForCausalLM", "", "1.0e-6", "prompt",
                        "TRL's GRPO loss (loss_type \"dapo\", grpo_config.py 791) on the generated completions",
                        {{NULL}}, false, true, false, false},
};

static const trl_row *row_of(const mp_settings *s)
{
    return s->method > MP_METHOD_SFT && s->method < MP_NMETHOD && rows[s->method].config ? &rows[s->method] : NULL;
}

bool emit_trl_plan(const mp_settings *s) { return s->method != MP_METHOD_SFT; }

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
    if (s->method == MP_METHOD_GRPO && ref == MP_REF_MODEL && s->lora_rank)
        NOFORM("--method grpo --reference model with LoRA has no form in TRL: GRPOTrainer takes no ref_model "
               "(grpo_trainer.py 303-324) and under PEFT its reference is the adapter disabled (--reference adapter)");
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
    k->key = key, k->kind = kind;
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
    if (s->method == MP_METHOD_GRPO) {
        kv_add(kv, &n, "num_generations", KV_INT, "%lld", (long long)s->generations);
        kv_add(kv, &n, "max_completion_length", KV_INT, "%lld", (long long)s->completion_len);
        kv_add(kv, &n, "beta", KV_REAL, "%s", grpo_reference(s) ? "0.04" : "0.0");
        /* the reference copy GRPOTrainer loads itself (grpo_trainer.py 962-971): like the policy */
        if (mp_reference_used(s) == MP_REF_MODEL) {
            const mp_family *f = emit_family_of(p->m);
            kv_add(kv, &n, "model_init_kwargs", KV_DICT, "dtype=\"%s\",attn_implementation=\"%s\"%s",
                   dtype_word(pr.load_dtype), hf_attn(s), f && f->remote_code ? ",trust_remote_code=true" : "");
        }
        const bool vllm = s->rollout == MP_ROLLOUT_VLLM;
        kv_add(kv, &n, "use_vllm", KV_BOOL, "%s", vllm ? "true" : "false");
        if (vllm) {
            kv_add(kv, &n, "vllm_mode", KV_STR, "colocate");
            kv_add(kv, &n, "vllm_gpu_memory_utilization", KV_REAL, "%s", real_text(mp_rollout_memory(s), num, sizeof num));
            kv_add(kv, &n, "vllm_enable_sleep_mode", KV_BOOL, "%s", s->rollout_sleep ? "true" : "false");
            if (s->rollout_max_len)
                kv_add(kv, &n, "vllm_max_model_length", KV_INT, "%lld", (long long)s->rollout_max_len);
        }
    }
    return n;
}

/* One value in Python (py) or YAML. Strings are memplan's own words. */
static void put_value(sbuf *b, const trl_kv *k, bool py)
{
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
    return s->method == MP_METHOD_GRPO && s->rollout == MP_ROLLOUT_VLLM ? ", trl " TRL_VERSION ", vllm"
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

void emit_trl_summary(sbuf *b, const mp_settings *s)
{
    const trl_row *r = row_of(s);
    if (!r) return;
    sbuf_put(b, "#   method         %s: TRL's %s with %s (from %s; TRL " TRL_VERSION ", huggingface/trl@%.8s)\n",
             mp_method_name(s->method), r->trainer, r->config, r->module, TRL_COMMIT);
    sbuf_put(b, "#   loss           %s\n", r->loss);
    sbuf_put(b, "#   reference      %s: %s\n", mp_reference_name(mp_reference_used(s)), reference_words(s));
    if (s->method == MP_METHOD_GRPO) {
        sbuf_put(b, "#   rollout        %lld completions a prompt, prompts of %lld tokens, completions of %lld, ",
                 (long long)s->generations, (long long)s->prompt_len, (long long)s->completion_len);
        if (s->rollout == MP_ROLLOUT_VLLM)
            sbuf_put(b, "a colocated vLLM keeping %g of the GPU%s\n", mp_rollout_memory(s),
                     s->rollout_sleep ? ", asleep while the policy trains" : "");
        else sbuf_put(b, "transformers' generate in this process\n");
    }
}

/* The reference, as the trainer takes it: a comment that says which. */
static void trl_reference(sbuf *b, const mp_plan *p, const trl_row *r, const mp_family *f)
{
    const mp_settings *s = p->s;
    const mp_reference ref = mp_reference_used(s);
    if (s->method == MP_METHOD_GRPO) {
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
    } else if (ref == MP_REF_ADAPTER) {
        sbuf_put(b, "# the reference: TRL's default under PEFT, the policy with its adapter disabled\n"
                    "# (dpo_trainer.py 894-898): no second model. The trainer makes the adapter (peft_config):\n"
                    "# a PeftModel given without it would get a second, reference adapter (649-670).\n");
    } else if (ref == MP_REF_MODEL) {
        sbuf_put(b, "# the reference: a frozen copy of the model, loaded here like the policy%s. %s\n",
                 s->lora_rank ? " (the base, without\n# adapters)" : "",
                 s->lora_rank ? "Under PEFT TRL would disable the adapter instead: an explicit ref_model keeps the copy."
                              : "TRL would load one itself\n# (dpo_trainer.py 899-908), in float32 unless "
                                "model_init_kwargs names a dtype.");
        hf_from_pretrained(b, p->m, s, f, "ref_model", "AutoModelForCausalLM", "");
    }
}

static void trl_data(sbuf *b, const mp_settings *s, const trl_row *r)
{
    sbuf_put(b, "ds = load_dataset(\"json\", data_files=DATA, split=\"train\")  # %s\n", r->columns);
    if (s->method != MP_METHOD_GRPO) return;
    sbuf_put(b, "\nPROMPT_LEN = %lld  # prompt tokens, as the plan assumed: GRPOConfig has no prompt length at the commit\n\n"
                "def cut(example):\n"
                "    ids = tok(example[\"prompt\"], add_special_tokens=False)[\"input_ids\"][:PROMPT_LEN]\n"
                "    return {\"prompt\": tok.decode(ids)}\n\n"
                "ds = ds.map(cut)\n\n"
                "def reward(completions, **kwargs):\n"
                "    \"\"\"Put your reward here: one score per completion. A function costs no GPU memory; a reward\n"
                "    model given as reward_funcs would load beside the policy, which the plan did not count.\n"
                "    This one rewards completions that repeat themselves less.\"\"\"\n"
                "    return [len(set(c.split())) / max(1, len(c.split())) for c in completions]\n",
             (long long)s->prompt_len);
}

static void trl_train(sbuf *b, const mp_plan *p, const trl_row *r)
{
    const mp_settings *s = p->s;
    trl_kv kv[TRL_MAX_KEYS];
    int n = trl_keys(p, kv);
    sbuf_put(b, "\nargs = %s(output_dir=ARGS.output, learning_rate=ARGS.lr, max_steps=ARGS.steps,\n"
                "                deepspeed=ARGS.deepspeed", r->config);
    for (int i = 0; i < n; i++) {
        sbuf_put(b, ",%s%s=", i % 3 == 0 ? "\n                " : " ", kv[i].key);
        put_value(b, &kv[i], true);
    }
    sbuf_put(b, ")\n");
    const mp_reference ref = mp_reference_used(s);
    sbuf_put(b, "trainer = %s(model=model, args=args, train_dataset=ds, processing_class=tok", r->trainer);
    if (s->method == MP_METHOD_GRPO) sbuf_put(b, ", reward_funcs=reward");
    if (r->ref_model_arg && ref == MP_REF_MODEL) sbuf_put(b, ", ref_model=ref_model");
    if (s->lora_rank && r->peft_in_trainer) sbuf_put(b, ", peft_config=lora");
    sbuf_put(b, ")\ntrainer.train()\ntrainer.save_model(ARGS.output)\ntok.save_pretrained(ARGS.output)\n");
}

void emit_trl_script(sbuf *b, const mp_plan *p)
{
    const mp_model *m = p->m;
    const mp_settings *s = p->s;
    const mp_family *f = emit_family_of(m);
    const trl_row *r = row_of(s);
    if (!r) return sbuf_fail(b, "--method %s has no TRL trainer memplan writes", mp_method_name(s->method));
    const bool wrap = s->lora_rank && !r->peft_in_trainer;
    hf_summary(b, p, f);
    sbuf_put(b, "import argparse\n");
    if (s->expandable_segments)
        sbuf_put(b, "import os\n\nos.environ.setdefault(\"PYTORCH_CUDA_ALLOC_CONF\", \"expandable_segments:True\")\n");
    sbuf_put(b, "from importlib.metadata import version as package_version\n\nimport torch\n"
                "from datasets import load_dataset\nfrom packaging.version import Version\n");
    sbuf_put(b, "from transformers import %s, AutoTokenizer%s\n", r->model_class,
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
    hf_command_line(b, m, s, help, r->lr);
    hf_quant_config(b, m, s);
    hf_from_pretrained(b, m, s, f, "model", r->model_class, r->extra);
    if (s->lora_rank) {
        hf_lora_config(b, m, s, f, s->method == MP_METHOD_REWARD ? "SEQ_CLS" : "CAUSAL_LM", wrap);
        if (s->method == MP_METHOD_REWARD)
            sbuf_put(b, "# PEFT's SEQ_CLS task trains the score head (hidden size x 1) in full beside the adapter\n");
    }
    trl_reference(b, p, r, f);
    hf_tokenizer(b, f);
    if (s->method == MP_METHOD_REWARD) sbuf_put(b, "model.config.pad_token_id = tok.pad_token_id\n");
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
    if (s->method == MP_METHOD_GRPO)
        sbuf_put(b, "# The prompts are cut to %lld tokens in train.py: GRPOConfig has no prompt length at the commit\n"
                    "# (memplan check --prompt-len %lld says it).\n", (long long)s->prompt_len, (long long)s->prompt_len);
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
    if (s->method == MP_METHOD_GRPO && s->rollout == MP_ROLLOUT_VLLM)
        sbuf_put(b, "  vLLM generates the completions in the same process (use_vllm, vllm_mode colocate): install vllm.\n\n");
    sbuf_put(b, "TRAINER\n  %s: TRL's %s with %s (from %s). %s.\n  Reference: %s.\n\n", mp_method_name(s->method),
             r->trainer, r->config, r->module, r->loss, reference_words(s));
    sbuf_put(b, "DATA\n  DATA_FILE is JSON lines (datasets' \"json\" loader), one example a line with the fields\n"
                "  %s, as TRL's %s takes them.\n",
             r->columns, r->trainer);
    if (s->method == MP_METHOD_GRPO)
        sbuf_put(b, "  Each prompt is cut to %lld tokens and %lld completions of up to %lld tokens are generated for\n"
                    "  it; reward() in train.py scores them: put your reward there.\n\n",
                 (long long)s->prompt_len, (long long)s->generations, (long long)s->completion_len);
    else
        sbuf_put(b, "  Rows are cut at %lld tokens (max_length), the sequence the plan counted.\n\n", (long long)s->seq);
    sbuf_put(b, "TRL.YAML\n  trl.yaml states the keys train.py gives %s and the model it loads, in TRL's words:\n"
                "  `memplan check trl.yaml` reads the plan back from it.\n\n", r->config);
}

/* vocabulary.c — every value of every setting, one descriptor row each: its
 * stable name (flags, configs, JSON), other accepted spellings (transformers'
 * TrainingArguments words among them: bf16 and fp16 are its autocast modes,
 * adamw_torch, adamw_8bit... its optim names), a help line,
 * and the traits the estimate reads. A new value is one row here, and its word
 * in each engine one entry in that engine's emitter (planner/emit/: the
 * emitters' tables are indexed by these values). */
#include "model/family.h"
#include "model/model.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"

#include <stdio.h>
#include <string.h>

#define N(a) ((int)(sizeof(a) / sizeof *(a)))

static const mp_precision_desc precisions[MP_NPRECISION] = {
    [MP_FP32] = {{"fp32", "no", "fp32 weights, gradients, optimizer state and activations", true},
                 .stored_bytes = 4, .act_bytes = 4, .state_bytes = 4, .short_name = "fp32",
                 .same_memory_as = MP_FP32},
    [MP_AMP_BF16] = {{"amp-bf16", "bf16", "fp32 weights; matmuls in bf16 under autocast (torch.autocast)", false},
                     .stored_bytes = 4, .act_bytes = 2, .state_bytes = 4, .autocast = true, .needs_bf16 = true,
                     .short_name = "bf16", .same_memory_as = MP_AMP_BF16},
    [MP_AMP_FP16] = {{"amp-fp16", "fp16", "fp32 weights; matmuls in fp16 under autocast, with loss scaling", false},
                     .stored_bytes = 4, .act_bytes = 2, .state_bytes = 4, .autocast = true, .loss_scaling = true,
                     .short_name = "fp16", .same_memory_as = MP_AMP_BF16},
    [MP_MIXED_BF16] = {{"mixed-bf16", NULL, "bf16 weights and gradients, fp32 master weights in the optimizer", true},
                       .stored_bytes = 2, .act_bytes = 2, .state_bytes = 4, .master_copy = true, .needs_bf16 = true,
                       .short_name = "bf16", .same_memory_as = MP_MIXED_BF16},
    [MP_MIXED_FP16] = {{"mixed-fp16", NULL, "fp16 weights and gradients, fp32 master weights, loss scaling", true},
                       .stored_bytes = 2, .act_bytes = 2, .state_bytes = 4, .master_copy = true, .loss_scaling = true,
                       .short_name = "fp16", .same_memory_as = MP_MIXED_BF16},
    [MP_PURE_BF16] = {{"pure-bf16", NULL, "bf16 weights, gradients and optimizer state, no fp32 master copy", false},
                      .stored_bytes = 2, .act_bytes = 2, .state_bytes = 2, .needs_bf16 = true,
                      .short_name = "pure bf16", .same_memory_as = MP_PURE_BF16},
};

static const mp_optimizer_desc optimizers[MP_NOPTIMIZER] = {
    [MP_ADAMW] = {{"adamw", "adamw_torch adamw_hf adamw_torch_fused", "AdamW: two fp32 states per parameter", true},
                  .states = 2, .tier = 0, .adamw_class = true, .same_memory_as = MP_ADAMW},
    [MP_ADAMW_8BIT] = {{"adamw-8bit", "adamw8bit adamw8 adamw_8bit adamw_bnb_8bit", "8-bit block-wise AdamW (bitsandbytes)", true},
                       .states = 2, .tier = 0, .adamw_class = true, .low_bit = true, .state_bits = 8, .same_memory_as = MP_ADAMW_8BIT},
    [MP_PAGED_ADAMW] = {{"paged-adamw", "paged_adamw_32bit", "AdamW with states in paged (unified) memory", false},
                        .states = 2, .tier = 0, .adamw_class = true, .paged = true, .same_memory_as = MP_ADAMW},
    [MP_PAGED_ADAMW_8BIT] = {{"paged-adamw-8bit", "paged_adamw_8bit", "8-bit AdamW with states in paged memory", false},
                             .states = 2, .tier = 0, .adamw_class = true, .low_bit = true, .state_bits = 8, .paged = true,
                             .same_memory_as = MP_ADAMW_8BIT},
    [MP_SGD] = {{"sgd", NULL, "plain SGD: no state", true},
                .states = 0, .tier = 2, .same_memory_as = MP_SGD},
    [MP_SGD_MOMENTUM] = {{"sgd-momentum", "sgdm momentum", "SGD with one momentum buffer", true},
                         .states = 1, .tier = 2, .momentum = true, .same_memory_as = MP_SGD_MOMENTUM},
    /* Adafactor's factored second moment (Shazeer & Stern 2018), no first moment
     * (beta1 = None, Hugging Face's default) */
    [MP_ADAFACTOR] = {{"adafactor", NULL, "Adafactor: factored second moment, no first moment", false},
                      .states = 1, .factored = true, .tier = 1, .same_memory_as = MP_ADAFACTOR},
    [MP_LION] = {{"lion", "lion_32bit", "Lion: one momentum state (Chen et al. 2023)", false},
                 .states = 1, .tier = 1, .same_memory_as = MP_LION},
    /* torchao's AdamW8bit (pytorch/ao@0b05caa18e67 torchao/prototype/low_bit_optim/adam.py,
     * subclass_8bit.py, quant_utils.py): bitsandbytes' state (uint8 codes, an fp32 scale per
     * block; tensors under 4096 values keep theirs in the weight's dtype), but each tensor is
     * stepped alone by torch.compile(single_param_adam), in fp32. The compiled step allocates two
     * fp32 moment copies and two int64 partial codes, 24 B per value of the tensor, beside the two
     * new block scales: measured on an H200 under torch 2.11 for every Llama 3.2 3B weight shape
     * (tests/validation/gpu/torchao_adamw8bit.json, rebuilt as torchao_adamw8bit.py: 24.03 B per
     * value at blocks of 256). transformers' optim="adamw_torch_8bit" builds it, with blocks of
     * 256 (huggingface/transformers@fe2596e9 src/transformers/trainer_optimizer.py
     * _get_torchao_optimizer). */
    [MP_ADAMW_8BIT_TORCHAO] = {{"adamw-8bit-torchao", "torchao-adamw8bit adamw-torch-8bit adamw_torch_8bit",
                                "8-bit block-wise AdamW (torchao AdamW8bit): a compiled fp32 step per tensor", false},
                               .states = 2, .tier = 0, .adamw_class = true, .low_bit = true, .state_bits = 8,
                               .step_bytes = 24, .same_memory_as = MP_ADAMW_8BIT},
    /* torchao's AdamW4bit (the same files; subclass_4bit.py OptimState4bit): two 4-bit codes a
     * byte, the same compiled step, the same 24 B per value beside the block scales
     * (torchao_adamw4bit.json: 24.06 B per value at blocks of 128, torchao's default; transformers'
     * optim="adamw_torch_4bit" passes 256, as above). The search tries it only when named. */
    [MP_ADAMW_4BIT_TORCHAO] = {{"adamw-4bit-torchao", "torchao-adamw4bit adamw-torch-4bit adamw_torch_4bit",
                                "4-bit block-wise AdamW (torchao AdamW4bit): a compiled fp32 step per tensor", false},
                               .states = 2, .tier = 0, .adamw_class = true, .low_bit = true, .state_bits = 4,
                               .step_bytes = 24, .same_memory_as = MP_ADAMW_8BIT},
};

static const mp_ckpt_desc ckpts[MP_NCKPT] = {
    [MP_CKPT_NONE] = {{"none", NULL, "keep every activation for the backward", true}},
    [MP_CKPT_SELECTIVE] = {{"selective", NULL, "recompute the attention scores in the backward", true}},
    [MP_CKPT_FULL] = {{"full", NULL, "keep each layer's input, recompute the layer in the backward", true}},
};

static const mp_attention_desc attentions[MP_NATTN] = {
    [MP_ATTN_EAGER] = {{"eager", NULL, "materialise the T x T attention scores", true}},
    [MP_ATTN_FLASH] = {{"flash", NULL, "tiled attention (FlashAttention, SDPA): no T x T scores", true}},
};

static const mp_quant_desc quants[MP_NQUANT] = {
    [MP_QUANT_NONE] = {{"none", NULL, "a 16/32-bit base", true}},
    [MP_QUANT_INT8] = {{"int8", NULL, "LLM.int8 base (bitsandbytes load_in_8bit)", false}, .bits = 8,
                       .bitsandbytes = true},
    /* bnb_keeps_input_before: MatMul4Bit kept its input A for the backward until
     * 0.43.2 (TimDettmers/bitsandbytes@29e3420c6de4 bitsandbytes/autograd/_functions.py
     * MatMul4Bit.forward: ctx.tensors = (A, B)), although a frozen weight's backward
     * never reads it; bitsandbytes-foundation/bitsandbytes PR #1270 "delete useless
     * buffered activation" (merged 2024-07-16, released in 0.43.2) keeps only the weight
     * (@012c660699cc, same function: ctx.tensors = (None, B)). */
    [MP_QUANT_NF4] = {{"nf4", NULL, "4-bit NormalFloat base (QLoRA)", true}, .bits = 4,
                      .bitsandbytes = true,
                      .bnb_keeps_input_before = 4302},
    [MP_QUANT_NF4_DQ] = {{"nf4-dq", NULL, "NF4 with double-quantised scales (QLoRA)", true},
                         .bits = 4, .double_quant = true, .bitsandbytes = true, .bnb_keeps_input_before = 4302},
    [MP_QUANT_GPTQ] = {{"gptq", NULL, "a GPTQ checkpoint's base, as stored (--hf-config with its quantization_config)",
                        false}, .bits = 4, .stored_only = true},
    [MP_QUANT_AWQ] = {{"awq", NULL, "an AWQ checkpoint's base, as stored (--hf-config with its quantization_config)",
                       false}, .bits = 4, .stored_only = true},
};

static const mp_offload_desc offloads[MP_NOFFLOAD] = {
    [MP_OFFLOAD_NONE] = {{"none", NULL, "everything on the GPU", true}},
    [MP_OFFLOAD_OPTIMIZER] = {{"optimizer", NULL, "ZeRO-Offload: optimizer state and master weights on the host", false},
                              .optimizer_on_host = true},
    [MP_OFFLOAD_PARAMS] = {{"params", NULL, "ZeRO-Infinity: parameters too", false},
                           .optimizer_on_host = true, .params_on_host = true},
};

static const mp_value ces[MP_NCE] = {
    [MP_CE_FULL] = {"full", NULL, "the loss over all B x T logits at once", true},
    [MP_CE_CHUNKED] = {"chunked", NULL, "the loss chunk by chunk (--ce-chunk tokens)", true},
};

static const mp_loader_desc loaders[MP_NLOADER] = {
    [MP_LOAD_MEMORY] = {{"memory", NULL, "the whole tokenised dataset in host memory", true}},
    [MP_LOAD_STREAM] = {{"stream", NULL, "read in chunks through a shuffle buffer", true}},
};

static const mp_value tasks[MP_NTASK] = {
    [MP_TASK_ANY] = {"any", NULL, "full fine-tuning, LoRA or QLoRA, whichever ranks first", true},
    [MP_TASK_FULL] = {"full", NULL, "every weight trained", true},
    [MP_TASK_LORA] = {"lora", NULL, "LoRA adapters on a frozen 16-bit base", true},
    [MP_TASK_QLORA] = {"qlora", NULL, "LoRA adapters on a frozen 4-bit base", true},
};

/* torch/optim/adamw.py: _multi_tensor_adamw (foreach), _single_tensor_adamw (the loop), _fused_adamw */
static const mp_value step_impls[MP_NSTEP] = {
    [MP_STEP_FOREACH] = {"foreach", NULL, "multi-tensor step: temporaries for every tensor at once (CUDA default)", true},
    [MP_STEP_FOR_LOOP] = {"for-loop", "per-tensor", "one tensor at a time: temporaries of the largest tensor", true},
    [MP_STEP_FUSED] = {"fused", NULL, "one fused kernel: no parameter-sized temporaries", true},
};

/* TRL's trainers at huggingface/trl@f2cd577 (the lines: tests/data/engines/trl_methods.csv):
 * DPOTrainer stacks chosen and rejected into one batch of 2B rows padded to one
 * width (trl/trainer/dpo_trainer.py 152-213, one forward at 1340); IPO is its
 * loss_type "ipo" (same batch and reference rules); CPOTrainer (SimPO is its
 * loss_type "simpo") and ORPOTrainer (trl/experimental/) concatenate the same
 * way, use no reference, and add the chosen half's NLL through cross_entropy on
 * a shifted .contiguous() copy of its logits (cpo_trainer.py 825-844, with
 * cpo_alpha 1.0 by default, SimPO too; orpo_trainer.py 782-803). */
static const mp_method_desc methods[MP_NMETHOD] = {
    [MP_METHOD_SFT] = {{"sft", NULL, "supervised fine-tuning: the next-token loss on each sequence", true}, 1,
                       false, false, "SFTTrainer"},
    [MP_METHOD_DPO] = {{"dpo", NULL, "direct preference optimisation: chosen and rejected in one batch of 2B rows, "
                        "a reference's log-probabilities", true}, 2, true, false, "DPOTrainer"},
    [MP_METHOD_IPO] = {{"ipo", NULL, "DPO with the IPO loss (loss_type ipo): the same memory as dpo", true}, 2,
                       true, false, "DPOTrainer"},
    [MP_METHOD_SIMPO] = {{"simpo", NULL, "SimPO (CPOTrainer, loss_type simpo, cpo_alpha 1.0): 2B rows, no "
                          "reference, the chosen NLL", true}, 2, false, true, "CPOTrainer"},
    [MP_METHOD_CPO] = {{"cpo", NULL, "contrastive preference optimisation: 2B rows, no reference, the chosen NLL",
                        true}, 2, false, true, "CPOTrainer"},
    [MP_METHOD_ORPO] = {{"orpo", NULL, "odds-ratio preference optimisation: 2B rows, no reference, the chosen NLL",
                         true}, 2, false, true, "ORPOTrainer"},
    [MP_METHOD_KTO] = {{"kto", NULL, "Kahneman-Tversky optimisation: B unpaired rows, a no-grad policy forward on "
                        "a mismatched KL batch, the reference on both", false}, 1, true, false, "KTOTrainer",
                       .kl_batch = true},
    [MP_METHOD_REWARD] = {{"reward", NULL, "a reward model: 2B rows, a one-output score head in place of the LM "
                           "head (AutoModelForSequenceClassification)", true}, 2, false, false, "RewardTrainer",
                          .score_head = true},
    [MP_METHOD_GRPO] = {{"grpo", NULL, "group relative policy optimisation: completions generated each step "
                         "(--rollout), per-token log-probabilities of the completion only; no reference unless "
                         "stated (beta 0)", false}, 1, false, false, "GRPOTrainer",
                        .reference_optional = true, .generates = true, .grouped = true, .vllm_fraction = 0.3,
                        .completion_default = 512, .prompt_default = 512},
    [MP_METHOD_ONLINE_DPO] = {{"online-dpo", "online_dpo", "online DPO: two completions per prompt generated "
                               "each step, scored by a reward model, the DPO loss with a reference", false},
                              2, true, false, "OnlineDPOTrainer", .generates = true, .per_micro_batch = true,
                              .reward_model = true, .vllm_fraction = 0.55, .completion_default = 64,
                              .prompt_default = 448},
    [MP_METHOD_PPO] = {{"ppo", NULL, "proximal policy optimisation: the policy and a value model trained, a "
                        "reference and a reward model frozen, completions generated each step", false},
                       1, true, false, "PPOTrainer", .generates = true, .reward_model = true, .value_model = true,
                       .completion_default = 53, .prompt_default = 512},
};

double mp_rollout_memory(const mp_settings *s)
{
    return s->rollout_memory > 0 ? s->rollout_memory : methods[s->method].vllm_fraction;
}

bool mp_reward_model_used(const mp_settings *s)
{
    if (s->reward_none) return false;
    return methods[s->method].reward_model || s->reward_model != NULL;
}

/* OnlineDPOTrainer (trl/experimental/online_dpo/ at huggingface/trl@f2cd577):
 * two completions per prompt each step (online_dpo_trainer.py 358, 970-971),
 * max_new_tokens 64 within max_length 512 (online_dpo_config.py 180, 184), a
 * reward model scoring them (200-221), the policy's forward on the 2B rows with
 * a full log-softmax over the completion's logits (1059-1095), the reference's
 * under no_grad (1163-1172): a copy unless PEFT (317-328); vLLM keeps 0.55
 * (online_dpo_config.py 285). PPOTrainer (trl/experimental/ppo/): the policy
 * and a value model trained by one optimizer (ppo_trainer.py 275-294,
 * 492-496), the reference (a copy, or the disabled adapter) and the reward
 * model frozen (349-357, 439-444); transformers' generate on the local batch
 * with output_scores, whose stacked fp32 logits stay for the update (75-144,
 * 682-702); response_length 53 (ppo_config.py 151). */
/* GRPOTrainer's rollout at huggingface/trl@f2cd577: use_vllm False (the default,
 * grpo_config.py 577) generates with transformers under no_grad in the training
 * process (grpo_trainer.py 1850-1863); use_vllm with vllm_mode "colocate" (the
 * default mode, 584) builds a vLLM LLM in the same process with
 * gpu_memory_utilization 0.3 (646), optionally asleep (level 2) between
 * generations (trl/generation/vllm_generation.py 351-370). */
static const mp_value rollouts[MP_NROLLOUT] = {
    [MP_ROLLOUT_GENERATE] = {"generate", "transformers hf", "transformers' generate in the training process: a KV "
                             "cache for the generation batch beside the policy (TRL's default)", false},
    [MP_ROLLOUT_VLLM] = {"vllm", "colocate", "a vLLM engine colocated on the GPU, keeping --rollout-memory of the "
                         "device (TRL's use_vllm, vllm_mode colocate)", false},
    [MP_ROLLOUT_SERVER] = {"server", NULL, "a vLLM server on other GPUs (trl vllm-serve, vllm_mode server): the "
                           "training GPUs hold none of it", false},
};

/* DPOTrainer at huggingface/trl@f2cd577: no ref_model and PEFT: the policy with
 * its adapter disabled (dpo_trainer.py 894-898, 1374-1380); no ref_model and no
 * PEFT: a second model loaded like the policy (892-908); precompute_ref_log_probs:
 * a pass before training, the sums kept with the data on the host (957-978). */
static const mp_value references[MP_NREF] = {
    [MP_REF_DEFAULT] = {"default", NULL, "what TRL does: a copy of the model for full fine-tuning, the adapter "
                        "disabled under LoRA; none for simpo, cpo, orpo, reward and grpo", true},
    [MP_REF_MODEL] = {"model", "copy", "a frozen copy of the model on the GPU, stored and sharded like it", true},
    [MP_REF_ADAPTER] = {"adapter", "peft", "the policy with its LoRA adapters disabled: no second model", true},
    [MP_REF_PRECOMPUTED] = {"precomputed", NULL, "precompute_ref_log_probs: a pass before training, nothing on the "
                            "GPU during it", false},
    [MP_REF_NONE] = {"none", NULL, "no reference (sft, simpo, cpo, orpo, reward; grpo with beta 0)", true},
};

/* The loss over the logits as code takes it: transformers' ForCausalLMLoss upcasts
 * and shifts the labels (huggingface/transformers@0114da07
 * src/transformers/loss/loss_utils.py); its DefaultCrossEntropyLoss before it
 * upcast and took a shifted .contiguous() copy (@07478e04
 * src/transformers/loss_utils.py), as remote-code models still do; a plain
 * loop on a 16-bit model calls cross_entropy on the logits as they are, which
 * autocast would run in fp32 (PyTorch's autocast op reference: cross_entropy,
 * log_softmax and nll_loss autocast to float32). */
static const mp_value logits_kinds[MP_NLOGITS] = {
    [MP_LOGITS_STACK] = {"stack", NULL, "as the framework profile takes them (its fp32_logits column)", true},
    [MP_LOGITS_MODEL] = {"model", NULL, "cross-entropy on the logits in their own dtype, the targets shifted "
                         "(a plain loop on a 16-bit model; fp32 under autocast)", false},
    [MP_LOGITS_FP32] = {"fp32", NULL, "an fp32 copy, then cross-entropy (transformers' ForCausalLMLoss)", false},
    [MP_LOGITS_FP32_SHIFTED] = {"fp32-shifted", NULL, "an fp32 copy and a shifted copy of it (transformers' "
                                "loss before ForCausalLMLoss, remote-code models)", false},
};

mp_reference mp_reference_used(const mp_settings *s)
{
    if (s->reference != MP_REF_DEFAULT) return s->reference;
    if (!methods[s->method].reference) return MP_REF_NONE;
    return s->lora_rank > 0 ? MP_REF_ADAPTER : MP_REF_MODEL;
}

/* Spellings that say how the step runs too: transformers' optim="adamw_torch_fused" is
 * torch.optim.AdamW(fused=True) (huggingface/transformers@00349ae8 src/transformers/
 * trainer_optimizer.py, tests/data/engines/transformers_optim.txt); each one an alias of
 * its optimizer's row above. */
static const struct { const char *alias; mp_step_impl step; } step_aliases[] = {
    {"adamw_torch_fused", MP_STEP_FUSED},
};

int mp_optimizer_alias_step(const char *s, mp_step_impl *step)
{
    for (int i = 0; s && i < N(step_aliases); i++)
        if (!strcmp(s, step_aliases[i].alias)) {
            *step = step_aliases[i].step;
            return 0;
        }
    return -1;
}

/* transformers' optim names (its OptimizerNames, tests/data/engines/transformers_optim.txt)
 * for optimizers memplan does not model: refused by name, never matched to a near one
 * (lion_8bit is not lion_32bit). Every other member is a row's name or alias above. */
static const char *const unmodelled_optims[] = {
    "adamw_torch_xla", "adamw_torch_npu_fused", "adamw_apex_fused", "adamw_anyprecision", "ademamix",
    "adagrad", "ademamix_8bit", "lion_8bit", "paged_ademamix_32bit", "paged_ademamix_8bit", "paged_lion_32bit",
    "paged_lion_8bit", "rmsprop", "rmsprop_bnb", "rmsprop_bnb_8bit", "rmsprop_bnb_32bit", "galore_adamw",
    "galore_adamw_8bit", "galore_adafactor", "galore_adamw_layerwise", "galore_adamw_8bit_layerwise",
    "galore_adafactor_layerwise", "lomo", "adalomo", "grokadamw", "schedule_free_radam", "schedule_free_adamw",
    "schedule_free_sgd", "apollo_adamw", "apollo_adamw_layerwise", "stable_adamw",
};

bool mp_optimizer_unmodelled(const char *s)
{
    for (int i = 0; s && i < N(unmodelled_optims); i++)
        if (!strcmp(s, unmodelled_optims[i])) return true;
    return false;
}

/* A row's value, by its name or one of its aliases. */
static bool spelled(const mp_value *v, const char *s)
{
    if (!strcmp(s, v->name)) return true;
    for (const char *a = v->aliases; a && *a;) {
        size_t len = strcspn(a, " ");
        if (len == strlen(s) && !strncmp(a, s, len)) return true;
        a += len + (a[len] == ' ');
    }
    return false;
}

/* A setting's name and its parsing, both read from its rows through mp_X_value. */
#define NAME_AND_PARSE(type, fn)                                                               \
    const char *mp_##fn##_name(type v)                                                        \
    {                                                                                          \
        const mp_value *r = mp_##fn##_value((int)v);                                           \
        return r ? r->name : "?";                                                              \
    }                                                                                          \
    int mp_##fn##_parse(const char *s, type *out)                                              \
    {                                                                                          \
        int i = mp_value_index(mp_##fn##_value, s);                                            \
        if (i < 0) return -1;                                                                  \
        *out = (type)i;                                                                        \
        return 0;                                                                              \
    }

/* Settings whose rows carry engine spellings: a descriptor row, its mp_value first. */
#define VOCABULARY(type, fn, rows)                                                             \
    const mp_##fn##_desc *mp_##fn##_desc_of(type v)                                            \
    {                                                                                          \
        return (int)v >= 0 && (int)v < N(rows) ? &rows[v] : NULL;                              \
    }                                                                                          \
    const mp_value *mp_##fn##_value(int i) { return i >= 0 && i < N(rows) ? &rows[i].v : NULL; } \
    NAME_AND_PARSE(type, fn)

VOCABULARY(mp_precision, precision, precisions)
VOCABULARY(mp_optimizer, optimizer, optimizers)
VOCABULARY(mp_ckpt, ckpt, ckpts)
VOCABULARY(mp_attention, attention, attentions)
VOCABULARY(mp_quant, quant, quants)
VOCABULARY(mp_offload, offload, offloads)
VOCABULARY(mp_loader, loader, loaders)
VOCABULARY(mp_method, method, methods)

/* Settings whose rows carry no engine spelling are plain mp_value rows. */
#define PLAIN_VOCABULARY(type, fn, rows)                                                       \
    const mp_value *mp_##fn##_value(int i) { return i >= 0 && i < N(rows) ? &rows[i] : NULL; } \
    NAME_AND_PARSE(type, fn)

PLAIN_VOCABULARY(mp_ce, ce, ces)
PLAIN_VOCABULARY(mp_task, task, tasks)
PLAIN_VOCABULARY(mp_step_impl, step_impl, step_impls)
PLAIN_VOCABULARY(mp_reference, reference, references)
PLAIN_VOCABULARY(mp_logits, logits, logits_kinds)
PLAIN_VOCABULARY(mp_rollout, rollout, rollouts)

bool mp_precision_pure16(const mp_precision_desc *pd) { return pd->stored_bytes == 2 && !pd->master_copy; }


int mp_value_index(const mp_value *(*value_at)(int), const char *s)
{
    for (int i = 0; s && value_at(i); i++)
        if (spelled(value_at(i), s)) return i;
    return -1;
}

const char *mp_choices(const mp_value *(*value_at)(int), bool memtrain_only, const char *last_sep,
                       char *buf, size_t len)
{
    int n = 0, total = 0;
    for (int i = 0; value_at(i); i++) total += !memtrain_only || value_at(i)->memtrain;
    size_t o = 0;
    buf[0] = 0;
    for (int i = 0; value_at(i); i++) {
        const mp_value *v = value_at(i);
        if (memtrain_only && !v->memtrain) continue;
        const char *sep = n == 0 ? "" : n == total - 1 && last_sep ? last_sep : ", ";
        o += (size_t)snprintf(buf + o, o < len ? len - o : 0, "%s%s", sep, v->name);
        n++;
    }
    return buf;
}

/* ---------- LoRA targets ---------- */

/* Each role by its name (model/family.h) and by its Llama module name (the
 * families table's llama row), so PEFT's target lists paste in; then groups. */
static const struct { const char *name; unsigned bits; } target_groups[] = {
    {"attn", MP_LORA_ATTN}, {"mlp", MP_LORA_MLP}, {"all", MP_LORA_ALL},
    {"qkv", MP_LORA_Q | MP_LORA_K | MP_LORA_V}, {"all-linear", MP_LORA_ALL},
    /* LoRA on the output head: LitGPT's lora_head, PEFT's "lm_head" target */
    {"head", MP_LORA_HEAD}, {"lm_head", MP_LORA_HEAD},
};

static unsigned target_bits(const char *tok)
{
    const mp_family *llama = mp_family_of("llama");
    for (int r = 0; r < MP_LORA_NROLES; r++)
        if (!strcmp(tok, mp_lora_role_name(r)) || (llama && llama->module[r] && !strcmp(tok, llama->module[r]))) return 1u << r;
    for (int i = 0; i < N(target_groups); i++)
        if (!strcmp(tok, target_groups[i].name)) return target_groups[i].bits;
    return 0;
}

int mp_lora_targets_parse(const char *s, unsigned *bits)
{
    unsigned b = 0;
    if (!s || !*s) return -1;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        unsigned t = target_bits(tok);
        if (!t) return -1;
        b |= t;
    }
    *bits = b;
    return b ? 0 : -1;
}

const char *mp_lora_targets_name(unsigned bits, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = 0;
    for (int r = 0; r < MP_LORA_NROLES; r++)
        if (bits & (1u << r))
            o += (size_t)snprintf(buf + o, o < len ? len - o : 0, "%s%s", o ? "," : "", mp_lora_role_name(r));
    if (bits & MP_LORA_HEAD) snprintf(buf + o, o < len ? len - o : 0, "%shead", o ? "," : "");
    return buf;
}

static const char *const component_names[MP_NCOMP] = {"weights", "gradients", "optimizer", "activations",
                                                      "overhead"};
const char *mp_component_name(int c) { return c >= 0 && c < MP_NCOMP ? component_names[c] : "?"; }

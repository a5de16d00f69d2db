/* settings_options.c — the flags every planning command shares: the training settings
 * (fields of mp_settings, each with the dimension it pins) and the model's source.
 * Their choices are the library's names (memplan.h), read through mp_*_name/mp_*_parse. */
#include "settings/options.h"
#include "common/errors.h"
#include "common/units.h"
#include "model/model.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"

#include <string.h>

/* ---------- the setting vocabularies ---------- */

/* The vocabulary's rows (vocabulary.c), as the option engine reads a list of names. */
#define VOCAB(fn, type, count)                                                           \
    static const char *fn##_name(int v) { return mp_##fn##_value(v)->name; }             \
    static int fn##_parse(const char *s, int *v) { return (*v = mp_value_index(mp_##fn##_value, s)) < 0 ? -1 : 0; } \
    const mp_vocab mp_vocab_##fn = {count, NULL, fn##_name, fn##_parse};

VOCAB(precision, mp_precision, MP_NPRECISION)
VOCAB(optimizer, mp_optimizer, MP_NOPTIMIZER)
VOCAB(ckpt, mp_ckpt, MP_NCKPT)
VOCAB(attention, mp_attention, MP_NATTN)
VOCAB(quant, mp_quant, MP_NQUANT)
VOCAB(offload, mp_offload, MP_NOFFLOAD)
VOCAB(ce, mp_ce, MP_NCE)
VOCAB(loader, mp_loader, MP_NLOADER)
VOCAB(task, mp_task, MP_NTASK)
VOCAB(step_impl, mp_step_impl, MP_NSTEP)
VOCAB(method, mp_method, MP_NMETHOD)
VOCAB(reference, mp_reference, MP_NREF)
VOCAB(logits, mp_logits, MP_NLOGITS)
VOCAB(rollout, mp_rollout, MP_NROLLOUT)

const char *mp_vocab_aliases(const mp_vocab *v, int k)
{
    static const struct {
        const mp_vocab *vocab;
        const mp_value *(*value_at)(int);
    } rows[] = {
        {&mp_vocab_precision, mp_precision_value}, {&mp_vocab_optimizer, mp_optimizer_value},
        {&mp_vocab_ckpt, mp_ckpt_value},           {&mp_vocab_attention, mp_attention_value},
        {&mp_vocab_quant, mp_quant_value},         {&mp_vocab_offload, mp_offload_value},
        {&mp_vocab_ce, mp_ce_value},               {&mp_vocab_loader, mp_loader_value},
        {&mp_vocab_task, mp_task_value},           {&mp_vocab_step_impl, mp_step_impl_value},
        {&mp_vocab_method, mp_method_value},       {&mp_vocab_reference, mp_reference_value},
        {&mp_vocab_logits, mp_logits_value},       {&mp_vocab_rollout, mp_rollout_value},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++)
        if (rows[i].vocab == v) {
            const mp_value *r = rows[i].value_at(k);
            return r ? r->aliases : NULL;
        }
    return NULL;
}

const char *mp_vocab_refusal(const mp_vocab *v, const char *value)
{
    if (v == &mp_vocab_optimizer && mp_optimizer_unmodelled(value)) return "transformers' optim is not modelled";
    return NULL;
}

/* An optimizer's alias that says how its step runs sets that too (adamw_torch_fused). */
static void optimizer_also(const mp_opt *o, const char *value, void *base)
{
    (void)o;
    mp_step_impl step;
    if (!mp_optimizer_alias_step(value, &step)) ((mp_settings *)base)->step_impl = step;
}

/* LoRA targets: the modules as a comma list, or a group of them. */
static const char *lora_target_choice(int v)
{
    static char modules[64];
    static const char *const groups[] = {"attn", "mlp", "all"};
    return v ? groups[v - 1] : mp_lora_targets_name(MP_LORA_ALL, modules, sizeof modules);
}
static const mp_vocab lora_target_choices = {4, NULL, lora_target_choice, NULL};

static int read_lora_targets(const mp_opt *o, const char *value, void *base, char *err)
{
    unsigned bits;
    if (mp_lora_targets_parse(value, &bits)) {
        char list[128], quoted[1024];
        snprintf(err, MP_OPT_ERR_LEN, "invalid value '%s' for --%s (%s)", mp_quote(value, quoted, sizeof quoted), o->name,
                 mp_opt_choices(o, o->vocab, list, sizeof list));
        return -1;
    }
    memcpy((char *)base + o->offset, &bits, sizeof bits);
    return 0;
}

static const char *write_lora_targets(const mp_opt *o, const void *base, char *buf, size_t len)
{
    unsigned bits;
    memcpy(&bits, (const char *)base + o->offset, sizeof bits);
    return mp_lora_targets_name(bits, buf, len);
}

/* A library release: "0.41.1" read into the int the row points at. */
static int read_version(const mp_opt *o, const char *value, void *base, char *err)
{
    int v;
    if (mp_version_parse(value, &v)) {
        char quoted[1024];
        snprintf(err, MP_OPT_ERR_LEN, "invalid value '%s' for --%s (a release such as 0.43.2)",
                 mp_quote(value, quoted, sizeof quoted), o->name);
        return -1;
    }
    memcpy((char *)base + o->offset, &v, sizeof v);
    return 0;
}

/* 0: the current release, not written */
static const char *write_version(const mp_opt *o, const void *base, char *buf, size_t len)
{
    int v;
    memcpy(&v, (const char *)base + o->offset, sizeof v);
    return v ? mp_version_name(v, buf, len) : NULL;
}

/* ---------- the rows ---------- */

#define S(field) MP_OPT_AT(mp_settings, field)

const mp_opt mp_settings_opts[] = {
    {"precision", MP_OPT_ENUM, S(precision), .vocab = &mp_vocab_precision, .pin = MP_PIN_PRECISION,
     .arg = "P", .help = "the precision regime"},
    {"optimizer", MP_OPT_ENUM, S(optimizer), .vocab = &mp_vocab_optimizer, .pin = MP_PIN_OPTIMIZER,
     .arg = "O", .also = optimizer_also,
     .help = "the optimizer, in memplan's or transformers' words; adamw_torch_fused also sets "
             "--optimizer-impl fused"},
    {"adam8-block", MP_OPT_INT, S(adam8_block), .lo = 1, .hi = 1 << 20, .arg = "N",
     .help = "block size of the 8- and 4-bit optimizers: 256 (the default: bitsandbytes now, transformers' "
             "torchao), 2048 (bitsandbytes before) or 128 (torchao's AdamW4bit default)"},
    {"checkpointing", MP_OPT_ENUM, S(checkpointing), .vocab = &mp_vocab_ckpt, .pin = MP_PIN_CKPT,
     .arg = "C", .help = "activation checkpointing"},
    {"attention", MP_OPT_ENUM, S(attention), .vocab = &mp_vocab_attention, .pin = MP_PIN_ATTENTION,
     .help = "the attention kernel"},
    {"attn-tile", MP_OPT_INT, S(attn_tile), .lo = 1, .hi = 4096, .arg = "N",
     .help = "flash attention's tile edge in rows (memtrain's kernel; default 64): its scratch holds 2 N^2 scores"},
    {"batch", MP_OPT_INT, S(batch), .lo = 1, .hi = 1 << 20, .pin = MP_PIN_BATCH, .arg = "B",
     .help = "micro-batch: sequences per GPU per forward pass"},
    {"accum", MP_OPT_INT, S(accum), .lo = 1, .hi = 1 << 20, .pin = MP_PIN_ACCUM, .arg = "K",
     .help = "micro-batches accumulated per optimizer step"},
    {"seq", MP_OPT_INT, S(seq), .lo = 1, .hi = 1 << 24, .pin = MP_PIN_SEQ, .arg = "T",
     .help = "tokens per sequence (default: the model's maximum positions or 2048, the smaller)"},
    {"previous-seq", MP_OPT_INT, S(prev_seq), .lo = 0, .hi = 1 << 24, .arg = "T",
     .help = "tokens per sequence of the micro-batch before (default: --seq): what a loop still holds of the "
             "last step (LitGPT: its logits and graph) scales with it; 0: the planned micro-batch is the first"},
    {"ce", MP_OPT_ENUM, S(ce), .vocab = &mp_vocab_ce, .pin = MP_PIN_CE,
     .help = "cross-entropy over all the logits at once, or in chunks"},
    {"ce-chunk", MP_OPT_INT, S(ce_chunk), .lo = 1, .hi = 1 << 24, .arg = "N",
     .help = "tokens per chunk of chunked cross-entropy (default 1024)"},
    {"lora-rank", MP_OPT_INT, S(lora_rank), .lo = 0, .hi = 1 << 16, .pin = MP_PIN_LORA, .arg = "R",
     .help = "LoRA adapters of rank R; 0 is full fine-tuning"},
    {"lora-targets", MP_OPT_CUSTOM, S(lora_targets), .vocab = &lora_target_choices, .or_last = true,
     .pin = MP_PIN_TARGETS, .arg = "LIST", .read = read_lora_targets, .write = write_lora_targets,
     .help = "the modules with adapters, comma-separated; head (the output head) is not in all"},
    {"lora-dropout", MP_OPT_FLOAT, S(lora_dropout), .lo = 0, .hi = 0.999, .arg = "P",
     .help = "LoRA dropout probability; above 0 each adapted module keeps its dropout output and mask"},
    {"quant", MP_OPT_ENUM, S(quant), .vocab = &mp_vocab_quant, .pin = MP_PIN_QUANT,
     .help = "storage of the frozen base weights (QLoRA: nf4)"},
    {"bitsandbytes", MP_OPT_CUSTOM, S(bnb_version), .arg = "VERSION", .read = read_version, .write = write_version,
     .help = "the bitsandbytes release the run uses (default: 0.43.2 or later); before 0.43.2 every "
             "4-bit layer keeps its input for the backward"},
    {"zero", MP_OPT_INT, S(zero), .lo = 0, .hi = 3, .pin = MP_PIN_ZERO,
     .help = "ZeRO stage: 1 shards optimizer state, 2 also gradients, 3 also weights"},
    {"offload", MP_OPT_ENUM, S(offload), .vocab = &mp_vocab_offload, .pin = MP_PIN_OFFLOAD,
     .help = "ZeRO-Offload to host RAM"},
    {"gpus", MP_OPT_INT, S(gpus), .lo = 1, .hi = 1 << 20, .pin = MP_PIN_GPUS, .arg = "N",
     .help = "GPUs in the job (default 1)"},
    {"tp", MP_OPT_INT, S(tp), .lo = 1, .hi = 1024, .arg = "N", .help = "tensor-parallel degree (default 1)"},
    {"pp", MP_OPT_INT, S(pp), .lo = 1, .hi = 1024, .arg = "N", .help = "pipeline-parallel degree (default 1)"},
    {"ep", MP_OPT_INT, S(ep), .lo = 1, .hi = 4096, .arg = "N", .help = "expert-parallel degree (default 1)"},
    {"optimizer-impl", MP_OPT_ENUM, S(step_impl), .vocab = &mp_vocab_step_impl, .or_last = true,
     .pin = MP_PIN_STEP,
     .help = "how the optimizer step runs: its temporaries (default: the stack's; foreach, for-loop "
             "under pytorch-cpu, fused under torchtune)"},
    {"method", MP_OPT_ENUM, S(method), .vocab = &mp_vocab_method, .or_last = true,
     .help = "the objective (TRL's trainer); for dpo, ipo, simpo, cpo, orpo and reward --batch counts pairs, "
             "each run as two rows (chosen, rejected) in one batch; for kto examples; for grpo completions "
             "(TRL's per_device_train_batch_size)"},
    {"reference", MP_OPT_ENUM, S(reference), .vocab = &mp_vocab_reference, .or_last = true,
     .help = "where dpo, ipo and kto take the reference log-probabilities from (default: TRL's, a copy of the "
             "model or the adapter disabled under LoRA; plans also try them precomputed); grpo has one only "
             "when stated (beta above 0): model or adapter"},
    {"eval-batch", MP_OPT_INT, S(eval_batch), .lo = 0, .hi = 1 << 20, .arg = "N",
     .help = "evaluate between steps with N sequences per forward (transformers' per_device_eval_batch_size, "
             "8 when eval_strategy is set); 0, the default, is no evaluation, transformers' eval_strategy no"},
    {"generations", MP_OPT_INT, S(generations), .lo = 2, .hi = 1 << 16, .arg = "N",
     .help = "grpo: completions per prompt (num_generations, default 8); the generation batch is a multiple of it"},
    {"prompt-len", MP_OPT_INT, S(prompt_len), .lo = 1, .hi = 1 << 24, .arg = "N",
     .help = "grpo, online-dpo, ppo: prompt tokens (default: --seq less the completion, else 512, or 448 for "
             "online-dpo within its max_length 512); the rows trained are prompt plus completion"},
    {"completion-len", MP_OPT_INT, S(completion_len), .lo = 1, .hi = 1 << 24, .arg = "N",
     .help = "grpo, online-dpo, ppo: completion tokens generated (TRL's default: max_completion_length 512, "
             "max_new_tokens 64, response_length 53)"},
    {"rollout", MP_OPT_ENUM, S(rollout), .vocab = &mp_vocab_rollout, .or_last = true,
     .help = "grpo, online-dpo, ppo: who generates the completions, transformers' generate in the training "
             "process (default), a vLLM engine colocated on the GPU, or a vLLM server on other GPUs (not ppo)"},
    {"rollout-memory", MP_OPT_REAL, S(rollout_memory), .lo = 0.01, .hi = 1, .arg = "F",
     .help = "with --rollout vllm: the fraction of the GPU vLLM keeps for its weights, activations and KV cache "
             "(vllm_gpu_memory_utilization; TRL's default 0.3 for grpo, 0.55 for online-dpo)"},
    {"rollout-max-len", MP_OPT_INT, S(rollout_max_len), .lo = 1, .hi = 1 << 24, .arg = "N",
     .help = "with --rollout vllm: the longest sequence vLLM serves (vllm_max_model_length; default the model's "
             "positions): its KV cache must hold one"},
    {"value-lora", MP_OPT_FLAG, S(value_lora),
     .help = "ppo: the value model gets the policy's adapters and quantisation (ms-swift prepares it like the "
             "policy) instead of training whole (TRL's PPOTrainer)"},
    {"rollout-sleep", MP_OPT_FLAG, S(rollout_sleep),
     .help = "with --rollout vllm: vLLM sleeps while the policy trains, its weights and KV cache freed "
             "(vllm_enable_sleep_mode)"},
    {"checkpoint-every", MP_OPT_INT, S(ckpt_every), .lo = 1, .hi = 1 << 20, .arg = "N",
     .help = "with --checkpointing full, only blocks N, 2N, ... (torchtitan's selective_ac_option N); "
             "the others keep all they save (default 1: every block)"},
    {"logits", MP_OPT_ENUM, S(logits), .vocab = &mp_vocab_logits, .or_last = true,
     .help = "how the loss takes the logits: as the stack does (default), in their own dtype, an fp32 copy, "
             "or an fp32 copy and a shifted copy"},
    {"loader", MP_OPT_ENUM, S(loader), .vocab = &mp_vocab_loader, .or_last = true,
     .help = "the training text held in host memory, or streamed through a shuffle buffer"},
    {"dataset-size", MP_OPT_SIZE, S(dataset_bytes), .arg = "SIZE",
     .help = "size of the raw training text, for the memory loader"},
    {"shuffle-buffer", MP_OPT_INT, S(shuffle_buffer), .lo = 1, .hi = 1LL << 40, .arg = "N",
     .help = "sequences in the streaming shuffle buffer (default 10000)"},
    {"dropout", MP_OPT_FLAG, S(dropout), .help = "train with dropout: its masks add to the activations"},
    {"offload-activations", MP_OPT_FLAG, S(offload_activations),
     .help = "saved activations to pinned host RAM, a few kept on the GPU (torchtune activation offloading)"},
    {"optimizer-in-backward", MP_OPT_FLAG, S(optimizer_in_backward),
     .help = "step each parameter as its gradient lands (torchtune optimizer_in_bwd): one gradient at a time"},
    {"compile", MP_OPT_FLAG, S(compile),
     .help = "torch.compile the layers: the backward recomputes norm upcasts and the MLP's activation instead of keeping them"},
    {"expandable-segments", MP_OPT_FLAG, S(expandable_segments),
     .help = "run with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: the allocator grows one segment by pages"},
    {0},
};

#define M(field) MP_OPT_AT(mp_model_source, field)

const mp_opt mp_model_source_opts[] = {
    {"model", MP_OPT_STRING, M(name), .arg = "NAME",
     .help = "a profile (memplan list models), e.g. llama-3.1-8b"},
    {"hf-config", MP_OPT_STRING, M(hf_config), .arg = "FILE", .help = "a Hugging Face config.json"},
    {"reward-model", MP_OPT_STRING, M(reward_model), .arg = "MODEL",
     .help = "ppo, online-dpo, grpo: the reward model, a profile or a config.json, loaded with a one-output score "
             "head (default: the policy's shape; none for grpo's reward functions, or 'none')"},
    {"value-model", MP_OPT_STRING, M(value_model), .arg = "MODEL",
     .help = "ppo: the value model trained beside the policy, a profile or a config.json (default: the reward "
             "model's shape)"},
    {"params", MP_OPT_COUNT, M(params), .arg = "N",
     .help = "only a size (7e9, 7B, 125M): a Llama-like shape is assumed"},
    {0},
};

/* settings.c — a training configuration: its defaults, and whether it makes sense. */
#include "common/errors.h"
#include "model/model.h"
#include "profiles/profiles.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"
#include "profiles/framework.h"

#include <stdio.h>
#include <string.h>

void mp_settings_default(mp_settings *s, const mp_model *m)
{
    memset(s, 0, sizeof *s);
    s->precision = MP_FP32;
    s->optimizer = MP_ADAMW;
    s->adam8_block = 256;
    s->attn_tile = 64;
    s->batch = 1;
    s->accum = 1;
    s->seq = mp_default_seq(m);
    s->prev_seq = -1;
    s->ce_chunk = 1024;
    s->lora_targets = MP_LORA_ALL;
    s->gpus = 1;
    s->tp = s->pp = s->ep = 1;
    s->shuffle_buffer = 10000;
    s->ckpt_every = 1;
    s->generations = 8;       /* TRL's GRPOConfig (grpo_config.py 474, 488, 646 at f2cd577) */
    char err[MP_ERR_LEN];
    s->framework = mp_framework_find("pytorch", err);
}

int64_t mp_default_seq(const mp_model *m) { return m && m->max_pos > 0 && m->max_pos < 2048 ? m->max_pos : 2048; }

int64_t mp_dp_degree(const mp_settings *s) { return s->gpus / (s->tp * s->pp); }

/* torchtitan's layer SAC (pytorch/torchtitan@01db32e9 torchtitan/distributed/
 * activation_checkpoint.py _apply_layer_sac): a counter over the blocks from 1,
 * each one whose count is a multiple of ac_freq wrapped in checkpoint */
bool mp_layer_checkpointed(const mp_settings *s, int64_t l)
{
    if (s->checkpointing != MP_CKPT_FULL) return false;
    return s->ckpt_every <= 1 || (l + 1) % s->ckpt_every == 0;
}

int64_t mp_layers_checkpointed(const mp_settings *s, int64_t layers)
{
    if (s->checkpointing != MP_CKPT_FULL) return 0;
    return s->ckpt_every <= 1 ? layers : layers / s->ckpt_every;
}

double mp_element_bytes(mp_precision p) { return mp_precision_desc_of(p)->act_bytes; }

double mp_state_value_bytes(const mp_settings *s)
{
    const mp_optimizer_desc *od = mp_optimizer_desc_of(s->optimizer);
    return od->low_bit ? od->state_bits / 8.0 : mp_precision_desc_of(s->precision)->state_bytes;
}

bool mp_runs_deepspeed(const mp_settings *s)
{
    /* a profile that reduces through DeepSpeed's buckets shards with DeepSpeed */
    bool ds_profile = settings_framework(s)->zero_reduce_bucket > 0;
    return s->offload != MP_OFFLOAD_NONE || (ds_profile && (s->gpus > 1 || s->zero > 0));
}

/* ZeRO on one data-parallel GPU runs (DeepSpeed accepts it) but shards nothing:
 * the planner never proposes it, a config that states it is read as it runs. */
const char *mp_settings_idle_sharding(const mp_settings *s, char *buf, size_t len)
{
    int64_t dp = mp_dp_degree(s);
    if (s->zero == 3 && dp < 2 && s->offload == MP_OFFLOAD_NONE)
        snprintf(buf, len, "ZeRO-3 on one GPU shards nothing: use --gpus 2 or more, or --offload params (ZeRO-Infinity)");
    else if (s->zero > 0 && s->zero < 3 && dp < 2 && s->offload == MP_OFFLOAD_NONE)
        snprintf(buf, len, "ZeRO-%d on one GPU shards nothing: use --gpus 2 or more, or --offload optimizer", s->zero);
    else return NULL;
    return buf;
}

int mp_settings_check(const mp_model *m, const mp_settings *s, char *err)
{
    if (mp_settings_runnable(m, s, err)) return -1;
    return mp_settings_idle_sharding(s, err, MP_ERR_LEN) ? -1 : 0;
}

#define BAD(...) do { snprintf(err, MP_ERR_LEN, __VA_ARGS__); return -1; } while (0)
/* A preference method is TRL's trainer (vocabulary.c's methods) and its
 * reference what that trainer can take: why not, or 0. */
/* The rollout's settings: a generating method's, and only its. TRL's GRPOConfig
 * at huggingface/trl@f2cd577: num_generations >= 2 (grpo_config.py 1116-1120),
 * the generation batch (per device x processes x steps_per_generation, the
 * latter gradient_accumulation_steps by default) a multiple of it (1110-1114);
 * vLLM takes no in-flight 8-bit weights (trl/generation/vllm_generation.py). */
/* GRPO's generation batch: per device x processes x steps_per_generation
 * (gradient_accumulation_steps by default) completions. */
static int64_t generation_batch(const mp_settings *s)
{
    const int64_t dp = mp_dp_degree(s) > 0 ? mp_dp_degree(s) : 1;
    return s->batch * dp * s->accum;
}

static int rollout_unrunnable(const mp_settings *s, const mp_method_desc *md, char *err)
{
    if ((int)s->rollout < 0 || s->rollout >= MP_NROLLOUT) BAD("invalid --rollout");
    if (!(s->rollout_memory >= 0 && s->rollout_memory <= 1))
        BAD("invalid --rollout-memory '%g' (a fraction of the GPU above 0, at most 1)", s->rollout_memory);
    if (!md->generates) {
        const char *given = s->rollout != MP_ROLLOUT_GENERATE ? "rollout"
                          : s->rollout_sleep                   ? "rollout-sleep"
                          : s->rollout_memory != 0             ? "rollout-memory"
                          : s->generations != 8 && !md->grouped ? "generations"
                          : s->prompt_len != 0                 ? "prompt-len"
                          : s->completion_len != 0             ? "completion-len"
                          : s->rollout_max_len != 0            ? "rollout-max-len"
                          : s->value_lora                      ? "value-lora" : NULL;
        if (given) BAD("--%s applies to a method that generates its completions (--method grpo, online-dpo or ppo)",
                       given);
        return 0;
    }
    if (s->value_lora && (!md->value_model || s->lora_rank == 0))
        BAD("--value-lora gives PPO's value model the policy's adapters: it needs --method ppo with LoRA");
    if (s->rollout != MP_ROLLOUT_GENERATE && md->value_model)
        BAD("--rollout %s: TRL's %s generates with transformers only", mp_rollout_name(s->rollout), md->trainer);
    if (!md->grouped && s->generations != 8)
        BAD("--generations applies to grpo: TRL's %s makes %s", md->trainer,
            md->value_model ? "one completion per prompt" : "two completions per prompt");
    if (md->grouped && s->generations < 2) BAD("--generations %lld: GRPO compares at least 2 completions of a prompt",
                                (long long)s->generations);
    if (s->prompt_len < 1 || s->completion_len < 1 || s->seq != s->prompt_len + s->completion_len)
        BAD("--method %s trains on rows of prompt and completion: --seq %lld is not --prompt-len %lld plus "
            "--completion-len %lld", md->v.name, (long long)s->seq, (long long)s->prompt_len,
            (long long)s->completion_len);
    const int64_t dp = mp_dp_degree(s) > 0 ? mp_dp_degree(s) : 1, gen = generation_batch(s);
    if (md->grouped && gen % s->generations)
        BAD("--generations %lld does not divide the generation batch of %lld completions (--batch %lld x %lld "
            "GPU(s) x --accum %lld): TRL's GRPOConfig refuses it", (long long)s->generations,
            (long long)gen, (long long)s->batch, (long long)dp, (long long)s->accum);
    if ((s->rollout_sleep || s->rollout_max_len || s->rollout_memory > 0) && s->rollout != MP_ROLLOUT_VLLM)
        BAD("--%s sets a colocated vLLM up: it needs --rollout vllm",
            s->rollout_sleep ? "rollout-sleep" : s->rollout_max_len ? "rollout-max-len" : "rollout-memory");
    if (s->rollout != MP_ROLLOUT_GENERATE && s->quant == MP_QUANT_INT8)
        BAD("--rollout vllm with --quant int8: vLLM takes no in-flight 8-bit weights (TRL refuses it)");
    return 0;
}

bool mp_settings_batch_allowed(const mp_settings *s)
{
    const mp_method_desc *md = mp_method_desc_of(s->method);
    if (!md) return true;
    if (md->kl_batch && s->batch < 2) return false;
    return !md->grouped || s->generations < 1 || generation_batch(s) % s->generations == 0;
}

int mp_settings_rollout_lengths(mp_settings *s, bool seq_given, char *err)
{
    const mp_method_desc *md = mp_method_desc_of(s->method);
    if (!md || !md->generates) return 0;
    if (s->completion_len <= 0) s->completion_len = md->completion_default;
    if (s->prompt_len > 0) {
        if (seq_given && s->seq != s->prompt_len + s->completion_len)
            BAD("--seq %lld is not --prompt-len %lld plus --completion-len %lld: a row of --method %s is the prompt "
                "and its completion", (long long)s->seq, (long long)s->prompt_len, (long long)s->completion_len,
                md->v.name);
    } else if (seq_given) {
        if (s->seq <= s->completion_len)
            BAD("--seq %lld leaves no prompt beside --completion-len %lld", (long long)s->seq,
                (long long)s->completion_len);
        s->prompt_len = s->seq - s->completion_len;
    } else {
        /* GRPOConfig's max_prompt_length until it went (v0.19.0 to v0.28.0); online
         * DPO's max_length 512 less its 64 new tokens */
        s->prompt_len = md->prompt_default;
    }
    s->seq = s->prompt_len + s->completion_len;
    return 0;
}

static int preference_unrunnable(const mp_settings *s, char *err)
{
    const mp_method_desc *md = mp_method_desc_of(s->method);
    const mp_framework *fw = settings_framework(s);
    if (!md || (int)s->reference < 0 || s->reference >= MP_NREF) BAD("invalid --method or --reference");
    const char *method = md->v.name, *ref = mp_reference_name(s->reference);
    if ((int)s->logits < 0 || s->logits >= MP_NLOGITS) BAD("invalid --logits");
    if (s->ckpt_every > 1) {
        if (s->checkpointing != MP_CKPT_FULL)
            BAD("--checkpoint-every %lld checkpoints some blocks whole: it needs --checkpointing full",
                (long long)s->ckpt_every);
        if (fw->kind == MP_FW_MEMTRAIN || fw->logits_kept || s->offload_activations)
            BAD("--checkpoint-every %lld: %s checkpoints every block or none", (long long)s->ckpt_every,
                s->offload_activations ? "activation offloading" : fw->name);
    }
    if (s->logits != MP_LOGITS_STACK && (fw->logits_kept || fw->ce_output_chunks > 0 || s->method != MP_METHOD_SFT))
        BAD("--logits %s: %s takes the logits its own way", mp_logits_name(s->logits),
            s->method != MP_METHOD_SFT ? md->trainer : fw->name);
    if (rollout_unrunnable(s, md, err)) return -1;
    if (s->eval_batch < 0) BAD("invalid --eval-batch '%lld'", (long long)s->eval_batch);
    if (s->eval_batch > 0 && (s->method != MP_METHOD_SFT || fw->kind == MP_FW_MEMTRAIN))
        BAD("--eval-batch %lld: evaluation is modelled for supervised fine-tuning on the GPU stacks%s",
            (long long)s->eval_batch, fw->kind == MP_FW_MEMTRAIN ? " (memtrain does not evaluate)" : "");
    if (s->method == MP_METHOD_SFT) {
        if (s->reference != MP_REF_DEFAULT && s->reference != MP_REF_NONE)
            BAD("--reference %s needs a preference method that has one (--method dpo, ipo, kto or grpo)", ref);
        return 0;
    }
    if (fw->kind == MP_FW_MEMTRAIN) { /* the references it runs: memtrain_check_supported */
        char runs[160];
        if (!mp_method_value((int)s->method)->memtrain)
            BAD("memtrain runs %s: --method %s is planned for TRL on the GPU stacks",
                mp_choices(mp_method_value, true, " and ", runs, sizeof runs), method);
        return 0;
    }
    if (fw->logits_kept)
        BAD("--method %s is TRL's %s: it runs on the Trainer's stacks, not under --framework %s", method,
            md->trainer, fw->name);
    /* torchtune's preference recipes (pytorch/torchtune@bd2a0fc7c314, rows in
     * tests/data/engines/torchtune_dpo.csv): lora_dpo_single_device,
     * lora_dpo_distributed and full_dpo_distributed, with the losses of
     * torchtune.rlhf.loss (DPOLoss; RSOLoss, deprecated: the same memory) */
    if (fw->ce_output_chunks > 0) {
        const mp_reference used = mp_reference_used(s);
        if (s->method != MP_METHOD_DPO)
            BAD("--method %s has no torchtune recipe: its preference recipes train DPO (torchtune.rlhf.loss.DPOLoss); "
                "plan it on TRL's stacks (--framework pytorch)", method);
        if (s->ce == MP_CE_CHUNKED)
            BAD("--ce chunked has no form in torchtune's DPO recipes: rlhf.get_batch_log_probs takes the whole logits");
        if (used == MP_REF_PRECOMPUTED)
            BAD("--reference precomputed: torchtune's DPO recipes run the reference every step "
                "(lora_dpo_single_device.py 542-546, full_dpo_distributed.py 865-869)");
        if (used == MP_REF_MODEL && s->lora_rank > 0)
            BAD("--reference model with LoRA: torchtune's LoRA DPO recipes take the reference from the adapter "
                "disabled (disable_adapter, lora_dpo_single_device.py 543)");
    }
    if (s->ce == MP_CE_CHUNKED)
        BAD("--ce chunked has no form in TRL's %s: it takes the log-probabilities of the whole logits", md->trainer);
    if (md->reference_optional && s->reference == MP_REF_PRECOMPUTED)
        BAD("--reference precomputed: TRL's %s generates its completions each step, so nothing can be computed "
            "before training (model or adapter, with beta above 0)", md->trainer);
    if (md->kl_batch && s->batch < 2)
        BAD("--method kto with --batch 1: TRL's KTOTrainer builds its KL batch by pairing each example with "
            "another of the micro-batch and refuses a batch of 1 (kto_trainer.py 806-809)");
    if (!md->reference && !md->reference_optional && s->reference != MP_REF_DEFAULT && s->reference != MP_REF_NONE)
        BAD("--method %s has no reference model (TRL's %s): --reference %s does not apply", method, md->trainer,
            ref);
    if (md->reference && s->reference == MP_REF_NONE)
        BAD("--method %s needs reference log-probabilities: --reference model, adapter or precomputed", method);
    if (s->reference == MP_REF_ADAPTER && s->lora_rank == 0)
        BAD("--reference adapter disables LoRA adapters: it needs --lora-rank (or --task lora or qlora)");
    return 0;
}

int mp_settings_runnable(const mp_model *m, const mp_settings *s, char *err)
{
    if (s->batch < 1) BAD("invalid --batch '%lld' (at least 1)", (long long)s->batch);
    if (s->accum < 1) BAD("invalid --accum '%lld' (at least 1)", (long long)s->accum);
    if (s->seq < 1) BAD("invalid --seq '%lld' (at least 1)", (long long)s->seq);
    if (m->pos == MP_POS_LEARNED && s->seq > m->max_pos)
        BAD("--seq '%lld' exceeds the model's %lld learned positions", (long long)s->seq,
            (long long)m->max_pos);
    if (s->gpus < 1) BAD("invalid --gpus '%lld' (at least 1)", (long long)s->gpus);
    if (s->tp < 1 || s->pp < 1 || s->ep < 1) BAD("parallel degrees must be at least 1");
    if (s->gpus % (s->tp * s->pp))
        BAD("--gpus '%lld' is not a multiple of tensor x pipeline parallel (%lld x %lld)",
            (long long)s->gpus, (long long)s->tp, (long long)s->pp);
    if (s->tp > 1 && (m->heads % s->tp || m->kv_heads % s->tp))
        BAD("--tp '%lld' must divide the heads (%lld) and kv-heads (%lld)", (long long)s->tp,
            (long long)m->heads, (long long)m->kv_heads);
    if (s->pp > m->layers) BAD("--pp '%lld' exceeds the %lld layers", (long long)s->pp, (long long)m->layers);
    if (s->ep > 1 && (!m->experts || m->experts % s->ep))
        BAD("--ep '%lld' needs a mixture-of-experts model whose experts it divides", (long long)s->ep);
    if (s->zero < 0 || s->zero > 3) BAD("invalid --zero '%d' (0 to 3)", s->zero);
    if (preference_unrunnable(s, err)) return -1;
    if (s->offload == MP_OFFLOAD_OPTIMIZER && s->zero < 1)
        BAD("--offload optimizer is ZeRO-Offload: it needs --zero 1, 2 or 3");
    if (s->offload == MP_OFFLOAD_PARAMS && s->zero != 3)
        BAD("--offload params needs --zero 3 (parameter offload is part of ZeRO-3/ZeRO-Infinity)");
    if (s->offload != MP_OFFLOAD_NONE && settings_framework(s)->kind == MP_FW_MEMTRAIN)
        BAD("memtrain runs on one CPU device and does not offload");
    if (s->quant != MP_QUANT_NONE && s->lora_rank == 0)
        BAD("--quant %s stores a frozen base: quantised weights cannot be fully fine-tuned (add --lora-rank)",
            mp_quant_name(s->quant));
    if (mp_quant_desc_of(s->quant)->stored_only && s->quant != m->stored_quant)
        BAD("--quant %s is how a pre-quantised checkpoint stores its weights: give that checkpoint's config "
            "(--hf-config with its quantization_config)", mp_quant_name(s->quant));
    if (m->stored_quant != MP_QUANT_NONE && s->quant != m->stored_quant)
        BAD("the checkpoint is stored as %s (its quantization_config): --quant %s would need its 16-bit weights",
            mp_quant_name(m->stored_quant), mp_quant_name(s->quant));
    if (s->lora_rank < 0) BAD("invalid --lora-rank '%lld'", (long long)s->lora_rank);
    if (s->lora_rank > 0 && !s->lora_targets) BAD("--lora-targets is empty");
    if (s->lora_dropout < 0 || s->lora_dropout >= 1) BAD("invalid --lora-dropout '%g' (0 to 0.999)", s->lora_dropout);
    if (settings_framework(s)->kind == MP_FW_MEMTRAIN && (s->lora_dropout > 0 || (s->lora_targets & MP_LORA_HEAD)))
        BAD("memtrain has no LoRA dropout and no adapter on the head: use --lora-dropout 0 and targets without head");
    /* memtrain's own trainer: no compiler, a step after the backward, activations kept in RAM */
    if (settings_framework(s)->kind == MP_FW_MEMTRAIN &&
        (s->compile || s->optimizer_in_backward || s->offload_activations || s->expandable_segments))
        BAD("memtrain has no --%s: it runs its own kernels on its own allocator, steps after the backward and keeps "
            "activations in memory",
            s->compile ? "compile" : s->optimizer_in_backward ? "optimizer-in-backward"
            : s->offload_activations ? "offload-activations" : "expandable-segments");
    if (s->lora_rank > m->hidden) BAD("--lora-rank '%lld' exceeds the hidden size %lld", (long long)s->lora_rank, (long long)m->hidden);
    /* torchtune steps each parameter from its gradient hook: no accumulation
     * (its recipes refuse gradient_accumulation_steps > 1), nothing sharded */
    if (s->optimizer_in_backward && s->accum > 1)
        BAD("--optimizer-in-backward steps each parameter in the backward: it cannot accumulate (--accum '%lld')",
            (long long)s->accum);
    if (s->optimizer_in_backward && (s->zero > 0 || s->offload != MP_OFFLOAD_NONE))
        BAD("--optimizer-in-backward runs on unsharded parameters: not with --zero '%d' or offload", s->zero);
    if (mp_optimizer_desc_of(s->optimizer)->low_bit && s->adam8_block < 1)
        BAD("invalid 8-bit block size '%lld'", (long long)s->adam8_block);
    if (s->prev_seq > s->seq)
        BAD("--previous-seq '%lld' is longer than --seq '%lld' (plan the longer micro-batch)",
            (long long)s->prev_seq, (long long)s->seq);
    if (s->ce == MP_CE_CHUNKED && s->ce_chunk < 1) BAD("invalid --ce-chunk '%lld'", (long long)s->ce_chunk);
    return 0;
#undef BAD
}

const mp_framework *settings_framework(const mp_settings *s)
{
    return s->framework ? s->framework : mp_framework_builtin();
}

bool framework_quantises_head(const mp_model *m, const mp_settings *s)
{
    return s->quant != MP_QUANT_NONE && settings_framework(s)->quantised_head && !m->tied;
}

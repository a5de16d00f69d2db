/* rollout.c — the online methods' rollouts as TRL runs them (rollout.h), read at
 * huggingface/trl@f2cd57710ae345ea6428ae95363267fcf38a3dc8; the facts and
 * their lines are rows of tests/data/engines/trl_methods.csv (grpo, online-dpo, ppo). */
#include "estimate/rollout.h"
#include "estimate/activations.h"
#include "common/errors.h"
#include "model/params.h"
#include "settings/vocabulary.h"

#include <math.h>
#include <stdio.h>

static double max2(double a, double b) { return a > b ? a : b; }

/* The reward model as loaded: --reward-model's shape, else the policy's, with
 * AutoModelForSequenceClassification's one-output score head (never tied). */
static mp_model reward_shape(const mp_model *policy, const mp_settings *s)
{
    mp_model r = s->reward_model ? *s->reward_model : *policy;
    r.head_out = 1, r.tied = false;
    return r;
}

double mp_reward_weights(const mp_model *policy, const mp_settings *s, double frozen_elt)
{
    if (!mp_reward_model_used(s)) return 0;
    mp_model r = reward_shape(policy, s);
    mp_params p;
    mp_param_count(&r, &p);
    return p.total * frozen_elt;
}

int mp_rollout_model(const mp_model *m, const mp_settings *s, const mp_gpu *gpu, double weights, double dp,
                     mp_rollout_cost *r, char *err)
{
    *r = (mp_rollout_cost){0};
    const mp_method_desc *md = mp_method_desc_of(s->method);
    const double a = mp_element_bytes(s->precision), V = mp_head_outputs(m);
    const double P = (double)s->prompt_len, C = (double)s->completion_len, T = P + C, B = (double)s->batch;
    const double kv_width = 2 * (double)m->layers * (double)m->kv_heads * (double)m->head_dim;
    const bool vllm = s->rollout != MP_ROLLOUT_GENERATE; /* colocated or a server elsewhere */
    const mp_reference ref = mp_reference_used(s);
    const bool with_ref = ref == MP_REF_MODEL || ref == MP_REF_ADAPTER;
    /* GRPO: steps_per_generation defaults to gradient_accumulation_steps
     * (grpo_config.py 1077-1079), one generation batch of per_device x it rows
     * per optimizer step; PPO: the local batch, per_device x accumulation
     * (ppo_trainer.py 463); online DPO: each micro-batch's 2 x prompts (--batch
     * already counts them as rows here) */
    const double G = md->per_micro_batch ? B : B * (double)s->accum;
    r->generation_rows = G;
    /* the reward model's no-grad forward over the completions: a block's work
     * and its one-output scores */
    if (mp_reward_model_used(s)) {
        mp_model rm = reward_shape(m, s);
        const double rows = md->value_model ? (G < 64 ? G : 64) : G;
        r->reward_pass = no_grad_block(&rm, s, rows, T, a) + rows * T * 4;
    }
    if (md->value_model) {
        /* PPO (ppo_trainer.py 75-144, 682-760): generate in chunks of
         * local_rollout_forward_batch_size (64) with output_scores, the steps'
         * fp32 scores stacked per chunk, padded into one tensor of the whole
         * local batch (a copy beside the list) and kept through the update;
         * then per chunk under no_grad the reference's forward (its logits,
         * sliced and divided in place, one row's log-softmax), the value's
         * and the reward's */
        const double chunk = G < 64 ? G : 64;
        r->scores_kept = G * C * V * 4;
        r->kv_cache = kv_width * chunk * T * a;
        const double logits = chunk * V * (a + 4 + 4);
        const double decode = r->kv_cache + kv_width / (double)m->layers * chunk * T * a + logits;
        r->generate = max2(decode + r->scores_kept, 2 * r->scores_kept);
        const double ref_pass = with_ref ? a * chunk * T * V + (a == 4 ? 4 : a) * C * V : 0;
        r->logps_pass = max2(max2(ref_pass, no_grad_block(m, s, chunk, T, a)), r->reward_pass);
        r->kept = G * 16 * T + G * C * 4 * 4; /* ids and masks; log-probs, reference's, values, advantages */
        if (s->zero >= 3 && dp > 1) r->gathered = weights * (dp - 1);
        return 0;
    }
    /* GRPO's old_per_token_logps: with vLLM (importance-sampling correction, on
     * by default, grpo_config.py 915), or when accumulation and generation are
     * not aligned, which the defaults keep aligned (grpo_trainer.py 2561-2576) */
    const bool old = vllm && md->grouped;
    if (md->grouped) {
        /* kept per row (2815-2830): prompt and completion ids and masks (int64),
         * the advantage, and a per-token fp32 log-probability for the old
         * policy, the reference, and vLLM's sampling log-probabilities and
         * their ratio */
        const double per_token_logps = (old ? 1 : 0) + (with_ref ? 1 : 0) + (vllm ? 2 : 0);
        r->kept = G * (16 * T + 4 + 4 * C * per_token_logps);
        /* the log-probability pass under no_grad, per_device rows at a time
         * (1456-1521, 2553, 2626-2655): a block's work over the rows, then the
         * head on the completion and one more position, one row's log-softmax
         * beside it; a reward model by name scores the batch then too */
        if (old || with_ref) {
            const double n = B * (C + 1) * V, row = (C + 1) * V;
            r->logps_pass = max2(no_grad_block(m, s, B, T, a), a * n + (a == 4 ? 4 : a) * row);
        }
        r->logps_pass = max2(r->logps_pass, r->reward_pass);
    } else {
        r->kept = G * 16 * T; /* online DPO: the micro-batch's prompt and completion ids and masks */
    }
    if (!vllm) {
        /* transformers' generate under no_grad (grpo_trainer.py 1850-1863): the
         * whole batch at once, its cache growing a block at a time (torch.cat:
         * the old and the new tensors of one block meet), the prefill's block
         * work, the last position's logits, their fp32 copy and the sampling
         * probabilities */
        r->kv_cache = kv_width * G * T * a;
        const double logits = G * V * (a + 4 + 4);
        const double prefill = kv_width * G * P * a + no_grad_block(m, s, G, P, a) + logits;
        const double decode = r->kv_cache + kv_width / (double)m->layers * G * T * a + logits;
        r->generate = max2(prefill, decode);
        /* ZeRO-3: ds3_gather_for_generation (True by default, grpo_config.py 492,
         * online_dpo_config.py 347) gathers the whole policy on every rank */
        if (s->zero >= 3 && dp > 1) r->gathered = weights * (dp - 1);
        return 0;
    }
    /* a vLLM server on other GPUs: the training GPU sends the weights and
     * receives the completions (trl/generation/vllm_generation.py, server
     * mode): nothing of the engine here */
    if (s->rollout == MP_ROLLOUT_SERVER) return 0;
    if (!gpu || gpu->mem_bytes <= 0) {
        snprintf(err, MP_ERR_LEN, "--rollout vllm keeps a fraction of the GPU (--rollout-memory %g): name the GPU "
                 "with --gpu", mp_rollout_memory(s));
        return -1;
    }
    /* vLLM (trl/generation/vllm_generation.py 351-370): LLM(gpu_memory_utilization)
     * sizes its KV cache so that its weights, its profiled activations and the
     * cache take that fraction of the device; asleep (level 2) its weights and
     * cache are freed while the policy trains. Its weights load from the
     * checkpoint in 16 bits, or 4-bit where the policy's linears are
     * bitsandbytes 4-bit (quantization="bitsandbytes"). Profiled: a batch of
     * max_num_batched_tokens 4096 through a block and the sampler's fp32
     * logits and probabilities for max_num_seqs = per_device x
     * steps_per_generation rows (grpo_trainer.py 1091-1093). The CUDA graphs
     * vLLM captures are not counted. */
    r->engine = mp_rollout_memory(s) * gpu->mem_bytes;
    r->engine_awake_in_step = s->rollout_sleep ? 0 : r->engine;
    mp_params p;
    mp_param_count(m, &p);
    const bool nf4 = s->quant == MP_QUANT_NF4 || s->quant == MP_QUANT_NF4_DQ;
    const double lin = linear_params(m);
    const double vllm_weights = nf4 ? lin * mp_quant_bytes_per_param(m, s->quant) + (p.total - lin) * 2
                                    : p.total * 2;
    mp_settings probe = *s;
    probe.attention = MP_ATTN_FLASH; /* vLLM's own attention kernels */
    r->engine_nonkv = vllm_weights + no_grad_block(m, &probe, 1, 4096, 2) + G * V * 4 * 2;
    r->kv_token_bytes = kv_width * 2;
    /* vLLM refuses to start when its KV cache cannot hold one sequence of its
     * max_model_len, which TRL leaves to the model's positions unless
     * vllm_max_model_length is set (grpo_trainer.py 1090) */
    const double len = s->rollout_max_len > 0 ? (double)s->rollout_max_len
                     : m->max_pos > 0       ? (double)m->max_pos : (double)s->seq;
    const double need = r->engine_nonkv + len * r->kv_token_bytes;
    if (need > r->engine) {
        snprintf(err, MP_ERR_LEN, "--rollout-memory %.2f: vLLM's weights and activations (%.1f GiB) and one "
                 "%.0f-token sequence's KV cache (%.1f GiB) need %.2f of the GPU (--rollout-max-len lowers it)",
                 mp_rollout_memory(s), r->engine_nonkv / 1073741824, len, len * r->kv_token_bytes / 1073741824,
                 ceil(need / gpu->mem_bytes * 100) / 100);
        return -1;
    }
    return 0;
}

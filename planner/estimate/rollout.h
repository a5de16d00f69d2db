/* rollout.h — what a generating method (GRPO, online DPO, PPO) holds to make its completions:
 * the generation batch it keeps, transformers' generate (a KV cache in the
 * training process) or a colocated vLLM's share of the device, and the
 * no-grad log-probability pass over the batch. */
#ifndef MP_ROLLOUT_H
#define MP_ROLLOUT_H

#include "model/model.h"
#include "profiles/profiles.h"
#include "settings/settings.h"

typedef struct mp_rollout_cost {
    double generation_rows;      /* completions generated at once on this GPU (batch x accum) */
    double kept;                 /* the generation batch kept through the steps that train on it */
    double kv_cache;             /* generate: the KV cache of the generation batch, full length */
    double generate;             /* generate: its peak over the resident state */
    double gathered;             /* ZeRO-3: the rest of the policy gathered for generate */
    double logps_pass;           /* the no-grad log-probability pass (old, reference) at its peak; 0: none */
    double engine;               /* a colocated vLLM: gpu_memory_utilization x the device */
    double engine_awake_in_step; /* of it, what it keeps while the policy trains (0 asleep) */
    double engine_nonkv;         /* vLLM's weights and profiled activations; its KV cache is the rest */
    double kv_token_bytes;       /* one token's KV cache in vLLM (16-bit) */
    double reward_pass;          /* the reward model's no-grad forward over the completions */
    double scores_kept;          /* PPO: the rollout's stacked fp32 logits, kept through the update */
} mp_rollout_cost;

/* A frozen reward model's weights as loaded (0 without one), frozen_elt bytes each. */
double mp_reward_weights(const mp_model *policy, const mp_settings *s, double frozen_elt);

/* The rollout of s's method on one GPU of `gpu` (NULL: none named; a colocated
 * vLLM needs one), with the policy's weights on this GPU as the estimate has
 * them. 0, or -1 with a message in err. */
int mp_rollout_model(const mp_model *m, const mp_settings *s, const mp_gpu *gpu, double weights, double dp,
                     mp_rollout_cost *r, char *err);

#endif

/* estimate.h — one training step's memory on one GPU, per component and
 * over time, with the host RAM and the speed. */
#ifndef MP_ESTIMATE_H
#define MP_ESTIMATE_H

#include <stdbool.h>

#include "model/model.h"
#include "profiles/profiles.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"

/* One named contribution behind a number, for --explain. */
typedef struct mp_term {
    int component;             /* MP_WEIGHTS.. or -1 for host */
    char name[48];
    char formula[112];
    double bytes;
} mp_term;

/* One moment in a training step, with what is allocated then. */
typedef struct mp_phase {
    const char *name;          /* a string literal */
    double comp[MP_NCOMP];     /* overhead here: allocator-side fixed allocations */
    double total;
} mp_phase;

#define MP_MAX_TERMS 64
#define MP_MAX_PHASES 12

typedef struct mp_estimate {
    mp_params params;
    double trainable_params;
    double peak[MP_NCOMP];        /* peak of each component on one GPU, bytes */
    double at_peak[MP_NCOMP];     /* each component at the moment of the total peak */
    double logits_bytes;          /* the logits' share of activations at the peak */
    double reference_bytes;       /* a preference method's reference model, in the weights (0: none) */
    double reward_model_bytes;    /* a frozen reward model's weights, in the weights (0: none) */
    double value_model_bytes;     /* PPO's value model: its weights, gradients and optimizer state (0: none) */
    /* a colocated vLLM (GRPO --rollout vllm; all 0 without one), in the device and the overhead */
    double rollout_bytes;         /* what it holds at the peak */
    double rollout_engine_bytes;  /* its share awake: --rollout-memory x the GPU */
    double rollout_nonkv_bytes;   /* of that, its weights and profiled activations; the rest is KV cache */
    double rollout_kv_token_bytes; /* one token's KV cache */
    double rollout_base_bytes;    /* the device besides it, where it is awake */
    double rollout_cache_bytes;   /* transformers' generate: the generation batch's KV cache (in activations) */
    double rollout_rows;          /* completions generated at once on this GPU */
    double total_bytes;           /* peak allocated (torch.cuda.max_memory_allocated) */
    double reserved_bytes;        /* allocator reserved at the peak */
    double allocator_cache_bytes; /* of it, what the step's replay through the caching allocator adds */
    double device_bytes;          /* reserved + context: what nvidia-smi shows */
    double host_bytes;            /* host RAM of one process at its peak (load or training) */
    double host_data_bytes;       /* of which the data loader */
    double host_offload_bytes;    /* of which states offloaded (ZeRO-Offload) */
    double host_baseline_bytes;   /* the training process itself (interpreter, libraries) */
    double host_load_bytes;       /* one process while it loads the checkpoint */
    double host_train_bytes;      /* one process while it trains */
    double host_node_bytes;       /* every process of one node, at the larger of the two */
    int host_ranks_per_node;      /* processes (one per GPU) on a node */
    int peak_phase;               /* index into phases */
    mp_phase phases[MP_MAX_PHASES];
    int nphases;
    double act_per_layer;         /* saved activations of one layer, no checkpointing */
    double model_states_bytes;    /* the ZeRO paper's model states per GPU (mp_model_states_bytes),
                                     beside the components the stack really keeps; filled by the
                                     detailed run (mp_estimate_run), 0 in the search's estimates */
    double resident_bytes;        /* allocated between steps (the step's starting point) */
    /* Speed model */
    double flops_per_step;        /* incl. recomputation, all GPUs */
    double step_seconds;          /* one optimizer step (accum micro-batches) */
    double tokens_per_s;          /* whole job */
    double mfu;                   /* assumed achieved fraction of peak */
    /* Last, so that an estimate without --explain need not clear them. */
    int nterms;
    mp_term terms[MP_MAX_TERMS];
} mp_estimate;

/* One line stating the speed model's error against published throughput. */
const char *mp_speed_error_note(void);

/* Estimate one configuration. The GPU may be NULL (no speed estimate). */
int mp_estimate_run(const mp_model *m, const mp_settings *s, const mp_gpu *gpu,
                    mp_estimate *e, char *err);
/* The ZeRO paper's model states per GPU: (2 + 2 + K) bytes per trained
 * parameter sharded as the stage shards them, plus a frozen base as stored. */
double mp_model_states_bytes(const mp_model *m, const mp_settings *s, double total_params);
/* Bytes the budget is compared with: device_bytes. */
bool mp_fits(const mp_estimate *e, double budget_bytes, double headroom);

/* mp_estimate_run with or without the explanatory terms (the search and the
 * solver skip them). */
int mp_estimate_ex(const mp_model *m, const mp_settings *s, const mp_gpu *gpu, mp_estimate *e,
                   bool explain, char *err);
/* The estimate without replaying the step through the caching allocator: its
 * reserved and device figures are lower bounds of the full estimate's (what
 * the search screens candidates with before estimating them whole). */
int mp_estimate_screen(const mp_model *m, const mp_settings *s, const mp_gpu *gpu, mp_estimate *e, char *err);

/* What estimates of one model share: its counts and layer shapes, and a
 * layer's activations under the settings last asked (a search screens
 * thousands of combinations of one model, most differing only in settings
 * those do not read). Made for one model (copied); NULL when out of memory. */
typedef struct mp_estimate_ctx mp_estimate_ctx;
mp_estimate_ctx *mp_estimate_ctx_new(const mp_model *m);
void mp_estimate_ctx_free(mp_estimate_ctx *x);
const mp_model *mp_estimate_ctx_model(const mp_estimate_ctx *x);
/* What estimates keep per thread (the replays made, the allocator, the tensor
 * lists), let go: a thread that estimated calls it before it ends. */
void mp_estimate_release(void);
/* mp_estimate_screen and mp_estimate_ex (no explanatory terms) of the
 * context's model, figure for figure. */
int mp_estimate_screen_in(mp_estimate_ctx *x, const mp_settings *s, const mp_gpu *gpu, mp_estimate *e, char *err);
int mp_estimate_whole_in(mp_estimate_ctx *x, const mp_settings *s, const mp_gpu *gpu, mp_estimate *e, char *err);

#endif

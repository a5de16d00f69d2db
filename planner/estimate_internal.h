/* estimate_internal.h — pieces of the estimate shared inside the library only. */
#ifndef ESTIMATE_INTERNAL_H
#define ESTIMATE_INTERNAL_H

#include "memplan.h"

/* Saved activations of one transformer layer for one micro-batch, in bytes. */
typedef struct act_breakdown {
    double total;          /* everything saved for backward, no checkpointing */
    double attn_core;      /* T x T scores and friends: what selective recompute drops */
    double layer_input;    /* the layer's input: what full checkpointing keeps */
    double final_norm;     /* the final norm's saved tensors and the head's input */
    double embed_mask;     /* the embedding dropout's mask (with --dropout) */
    double backward_temp;  /* activation gradients alive while one layer runs backward */
} act_breakdown;

void activations_per_layer(const mp_model *m, const mp_settings *s, act_breakdown *ab);
/* Logits and loss: bytes alive at forward end, and extra during the loss backward. */
void logits_model(const mp_model *m, const mp_settings *s, double tokens, double *fwd, double *bwd);
void host_model(const mp_model *m, const mp_settings *s, mp_estimate *e, double offloaded,
                bool explain);
void speed_model(const mp_model *m, const mp_settings *s, const mp_gpu *gpu, mp_estimate *e,
                 double trainable, double dp);
/* The LoRA target bits a linear module answers to ("qkv" -> q|k|v). */
unsigned linear_target_bit(const char *module_name);
/* The exact prediction for memplan's reference trainer (memtrain_model.c). */
int memtrain_estimate(const mp_model *m, const mp_settings *s, mp_estimate *e, bool explain, char *err);
/* Estimate with or without the explanatory terms (the search skips them). */
int mp_estimate_ex(const mp_model *m, const mp_settings *s, const mp_gpu *gpu, mp_estimate *e,
                   bool explain, char *err);

#endif

/* activations.h — what a transformer layer and the loss keep for backward. */
#ifndef ACTIVATIONS_H
#define ACTIVATIONS_H

#include "model/model.h"
#include "settings/settings.h"

/* Tensors of one kind: `count` of `bytes` each (what the allocator sees). */
typedef struct act_tensor {
    double count, bytes;
} act_tensor;
#define ACT_MAX_KINDS 48
typedef struct act_tensors {
    act_tensor t[ACT_MAX_KINDS];
    int n;
} act_tensors;

/* Saved activations of one transformer layer for one micro-batch, in bytes. */
typedef struct act_breakdown {
    double total;          /* everything saved for backward, no checkpointing */
    double attn_core;      /* T x T scores and friends: what selective recompute drops */
    double layer_input;    /* the layer's input: what full checkpointing keeps */
    double final_norm;     /* the final norm's saved tensors and the head's input */
    double embed_mask;     /* the embedding dropout's mask (with --dropout) */
    double backward_temp;  /* activation gradients alive while one layer runs backward */
    double kbit_inputs;    /* of total: the quantised layers' inputs old bitsandbytes keeps */
    double kbit_held;      /* every quantised linear's input, which old bitsandbytes holds until
                            * the graph goes (kbit_held in activations.c); shared ones included */
    double kbit_held_head; /* the same for a quantised head: the final norm's output */
    /* the same, tensor by tensor: total - attn_core, attn_core, backward_temp */
    act_tensors saved, core, backward;
} act_breakdown;

void activations_per_layer(const mp_model *m, const mp_settings *s, act_breakdown *ab);
/* The micro-batch before the planned one, as a share of it (--previous-seq):
 * what a loop still holds of the last step scales with it. */
double previous_batch_share(const mp_settings *s);
/* Logits and the loss: what is alive when the loss is computed (fwd), what the
 * loss's backward adds (bwd), what stays into the layers' backward (kept); and
 * where the loss is Hugging Face's over every logit at once, its logits and
 * their bytes each, for the allocator replay to lay out tensor by tensor
 * (hf_elems 0 elsewhere: the replay takes the lumps). */
typedef struct logits_cost {
    double fwd, bwd, kept;
    double head, cast;    /* a loop that keeps the logits: what they hold while the head runs, and
                           * what the cast to the loss's type adds on top at the forward's end */
    double hf_elems, elt;
} logits_cost;
void logits_model(const mp_model *m, const mp_settings *s, double tokens, double all_tokens, logits_cost *cost);
/* One block's forward under no_grad over rows x tokens, at its widest moment
 * (a rollout's, an evaluation's): bytes with elements of `a` bytes. */
double no_grad_block(const mp_model *m, const mp_settings *s, double rows, double tokens, double a);

/* A preference method's logits (TRL's trainers): the policy's, as logits_model
 * gives them (fwd, bwd, kept), what the policy still holds while its reference
 * runs (after), and the reference's no-grad forward at its peak (reference). */
typedef struct preference_logits_cost {
    logits_cost policy;
    double after, reference;
} preference_logits_cost;
void preference_logits(const mp_model *m, const mp_settings *s, double rows, double seq,
                       preference_logits_cost *cost);

#endif

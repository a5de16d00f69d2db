/* activations.h — what a transformer layer and the loss keep for backward. */
#ifndef ACTIVATIONS_H
#define ACTIVATIONS_H

#include "memplan.h"

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
    /* the same, tensor by tensor: total - attn_core, attn_core, backward_temp */
    act_tensors saved, core, backward;
} act_breakdown;

void activations_per_layer(const mp_model *m, const mp_settings *s, act_breakdown *ab);
/* Logits and the loss: what is alive at the forward's end (fwd), what the
 * loss's backward adds (bwd), what stays into the layers' backward (kept); and
 * where the loss is Hugging Face's over every logit at once, its logits and
 * their bytes each, for the allocator replay to lay out tensor by tensor
 * (hf_elems 0 elsewhere: the replay takes the lumps). */
typedef struct logits_cost {
    double fwd, bwd, kept;
    double hf_elems, elt;
} logits_cost;
void logits_model(const mp_model *m, const mp_settings *s, double tokens, double all_tokens, logits_cost *cost);

#endif

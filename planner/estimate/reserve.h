/* reserve.h — what the caching allocator reserves beyond the tensors of a step. */
#ifndef RESERVE_H
#define RESERVE_H

#include "estimate/activations.h"
#include "model/model.h"
#include "settings/settings.h"

/* One GPU's step as the allocator sees it: sizes from the estimate. */
typedef struct replay_in {
    const mp_model *m;
    const mp_settings *s;
    const act_breakdown *ab;  /* one layer's tensors, listed */
    double layers;            /* transformer layers on this GPU: the totals below cover them */
    double numel_div;         /* a tensor's elements on this GPU: its full count / numel_div (tensor parallel) */
    double weights;           /* the weights on this GPU, shared out by elements x the kind's w_* */
    double w_lin, w_rest, w_adapter; /* relative bytes per element: the layers' linears; embeddings,
                                      * norms, head; LoRA's A and B */
    double grads;             /* the gradients, shared out over the trained tensors' elements */
    double grad_elt;          /* bytes per element of one gradient where each is stepped in the backward */
    double states;            /* the optimizer's state, shared out likewise */
    int nstates;              /* optimizer state tensors per parameter (2 for Adam) */
    double temps;             /* foreach: the step's temporaries for every tensor at once */
    double temp_elt;          /* else bytes per element of one tensor's step temporaries */
    double persistent;        /* other blocks alive all run: workspaces, buckets, gathered layers */
    bool staged_16bit;        /* each quantised linear arrives in 16 bits and is quantised on the GPU */
    double layer_lump;        /* > 0: a layer's forward keeps this one block (offloaded, pipelined) */
    double logits_fwd, logits_bwd, logits_kept, final_norm, dequant;
    double loss_logits;       /* > 0: Hugging Face's loss over this many logits, replayed tensor by
                               * tensor; else the logits_* lumps */
    double logit_elt;         /* bytes per element of the head's output */
    double held_layer, held_head; /* what a layer's 4-bit nodes (and the head's) hold past the backward
                                   * until the next forward's end (estimate.c prev_graph) */
    /* ZeRO-3 (zero3), run as FSDP (each block a unit, the rest the root unit)
     * or by DeepSpeed (deepspeed: gathers module by module, gradients copied into
     * its flat buffers, the root not kept) */
    bool zero3, deepspeed;
    double gather, gather_root;   /* a block's parameters gathered whole; the root's */
    double unit_grad, root_grad;  /* a unit's gradient as autograd builds it, whole (0: trains nothing) */
    double grad_keep;             /* the share of it that stays: 1 / dp reduce-scattered, 1 under no_sync */
} replay_in;

/* Replays the load, two steps and their optimizer steps through allocator.c:
 * what the allocator reserves beyond what it allocates at their high-water
 * marks; -1 when out of host memory, or, with err (MP_ERR_LEN) set, when the
 * replay would take more than REPLAY_MAX_WORK allocator calls. */
double replay_overhead(const replay_in *in, bool expandable, char *err);

/* Forgets the replays made: each replays anew (benchmarks of a first search). */
void replay_cache_clear(void);
/* The replays remembered, the allocator and the buffers this thread holds,
 * let go (a worker thread before it ends). */
void replay_release(void);

/* Allocator calls (requests and frees) a replay may take: about a second. */
#define REPLAY_MAX_WORK 1e7

#endif

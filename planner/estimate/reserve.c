/* reserve.c — a step's tensors, in the order a training loop allocates and
 * frees them, replayed through the caching allocator (allocator.c).
 *
 * The estimate's phase timeline stays the authority on what is allocated; the
 * replay measures what the allocator holds on top of it: every request rounded
 * and carved out of its segment, and the blocks cached from one phase that the
 * next cannot reuse. The order is PyTorch's eager loop: the weights tensor by
 * tensor at load; each layer's saved tensors in the forward; the logits and
 * the loss; in the backward, layer by layer from the last, the recomputed
 * layer, its activation gradients, its weights' gradients, then its saved
 * tensors freed; the optimizer's state at the first step, its temporaries, and
 * the gradients set to None (zero_grad). Two steps run, so the second finds
 * the first one's cache.
 *
 * ZeRO-3 run as FSDP replays FSDP's own buffers on the streams they are made on
 * (pytorch/pytorch@3ade90a6aaa9 torch/distributed/fsdp/_runtime_utils.py): a
 * unit's parameters are all-gathered whole on the unshard stream before its
 * forward and again before its backward, the next unit prefetched (at most two
 * all-gathers in flight, _limiter_utils.py), and freed after; the root unit's
 * stay from the forward's start to the backward's end (_post_forward_reshard);
 * a unit's gradient is built whole on the compute stream from its views'
 * gradients, then reduce-scattered into a new shard made on the post-backward
 * stream (new_sharded_grad = torch.empty_like(chunks[0])), which stays as the
 * gradient, or kept whole under no_sync(). A block freed on one stream serves
 * only that stream's requests again (allocator.c).
 *
 * DeepSpeed's ZeRO-3 gathers on its own all-gather stream too (stage 3 sets
 * overlap_comm; partitioned_param_coordinator.py fetches inside
 * get_accelerator().stream(self.__allgather_stream)) and releases a module's
 * parameters after it ran unless they are reused soon; it is replayed layer by
 * layer like FSDP's units, with no root kept, and its gradients as above
 * (pi314ever/DeepSpeed@907611fe6d36, a v0.14-era copy of deepspeed/runtime/zero). */
#include "estimate/reserve.h"
#include "estimate/allocator.h"
#include "common/errors.h"
#include "model/model.h"
#include "settings/settings.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ptensor {
    double numel;  /* its elements on this GPU */
    double w;      /* bytes per element as stored */
    bool trained;
} ptensor;

enum { STREAM_COMPUTE = 0, STREAM_UNSHARD = 1, STREAM_POST_BACKWARD = 2 };

/* A growing list of doubles: a memo's key, or a recorded trace. */
typedef struct keybuf {
    double *d;
    size_t n, cap;
    bool failed;
} keybuf;

/* Room for `more` doubles; false (and failed) when out of memory. */
static bool keybuf_room(keybuf *k, size_t more)
{
    if (k->n + more <= k->cap) return true;
    size_t n = k->cap ? 2 * k->cap : 256;
    while (n < k->n + more) n *= 2;
    double *d = realloc(k->d, n * sizeof *d);
    if (!d) {
        k->failed = true;
        return false;
    }
    k->d = d, k->cap = n;
    return true;
}

static inline void put(keybuf *k, double v)
{
    if (k->n < k->cap || keybuf_room(k, 1)) k->d[k->n++] = v;
}

/* A replay's requests and frees in order, as the allocator sees them (the
 * figure is a function of it alone): d[0] the kind of segments, then a pair
 * per call: (bytes, stream) for a request, (n, FREE) for the n-th request freed. */
#define FREE -1.0

/* The parameter tensors in load order: the globals before the layers (the
 * embedding), each layer's, the globals after (final norm, head, the head's
 * adapters). Every layer lists the same tensors, so one layer's list (lt) is
 * kept, not one entry per layer x linear x expert: tensor i of the order is
 * pre[i], then lt[j] of layer l at npre + l * nlt + j, then post[]. */
typedef struct replay {
    const replay_in *in;
    alloc_sim *a;              /* replayed as it goes; NULL: recorded into t */
    keybuf *t;
    long takes;
    ptensor pre[1], post[4], *lt;
    int npre, npost, nlt;
    long nt;                   /* npre + layers * nlt + npost */
    int layers;                /* replayed: the whole ones of in->layers */
    int *grad;                 /* per tensor: its gradient's handle, -1 when none; NULL when none is kept */
    int *tmp;                  /* the optimizer's temporaries, one per trained tensor (foreach) */
    int *fwd;                  /* the forward's kept blocks, layer after layer: fwd_at[l]..fwd_at[l + 1] - 1 */
    long *fwd_at, nfwd, capfwd;
    int *held;                 /* per layer, then the head: the last step's held 4-bit inputs */
    int *gathered;             /* FSDP, per layer: the gathered unit's block, -1 when resharded */
    int *unit_grad;            /* FSDP, per layer, then the root: the gradient it keeps */
    int root_gathered;
    double trained_numel;      /* over in->layers */
    double stored;             /* the weights' bytes over in->layers, as stored */
    double largest_trained;    /* the most elements of one trained tensor (0: none) */
    bool failed;
} replay;

/* Requests of 1 MiB or less (norm weights and statistics, LoRA factors of
 * small ranks) go to the small pool, packed 2 MiB segments where a few MiB at
 * most go unused: the replay leaves them out, the large pool is what it measures. */
#define SMALL_REQUEST 1048576.0

static inline void record(replay *r, double op, double kind)
{
    keybuf *t = r->t;
    if (t->n + 2 <= t->cap || keybuf_room(t, 2)) {
        t->d[t->n] = op, t->d[t->n + 1] = kind;
        t->n += 2;
    } else {
        r->failed = true;
    }
}

/* Recorded, a request's handle is its number: every one succeeds until the
 * trace is replayed, where a failure fails the whole replay all the same. */
static inline int take_on(replay *r, double bytes, int stream)
{
    if (bytes <= SMALL_REQUEST) return -1;
    if (!r->a) {
        record(r, bytes, stream);
        return r->failed ? -1 : (int)r->takes++;
    }
    int h = alloc_sim_malloc_on(r->a, bytes, stream);
    if (h < 0) r->failed = true;
    return h;
}

static inline int take(replay *r, double bytes)
{
    return take_on(r, bytes, STREAM_COMPUTE);
}

static inline void give(replay *r, int *h)
{
    if (*h >= 0) {
        if (r->a) alloc_sim_free(r->a, *h);
        else record(r, *h, FREE);
    }
    *h = -1;
}

static const ptensor *tensor(const replay *r, long i)
{
    if (i < r->npre) return &r->pre[i];
    i -= r->npre;
    long layered = (long)r->layers * r->nlt;
    return i < layered ? &r->lt[i % r->nlt] : &r->post[i - layered];
}

static void add(replay *r, ptensor *to, int *n, double numel, double w, bool trained)
{
    if (numel <= 0) return;
    to[(*n)++] = (ptensor){.numel = numel / r->in->numel_div, .w = w, .trained = trained};
}

/* The model's parameter tensors in load order, LoRA's beside the linears they
 * adapt: the globals into pre and post, one layer's into lt. With lt NULL,
 * one layer's are only counted (returned), without a pass per expert. */
static double list_parameters(replay *r, ptensor *lt)
{
    const replay_in *in = r->in;
    const mp_model *m = in->m;
    const mp_settings *s = in->s;
    const bool lora = s->lora_rank > 0;
    const double C = (double)m->hidden, V = mp_head_outputs(m), E = (double)m->vocab, rank = (double)s->lora_rank;
    mp_linear lin[16];
    int n = mp_model_linears(m, lin, 16);
    if (n > 16) n = 16;
    r->npre = r->npost = r->nlt = 0;
    double counted = 0;
    add(r, r->pre, &r->npre, E * C, in->w_rest, !lora);
    for (int i = 0; i < n; i++) {
        const bool adapted = lora && (lin[i].target & s->lora_targets);
        ptensor one[3];
        int k1 = 0;
        add(r, one, &k1, (double)lin[i].in * (double)lin[i].out, in->w_lin, !lora);
        if (adapted) {
            add(r, one, &k1, rank * (double)lin[i].in, in->w_adapter, true);
            add(r, one, &k1, (double)lin[i].out * rank, in->w_adapter, true);
        }
        if (!lt) counted += (double)k1 * (double)(lin[i].count > 0 ? lin[i].count : 0);
        else
            for (int64_t k = 0; k < lin[i].count; k++)
                for (int j = 0; j < k1; j++) lt[r->nlt++] = one[j];
    }
    ptensor norms[2];
    int k2 = 0;
    add(r, norms, &k2, C, in->w_rest, !lora);
    add(r, norms, &k2, C, in->w_rest, !lora);
    if (!lt) counted += k2;
    else
        for (int j = 0; j < k2; j++) lt[r->nlt++] = norms[j];
    add(r, r->post, &r->npost, C, in->w_rest, !lora);
    if (!m->tied) add(r, r->post, &r->npost, V * C, in->w_rest, !lora);
    if (lora && (s->lora_targets & MP_LORA_HEAD)) {
        add(r, r->post, &r->npost, rank * C, in->w_adapter, true);
        add(r, r->post, &r->npost, V * rank, in->w_adapter, true);
    }
    return lt ? r->nlt : counted;
}

#define PER_LAYER 256

/* The tensors a list hands out (take_list below), at most PER_LAYER. */
static double listed(const act_tensors *list)
{
    double n = 0;
    for (int i = 0; i < list->n; i++)
        if (list->t[i].count > 0) n += ceil(list->t[i].count);
    return fmin(n, PER_LAYER);
}

static void take_list(replay *r, const act_tensors *list, int *h, int *nh, int max)
{
    for (int i = 0; i < list->n; i++)
        for (double k = 0; k < list->t[i].count && *nh < max; k++) h[(*nh)++] = take(r, list->t[i].bytes);
}

static void give_all(replay *r, int *h, int *nh)
{
    for (int i = 0; i < *nh; i++) give(r, &h[i]);
    *nh = 0;
}

/* The forward's kept blocks go on r->fwd behind the current layer's start. */
static void keep_fwd(replay *r, int h)
{
    if (r->nfwd == r->capfwd) {
        long n = r->capfwd ? 2 * r->capfwd : 1024;
        int *f = realloc(r->fwd, (size_t)n * sizeof *f);
        if (!f) {
            r->failed = true;
            return;
        }
        r->fwd = f, r->capfwd = n;
    }
    r->fwd[r->nfwd++] = h;
}

static void keep_list(replay *r, const act_tensors *list, long start)
{
    for (int i = 0; i < list->n; i++)
        for (double k = 0; k < list->t[i].count && r->nfwd - start < PER_LAYER && !r->failed; k++)
            keep_fwd(r, take(r, list->t[i].bytes));
}

/* Tensors from..to-1 get their gradients; the optimizer in the backward steps
 * each and frees it there (it runs without accumulation: settings.c). */
static void gradients(replay *r, long from, long to)
{
    const replay_in *in = r->in;
    for (long i = from; i < to; i++) {
        const ptensor *p = tensor(r, i);
        if (!p->trained || (r->grad && r->grad[i] >= 0)) continue;
        if (in->s->optimizer_in_backward) {
            int grad = take(r, p->numel * in->grad_elt);
            int tmp = take(r, p->numel * in->temp_elt);
            give(r, &tmp);
            give(r, &grad);
        } else if (in->grads > 0 && r->grad) {
            r->grad[i] = take(r, in->grads * p->numel / r->trained_numel);
        }
    }
}

/* FSDP: the unit's gradient built from its views' (the views' gradients, then
 * their concatenation), then reduce-scattered into a shard on the
 * post-backward stream, added into the one kept, or kept whole (no_sync).
 * DeepSpeed: autograd's gradients of the layer's parameters, each copied into
 * the reduce bucket and freed (stage3.py __add_grad_to_ipg_bucket); the bucket
 * and the partitions it reduces into are made at the engine's start. */
static void unit_gradient(replay *r, int *kept, double whole)
{
    const replay_in *in = r->in;
    if (whole <= 0) return;
    if (in->deepspeed) {
        int grads = take(r, whole);
        give(r, &grads);
        return;
    }
    int views = take(r, whole);
    int built = take(r, whole);
    give(r, &views);
    if (in->grad_keep >= 1) { /* no_sync: it stays whole, or is added into the one kept */
        if (*kept < 0) *kept = built;
        else give(r, &built);
        return;
    }
    int shard = take_on(r, whole * in->grad_keep, STREAM_POST_BACKWARD);
    give(r, &built);
    if (*kept < 0) *kept = shard;
    else give(r, &shard); /* _saved_grad_shard += new_sharded_grad */
}

/* A layer's gradients appear as its backward runs; layer -1: the embeddings,
 * final norm and head, around the layers in the list. */
static void layer_gradients(replay *r, int layer)
{
    if (r->in->zero3) {
        unit_gradient(r, &r->unit_grad[layer >= 0 ? layer : r->layers],
                           layer >= 0 ? r->in->unit_grad : r->in->root_grad);
        return;
    }
    const long first = r->npre + (long)(layer >= 0 ? layer : r->layers) * r->nlt;
    if (layer >= 0) {
        gradients(r, first, first + r->nlt);
    } else {
        gradients(r, 0, r->npre);
        gradients(r, first, r->nt);
    }
}

static void optimizer_step(replay *r, bool first)
{
    const replay_in *in = r->in;
    if (first && in->states > 0 && in->nstates > 0) /* allocated at the first step, kept for good */
        for (long i = 0; i < r->nt; i++) {
            const ptensor *p = tensor(r, i);
            if (p->trained)
                for (int k = 0; k < in->nstates; k++) take(r, in->states * p->numel / r->trained_numel / in->nstates);
        }
    if (!in->s->optimizer_in_backward && (in->temps > 0 || in->temp_elt > 0)) {
        long nt = 0;
        for (long i = 0; i < r->nt; i++) {
            const ptensor *p = tensor(r, i);
            if (!p->trained) continue;
            if (in->temps > 0) r->tmp[nt++] = take(r, in->temps * p->numel / r->trained_numel);
            else { /* a for-loop step: one tensor's at a time */
                int one = take(r, p->numel * in->temp_elt);
                give(r, &one);
            }
        }
        for (long i = 0; i < nt; i++) give(r, &r->tmp[i]);
    }
    if (in->s->accum <= 1) { /* zero_grad(set_to_none=True) */
        if (r->grad)
            for (long i = 0; i < r->nt; i++) give(r, &r->grad[i]);
        if (in->zero3)
            for (int l = 0; l <= r->layers; l++) give(r, &r->unit_grad[l]);
    }
}

/* Hugging Face's loss tensor by tensor (transformers ForCausalLMLoss:
 * logits.float(), then cross_entropy, i.e. log_softmax and nll_loss). Forward:
 * the head's output, its fp32 copy (16-bit logits only), the log-softmax that
 * its backward keeps; the copy is freed as the loss returns, the logits as the
 * loop keeps only the loss. Backward: the NLL's gradient, the log-softmax
 * input's gradient beside it (then both the NLL's gradient and the saved output
 * go), the cast's 16-bit gradient (then the fp32 one goes), which the head's
 * backward reads while the head's and other globals' gradients are made. */
static void hf_loss(replay *r)
{
    const double n = r->in->loss_logits, a = r->in->logit_elt;
    int logits = take(r, a * n);
    int copy = a < 4 ? take(r, 4 * n) : -1;
    int log_softmax = take(r, 4 * n);
    give(r, &copy);
    give(r, &logits);
    int grad_nll = take(r, 4 * n);
    int grad_in = take(r, 4 * n);
    give(r, &grad_nll);
    give(r, &log_softmax);
    int grad_head = grad_in; /* what the head's backward reads */
    if (a < 4) {
        grad_head = take(r, a * n);
        give(r, &grad_in);
    }
    layer_gradients(r, -1);
    give(r, &grad_head);
}

/* FSDP: unit l's parameters all-gathered whole on the unshard stream (no-op
 * where it is still gathered, or not FSDP); reshard frees them. */
static void unshard(replay *r, int l)
{
    if (r->in->zero3 && l >= 0 && l < r->layers && r->gathered[l] < 0)
        r->gathered[l] = take_on(r, r->in->gather, STREAM_UNSHARD);
}

static void reshard(replay *r, int l)
{
    if (r->in->zero3 && l >= 0 && l < r->layers) give(r, &r->gathered[l]);
}

static void one_step(replay *r, bool first, int *kept_logits)
{
    const replay_in *in = r->in;
    const act_breakdown *ab = in->ab;
    const int L = r->layers;
    const int ckpt = in->s->checkpointing;
    r->nfwd = 0;
    if (in->zero3) r->root_gathered = take_on(r, in->gather_root, STREAM_UNSHARD);
    for (int l = 0; l < L && !r->failed; l++) {
        r->fwd_at[l] = r->nfwd;
        /* the CPU runs ahead of the GPU: the next all-gather is issued while
         * the last unit's block still waits on its compute, two in flight */
        unshard(r, l);
        reshard(r, l - 1);
        int dq = take(r, in->dequant);
        give(r, &dq);
        if (in->layer_lump > 0) keep_fwd(r, take(r, in->layer_lump));
        else if (mp_layer_checkpointed(in->s, l)) {
            /* the checkpointed layer runs without keeping anything, but its
             * tensors are made and freed all the same; its output, the next
             * layer's input, is made last, where they leave room */
            int tmp[PER_LAYER], ntmp = 0;
            take_list(r, &ab->saved, tmp, &ntmp, PER_LAYER);
            take_list(r, &ab->core, tmp, &ntmp, PER_LAYER);
            keep_fwd(r, take(r, ab->layer_input));
            give_all(r, tmp, &ntmp);
        }
        else {
            keep_list(r, &ab->saved, r->fwd_at[l]);
            if (ckpt != MP_CKPT_SELECTIVE) keep_list(r, &ab->core, r->fwd_at[l]);
        }
    }
    if (r->failed) return;
    r->fwd_at[L] = r->nfwd;
    reshard(r, L - 1);
    int norm = take(r, in->final_norm);
    for (int l = 0; l <= L; l++) give(r, &r->held[l]); /* the last step's graph goes with its logits */
    if (in->loss_logits > 0) {
        hf_loss(r);
    } else {
        give(r, kept_logits); /* the last step's logits, held until this forward returned */
        /* the logits (or what the loop keeps of them) and the loss's work beside them */
        const double held = in->logits_kept > 0 ? in->logits_kept : in->logits_fwd / 2;
        int logits = take(r, held);
        int loss = take(r, in->logits_fwd - held);
        int loss_bwd = take(r, in->logits_bwd);
        give(r, &loss);
        if (in->logits_kept > 0) *kept_logits = logits;
        else give(r, &logits);
        give(r, &loss_bwd);
        layer_gradients(r, -1);
    }
    for (int l = L - 1; l >= 0; l--) {
        int again[PER_LAYER], nagain = 0, bwd[PER_LAYER], nbwd = 0;
        unshard(r, l);
        unshard(r, l - 1); /* BACKWARD_PRE: the next unit prefetched as this one starts */
        if (in->layer_lump <= 0 && (ckpt == MP_CKPT_SELECTIVE || mp_layer_checkpointed(in->s, l))) {
            if (ckpt == MP_CKPT_FULL) take_list(r, &ab->saved, again, &nagain, PER_LAYER);
            take_list(r, &ab->core, again, &nagain, PER_LAYER);
        }
        int dq = take(r, in->dequant);
        give(r, &dq);
        take_list(r, &ab->backward, bwd, &nbwd, PER_LAYER);
        layer_gradients(r, l);
        give_all(r, bwd, &nbwd);
        give_all(r, again, &nagain);
        for (long i = r->fwd_at[l]; i < r->fwd_at[l + 1]; i++) give(r, &r->fwd[i]);
        reshard(r, l);
        r->held[l] = take(r, in->held_layer); /* its 4-bit nodes' inputs stay with the graph */
    }
    r->held[L] = take(r, in->held_head);
    give(r, &norm);
    give(r, &r->root_gathered); /* the root resharded in the backward's final callback */
    optimizer_step(r, first);
}

/* The work of a replay, in allocator calls (requests and frees, the small ones
 * it leaves out included), at most: a parameter tensor is loaded (its 16-bit
 * copy made and freed), gets its state, and in each of two steps a gradient
 * (stepped in the backward: with a temporary) and the step's temporaries; a
 * layer makes and frees its saved and recomputed tensors, its backward's, its
 * gathers, gradients and held inputs, twice. */
static double replay_work(const replay *r, double nlt)
{
    const replay_in *in = r->in;
    const act_breakdown *ab = in->ab;
    const double tensors = r->npre + r->npost + (double)r->layers * nlt;
    const double layer_step = 20 + 4 * (listed(&ab->saved) + listed(&ab->core)) + 2 * listed(&ab->backward);
    return 64 + tensors * (16 + fmax(in->nstates, 0)) + (double)r->layers * 2 * layer_step;
}

static void replay_free(replay *r)
{
    free(r->lt), free(r->grad), free(r->tmp), free(r->fwd), free(r->fwd_at);
    free(r->held), free(r->gathered), free(r->unit_grad);
}

/* The allocator every replay runs on, emptied in between: its arrays are
 * made once, not grown again from nothing for each of a search's replays. A
 * large one is let go (its memory would stay with the process). One per
 * thread (memplan table searches its models on every core). */
static _Thread_local alloc_sim *sim;

static alloc_sim *shared_sim(bool expandable)
{
    if (sim && alloc_sim_blocks(sim) > (1 << 16)) alloc_sim_delete(sim), sim = NULL;
    if (!sim) sim = alloc_sim_new(expandable);
    else alloc_sim_reset(sim, expandable);
    return sim;
}

static double overhead(const alloc_sim *a, bool failed)
{
    alloc_stats st = alloc_sim_stats(a);
    return failed || st.failed ? -1 : fmax(0, st.peak_reserved - st.peak_allocated);
}

/* The parameter tensors, one layer's listed (r->lt), and their totals over
 * in->layers: what a replay and its key read. false when out of memory. */
static bool list_tensors(replay *r, double nlt)
{
    const replay_in *in = r->in;
    const long L = r->layers;
    r->lt = malloc(((size_t)nlt + 1) * sizeof *r->lt);
    if (!r->lt) return false;
    list_parameters(r, r->lt);
    r->nt = r->npre + L * r->nlt + r->npost;
    /* the totals are for in->layers, which a pipeline stage may hold a fraction of */
    double stored = 0, reps = r->layers > 0 ? in->layers / r->layers : 1;
    for (long i = 0; i < r->nt; i++) {
        const ptensor *p = tensor(r, i);
        double k = i >= r->npre && i < r->npre + L * r->nlt ? reps : 1;
        stored += k * p->numel * p->w;
        if (p->trained) {
            r->trained_numel += k * p->numel;
            if (p->numel > r->largest_trained) r->largest_trained = p->numel;
        }
    }
    if (r->trained_numel <= 0) r->trained_numel = 1;
    r->stored = stored;
    return true;
}

/* The step's tensors (listed by list_tensors), taken and given through
 * take/give: to the allocator (r->a) or into the trace (r->t). */
static void replay_steps(replay *r)
{
    const replay_in *in = r->in;
    const long L = r->layers;
    r->fwd_at = malloc(((size_t)L + 2) * sizeof *r->fwd_at);
    r->held = malloc(((size_t)L + 1) * sizeof(int));
    r->gathered = malloc(((size_t)L + 1) * sizeof(int));
    r->unit_grad = malloc(((size_t)L + 1) * sizeof(int));
    r->root_gathered = -1;
    if (!r->fwd_at || !r->held || !r->gathered || !r->unit_grad) {
        r->failed = true;
        return;
    }
    for (long l = 0; l <= L; l++) r->held[l] = r->gathered[l] = r->unit_grad[l] = -1;
    /* gradients kept to the optimizer's step: one handle per tensor */
    if (!in->zero3 && !in->s->optimizer_in_backward && in->grads > 0) {
        r->grad = malloc((size_t)r->nt * sizeof(int));
        if (!r->grad) {
            r->failed = true;
            return;
        }
        for (long i = 0; i < r->nt; i++) r->grad[i] = -1;
    }
    if (!in->s->optimizer_in_backward && in->temps > 0 && !(r->tmp = malloc((size_t)r->nt * sizeof(int)))) {
        r->failed = true;
        return;
    }
    const double stored = r->stored;
    for (long i = 0; i < r->nt; i++) { /* loaded, alive all run */
        /* bitsandbytes quantises a weight where it lands: the 16-bit copy goes to
         * the GPU, the packed weight is made beside it, the copy is freed
         * (Params4bit._quantize: w = self.data.contiguous().to(device);
         * quantize_4bit(w); self.data = w_4bit) */
        const ptensor *p = tensor(r, i);
        bool layered = i >= r->npre && i < r->npre + L * r->nlt;
        bool staged = in->staged_16bit && layered && !p->trained && p->w == in->w_lin;
        int copy = staged ? take(r, 2 * p->numel) : -1;
        take(r, stored > 0 ? in->weights * p->numel * p->w / stored : 0);
        give(r, &copy);
    }
    take(r, in->persistent); /* alive all run: never freed */
    int kept_logits = -1;
    for (int step = 0; step < 2 && !r->failed; step++) one_step(r, step == 0, &kept_logits);
}

/* A recorded trace through the allocator. */
static double run_trace(const keybuf *t, long takes)
{
    alloc_sim *a = shared_sim(t->d[0] != 0);
    int *h = malloc(((size_t)takes + 1) * sizeof *h);
    if (!a || !h) {
        free(h);
        return -1;
    }
    long k = 0;
    for (size_t i = 1; i + 1 < t->n; i += 2) {
        if (t->d[i + 1] == FREE) alloc_sim_free(a, h[(long)t->d[i]]);
        else h[k++] = alloc_sim_malloc_on(a, t->d[i], (int)t->d[i + 1]);
    }
    free(h);
    return overhead(a, false);
}

/* ---------- the replays already made ----------
 * A search estimates the same step many times (the plans it verifies, the
 * best one reported, a table's every GPU for one model), and the replay is a
 * pure function of its trace, the trace a pure function of what reserve.c
 * reads. Two tables: by those inputs (a key listing every one of them, as
 * doubles), which skips recording the trace; and by the trace itself, which
 * also catches inputs that differ only where the replay leaves them out (an
 * optimizer's state of small tensors, say). A hit is a key equal bit for bit
 * to one replayed before: its figure is the one the replay made. Each table
 * is emptied when full, which bounds its memory. Each thread keeps its own
 * (memplan table's workers: a model's row each); the profiles are loaded
 * before any thread starts and only read after. */
#define MEMO_SLOTS 2048 /* a power of two */
#define MEMO_MAX 1024   /* entries before a table is emptied */

typedef struct memo_entry {
    uint64_t hash;
    double *key;        /* NULL: empty */
    size_t len;
    double result;
} memo_entry;

typedef struct memo {
    memo_entry slot[MEMO_SLOTS];
    int used;
    size_t bytes, max_bytes; /* the keys' */
} memo;

static _Thread_local memo by_input = {.max_bytes = 8u << 20}, by_trace = {.max_bytes = 32u << 20};
/* the key and the trace being made, their room kept from one replay to the next */
static _Thread_local keybuf key, trace;

/* Traces longer than this are replayed as they are made, not recorded. */
#define TRACE_MAX_CALLS 1000000

static void put_list(keybuf *k, const act_tensors *t)
{
    put(k, t->n);
    for (int i = 0; i < t->n && i < ACT_MAX_KINDS; i++) put(k, t->t[i].count), put(k, t->t[i].bytes);
}

/* Whether a request of `bytes` is recorded (take_on): the small pool's are not. */
static bool recorded(double bytes)
{
    return !(bytes <= SMALL_REQUEST);
}

/* Everything replay_steps reads, directly or through list_parameters (r:
 * the tensors listed). An input the trace cannot show is written as 0: the
 * per-tensor requests of the optimizer's state, its step's temporaries and
 * the gradients when even the largest trained tensor's is too small to be
 * recorded (LoRA's adapters), the ones a path does not read (the step's
 * temporaries in the backward, the per-tensor gradients under ZeRO-3,
 * checkpointing where each layer is one block), accumulation beyond "more
 * than one". So plans that differ only there share one replay. */
static void replay_key(keybuf *k, const replay *r, bool expandable)
{
    const replay_in *in = r->in;
    const mp_model *m = in->m;
    const mp_settings *s = in->s;
    const act_breakdown *ab = in->ab;
    const double big = r->largest_trained, all = r->trained_numel;
    const bool oib = s->optimizer_in_backward;
    double states = in->states, nstates = in->nstates, temps = in->temps, temp_elt = in->temp_elt;
    double grads = in->grads, grad_elt = in->grad_elt;
    if (!(in->states > 0 && in->nstates > 0) || !recorded(in->states * big / all / in->nstates)) states = nstates = 0;
    if (oib) { /* each tensor's gradient and step in the backward (gradients) */
        grads = temps = 0;
        if (!recorded(big * in->grad_elt)) grad_elt = 0;
        if (!recorded(big * in->temp_elt)) temp_elt = 0;
    } else {
        grad_elt = 0;
        if (in->zero3 || !(in->grads > 0) || !recorded(in->grads * big / all)) grads = 0;
        if (in->temps > 0) {
            temp_elt = 0;
            if (!recorded(in->temps * big / all)) temps = 0;
        } else if (!recorded(big * in->temp_elt)) {
            temp_elt = 0;
        }
    }
    k->n = 0, k->failed = false;
    put(k, expandable);
    const double scalars[] = {
        in->layers, in->numel_div, in->weights, in->w_lin, in->w_rest, in->w_adapter, grads, grad_elt,
        states, nstates, temps, temp_elt, in->persistent, in->staged_16bit, in->layer_lump,
        in->logits_fwd, in->logits_bwd, in->logits_kept, in->final_norm, in->dequant, in->loss_logits,
        in->logit_elt, in->held_layer, in->held_head, in->zero3, in->deepspeed, in->gather, in->gather_root,
        in->unit_grad, in->root_grad, in->grad_keep,
        s->lora_rank, s->lora_targets, in->layer_lump > 0 ? 0 : s->checkpointing, oib, s->accum <= 1 ? 1 : 2,
        in->layer_lump > 0 || s->checkpointing != MP_CKPT_FULL || s->ckpt_every <= 1 ? 1 : (double)s->ckpt_every,
        (double)m->hidden, (double)m->vocab, mp_head_outputs(m), m->tied, ab->layer_input,
    };
    for (size_t i = 0; i < sizeof scalars / sizeof *scalars; i++) put(k, scalars[i]);
    mp_linear lin[16];
    int n = mp_model_linears(m, lin, 16);
    if (n > 16) n = 16;
    put(k, n);
    for (int i = 0; i < n; i++)
        put(k, (double)lin[i].in), put(k, (double)lin[i].out), put(k, (double)lin[i].count), put(k, lin[i].target);
    put_list(k, &ab->saved);
    put_list(k, &ab->core);
    put_list(k, &ab->backward);
}

/* A hash of every stride-th double (a hit compares the whole key anyway): a
 * trace's thousands of calls need not all be read twice. */
static uint64_t key_hash(const keybuf *k, size_t stride)
{
    uint64_t h = 0x9e3779b97f4a7c15u ^ k->n;
    for (size_t i = 0; i < k->n; i += stride) {
        uint64_t v;
        memcpy(&v, &k->d[i], sizeof v);
        h = (h ^ v) * 0xff51afd7ed558ccdu;
        h ^= h >> 32;
    }
    return h;
}

/* The slot holding the key, or the empty one where it would go. */
static memo_entry *memo_slot(memo *t, const keybuf *k, uint64_t h)
{
    for (size_t i = h & (MEMO_SLOTS - 1);; i = (i + 1) & (MEMO_SLOTS - 1)) {
        memo_entry *e = &t->slot[i];
        if (!e->key) return e;
        if (e->hash == h && e->len == k->n && !memcmp(e->key, k->d, k->n * sizeof *k->d)) return e;
    }
}

static void memo_clear(memo *t)
{
    for (int i = 0; i < MEMO_SLOTS; i++) {
        free(t->slot[i].key);
        t->slot[i] = (memo_entry){0};
    }
    t->used = 0, t->bytes = 0;
}

void replay_cache_clear(void)
{
    memo_clear(&by_input);
    memo_clear(&by_trace);
}

void replay_release(void)
{
    replay_cache_clear();
    alloc_sim_delete(sim);
    sim = NULL;
    free(key.d), free(trace.d);
    key = (keybuf){0}, trace = (keybuf){0};
}

static void memo_put(memo *t, const keybuf *k, uint64_t h, double result)
{
    const size_t bytes = k->n * sizeof *k->d;
    if (bytes > t->max_bytes / 4) return; /* one that would crowd the rest out */
    if (t->used >= MEMO_MAX || t->bytes + bytes > t->max_bytes) memo_clear(t);
    double *copy = malloc(bytes);
    if (!copy) return; /* not kept: the next one replays again */
    memcpy(copy, k->d, bytes);
    *memo_slot(t, k, h) = (memo_entry){.hash = h, .key = copy, .len = k->n, .result = result};
    t->used++, t->bytes += bytes;
}

double replay_overhead(const replay_in *in, bool expandable, char *err)
{
    if (err) err[0] = 0;
    replay r = {.in = in, .layers = (int)floor(in->layers), .root_gathered = -1};
    const double nlt = list_parameters(&r, NULL); /* counted first: the work decides whether it runs */
    const double work = replay_work(&r, nlt);
    if (work > REPLAY_MAX_WORK) {
        if (err)
            snprintf(err, MP_ERR_LEN, "the caching allocator's replay of %d layers x %.0f parameter tensors would "
                     "take %.3g allocator calls, more than the %.0e it runs in about a second",
                     r.layers, nlt, work, REPLAY_MAX_WORK);
        return -1;
    }
    if (!list_tensors(&r, nlt)) {
        replay_free(&r);
        return -1;
    }
    replay_key(&key, &r, expandable);
    const uint64_t hk = key_hash(&key, 1);
    if (!key.failed) {
        const memo_entry *e = memo_slot(&by_input, &key, hk);
        if (e->key) {
            replay_free(&r);
            return e->result;
        }
    }
    double got;
    if (work <= TRACE_MAX_CALLS) {
        trace.n = 0, trace.failed = false;
        put(&trace, expandable);
        r.t = &trace;
        replay_steps(&r);
        got = -1;
        if (!r.failed) {
            const uint64_t ht = key_hash(&trace, 7);
            const memo_entry *e = memo_slot(&by_trace, &trace, ht);
            if (e->key) got = e->result;
            else if ((got = run_trace(&trace, r.takes)) >= 0) memo_put(&by_trace, &trace, ht, got);
        }
        if (trace.cap > (1u << 18)) free(trace.d), trace = (keybuf){0}; /* a large one let go */
    } else {
        r.a = shared_sim(expandable);
        if (r.a) replay_steps(&r);
        got = r.a ? overhead(r.a, r.failed) : -1;
    }
    replay_free(&r);
    if (!key.failed && got >= 0) memo_put(&by_input, &key, hk, got); /* out of host memory may pass: not kept */
    return got;
}

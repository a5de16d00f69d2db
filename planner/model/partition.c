/* partition.c — the model's tensors, and how PyTorch's ZeroRedundancyOptimizer
 * deals them to ranks: whole tensors, largest first, each to the rank holding
 * the fewest parameters so far (torch/distributed/optim/zero_redundancy_optimizer.py,
 * _partition_parameters). A rank that draws the embedding holds far more than
 * 1/N of the parameters; the estimate follows the heaviest rank. The same list
 * tells which share of the model sits in tensors of a given size (bitsandbytes
 * pages the optimizer state of the large ones only). */
#include "model/partition.h"
#include "model/model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct tensor_list {
    double *n;
    int count, cap;
} tensor_list;

static void add(tensor_list *t, double n, double copies)
{
    for (double k = 0; k < copies && n > 0; k++) {
        if (t->count == t->cap) {
            int cap = t->cap ? 2 * t->cap : 256;
            double *p = realloc(t->n, (size_t)cap * sizeof *p);
            if (!p) return; /* the list stays shorter: the split is then approximate */
            t->n = p, t->cap = cap;
        }
        t->n[t->count++] = n;
    }
}

/* One layer's tensors: its linear weights (each expert's apart), biases and norms. */
static void layer_tensors(const mp_model *m, tensor_list *t)
{
    mp_linear lin[16];
    int n = mp_model_linears(m, lin, 16);
    for (int i = 0; i < n && i < 16; i++) add(t, (double)lin[i].in * (double)lin[i].out, (double)lin[i].count);
    const double c = (double)m->hidden, q = (double)(m->heads * m->head_dim);
    const double kv = (double)(m->kv_heads * m->head_dim);
    if (m->qkv_bias) {
        if (m->fused_qkv) add(t, q + 2 * kv, 1);
        else add(t, q, 1), add(t, kv, 2);
    }
    if (m->out_bias) add(t, c, 1);
    add(t, c, (double)m->norms_per_layer * (m->norm_bias ? 2 : 1));
    if (m->experts) add(t, c * (double)m->experts, 1); /* the router */
}

double largest_layer_tensor(const mp_model *m)
{
    tensor_list t = {0};
    layer_tensors(m, &t);
    double largest = 0;
    for (int i = 0; i < t.count; i++) largest = fmax(largest, t.n[i]);
    free(t.n);
    return largest;
}

/* Every tensor of the model; the sizes add up to mp_param_count's total. */
static void model_tensors(const mp_model *m, tensor_list *t)
{
    mp_params p;
    mp_param_count(m, &p);
    const double c = (double)m->hidden;
    add(t, (double)m->vocab * c, 1);
    if (p.pos > 0) add(t, p.pos, 1);
    if (!m->tied) add(t, mp_head_outputs(m) * c, 1);
    if (m->head_bias) add(t, mp_head_outputs(m), 1);
    for (int64_t l = 0; l < m->layers; l++) layer_tensors(m, t);
    if (m->final_norm) add(t, c, m->norm_bias ? 2 : 1);
    if (m->embed_norm) add(t, c, 2);
    double listed = 0;
    for (int i = 0; i < t->count; i++) listed += t->n[i];
    if (p.total - listed > 0.5) add(t, p.total - listed, 1); /* what the list leaves out (MLP biases) */
}

static int larger_first(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

/* Greedy, as ZeroRedundancyOptimizer does it: ranks as a min-heap on their load. */
typedef struct rank_load {
    double load, largest;
} rank_load;

static void sift_down(rank_load *h, int64_t n, int64_t i)
{
    for (;;) {
        int64_t l = 2 * i + 1, r = l + 1, s = i;
        if (l < n && h[l].load < h[s].load) s = l;
        if (r < n && h[r].load < h[s].load) s = r;
        if (s == i) return;
        rank_load tmp = h[i];
        h[i] = h[s], h[s] = tmp;
        i = s;
    }
}

static void deal(const tensor_list *t, int64_t ranks, tensor_split *out)
{
    rank_load *h = calloc((size_t)ranks, sizeof *h);
    if (!h) return;
    for (int i = 0; i < t->count; i++) { /* the lightest rank takes the next tensor */
        h[0].load += t->n[i];
        h[0].largest = fmax(h[0].largest, t->n[i]);
        sift_down(h, ranks, 0);
    }
    for (int64_t r = 0; r < ranks; r++)
        if (h[r].load > out->heaviest) out->heaviest = h[r].load, out->largest_held = h[r].largest;
    free(h);
}

/* The model's tensors, largest first. The search asks about the same model many
 * times: the last model's list is kept (and replaced when another is asked),
 * one per thread. */
static _Thread_local mp_model last_model;
static _Thread_local tensor_list last;
static _Thread_local bool have;

void partition_release(void)
{
    free(last.n);
    memset(&last, 0, sizeof last);
    have = false;
}

static const tensor_list *sorted_tensors(const mp_model *m)
{
    if (have && !memcmp(&last_model, m, sizeof *m)) return &last;
    free(last.n);
    memset(&last, 0, sizeof last);
    model_tensors(m, &last);
    qsort(last.n, (size_t)last.count, sizeof *last.n, larger_first);
    last_model = *m, have = true;
    return &last;
}

void whole_tensor_split(const mp_model *m, int64_t ranks, tensor_split *out)
{
    memset(out, 0, sizeof *out);
    const tensor_list *t = sorted_tensors(m);
    out->largest = t->count ? t->n[0] : 0;
    deal(t, ranks < 1 ? 1 : ranks, out);
}

double share_in_tensors_of_at_least(const mp_model *m, double min_numel)
{
    const tensor_list *t = sorted_tensors(m);
    double all = 0, large = 0;
    for (int i = 0; i < t->count; i++) {
        all += t->n[i];
        if (t->n[i] >= min_numel) large += t->n[i];
    }
    return all > 0 ? large / all : 0;
}

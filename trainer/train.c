/*
 * train.c — the training loop's step, evaluation and checkpoint state.
 */
#include "train.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data.h"
#include "dist.h"
#include "memtrain/memtrain_inventory.h"
#include "optim.h"
#include "precision.h"
#include "ring.h"
#include "rng.h"
#include "settings/vocabulary.h"

struct mt_trainer {
    mt_config cfg;
    mt_model *model;
    mt_optim opt;
    bool opt_ready;
    mt_data *data;
    int32_t *inputs, *targets; /* (B,T) each, MT_DATA */
    mt_scaler scaler;
    mt_rng rng;
    long step;
    /* data parallel: the shard of the trainable parameters this rank's optimizer
     * updates (all of them unless ZeRO-1), its weight-decay segments, and the
     * fp32 bucket 16-bit gradients are all-reduced through */
    size_t shard_lo, shard_n;
    mt_seg *shard_segs;
    size_t shard_nsegs;
    float *bucket;
    size_t bucket_n;
    /* ZeRO-0/1: the chunk one exchange of the ring all-reduce receives (ring.h) */
    float *recv;
    /* ZeRO-2: the summed gradients of this rank's shard, fp32, over the step's
     * micro-batches (the inventory's grads.shard; zero between steps) */
    float *gshard;
    size_t gtotal;
    /* mt_trainer_set_stop: the loader's state at the step's start (keep_data) */
    uint8_t *data_snap;
    bool stop_set;
};

/* ZeRO-2: the backward's gradients [off, off + n) summed over the ranks into the
 * shards (one process: added into all of them). */
static int grad_sink(void *ctx, size_t off, void *g, size_t n)
{
    mt_trainer *t = ctx;
    mt_dtype dt = mt_model_dtype(t->model);
    if (t->cfg.ranks < 2) {
        for (size_t i = 0; i < n; i++)
            t->gshard[off + i] += mt_load1(g, dt, i);
        return 0;
    }
    return mt_dist_reduce_scatter_add(g, dt, off, n, t->gtotal, t->gshard, t->bucket, t->bucket_n);
}

/* The weight-decay segments clipped to [lo, lo+n), made relative to lo. */
static int shard_segments(mt_trainer *t, const mt_group *g)
{
    t->shard_segs = mt_alloc_n(MT_OTHER, g->nsegs ? g->nsegs : 1, sizeof(mt_seg));
    if (!t->shard_segs)
        return -1;
    size_t lo = t->shard_lo, hi = lo + t->shard_n;
    for (size_t i = 0; i < g->nsegs; i++) {
        size_t a = g->segs[i].off, b = a + g->segs[i].n;
        a = a > lo ? a : lo, b = b < hi ? b : hi;
        if (a < b)
            t->shard_segs[t->shard_nsegs++] = (mt_seg){a - lo, b - a, g->segs[i].decay};
    }
    return 0;
}

/* The shard the optimizer updates, and its segments (ZeRO-1 and 2 over several
 * ranks); ZeRO-2: the shard's gradients, and the model's sink into them. */
static int dist_setup(mt_trainer *t, const mt_group *g)
{
    const mt_config *c = &t->cfg;
    t->shard_lo = 0, t->shard_n = g->n;
    if (c->s.zero >= 1 && c->ranks >= 2) {
        mt_dist_shard(g->n, c->rank, c->ranks, &t->shard_lo, &t->shard_n);
        if (shard_segments(t, g) != 0)
            return -1;
    }
    if (c->s.zero >= 2) {
        t->gtotal = g->n;
        if (!(t->gshard = mt_calloc(MT_GRADIENTS, t->shard_n * sizeof(float))))
            return -1;
        mt_model_set_grad_sink(t->model, grad_sink, t);
    }
    return 0;
}

/* The all-reduce bucket (the inventory's row comm.bucket): 16-bit gradients only;
 * ZeRO-0/1: the ring's receive chunk (comm.recv), and the ring set up on them. */
static int dist_bucket(mt_trainer *t, const mt_group *g)
{
    /* ZeRO-2: also the most one reduce-scatter sums (fp32 ones too, in place) */
    size_t most = t->gshard ? MEMTRAIN_RS_BUCKET : MEMTRAIN_BUCKET;
    t->bucket_n = g->n < most ? g->n : most;
    if (t->cfg.ranks > 1 && g->dt != MT_F32 && g->n && !(t->bucket = mt_alloc_n(MT_COMM, t->bucket_n, sizeof(float))))
        return -1;
    if (t->cfg.ranks > 1 && !t->gshard && g->n) {
        size_t ranks = (size_t)t->cfg.ranks;
        if (!(t->recv = mt_alloc_n(MT_COMM, (t->bucket_n + ranks - 1) / ranks, sizeof(float))))
            return -1;
        return mt_ring_setup(g->dt, t->bucket, t->recv, t->bucket_n);
    }
    return 0;
}

/* ZeRO-0/1: the backward's final gradients into the ring as they come. */
static int grad_ready(void *ctx, void *g, size_t n)
{
    (void)ctx;
    return mt_ring_queue(g, n);
}

static int say(char *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int say(char *err, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, MT_ERR_LEN, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static int fail(char *err, const char *what)
{
    if (err)
        snprintf(err, MT_ERR_LEN, "%s: %s", what, mt_last_error());
    return -1;
}

int mt_trainer_create(const mt_config *cfg, mt_trainer **out, char *err)
{
    *out = NULL;
    mt_trainer *t = mt_calloc(MT_OTHER, sizeof *t);
    if (!t)
        return fail(err, "trainer");
    t->cfg = *cfg;
    if (cfg->shape.vocab < 256) {
        mt_error("vocab (%d) must be at least 256 for the byte tokenizer", cfg->shape.vocab);
        mt_free(t);
        return fail(err, "config");
    }
    size_t N = mt_config_rows(cfg) * (size_t)cfg->s.seq;
    mt_rng_seed(&t->rng, cfg->own.seed ^ 0x747261696eULL);
    mt_scaler_init(&t->scaler, mp_precision_desc_of(cfg->s.precision)->loss_scaling, cfg->own.loss_scale,
                   cfg->own.loss_scale_window);
    if (mt_model_create(cfg, &t->model) != 0) {
        fail(err, "model");
        goto out;
    }
    mt_group g;
    mt_model_trainable(t->model, &g);
    if (dist_setup(t, &g) != 0) {
        fail(err, "data parallel");
        goto out;
    }
    if (mt_optim_init(&t->opt, &cfg->s, &cfg->own.opt, t->shard_n, t->shard_segs ? t->shard_segs : g.segs,
                      t->shard_segs ? t->shard_nsegs : g.nsegs) != 0) {
        fail(err, "optimizer");
        goto out;
    }
    t->opt_ready = true;
    /* a preference method's pairs: 2B rows (mt_data_pairs) */
    if (mt_data_open(&t->data, cfg->own.data_path, cfg->s.loader, mt_config_rows(cfg),
                     (size_t)cfg->s.seq, (size_t)cfg->s.shuffle_buffer, cfg->own.seed) != 0) {
        fail(err, "data");
        goto out;
    }
    if (cfg->s.method != MP_METHOD_SFT)
        mt_data_pairs(t->data);
    if (cfg->ranks > 1 && mt_data_shard(t->data, cfg->rank, cfg->ranks) != 0) {
        fail(err, "data");
        goto out;
    }
    t->inputs = mt_alloc_n(MT_DATA, N, sizeof(int32_t));
    t->targets = mt_alloc_n(MT_DATA, N, sizeof(int32_t));
    if (!t->inputs || !t->targets) {
        fail(err, "data");
        goto out;
    }
    if (dist_bucket(t, &g) != 0) {
        fail(err, "data parallel");
        goto out;
    }
    *out = t;
    return 0;
out:
    mt_trainer_free(t);
    return -1;
}

void mt_trainer_free(mt_trainer *t)
{
    if (!t)
        return;
    if (t->opt_ready)
        mt_optim_free(&t->opt);
    mt_model_free(t->model);
    mt_data_close(t->data);
    mt_free(t->inputs);
    mt_free(t->targets);
    mt_free(t->bucket);
    mt_free(t->recv);
    mt_free(t->gshard);
    mt_free(t->shard_segs);
    free(t->data_snap);
    mt_free(t);
}

/* The update: this rank's shard (all of it unless ZeRO-1, 2 or 3), from the
 * gradients' shard under ZeRO-2 and 3, then every rank's updated shard to all
 * (not under ZeRO-3: each rank keeps its shard of the parameters only).
 * Gradients end zeroed. */
static int update(mt_trainer *t, const mt_group *g, float scale)
{
    size_t lo = t->shard_lo, es = mt_dtype_size(g->dt);
    float *w = g->master ? g->master : (float *)g->w;
    char *w16 = g->master ? (char *)g->w + lo * es : NULL;
    bool whole = t->shard_n == g->n;
    if (t->cfg.s.zero >= 3) { /* ZeRO-3: g->w is the shard; the next forward gathers the layers */
        /* mixed precision: the master shard, and the 16-bit shard from it */
        mt_optim_step(&t->opt, g->master ? g->master : (float *)g->w, t->gshard, MT_F32, 1.0f / scale,
                      g->master ? g->w : NULL, g->dt, true);
        mt_model_params_changed(t->model);
        return 0;
    }
    if (t->gshard)
        mt_optim_step(&t->opt, w + lo, t->gshard, MT_F32, 1.0f / scale, w16, g->dt, true);
    else
        mt_optim_step(&t->opt, w + lo, (char *)g->grad + lo * es, g->dt, 1.0f / scale, w16, g->dt, whole);
    if (whole)
        return 0;
    mt_model_zero_grad(t->model);
    return mt_dist_allgather(g->w, g->dt, g->n, t->cfg.ranks);
}

/* Whether the step's gradients are finite (fp16 loss scaling): under ZeRO-2
 * each rank holds its shard, and every rank must decide alike. */
static bool grads_finite(mt_trainer *t, const mt_group *g)
{
    if (!t->scaler.enabled)
        return true;
    if (!t->gshard)
        return mt_all_finite(g->grad, g->dt, g->n);
    bool mine = mt_all_finite(t->gshard, MT_F32, t->shard_n);
    return t->cfg.ranks < 2 ? mine : mt_dist_sum(mine ? 0.0 : 1.0) == 0.0;
}

int mt_trainer_set_stop(mt_trainer *t, mt_model_stop_fn stop, void *ctx, bool keep_data, char *err)
{
    free(t->data_snap);
    t->data_snap = NULL;
    if (stop && keep_data && !(t->data_snap = malloc(mt_data_state_size(t->data))))
        return say(err, "out of memory for the data loader's state (%zu bytes)", mt_data_state_size(t->data));
    mt_model_set_stop(t->model, stop, ctx);
    t->stop_set = stop != NULL;
    return 0;
}

/* The step was stopped between layers: its partial gradients dropped (the
 * all-reduce's queued sums finished first: every rank queued the same), the loader
 * back where the step found it. */
static int abandon_step(mt_trainer *t, bool ring, mt_step_result *r, char *err)
{
    mt_model_set_grad_ready(t->model, NULL, NULL);
    if (ring && mt_ring_finish(NULL) != 0)
        return fail(err, "data parallel");
    mt_model_zero_grad(t->model);
    if (t->gshard)
        memset(t->gshard, 0, t->shard_n * sizeof(float));
    if (t->data_snap && mt_data_state_load(t->data, t->data_snap) != 0)
        return fail(err, "data");
    r->stopped = true;
    r->step = t->step;
    r->skipped_total = t->scaler.skipped;
    return 0;
}

int mt_trainer_step(mt_trainer *t, mt_step_result *r, char *err)
{
    memset(r, 0, sizeof *r);
    int accum = t->cfg.s.accum, ranks = t->cfg.ranks;
    float scale = t->scaler.scale;
    double sum = 0.0;
    /* ZeRO-0/1 over several ranks: the ring all-reduce (ring.h) of the gradients,
     * started by the last micro-batch's backward as they become final (overlap),
     * or after it */
    bool ring = ranks > 1 && t->recv;
    mt_group g;
    mt_model_trainable(t->model, &g);
    if (t->data_snap)
        mt_data_state_save(t->data, t->data_snap);
    for (int k = 0; k < accum; k++) {
        float loss;
        if (mt_data_next(t->data, t->inputs, t->targets) != 0)
            return fail(err, "data");
        /* each rank's gradient is 1/ranks of the mean: the all-reduce's sum is the mean */
        int rc = mt_model_forward(t->model, t->inputs, t->targets, scale / (float)accum / (float)ranks, &loss);
        if (rc == MT_MODEL_STOPPED && t->stop_set)
            return abandon_step(t, false, r, err);
        if (rc != 0)
            return fail(err, "forward");
        bool overlap = ring && t->cfg.own.overlap && k == accum - 1;
        mt_model_set_grad_ready(t->model, overlap ? grad_ready : NULL, t);
        rc = mt_model_backward(t->model);
        mt_model_set_grad_ready(t->model, NULL, NULL);
        if (rc == MT_MODEL_STOPPED && t->stop_set)
            return abandon_step(t, overlap, r, err);
        if (rc != 0)
            return fail(err, "backward");
        sum += loss;
    }
    if (ring) {
        if ((!t->cfg.own.overlap && mt_ring_queue(g.grad, g.n) != 0) || mt_ring_finish(&r->allreduce_wait_s) != 0)
            return fail(err, "data parallel");
    }
    if (ranks > 1)
        sum = mt_dist_sum(sum) / ranks; /* ZeRO-2 and 3: already reduce-scattered by the backward */
    bool finite = grads_finite(t, &g);
    bool skip = mt_scaler_update(&t->scaler, finite);
    if (skip) {
        mt_model_zero_grad(t->model);
        if (t->gshard)
            memset(t->gshard, 0, t->shard_n * sizeof(float));
    } else if (update(t, &g, scale) != 0)
        return fail(err, "data parallel");
    t->step++;
    r->loss = (float)(sum / accum);
    r->skipped = skip;
    r->loss_scale = scale;
    r->step = t->step;
    r->skipped_total = t->scaler.skipped;
    r->tokens = mt_config_rows(&t->cfg) * (size_t)t->cfg.s.seq * (size_t)accum * (size_t)ranks;
    return 0;
}

int mt_trainer_eval(mt_trainer *t, int batches, float *loss, char *err)
{
    double sum = 0.0;
    for (int k = 0; k < batches; k++) {
        float l;
        if (mt_data_next(t->data, t->inputs, t->targets) != 0)
            return fail(err, "data");
        if (mt_model_forward(t->model, t->inputs, t->targets, 0.0f, &l) != 0)
            return fail(err, "forward");
        mt_model_release(t->model);
        sum += l;
    }
    *loss = batches > 0 ? (float)(sum / batches) : 0.0f;
    return 0;
}

void mt_trainer_set_lr(mt_trainer *t, float lr) { t->opt.hp.lr = lr; }
mt_model *mt_trainer_model(mt_trainer *t) { return t->model; }
const mt_config *mt_trainer_config(const mt_trainer *t) { return &t->cfg; }
long mt_trainer_steps(const mt_trainer *t) { return t->step; }
void mt_trainer_mem(const mt_trainer *t, mt_mem_stats *s)
{
    (void)t;
    mt_mem_get(s);
}

/* ---------- checkpoint state ----------
 * header   magic "MTSTATE1", fingerprint, total size        3 x u64
 * trainer  step, rng, scaler (scale, good, skipped)         5 x u64
 * model    size u64, bytes      (parameters, master copies, NF4 stores)
 * optim    size u64, bytes
 * data     size u64, bytes
 */
#define STATE_MAGIC 0x3145544154535453ULL /* "STSTATE1" little-endian-ish tag */

static uint64_t fingerprint(const mt_config *c)
{
    int64_t v[] = {c->shape.family,     c->shape.layers,       c->shape.hidden,    c->shape.heads,  c->shape.kv_heads,
                   c->shape.ffn,        c->shape.vocab,        c->shape.max_pos,   c->s.batch,  c->s.seq,
                   c->s.precision,  c->s.optimizer,    c->s.adam8_block, c->s.lora_rank,
                   (int64_t)c->s.lora_targets,      c->s.quant,     c->s.loader, c->s.shuffle_buffer};
    uint64_t h = 1469598103934665603ULL;
    if (c->s.method != MP_METHOD_SFT) /* SFT states keep the fingerprint they had */
        h ^= (uint64_t)(c->s.method * 16 + c->s.reference) << 40;
    const unsigned char *p = (const unsigned char *)v;
    for (size_t i = 0; i < sizeof v; i++) {
        h ^= p[i];
        h *= 1099511628211ULL;
    }
    return h;
}

size_t mt_trainer_state_size(const mt_trainer *t)
{
    return 8 * sizeof(uint64_t) + 3 * sizeof(uint64_t) + mt_model_state_size(t->model) +
           mt_optim_state_size(&t->opt) + mt_data_state_size(t->data);
}

int mt_trainer_state_save(const mt_trainer *t, void *buf, size_t len, char *err)
{
    size_t need = mt_trainer_state_size(t);
    if (len < need) {
        return say(err, "state: buffer of %zu bytes, need %zu", len, need);
    }
    uint8_t *p = buf;
    float scale = t->scaler.scale;
    uint32_t scale_bits;
    memcpy(&scale_bits, &scale, 4);
    uint64_t h[8] = {STATE_MAGIC, fingerprint(&t->cfg), need, (uint64_t)t->step, t->rng.s,
                     scale_bits, (uint64_t)t->scaler.good_steps, (uint64_t)t->scaler.skipped};
    memcpy(p, h, sizeof h);
    p += sizeof h;
    uint64_t n = mt_model_state_size(t->model);
    memcpy(p, &n, 8);
    mt_model_state_save(t->model, p + 8);
    p += 8 + n;
    n = mt_optim_state_size(&t->opt);
    memcpy(p, &n, 8);
    mt_optim_state_save(&t->opt, p + 8);
    p += 8 + n;
    n = mt_data_state_size(t->data);
    memcpy(p, &n, 8);
    mt_data_state_save(t->data, p + 8);
    return 0;
}

/* The state's header words and the start of its three sections, checked against this
 * trainer: every count and code range-checked, nothing of t changed. */
static int state_check(const mt_trainer *t, const void *buf, size_t len, uint64_t h[8], const uint8_t *sec[3],
                       char *err)
{
    const uint8_t *p = buf;
    if (len < 8 * sizeof(uint64_t))
        return say(err, "state: truncated (%zu bytes)", len);
    memcpy(h, p, 8 * sizeof(uint64_t));
    if (h[0] != STATE_MAGIC)
        return say(err, "state: not a memtrain state");
    if (h[1] != fingerprint(&t->cfg) || h[2] != mt_trainer_state_size(t) || len != h[2])
        return say(err, "state: written by a different configuration");
    /* counts are int64 on disk: a negative one reads as a huge one here */
    if (h[3] > MT_MAX_STEPS)
        return say(err, "state: step %lld is out of range (0 to %d)", (long long)h[3], MT_MAX_STEPS);
    float scale;
    uint32_t scale_bits = (uint32_t)h[5];
    memcpy(&scale, &scale_bits, 4);
    const mt_scaler *sc = &t->scaler;
    /* the scaler halves down to 1 and doubles from the loss-scale; off, it stays at 1 */
    if (h[5] >> 32 || (sc->enabled ? !isfinite(scale) || scale < 1.0f : scale != 1.0f))
        return say(err, "state: loss scale %g is out of range (%s)", (double)scale,
                    sc->enabled ? "a finite value of at least 1" : "1 without loss scaling");
    if (h[6] >= (uint64_t)(sc->enabled ? sc->window : 1))
        return say(err, "state: %lld good steps since the last overflow is out of range (0 to %d)", (long long)h[6],
                   sc->enabled ? sc->window - 1 : 0);
    if (h[7] > h[3])
        return say(err, "state: %lld skipped steps of %llu is out of range", (long long)h[7],
                   (unsigned long long)h[3]);
    size_t want[3] = {mt_model_state_size(t->model), mt_optim_state_size(&t->opt), mt_data_state_size(t->data)};
    const uint8_t *q = p + 8 * sizeof(uint64_t);
    for (int i = 0; i < 3; i++) {
        uint64_t n;
        memcpy(&n, q, 8);
        if (n != want[i])
            return say(err, "state: section %d has %llu bytes, expected %zu", i, (unsigned long long)n, want[i]);
        sec[i] = q + 8;
        q += 8 + n;
    }
    /* the optimizer updated once for every step but the skipped ones */
    if (mt_model_state_check(t->model, sec[0]) || mt_optim_state_check(&t->opt, sec[1], (long)(h[3] - h[7])) ||
        mt_data_state_check(t->data, sec[2]))
        return fail(err, "state");
    return 0;
}

int mt_trainer_state_check(const mt_trainer *t, const void *buf, size_t len, long *step, char *err)
{
    uint64_t h[8];
    const uint8_t *sec[3];
    if (state_check(t, buf, len, h, sec, err))
        return -1;
    if (step)
        *step = (long)h[3];
    return 0;
}

int mt_trainer_state_load(mt_trainer *t, const void *buf, size_t len, char *err)
{
    uint64_t h[8];
    const uint8_t *sec[3];
    if (state_check(t, buf, len, h, sec, err))
        return -1;
    if (mt_data_state_load(t->data, sec[2]) != 0) /* checked above: cannot refuse */
        return fail(err, "state");
    mt_model_state_load(t->model, sec[0]);
    mt_optim_state_load(&t->opt, sec[1]);
    t->step = (long)h[3];
    t->rng.s = h[4];
    uint32_t scale_bits = (uint32_t)h[5];
    memcpy(&t->scaler.scale, &scale_bits, 4);
    t->scaler.good_steps = (int)h[6];
    t->scaler.skipped = (long)h[7];
    mt_model_zero_grad(t->model);
    if (t->gshard)
        memset(t->gshard, 0, t->shard_n * sizeof(float));
    return 0;
}

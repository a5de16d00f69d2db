/* memtrain_model.c — the prediction for `--framework memtrain`: memplan's own
 * reference trainer, whose every buffer is listed in trainer/MEMORY.md.
 *
 * The trainer is checked against this prediction (make validate), so this file
 * follows the trainer's buffer list, not PyTorch's habits: mixed precision is
 * 16-bit storage with fp32 arithmetic, activation gradients are fp32
 * workspaces, and the total peak is reached at the end of the forward.
 * Mapping to components: weights = weights; gradients = gradients;
 * optimizer = optimizer state + fp32 master weights (as the ZeRO paper counts
 * them); activations = saved activations and the per-layer fp32 working
 * buffers; overhead = backward workspaces and small tables. The data loader is
 * host memory. */
#include "memtrain_model.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define CORPUS_BYTES 327680.0 /* the built-in corpus when no data file is given */
#define ATTN_TILE 64.0        /* memtrain's default flash tile edge */

static double nf4_bytes(double n, bool dq)
{
    double nb = ceil(n / 64), ng = ceil(nb / 256);
    return ceil(n / 2) + (dq ? nb + 4 * (ng + 1) : 4 * nb);
}

int memtrain_estimate(const mp_model *m, const mp_settings *s, mp_estimate *e, bool explain, char *err)
{
    if (s->precision != MP_FP32 && s->precision != MP_MIXED_BF16 && s->precision != MP_MIXED_FP16) {
        snprintf(err, MP_ERR_LEN, "memtrain implements fp32, mixed-bf16 and mixed-fp16, not '%s'",
                 mp_precision_name(s->precision));
        return -1;
    }
    if (s->optimizer != MP_ADAMW && s->optimizer != MP_ADAMW_8BIT && s->optimizer != MP_SGD &&
        s->optimizer != MP_SGD_MOMENTUM) {
        snprintf(err, MP_ERR_LEN, "memtrain implements adamw, adamw-8bit, sgd and sgd-momentum, not '%s'",
                 mp_optimizer_name(s->optimizer));
        return -1;
    }
    if (s->quant == MP_QUANT_INT8 || s->gpus > 1 || s->zero || s->tp > 1 || s->pp > 1 || m->experts) {
        snprintf(err, MP_ERR_LEN, "memtrain runs dense models on one device without int8, ZeRO or model parallelism");
        return -1;
    }
    const bool gpt2 = m->mlp == MP_MLP_GELU, mixed = s->precision != MP_FP32;
    const bool lora = s->lora_rank > 0, full_ft = !lora;
    const bool qlora = s->quant == MP_QUANT_NF4 || s->quant == MP_QUANT_NF4_DQ;
    const bool eager = s->attention == MP_ATTN_EAGER, ce_full = s->ce == MP_CE_FULL;
    const double B = (double)s->batch, T = (double)s->seq, N = B * T;
    const double C = (double)m->hidden, L = (double)m->layers, V = (double)m->vocab;
    const double NH = (double)m->heads, KV = (double)m->kv_heads, HD = (double)m->head_dim;
    const double F = (double)m->ffn, r = (double)s->lora_rank;
    const double maxpos = m->max_pos > 0 ? (double)m->max_pos : T;
    const double QW = (NH + 2 * KV) * HD, AW = NH * HD, FW = gpt2 ? F : 2 * F;
    const double A = mixed ? 2 : 4, P = A; /* bytes per stored activation / parameter */

    /* parameters */
    double n_lin = QW * C + C * AW + FW * C + C * F;
    double n_vec = gpt2 ? 6 * C + QW + FW : 2 * C, n_fvec = gpt2 ? 2 * C : C;
    double n_base_all = V * C + (gpt2 ? maxpos * C : 0) + L * (n_lin + n_vec) + n_fvec + (gpt2 ? 0 : V * C);
    double n_base = n_base_all - (qlora ? L * n_lin : 0);
    double lora_io = 0, lora_modules = 0; /* sum of (in + out) and the module count, per layer */
    unsigned t = s->lora_targets;
    if (lora) {
        if (gpt2) {
            if (t & (MP_LORA_Q | MP_LORA_K | MP_LORA_V)) lora_io += 4 * C, lora_modules++;
            if (t & MP_LORA_O) lora_io += 2 * C, lora_modules++;
            if (t & MP_LORA_UP) lora_io += C + F, lora_modules++;
            if (t & MP_LORA_DOWN) lora_io += F + C, lora_modules++;
        } else {
            if (t & MP_LORA_Q) lora_io += C + NH * HD, lora_modules++;
            if (t & MP_LORA_K) lora_io += C + KV * HD, lora_modules++;
            if (t & MP_LORA_V) lora_io += C + KV * HD, lora_modules++;
            if (t & MP_LORA_O) lora_io += AW + C, lora_modules++;
            if (t & MP_LORA_GATE) lora_io += C + F, lora_modules++;
            if (t & MP_LORA_UP) lora_io += C + F, lora_modules++;
            if (t & MP_LORA_DOWN) lora_io += F + C, lora_modules++;
        }
    }
    double n_lora = L * r * lora_io, n_train = full_ft ? n_base : n_lora;
    e->trainable_params = n_train;

    /* persistent buffers, per allocator tag */
    double weights = n_base * P + n_lora * P + (qlora ? L * nf4_bytes(n_lin, s->quant == MP_QUANT_NF4_DQ) : 0);
    double master = mixed ? 4 * n_train : 0;
    double grads = P * n_train;
    double opt = s->optimizer == MP_ADAMW ? 8 * n_train
               : s->optimizer == MP_ADAMW_8BIT ? 2 * n_train + 8 * ceil(n_train / (double)s->adam8_block)
               : s->optimizer == MP_SGD_MOMENTUM ? 4 * n_train : 0;

    double ws_attn = eager ? 4 * T * T * (s->checkpointing == MP_CKPT_NONE ? 1 : 2)
                           : 4 * (2 * ATTN_TILE * ATTN_TILE + T + 2 * ATTN_TILE);
    double ws_grads = 4 * N * (2 * C + QW + AW + FW + F) + (lora ? 4 * N * r : 0);
    double ws_ce = ce_full ? 0 : 4 * fmin((double)s->ce_chunk, N) * V + 4 * N * C;
    double ws_mixed = mixed ? 2 * 4 * fmax(fmax(1048576.0, C), fmax(AW, F)) +
                                  4 * fmax(n_vec, n_fvec) * (full_ft ? 2 : 1) : 0;
    double ws_qlora = qlora ? P * n_lin : 0;
    double ws_opt = s->optimizer == MP_ADAMW_8BIT ? 8 * (double)s->adam8_block : 0;
    double workspace = ws_attn + ws_grads + ws_ce + ws_mixed + ws_qlora + ws_opt;
    double other = (gpt2 ? 0 : 2 * 4 * T * (HD / 2)) + 8 * (L + 1) + 8 * 20 * L + (qlora ? 56 * L : 0);

    /* per-layer slots: elements, whether a statistic (always fp32), whether saved */
    struct slot { double n; bool stat, present, is_att; } slots[] = {
        {N * C, false, true, false},            /* ln1 */
        {N, true, gpt2, false},                 /* ln1_mean */
        {N, true, true, false},                 /* ln1_rstd */
        {N * QW, false, true, false},           /* qkv */
        {B * NH * T * T, false, eager, true},   /* att (probabilities) */
        {B * NH * T, true, !eager, false},      /* lse */
        {N * AW, false, true, false},           /* atty */
        {N * C, false, true, false},            /* res2 */
        {N * C, false, true, false},            /* ln2 */
        {N, true, gpt2, false},                 /* ln2_mean */
        {N, true, true, false},                 /* ln2_rstd */
        {N * FW, false, true, false},           /* fch */
        {N * F, false, true, false},            /* fcg */
        {N * r * lora_modules, false, lora, false}, /* lora_u, one per module */
    };
    double act_persist = mixed ? 2 * 4 * N * C : 0, saved_layer = 0;
    for (size_t i = 0; i < sizeof slots / sizeof *slots; i++) {
        const struct slot *sl = &slots[i];
        if (!sl->present) continue;
        bool saved = s->checkpointing == MP_CKPT_NONE || (s->checkpointing == MP_CKPT_SELECTIVE && !sl->is_att);
        bool fp32 = sl->stat || !mixed;
        if (saved) saved_layer += sl->n * (sl->stat ? 4 : A);
        if (!(saved && fp32) && !(sl->is_att && !saved)) act_persist += 4 * sl->n;
    }
    double act_dyn = (L + 1) * A * N * C + L * saved_layer + A * N * C + 4 * N * (gpt2 ? 2 : 1) +
                     (ce_full ? 4 * N * V + 4 * N : 0);
    double logits = ce_full ? 4 * N * V + 4 * N : 0;

    double data = 2 * 4 * N;
    double S = s->dataset_bytes > 0 ? s->dataset_bytes : CORPUS_BYTES;
    if (s->loader == MP_LOAD_MEMORY) data += 2 * S;
    else data += 65536 + 2 * (double)s->shuffle_buffer * (T + 1) + (s->dataset_bytes > 0 ? 0 : S);

    /* the step: everything persistent, plus the forward's activations at its end */
    double comp[MP_NCOMP] = {weights, grads, master + opt, act_persist + act_dyn, workspace + other};
    e->nphases = 0;
    const char *names[] = {"forward end", "backward end", "optimizer step"};
    for (int i = 0; i < 3; i++) {
        mp_phase *p = &e->phases[e->nphases++];
        p->name = names[i];
        p->total = 0;
        for (int k = 0; k < MP_NCOMP; k++) {
            p->comp[k] = k == MP_ACTIVATIONS && i > 0 ? act_persist : comp[k];
            p->total += p->comp[k];
        }
    }
    e->peak_phase = 0;
    for (int k = 0; k < MP_NCOMP; k++) e->peak[k] = e->at_peak[k] = comp[k];
    e->logits_bytes = logits;
    e->total_bytes = e->reserved_bytes = e->device_bytes = e->phases[0].total;
    e->host_bytes = e->host_data_bytes = data;
    e->model_states_bytes = weights + grads + master + opt;
    e->resident_bytes = e->model_states_bytes; /* memtrain allocates gradients once, with the weights */
    e->act_per_layer = saved_layer;

    if (explain) {
        struct { int comp; const char *name; double bytes; const char *formula; } t_[] = {
            {MP_WEIGHTS, "parameters", n_base * P, "stored parameters x P (4 fp32, 2 mixed)"},
            {MP_WEIGHTS, "LoRA adapters", n_lora * P, "L x r x sum(in + out) x P"},
            {MP_WEIGHTS, "NF4 base", qlora ? L * nf4_bytes(n_lin, s->quant == MP_QUANT_NF4_DQ) : 0,
             "codes n/2 + absmax per 64 (int8 + scales with double quantisation)"},
            {MP_GRADIENTS, "gradients", grads, "trainable x P"},
            {MP_OPTIMIZER, "optimizer state", opt, mp_optimizer_name(s->optimizer)},
            {MP_OPTIMIZER, "fp32 master weights", master, "trainable x 4 (mixed)"},
            {MP_ACTIVATIONS, "saved activations", act_dyn - logits, "residuals + L x saved slots"},
            {MP_ACTIVATIONS, "logits and log-sum-exp", logits, "4 x N x V + 4 x N (ce full)"},
            {MP_ACTIVATIONS, "fp32 layer working buffers", act_persist, "one layer (mixed or full checkpointing)"},
            {MP_OVERHEAD, "activation-gradient workspaces", ws_grads, "4 x N x (2C + QW + AW + FW + F)"},
            {MP_OVERHEAD, "attention scratch", ws_attn, eager ? "T x T fp32 tile(s)" : "flash tiles"},
            {MP_OVERHEAD, "cross-entropy chunk", ws_ce, "4 x chunk x V + 4 x N x C"},
            {MP_OVERHEAD, "16-bit conversion tiles", ws_mixed, "mixed precision"},
            {MP_OVERHEAD, "dequantised layer", ws_qlora, "QLoRA: one layer's linears at P bytes"},
            {MP_OVERHEAD, "tables", other + ws_opt, "rotary tables, pointer tables, 8-bit scratch"},
            {-1, "data loader", data, s->loader == MP_LOAD_MEMORY ? "2 bytes per token of the source + batch" : "chunk + shuffle buffer + batch"},
        };
        for (size_t i = 0; i < sizeof t_ / sizeof *t_ && e->nterms < MP_MAX_TERMS; i++) {
            if (t_[i].bytes == 0) continue;
            mp_term *tm = &e->terms[e->nterms++];
            tm->component = t_[i].comp;
            snprintf(tm->name, sizeof tm->name, "%s", t_[i].name);
            snprintf(tm->formula, sizeof tm->formula, "%s", t_[i].formula);
            tm->bytes = t_[i].bytes;
        }
    }
    return 0;
}

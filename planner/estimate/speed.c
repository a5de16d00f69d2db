/* speed.c — estimated time of one optimizer step, to rank plans that fit.
 *
 * FLOPs per token: 2 per parameter forward, 4 backward (Kaplan et al. 2020,
 * Sec. 2.1), plus attention 4*T*d per layer forward; recomputation adds a
 * forward of what it recomputes; a frozen base skips its weight gradients
 * (2 of the 4 backward FLOPs).
 *
 * Step time = max(compute, collectives) + optimizer step + offload traffic:
 *   compute      FLOPs / (peak x efficiency(generation, micro-batch tokens))
 *                + a fixed cost per layer and micro-batch (kernel launches)
 *                + QLoRA's dequantisation of the base in every pass
 *   collectives  DDP all-reduce, ZeRO-2 reduce-scatter + gather, ZeRO-3/FSDP
 *                weight gathers per micro-batch, over NVLink, PCIe or the
 *                network; overlapped with compute (FSDP prefetch, DDP buckets)
 *   optimizer    the step's memory traffic at the GPU's bandwidth (several
 *                passes for PyTorch's foreach AdamW, one for fused kernels)
 *   offload      16-bit gradients down and parameters up over PCIe, the CPU's
 *                optimizer step, and ZeRO-3 parameter fetches
 * The constants below were fitted to tests/data/throughput.csv (README,
 * "Speed model"); mp_speed_error_note() states the model's error. */
#include "estimate/speed.h"
#include "estimate/estimate.h"
#include "model/model.h"
#include "profiles/profiles.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"

#include <math.h>
#include <string.h>

/* Fraction of the dense tensor peak reached at a large micro-batch, by
 * generation. Fitted: ampere (A100, RTX A6000 rows), ada (RTX 4090, L40S
 * rows; the RTX 4090's torchtune rows need 0.8 of its FP32-accumulate tensor
 * peak), hopper (H100 rows; torchtitan reports 33-39% MFU). No published row
 * for the others (Volta, Turing, Blackwell, CDNA): they take Ampere's. */
static const struct { const char *arch; double eff; } arch_efficiency[] = {
    {"ampere", 0.656}, {"ada", 0.80}, {"hopper", 0.345},
};
#define EFF_UNMEASURED 0.656
/* Micro-batch tokens at which the efficiency is half its large-batch value
 * (the fit leaves it small: the fixed per-layer cost below carries most of
 * the micro-batch dependence). */
#define FILL_TOKENS 8.0
/* Fixed cost per layer and micro-batch (forward + backward), seconds: kernel
 * launches and the framework's own work, which small micro-batches expose. */
#define LAYER_SECONDS 2.95e-3
/* Memory passes of the optimizer step over its minimum traffic: PyTorch's
 * foreach AdamW runs one kernel per elementwise op; fused and bitsandbytes
 * 8-bit kernels make one pass. */
#define FOREACH_PASSES 4.0
/* Bytes moved per base weight and pass when QLoRA dequantises it (read NF4,
 * write and read back the 16-bit copy, in several kernels). */
#define DEQUANT_BYTES 4.0
/* The CPU's Adam, parameters per second per GPU process (ZeRO-Offload paper,
 * Ren et al. 2021, Sec. 5: about 1e9). */
#define CPU_ADAM_PER_S 1e9
/* Across nodes when the profile states no network: 100 Gb/s Ethernet. */
#define GENERIC_NETWORK 12.5e9
#define GPUS_PER_NODE 8

/* Against tests/data/throughput.csv (tests/test_speed.sh): median ratio
 * estimate/published 1.02, root-mean-square log ratio 0.16, worst 0.63. */
const char *mp_speed_error_note(void)
{
    return "tokens/s: estimated, typically within 17% (worst 37%) of 29 published runs";
}

static double arch_eff(const mp_gpu *gpu)
{
    for (size_t i = 0; i < sizeof arch_efficiency / sizeof arch_efficiency[0]; i++)
        if (!strcmp(gpu->arch, arch_efficiency[i].arch)) return arch_efficiency[i].eff;
    return EFF_UNMEASURED;
}

/* Bandwidth of the collectives: the slowest link a ring crosses. */
static double collective_bw(const mp_gpu *gpu, int64_t gpus)
{
    double intra = gpu->nvlink > 0 ? gpu->nvlink : (gpu->pcie > 0 ? gpu->pcie : 16e9);
    if (gpus <= GPUS_PER_NODE) return intra;
    return fmin(intra, gpu->ib > 0 ? gpu->ib : GENERIC_NETWORK);
}

/* Seconds of collectives per optimizer step on one GPU. */
static double comm_seconds(const mp_settings *s, const mp_gpu *gpu,
                           double trainable, double dp, double w16)
{
    if (dp <= 1) return 0;
    const mp_precision_desc *pd = mp_precision_desc_of(s->precision);
    double frac = (dp - 1) / dp, accum = (double)s->accum;
    double grad_bytes = trainable * pd->stored_bytes;
    double bytes;
    if (s->zero >= 3) /* gather weights forward and backward, reduce-scatter gradients, per micro-batch */
        bytes = accum * frac * (2 * w16 + grad_bytes);
    else if (s->zero == 2) /* reduce-scatter per micro-batch, gather the updated weights once */
        bytes = accum * frac * grad_bytes + frac * trainable * 2;
    else /* all-reduce once per step */
        bytes = 2 * frac * grad_bytes;
    return bytes / collective_bw(gpu, s->gpus);
}

/* Seconds of the optimizer step on the GPU: its minimum memory traffic
 * (weights and states read and written, gradients read) times the passes. */
static double optimizer_seconds(const mp_settings *s, const mp_gpu *gpu, double shard)
{
    const mp_precision_desc *pd = mp_precision_desc_of(s->precision);
    const mp_optimizer_desc *od = mp_optimizer_desc_of(s->optimizer);
    double w = 2 * pd->stored_bytes + (pd->master_copy ? 8 : 0);
    double states = od->states * 2 * mp_state_value_bytes(s);
    double bytes = shard * (w + pd->stored_bytes + states);
    bool one_pass = od->low_bit || s->step_impl == MP_STEP_FUSED;
    return bytes * (one_pass ? 1 : FOREACH_PASSES) / fmax(gpu->bandwidth, 1e9);
}

void speed_model(const mp_model *m, const mp_settings *s, const mp_gpu *gpu, mp_estimate *e,
                 double trainable, double dp)
{
    const double T = (double)s->seq, L = (double)m->layers;
    const double tokens_micro = (double)s->batch * T;
    const bool lora = s->lora_rank > 0;
    double dense = e->params.active - e->params.embed - e->params.pos; /* lookups are free */
    if (m->tied) dense += e->params.embed;                             /* the tied head multiplies */
    double attn_fwd = 4.0 * L * T * (double)(m->heads * m->head_dim) / 2; /* causal half */

    double fwd = 2 * dense + attn_fwd + (lora ? 2 * trainable : 0);
    double bwd = lora ? 2 * dense + 2 * attn_fwd + 4 * trainable /* input grads + adapters */
                      : 4 * dense + 2 * attn_fwd;
    double recompute = s->checkpointing == MP_CKPT_FULL ? fwd * (double)mp_layers_checkpointed(s, m->layers) / L
                     : s->checkpointing == MP_CKPT_SELECTIVE ? attn_fwd : 0;
    /* a preference method's reference forward, on every row, without grad:
     * the frozen model's forward again (the adapter disabled: no adapter).
     * Precomputed, the same forward runs once per example before training:
     * counted here as if spread over one epoch's steps */
    double reference = mp_reference_used(s) != MP_REF_NONE ? 2 * dense + attn_fwd : 0;
    double per_token = fwd + bwd + recompute + reference;
    double tokens_step = tokens_micro * (double)s->accum * dp;
    e->flops_per_step = per_token * tokens_step;
    if (!gpu || gpu->tflops_16 <= 0) return;

    /* fp32 runs on the non-tensor units; bf16 on a part without it is emulated. */
    bool sixteen = s->precision != MP_FP32;
    double peak = (sixteen ? gpu->tflops_16 : gpu->tflops_32) * 1e12;
    if (sixteen && !gpu->bf16 && mp_precision_desc_of(s->precision)->needs_bf16)
        peak = gpu->tflops_32 * 1e12 / 4;
    double util = arch_eff(gpu) * tokens_micro / (tokens_micro + FILL_TOKENS);
    double split = (double)(s->tp * s->pp), accum = (double)s->accum;
    double t_compute = e->flops_per_step / (peak * util * (double)s->gpus)
                     + accum * L / (double)s->pp * LAYER_SECONDS;

    /* QLoRA: every forward, backward and recompute pass dequantises the base. */
    double base = e->params.total - (lora ? trainable : 0);
    int qbits = mp_quant_desc_of(s->quant)->bits;
    if (qbits > 0) {
        double passes = 2 + (s->checkpointing == MP_CKPT_FULL ? 1 : 0);
        t_compute += accum * passes * base / split * DEQUANT_BYTES / fmax(gpu->bandwidth, 1e9);
    }
    double w16 = (base * (qbits > 0 ? qbits / 8.0 : 2) + (lora ? trainable * 2 : 0)) / split;
    double t_comm = comm_seconds(s, gpu, trainable / split, dp, w16);

    double shard = trainable / split / (s->zero >= 1 ? dp : 1);
    double link = gpu->pcie > 0 ? gpu->pcie : 16e9;
    double t_step;
    if (mp_offload_desc_of(s->offload)->optimizer_on_host)
        /* 16-bit gradients down, 16-bit parameters up, the CPU's optimizer */
        t_step = 4 * shard / link + shard / CPU_ADAM_PER_S;
    else
        t_step = optimizer_seconds(s, gpu, shard);
    if (mp_offload_desc_of(s->offload)->params_on_host) /* fetched for forward, backward, recompute */
        t_step += accum * 3 * 2 * e->params.total / split / dp / link;

    e->mfu = util;
    e->step_seconds = fmax(t_compute, t_comm) + t_step;
    e->tokens_per_s = e->step_seconds > 0 ? tokens_step / e->step_seconds : 0;
}

/* speed.c — estimated time of one optimizer step, to rank plans that fit.
 *
 * FLOPs per token: 2 per parameter forward, 4 backward (Kaplan et al. 2020,
 * Sec. 2.1), plus attention 4*T*d per layer forward; recomputation adds a
 * forward of what it recomputes; a frozen base skips its weight gradients
 * (2 of the 4 backward FLOPs). Time = FLOPs / (peak x utilisation) + weight
 * traffic / bandwidth + offload transfers / host link + communication. */
#include "speed.h"

#include <math.h>

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
    double recompute = s->checkpointing == MP_CKPT_FULL ? fwd
                     : s->checkpointing == MP_CKPT_SELECTIVE ? attn_fwd : 0;
    double per_token = fwd + bwd + recompute;
    double tokens_step = tokens_micro * (double)s->accum * dp;
    e->flops_per_step = per_token * tokens_step;
    if (!gpu || gpu->tflops_16 <= 0) return;

    /* Utilisation: fp32 runs on the non-tensor units; small micro-batches
     * underfill the GPU (half efficiency at 512 tokens per micro-batch). */
    bool sixteen = s->precision != MP_FP32;
    double peak = (sixteen ? gpu->tflops_16 : gpu->tflops_32) * 1e12;
    if (sixteen && !gpu->bf16 && mp_precision_desc_of(s->precision)->needs_bf16)
        peak = gpu->tflops_32 * 1e12 / 4; /* emulated bf16 */
    double util = 0.5 * tokens_micro / (tokens_micro + 512.0);
    if (s->quant == MP_QUANT_NF4 || s->quant == MP_QUANT_NF4_DQ || s->quant == MP_QUANT_INT8)
        util *= 0.7; /* dequantising the base in every matmul */
    double gpus_compute = (double)s->gpus;
    double t_compute = e->flops_per_step / (peak * util * gpus_compute);

    /* Weights are read three times per micro-batch (forward, backward, recompute). */
    double t_weights = (double)s->accum * 3 * e->peak[MP_WEIGHTS] / fmax(gpu->bandwidth, 1e9);

    double link = gpu->pcie > 0 ? gpu->pcie : 16e9;
    double t_offload = 0;
    if (s->offload != MP_OFFLOAD_NONE) {
        /* 16-bit gradients down, 16-bit parameters up, and the CPU's Adam
         * (about 1e9 parameters per second, ZeRO-Offload paper Sec. 5) */
        double shard = trainable / dp;
        t_offload = 4 * shard / link + shard / 1e9;
    }
    if (s->offload == MP_OFFLOAD_PARAMS)
        t_offload += (double)s->accum * 3 * 2 * e->params.total / dp / link;

    /* Data parallel: a ring all-reduce moves 2(dp-1)/dp of the gradients;
     * ZeRO-3 adds the parameter gathers (1.5x, Rajbhandari et al. 2020). */
    double t_comm = 0;
    if (dp > 1) {
        double grad_bytes = trainable * (sixteen ? 2 : 4);
        double bw = gpu->tflops_16 >= 300 ? 150e9 : link; /* NVLink class parts */
        t_comm = 2 * (dp - 1) / dp * grad_bytes / bw * (s->zero >= 3 ? 1.5 : 1);
    }
    e->mfu = util;
    e->step_seconds = t_compute + t_weights + t_offload + t_comm;
    e->tokens_per_s = e->step_seconds > 0 ? tokens_step / e->step_seconds : 0;
}

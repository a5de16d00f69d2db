/* params.c — how the estimate divides the parameters: LoRA's trainable
 * adapters, the linear layers' weights (what quantisation stores), and the
 * bytes a quantised weight takes. */
#include "model/model.h"
#include "model/params.h"

/* LoRA: trainable parameters over the whole model, from the real module shapes. */
double mp_lora_params(const mp_model *m, int64_t rank, unsigned targets)
{
    mp_linear lin[16];
    int n = mp_model_linears(m, lin, 16);
    double per_layer = 0;
    for (int i = 0; i < n && i < 16; i++) {
        unsigned bit = lin[i].target;
        if (bit & targets) per_layer += (double)lin[i].count * rank * (lin[i].in + lin[i].out);
    }
    /* an adapter on the output head: A is r x hidden, B vocab x r */
    double head = targets & MP_LORA_HEAD ? (double)rank * ((double)m->hidden + mp_head_outputs(m)) : 0;
    return per_layer * m->layers + head;
}

/* Parameters that live in linear layers (what int8/NF4 quantise). */
double linear_params(const mp_model *m)
{
    mp_linear lin[16];
    int n = mp_model_linears(m, lin, 16);
    double per_layer = 0;
    for (int i = 0; i < n && i < 16; i++) per_layer += (double)lin[i].count * lin[i].in * lin[i].out;
    return per_layer * m->layers;
}

/* Bytes per stored base weight under each quantisation.
 * int8 (LLM.int8, Dettmers et al. 2022): 1 byte plus an fp32 scale per row (~0).
 * NF4 (QLoRA, Dettmers et al. 2023, Sec. 3): 4 bits plus one fp32 absmax per 64
 * weights = 4.5 bits; double quantisation stores the absmax in 8 bits with one
 * fp32 constant per 256 of them: 4 + 8/64 + 32/(64*256) = 4.127 bits.
 * GPTQ and AWQ pack `bits`-bit weights into int32 words, and keep per group of
 * input rows an fp16 scale per output column and a packed `bits`-bit zero point:
 * AutoGPTQ's QuantLinear (AutoGPTQ/AutoGPTQ auto_gptq/nn_modules/qlinear/
 * qlinear_exllama.py @998646d5: qweight (in*bits/32, out) int32, qzeros
 * (in/group, out*bits/32) int32, scales (in/group, out) fp16) and AutoAWQ's
 * WQLinear_GEMM (casper-hansen/AutoAWQ awq/modules/linear/gemm.py: qweight
 * (in, out*bits/32), qzeros (in/group, out*bits/32), scales (in/group, out)). */
double mp_quant_bytes_per_param(const mp_model *m, mp_quant q)
{
    switch (q) {
    case MP_QUANT_INT8: return 1.0;
    case MP_QUANT_NF4: return (4.0 + 32.0 / 64.0) / 8.0;
    case MP_QUANT_NF4_DQ: return (4.0 + 8.0 / 64.0 + 32.0 / (64.0 * 256.0)) / 8.0;
    case MP_QUANT_GPTQ:
    case MP_QUANT_AWQ: {
        double bits = m && m->quant_bits > 0 ? m->quant_bits : 4;
        /* group -1: one group spans a whole input row, as wide as the model */
        double group = m && m->quant_group > 0 ? (double)m->quant_group : m ? (double)m->hidden : 128;
        return bits / 8.0 + (2.0 + bits / 8.0) / group;
    }
    default: return 0;
    }
}

/* GPTQ keeps g_idx, an int32 group index per input row of every quantised
 * linear layer (the same QuantLinear); AWQ and bitsandbytes keep none. */
double mp_quant_index_bytes(const mp_model *m, mp_quant q)
{
    if (q != MP_QUANT_GPTQ) return 0;
    mp_linear lin[16];
    int n = mp_model_linears(m, lin, 16);
    double rows = 0;
    for (int i = 0; i < n && i < 16; i++) rows += (double)lin[i].count * lin[i].in;
    return 4.0 * rows * m->layers;
}

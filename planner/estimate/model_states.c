/* model_states.c — the ZeRO paper's model-states figure, beside the buffers a
 * stack really keeps (the estimate's components): 2 + 2 + K bytes per
 * trained parameter for 16-bit weights and gradients and K bytes of optimizer
 * state and fp32 master weights (K = 12 for mixed-precision Adam), sharded as
 * each stage shards them: ZeRO-1 the K bytes, ZeRO-2 the gradients too, ZeRO-3
 * the weights too (Rajbhandari et al. 2020, Sec. 5 and Figure 1). Weights and
 * gradients take the precision's element here, so fp32 training counts 4 + 4;
 * a frozen LoRA base counts as it is stored, sharded only by ZeRO-3. */
#include "estimate/estimate.h"
#include "model/model.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"
#include "model/params.h"

/* K: the optimizer's bytes per trained parameter, fp32 master weights included. */
static double optimizer_k(const mp_settings *s)
{
    const mp_precision_desc *pd = mp_precision_desc_of(s->precision);
    const mp_optimizer_desc *od = mp_optimizer_desc_of(s->optimizer);
    return (pd->master_copy ? 4 : 0) + od->states * mp_state_value_bytes(s);
}

static double frozen_bytes(const mp_model *m, const mp_settings *s, double total)
{
    const double elt = mp_precision_desc_of(s->precision)->stored_bytes;
    if (s->quant == MP_QUANT_NONE) return total * elt;
    double lin = linear_params(m);
    return lin * mp_quant_bytes_per_param(m, s->quant) + mp_quant_index_bytes(m, s->quant) + (total - lin) * 2;
}

double mp_model_states_bytes(const mp_model *m, const mp_settings *s, double total_params)
{
    int64_t dp = mp_dp_degree(s);
    const double nd = dp > 1 ? (double)dp : 1, elt = mp_precision_desc_of(s->precision)->stored_bytes;
    const double trained = s->lora_rank > 0 ? mp_lora_params(m, s->lora_rank, s->lora_targets) : total_params;
    const double frozen = s->lora_rank > 0 ? frozen_bytes(m, s, total_params) : 0;
    double weights = (trained * elt + frozen) / (s->zero >= 3 ? nd : 1);
    double grads = trained * elt / (s->zero >= 2 ? nd : 1);
    double states = trained * optimizer_k(s) / (s->zero >= 1 ? nd : 1);
    return (weights + grads + states) / (double)(s->tp * s->pp);
}

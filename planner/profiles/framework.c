/* framework.c — the columns a framework profile has, and the PyTorch profile
 * built in for when no profile file can be read. */
#include "profiles/framework.h"
#include "profiles/profiles.h"

#include <string.h>

/* Used when no profiles can be read: PyTorch's figures (see profiles/frameworks.csv). */
static const mp_framework builtin_pytorch = {
    .name = "pytorch", .kind = MP_FW_PYTORCH, .context_bytes = 512 * 1048576.0, .workspace_bytes = 8 * 1048576.0,
    .round_bytes = 512, .frag = 0, .autocast_cache = true, .fp32_logits = true, .adam_temps = 1,
    .dropout_mask_bytes = 1, .autocast_softmax_fp32 = true, .act_scale = 1, .hf_modeling = true,
    .ddp_grad_copy = true, .zero1_whole_tensors = true, .amp = true, .pure16 = true, .bnb_4bit = true,
    .dequant_bytes = 2, .python_gelu = true, .nccl_comms = 1, .managed_paging = true};

const mp_framework *mp_framework_builtin(void) { return &builtin_pytorch; }

#define MiB 1048576.0
#define COL(name, field, is_bool, unit, absent) {name, offsetof(mp_framework, field), is_bool, unit, absent}
/* Columns added after the first profiles default to PyTorch 2.x on a GPU when absent. */
const fw_column fw_columns[] = {
    COL("context_mib", context_bytes, false, MiB, 0),
    COL("workspace_mib", workspace_bytes, false, MiB, 0),
    COL("round_bytes", round_bytes, false, 1, 0),
    COL("frag", frag, false, 1, 0),
    COL("fixed_mib", fixed_bytes, false, MiB, 0),
    COL("autocast_cache", autocast_cache, true, 1, 0),
    COL("fp32_logits", fp32_logits, true, 1, 0),
    COL("adam_temps", adam_temps, false, 1, 1),
    COL("dropout_mask_bytes", dropout_mask_bytes, false, 1, 1),
    COL("autocast_softmax_fp32", autocast_softmax_fp32, true, 1, 1),
    COL("mean_keeps_input", mean_keeps_input, true, 1, 0),
    COL("act_scale", act_scale, false, 1, 1),
    COL("hf_modeling", hf_modeling, true, 1, 1),
    COL("ddp_grad_copy", ddp_grad_copy, true, 1, 1),
    COL("zero_reduce_bucket", zero_reduce_bucket, false, 1, 0),
    COL("fp32_main_grad", fp32_main_grad, true, 1, 0),
    COL("zero1_whole_tensors", zero1_whole_tensors, true, 1, 1),
    COL("adapter_fp32", adapter_fp32, true, 1, 0),
    COL("kbit_fp32_rest", kbit_fp32_rest, true, 1, 0),
    COL("sdpa_full_kv", sdpa_full_kv, true, 1, 0),
    COL("amp", amp, true, 1, 1),
    COL("pure16", pure16, true, 1, 1),
    COL("bnb_4bit", bnb_4bit, true, 1, 1),
    COL("fused_qkv", fused_qkv, true, 1, 0),
    COL("lora_zero_pad", lora_zero_pad, true, 1, 0),
    COL("norm_fp32_product", norm_fp32_product, true, 1, 0),
    COL("attn_out_copy", attn_out_copy, true, 1, 0),
    COL("python_gelu", python_gelu, true, 1, 1),
    COL("fsdp_mixed_units", fsdp_mixed_units, true, 1, 0),
    COL("fsdp_no_sync", fsdp_no_sync, true, 1, 0),
    COL("untied_head", untied_head, true, 1, 0),
    COL("quantised_head", quantised_head, true, 1, 0),
    COL("logits_kept", logits_kept, true, 1, 0),
    COL("dequant_bytes", dequant_bytes, false, 1, 2),
    COL("softcap_eager", softcap_eager, true, 1, 0),
    COL("nccl_comms", nccl_comms, false, 1, 1),
    COL("managed_paging", managed_paging, true, 1, 1),
    COL("ce_output_chunks", ce_output_chunks, false, 1, 0),
    COL("optimizer_impl", optimizer_impl, false, 1, 0),
    COL("fp32_outputs", fp32_outputs, true, 1, 0),
};
const int fw_ncolumns = sizeof fw_columns / sizeof *fw_columns;
_Static_assert(sizeof fw_columns / sizeof *fw_columns <= FW_MAX_COLUMNS, "raise FW_MAX_COLUMNS");

double fw_get(const mp_framework *f, const fw_column *c)
{
    const char *p = (const char *)f + c->offset;
    if (c->is_bool) {
        bool b;
        memcpy(&b, p, sizeof b);
        return b;
    }
    double d;
    memcpy(&d, p, sizeof d);
    return d / c->unit;
}

void fw_set(mp_framework *f, const fw_column *c, double v)
{
    char *p = (char *)f + c->offset;
    if (c->is_bool) {
        bool b = v != 0;
        memcpy(p, &b, sizeof b);
    } else {
        double d = v * c->unit;
        memcpy(p, &d, sizeof d);
    }
}

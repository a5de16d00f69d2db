/* framework.c — which framework profile a setting runs under. */
#include "framework.h"

/* Used when no profiles can be read: PyTorch's figures (see profiles/frameworks.csv). */
static const mp_framework builtin_pytorch = {
    .name = "pytorch", .kind = MP_FW_PYTORCH, .context_bytes = 512 * 1048576.0, .workspace_bytes = 8 * 1048576.0,
    .round_bytes = 512, .frag = 0.05, .autocast_cache = true, .fp32_logits = true, .adam_temps = 1,
    .dropout_mask_bytes = 1, .autocast_softmax_fp32 = true, .act_scale = 1};

const mp_framework *settings_framework(const mp_settings *s)
{
    return s->framework ? s->framework : &builtin_pytorch;
}

/* accelerate.c — an accelerate config (YAML), FSDP included. */
#include "emitters.h"

#include <stdio.h>
#include <string.h>

void emit_accelerate(sbuf *b, const mp_model *m, const mp_settings *s)
{
    sbuf_put(b, "# accelerate config written by memplan for %s; use: accelerate launch --config_file FILE train.py\n", m->name);
    sbuf_put(b, "compute_environment: LOCAL_MACHINE\n");
    if (s->gpus > 1 && s->zero > 0) {
        sbuf_put(b, "distributed_type: FSDP\n");
        sbuf_put(b, "fsdp_config:\n");
        sbuf_put(b, "  fsdp_sharding_strategy: %s\n", s->zero >= 3 ? "FULL_SHARD" : "SHARD_GRAD_OP");
        sbuf_put(b, "  fsdp_offload_params: %s\n", mp_offload_desc_of(s->offload)->optimizer_on_host ? "true" : "false");
        sbuf_put(b, "  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n");
        sbuf_put(b, "  fsdp_state_dict_type: SHARDED_STATE_DICT\n");
        sbuf_put(b, "  fsdp_activation_checkpointing: %s\n",
            mp_ckpt_desc_of(s->checkpointing)->fsdp_activation_checkpointing ? "true" : "false");
        sbuf_put(b, "  fsdp_use_orig_params: true\n");
    } else {
        sbuf_put(b, "distributed_type: %s\n", s->gpus > 1 ? "MULTI_GPU" : "NO");
    }
    sbuf_put(b, "mixed_precision: %s\n", mp_precision_desc_of(s->precision)->accelerate);
    sbuf_put(b, "num_machines: 1\nnum_processes: %lld\n", (long long)s->gpus);
    sbuf_put(b, "gradient_accumulation_steps: %lld\n", (long long)s->accum);
    sbuf_put(b, "main_training_function: main\nuse_cpu: false\n");
}

/* accelerate.c — an accelerate config (accelerate launch --config_file): the
 * engine, the processes, FSDP's or DeepSpeed's block, as accelerate's launcher
 * reads them (tests/data/engines/accelerate_keys.txt; accelerate launch.py:
 * FSDP 1 and FULL_SHARD unless said, mixed_precision "no" when absent). Under
 * FSDP accelerate's mixed_precision is FSDP's MixedPrecision: 16-bit
 * parameters for compute over fp32 sharded ones, memplan's mixed precision. */
#include "check/reader.h"

#include <stdio.h>
#include <string.h>

#include "settings/vocabulary.h"

static int detect(const ck_node *root)
{
    return ck_get(root, "distributed_type") || ck_get(root, "compute_environment") ? 6 : 0;
}

static int read_type(ck_state *st, const ck_node *v, const char *key, char *err)
{
    const char *t = ck_text(v);
    if (!t) return ck_bad(key, v, "want NO, MULTI_GPU, FSDP or DEEPSPEED", err);
    if (!strcmp(t, "FSDP")) st->fsdp = true;
    else if (!strcmp(t, "DEEPSPEED")) st->deepspeed = true;
    else if (strcmp(t, "NO") && strcmp(t, "MULTI_GPU"))
        return ck_refuse(key, "an engine memplan has no model of (TPU, XLA, Megatron-LM through accelerate)", err);
    return 0;
}

static int read_procs(ck_state *st, const ck_node *v, const char *key, char *err)
{
    int64_t n;
    if (ck_int(v, &n) || n < 1 || n > 4096) return ck_bad(key, v, "want 1 to 4096 processes", err);
    st->procs = n;
    return 0;
}

static int read_mixed(ck_state *st, const ck_node *v, const char *key, char *err)
{
    const char *t = ck_text(v);
    if (ck_null(v) || (t && !strcmp(t, "no"))) return 0;
    if (t && !strcmp(t, "fp8")) return ck_refuse(key, "fp8 training (Transformer Engine, MS-AMP)", err);
    if (!t || (strcmp(t, "bf16") && strcmp(t, "fp16"))) return ck_bad(key, v, "want no, bf16 or fp16", err);
    if (!st->precision16) { /* a Trainer's own flags win */
        st->precision16 = !strcmp(t, "bf16") ? 1 : 2;
        snprintf(st->precision_key, sizeof st->precision_key, "%s", key);
    }
    return 0;
}

static int read_sharding(ck_state *st, const ck_node *v, const char *key, char *err)
{
    const char *t = ck_text(v);
    if (!t) return ck_bad(key, v, "want FULL_SHARD, SHARD_GRAD_OP, HYBRID_SHARD or NO_SHARD", err);
    int z = !strcmp(t, "FULL_SHARD") || !strcmp(t, "1") || !strcmp(t, "HYBRID_SHARD") || !strcmp(t, "4") ? 3
          : !strcmp(t, "SHARD_GRAD_OP") || !strcmp(t, "2") ? 2 : !strcmp(t, "NO_SHARD") || !strcmp(t, "3") ? 0 : -1;
    if (z < 0) return ck_bad(key, v, "want FULL_SHARD, SHARD_GRAD_OP, HYBRID_SHARD or NO_SHARD", err);
    st->s.zero = z, st->given |= MP_PIN_ZERO;
    char s[8];
    snprintf(s, sizeof s, "%d", z);
    ck_set(st, "zero", s, key, "FSDP's strategy as a ZeRO stage");
    return 0;
}

/* FSDP2: resharding after the forward is FULL_SHARD, else SHARD_GRAD_OP */
static int read_reshard(ck_state *st, const ck_node *v, const char *key, char *err)
{
    bool on;
    if (ck_bool(v, &on)) return ck_bad(key, v, "want true or false", err);
    st->s.zero = on ? 3 : 2, st->given |= MP_PIN_ZERO;
    ck_set(st, "zero", on ? "3" : "2", key, "FSDP's resharding as a ZeRO stage");
    return 0;
}

static int read_flag_offload(ck_state *st, const ck_node *v, const char *key, char *err)
{
    bool on;
    if (ck_bool(v, &on)) return ck_bad(key, v, "want true or false", err);
    if (on) st->s.offload = MP_OFFLOAD_PARAMS, st->given |= MP_PIN_OFFLOAD, ck_set(st, "offload", "params", key, NULL);
    return 0;
}

static int read_fsdp_checkpointing(ck_state *st, const ck_node *v, const char *key, char *err)
{
    bool on;
    if (ck_bool(v, &on)) return ck_bad(key, v, "want true or false", err);
    if (on) return ck_read_checkpointing(st, v, key, err);
    return 0;
}

static int read_zero_stage(ck_state *st, const ck_node *v, const char *key, char *err)
{
    int64_t z;
    if (ck_int(v, &z) || z < 0 || z > 3) return ck_bad(key, v, "want a ZeRO stage from 0 to 3", err);
    st->s.zero = (int)z, st->given |= MP_PIN_ZERO;
    char s[8];
    snprintf(s, sizeof s, "%d", st->s.zero);
    ck_set(st, "zero", s, key, NULL);
    return 0;
}

static int read_ds_optimizer(ck_state *st, const ck_node *v, const char *key, char *err)
{
    return ck_read_offload_device(st, v, key, MP_OFFLOAD_OPTIMIZER, err);
}

static int read_ds_param(ck_state *st, const ck_node *v, const char *key, char *err)
{
    return ck_read_offload_device(st, v, key, MP_OFFLOAD_PARAMS, err);
}

static const ck_key keys[] = {
    {"distributed_type", read_type}, {"num_processes", read_procs}, {"mixed_precision", read_mixed},
    {"compute_environment", NULL}, {"num_machines", NULL}, {"machine_rank", NULL}, {"main_process_ip", NULL},
    {"main_process_port", NULL}, {"main_training_function", NULL}, {"rdzv_backend", NULL}, {"same_network", NULL},
    {"tpu_env", NULL}, {"tpu_use_cluster", NULL}, {"tpu_use_sudo", NULL}, {"use_cpu", NULL}, {"debug", NULL},
    {"downcast_bf16", NULL}, {"enable_cpu_affinity", NULL}, {"gpu_ids", NULL}, {"dynamo_config", NULL},
    {"fsdp_config.fsdp_sharding_strategy", read_sharding}, {"fsdp_config.fsdp_reshard_after_forward", read_reshard},
    {"fsdp_config.fsdp_offload_params", read_flag_offload},
    {"fsdp_config.fsdp_activation_checkpointing", read_fsdp_checkpointing},
    {"fsdp_config.fsdp_version", NULL}, {"fsdp_config.fsdp_auto_wrap_policy", NULL},
    {"fsdp_config.fsdp_transformer_layer_cls_to_wrap", NULL}, {"fsdp_config.fsdp_backward_prefetch", NULL},
    {"fsdp_config.fsdp_backward_prefetch_policy", NULL}, {"fsdp_config.fsdp_forward_prefetch", NULL},
    {"fsdp_config.fsdp_state_dict_type", NULL}, {"fsdp_config.fsdp_use_orig_params", NULL},
    {"fsdp_config.fsdp_cpu_ram_efficient_loading", NULL}, {"fsdp_config.fsdp_sync_module_states", NULL},
    {"fsdp_config.fsdp_min_num_params", NULL},
    {"deepspeed_config.zero_stage", read_zero_stage}, {"deepspeed_config.offload_optimizer_device", read_ds_optimizer},
    {"deepspeed_config.offload_param_device", read_ds_param}, {"deepspeed_config.deepspeed_config_file",
                                                               ck_read_deepspeed_ref},
    {"deepspeed_config.gradient_accumulation_steps", ck_read_accum}, {"deepspeed_config.gradient_clipping", NULL},
    {"deepspeed_config.zero3_init_flag", NULL}, {"deepspeed_config.zero3_save_16bit_model", NULL},
    {"deepspeed_config.deepspeed_multinode_launcher", NULL},
    {NULL, NULL},
};

static const char *const sections[] = {"fsdp_config", "deepspeed_config", NULL};

static int finish(ck_state *st, char *err)
{
    if (st->procs > 0) {
        char p[24];
        snprintf(p, sizeof p, "%lld", (long long)st->procs);
        ck_set(st, "gpus", p, "num_processes", NULL);
    }
    /* DeepSpeed's ZeRO and bf16 optimizers keep fp32 master partitions of 16-bit weights
     * (deepspeed/runtime/zero/stage_1_and_2.py, stage3.py, bf16_optimizer.py) */
    if (st->deepspeed) st->engine_masters = true;
    if (st->fsdp) {
        st->engine_masters = true; /* FSDP's MixedPrecision keeps fp32 sharded parameters */
        if (!(st->given & MP_PIN_ZERO)) {
            st->s.zero = 3, st->given |= MP_PIN_ZERO;
            ck_set(st, "zero", "3", "(default)", "accelerate's FSDP default: FULL_SHARD");
        }
    }
    return 0;
}

const ck_format ck_format_accelerate = {
    .name = "accelerate", .framework = NULL, .detect = detect, .keys = keys, .sections = sections, .finish = finish,
};

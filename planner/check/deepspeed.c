/* deepspeed.c — a DeepSpeed JSON config (alone, or named by a trainer's YAML):
 * the keys of tests/data/engines/deepspeed_keys.txt (deepspeed/runtime/config.py
 * and zero/config.py). "auto" is the Trainer's to fill (transformers
 * integrations/deepspeed.py trainer_config_process: the micro-batch,
 * accumulation and 16-bit modes from TrainingArguments). DeepSpeed's bf16 and
 * fp16 keep fp32 master weights (bf16_optimizer.py, fp16/fused_optimizer.py). */
#include "check/reader.h"

#include <stdio.h>
#include <string.h>

#include "settings/vocabulary.h"

static int detect(const ck_node *root)
{
    return ck_get(root, "zero_optimization") || ck_get(root, "train_micro_batch_size_per_gpu") ||
                   ck_get(root, "train_batch_size")
               ? 6
               : 0;
}

static bool is_auto(const ck_node *v) { return ck_text(v) && !strcmp(ck_text(v), "auto"); }

static int read_micro_batch(ck_state *st, const ck_node *v, const char *key, char *err)
{
    return is_auto(v) ? 0 : ck_read_batch(st, v, key, err);
}

static int read_accum(ck_state *st, const ck_node *v, const char *key, char *err)
{
    return is_auto(v) ? 0 : ck_read_accum(st, v, key, err);
}

static int read_stage(ck_state *st, const ck_node *v, const char *key, char *err)
{
    int64_t z;
    if (ck_int(v, &z) || z < 0 || z > 3) return ck_bad(key, v, "want a ZeRO stage from 0 to 3", err);
    st->s.zero = (int)z;
    st->given |= MP_PIN_ZERO;
    char t[8];
    snprintf(t, sizeof t, "%d", st->s.zero);
    ck_set(st, "zero", t, key, NULL);
    return 0;
}

static int read_offload_optimizer(ck_state *st, const ck_node *v, const char *key, char *err)
{
    return ck_read_offload_device(st, v, key, MP_OFFLOAD_OPTIMIZER, err);
}

static int read_offload_param(ck_state *st, const ck_node *v, const char *key, char *err)
{
    return ck_read_offload_device(st, v, key, MP_OFFLOAD_PARAMS, err);
}

/* bf16.enabled / fp16.enabled: true, false, or "auto" (the Trainer's flag) */
static int read_enabled(ck_state *st, const ck_node *v, const char *key, int which, char *err)
{
    bool on;
    if (is_auto(v)) {
        st->engine_masters = true; /* whatever the Trainer turns on keeps fp32 masters */
        return 0;
    }
    if (ck_bool(v, &on)) return ck_bad(key, v, "want true, false or auto", err);
    if (on) st->precision16 = which, st->engine_masters = true, snprintf(st->precision_key, sizeof st->precision_key, "%s", key);
    return 0;
}

static int read_bf16(ck_state *st, const ck_node *v, const char *key, char *err)
{
    return read_enabled(st, v, key, 1, err);
}

static int read_fp16(ck_state *st, const ck_node *v, const char *key, char *err)
{
    return read_enabled(st, v, key, 2, err);
}

/* DEEPSPEED_OPTIMIZERS and the torch.optim class engine.py looks up */
static int read_optimizer_type(ck_state *st, const ck_node *v, const char *key, char *err)
{
    const char *t = ck_text(v);
    if (!t) return ck_bad(key, v, "want an optimizer type", err);
    char lower[32];
    size_t i = 0;
    for (; t[i] && i + 1 < sizeof lower; i++) lower[i] = (char)(t[i] >= 'A' && t[i] <= 'Z' ? t[i] + 32 : t[i]);
    lower[i] = 0;
    if (!strcmp(lower, "adam") || !strcmp(lower, "adamw") || !strcmp(lower, "fusedadam") || !strcmp(lower, "cpuadam"))
        st->s.optimizer = MP_ADAMW;
    else if (!strcmp(lower, "lion")) st->s.optimizer = MP_LION;
    else if (!strcmp(lower, "sgd")) st->s.optimizer = MP_SGD;
    else return ck_refuse(key, "an optimizer memplan has no row for (1-bit Adam, LAMB...)", err);
    st->given |= MP_PIN_OPTIMIZER;
    ck_set(st, "optimizer", mp_optimizer_name(st->s.optimizer), key, NULL);
    return 0;
}

static int read_torch_adam_fused(ck_state *st, const ck_node *v, const char *key, char *err)
{
    bool on;
    if (ck_bool(v, &on)) return ck_bad(key, v, "want true or false", err);
    if (on) st->s.step_impl = MP_STEP_FUSED, ck_set(st, "optimizer-impl", "fused", key, NULL);
    return 0;
}

static int read_foreach(ck_state *st, const ck_node *v, const char *key, char *err)
{
    bool on;
    if (ck_bool(v, &on)) return ck_bad(key, v, "want true or false", err);
    st->s.step_impl = on ? MP_STEP_FOREACH : MP_STEP_FOR_LOOP;
    ck_set(st, "optimizer-impl", mp_step_impl_name(st->s.step_impl), key, NULL);
    return 0;
}

static const ck_key keys[] = {
    {"train_micro_batch_size_per_gpu", read_micro_batch}, {"gradient_accumulation_steps", read_accum},
    {"train_batch_size", NULL}, {"gradient_clipping", NULL}, {"steps_per_print", NULL},
    {"wall_clock_breakdown", NULL}, {"prescale_gradients", NULL}, {"gradient_predivide_factor", NULL},
    {"bf16.enabled", read_bf16}, {"fp16.enabled", read_fp16}, {"fp16.loss_scale", NULL},
    {"fp16.loss_scale_window", NULL}, {"fp16.initial_scale_power", NULL}, {"fp16.hysteresis", NULL},
    {"fp16.min_loss_scale", NULL}, {"fp16.auto_cast", NULL}, {"bf16.immediate_grad_update", NULL},
    {"optimizer.type", read_optimizer_type}, {"optimizer.params.torch_adam", NULL},
    {"optimizer.params.fused", read_torch_adam_fused}, {"optimizer.params.foreach", read_foreach},
    {"optimizer.params.lr", NULL}, {"optimizer.params.betas", NULL}, {"optimizer.params.eps", NULL},
    {"optimizer.params.weight_decay", NULL}, {"optimizer.params.momentum", NULL},
    {"optimizer.params.adam_w_mode", NULL}, {"zero_allow_untested_optimizer", NULL},
    {"zero_force_ds_cpu_optimizer", NULL}, {"scheduler", NULL},
    {"zero_optimization.stage", read_stage}, {"zero_optimization.offload_optimizer.device", read_offload_optimizer},
    {"zero_optimization.offload_param.device", read_offload_param},
    {"zero_optimization.offload_optimizer.pin_memory", NULL}, {"zero_optimization.offload_param.pin_memory", NULL},
    {"zero_optimization.offload_optimizer.buffer_count", NULL}, {"zero_optimization.offload_param.buffer_count", NULL},
    {"zero_optimization.offload_optimizer.fast_init", NULL}, {"zero_optimization.offload_param.buffer_size", NULL},
    {"zero_optimization.offload_param.max_in_cpu", NULL}, {"zero_optimization.offload_optimizer.ratio", NULL},
    {"zero_optimization.offload_optimizer.nvme_path", NULL}, {"zero_optimization.offload_param.nvme_path", NULL},
    {"zero_optimization.allgather_partitions", NULL}, {"zero_optimization.allgather_bucket_size", NULL},
    {"zero_optimization.overlap_comm", NULL}, {"zero_optimization.reduce_scatter", NULL},
    {"zero_optimization.reduce_bucket_size", NULL}, {"zero_optimization.contiguous_gradients", NULL},
    {"zero_optimization.round_robin_gradients", NULL}, {"zero_optimization.sub_group_size", NULL},
    {"zero_optimization.stage3_prefetch_bucket_size", NULL},
    {"zero_optimization.stage3_param_persistence_threshold", NULL},
    {"zero_optimization.stage3_max_live_parameters", NULL}, {"zero_optimization.stage3_max_reuse_distance", NULL},
    {"zero_optimization.stage3_gather_16bit_weights_on_model_save", NULL},
    {"zero_optimization.stage3_gather_fp16_weights_on_model_save", NULL},
    {"zero_optimization.elastic_checkpoint", NULL}, {"zero_optimization.ignore_unused_parameters", NULL},
    {"zero_optimization.load_from_fp32_weights", NULL}, {"zero_optimization.cpu_offload", NULL},
    /* DeepSpeed's own activation checkpointing serves models that call deepspeed.checkpointing:
     * the Trainer checkpoints through PyTorch (gradient_checkpointing) */
    {"activation_checkpointing", NULL}, {"flops_profiler", NULL}, {"comms_logger", NULL}, {"tensorboard", NULL},
    {"wandb", NULL}, {"csv_monitor", NULL}, {"aio", NULL}, {"data_types", NULL}, {"checkpoint", NULL},
    /* DeepSpeed reads keys by name and ignores the rest: the plan memplan's JSON carries */
    {"_comment", NULL},
    {NULL, NULL},
};

static const char *const sections[] = {"bf16", "fp16", "optimizer", "optimizer.params", "zero_optimization",
                                       "zero_optimization.offload_optimizer", "zero_optimization.offload_param",
                                       NULL};

static int finish(ck_state *st, char *err)
{
    st->deepspeed = true;
    if (!(st->given & MP_PIN_ZERO)) ck_set(st, "zero", "0", "(default)", "DeepSpeed's default stage");
    return 0;
}

static int spell(const char *setting, const mp_settings *s, char *buf, size_t len)
{
    if (!strcmp(setting, "batch"))
        snprintf(buf, len, "\"train_micro_batch_size_per_gpu\": %lld, \"gradient_accumulation_steps\": %lld",
                 (long long)s->batch, (long long)s->accum);
    else return -1;
    return 0;
}

const ck_format ck_format_deepspeed = {
    .name = "deepspeed", .framework = "deepspeed", .detect = detect, .keys = keys, .sections = sections,
    .finish = finish, .spell = spell,
};

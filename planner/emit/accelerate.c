/* accelerate.c — an accelerate config (YAML) with the keys accelerate reads
 * (tests/data/engines/accelerate_keys.txt): the engine engine.c chose, its
 * process count, and for FSDP the sharding strategy, auto-wrap policy and
 * state-dict type. Activation checkpointing is the script's (TrainingArguments
 * gradient_checkpointing), so fsdp_activation_checkpointing stays false: it is
 * done once. Gradient accumulation is the script's too (accelerate has no
 * top-level key for it). */
#include "model/family.h"
#include "emitters.h"
#include "common/errors.h"
#include "model/model.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"

#include <stdio.h>
#include <string.h>

/* mixed_precision as accelerate spells it (src/accelerate/utils/dataclasses.py, PrecisionType) */
static const char *const accelerate_precisions[MP_NPRECISION] = {
    [MP_FP32] = "'no'", [MP_AMP_BF16] = "bf16", [MP_AMP_FP16] = "fp16", [MP_MIXED_BF16] = "bf16",
    [MP_MIXED_FP16] = "fp16", [MP_PURE_BF16] = "bf16",
};

const char *emit_accelerate_precision(mp_precision p)
{
    return p >= 0 && p < MP_NPRECISION ? accelerate_precisions[p] : NULL;
}

static const char *distributed_type(emit_engine_kind k)
{
    static const char *const names[] = {
        [EMIT_SINGLE] = "'NO'", [EMIT_DDP] = "MULTI_GPU", [EMIT_DEEPSPEED] = "DEEPSPEED", [EMIT_FSDP] = "FSDP",
    };
    return names[k];
}

/* PEFT's FSDP recipe keeps use_orig_params off: the Trainer then wraps the
 * adapters apart from the frozen base (peft fsdp_auto_wrap_policy), so the
 * frozen weights need no gradients; full fine-tuning keeps accelerate's
 * default (true). */
static void put_fsdp(sbuf *b, const mp_model *m, const mp_settings *s, const emit_engine *e)
{
    const mp_family *f = emit_family_of(m);
    sbuf_put(b, "fsdp_config:\n");
    sbuf_put(b, "  fsdp_sharding_strategy: %s\n", e->stage >= 3 ? "FULL_SHARD" : "SHARD_GRAD_OP");
    sbuf_put(b, "  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n");
    /* the layer FSDP shards one at a time, as its modeling file declares it in
     * _no_split_modules (accelerate's own fallback when the key is absent; one
     * comma-separated string: accelerate utils/dataclasses.py splits on ",") */
    if (f && f->layer_class) sbuf_put(b, "  fsdp_transformer_layer_cls_to_wrap: %s\n", f->layer_class);
    sbuf_put(b, "  fsdp_backward_prefetch: BACKWARD_PRE\n");
    sbuf_put(b, "  fsdp_state_dict_type: SHARDED_STATE_DICT\n");
    sbuf_put(b, "  fsdp_offload_params: false\n");
    sbuf_put(b, "  fsdp_activation_checkpointing: false\n");
    sbuf_put(b, "  fsdp_use_orig_params: %s\n", s->lora_rank ? "false" : "true");
    sbuf_put(b, "  fsdp_cpu_ram_efficient_loading: true\n");
    sbuf_put(b, "  fsdp_sync_module_states: true\n");
}

static void put_deepspeed(sbuf *b, const emit_engine *e)
{
    sbuf_put(b, "deepspeed_config:\n");
    sbuf_put(b, "  deepspeed_config_file: ds_config.json\n");
    if (e->stage == 3) sbuf_put(b, "  zero3_init_flag: true\n");
}

static void write_accelerate(sbuf *b, const mp_plan *p)
{
    const mp_model *m = p->m;
    const mp_settings *s = p->s;
    emit_engine e;
    char err[MP_ERR_LEN];
    if (emit_engine_of(s, &e, err)) return sbuf_fail(b, "%s", err);
    emit_summary_comment(b, p, &e);
    sbuf_put(b, "# use: accelerate launch --config_file accelerate.yaml train.py DATA\n");
    sbuf_put(b, "compute_environment: LOCAL_MACHINE\n");
    sbuf_put(b, "distributed_type: %s\n", distributed_type(e.kind));
    if (e.kind == EMIT_FSDP) put_fsdp(b, m, s, &e);
    if (e.kind == EMIT_DEEPSPEED) put_deepspeed(b, &e);
    /* with a DeepSpeed config file the precision is that file's (its bf16/fp16 blocks) */
    if (e.kind != EMIT_DEEPSPEED)
        sbuf_put(b, "mixed_precision: %s\n", accelerate_precisions[s->precision]);
    sbuf_put(b, "num_machines: 1\nnum_processes: %lld\nmachine_rank: 0\n", (long long)e.procs);
    sbuf_put(b, "use_cpu: false\ndebug: false\n");
}

const mp_emit_target emit_target_accelerate = {
    .name = "accelerate", .file = {"accelerate.yaml", write_accelerate, 0644}, .check = emit_check_engine,
    .framework = "hf", .trl_methods = true,
};

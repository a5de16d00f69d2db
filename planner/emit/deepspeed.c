/* deepspeed.c — a DeepSpeed JSON config that runs what the plan assumed: its
 * ZeRO stage, buckets and offload; the plan's optimizer where DeepSpeed builds
 * that type, else none (the script's optimizer is used); "auto" wherever
 * transformers' Trainer fills a value from TrainingArguments (batch sizes,
 * accumulation, clipping, optimizer hyper-parameters), so the two cannot
 * disagree; bf16/fp16 blocks only for the precisions they mean. Keys and
 * values: tests/data/engines/deepspeed_keys.txt. */
#include "emitters.h"
#include "common/errors.h"
#include "model/model.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* DeepSpeed's words for the plan's values. Precision blocks only where they
 * mean the value: DeepSpeed's bf16/fp16 keep 16-bit weights plus an fp32 master
 * copy (the mixed-* values); none for autocast or pure bf16 (no form), nor for
 * fp32 (neither block). Optimizer types: DEEPSPEED_OPTIMIZERS in
 * deepspeed/runtime/config.py ("adamw", "lion"), and the torch.optim class
 * engine.py _configure_basic_optimizer looks up ("SGD"); NULL: DeepSpeed
 * builds none and the script's optimizer is used. */
static const char *const ds_precisions[MP_NPRECISION] = {[MP_MIXED_BF16] = "bf16", [MP_MIXED_FP16] = "fp16"};
static const char *const ds_optimizers[MP_NOPTIMIZER] = {
    [MP_ADAMW] = "adamw", [MP_SGD] = "SGD", [MP_SGD_MOMENTUM] = "SGD", [MP_LION] = "lion",
};

const char *emit_deepspeed_precision(mp_precision p) { return p >= 0 && p < MP_NPRECISION ? ds_precisions[p] : NULL; }

/* DEEPSPEED_OPTIMIZERS in deepspeed/runtime/config.py: types DeepSpeed builds
 * itself, also under ZeRO-Offload (DeepSpeedCPUAdam, DeepSpeedCPULion). */
static bool deepspeed_native(const char *type)
{
    return type && (!strcmp(type, "adamw") || !strcmp(type, "lion"));
}

/* DeepSpeed reads the top level with dict.get: the summary's key is ignored */
static json_t *summary_json(const mp_plan *p, const emit_engine *e)
{
    char lines[EMIT_NLINES][EMIT_LINE];
    int n = emit_summary_lines(p, e, lines, EMIT_NLINES);
    json_t *a = json_array();
    for (int i = 0; i < n; i++) json_array_append_new(a, json_string(lines[i]));
    json_array_append_new(a, json_string("batch sizes, accumulation, clipping and optimizer settings are auto: "
                                         "transformers' Trainer fills them from TrainingArguments"));
    return a;
}

static json_t *enabled(bool on) { return json_pack("{s:b}", "enabled", on); }

static void put_precision(json_t *cfg, const mp_settings *s)
{
    const char *block = ds_precisions[s->precision];
    const bool bf16 = block && !strcmp(block, "bf16"), fp16 = block && !strcmp(block, "fp16");
    json_object_set_new(cfg, "bf16", enabled(bf16));
    json_t *f = enabled(fp16);
    if (fp16) {
        json_object_set_new(f, "loss_scale", json_integer(0));
        json_object_set_new(f, "initial_scale_power", json_integer(16));
    }
    json_object_set_new(cfg, "fp16", f);
}

/* On the GPU DeepSpeed's "adamw" is its FusedAdam unless torch_adam asks for
 * torch.optim.AdamW (engine.py _configure_basic_optimizer), whose foreach and
 * fused arguments (torch/optim/adamw.py) give the step the plan assumed. Under
 * ZeRO-Offload it is DeepSpeedCPUAdam: the step runs on the host. */
static void put_step_impl(json_t *params, const mp_settings *s, const char *type)
{
    if (strcmp(type, "adamw") || s->offload != MP_OFFLOAD_NONE) return;
    json_object_set_new(params, "torch_adam", json_true());
    if (s->step_impl == MP_STEP_FUSED) json_object_set_new(params, "fused", json_true());
    else json_object_set_new(params, "foreach", json_boolean(s->step_impl != MP_STEP_FOR_LOOP));
}

/* The optimizer block, or none (the Trainer then builds the script's). */
static void put_optimizer(json_t *cfg, const mp_settings *s)
{
    const mp_optimizer_desc *od = mp_optimizer_desc_of(s->optimizer);
    const char *type = ds_optimizers[s->optimizer];
    if (!type) {
        /* the Trainer builds the script's optimizer and allows it under ZeRO
         * (zero_allow_untested_optimizer); under offload it steps on the CPU */
        if (s->offload != MP_OFFLOAD_NONE) json_object_set_new(cfg, "zero_force_ds_cpu_optimizer", json_false());
        return;
    }
    json_t *params = json_pack("{s:s}", "lr", "auto");
    if (od->adamw_class || deepspeed_native(type)) json_object_set_new(params, "betas", json_string("auto"));
    if (od->adamw_class) json_object_set_new(params, "eps", json_string("auto"));
    if (od->momentum) json_object_set_new(params, "momentum", json_real(0.9));
    put_step_impl(params, s, type);
    json_object_set_new(params, "weight_decay", json_string("auto"));
    json_object_set_new(cfg, "optimizer", json_pack("{s:s,s:o}", "type", type, "params", params));
    if (!deepspeed_native(type) && s->zero > 0) json_object_set_new(cfg, "zero_allow_untested_optimizer", json_true());
    if (!deepspeed_native(type) && s->offload != MP_OFFLOAD_NONE)
        json_object_set_new(cfg, "zero_force_ds_cpu_optimizer", json_false());
}

static json_t *offload_block(void) { return json_pack("{s:s,s:b}", "device", "cpu", "pin_memory", 1); }

static void put_zero(json_t *cfg, const mp_settings *s, const emit_engine *e)
{
    const mp_offload_desc *off = mp_offload_desc_of(s->offload);
    long long bucket = emit_zero_bucket(s);
    json_t *z = json_pack("{s:i}", "stage", e->stage);
    if (e->stage > 0) json_object_set_new(z, "reduce_bucket_size", json_integer(bucket));
    if (e->stage == 1 || e->stage == 2) json_object_set_new(z, "allgather_bucket_size", json_integer(bucket));
    if (e->stage > 0) json_object_set_new(z, "contiguous_gradients", json_true());
    /* train.py's save_model then writes one 16-bit model, not only DeepSpeed's shards
     * (deepspeed/runtime/zero/config.py: stage3_gather_16bit_weights_on_model_save) */
    if (e->stage == 3) json_object_set_new(z, "stage3_gather_16bit_weights_on_model_save", json_true());
    if (off->optimizer_on_host) json_object_set_new(z, "offload_optimizer", offload_block());
    if (off->params_on_host) json_object_set_new(z, "offload_param", offload_block());
    json_object_set_new(cfg, "zero_optimization", z);
}

static int check_deepspeed(const mp_model *m, const mp_settings *s, char *err)
{
    (void)m;
    emit_engine e;
    if (emit_engine_of(s, &e, err)) return -1;
    if (e.kind == EMIT_DEEPSPEED) return 0;
    snprintf(err, MP_ERR_LEN, "the plan runs under %s, not DeepSpeed: no DeepSpeed config for it "
             "(DeepSpeed runs offload, ZeRO-1 and --framework deepspeed plans)", emit_engine_name(e.kind));
    return -1;
}

static void write_deepspeed(sbuf *b, const mp_plan *p)
{
    const mp_settings *s = p->s;
    emit_engine e;
    char err[MP_ERR_LEN];
    if (emit_engine_of(s, &e, err)) return sbuf_fail(b, "%s", err);
    json_t *cfg = json_object();
    json_object_set_new(cfg, "_comment", summary_json(p, &e));
    static const char *const from_trainer[] = {"train_micro_batch_size_per_gpu", "gradient_accumulation_steps",
                                               "train_batch_size", "gradient_clipping"};
    for (size_t i = 0; i < sizeof from_trainer / sizeof *from_trainer; i++)
        json_object_set_new(cfg, from_trainer[i], json_string("auto"));
    put_precision(cfg, s);
    put_optimizer(cfg, s);
    put_zero(cfg, s, &e);
    json_object_set_new(cfg, "steps_per_print", json_integer(10));
    char *text = json_dumps(cfg, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
    json_decref(cfg);
    if (!text) {
        sbuf_fail(b, "the DeepSpeed config could not be built (a summary line is not UTF-8, or out of memory)");
        return;
    }
    sbuf_put(b, "%s\n", text);
    free(text);
}

const mp_emit_target emit_target_deepspeed = {
    .name = "deepspeed", .file = {"ds_config.json", write_deepspeed, 0644}, .check = check_deepspeed,
    .framework = "deepspeed", .trl_methods = true,
};

/* deepspeed.c — a DeepSpeed JSON config that runs what the plan assumed: its
 * ZeRO stage, buckets and offload; the plan's optimizer where DeepSpeed builds
 * that type, else none (the script's optimizer is used); "auto" wherever
 * transformers' Trainer fills a value from TrainingArguments (batch sizes,
 * accumulation, clipping, optimizer hyper-parameters), so the two cannot
 * disagree; bf16/fp16 blocks only for the precisions they mean. Keys and
 * values: tests/data/engines/deepspeed_keys.txt. */
#include "emitters.h"

#include <stdio.h>
#include <string.h>

/* DEEPSPEED_OPTIMIZERS in deepspeed/runtime/config.py: types DeepSpeed builds
 * itself, also under ZeRO-Offload (DeepSpeedCPUAdam, DeepSpeedCPULion). */
static bool deepspeed_native(const char *type)
{
    return type && (!strcmp(type, "adamw") || !strcmp(type, "lion"));
}

static void put_summary(sbuf *b, const mp_model *m, const mp_settings *s, const emit_engine *e)
{
    char lines[EMIT_NLINES][EMIT_LINE];
    int n = emit_summary_lines(m, s, e, lines, EMIT_NLINES);
    /* DeepSpeed reads the top level with dict.get: this key is ignored */
    sbuf_put(b, "{\n  \"_comment\": [\n");
    for (int i = 0; i < n; i++) sbuf_put(b, "    \"%s\",\n", lines[i]);
    sbuf_put(b, "    \"batch sizes, accumulation, clipping and optimizer settings are auto: transformers' Trainer "
                "fills them from TrainingArguments\"\n  ],\n");
}

static void put_precision(sbuf *b, const mp_settings *s)
{
    const char *block = mp_precision_desc_of(s->precision)->deepspeed;
    const bool bf16 = block && !strcmp(block, "bf16"), fp16 = block && !strcmp(block, "fp16");
    sbuf_put(b, "  \"bf16\": {\"enabled\": %s},\n", bf16 ? "true" : "false");
    sbuf_put(b, "  \"fp16\": {\"enabled\": %s%s},\n", fp16 ? "true" : "false",
             fp16 ? ", \"loss_scale\": 0, \"initial_scale_power\": 16" : "");
}

/* On the GPU DeepSpeed's "adamw" is its FusedAdam unless torch_adam asks for
 * torch.optim.AdamW (engine.py _configure_basic_optimizer), whose foreach and
 * fused arguments (torch/optim/adamw.py) give the step the plan assumed. Under
 * ZeRO-Offload it is DeepSpeedCPUAdam: the step runs on the host. */
static void put_step_impl(sbuf *b, const mp_settings *s, const char *type)
{
    if (strcmp(type, "adamw") || s->offload != MP_OFFLOAD_NONE) return;
    sbuf_put(b, ", \"torch_adam\": true, %s", s->step_impl == MP_STEP_FUSED ? "\"fused\": true"
             : s->step_impl == MP_STEP_FOR_LOOP ? "\"foreach\": false" : "\"foreach\": true");
}

/* The optimizer block, or none (the Trainer then builds the script's). */
static void put_optimizer(sbuf *b, const mp_settings *s)
{
    const mp_optimizer_desc *od = mp_optimizer_desc_of(s->optimizer);
    const char *type = od->deepspeed;
    if (!type) {
        /* the Trainer builds the script's optimizer and allows it under ZeRO
         * (zero_allow_untested_optimizer); under offload it steps on the CPU */
        if (s->offload != MP_OFFLOAD_NONE) sbuf_put(b, "  \"zero_force_ds_cpu_optimizer\": false,\n");
        return;
    }
    sbuf_put(b, "  \"optimizer\": {\"type\": \"%s\", \"params\": {\"lr\": \"auto\"", type);
    if (od->adamw_class) sbuf_put(b, ", \"betas\": \"auto\", \"eps\": \"auto\"");
    else if (deepspeed_native(type)) sbuf_put(b, ", \"betas\": \"auto\"");
    if (od->momentum) sbuf_put(b, ", \"momentum\": 0.9");
    put_step_impl(b, s, type);
    sbuf_put(b, ", \"weight_decay\": \"auto\"}},\n");
    if (!deepspeed_native(type) && s->zero > 0) sbuf_put(b, "  \"zero_allow_untested_optimizer\": true,\n");
    if (!deepspeed_native(type) && s->offload != MP_OFFLOAD_NONE)
        sbuf_put(b, "  \"zero_force_ds_cpu_optimizer\": false,\n");
}

static void put_zero(sbuf *b, const mp_settings *s, const emit_engine *e)
{
    const mp_offload_desc *off = mp_offload_desc_of(s->offload);
    long long bucket = emit_zero_bucket(s);
    sbuf_put(b, "  \"zero_optimization\": {\n    \"stage\": %d", e->stage);
    if (e->stage > 0) sbuf_put(b, ",\n    \"reduce_bucket_size\": %lld", bucket);
    if (e->stage == 1 || e->stage == 2) sbuf_put(b, ",\n    \"allgather_bucket_size\": %lld", bucket);
    if (e->stage > 0) sbuf_put(b, ",\n    \"contiguous_gradients\": true");
    if (off->optimizer_on_host)
        sbuf_put(b, ",\n    \"offload_optimizer\": {\"device\": \"cpu\", \"pin_memory\": true}");
    if (off->params_on_host)
        sbuf_put(b, ",\n    \"offload_param\": {\"device\": \"cpu\", \"pin_memory\": true}");
    sbuf_put(b, "\n  },\n");
}

int check_deepspeed(const mp_model *m, const mp_settings *s, char *err)
{
    (void)m;
    emit_engine e;
    if (emit_engine_of(s, &e, err)) return -1;
    if (e.kind == EMIT_DEEPSPEED) return 0;
    snprintf(err, MP_ERR_LEN, "the plan runs under %s, not DeepSpeed: no DeepSpeed config for it "
             "(DeepSpeed runs offload, ZeRO-1 and --framework deepspeed plans)", emit_engine_name(e.kind));
    return -1;
}

void emit_deepspeed(sbuf *b, const mp_model *m, const mp_settings *s)
{
    emit_engine e;
    char err[MP_ERR_LEN];
    if (emit_engine_of(s, &e, err)) return; /* check_deepspeed ran first */
    put_summary(b, m, s, &e);
    sbuf_put(b, "  \"train_micro_batch_size_per_gpu\": \"auto\",\n");
    sbuf_put(b, "  \"gradient_accumulation_steps\": \"auto\",\n");
    sbuf_put(b, "  \"train_batch_size\": \"auto\",\n");
    sbuf_put(b, "  \"gradient_clipping\": \"auto\",\n");
    put_precision(b, s);
    put_optimizer(b, s);
    put_zero(b, s, &e);
    sbuf_put(b, "  \"steps_per_print\": 10\n}\n");
}

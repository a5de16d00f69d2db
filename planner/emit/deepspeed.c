/* deepspeed.c — a DeepSpeed JSON config. */
#include "emitters.h"

#include <stdio.h>
#include <string.h>

void emit_deepspeed(sbuf *b, const mp_model *m, const mp_settings *s)
{
    int64_t dp = s->gpus / (s->tp * s->pp);
    const char *block = mp_precision_desc_of(s->precision)->deepspeed;
    const bool bf16 = block && !strcmp(block, "bf16"), fp16 = block && !strcmp(block, "fp16");
    const mp_optimizer_desc *od = mp_optimizer_desc_of(s->optimizer);
    const mp_offload_desc *off = mp_offload_desc_of(s->offload);
    sbuf_put(b, "{\n  \"_comment\": \"DeepSpeed config written by memplan for %s on %lld GPU(s)\",\n",
        m->name, (long long)s->gpus);
    sbuf_put(b, "  \"train_micro_batch_size_per_gpu\": %lld,\n", (long long)s->batch);
    sbuf_put(b, "  \"gradient_accumulation_steps\": %lld,\n", (long long)s->accum);
    sbuf_put(b, "  \"train_batch_size\": %lld,\n", (long long)(s->batch * s->accum * dp));
    sbuf_put(b, "  \"bf16\": {\"enabled\": %s},\n", bf16 ? "true" : "false");
    sbuf_put(b, "  \"fp16\": {\"enabled\": %s%s},\n", fp16 ? "true" : "false",
        fp16 ? ", \"loss_scale\": 0, \"initial_scale_power\": 16" : "");
    /* an optimizer DeepSpeed has no type for is written as AdamW (to be revisited: issue 11) */
    sbuf_put(b, "  \"optimizer\": {\"type\": \"%s\", \"params\": {\"lr\": 2e-5%s}},\n",
        od->deepspeed ? od->deepspeed : "AdamW", od->momentum ? ", \"momentum\": 0.9" : "");
    sbuf_put(b, "  \"zero_optimization\": {\n    \"stage\": %d", s->zero);
    if (off->optimizer_on_host)
        sbuf_put(b, ",\n    \"offload_optimizer\": {\"device\": \"cpu\", \"pin_memory\": true}");
    if (off->params_on_host)
        sbuf_put(b, ",\n    \"offload_param\": {\"device\": \"cpu\", \"pin_memory\": true}");
    sbuf_put(b, ",\n    \"overlap_comm\": true,\n    \"contiguous_gradients\": true\n  },\n");
    sbuf_put(b, "  \"activation_checkpointing\": {\"partition_activations\": %s, \"contiguous_memory_optimization\": false},\n",
        mp_ckpt_desc_of(s->checkpointing)->deepspeed_partition_activations ? "true" : "false");
    sbuf_put(b, "  \"gradient_clipping\": 1.0,\n  \"steps_per_print\": 10\n}\n");
}

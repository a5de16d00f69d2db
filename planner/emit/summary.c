/* summary.c — the plan summary every engine artifact carries at its top: what
 * the estimate assumed (precision, optimizer, checkpointing, attention, loss,
 * ZeRO stage, offload, batch, sequence) and the predicted peak per GPU, so a
 * reader can check a config against the plan it came from. */
#include "emitters.h"
#include "common/errors.h"
#include "common/units.h"
#include "estimate/estimate.h"
#include "model/model.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"

#include <stdio.h>
#include <string.h>

static const char *task_of(const mp_settings *s, char *buf, size_t len)
{
    char tg[64];
    if (!s->lora_rank) return "full fine-tuning";
    snprintf(buf, len, "%s, rank %lld on %s", s->quant != MP_QUANT_NONE ? "QLoRA" : "LoRA",
             (long long)s->lora_rank, mp_lora_targets_name(s->lora_targets, tg, sizeof tg));
    return buf;
}

static const char *sharding_of(const mp_settings *s, const emit_engine *e, char *buf, size_t len)
{
    /* the estimate counts DeepSpeed's reduce bucket wherever the plan runs under
     * DeepSpeed (estimate.c); ZeRO-1 on several GPUs under another profile is
     * estimated as PyTorch's ZeRO-1 on DDP, which the Trainer cannot run */
    if (e->kind == EMIT_DEEPSPEED)
        snprintf(buf, len, "DeepSpeed ZeRO stage %d, buckets of %lld elements (%s)", e->stage, emit_zero_bucket(s),
                 mp_runs_deepspeed(s) ? "counted in the estimate"
                                      : "not counted: the estimate is PyTorch's ZeRO-1 on DDP; --framework deepspeed "
                                        "estimates DeepSpeed's");
    else if (e->kind == EMIT_FSDP) snprintf(buf, len, "FSDP %s", e->stage >= 3 ? "FULL_SHARD" : "SHARD_GRAD_OP");
    else snprintf(buf, len, "none");
    return buf;
}

static const char *peak_of(const mp_estimate *e, char *buf, size_t len)
{
    char a[32], r[32];
    snprintf(buf, len, "%s allocated, %s reserved (GiB = 2^30 bytes)", mp_fmt_gib(e->total_bytes, a, sizeof a),
             mp_fmt_gib(e->reserved_bytes, r, sizeof r));
    return buf;
}

int emit_summary_lines(const mp_plan *p, const emit_engine *e, char lines[][EMIT_LINE], int max)
{
    const mp_model *m = p->m;
    const mp_settings *s = p->s;
    char t[128], sh[200], pk[96];
    const mp_precision_desc *pd = mp_precision_desc_of(s->precision);
    const mp_optimizer_desc *od = mp_optimizer_desc_of(s->optimizer);
    int64_t dp = mp_dp_degree(s);
    int n = 0;
#define LINE(...) do { if (n < max) snprintf(lines[n++], EMIT_LINE, __VA_ARGS__); } while (0)
    LINE("memplan plan for %s: %s", m->name, task_of(s, t, sizeof t));
    LINE("engine: %s, %lld process(es), one per GPU", emit_engine_name(e->kind), (long long)e->procs);
    LINE("precision: %s (%s)", pd->v.name, pd->v.help);
    LINE("optimizer: %s (%s), step %s", od->v.name, od->v.help, mp_step_impl_name(s->step_impl));
    LINE("checkpointing: %s, in train.py only (TrainingArguments gradient_checkpointing), never in the engine config",
         mp_ckpt_name(s->checkpointing));
    LINE("attention: %s (%s)", mp_attention_name(s->attention), mp_attention_desc_of(s->attention)->v.help);
    if (s->method != MP_METHOD_SFT) { /* TRL's trainer for the method (trl.c) */
        const mp_method_desc *md = mp_method_desc_of(s->method);
        LINE("method: %s, TRL's %s; reference: %s", md->v.name, md->trainer, mp_reference_name(mp_reference_used(s)));
        if (md->generates)
            /* GRPO's --generations; PPOTrainer one completion a prompt, OnlineDPOTrainer two (online_dpo_trainer.py 358) */
            LINE("rollout: %lld completion%s a prompt, %lld prompt and %lld completion tokens, %s",
                 md->grouped ? (long long)s->generations : md->value_model ? 1LL : 2LL,
                 md->grouped || !md->value_model ? "s" : "", (long long)s->prompt_len, (long long)s->completion_len,
                 s->rollout == MP_ROLLOUT_VLLM     ? "a colocated vLLM"
                 : s->rollout == MP_ROLLOUT_SERVER ? "a vLLM server on other GPUs"
                                                   : "transformers' generate");
        LINE("loss: %s's own, on the log-probabilities of the logits", md->trainer);
    } else if (s->ce == MP_CE_CHUNKED) LINE("loss: chunked cross-entropy, %lld tokens per chunk", (long long)s->ce_chunk);
    else LINE("loss: full cross-entropy (the whole logits at once)");
    LINE("ZeRO stage: %d in the plan; sharding: %s", s->zero, sharding_of(s, e, sh, sizeof sh));
    LINE("offload: %s (%s)", mp_offload_name(s->offload), mp_offload_desc_of(s->offload)->v.help);
    LINE("micro-batch: %lld per GPU; accumulation: %lld; global batch: %lld sequences", (long long)s->batch,
         (long long)s->accum, (long long)(s->batch * s->accum * dp));
    LINE("sequence: %lld tokens", (long long)s->seq);
    LINE("predicted peak per GPU: %s", peak_of(p->e, pk, sizeof pk));
#undef LINE
    /* each line one line of plain text, whatever a name or a message in it holds */
    for (int i = 0; i < n; i++) {
        char line[EMIT_LINE];
        memcpy(lines[i], mp_quote(lines[i], line, sizeof line), sizeof line);
    }
    return n;
}

void emit_summary_prefixed(sbuf *b, const mp_plan *p, const emit_engine *e, const char *prefix)
{
    char lines[EMIT_NLINES][EMIT_LINE];
    int n = emit_summary_lines(p, e, lines, EMIT_NLINES);
    for (int i = 0; i < n; i++) sbuf_put(b, "%s%s\n", prefix, lines[i]);
}

void emit_summary_comment(sbuf *b, const mp_plan *p, const emit_engine *e) { emit_summary_prefixed(b, p, e, "# "); }

void emit_readme_model(sbuf *b, const mp_model *m, const char *file, const char *key)
{
    if (m->hf_id[0])
        sbuf_put(b, "MODEL\n  %s loads %s from the Hugging Face Hub;\n  for a local copy, set %s to its folder.\n",
                 file, EMIT_TEXT(m->hf_id), key);
    else
        sbuf_put(b, "MODEL\n  memplan has no Hub id for this model: set %s in %s to its id or folder.\n", key, file);
    sbuf_put(b, "  A gated model on the Hub (Llama, Gemma, Mistral...) needs its license accepted on its\n"
                "  Hub page and a login first: huggingface-cli login, or HF_TOKEN in the environment.\n\n");
}

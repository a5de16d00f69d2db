/* report.c — an estimate as text, JSON (jansson) or CSV (libcsv). */
#include "cli.h"
#include "common/units.h"
#include "estimate/estimate.h"
#include "model/model.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"

#include <csv.h>
#include <jansson.h>
#include <math.h>
#include <string.h>

/* A desktop's host RAM: gpus.csv's consumer rows (two 32 GB DIMMs). A plan that
 * needs more per node says so in its verdict whatever the limit. */
#define HOST_DESKTOP_BYTES (64 * MP_GiB)

const char *plan_summary(const mp_settings *s, char *buf, size_t len)
{
    char tg[64];
    size_t o = 0;
#define ADD(...) o += (size_t)snprintf(buf + o, o < len ? len - o : 0, __VA_ARGS__)
    if (s->method != MP_METHOD_SFT) {
        const mp_reference r = mp_reference_used(s);
        ADD("%s", mp_method_name(s->method));
        if (r != MP_REF_NONE) ADD(" (reference %s)", mp_reference_name(r));
        ADD(" with ");
    }
    if (s->lora_rank > 0) {
        if (s->quant != MP_QUANT_NONE) ADD("QLoRA (%s base) r=%lld", mp_quant_name(s->quant), (long long)s->lora_rank);
        else ADD("LoRA r=%lld", (long long)s->lora_rank);
        ADD(" on %s, ", mp_lora_targets_name(s->lora_targets, tg, sizeof tg));
    } else {
        ADD("full fine-tuning, ");
    }
    ADD("%s, %s", mp_precision_name(s->precision), mp_optimizer_name(s->optimizer));
    if (s->checkpointing != MP_CKPT_NONE) ADD(", %s checkpointing", mp_ckpt_name(s->checkpointing));
    if (s->checkpointing == MP_CKPT_FULL && s->ckpt_every > 1) ADD(" (one block in %lld)", (long long)s->ckpt_every);
    ADD(", %s attention", mp_attention_name(s->attention));
    if (s->ce == MP_CE_CHUNKED) ADD(", chunked CE");
    if (s->zero) ADD(", ZeRO-%d", s->zero);
    if (s->offload != MP_OFFLOAD_NONE) ADD(", offload %s", mp_offload_name(s->offload));
    if (s->optimizer_in_backward) ADD(", optimizer in backward");
    if (s->offload_activations) ADD(", activations offloaded");
    if (s->compile) ADD(", compiled");
    if (s->expandable_segments) ADD(", expandable segments");
    if (s->gpus > 1) ADD(", %lld GPUs", (long long)s->gpus);
#undef ADD
    return buf;
}

const char *plan_difference(const mp_settings *b, const mp_settings *a, char *buf, size_t len)
{
    char tg[64];
    size_t o = 0;
    buf[0] = 0;
#define ADD(...) (o += (size_t)snprintf(buf + o, o < len ? len - o : 0, "%s", o ? ", " : ""), \
                  o += (size_t)snprintf(buf + o, o < len ? len - o : 0, __VA_ARGS__))
    if ((a->lora_rank > 0) != (b->lora_rank > 0) || a->quant != b->quant) {
        if (a->lora_rank == 0) ADD("full fine-tuning");
        else if (a->quant != MP_QUANT_NONE) ADD("QLoRA (%s base)", mp_quant_name(a->quant));
        else ADD("LoRA");
    }
    if (a->lora_rank > 0 && (a->lora_rank != b->lora_rank || a->lora_targets != b->lora_targets))
        ADD("r=%lld on %s", (long long)a->lora_rank, mp_lora_targets_name(a->lora_targets, tg, sizeof tg));
    if (a->precision != b->precision) ADD("%s", mp_precision_name(a->precision));
    if (a->optimizer != b->optimizer) ADD("%s", mp_optimizer_name(a->optimizer));
    if (a->checkpointing != b->checkpointing)
        ADD("%s", a->checkpointing == MP_CKPT_NONE ? "no checkpointing" : mp_ckpt_name(a->checkpointing)),
            o += (size_t)snprintf(buf + o, o < len ? len - o : 0, "%s",
                                  a->checkpointing == MP_CKPT_NONE ? "" : " checkpointing");
    if (a->attention != b->attention) ADD("%s attention", mp_attention_name(a->attention));
    if (a->ce != b->ce) ADD("%s", a->ce == MP_CE_CHUNKED ? "chunked CE" : "whole-vocabulary CE");
    if (a->zero != b->zero) a->zero ? ADD("ZeRO-%d", a->zero) : ADD("no ZeRO");
    if (a->offload != b->offload)
        a->offload == MP_OFFLOAD_NONE ? ADD("no offload") : ADD("offload %s", mp_offload_name(a->offload));
    if (a->optimizer_in_backward != b->optimizer_in_backward)
        ADD("%s", a->optimizer_in_backward ? "optimizer in backward" : "optimizer after backward");
    if (a->offload_activations != b->offload_activations)
        ADD("%s", a->offload_activations ? "activations offloaded" : "activations on the GPU");
    if (a->compile != b->compile) ADD("%s", a->compile ? "compiled" : "not compiled");
    if (a->gpus != b->gpus) ADD("%lld GPUs", (long long)a->gpus);
    if (!o) ADD("micro-batch %lld", (long long)a->batch);
#undef ADD
    return buf;
}

static const char *pct(double part, double whole, char *buf, size_t len)
{
    if (whole > 0) snprintf(buf, len, "%5.1f%%", 100 * part / whole);
    else snprintf(buf, len, "     ");
    return buf;
}

static const char *task_of(const mp_settings *s)
{
    return s->lora_rank == 0 ? "full" : s->quant != MP_QUANT_NONE ? "qlora" : "lora";
}

/* Every technique the estimate assumed, under the names JSON and CSV use. */
static void print_settings_text(FILE *f, const mp_settings *s)
{
    char tg[64];
    fprintf(f, "settings  task %s", task_of(s));
    if (s->lora_rank > 0)
        fprintf(f, ", lora-rank %lld, lora-targets %s, quant %s", (long long)s->lora_rank,
                mp_lora_targets_name(s->lora_targets, tg, sizeof tg), mp_quant_name(s->quant));
    if (s->lora_rank > 0 && s->lora_dropout > 0) fprintf(f, ", lora-dropout %g", s->lora_dropout);
    fprintf(f, ", precision %s, optimizer %s,\n          checkpointing %s, attention %s, ce %s, zero %d, offload %s\n",
            mp_precision_name(s->precision), mp_optimizer_name(s->optimizer), mp_ckpt_name(s->checkpointing),
            mp_attention_name(s->attention), mp_ce_name(s->ce), s->zero, mp_offload_name(s->offload));
    if (s->optimizer_in_backward) fprintf(f, "          optimizer-in-backward (each tensor stepped as its gradient lands)\n");
    if (s->offload_activations) fprintf(f, "          offload-activations (saved activations in pinned host RAM)\n");
    if (s->compile) fprintf(f, "          compile (torch.compile: pointwise intermediates recomputed in the backward)\n");
    if (s->expandable_segments)
        fprintf(f, "          expandable-segments (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True)\n");
    if (s->bnb_version) {
        char release[32];
        fprintf(f, "          bitsandbytes %s\n", mp_version_name(s->bnb_version, release, sizeof release));
    }
}

/* The host RAM a plan needs, in the verdict: where it offloads, where a node
 * needs more than a desktop holds, or where it is over the limit. */
static void print_host_verdict(FILE *f, const cli *c, const mp_estimate *e)
{
    char a[32], b[32], lim[160];
    bool over = !host_fits(c, e);
    if (!over && e->host_offload_bytes <= 0 && e->host_node_bytes <= HOST_DESKTOP_BYTES) return;
    fprintf(f, "host RAM  %s per node, %d process%s", mp_fmt_gib(e->host_node_bytes, a, sizeof a),
            e->host_ranks_per_node, e->host_ranks_per_node == 1 ? "" : "es");
    if (e->host_offload_bytes > 0)
        fprintf(f, ", %s offloaded by each", mp_fmt_gib(e->host_offload_bytes, b, sizeof b));
    if (c->host_ram > 0)
        fprintf(f, "\n          %s %s%s\n", over ? "over" : "within", host_limit_text(c, &c->gpu, lim, sizeof lim),
                c->host_ram_typical ? " (--host-ram SIZE: yours)" : "");
    else
        fprintf(f, "\n          more than a desktop's %s\n", mp_fmt_gib(HOST_DESKTOP_BYTES, lim, sizeof lim));
}

/* Host RAM per process (loading, training) and per node, and the --host-ram verdict. */
static void print_host_text(FILE *f, const cli *c, const mp_estimate *e)
{
    char a[32], b[32], d[32];
    if (e->host_baseline_bytes <= 0) { /* memtrain: its own buffers only */
        fprintf(f, "  %-12s %12s   (data loader, pinned batches)\n", "host RAM", mp_fmt_gib(e->host_bytes, a, sizeof a));
        return;
    }
    if (c->compact) {
        fprintf(f, "  %-12s %12s   per node, %d process%s, peak while %s\n", "host RAM",
                mp_fmt_gib(e->host_node_bytes, a, sizeof a), e->host_ranks_per_node,
                e->host_ranks_per_node == 1 ? "" : "es",
                e->host_load_bytes >= e->host_train_bytes ? "loading" : "training");
        return;
    }
    fprintf(f, "  %-12s %12s   per process, at its peak while %s\n", "host RAM", mp_fmt_gib(e->host_bytes, a, sizeof a),
            e->host_load_bytes >= e->host_train_bytes ? "loading the checkpoint" : "training");
    fprintf(f, "  %-12s %12s   loading: process %s + one 16-bit checkpoint shard\n", "",
            mp_fmt_gib(e->host_load_bytes, a, sizeof a), mp_fmt_gib(e->host_baseline_bytes, b, sizeof b));
    fprintf(f, "  %-12s %12s   training: process + offloaded %s + data loader and pinned batches %s\n", "",
            mp_fmt_gib(e->host_train_bytes, a, sizeof a), mp_fmt_gib(e->host_offload_bytes, b, sizeof b),
            mp_fmt_gib(e->host_data_bytes, d, sizeof d));
    fprintf(f, "  %-12s %12s   %d process(es), one per GPU\n", "host/node", mp_fmt_gib(e->host_node_bytes, a, sizeof a),
            e->host_ranks_per_node);
    if (!host_fits(c, e)) {
        char lim[160];
        fprintf(f, "  host RAM is the limit: %s per node over %s\n",
                mp_fmt_gib(e->host_node_bytes - c->host_ram, a, sizeof a), host_limit_text(c, &c->gpu, lim, sizeof lim));
    }
}

/* vLLM's KV cache in tokens when it keeps `fraction` of the GPU (its weights and
 * activations first); <= 0 when they do not fit in it. */
/* The largest --rollout-memory the step leaves room for under the headroom,
 * to the hundredth below; < 0.01: none. */
static double rollout_room(const cli *c, const mp_estimate *e)
{
    return floor((c->gpu.mem_bytes * (1 - c->headroom) - e->rollout_base_bytes) / c->gpu.mem_bytes * 100) / 100;
}

static double rollout_kv_tokens(const cli *c, const mp_estimate *e, double fraction)
{
    return floor((fraction * c->gpu.mem_bytes - e->rollout_nonkv_bytes) / e->rollout_kv_token_bytes);
}

/* A generating method's rollout: who generates and what for; with a colocated
 * vLLM, its KV cache in tokens, the fraction it needs to start (one sequence of
 * the model's positions: TRL leaves vllm_max_model_length to the model), and
 * the largest the training step leaves it. */
static void print_rollout_text(FILE *f, const cli *c, const mp_settings *s, const mp_estimate *e)
{
    if (!mp_method_desc_of(s->method)->generates) return;
    char a[32], b[32], n1[40], n2[40];
    const double rows = e->rollout_rows;
    if (s->rollout == MP_ROLLOUT_GENERATE) {
        fprintf(f, "  %-12s transformers' generate: %.0f completions%s, prompt %lld + completion %lld tokens; "
                "KV cache %s\n", "rollout", rows,
                mp_method_desc_of(s->method)->value_model ? " in chunks of 64"
                : mp_method_desc_of(s->method)->per_micro_batch ? " a micro-batch" : " at once (batch x accum)",
                (long long)s->prompt_len,
                (long long)s->completion_len, mp_fmt_gib(e->rollout_cache_bytes, a, sizeof a));
        return;
    }
    if (s->rollout == MP_ROLLOUT_SERVER) {
        fprintf(f, "  %-12s a vLLM server on other GPUs: %.0f completions, prompt %lld + completion %lld tokens; "
                "none of it on these GPUs\n", "rollout", rows, (long long)s->prompt_len, (long long)s->completion_len);
        return;
    }
    const double need = rows * (double)s->seq;
    const double tokens = rollout_kv_tokens(c, e, mp_rollout_memory(s));
    fprintf(f, "  %-12s vLLM colocated, %.2f of the GPU: %s (weights and activations %s), %s\n", "rollout",
            mp_rollout_memory(s), mp_fmt_gib(e->rollout_engine_bytes, a, sizeof a),
            mp_fmt_gib(e->rollout_nonkv_bytes, b, sizeof b),
            s->rollout_sleep ? "asleep while the policy trains" : "awake all run");
    if (tokens > 0)
        fprintf(f, "  %-12s its KV cache holds %s tokens; the generation batch is %s (%.0f x %lld)\n", "",
                mp_fmt_count(tokens, n1, sizeof n1), mp_fmt_count(need, n2, sizeof n2), rows, (long long)s->seq);
    else
        fprintf(f, "  %-12s its weights and activations alone take more than %.2f of the GPU: vLLM would not start\n",
                "", mp_rollout_memory(s));
    const double positions = s->rollout_max_len > 0 ? (double)s->rollout_max_len
                           : c->model.max_pos > 0  ? (double)c->model.max_pos : (double)s->seq;
    const double least = (e->rollout_nonkv_bytes + positions * e->rollout_kv_token_bytes) / c->gpu.mem_bytes;
    const double room = rollout_room(c, e);
    fprintf(f, "  %-12s vLLM starts from %.2f (a KV cache for one sequence of %s tokens); ",
            "", ceil(least * 100) / 100, mp_fmt_count(positions, n1, sizeof n1));
    if (room >= 0.01)
        fprintf(f, "the step leaves room up to %.2f (KV cache %s tokens)\n", room,
                mp_fmt_count(rollout_kv_tokens(c, e, room), n2, sizeof n2));
    else
        fprintf(f, "the step leaves it no room on this GPU\n");
}

void print_estimate_text(FILE *f, const cli *c, const mp_settings *s, const mp_estimate *e)
{
    char a[32], b[32], b2[32], p[16], cnt[40], cnt2[40];
    if (c->compact) { /* the plan's first screen: the shape and step are --explain's */
        fprintf(f, "model     %s: %s params, %s trainable\n", c->model.name,
                mp_fmt_count(e->params.total, cnt, sizeof cnt), mp_fmt_count(e->trainable_params, cnt2, sizeof cnt2));
        goto components;
    }
    fprintf(f, "model     %s (%s): %s params, %s trainable\n", c->model.name, c->model_how,
            mp_fmt_count(e->params.total, cnt, sizeof cnt), mp_fmt_count(e->trainable_params, cnt2, sizeof cnt2));
    fprintf(f, "shape     %lld layers, hidden %lld, %lld heads (%lld kv), ffn %lld, vocab %lld%s\n",
            (long long)c->model.layers, (long long)c->model.hidden, (long long)c->model.heads,
            (long long)c->model.kv_heads, (long long)c->model.ffn, (long long)c->model.vocab,
            c->model.experts ? ", mixture of experts" : "");
    if (c->model.experts)
        fprintf(f, "experts   %lld, top-%lld, %lld shared; %s params active per token\n",
                (long long)c->model.experts, (long long)c->model.top_k, (long long)c->model.shared_experts,
                mp_fmt_count(e->params.active, cnt, sizeof cnt));
    fprintf(f, "step      micro-batch %lld x seq %lld, accumulation %lld, %lld GPU(s), framework %s\n",
            (long long)s->batch, (long long)s->seq, (long long)s->accum, (long long)s->gpus,
            s->framework ? s->framework->name : "pytorch");
    const mp_method_desc *md = mp_method_desc_of(s->method);
    /* torchtune's loop (the profile's listed logits) runs its own DPO recipes (settings.c) */
    const bool tt = s->framework && s->framework->ce_output_chunks > 0;
    if (s->method != MP_METHOD_SFT)
        fprintf(f, "method    %s (%s%s): %lld %s = %lld rows a micro-batch, reference %s\n", md->v.name,
                tt ? "torchtune's " : "TRL's ", tt ? (s->lora_rank ? "LoRA DPO recipe" : "full_dpo_distributed")
                : md->trainer, (long long)s->batch,
                md->per_micro_batch ? "prompts" : md->rows_per_example > 1 ? "pairs"
                : md->generates ? "completions" : "examples",
                (long long)(s->batch * md->rows_per_example), mp_reference_name(mp_reference_used(s)));
    if (c->show_settings) print_settings_text(f, s);
components:
    fprintf(f, "\n  %-12s %12s %12s\n", "per GPU", "at peak", "own peak");
    for (int k = 0; k < MP_NCOMP; k++) {
        fprintf(f, "  %-12s %12s %12s  %s", mp_component_name(k),
                mp_fmt_gib(e->at_peak[k], a, sizeof a), mp_fmt_gib(e->peak[k], b, sizeof b),
                pct(e->at_peak[k], e->device_bytes, p, sizeof p));
        if (k == MP_ACTIVATIONS && e->logits_bytes > 0 && c->compact)
            fprintf(f, "  logits %s", mp_fmt_gib(e->logits_bytes, a, sizeof a));
        if (k == MP_WEIGHTS && e->reference_bytes > 0 && c->compact)
            fprintf(f, "  reference %s", mp_fmt_gib(e->reference_bytes, a, sizeof a));
        fputc('\n', f);
        if (k == MP_WEIGHTS && e->reference_bytes > 0 && !c->compact)
            fprintf(f, "    %-15s %12s\n", "reference model", mp_fmt_gib(e->reference_bytes, a, sizeof a));
        if (k == MP_WEIGHTS && e->reward_model_bytes > 0 && !c->compact)
            fprintf(f, "    %-15s %12s\n", "reward model", mp_fmt_gib(e->reward_model_bytes, a, sizeof a));
        if (k == MP_WEIGHTS && e->value_model_bytes > 0 && !c->compact)
            fprintf(f, "    %-15s %12s  (its weights, gradients and optimizer state)\n", "value model",
                    mp_fmt_gib(e->value_model_bytes, a, sizeof a));
        if (k == MP_ACTIVATIONS && e->logits_bytes > 0 && !c->compact)
            fprintf(f, "    %-10s %12s\n", "of which logits", mp_fmt_gib(e->logits_bytes, a, sizeof a));
    }
    fprintf(f, "  %-12s %12s   peak during %s\n", "allocated", mp_fmt_gib(e->total_bytes, a, sizeof a),
            e->phases[e->peak_phase].name);
    if (c->compact)
        fprintf(f, "  %-12s %12s   device %s with the CUDA context (nvidia-smi)\n", "reserved",
                mp_fmt_gib(e->reserved_bytes, a, sizeof a), mp_fmt_gib(e->device_bytes, b, sizeof b));
    else {
        fprintf(f, "  %-12s %12s\n", "reserved", mp_fmt_gib(e->reserved_bytes, a, sizeof a));
        fprintf(f, "  %-12s %12s   (reserved + CUDA context: what nvidia-smi shows)\n", "device",
                mp_fmt_gib(e->device_bytes, a, sizeof a));
    }
    print_rollout_text(f, c, s, e);
    print_host_text(f, c, e);
    if (c->have_gpu) {
        double usable = c->gpu.mem_bytes * (1 - c->headroom);
        bool fits = mp_fits(e, c->gpu.mem_bytes, c->headroom);
        const char *stack = s->framework ? s->framework->name : "pytorch";
        if (!c->compact)
            fprintf(f, "\nbudget    %s: %s (%s); %.0f%% headroom leaves %s\n", c->gpu.name,
                    mp_fmt_gib(c->gpu.mem_bytes, a, sizeof a), c->gpu.how, c->headroom * 100,
                    mp_fmt_gib(usable, b, sizeof b));
        else
            fputc('\n', f);
        if (fits && host_fits(c, e))
            fprintf(f, "verdict   fits: uses %.1f%% of the GPU, %s to spare (%s profile)\n",
                    100 * e->device_bytes / c->gpu.mem_bytes, mp_fmt_gib(usable - e->device_bytes, a, sizeof a), stack);
        else if (fits)
            fprintf(f, "verdict   does not fit: the GPU holds it (%.1f%%), the node's host RAM does not (%s profile)\n",
                    100 * e->device_bytes / c->gpu.mem_bytes, stack);
        else
            fprintf(f, "verdict   does not fit: %s over the usable %s (%s profile)\n",
                    mp_fmt_gib(e->device_bytes - usable, a, sizeof a), mp_fmt_gib(usable, b, sizeof b), stack);
        /* a run that fails at its first evaluation, not its first step, is told so */
        if (!fits && !strcmp(e->phases[e->peak_phase].name, "evaluation"))
            fprintf(f, "          at the evaluation: --eval-batch %lld holds its logits in one forward (a smaller "
                    "per_device_eval_batch_size fits sooner)\n", (long long)s->eval_batch);
        print_host_verdict(f, c, e);
        if (c->stack_note[0]) fprintf(f, "%s\n", c->stack_note);
        if (e->tokens_per_s > 0)
            fprintf(f, "speed     about %.0f tokens/s (%.2f s per optimizer step, estimate)\n",
                    e->tokens_per_s, e->step_seconds);
    }
    if (c->explain) {
        fprintf(f, "\nterms\n");
        for (int i = 0; i < e->nterms; i++) {
            const mp_term *t = &e->terms[i];
            fprintf(f, "  %-12s %-40s %12s  %s\n", t->component >= 0 ? mp_component_name(t->component) : "host",
                    t->name, mp_fmt_gib(t->bytes, a, sizeof a), t->formula);
        }
        fprintf(f, "\nmodel states  %s per GPU as the ZeRO paper counts them (2 + 2 + K bytes per trained\n"
                   "              parameter, sharded by the ZeRO stage); this stack keeps %s of weights,\n"
                   "              gradients and optimizer state at their own peaks\n",
                mp_fmt_gib(e->model_states_bytes, a, sizeof a),
                mp_fmt_gib(e->peak[MP_WEIGHTS] + e->peak[MP_GRADIENTS] + e->peak[MP_OPTIMIZER], b2, sizeof b2));
        fprintf(f, "\nstep timeline (allocated, per GPU)\n");
        for (int i = 0; i < e->nphases; i++)
            fprintf(f, "  %-16s %12s%s\n", e->phases[i].name, mp_fmt_gib(e->phases[i].total, a, sizeof a),
                    i == e->peak_phase ? "  <- peak" : "");
        fprintf(f, "  the optimizer state is allocated at the first step; from then on it stays resident\n");
    }
}

static json_t *settings_json(const cli *c, const mp_settings *s)
{
    char tg[64];
    json_t *o = json_object();
    json_object_set_new(o, "precision", json_string(mp_precision_name(s->precision)));
    json_object_set_new(o, "optimizer", json_string(mp_optimizer_name(s->optimizer)));
    json_object_set_new(o, "adam8-block", json_integer(s->adam8_block));
    json_object_set_new(o, "checkpointing", json_string(mp_ckpt_name(s->checkpointing)));
    json_object_set_new(o, "attention", json_string(mp_attention_name(s->attention)));
    json_object_set_new(o, "batch", json_integer(s->batch));
    json_object_set_new(o, "accum", json_integer(s->accum));
    json_object_set_new(o, "global-batch", json_integer(s->batch * s->accum * mp_dp_degree(s)));
    json_object_set_new(o, "seq", json_integer(s->seq));
    json_object_set_new(o, "previous-seq", json_integer(s->prev_seq < 0 ? s->seq : s->prev_seq));
    json_object_set_new(o, "ce", json_string(mp_ce_name(s->ce)));
    json_object_set_new(o, "ce-chunk", json_integer(s->ce_chunk));
    json_object_set_new(o, "lora-rank", json_integer(s->lora_rank));
    json_object_set_new(o, "lora-targets", json_string(mp_lora_targets_name(s->lora_targets, tg, sizeof tg)));
    json_object_set_new(o, "lora-dropout", json_real(s->lora_dropout));
    json_object_set_new(o, "quant", json_string(mp_quant_name(s->quant)));
    char release[32];
    json_object_set_new(o, "bitsandbytes",
                        s->bnb_version ? json_string(mp_version_name(s->bnb_version, release, sizeof release)) : json_null());
    json_object_set_new(o, "gpus", json_integer(s->gpus));
    json_object_set_new(o, "zero", json_integer(s->zero));
    json_object_set_new(o, "offload", json_string(mp_offload_name(s->offload)));
    json_object_set_new(o, "tp", json_integer(s->tp));
    json_object_set_new(o, "pp", json_integer(s->pp));
    json_object_set_new(o, "ep", json_integer(s->ep));
    json_object_set_new(o, "optimizer-impl", json_string(mp_step_impl_name(s->step_impl)));
    json_object_set_new(o, "optimizer-in-backward", json_boolean(s->optimizer_in_backward));
    json_object_set_new(o, "offload-activations", json_boolean(s->offload_activations));
    json_object_set_new(o, "compile", json_boolean(s->compile));
    json_object_set_new(o, "expandable-segments", json_boolean(s->expandable_segments));
    json_object_set_new(o, "loader", json_string(mp_loader_name(s->loader)));
    json_object_set_new(o, "shuffle-buffer", json_integer(s->shuffle_buffer));
    json_object_set_new(o, "dataset-size", json_real(s->dataset_bytes));
    json_object_set_new(o, "dropout", json_boolean(s->dropout));
    json_object_set_new(o, "framework", json_string(s->framework ? s->framework->name : "pytorch"));
    json_object_set_new(o, "task", json_string(task_of(s)));
    json_object_set_new(o, "method", json_string(mp_method_name(s->method)));
    json_object_set_new(o, "reference", json_string(mp_reference_name(mp_reference_used(s))));
    json_object_set_new(o, "logits", json_string(mp_logits_name(s->logits)));
    json_object_set_new(o, "checkpoint-every", json_integer(s->ckpt_every > 1 ? s->ckpt_every : 1));
    if (s->eval_batch > 0) json_object_set_new(o, "eval-batch", json_integer(s->eval_batch));
    if (mp_method_desc_of(s->method)->generates) {
        json_object_set_new(o, "generations", json_integer(s->generations));
        json_object_set_new(o, "prompt-len", json_integer(s->prompt_len));
        json_object_set_new(o, "completion-len", json_integer(s->completion_len));
        json_object_set_new(o, "rollout", json_string(mp_rollout_name(s->rollout)));
        json_object_set_new(o, "rollout-memory", json_real(mp_rollout_memory(s)));
        json_object_set_new(o, "rollout-sleep", json_boolean(s->rollout_sleep));
        json_object_set_new(o, "rollout-max-len", s->rollout_max_len > 0 ? json_integer(s->rollout_max_len) : json_null());
    }
    json_object_set_new(o, "headroom", json_real(c->headroom));
    json_object_set_new(o, "gpu", c->have_gpu ? json_string(c->gpu.name) : json_null());
    return o;
}

static json_t *bytes_json(double v) { return json_integer((json_int_t)llround(v)); }

/* A generating method's rollout (print_rollout_text's figures). */
static json_t *rollout_json(const cli *c, const mp_settings *s, const mp_estimate *e)
{
    json_t *r = json_object();
    json_object_set_new(r, "engine", json_string(mp_rollout_name(s->rollout)));
    json_object_set_new(r, "generation_rows", json_integer((json_int_t)e->rollout_rows));
    json_object_set_new(r, "kv_cache_bytes", bytes_json(e->rollout_cache_bytes));
    if (s->rollout == MP_ROLLOUT_VLLM) {
        json_object_set_new(r, "engine_bytes", bytes_json(e->rollout_engine_bytes));
        json_object_set_new(r, "engine_at_peak_bytes", bytes_json(e->rollout_bytes));
        json_object_set_new(r, "weights_and_activations_bytes", bytes_json(e->rollout_nonkv_bytes));
        json_object_set_new(r, "kv_cache_tokens", json_integer((json_int_t)fmax(0, rollout_kv_tokens(c, e, mp_rollout_memory(s)))));
        const double room = rollout_room(c, e);
        json_object_set_new(r, "largest_fraction", room >= 0.01 ? json_real(room) : json_null());
    }
    return r;
}

json_t *estimate_json(const cli *c, const mp_settings *s, const mp_estimate *e, bool fits);
json_t *estimate_json(const cli *c, const mp_settings *s, const mp_estimate *e, bool fits)
{
    json_t *o = json_object();
    json_object_set_new(o, "fits", c->have_gpu ? json_boolean(fits) : json_null());
    json_object_set_new(o, "budget_bytes", c->have_gpu ? bytes_json(c->gpu.mem_bytes) : json_null());
    json_object_set_new(o, "usable_bytes", c->have_gpu ? bytes_json(c->gpu.mem_bytes * (1 - c->headroom)) : json_null());
    json_object_set_new(o, "allocated_bytes", bytes_json(e->total_bytes));
    json_object_set_new(o, "reserved_bytes", bytes_json(e->reserved_bytes));
    json_object_set_new(o, "allocator_cache_bytes", bytes_json(e->allocator_cache_bytes));
    json_object_set_new(o, "device_bytes", bytes_json(e->device_bytes));
    json_object_set_new(o, "host_bytes", bytes_json(e->host_bytes));
    json_object_set_new(o, "host_data_bytes", bytes_json(e->host_data_bytes));
    json_object_set_new(o, "host_offload_bytes", bytes_json(e->host_offload_bytes));
    json_object_set_new(o, "host_baseline_bytes", bytes_json(e->host_baseline_bytes));
    json_object_set_new(o, "host_load_bytes", bytes_json(e->host_load_bytes));
    json_object_set_new(o, "host_train_bytes", bytes_json(e->host_train_bytes));
    json_object_set_new(o, "host_node_bytes", bytes_json(e->host_node_bytes));
    json_object_set_new(o, "host_ram_limit", c->host_ram > 0 ? json_boolean(e->host_node_bytes > c->host_ram) : json_null());
    json_object_set_new(o, "stack_note", c->stack_note[0] ? json_string(c->stack_note + strspn(c->stack_note, " ")) : json_null());
    json_object_set_new(o, "host_ram_limit_bytes", c->host_ram > 0 ? bytes_json(c->host_ram) : json_null());
    {
        char lim[160];
        json_object_set_new(o, "host_ram_limit_from",
                            c->host_ram > 0 ? json_string(host_limit_text(c, &c->gpu, lim, sizeof lim)) : json_null());
    }
    json_t *comp = json_object(), *atp = json_object();
    for (int k = 0; k < MP_NCOMP; k++) {
        json_object_set_new(comp, mp_component_name(k), bytes_json(e->peak[k]));
        json_object_set_new(atp, mp_component_name(k), bytes_json(e->at_peak[k]));
    }
    json_object_set_new(o, "components", comp);
    json_object_set_new(o, "at_peak", atp);
    json_object_set_new(o, "logits_bytes", bytes_json(e->logits_bytes));
    json_object_set_new(o, "reference_bytes", bytes_json(e->reference_bytes));
    if (mp_method_desc_of(s->method)->generates) {
        json_object_set_new(o, "rollout", rollout_json(c, s, e));
        /* the online methods' other models, each with its own bytes (the reference's above) */
        json_object_set_new(o, "reward_model_bytes", bytes_json(e->reward_model_bytes));
        json_object_set_new(o, "value_model_bytes", bytes_json(e->value_model_bytes));
    }
    json_object_set_new(o, "resident_bytes", bytes_json(e->resident_bytes));
    json_object_set_new(o, "peak_phase", json_string(e->phases[e->peak_phase].name));
    json_t *ph = json_array();
    for (int i = 0; i < e->nphases; i++) {
        json_t *p = json_object();
        json_object_set_new(p, "name", json_string(e->phases[i].name));
        json_object_set_new(p, "allocated_bytes", bytes_json(e->phases[i].total));
        json_array_append_new(ph, p);
    }
    json_object_set_new(o, "phases", ph);
    json_object_set_new(o, "params", json_integer((json_int_t)llround(e->params.total)));
    json_object_set_new(o, "active_params", json_integer((json_int_t)llround(e->params.active)));
    json_object_set_new(o, "trainable_params", json_integer((json_int_t)llround(e->trainable_params)));
    json_object_set_new(o, "tokens_per_s", json_real(round(e->tokens_per_s * 10) / 10));
    json_object_set_new(o, "step_seconds", json_real(e->step_seconds));
    json_object_set_new(o, "flops_per_step", json_real(e->flops_per_step));
    json_t *model = json_object();
    json_object_set_new(model, "name", json_string(c->model.name));
    json_object_set_new(model, "source", json_string(c->model_how));
    json_object_set_new(model, "layers", json_integer(c->model.layers));
    json_object_set_new(model, "hidden", json_integer(c->model.hidden));
    json_object_set_new(model, "heads", json_integer(c->model.heads));
    json_object_set_new(model, "kv-heads", json_integer(c->model.kv_heads));
    json_object_set_new(model, "ffn", json_integer(c->model.ffn));
    json_object_set_new(model, "vocab", json_integer(c->model.vocab));
    json_object_set_new(o, "model_states_bytes", bytes_json(e->model_states_bytes));
    json_object_set_new(o, "model", model);
    json_object_set_new(o, "settings", settings_json(c, s));
    if (c->explain) {
        json_t *terms = json_array();
        for (int i = 0; i < e->nterms; i++) {
            json_t *t = json_object();
            json_object_set_new(t, "component", json_string(e->terms[i].component >= 0 ? mp_component_name(e->terms[i].component) : "host"));
            json_object_set_new(t, "name", json_string(e->terms[i].name));
            json_object_set_new(t, "bytes", bytes_json(e->terms[i].bytes));
            json_object_set_new(t, "formula", json_string(e->terms[i].formula));
            json_array_append_new(terms, t);
        }
        json_object_set_new(o, "terms", terms);
    }
    return o;
}

void print_estimate_json(FILE *f, const cli *c, const mp_settings *s, const mp_estimate *e, bool fits,
                         const char *extra_json)
{
    json_t *o = estimate_json(c, s, e, fits);
    if (extra_json) {
        json_t *x = json_loads(extra_json, 0, NULL);
        if (x) json_object_update(o, x);
        json_decref(x);
    }
    json_dumpf(o, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
    fputc('\n', f);
    json_decref(o);
}

static const char *csv_cols[] = {
    "model", "task", "precision", "optimizer", "checkpointing", "attention", "batch", "accum",
    "seq", "ce", "lora-rank", "lora-targets", "quant", "gpus", "zero", "offload", "weights_bytes",
    "gradients_bytes", "optimizer_bytes", "activations_bytes", "overhead_bytes", "allocated_bytes",
    "reserved_bytes", "device_bytes",
    "host_bytes", "host_node_bytes", "budget_bytes", "fits", "tokens_per_s", "params", "trainable_params"};

static void csv_field(FILE *f, const char *v, int first)
{
    if (!first) fputc(',', f);
    csv_fwrite(f, v, strlen(v));
}

void print_csv_header(FILE *f)
{
    for (size_t i = 0; i < sizeof csv_cols / sizeof *csv_cols; i++) csv_field(f, csv_cols[i], i == 0);
    fputc('\n', f);
}

void print_csv_row(FILE *f, const cli *c, const mp_settings *s, const mp_estimate *e, bool fits)
{
    char v[64], tg[64];
    csv_field(f, c->model.name, 1);
    csv_field(f, task_of(s), 0);
    csv_field(f, mp_precision_name(s->precision), 0);
    csv_field(f, mp_optimizer_name(s->optimizer), 0);
    csv_field(f, mp_ckpt_name(s->checkpointing), 0);
    csv_field(f, mp_attention_name(s->attention), 0);
#define NUM(x) (snprintf(v, sizeof v, "%.0f", (double)(x)), v)
    csv_field(f, NUM(s->batch), 0);
    csv_field(f, NUM(s->accum), 0);
    csv_field(f, NUM(s->seq), 0);
    csv_field(f, mp_ce_name(s->ce), 0);
    csv_field(f, NUM(s->lora_rank), 0);
    csv_field(f, mp_lora_targets_name(s->lora_targets, tg, sizeof tg), 0);
    csv_field(f, mp_quant_name(s->quant), 0);
    csv_field(f, NUM(s->gpus), 0);
    csv_field(f, NUM(s->zero), 0);
    csv_field(f, mp_offload_name(s->offload), 0);
    for (int k = 0; k < MP_NCOMP; k++) csv_field(f, NUM(e->peak[k]), 0);
    csv_field(f, NUM(e->total_bytes), 0);
    csv_field(f, NUM(e->reserved_bytes), 0);
    csv_field(f, NUM(e->device_bytes), 0);
    csv_field(f, NUM(e->host_bytes), 0);
    csv_field(f, NUM(e->host_node_bytes), 0);
    csv_field(f, c->have_gpu ? NUM(c->gpu.mem_bytes) : "", 0);
    csv_field(f, c->have_gpu ? (fits ? "1" : "0") : "", 0);
    snprintf(v, sizeof v, "%.1f", e->tokens_per_s);
    csv_field(f, v, 0);
    csv_field(f, NUM(e->params.total), 0);
    csv_field(f, NUM(e->trainable_params), 0);
#undef NUM
    fputc('\n', f);
}

/* Plans that differ only in fp16 vs bf16 or paged vs not are one kind of plan:
 * the vocabulary's rows name each value's twin of the same memory. */
static int precision_class(mp_precision p) { return (int)mp_precision_desc_of(p)->same_memory_as; }
static int optimizer_class(mp_optimizer o) { return (int)mp_optimizer_desc_of(o)->same_memory_as; }
bool same_kind(const mp_settings *s, const mp_settings *t)
{
    return precision_class(s->precision) == precision_class(t->precision) &&
           optimizer_class(s->optimizer) == optimizer_class(t->optimizer) &&
           s->checkpointing == t->checkpointing && s->attention == t->attention && s->ce == t->ce &&
           s->quant == t->quant && (s->lora_rank > 0) == (t->lora_rank > 0) && s->zero == t->zero &&
           s->offload == t->offload;
}

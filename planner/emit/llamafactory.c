/* llamafactory.c — a LLaMA-Factory training YAML (llamafactory.yaml) for the
 * plans `llamafactory-cli train` runs as memplan estimated them, and the bundle
 * that starts it: the YAML, dataset_info.json, DeepSpeed's JSON when the plan
 * runs under DeepSpeed (the deepspeed target's file), launch.sh, README.txt.
 *
 * Keys and what LLaMA-Factory does with them: tests/data/engines/
 * llamafactory_config_keys.csv (hiyouga/LLaMA-Factory@ff6d4d12eeb0, defaults as
 * @000526908ae9; lines cited are @000526908ae9's). The YAML says every value
 * the plan assumed and nothing else that changes memory; memplan check reads it
 * back (planner/check/llamafactory.c) to the same plan. The run:
 *   stage pt over plain text: packing is then on (hparams/parser.py:462) and
 *   every row is cutoff_len tokens (data/processor/pretrain.py:39-48), the B x T
 *   the plan counted; the model loads in its checkpoint's dtype (model/loader.py:160)
 *   and the trained weights are upcast to fp32 unless pure_bf16 (model/adapter.py:
 *   341-353): full fine-tuning is amp, pure bf16 or DeepSpeed's mixed precision,
 *   LoRA is a 16-bit base with fp32 adapters; llamafactory-cli starts torchrun
 *   for several GPUs and for DeepSpeed (FORCE_TORCHRUN=1, examples/README.md:112,
 *   158) with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (launcher.py:60-82). */
#include "emitters.h"
#include "common/errors.h"
#include "common/units.h"
#include "model/family.h"
#include "model/model.h"
#include "profiles/framework.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"

#include <stdio.h>
#include <string.h>

/* The precisions a LLaMA-Factory run has, by what it trains and under which
 * engine: the 16-bit flag (bf16, fp16) and pure_bf16. */
typedef struct lf_precision {
    const char *flag;   /* "bf16", "fp16" or NULL */
    bool pure;          /* pure_bf16: true */
} lf_precision;

/* The flag and pure_bf16 for the plan's precision, or false: LLaMA-Factory has no such run. */
static bool lf_precision_of(const mp_settings *s, bool deepspeed, lf_precision *p)
{
    *p = (lf_precision){0};
    switch (s->precision) {
    case MP_FP32: return s->lora_rank == 0; /* LoRA's base is the checkpoint's 16 bits */
    case MP_AMP_BF16: p->flag = "bf16"; return s->lora_rank == 0 && !deepspeed;
    case MP_AMP_FP16: p->flag = "fp16"; return s->lora_rank == 0 && !deepspeed;
    /* LoRA: a 16-bit base and fp32 adapters; full: DeepSpeed's 16-bit weights with fp32 masters */
    case MP_MIXED_BF16: p->flag = "bf16"; return s->lora_rank > 0 || deepspeed;
    case MP_MIXED_FP16: p->flag = "fp16"; return s->lora_rank > 0 || deepspeed;
    case MP_PURE_BF16: p->pure = true; return s->lora_rank == 0 && !deepspeed;
    default: return false;
    }
}

/* TrainingArguments' optim for the plan's optimizer and step (hf.c's words,
 * transformers training_args.py OptimizerNames), or NULL: none says it. */
static const char *lf_optim(const mp_settings *s)
{
    const char *o = emit_hf_optim(s->optimizer);
    if (!o || s->optimizer == MP_SGD_MOMENTUM) return NULL; /* "sgd" has no momentum */
    if (s->optimizer == MP_ADAMW && s->step_impl == MP_STEP_FUSED) return "adamw_torch_fused";
    if (s->step_impl != MP_STEP_FOREACH) return NULL;
    return o;
}

/* Whether the plan runs through torchrun (several GPUs, or DeepSpeed). */
static bool lf_torchrun(const emit_engine *e) { return e->kind == EMIT_DEEPSPEED || e->procs > 1; }

/* lora_target: "all" where LLaMA-Factory's rule (every nn.Linear leaf but lm_head,
 * model/model_utils/misc.py:28-52) gives exactly the plan's modules, else their
 * names (PEFT matches a suffix); NULL with err when neither says them. */
static const char *lf_targets(const mp_model *m, const mp_settings *s, char *buf, size_t len, char *err)
{
    const mp_family *f = emit_family_of(m);
    const char *type = f ? f->model_type : m->family;
    /* GPT-NeoX's head is embed_out, which "all" takes too; GPT-2's layers are Conv1D, which it does not */
    unsigned all = !strcmp(type, "gpt_neox") ? MP_LORA_ALL | MP_LORA_HEAD : MP_LORA_ALL;
    bool all_says_it = s->lora_targets == all && strcmp(type, "gpt2") && m->experts == 0; /* not a router */
    if (all_says_it) return snprintf(buf, len, "all"), buf;
    if (!f) {
        snprintf(err, MP_ERR_LEN, "memplan has no module names for model_type '%.40s': only --lora-targets all "
                 "(LLaMA-Factory's lora_target all) can be written", m->family);
        return NULL;
    }
    if (s->lora_targets & MP_LORA_HEAD) {
        snprintf(err, MP_ERR_LEN, "a LoRA adapter on the head: LLaMA-Factory's lora_target all leaves lm_head out "
                 "(model/model_utils/misc.py:31); drop head from --lora-targets");
        return NULL;
    }
    const char *mods[MP_LORA_NROLES];
    int n = mp_family_targets(f, s->lora_targets, mods);
    size_t o = 0;
    buf[0] = 0;
    for (int i = 0; i < n && o < len; i++) o += (size_t)snprintf(buf + o, len - o, "%s%s", i ? "," : "", mods[i]);
    if (!n || o >= len) {
        snprintf(err, MP_ERR_LEN, "the plan's LoRA modules have no names in memplan's table for %s", f->model_type);
        return NULL;
    }
    return buf;
}

#define REFUSE(...) do { snprintf(err, MP_ERR_LEN, __VA_ARGS__); return -1; } while (0)

/* What LLaMA-Factory cannot run as the plan was estimated. */
static int check_llamafactory(const mp_model *m, const mp_settings *s, char *err)
{
    emit_engine e;
    if (emit_engine_of(s, &e, err)) return -1;
    const bool ds = e.kind == EMIT_DEEPSPEED;
    if (e.kind == EMIT_FSDP)
        REFUSE("--emit llamafactory shards through DeepSpeed, and this plan was estimated as FSDP (zero %d over %lld "
               "GPUs): give --framework deepspeed", s->zero, (long long)s->gpus);
    /* memplan check estimates a LLaMA-Factory run with its profile, a DeepSpeed one with DeepSpeed's */
    const char *want = ds ? "deepspeed" : "llamafactory";
    const mp_framework *fw = settings_framework(s);
    if (strcmp(fw->name, want))
        REFUSE("--emit llamafactory writes a plan estimated as %s: give --framework %s (the plan has framework "
               "'%.40s')", ds ? "DeepSpeed runs it (its engine holds the weights)" : "LLaMA-Factory runs it", want,
               fw->name);
    if (s->ep > 1) REFUSE("LLaMA-Factory's Trainer has no expert parallelism (--ep %lld)", (long long)s->ep);
    lf_precision p;
    if (!lf_precision_of(s, ds, &p)) {
        if (s->lora_rank)
            REFUSE("precision '%s' has no LLaMA-Factory form for LoRA: the base stays in the checkpoint's 16 bits "
                   "and the adapters are upcast to fp32 (model/adapter.py:314-316): use mixed-bf16 or mixed-fp16",
                   mp_precision_name(s->precision));
        REFUSE("precision '%s' has no LLaMA-Factory form for full fine-tuning %s: %s", mp_precision_name(s->precision),
               ds ? "under DeepSpeed" : "without DeepSpeed",
               ds ? "DeepSpeed keeps 16-bit weights with fp32 masters (mixed-bf16, mixed-fp16) or fp32"
                  : "the trained weights are upcast to fp32 (amp-bf16, amp-fp16, fp32) or kept in bf16 by "
                    "pure_bf16 (pure-bf16); fp32 masters need --framework deepspeed");
    }
    if (!lf_optim(s))
        REFUSE("optimizer '%s' with a %s step has no TrainingArguments optim that LLaMA-Factory passes on",
               mp_optimizer_name(s->optimizer), mp_step_impl_name(s->step_impl));
    if (mp_optimizer_desc_of(s->optimizer)->low_bit && s->adam8_block != 256)
        REFUSE("transformers builds its 8- and 4-bit optimizers with blocks of 256, not %lld", (long long)s->adam8_block);
    const mp_family *f = emit_family_of(m);
    if (s->attention == MP_ATTN_FLASH && f && !f->sdpa)
        REFUSE("attention 'flash' needs SDPA, which %s's modeling file does not declare: use --attention eager",
               f->model_type);
    if (s->checkpointing == MP_CKPT_SELECTIVE)
        REFUSE("checkpointing 'selective' has no LLaMA-Factory form: it checkpoints whole layers "
               "(model/model_utils/checkpointing.py:164-178; use --checkpointing full or none)");
    if (s->ce == MP_CE_CHUNKED)
        REFUSE("LLaMA-Factory's loss is the model's own over the whole logits: use --ce full");
    if (s->quant != MP_QUANT_NONE && !mp_quant_desc_of(s->quant)->bitsandbytes)
        REFUSE("quant '%s' is a pre-quantised checkpoint's: memplan writes LLaMA-Factory's on-the-fly bitsandbytes "
               "(quantization_bit) only", mp_quant_name(s->quant));
    if (s->bnb_version)
        REFUSE("the bitsandbytes release is the environment's, not the config's: plan without --bitsandbytes");
    if (s->loader != MP_LOAD_MEMORY)
        REFUSE("loader '%s' has no LLaMA-Factory form here: the bundle reads its text file whole", mp_loader_name(s->loader));
    if (s->dropout) REFUSE("--dropout has no LLaMA-Factory key: the model's own config decides its dropout");
    if (s->prev_seq != -1 && s->prev_seq != s->seq)
        REFUSE("--previous-seq is LitGPT's loop: LLaMA-Factory's Trainer keeps nothing of the step before");
    if (s->lora_rank) {
        char buf[256];
        if (!lf_targets(m, s, buf, sizeof buf, err)) return -1;
    }
    /* torchrun sets the allocator; one process keeps PyTorch's default (launcher.py:60-82) */
    if (s->expandable_segments != lf_torchrun(&e))
        REFUSE("%s", lf_torchrun(&e)
                         ? "llamafactory-cli starts torchrun for this plan, which sets "
                           "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (launcher.py:80-82): plan with "
                           "--expandable-segments"
                         : "llamafactory-cli runs one GPU in one process, on PyTorch's default allocator: plan "
                           "without --expandable-segments");
    return 0;
}

/* ---------- the YAML ---------- */

static void lf_summary(sbuf *b, const mp_plan *pl, const emit_engine *e)
{
    const mp_model *m = pl->m;
    const mp_settings *s = pl->s;
    lf_precision p;
    lf_precision_of(s, e->kind == EMIT_DEEPSPEED, &p);
    const mp_family *f = emit_family_of(m);
    sbuf_put(b, "# LLaMA-Factory config written by memplan for %s (%s).\n", EMIT_TEXT(m->name), EMIT_TEXT(m->family));
    sbuf_put(b, "# The plan it runs (llamafactory-cli train; stage pt, every row cutoff_len tokens):\n");
    sbuf_put(b, "#   precision      %s (%s)\n", mp_precision_name(s->precision),
             p.pure ? "pure_bf16: bf16 weights, no fp32 copy, no autocast"
             : e->kind == EMIT_DEEPSPEED && p.flag ? "DeepSpeed's 16-bit weights with fp32 masters"
             : s->lora_rank ? "the checkpoint's 16-bit base, fp32 adapters, autocast"
             : p.flag ? "the weights upcast to fp32, 16-bit autocast" : "fp32");
    sbuf_put(b, "#   optimizer      %s (optim: %s)\n", mp_optimizer_name(s->optimizer), lf_optim(s));
    sbuf_put(b, "#   checkpointing  %s\n", mp_ckpt_name(s->checkpointing));
    sbuf_put(b, "#   attention      %s (flash_attn: %s)\n", mp_attention_name(s->attention),
             s->attention == MP_ATTN_FLASH ? "sdpa" : "disabled");
    sbuf_put(b, "#   loss           the model's own cross-entropy over the whole logits\n");
    if (s->lora_rank) {
        char tg[64];
        sbuf_put(b, "#   LoRA           rank %lld on %s, dropout %g, base %s\n", (long long)s->lora_rank,
                 mp_lora_targets_name(s->lora_targets, tg, sizeof tg), (double)s->lora_dropout,
                 mp_quant_name(s->quant));
    }
    if (e->kind == EMIT_DEEPSPEED)
        sbuf_put(b, "#   DeepSpeed ZeRO-%d over %lld GPU(s) (ds_config.json), offload %s\n", e->stage,
                 (long long)e->procs, mp_offload_name(s->offload));
    else sbuf_put(b, "#   %lld GPU(s)%s\n", (long long)e->procs, e->procs > 1 ? ", DDP under torchrun" : "");
    sbuf_put(b, "#   micro-batch %lld, accumulation %lld, sequence %lld%s%s\n", (long long)s->batch, (long long)s->accum,
             (long long)s->seq, s->compile ? ", compiled" : "",
             s->expandable_segments ? ", expandable segments (torchrun's)" : "");
    sbuf_put(b, "# Predicted peak per GPU: %.2f GiB allocated, %.2f GiB reserved, %.2f GiB on the device (nvidia-smi).\n",
             pl->e->total_bytes / MP_GiB, pl->e->reserved_bytes / MP_GiB, pl->e->device_bytes / MP_GiB);
    if (!f)
        sbuf_put(b, "# NOTE: memplan has no table row for model_type '%s': check the model's attention support.\n",
                 EMIT_TEXT(m->family));
}

static void lf_run_line(sbuf *b, const emit_engine *e)
{
    char env[64] = "";
    if (lf_torchrun(e)) snprintf(env, sizeof env, "FORCE_TORCHRUN=1 NPROC_PER_NODE=%lld ", (long long)e->procs);
    sbuf_put(b, "# Run: bash launch.sh DATA_FILE (the bundle), or, beside dataset_info.json and train.txt:\n"
                "#   %s%sllamafactory-cli train llamafactory.yaml\n\n",
             e->procs > 1 ? "" : "CUDA_VISIBLE_DEVICES=0 ", env);
}

/* A Python float as YAML reads one: 0.0, 0.05 */
static void put_float(sbuf *b, double v)
{
    char t[32];
    snprintf(t, sizeof t, "%g", v);
    if (!strpbrk(t, ".e")) strcat(t, ".0");
    sbuf_put(b, "%s", t);
}

static void write_llamafactory(sbuf *b, const mp_plan *pl)
{
    const mp_model *m = pl->m;
    const mp_settings *s = pl->s;
    emit_engine e;
    char err[MP_ERR_LEN];
    if (emit_engine_of(s, &e, err)) return sbuf_fail(b, "%s", err);
    const bool ds = e.kind == EMIT_DEEPSPEED;
    lf_precision p;
    if (!lf_precision_of(s, ds, &p)) return sbuf_fail(b, "precision '%s' has no LLaMA-Factory form",
                                                      mp_precision_name(s->precision));
    const mp_family *f = emit_family_of(m);
    lf_summary(b, pl, &e);
    lf_run_line(b, &e);

    sbuf_put(b, "### model\nmodel_name_or_path: ");
    if (m->hf_id[0]) put_yaml_str(b, "the model's Hub id", m->hf_id);
    else sbuf_put(b, "\"path/to/model\"  # memplan has no Hub id for %s: put its id or local folder here",
                  EMIT_TEXT(m->name));
    sbuf_put(b, "\n");
    if (f && f->remote_code) sbuf_put(b, "trust_remote_code: true\n");
    sbuf_put(b, "flash_attn: %s\n", s->attention == MP_ATTN_FLASH ? "sdpa" : "disabled");
    sbuf_put(b, "disable_gradient_checkpointing: %s\n", s->checkpointing == MP_CKPT_NONE ? "true" : "false");
    if (s->quant != MP_QUANT_NONE) {
        const mp_quant_desc *qd = mp_quant_desc_of(s->quant);
        sbuf_put(b, "quantization_bit: %d\nquantization_method: bnb\n", qd->bits);
        if (qd->bits == 4) sbuf_put(b, "double_quantization: %s\n", qd->double_quant ? "true" : "false");
    }

    sbuf_put(b, "\n### method\nstage: pt\ndo_train: true\nfinetuning_type: %s\n", s->lora_rank ? "lora" : "full");
    if (s->lora_rank) {
        char targets[256];
        if (!lf_targets(m, s, targets, sizeof targets, err)) return sbuf_fail(b, "%s", err);
        sbuf_put(b, "lora_rank: %lld\nlora_dropout: ", (long long)s->lora_rank);
        put_float(b, (double)s->lora_dropout);
        sbuf_put(b, "\nlora_target: %s\n", targets);
    }
    sbuf_put(b, "pure_bf16: %s\n", p.pure ? "true" : "false");
    if (ds) sbuf_put(b, "deepspeed: ds_config.json\n");

    /* the bundle's dataset_info.json names it; stage pt packs it (parser.py:462: packing
     * left unset, so cutoff_len is not cut by one as data_args.py:182-183 would) */
    sbuf_put(b, "\n### dataset\ndataset: memplan_text\ndataset_dir: .\ncutoff_len: %lld\n", (long long)s->seq);

    sbuf_put(b, "\n### output\noutput_dir: out\nlogging_steps: 10\nreport_to: none\n");

    sbuf_put(b, "\n### train\nper_device_train_batch_size: %lld\ngradient_accumulation_steps: %lld\n"
                "learning_rate: %s\nmax_steps: 1000\noptim: %s\nbf16: %s\nfp16: %s\ntorch_compile: %s\n",
             (long long)s->batch, (long long)s->accum, s->lora_rank ? "1.0e-4" : "1.0e-5", lf_optim(s),
             p.flag && !strcmp(p.flag, "bf16") ? "true" : "false", p.flag && !strcmp(p.flag, "fp16") ? "true" : "false",
             s->compile ? "true" : "false");
}

/* LLaMA-Factory finds a dataset by name in dataset_dir/dataset_info.json; a
 * text file's rows are its "text" column, read as the prompt
 * (data/dataset_info.json's c4_demo; data/loader.py:73-89: a .txt is datasets' text loader). */
static void write_dataset_info(sbuf *b, const mp_plan *pl)
{
    (void)pl;
    sbuf_put(b, "{\n  \"memplan_text\": {\n    \"file_name\": \"train.txt\",\n"
                "    \"columns\": {\n      \"prompt\": \"text\"\n    }\n  }\n}\n");
}

/* launch.sh: the data file linked where dataset_info.json names it, then
 * llamafactory-cli train with the launcher's environment the plan assumed. */
static void write_launch(sbuf *b, const mp_plan *pl)
{
    const mp_model *m = pl->m;
    const mp_settings *s = pl->s;
    emit_engine e;
    char err[MP_ERR_LEN];
    if (emit_engine_of(s, &e, err)) return sbuf_fail(b, "%s", err);
    sbuf_put(b, "#!/usr/bin/env bash\n");
    lf_summary(b, pl, &e);
    sbuf_put(b, "# usage: bash launch.sh DATA_FILE [KEY=VALUE ...]\n"
                "#   DATA_FILE: plain text, one example a line; KEY=VALUE: llamafactory-cli's overrides\n"
                "#   (max_steps=200 learning_rate=2e-5; no spaces: its torchrun splits on them)\n"
                "set -eu\n"
                "USAGE=\"usage: bash launch.sh DATA_FILE [KEY=VALUE ...]\"\n"
                "DATA=\"${1:?$USAGE}\"\n"
                "HERE=\"$(CDPATH='' cd -- \"$(dirname -- \"$0\")\" && pwd)\"\n"
                "if [ ! -f \"$DATA\" ]; then echo \"launch.sh: no file '$DATA'\" >&2; exit 2; fi\n"
                "DATA=\"$(CDPATH='' cd -- \"$(dirname -- \"$DATA\")\" && pwd)/$(basename -- \"$DATA\")\"\n"
                "# dataset_info.json names memplan_text train.txt, in dataset_dir (the bundle)\n"
                "ln -sfn -- \"$DATA\" \"$HERE/train.txt\"\n"
                "cd \"$HERE\"\n");
    int before = mp_quant_desc_of(s->quant)->bnb_keeps_input_before;
    if (s->quant != MP_QUANT_NONE && m->stored_quant == MP_QUANT_NONE && before > 0) {
        char release[32];
        mp_version_name(before, release, sizeof release);
        sbuf_put(b, "# bitsandbytes before %s keeps every 4-bit layer's input for the backward: more than planned\n"
                    "python3 -c 'import sys; from importlib.metadata import version; from packaging.version import "
                    "Version; sys.exit(Version(version(\"bitsandbytes\")) < Version(\"%s\"))' || {\n"
                    "    echo \"launch.sh: this plan assumed bitsandbytes >= %s\" >&2; exit 2; }\n",
                 release, release, release);
    }
    /* the launcher reads these (extras/misc.py:231-233 is_env_enabled): none but the plan's */
    sbuf_put(b, "export USE_RAY=0 USE_KT=0 USE_MCA=0 USE_V1=0\n");
    if (lf_torchrun(&e))
        sbuf_put(b, "# torchrun, one process per GPU, with expandable segments (launcher.py:60-82)\n"
                    "export FORCE_TORCHRUN=1 NNODES=1 NPROC_PER_NODE=%lld OPTIM_TORCH=1\n", (long long)e.procs);
    else
        sbuf_put(b, "# one process on one GPU: llamafactory-cli starts torchrun on every visible GPU otherwise\n"
                    "# (launcher.py:60-61), and PyTorch's default allocator\n"
                    "export FORCE_TORCHRUN=0\n"
                    "CUDA_VISIBLE_DEVICES=\"${CUDA_VISIBLE_DEVICES:-0}\"\n"
                    "export CUDA_VISIBLE_DEVICES=\"${CUDA_VISIBLE_DEVICES%%%%,*}\"\n"
                    "unset PYTORCH_CUDA_ALLOC_CONF\n");
    sbuf_put(b, "exec llamafactory-cli train llamafactory.yaml \"${@:2}\"\n");
}

static int bundle_llamafactory(const mp_plan *pl, emit_file out[EMIT_MAX_FILES], char *err)
{
    emit_engine e;
    if (emit_engine_of(pl->s, &e, err)) return -1;
    int n = 0;
    out[n++] = emit_target_llamafactory.file;
    out[n++] = (emit_file){"dataset_info.json", write_dataset_info, 0644};
    if (e.kind == EMIT_DEEPSPEED) {
        if (mp_emit_check(&emit_target_deepspeed, pl->m, pl->s, err)) return -1;
        out[n++] = emit_target_deepspeed.file;
    }
    out[n++] = (emit_file){"launch.sh", write_launch, 0755};
    return n;
}

/* What a reader needs before the first run, then the plan. */
static void readme_llamafactory(sbuf *b, const mp_plan *pl)
{
    const mp_settings *s = pl->s;
    emit_engine e;
    char err[MP_ERR_LEN];
    if (emit_engine_of(s, &e, err)) return sbuf_fail(b, "%s", err);
    sbuf_put(b, "memplan's LLaMA-Factory bundle for %s: it trains what the plan below assumed, and nothing else.\n\n",
             EMIT_TEXT(pl->m->name));
    sbuf_put(b, "RUN\n  bash launch.sh DATA_FILE [KEY=VALUE ...]\n"
                "  It needs LLaMA-Factory (llamafactory-cli)%s%s. KEY=VALUE are llamafactory-cli's overrides\n"
                "  (max_steps=200 learning_rate=2e-5 output_dir=run1), without spaces.\n\n",
             s->quant != MP_QUANT_NONE ? " with bitsandbytes" : "", e.kind == EMIT_DEEPSPEED ? " and deepspeed" : "");
    sbuf_put(b, "DATA\n  DATA_FILE is plain text, one example a line. launch.sh links it as train.txt, which\n"
                "  dataset_info.json names memplan_text; stage pt joins the lines and cuts them into rows of\n"
                "  %lld tokens (cutoff_len), so every step sees the micro-batch and sequence the plan counted.\n"
                "  To fine-tune on instructions instead, register your dataset in dataset_info.json and set\n"
                "  stage: sft with packing: true (rows of cutoff_len tokens, padded to a multiple of 8).\n\n",
             (long long)s->seq);
    emit_readme_model(b, pl->m, "llamafactory.yaml", "model_name_or_path");
    sbuf_put(b, "WHAT TO CHANGE\n  max_steps, learning_rate, output_dir and the data change nothing the plan counted. The\n"
                "  micro-batch, accumulation, cutoff_len, precision, optimizer, checkpointing, attention, LoRA,\n"
                "  quantisation, DeepSpeed's config and the GPU count are the plan's: to change one, plan again\n"
                "  with memplan and write a new bundle, so that the prediction below stays true. memplan check\n"
                "  llamafactory.yaml%s --gpus %lld --gpu GPU reads it back to the same plan.\n\n"
                "THE PLAN\n",
             e.kind == EMIT_DEEPSPEED ? " ds_config.json" : "", (long long)e.procs);
    lf_summary(b, pl, &e);
}

/* torchrun sets expandable segments: the plans the search tries run with them */
static void launcher_llamafactory(mp_settings *s)
{
    emit_engine e;
    char err[MP_ERR_LEN];
    if (!emit_engine_of(s, &e, err)) s->expandable_segments = lf_torchrun(&e);
}

const mp_emit_target emit_target_llamafactory = {
    .name = "llamafactory", .file = {"llamafactory.yaml", write_llamafactory, 0644}, .check = check_llamafactory,
    .bundle = bundle_llamafactory, .readme = readme_llamafactory, .framework = "llamafactory",
    .launcher = launcher_llamafactory,
};

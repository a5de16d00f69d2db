/* torchtune.c — a torchtune recipe config (torchtune.yaml) and the `tune run`
 * that starts it (launch.sh), for the plans torchtune's recipes run as memplan
 * estimated them: the optimizer step fused into the backward and activations
 * offloaded to the host among them, which no other target has.
 *
 * The keys are those the recipes read (full_finetune_single_device,
 * lora_finetune_single_device, full_finetune_distributed,
 * lora_finetune_distributed), tabulated with their commits in
 * tests/data/engines/torchtune_config_keys.csv; the README beside it has the
 * constraints checked here. The chunked loss is CEWithChunkedOutputLoss, whose
 * model returns every chunk's logits (the torchtune profile's ce_output_chunks),
 * as the released recipes wire it (torchtune 0.6, the last release, and the
 * README that published the profile's table). On main, LinearCrossEntropyLoss
 * replaced it in May 2025 (pytorch/torchtune PR #2667 "Re-refactor Linear Loss";
 * issue #2688): its memory is not modelled, and launch.sh warns on such a torchtune. */
#include "emit/torchtune_models.h"
#include "emitters.h"
#include "profiles/framework.h"
#include "common/errors.h"
#include "common/units.h"
#include "model/model.h"
#include "profiles/profiles.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"

#include <stdio.h>
#include <string.h>

/* torchtune's words for the plan's values: its dtypes (the recipes train in
 * "bf16" or "fp32" only, with no autocast and no fp32 masters; fp16 raises:
 * tests/data/engines/torchtune_config_keys.README.txt), and each optimizer's
 * _component_: torch.optim's classes, bitsandbytes' as bitsandbytes/optim/__init__.py
 * exports them (bitsandbytes-foundation/bitsandbytes@1b8772a8f33f: AdamW8bit,
 * PagedAdamW32bit, PagedAdamW8bit, Lion32bit), torchao's low-bit AdamW at the path
 * torchtune's memory tutorial gives (pytorch/torchtune@d1c6963e9070
 * docs/source/tutorials/memory_optimizations.rst: torchao.prototype.low_bit_optim.AdamW8bit),
 * block_size its constructor's (pytorch/ao@0b05caa18e67 torchao/prototype/low_bit_optim/adam.py).
 * NULL: no form. */
static const char *const tt_dtypes[MP_NPRECISION] = {[MP_FP32] = "fp32", [MP_PURE_BF16] = "bf16"};
static const char *const tt_optimizers[MP_NOPTIMIZER] = {
    [MP_ADAMW] = "torch.optim.AdamW", [MP_ADAMW_8BIT] = "bitsandbytes.optim.AdamW8bit",
    [MP_PAGED_ADAMW] = "bitsandbytes.optim.PagedAdamW32bit", [MP_PAGED_ADAMW_8BIT] = "bitsandbytes.optim.PagedAdamW8bit",
    [MP_SGD] = "torch.optim.SGD", [MP_SGD_MOMENTUM] = "torch.optim.SGD", [MP_LION] = "bitsandbytes.optim.Lion32bit",
    [MP_ADAMW_8BIT_TORCHAO] = "torchao.prototype.low_bit_optim.AdamW8bit",
    [MP_ADAMW_4BIT_TORCHAO] = "torchao.prototype.low_bit_optim.AdamW4bit",
};

static bool distributed(const mp_settings *s) { return s->gpus > 1; }

/* A DPO plan (settings.c allows no other method under torchtune): the recipes
 * of pytorch/torchtune@bd2a0fc7c314 (tests/data/engines/torchtune_dpo.csv),
 * which torchtune 0.6 has too. */
static bool dpo(const mp_settings *s) { return s->method == MP_METHOD_DPO; }

static const char *recipe_of(const mp_settings *s)
{
    if (dpo(s)) return s->lora_rank ? (distributed(s) ? "lora_dpo_distributed" : "lora_dpo_single_device")
                                    : "full_dpo_distributed";
    if (s->lora_rank) return distributed(s) ? "lora_finetune_distributed" : "lora_finetune_single_device";
    return distributed(s) ? "full_finetune_distributed" : "full_finetune_single_device";
}

static const char *py_bool(bool v) { return v ? "True" : "False"; }

/* The builder the plan takes: the full model's, or the LoRA one (QLoRA's own where
 * there is one; else the LoRA builder quantises its base: yaml_model's quantize_base). */
static const char *builder_of(const tt_model *t, const mp_settings *s)
{
    if (!s->lora_rank) return t->builder;
    return s->quant != MP_QUANT_NONE && t->qlora_builder ? t->qlora_builder : t->lora_builder;
}

/* "llama2, llama3, ..." for the refusal of a model without a builder */
static void package_list(char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = 0;
    for (int i = 0; tt_model_at(i) && o < len; i++)
        if (!i || strcmp(tt_model_at(i)->package, tt_model_at(i - 1)->package))
            o += (size_t)snprintf(buf + o, len - o, "%s%s", i ? ", " : "", tt_model_at(i)->package);
}

#define REFUSE(...) do { snprintf(err, MP_ERR_LEN, __VA_ARGS__); return -1; } while (0)

/* What the recipes cannot run, or would run otherwise than the estimate counted. */
static int check_numerics(const mp_settings *s, char *err)
{
    const mp_precision_desc *pd = mp_precision_desc_of(s->precision);
    if (!tt_dtypes[s->precision])
        REFUSE("precision '%s' has no torchtune form: its recipes train every weight in bf16 or fp32, with no "
               "autocast and no fp32 master copy (use pure-bf16 or fp32)", pd->v.name);
    const mp_optimizer_desc *od = mp_optimizer_desc_of(s->optimizer);
    if (!tt_optimizers[s->optimizer]) REFUSE("optimizer '%s' has no torchtune config in memplan", od->v.name);
    if (s->attention != MP_ATTN_FLASH)
        REFUSE("attention '%s' has no torchtune form: its attention runs through SDPA (use --attention flash)",
               mp_attention_name(s->attention));
    if (s->checkpointing == MP_CKPT_SELECTIVE)
        REFUSE("checkpointing 'selective' has no torchtune form: its recipes checkpoint whole layers "
               "(enable_activation_checkpointing; use --checkpointing full or none)");
    if (s->quant != MP_QUANT_NONE && s->quant != MP_QUANT_NF4_DQ)
        REFUSE("quant '%s' has no torchtune form: its QLoRA base is torchao's NF4 with quantised scales "
               "(use --quant nf4-dq)", mp_quant_name(s->quant));
    if (s->loader != MP_LOAD_MEMORY)
        REFUSE("loader '%s' has no torchtune form: its recipes read map-style datasets (use --loader memory)",
               mp_loader_name(s->loader));
    return 0;
}

static int check_lora(const tt_model *t, const mp_settings *s, char *err)
{
    if (!s->lora_rank) return 0;
    unsigned mlp = s->lora_targets & MP_LORA_MLP;
    if (mlp && mlp != MP_LORA_MLP)
        REFUSE("torchtune puts LoRA on all of the MLP or none of it (apply_lora_to_mlp): the plan's "
               "--lora-targets has only part of gate, up, down");
    if ((s->lora_targets & MP_LORA_HEAD) && !t->output_lora)
        REFUSE("torchtune's %s builder takes no LoRA on the output head%s", t->lora_builder,
               t->output_arg ? " (the embedding is tied to it)" : "");
    if (s->optimizer_in_backward)
        REFUSE("torchtune's LoRA recipes have no optimizer_in_bwd: drop --optimizer-in-backward");
    return 0;
}

static int check_parallel(const mp_settings *s, char *err)
{
    if (s->tp > 1 || s->pp > 1 || s->ep > 1)
        REFUSE("memplan writes torchtune's data-parallel FSDP recipes only, not tp %lld, pp %lld, ep %lld",
               (long long)s->tp, (long long)s->pp, (long long)s->ep);
    if (!distributed(s)) {
        if (s->zero > 0 || s->offload != MP_OFFLOAD_NONE)
            REFUSE("torchtune's single-device recipes shard nothing and offload no weights or state "
                   "(zero %d, offload '%s')", s->zero, mp_offload_name(s->offload));
        return 0;
    }
    if (s->zero < 2)
        REFUSE("torchtune's distributed recipes shard with FSDP: give --zero 3 (reshard after forward) "
               "or 2 (keep the gathered weights), not %d", s->zero);
    if (s->offload == MP_OFFLOAD_OPTIMIZER)
        REFUSE("torchtune's fsdp_cpu_offload moves parameters, gradients and optimizer state together: "
               "use --offload params with --zero 3");
    if (s->offload == MP_OFFLOAD_PARAMS && s->zero != 3)
        REFUSE("fsdp_cpu_offload needs the weights sharded: --zero 3 with --offload params");
    return 0;
}

static int check_torchtune(const mp_model *m, const mp_settings *s, char *err)
{
    const mp_framework *fw = settings_framework(s);
    if (strncmp(fw->name, "torchtune", 9))
        REFUSE("--emit torchtune writes a plan estimated as torchtune runs it: give --framework torchtune "
               "(the plan has framework '%s')", fw->name);
    const tt_model *t = tt_model_of(m);
    if (!t) {
        char list[160];
        package_list(list, sizeof list);
        /* one whole line: without the builders where they would not fit */
        if (snprintf(err, MP_ERR_LEN, "no torchtune builder memplan knows has the shape of '%.40s' (%lld layers, "
                     "hidden %lld, vocab %lld; builders: torchtune.models' %s)", m->name, (long long)m->layers,
                     (long long)m->hidden, (long long)m->vocab, list) >= MP_ERR_LEN)
            snprintf(err, MP_ERR_LEN, "no torchtune builder memplan knows has the shape of '%.40s' (%lld layers, "
                     "hidden %lld, vocab %lld)", m->name, (long long)m->layers, (long long)m->hidden,
                     (long long)m->vocab);
        return -1;
    }
    if (check_numerics(s, err) || check_lora(t, s, err) || check_parallel(s, err)) return -1;
    if (s->method != MP_METHOD_SFT && !dpo(s))
        REFUSE("torchtune's preference recipes train DPO only: --method %s has no recipe", mp_method_name(s->method));
    if (dpo(s) && !s->lora_rank && !distributed(s))
        REFUSE("torchtune's full DPO recipe is full_dpo_distributed (FSDP, no single-device one): give --gpus 2 or "
               "more with --zero 3 or 2, or plan LoRA (lora_dpo_single_device)");
    if (dpo(s) && distributed(s) && s->compile)
        REFUSE("--compile: torchtune's distributed DPO recipes do not compile the model (lora_dpo_distributed never "
               "reads compile; full_dpo_distributed compiles the loss only, 281 and 332-333)");
    if (dpo(s) && !s->lora_rank && s->offload == MP_OFFLOAD_PARAMS)
        REFUSE("fsdp_cpu_offload in full_dpo_distributed moves the reference model to the host too, which the plan "
               "keeps on the GPU: plan without --offload params");
    /* the recipes raise on offloading without checkpointing */
    if (s->offload_activations && s->checkpointing != MP_CKPT_FULL)
        REFUSE("torchtune offloads activations only with activation checkpointing: add --checkpointing full");
    return 0;
}

static void torchtune_summary(sbuf *b, const mp_plan *p)
{
    const mp_model *m = p->m;
    const mp_settings *s = p->s;
    const tt_model *t = tt_model_of(m);
    sbuf_put(b, "# torchtune config written by memplan for %s (%s).\n", EMIT_TEXT(m->name), builder_of(t, s));
    sbuf_put(b, "# The plan it runs (recipe %s):\n", recipe_of(s));
    sbuf_put(b, "#   precision      %s (dtype %s)\n", mp_precision_name(s->precision),
             tt_dtypes[s->precision]);
    sbuf_put(b, "#   optimizer      %s (%s)%s\n", mp_optimizer_name(s->optimizer),
             tt_optimizers[s->optimizer], s->optimizer_in_backward ? ", stepped in the backward" : "");
    sbuf_put(b, "#   checkpointing  %s%s\n", mp_ckpt_name(s->checkpointing),
             s->offload_activations ? ", activations offloaded to the host" : "");
    if (dpo(s))
        sbuf_put(b, "#   loss           DPO (torchtune.rlhf.loss.DPOLoss, beta 0.1), reference %s\n",
                 s->lora_rank ? "the adapter disabled" : "a second model (ref_checkpointer)");
    else
        sbuf_put(b, "#   loss           %s\n", s->ce == MP_CE_CHUNKED ? "chunked cross-entropy (CEWithChunkedOutputLoss)"
                                                                    : "full cross-entropy");
    if (s->lora_rank) {
        char tg[64];
        sbuf_put(b, "#   LoRA           rank %lld on %s, dropout %g, base %s\n", (long long)s->lora_rank,
                 mp_lora_targets_name(s->lora_targets, tg, sizeof tg), (double)s->lora_dropout,
                 mp_quant_name(s->quant));
    }
    if (distributed(s))
        sbuf_put(b, "#   FSDP over %lld GPUs (zero %d), offload %s\n", (long long)s->gpus, s->zero,
                 mp_offload_name(s->offload));
    if (dpo(s))
        sbuf_put(b, "#   micro-batch %lld pairs (%lld rows), accumulation %lld, sequence %lld (max_seq_len: each "
                    "row cut to it)%s\n", (long long)s->batch, (long long)(2 * s->batch), (long long)s->accum,
                 (long long)s->seq, s->compile ? ", compiled" : "");
    else
        sbuf_put(b, "#   micro-batch %lld, accumulation %lld, sequence %lld (packed)%s\n", (long long)s->batch,
                 (long long)s->accum, (long long)s->seq, s->compile ? ", compiled" : "");
    sbuf_put(b, "# Predicted peak per GPU: %.2f GiB allocated (the log's peak_memory_alloc), %.2f GiB reserved,\n"
                "# %.2f GiB on the device (nvidia-smi).\n",
             p->e->total_bytes / MP_GiB, p->e->reserved_bytes / MP_GiB, p->e->device_bytes / MP_GiB);
}

static void yaml_model(sbuf *b, const mp_model *m, const mp_settings *s)
{
    const tt_model *t = tt_model_of(m);
    sbuf_put(b, "model:\n  _component_: torchtune.models.%s.%s\n", t->package, builder_of(t, s));
    if (!s->lora_rank) return;
    static const struct { unsigned bit; const char *name; } attn[] = {
        {MP_LORA_Q, "q_proj"}, {MP_LORA_K, "k_proj"}, {MP_LORA_V, "v_proj"}, {MP_LORA_O, "output_proj"}};
    sbuf_put(b, "  lora_attn_modules: [");
    int n = 0;
    for (int i = 0; i < 4; i++)
        if (s->lora_targets & attn[i].bit) sbuf_put(b, "%s'%s'", n++ ? ", " : "", attn[i].name);
    sbuf_put(b, "]\n  apply_lora_to_mlp: %s\n", py_bool(s->lora_targets & MP_LORA_MLP));
    if (t->output_arg) sbuf_put(b, "  apply_lora_to_output: %s\n", py_bool(s->lora_targets & MP_LORA_HEAD));
    char dropout[32]; /* a float, as the builders declare it: 0.0, 0.05 */
    snprintf(dropout, sizeof dropout, "%g", (double)s->lora_dropout);
    if (!strpbrk(dropout, ".e")) strcat(dropout, ".0");
    sbuf_put(b, "  lora_rank: %lld\n  lora_alpha: %lld\n  lora_dropout: %s\n", (long long)s->lora_rank,
             (long long)(2 * s->lora_rank), dropout);
    if (s->quant != MP_QUANT_NONE && !t->qlora_builder) sbuf_put(b, "  quantize_base: True\n");
}

/* The tokenizer and checkpoint live in the checkpoint folder launch.sh names. */
static void yaml_checkpoint(sbuf *b, const mp_model *m, const mp_settings *s)
{
    const tt_model *t = tt_model_of(m);
    sbuf_put(b, "\ntokenizer:\n  _component_: torchtune.models.%s\n"
                "  path: ${checkpointer.checkpoint_dir}/%s\n", t->tokenizer, t->tokenizer_path);
    if (t->merges_file) sbuf_put(b, "  merges_file: ${checkpointer.checkpoint_dir}/%s\n", t->merges_file);
    sbuf_put(b, "  max_seq_len: %lld\n", (long long)s->seq);
    sbuf_put(b, "\ncheckpointer:\n  _component_: torchtune.training.FullModelHFCheckpointer\n"
                "  checkpoint_dir: MODEL_DIR  # launch.sh sets it and lists the files below\n"
                "  checkpoint_files: [model.safetensors]\n"
                "  recipe_checkpoint: null\n"
                "  output_dir: ${output_dir}\n"
                "  model_type: %s\n"
                "resume_from_checkpoint: False\n", t->model_type);
    /* full_dpo_distributed loads the reference from its own checkpointer (215-223): the same weights */
    if (dpo(s) && !s->lora_rank)
        sbuf_put(b, "ref_checkpointer:  # the reference model: the policy's starting weights\n"
                    "  _component_: torchtune.training.FullModelHFCheckpointer\n"
                    "  checkpoint_dir: ${checkpointer.checkpoint_dir}\n"
                    "  checkpoint_files: ${checkpointer.checkpoint_files}\n"
                    "  recipe_checkpoint: null\n"
                    "  output_dir: ${output_dir}\n"
                    "  model_type: %s\n", t->model_type);
}

/* Every sequence packed to max_seq_len tokens: the plan's B x T each step. */
static void yaml_data(sbuf *b, const mp_settings *s)
{
    if (dpo(s)) { /* torchtune/datasets/_preference.py 164-174: rows of "chosen" and "rejected" messages */
        sbuf_put(b, "\ndataset:\n  _component_: torchtune.datasets.preference_dataset\n"
                    "  source: json  # YOUR preference data: one JSON object a line, \"chosen\" and \"rejected\"\n"
                    "                # each a list of messages ({\"role\": ..., \"content\": ...})\n"
                    "  data_files: DATA_FILE  # launch.sh sets it\n"
                    "  split: train\n"
                    "seed: 0\nshuffle: True\nbatch_size: %lld  # pairs: %lld rows a forward\n",
                 (long long)s->batch, (long long)(2 * s->batch));
        return;
    }
    sbuf_put(b, "\ndataset:\n  _component_: torchtune.datasets.text_completion_dataset\n"
                "  source: text  # one text file, as the hf bundle reads it\n"
                "  data_files: DATA_FILE  # launch.sh sets it\n"
                "  column: text\n  split: train\n  packed: True\n"
                "seed: 0\nshuffle: True\nbatch_size: %lld\n", (long long)s->batch);
}

static void yaml_optimizer(sbuf *b, const mp_settings *s)
{
    const mp_optimizer_desc *od = mp_optimizer_desc_of(s->optimizer);
    const char *component = tt_optimizers[s->optimizer];
    sbuf_put(b, "\noptimizer:\n  _component_: %s\n  lr: %s\n", component, s->lora_rank ? "2e-4" : "2e-5");
    if (!strncmp(component, "torch.optim.", 12)) {
        if (s->step_impl == MP_STEP_FUSED) sbuf_put(b, "  fused: True\n");
        else sbuf_put(b, "  foreach: %s\n", py_bool(s->step_impl == MP_STEP_FOREACH));
        if (od->momentum) sbuf_put(b, "  momentum: 0.9\n");
    }
    if (od->step_bytes > 0) sbuf_put(b, "  block_size: %lld\n", (long long)s->adam8_block);
    if (s->lora_rank || dpo(s)) /* the distributed DPO recipes read cfg.lr_scheduler */
        sbuf_put(b, "lr_scheduler:\n  _component_: torchtune.training.lr_schedulers.get_cosine_schedule_with_warmup\n"
                    "  num_warmup_steps: 100\n");
}

static void yaml_training(sbuf *b, const mp_settings *s)
{
    const mp_framework *fw = settings_framework(s);
    if (dpo(s))
        sbuf_put(b, "\nloss:\n  _component_: torchtune.rlhf.loss.DPOLoss\n  beta: 0.1\n  label_smoothing: 0.0\n");
    else if (s->ce == MP_CE_CHUNKED)
        sbuf_put(b, "\nloss:\n  _component_: torchtune.modules.loss.CEWithChunkedOutputLoss\n"
                    "  num_output_chunks: %.0f\n", fw->ce_output_chunks);
    else sbuf_put(b, "\nloss:\n  _component_: torch.nn.CrossEntropyLoss\n");
    sbuf_put(b, "epochs: 1\nmax_steps_per_epoch: 1000\ngradient_accumulation_steps: %lld\n", (long long)s->accum);
    if (!s->lora_rank) sbuf_put(b, "optimizer_in_bwd: %s\n", py_bool(s->optimizer_in_backward));
    if (!(dpo(s) && s->lora_rank && distributed(s))) /* lora_dpo_distributed never reads it */
        sbuf_put(b, "compile: %s\n", py_bool(s->compile));
    sbuf_put(b, "\ndevice: cuda\ndtype: %s\n", tt_dtypes[s->precision]);
    sbuf_put(b, "enable_activation_checkpointing: %s\nenable_activation_offloading: %s\n",
             py_bool(s->checkpointing == MP_CKPT_FULL), py_bool(s->offload_activations));
    if (distributed(s))
        sbuf_put(b, "fsdp_reshard_after_forward: %s\nfsdp_cpu_offload: %s\n", py_bool(s->zero == 3),
                 py_bool(s->offload == MP_OFFLOAD_PARAMS));
}

static void write_torchtune(sbuf *b, const mp_plan *p)
{
    const mp_model *m = p->m;
    const mp_settings *s = p->s;
    torchtune_summary(b, p);
    sbuf_put(b, "# Run: bash launch.sh DATA_FILE MODEL_DIR (the bundle), or\n"
                "#   %stune run %s%s --config torchtune.yaml checkpointer.checkpoint_dir=MODEL_DIR \\\n"
                "#     checkpointer.checkpoint_files=[FILES] dataset.data_files=DATA_FILE\n\n",
             s->expandable_segments ? "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True " : "",
             distributed(s) ? "--nproc_per_node N " : "", recipe_of(s));
    sbuf_put(b, "output_dir: ./torchtune-out\n\n");
    yaml_model(b, m, s);
    yaml_checkpoint(b, m, s);
    yaml_data(b, s);
    yaml_optimizer(b, s);
    yaml_training(b, s);
    sbuf_put(b, "\nmetric_logger:\n  _component_: torchtune.training.metric_logging.DiskLogger\n"
                "  log_dir: ${output_dir}/logs\n"
                "log_every_n_steps: 1\nlog_peak_memory_stats: True  # peak_memory_alloc, _reserved, _active\n"
                "log_level: INFO\n");
}

/* launch.sh passes paths to `tune run` as overrides, which torchtune hands to
 * OmegaConf.from_dotlist: each value is read as YAML (a path with ", " or "]"
 * would become a list) and ${...} in a string is interpolated. So every path
 * goes as a YAML single-quoted scalar, and one holding ${ or a control
 * character is refused. The folder is listed by a glob, not by cd and ls:
 * CDPATH and a name starting with '-' cannot redirect it. */
static void write_torchtune_launch(sbuf *b, const mp_plan *p)
{
    const mp_settings *s = p->s;
    sbuf_put(b, "#!/usr/bin/env bash\n");
    torchtune_summary(b, p);
    sbuf_put(b, "# usage: bash launch.sh DATA_FILE MODEL_DIR [KEY=VALUE ...] (MODEL_DIR: the model's Hugging Face\n"
                "# checkpoint folder; KEY=VALUE: more overrides for tune run)\n"
                "set -eu\n"
                "USAGE=\"usage: bash launch.sh DATA_FILE MODEL_DIR\"\n"
                "DATA=\"${1:?$USAGE}\"\nMODEL=\"${2:?$USAGE}\"\n"
                "HERE=\"$(CDPATH='' cd -- \"$(dirname -- \"$0\")\" && pwd)\"\n");
    /* what the plan assumed of the allocator, whatever a recipe's own default */
    sbuf_put(b, "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:%s\n", py_bool(s->expandable_segments));
    if (s->ce == MP_CE_CHUNKED)
        sbuf_put(b, "# the chunked loss as torchtune 0.6's recipes wire it (later ones take LinearCrossEntropyLoss)\n"
                    "V=\"$(python3 -c 'import torchtune; print(torchtune.__version__)' 2>/dev/null || true)\"\n"
                    "case \"$V\" in 0.5.*|0.6.*) ;; *) echo \"launch.sh: written for torchtune 0.6's recipes \\\n"
                    "(CEWithChunkedOutputLoss); found '${V:-none}'\" >&2 ;; esac\n");
    sbuf_put(b, "# a value for an override: tune run reads it as YAML and resolves ${...} in it\n"
                "yaml_word() {\n"
                "    case \"$1\" in\n"
                "    *'${'* | *[[:cntrl:]]*)\n"
                "        echo \"launch.sh: a path holds '\\${' or a control character, which tune run's overrides \\\n"
                "cannot carry: rename it\" >&2\n"
                "        exit 2 ;;\n"
                "    esac\n"
                "    printf \"'%%s'\" \"${1//\\'/\\'\\'}\"\n"
                "}\n");
    sbuf_put(b, "# FullModelHFCheckpointer reads the weight files it is given by name\n"
                "FILES=\"\"\n"
                "for f in \"$MODEL\"/*.safetensors; do\n"
                "    [ -f \"$f\" ] || continue\n"
                "    FILES=\"${FILES:+$FILES, }$(yaml_word \"${f##*/}\")\"\n"
                "done\n"
                "if [ -z \"$FILES\" ]; then echo \"launch.sh: no .safetensors files in the model folder\" >&2; exit 2; fi\n"
                "OUT_Y=\"$(yaml_word \"$HERE/out\")\"\nMODEL_Y=\"$(yaml_word \"$MODEL\")\"\n"
                "DATA_Y=\"$(yaml_word \"$DATA\")\"\n");
    char procs[48] = "";
    if (distributed(s)) snprintf(procs, sizeof procs, "--nproc_per_node %lld ", (long long)s->gpus);
    sbuf_put(b, "exec tune run %s%s --config \"$HERE/torchtune.yaml\" \\\n"
                "    \"output_dir=$OUT_Y\" \"checkpointer.checkpoint_dir=$MODEL_Y\" \\\n"
                "    \"checkpointer.checkpoint_files=[$FILES]\" \"dataset.data_files=$DATA_Y\" \"${@:3}\"\n",
             procs, recipe_of(s));
}

static int bundle_torchtune(const mp_plan *p, emit_file out[EMIT_MAX_FILES], char *err)
{
    out[0] = emit_target_torchtune.file;
    out[1] = (emit_file){"launch.sh", write_torchtune_launch, 0755};
    return 2;
}

/* What a reader needs before the first run (as hf's README.txt), then the plan. */
static void readme_torchtune(sbuf *b, const mp_plan *p)
{
    const mp_settings *s = p->s;
    sbuf_put(b, "memplan's torchtune bundle for %s: it runs what the plan below assumed, and nothing else.\n\n",
             EMIT_TEXT(p->m->name));
    sbuf_put(b, "RUN\n  bash launch.sh DATA_FILE MODEL_DIR [KEY=VALUE ...]\n"
                "  MODEL_DIR is the model's Hugging Face checkpoint folder; KEY=VALUE are torchtune overrides\n"
                "  passed on to tune run (max_steps_per_epoch=200, optimizer.lr=1e-4). It needs torchtune\n"
                "  0.6 (torchtune.yaml names its recipe %s)%s.\n\n", recipe_of(s),
             s->optimizer == MP_ADAMW_8BIT || s->optimizer == MP_PAGED_ADAMW_8BIT || s->optimizer == MP_PAGED_ADAMW ||
                     s->optimizer == MP_LION ? " and bitsandbytes"
             : s->optimizer == MP_ADAMW_8BIT_TORCHAO || s->optimizer == MP_ADAMW_4BIT_TORCHAO ? " and torchao" : "");
    if (dpo(s))
        sbuf_put(b, "DATA\n  DATA_FILE is YOUR preference data, which memplan does not supply: JSON lines, each with\n"
                    "  \"chosen\" and \"rejected\", lists of messages ({\"role\": \"user\", \"content\": ...}, then the\n"
                    "  assistant's), read by torchtune.datasets.preference_dataset. Each row is cut to %lld tokens\n"
                    "  and a batch is padded to its longest: the plan counted every row that long.\n\n",
                 (long long)s->seq);
    else
        sbuf_put(b, "DATA\n  DATA_FILE is plain text, one example a line (text_completion_dataset), packed into\n"
                    "  sequences of %lld tokens: every step sees the micro-batch and sequence the plan counted.\n\n",
                 (long long)s->seq);
    if (p->m->hf_id[0])
        sbuf_put(b, "MODEL\n  tune download %s --output-dir MODEL_DIR fetches it. A gated model (Llama,\n"
                    "  Gemma, Mistral...) needs its license accepted on its Hub page and --hf-token (or a login).\n\n",
                 EMIT_TEXT(p->m->hf_id));
    sbuf_put(b, "WHAT TO CHANGE\n  Steps, learning rate, output folder and data change nothing the plan counted. The batch,\n"
                "  sequence, dtype, optimizer, checkpointing, offloading, loss and LoRA are the plan's: to change\n"
                "  one, plan again with memplan and write a new bundle, so that the prediction stays true.\n\n"
                "THE PLAN\n");
    torchtune_summary(b, p);
}

const mp_emit_target emit_target_torchtune = {
    .name = "torchtune", .file = {"torchtune.yaml", write_torchtune, 0644}, .check = check_torchtune,
    .bundle = bundle_torchtune, .readme = readme_torchtune, .framework = "torchtune", .steps_in_backward = true,
    .dpo_recipes = true,
};

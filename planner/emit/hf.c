/* hf.c — a Hugging Face Trainer script (transformers, PEFT, bitsandbytes) that
 * runs exactly the techniques the plan assumed, for the model's architecture.
 * Settings reach transformers' spelling through the vocabulary rows and the
 * architecture's module names through model/family.c: nothing here restates them. */
#include "model/family.h"
#include "emitters.h"
#include "emit/hf.h"
#include "common/errors.h"
#include "common/units.h"
#include "model/model.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"

#include <stdio.h>
#include <string.h>

/* transformers' words for the plan's values, from its source:
 *   TrainingArguments optim    src/transformers/training_args.py, class OptimizerNames (the list
 *                              under tests/data/engines/transformers_optim.txt; test_emit_hf checks it)
 *   bf16 / fp16 flags          TrainingArguments: autocast in the mixed modes
 *   attn_implementation        src/transformers/modeling_utils.py ("eager", "sdpa")
 *   streaming                  datasets' load_dataset(streaming=...) */
static const struct { const char *flag, *dtype; } hf_precisions[MP_NPRECISION] = {
    [MP_FP32] = {NULL, "torch.float32"},          [MP_AMP_BF16] = {"bf16", "torch.float32"},
    [MP_AMP_FP16] = {"fp16", "torch.float32"},    [MP_MIXED_BF16] = {"bf16", "torch.bfloat16"},
    [MP_MIXED_FP16] = {"fp16", "torch.float16"},  [MP_PURE_BF16] = {"bf16", "torch.bfloat16"},
};
static const char *const hf_optims[MP_NOPTIMIZER] = {
    [MP_ADAMW] = "adamw_torch", [MP_ADAMW_8BIT] = "adamw_bnb_8bit", [MP_PAGED_ADAMW] = "paged_adamw_32bit",
    [MP_PAGED_ADAMW_8BIT] = "paged_adamw_8bit", [MP_SGD] = "sgd", [MP_SGD_MOMENTUM] = "sgd",
    [MP_ADAFACTOR] = "adafactor", [MP_LION] = "lion_32bit", [MP_ADAMW_8BIT_TORCHAO] = "adamw_torch_8bit",
    [MP_ADAMW_4BIT_TORCHAO] = "adamw_torch_4bit",
};
/* transformers' attention implementation (check_hf refuses tiled attention where the architecture declares no SDPA) */
static const char *const hf_attns[MP_NATTN] = {[MP_ATTN_EAGER] = "eager", [MP_ATTN_FLASH] = "sdpa"};
/* what transformers needs installed to load a quantised base */
static const char *const hf_packages[MP_NQUANT] = {
    [MP_QUANT_INT8] = "bitsandbytes", [MP_QUANT_NF4] = "bitsandbytes", [MP_QUANT_NF4_DQ] = "bitsandbytes",
    [MP_QUANT_GPTQ] = "optimum, gptqmodel or auto-gptq", [MP_QUANT_AWQ] = "autoawq",
};

const char *emit_hf_optim(mp_optimizer o) { return o >= 0 && o < MP_NOPTIMIZER ? hf_optims[o] : NULL; }
const char *emit_hf_dtype(mp_precision p) { return p >= 0 && p < MP_NPRECISION ? hf_precisions[p].dtype : NULL; }
const char *hf_attn(const mp_settings *s) { return hf_attns[s->attention]; }
const char *hf_package(const mp_settings *s) { return hf_packages[s->quant]; }

/* gradient_checkpointing: the Trainer checkpoints whole layers, for either policy */
static bool hf_checkpointing(const mp_settings *s) { return s->checkpointing != MP_CKPT_NONE; }

/* Quantised at load by bitsandbytes, as opposed to a checkpoint stored
 * quantised, whose own quantization_config from_pretrained reads. */
bool hf_quantised_at_load(const mp_model *m, const mp_settings *s)
{
    return s->quant != MP_QUANT_NONE && m->stored_quant == MP_QUANT_NONE;
}

hf_precision hf_precision_of(const mp_settings *s)
{
    const mp_precision_desc *pd = mp_precision_desc_of(s->precision);
    hf_precision p = {.flag = hf_precisions[s->precision].flag, .pure = mp_precision_pure16(pd)};
    p.compute = pd->needs_bf16 ? "torch.bfloat16" : "torch.float16";
    /* Trainable weights load in fp32 (autocast does the 16-bit math; PyTorch's
     * scaler refuses fp16 trainable weights), in bf16 only for pure bf16. A
     * frozen LoRA base is stored as the plan counts it (16-bit under mixed and
     * pure precision); a quantised base keeps its other weights in 16 bits. */
    if (s->quant != MP_QUANT_NONE) p.load_dtype = p.compute;
    else if (s->lora_rank) p.load_dtype = hf_precisions[s->precision].dtype;
    else p.load_dtype = p.pure ? "torch.bfloat16" : "torch.float32";
    return p;
}


/* The Trainer alone has no 16-bit weights with fp32 masters: DeepSpeed's bf16
 * and fp16 modes keep them, and FSDP's mixed precision; one process or DDP
 * would train the amp twin, another plan than the one estimated. */
static int check_hf(const mp_model *m, const mp_settings *s, char *err)
{
    /* an architecture without SDPA would run eager attention: another plan than the one estimated */
    if (emit_check_sdpa(m, s, err)) return -1;
    if (emit_trl_plan(s) && emit_trl_check(m, s, err)) return -1;
    const mp_precision_desc *pd = mp_precision_desc_of(s->precision);
    emit_engine e;
    if (emit_engine_of(s, &e, err)) return -1;
    /* the bundle writes the engine's file too: a plan it cannot write is none of hf's */
    if (e.kind == EMIT_DEEPSPEED) return mp_emit_check(&emit_target_deepspeed, m, s, err);
    if (e.kind == EMIT_FSDP) return mp_emit_check(&emit_target_accelerate, m, s, err);
    if (s->lora_rank || !pd->master_copy) return 0;
    snprintf(err, MP_ERR_LEN, "precision '%s' (16-bit weights, fp32 masters) runs in the Trainer only under "
             "DeepSpeed or FSDP, and this plan runs as %s: use --precision %s, or --framework deepspeed",
             pd->v.name, emit_engine_name(e.kind), pd->needs_bf16 ? "amp-bf16" : "amp-fp16");
    return -1;
}

void hf_summary(sbuf *b, const mp_plan *pl, const mp_family *f)
{
    const mp_model *m = pl->m;
    const mp_settings *s = pl->s;
    const hf_precision p = hf_precision_of(s);
    const char *attn = hf_attns[s->attention];
    sbuf_put(b, "# Hugging Face Trainer script written by memplan for %s (%s).\n", EMIT_TEXT(m->name),
             EMIT_TEXT(m->family));
    sbuf_put(b, "# The plan it runs (every technique below is in this file, and no other):\n");
    sbuf_put(b, "#   precision      %s (%s)\n", mp_precision_name(s->precision),
             p.pure ? "bf16 weights, no fp32 master copy"
                    : p.flag ? (s->lora_rank ? "fp32 adapters, 16-bit autocast" : "fp32 weights, 16-bit autocast")
                             : "fp32");
    sbuf_put(b, "#   optimizer      %s (optim=\"%s\")\n", mp_optimizer_name(s->optimizer),
             hf_optims[s->optimizer]);
    sbuf_put(b, "#   checkpointing  %s%s\n", mp_ckpt_name(s->checkpointing),
             hf_checkpointing(s) ? " (non-reentrant)" : "");
    sbuf_put(b, "#   attention      %s (attn_implementation=\"%s\")\n", mp_attention_name(s->attention), attn);
    if (emit_trl_plan(s)) emit_trl_summary(b, s);
    else if (s->ce == MP_CE_CHUNKED)
        sbuf_put(b, "#   loss           chunked cross-entropy, %lld tokens a chunk\n", (long long)s->ce_chunk);
    else sbuf_put(b, "#   loss           full cross-entropy (the model's own)\n");
    if (s->lora_rank)
        sbuf_put(b, "#   LoRA           rank %lld on %s, dropout %g, base %s\n", (long long)s->lora_rank,
                 mp_lora_targets_name(s->lora_targets, (char[64]){0}, 64), (double)s->lora_dropout,
                 mp_quant_name(s->quant));
    if (s->bnb_version) {
        char release[32];
        sbuf_put(b, "#   bitsandbytes   %s\n", mp_version_name(s->bnb_version, release, sizeof release));
    }
    sbuf_put(b, "#   ZeRO stage %d, offload %s, %lld GPU(s)\n", s->zero, mp_offload_name(s->offload), (long long)s->gpus);
    sbuf_put(b, "#   micro-batch %lld, accumulation %lld, sequence %lld\n", (long long)s->batch,
             (long long)s->accum, (long long)s->seq);
    sbuf_put(b, "# Predicted peak per GPU: %.2f GiB allocated, %.2f GiB on the device (nvidia-smi).\n",
             pl->e->total_bytes / MP_GiB, pl->e->device_bytes / MP_GiB);
    if (!f)
        sbuf_put(b, "# NOTE: memplan has no table row for model_type '%s': check that its modeling file supports\n"
                    "# the attention implementation and the LoRA module names below.\n", EMIT_TEXT(m->family));
    const char *pkgs = hf_packages[s->quant]; /* what loading its base needs */
    sbuf_put(b, "# Run: bash launch.sh DATA (the bundle), or python3 train.py DATA (needs torch, transformers, datasets%s%s%s%s).\n\n",
             s->lora_rank ? ", peft" : "", pkgs ? ", " : "", pkgs ? pkgs : "", emit_trl_packages(s));
}

void hf_command_line(sbuf *b, const mp_model *m, const mp_settings *s, const char *data_help, const char *lr,
                     void (*more)(sbuf *b, const mp_settings *s))
{
    if (m->hf_id[0]) {
        sbuf_put(b, "MODEL = ");
        put_python_str(b, "the model's Hub id", m->hf_id);
        sbuf_put(b, "  # Hugging Face repo id (or a local folder)\n");
    } else {
        sbuf_put(b, "MODEL = \"path/to/model\"  # memplan has no repo id for %s: put its Hub id or local folder here\n",
                 EMIT_TEXT(m->name));
    }
    /* launch.sh passes the data file and, for a DeepSpeed plan, --deepspeed ds_config.json;
     * the deepspeed launcher adds --local_rank */
    /* what a run changes without changing the plan's memory: steps, rate, where
     * the result goes, the data (the plan's batch, sequence and techniques are
     * the file's: change them by planning again) */
    sbuf_put(b, "cli = argparse.ArgumentParser(description=\"memplan's training script: the plan in its header\")\n"
                "cli.add_argument(\"data\", nargs=\"?\", default=\"%s\",\n"
                "                 help=\"%s\")\n"
                "cli.add_argument(\"--steps\", type=int, default=1000, help=\"optimizer steps (default 1000)\")\n"
                "cli.add_argument(\"--lr\", type=float, default=%s, help=\"learning rate (default %s)\")\n"
                "cli.add_argument(\"--output\", default=\"out\",\n"
                "                 help=\"checkpoints and the final %s (default out)\")\n"
                "cli.add_argument(\"--deepspeed\", default=None, help=\"a DeepSpeed config (launch.sh gives ds_config.json)\")\n"
                "cli.add_argument(\"--local_rank\", type=int, default=-1)  # set by the deepspeed launcher\n",
             emit_trl_plan(s) ? "data.jsonl" : "data.txt", data_help, lr, lr, s->lora_rank ? "adapter" : "model");
    if (more) more(b, s);
    sbuf_put(b, "ARGS = cli.parse_args()\nDATA = ARGS.data\nSEQ = %lld\n\n", (long long)s->seq);
}

void hf_quant_config(sbuf *b, const mp_model *m, const mp_settings *s)
{
    const hf_precision p = hf_precision_of(s);
    const mp_quant_desc *qd = mp_quant_desc_of(s->quant);
    const bool at_load = hf_quantised_at_load(m, s);
    if (!at_load && s->quant != MP_QUANT_NONE)
        sbuf_put(b, "# the checkpoint is stored quantised (%s): from_pretrained reads its quantization_config\n",
                 mp_quant_name(s->quant));
    if (at_load && qd->bits == 4) {
        sbuf_put(b, "quant = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type=\"nf4\",\n"
                    "                           bnb_4bit_use_double_quant=%s, bnb_4bit_compute_dtype=%s",
                 qd->double_quant ? "True" : "False", p.compute);
        /* sharded 4-bit weights must share one storage dtype with the rest (FSDP/ZeRO-3) */
        if (s->gpus > 1 && s->zero >= 3) sbuf_put(b, ",\n                           bnb_4bit_quant_storage=%s", p.compute);
        sbuf_put(b, ")\n");
    } else if (at_load && qd->bits == 8) {
        sbuf_put(b, "quant = BitsAndBytesConfig(load_in_8bit=True)\n");
    }
}

void hf_from_pretrained(sbuf *b, const mp_model *m, const mp_settings *s, const mp_family *f, const char *name,
                        const char *cls, const char *extra)
{
    sbuf_put(b, "%s = %s.from_pretrained(MODEL, torch_dtype=%s, attn_implementation=\"%s\"%s%s%s)\n", name, cls,
             hf_precision_of(s).load_dtype, hf_attns[s->attention], hf_quantised_at_load(m, s) ? ", quantization_config=quant" : "",
             f && f->remote_code ? ", trust_remote_code=True" : "", extra);
}

/* LoRA. No prepare_model_for_kbit_training: it casts every fp16/bf16 weight of
 * a quantised model to fp32 (huggingface/peft src/peft/utils/other.py,
 * 012c0d5a96744096ab28f87cde9bd9918f5367a1: "cast all non INT8 parameters to
 * fp32"), which the plan does not count, and with use_reentrant=False the
 * input-grad hook it adds is not needed (same file). get_peft_model freezes the base. */
void hf_lora_config(sbuf *b, const mp_model *m, const mp_settings *s, const mp_family *f, const char *task_type,
                    bool wrap)
{
    const mp_family *names = f ? f : mp_family_of("llama");
    const char *mods[MP_LORA_NROLES];
    int n = mp_family_targets(names, s->lora_targets, mods);
    if (!f) sbuf_put(b, "# memplan has no module table for model_type '%s': these are Llama's names, check them\n",
                     EMIT_TEXT(m->family));
    char dropout[32]; /* a Python float: 0.0, 0.05 */
    snprintf(dropout, sizeof dropout, "%g", (double)s->lora_dropout);
    if (!strpbrk(dropout, ".e")) strcat(dropout, ".0");
    sbuf_put(b, "lora = LoraConfig(r=%lld, lora_alpha=%lld, lora_dropout=%s, task_type=\"%s\",\n"
                "                  target_modules=[", (long long)s->lora_rank, (long long)(2 * s->lora_rank), dropout,
             task_type);
    for (int i = 0; i < n; i++) sbuf_put(b, "%s\"%s\"", i ? ", " : "", mods[i]);
    sbuf_put(b, "])\n");
    if (!wrap) return;
    /* PEFT upcasts 16-bit adapters to fp32 unless told not to: pure bf16 keeps them in bf16 */
    sbuf_put(b, "model = get_peft_model(model, lora%s)\nmodel.print_trainable_parameters()\n",
             hf_precision_of(s).pure ? ", autocast_adapter_dtype=False" : "");
}

/* The chunked loss: the model's own call of its output head returns the hidden
 * states unchanged, and the loss calls the head (as a module, so that ZeRO-3's
 * hooks gather it) and cross-entropy one chunk of tokens at a time under
 * checkpoint: only one chunk's logits ever exist, in forward or backward. */
static void hf_chunked_loss(sbuf *b, const mp_settings *s)
{
    sbuf_put(b, "\nCE_CHUNK = %lld  # tokens per cross-entropy chunk, as the plan assumed\n"
                "HEAD = model.get_output_embeddings()\n"
                "HEAD_FORWARD = HEAD.forward\n"
                "BYPASS = [True]  # the model's own call of the head returns the hidden states\n"
                "HEAD.forward = lambda hidden: hidden if BYPASS[0] else HEAD_FORWARD(hidden)\n"
                "SOFTCAP = getattr(model.config, \"final_logit_softcapping\", None)\n"
                "if SOFTCAP:\n    model.config.final_logit_softcapping = None  # applied per chunk instead\n\n"
                "def chunk_loss(hidden, labels):\n"
                "    BYPASS[0] = False\n"
                "    try:\n"
                "        logits = HEAD(hidden.to(HEAD.weight.dtype)).float()\n"
                "    finally:\n"
                "        BYPASS[0] = True\n"
                "    if SOFTCAP:\n        logits = torch.tanh(logits / SOFTCAP) * SOFTCAP\n"
                "    return F.cross_entropy(logits, labels, ignore_index=-100, reduction=\"sum\")\n\n"
                "class ChunkedLossTrainer(Trainer):\n"
                "    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):\n"
                "        labels = inputs.pop(\"labels\")\n"
                "        outputs = model(**inputs)\n"
                "        hidden = outputs.logits[:, :-1].reshape(-1, outputs.logits.size(-1))\n"
                "        labels = labels[:, 1:].reshape(-1).to(hidden.device)\n"
                "        total = torch.zeros((), device=hidden.device)\n"
                "        for i in range(0, hidden.size(0), CE_CHUNK):\n"
                "            total = total + checkpoint(chunk_loss, hidden[i:i + CE_CHUNK], labels[i:i + CE_CHUNK],\n"
                "                                       use_reentrant=False)\n"
                "        count = num_items_in_batch if num_items_in_batch is not None else (labels != -100).sum()\n"
                "        loss = total / count\n"
                "        return (loss, outputs) if return_outputs else loss\n",
             (long long)s->ce_chunk);
}

void hf_tokenizer(sbuf *b, const mp_family *f)
{
    sbuf_put(b, "\ntok = AutoTokenizer.from_pretrained(MODEL%s)\ntok.pad_token = tok.pad_token or tok.eos_token\n",
             f && f->remote_code ? ", trust_remote_code=True" : "");
}

static void hf_data(sbuf *b, const mp_model *m, const mp_settings *s, const mp_family *f)
{
    (void)m;
    hf_tokenizer(b, f);
    sbuf_put(b, "ds = load_dataset(\"text\", data_files=DATA, streaming=%s)[\"train\"]\n\n",
             s->loader == MP_LOAD_STREAM ? "True" : "False");
    sbuf_put(b, "def pack(batch):  # every sequence is SEQ tokens long, as the plan assumed\n"
                "    ids = [t for x in tok(batch[\"text\"])[\"input_ids\"] for t in x + [tok.eos_token_id]]\n"
                "    return {\"input_ids\": [ids[i:i + SEQ] for i in range(0, len(ids) - SEQ + 1, SEQ)]}\n\n"
                "ds = ds.map(pack, batched=True, remove_columns=[\"text\"])\n");
    if (s->loader == MP_LOAD_STREAM)
        sbuf_put(b, "ds = ds.shuffle(buffer_size=%lld, seed=0)\n", (long long)s->shuffle_buffer);
}

static void hf_train(sbuf *b, const mp_settings *s)
{
    const hf_precision p = hf_precision_of(s);
    const bool ckpt = hf_checkpointing(s);
    sbuf_put(b, "\nargs = TrainingArguments(output_dir=ARGS.output, per_device_train_batch_size=%lld,\n"
                "                         gradient_accumulation_steps=%lld, bf16=%s, fp16=%s,\n"
                "                         gradient_checkpointing=%s,%s optim=\"%s\",\n"
                "                         learning_rate=ARGS.lr, max_steps=ARGS.steps, logging_steps=10, report_to=\"none\",\n"
                "                         %sdeepspeed=ARGS.deepspeed)\n",
             (long long)s->batch, (long long)s->accum, p.flag && !strcmp(p.flag, "bf16") ? "True" : "False",
             p.flag && !strcmp(p.flag, "fp16") ? "True" : "False", ckpt ? "True" : "False",
             ckpt ? " gradient_checkpointing_kwargs={\"use_reentrant\": False},\n                        " : "",
             hf_optims[s->optimizer], s->compile ? "torch_compile=True, " : "");
    /* save_model writes what PEFT keeps for LoRA (the adapter alone), else the model,
     * through the engine (DeepSpeed gathers ZeRO-3's shards: its config says so) */
    sbuf_put(b, "trainer = %s(model=model, args=args, train_dataset=ds,\n"
                "                  data_collator=DataCollatorForLanguageModeling(tok, mlm=False))\n"
                "trainer.train()\n"
                "trainer.save_model(ARGS.output)\n"
                "tok.save_pretrained(ARGS.output)\n",
             s->ce == MP_CE_CHUNKED ? "ChunkedLossTrainer" : "Trainer");
}

/* The plan counted what the bitsandbytes release it assumed keeps (a current one
 * unless --bitsandbytes named an older one): the script refuses an older release
 * than the plan assumed, which keeps every 4-bit layer's input as well. */
void hf_bitsandbytes_check(sbuf *b, const mp_model *m, const mp_settings *s, bool imported)
{
    int before = mp_quant_desc_of(s->quant)->bnb_keeps_input_before;
    if (!hf_quantised_at_load(m, s) || before == 0 || (s->bnb_version && s->bnb_version < before)) return;
    char release[32];
    mp_version_name(before, release, sizeof release);
    if (!imported)
        sbuf_put(b, "from importlib.metadata import version as package_version\n"
                    "from packaging.version import Version\n\n");
    sbuf_put(b, "# bitsandbytes before %s keeps every 4-bit layer's input for the backward: more memory than\n"
                "# this plan counted (memplan --bitsandbytes RELEASE plans for an older one).\n"
                "if Version(package_version(\"bitsandbytes\")) < Version(\"%s\"):\n"
                "    raise SystemExit(\"this plan assumed bitsandbytes >= %s: upgrade it, or re-plan with \"\n"
                "                     \"memplan --bitsandbytes \" + package_version(\"bitsandbytes\"))\n\n",
             release, release, release);
}

static void write_hf(sbuf *b, const mp_plan *p)
{
    const mp_model *m = p->m;
    const mp_settings *s = p->s;
    const mp_family *f = emit_family_of(m);
    if (emit_trl_plan(s)) return emit_trl_script(b, p);
    hf_summary(b, p, f);
    sbuf_put(b, "import argparse\n");
    /* before torch: the allocator reads its settings once, when CUDA starts */
    if (s->expandable_segments)
        sbuf_put(b, "import os\n\nos.environ.setdefault(\"PYTORCH_CUDA_ALLOC_CONF\", \"expandable_segments:True\")\n");
    sbuf_put(b, "\nimport torch\n%sfrom datasets import load_dataset\n",
             s->ce == MP_CE_CHUNKED ? "import torch.nn.functional as F\nfrom torch.utils.checkpoint import checkpoint\n" : "");
    sbuf_put(b, "from transformers import (AutoModelForCausalLM, AutoTokenizer, Trainer, TrainingArguments,\n"
                "                          DataCollatorForLanguageModeling%s)\n",
             hf_quantised_at_load(m, s) ? ", BitsAndBytesConfig" : "");
    if (s->lora_rank) sbuf_put(b, "from peft import LoraConfig, get_peft_model\n");
    sbuf_put(b, "\n");
    hf_bitsandbytes_check(b, m, s, false);
    hf_command_line(b, m, s, "a text file, one training example a line", s->lora_rank ? "2e-4" : "2e-5", NULL);
    hf_quant_config(b, m, s);
    hf_from_pretrained(b, m, s, f, "model", "AutoModelForCausalLM", "");
    if (s->lora_rank) hf_lora_config(b, m, s, f, "CAUSAL_LM", true);
    if (s->ce == MP_CE_CHUNKED) hf_chunked_loss(b, s);
    hf_data(b, m, s, f);
    hf_train(b, s);
}

/* The bundle: the script, its engine's config (DeepSpeed's or accelerate's, or
 * none), the launcher. */
static int bundle_hf(const mp_plan *p, emit_file out[EMIT_MAX_FILES], char *err)
{
    emit_engine e;
    if (emit_engine_of(p->s, &e, err)) return -1;
    const mp_emit_target *parts[] = {&emit_target_hf, e.kind == EMIT_DEEPSPEED ? &emit_target_deepspeed
                                                      : e.kind == EMIT_FSDP    ? &emit_target_accelerate
                                                                               : NULL,
                                     &emit_target_launch};
    int n = 0;
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) {
        if (!parts[i]) continue;
        if (mp_emit_check(parts[i], p->m, p->s, err)) return -1;
        out[n++] = parts[i]->file;
    }
    if (emit_trl_plan(p->s)) out[n++] = emit_trl_yaml; /* the config's keys, for memplan check and TRL's CLI */
    return n;
}

/* RUN and DATA of a supervised plan's README (a TRL plan's: trl.c). */
static void readme_sft_run(sbuf *b, const mp_settings *s, const emit_engine *e)
{
    const char *pkgs = hf_packages[s->quant];
    const char *engine_pkg = e->kind == EMIT_DEEPSPEED ? ", deepspeed" : e->kind == EMIT_FSDP ? ", accelerate" : "";
    sbuf_put(b, "RUN\n  bash launch.sh DATA_FILE [--steps N] [--lr RATE] [--output DIR]\n"
                "  (defaults: 1000 steps, learning rate %s, output in ./out). It needs python3 with torch,\n"
                "  transformers, datasets%s%s%s%s.\n  At the end the %s is saved in the output folder.\n\n",
             s->lora_rank ? "2e-4" : "2e-5", s->lora_rank ? ", peft" : "", pkgs ? ", " : "", pkgs ? pkgs : "",
             engine_pkg, s->lora_rank ? "adapter (PEFT's, not the base)" : "model");
    sbuf_put(b, "DATA\n  DATA_FILE is plain text, one training example a line (datasets' \"text\" loader). The\n"
                "  lines are tokenised, joined with the end-of-text token and cut into sequences of %lld\n"
                "  tokens, so every step sees the micro-batch and sequence the plan counted.\n\n",
             (long long)s->seq);
}

/* What a reader needs before the first run: the command, the data, the model's
 * access, what may change and what is the plan's, then the plan itself. */
static void readme_hf(sbuf *b, const mp_plan *p)
{
    const mp_settings *s = p->s;
    emit_engine e;
    char err[MP_ERR_LEN];
    if (emit_engine_of(s, &e, err)) return sbuf_fail(b, "%s", err);
    sbuf_put(b, "memplan's bundle for %s: it trains what the plan below assumed, and nothing else.\n\n",
             EMIT_TEXT(p->m->name));
    if (emit_trl_plan(s)) emit_trl_readme(b, p);
    else readme_sft_run(b, s, &e);
    emit_readme_model(b, p->m, "train.py", "MODEL");
    sbuf_put(b, "WHAT TO CHANGE\n  --steps, --lr, --output and the data change nothing the plan counted. The micro-batch,\n"
                "  accumulation, sequence length, precision, optimizer, checkpointing, attention, loss,\n"
                "  LoRA and sharding are the plan's: to change one, plan again with memplan and write a new\n"
                "  bundle, so that the prediction below stays true.\n\n");
    sbuf_put(b, "THE PLAN\n");
    emit_summary_prefixed(b, p, &e, "  ");
}

const mp_emit_target emit_target_hf = {
    .name = "hf", .file = {"train.py", write_hf, 0644}, .check = check_hf, .bundle = bundle_hf,
    .readme = readme_hf,
    .framework = "hf", .trl_methods = true,
};

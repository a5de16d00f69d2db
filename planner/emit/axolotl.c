/* axolotl.c — an axolotl config (config.yml) and the `axolotl train` that
 * starts it (launch.sh), for the plans axolotl runs as memplan estimated
 * them with the hf profile (transformers' Trainer and PEFT, which axolotl
 * drives). Every key that changes memory is written with the plan's value,
 * none is left to a default or an `auto`; `memplan check config.yml` reads
 * the file back to the same plan (tests/test_emit_roundtrip.py).
 *
 * Keys and values from axolotl-ai-cloud/axolotl@067b021c8b87a9e5e380b9173c704cf7340e30f5
 * as tests/data/engines/axolotl_config_keys.csv tabulates them (and
 * planner/check/axolotl.c reads them); paths below without a folder are under
 * src/axolotl/utils/schemas/ there. What the choices rest on:
 *   - the weights load in the dtype axolotl trains in (utils/config/__init__.py
 *     resolve_dtype: bf16 -> torch_dtype bfloat16; fp16 -> float16), so a full
 *     fine-tune in bf16 is pure bf16, and fp32 masters come only from an engine:
 *     DeepSpeed's bf16 and fp16 modes, FSDP's mixed precision;
 *   - PEFT upcasts the adapters to fp32 (autocast_adapter_dtype, the hf
 *     profile's adapter_fp32): a LoRA base in 16 bits is mixed precision;
 *   - a full fine-tune off FSDP keeps the embeddings and the head in fp32 unless
 *     the attention backend casts them back (loaders/model.py:427-476): tiled
 *     attention is written as flash_attention_2, which does; eager leaves them;
 *   - the fused LoRA kernels, on by default (config.py:1899-2003), are written
 *     off: the estimate counts PEFT's layers;
 *   - qlora is NF4 with double quantisation (loaders/model.py:712-720), lora
 *     with load_in_8bit LLM.int8 (loaders/model.py:740-752);
 *   - FSDP as the estimate's FSDP is accelerate's FSDP1 (emit/accelerate.c):
 *     transformers' fsdp options, which axolotl passes through
 *     (core/builders/base.py:684-686), with fsdp_version 1 (validation.py:1105-1124);
 *   - the launch: `axolotl train config.yml --launcher accelerate -- --num_processes=N`
 *     (docs/cli.qmd, "Launcher Arguments"). */
#include "model/family.h"
#include "emitters.h"
#include "profiles/framework.h"
#include "common/errors.h"
#include "common/units.h"
#include "model/model.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"

#include <stdio.h>
#include <string.h>

/* axolotl's optimizer names (tests/data/engines/axolotl_optimizers.txt: transformers'
 * OptimizerNames, passed through as TrainingArguments.optim); adamw's by its step.
 * NULL: no form memplan writes. */
static const char *const ax_optimizers[MP_NOPTIMIZER] = {
    [MP_ADAMW_8BIT] = "adamw_bnb_8bit", [MP_PAGED_ADAMW] = "paged_adamw_32bit",
    [MP_PAGED_ADAMW_8BIT] = "paged_adamw_8bit", [MP_SGD] = "sgd", [MP_ADAFACTOR] = "adafactor",
    [MP_LION] = "lion_32bit", [MP_ADAMW_8BIT_TORCHAO] = "adamw_torch_8bit",
    [MP_ADAMW_4BIT_TORCHAO] = "adamw_torch_4bit",
};

static const char *optimizer_of(const mp_settings *s)
{
    if (s->optimizer == MP_ADAMW)
        return s->step_impl == MP_STEP_FUSED ? "adamw_torch_fused" : s->step_impl == MP_STEP_FOREACH ? "adamw_torch"
                                                                                                    : NULL;
    return ax_optimizers[s->optimizer];
}

/* The fp32 masters a precision keeps come from an engine in axolotl. */
static bool sharded(const emit_engine *e) { return e->kind == EMIT_DEEPSPEED || e->kind == EMIT_FSDP; }

#define REFUSE(...) do { snprintf(err, MP_ERR_LEN, __VA_ARGS__); return -1; } while (0)

static int check_precision(const mp_settings *s, const emit_engine *e, char *err)
{
    const mp_precision_desc *pd = mp_precision_desc_of(s->precision);
    if (pd->autocast)
        REFUSE("precision '%s' has no axolotl form: axolotl loads the weights in the dtype it trains in "
               "(resolve_dtype), never fp32 under autocast (use %s)", pd->v.name,
               s->lora_rank ? "mixed-bf16" : "pure-bf16");
    if (s->lora_rank && s->precision == MP_PURE_BF16)
        REFUSE("precision 'pure-bf16' with LoRA has no axolotl form: PEFT keeps the adapters in fp32 over the bf16 "
               "base, which is mixed-bf16");
    if (!s->lora_rank && pd->master_copy && !sharded(e))
        REFUSE("precision '%s' runs a full fine-tune in axolotl only under DeepSpeed or FSDP, which keep the fp32 "
               "masters; this plan runs as %s (use pure-bf16, or several GPUs with --zero 2 or 3)", pd->v.name,
               emit_engine_name(e->kind));
    if (!s->lora_rank && s->precision == MP_PURE_BF16 && sharded(e))
        REFUSE("precision 'pure-bf16' has no axolotl form under %s, whose mixed precision keeps fp32 masters "
               "(use mixed-bf16)", emit_engine_name(e->kind));
    if (s->quant == MP_QUANT_INT8 && s->precision == MP_FP32)
        REFUSE("an 8-bit base in fp32 has no axolotl form: load_in_8bit loads the rest in float16 (resolve_dtype)");
    return 0;
}

static int check_lora(const mp_model *m, const mp_settings *s, char *err)
{
    if (!s->lora_rank) return 0;
    const mp_family *f = emit_family_of(m);
    if (!f) REFUSE("memplan has no LoRA module names for model_type '%s': axolotl's lora_target_modules need them",
                   EMIT_TEXT(m->family));
    if (s->lora_targets & MP_LORA_HEAD)
        REFUSE("LoRA on the output head: memplan does not tabulate its module name (drop head from --lora-targets)");
    /* a fused projection (Phi-3's qkv_proj) adapts every role it holds */
    const char *mods[MP_LORA_NROLES];
    int n = mp_family_targets(f, s->lora_targets, mods);
    unsigned covered = 0;
    for (int i = 0; i < n; i++)
        for (int r = 0; r < MP_LORA_NROLES; r++)
            if (f->module[r] && !strcmp(f->module[r], mods[i])) covered |= 1u << r;
    if (covered != (s->lora_targets & MP_LORA_ALL)) {
        char want[64], got[64];
        REFUSE("%s fuses projections: LoRA on %s would adapt %s (plan --lora-targets %s)", f->model_type,
               mp_lora_targets_name(s->lora_targets, want, sizeof want), mp_lora_targets_name(covered, got, sizeof got),
               got);
    }
    if (s->quant != MP_QUANT_NONE && s->quant != MP_QUANT_NF4_DQ && s->quant != MP_QUANT_INT8)
        REFUSE("quant '%s' has no axolotl form: its qlora is NF4 with double quantisation, its 8-bit lora LLM.int8 "
               "(use --quant nf4-dq or int8)", mp_quant_name(s->quant));
    if (s->bnb_version)
        REFUSE("--bitsandbytes: axolotl installs the bitsandbytes it pins; plan for a current one");
    return 0;
}

/* What axolotl cannot run as the plan was estimated. */
static int check_axolotl(const mp_model *m, const mp_settings *s, char *err)
{
    const mp_framework *fw = settings_framework(s);
    if (strcmp(fw->name, "hf"))
        REFUSE("--emit axolotl writes a plan estimated as axolotl's stack runs it (transformers' Trainer and PEFT): "
               "give --framework hf (the plan has framework '%s')", fw->name);
    emit_engine e;
    if (emit_engine_of(s, &e, err)) return -1;
    if (s->ep > 1) REFUSE("memplan writes axolotl's data-parallel runs only, not ep %lld", (long long)s->ep);
    if (e.kind == EMIT_SINGLE && s->zero > 0)
        REFUSE("ZeRO-%d on one GPU: axolotl shards nothing there (give --gpus N, or --zero 0)", s->zero);
    if (check_precision(s, &e, err) || check_lora(m, s, err)) return -1;
    if (!optimizer_of(s))
        REFUSE("optimizer '%s' (step %s) has no axolotl name memplan writes", mp_optimizer_name(s->optimizer),
               mp_step_impl_name(s->step_impl));
    if (s->checkpointing == MP_CKPT_SELECTIVE)
        REFUSE("checkpointing 'selective' has no axolotl form: gradient_checkpointing recomputes whole layers "
               "(use --checkpointing full or none)");
    const mp_family *f = emit_family_of(m);
    if (s->attention == MP_ATTN_FLASH && !(f && f->sdpa))
        REFUSE("attention 'flash' needs a model whose modeling file declares FlashAttention-2, and %s's does not "
               "(re-plan with --attention eager)", EMIT_TEXT(m->family));
    if (s->attention == MP_ATTN_EAGER && !s->lora_rank && s->precision != MP_FP32 && !sharded(&e))
        REFUSE("attention 'eager' in a 16-bit full fine-tune: axolotl then keeps the embeddings and the head in fp32 "
               "(loaders/model.py:427-476), which the plan does not count (use --attention flash)");
    if (s->ce == MP_CE_CHUNKED)
        REFUSE("--ce chunked has no axolotl form: its chunked_cross_entropy is torchtune's, over the whole logits "
               "(use --ce full)");
    if (s->loader != MP_LOAD_MEMORY) REFUSE("--loader stream has no axolotl form memplan writes (use memory)");
    return 0;
}

/* Tiled attention is FlashAttention-2, which also casts a full fine-tune's
 * embeddings back to 16 bits; it computes in 16 bits only, so an fp32 plan
 * tiles through SDPA. Rows are packed only under FlashAttention-2 (varlen, no
 * mask): SDPA and eager would mask packed rows with a T x T block-diagonal
 * mask (config.py:882-895), so their rows are padded instead. */
static const char *attn_of(const mp_settings *s)
{
    return s->attention == MP_ATTN_EAGER ? "eager" : s->precision == MP_FP32 ? "sdpa" : "flash_attention_2";
}

static bool packed(const mp_settings *s) { return !strcmp(attn_of(s), "flash_attention_2"); }

static void axolotl_summary(sbuf *b, const mp_plan *p)
{
    const mp_model *m = p->m;
    const mp_settings *s = p->s;
    emit_engine e;
    char err[MP_ERR_LEN], tg[64];
    if (emit_engine_of(s, &e, err)) return sbuf_fail(b, "%s", err);
    const mp_precision_desc *pd = mp_precision_desc_of(s->precision);
    sbuf_put(b, "# axolotl config written by memplan for %s (%s).\n", EMIT_TEXT(m->name), EMIT_TEXT(m->family));
    sbuf_put(b, "# The plan it runs (every key below that changes memory says it, and nothing else does):\n");
    sbuf_put(b, "#   precision      %s (%s)\n", pd->v.name, pd->v.help);
    sbuf_put(b, "#   optimizer      %s (optimizer: %s)\n", mp_optimizer_name(s->optimizer), optimizer_of(s));
    sbuf_put(b, "#   checkpointing  %s%s\n", mp_ckpt_name(s->checkpointing),
             s->checkpointing == MP_CKPT_FULL ? " (each decoder layer, non-reentrant)" : "");
    sbuf_put(b, "#   attention      %s (attn_implementation: %s)\n", mp_attention_name(s->attention), attn_of(s));
    if (s->lora_rank)
        sbuf_put(b, "#   LoRA           rank %lld on %s, dropout %g, base %s; PEFT's layers (fused kernels off)\n",
                 (long long)s->lora_rank, mp_lora_targets_name(s->lora_targets, tg, sizeof tg),
                 (double)s->lora_dropout, mp_quant_name(s->quant));
    /* every engine starts under accelerate launch, one process a GPU; axolotl sets DeepSpeed and FSDP up */
    static const char *const engines[] = {[EMIT_SINGLE] = "one process", [EMIT_DDP] = "DDP",
                                          [EMIT_DEEPSPEED] = "DeepSpeed (deepspeed: ds_config.json)",
                                          [EMIT_FSDP] = "FSDP1 (fsdp:"};
    sbuf_put(b, "#   engine         %s", engines[e.kind]);
    if (e.kind == EMIT_FSDP) sbuf_put(b, " %s)", e.stage >= 3 ? "full_shard" : "shard_grad_op");
    if (e.kind == EMIT_DEEPSPEED) sbuf_put(b, ", ZeRO-%d, offload %s", e.stage, mp_offload_name(s->offload));
    sbuf_put(b, ", %lld GPU(s)", (long long)s->gpus);
    sbuf_put(b, "\n#   micro-batch %lld, accumulation %lld, sequence %lld (%s)%s\n", (long long)s->batch,
             (long long)s->accum, (long long)s->seq, packed(s) ? "packed" : "padded", s->compile ? ", compiled" : "");
    sbuf_put(b, "# Predicted peak per GPU: %.2f GiB allocated, %.2f GiB reserved, %.2f GiB on the device\n"
                "# (nvidia-smi).\n",
             p->e->total_bytes / MP_GiB, p->e->reserved_bytes / MP_GiB, p->e->device_bytes / MP_GiB);
}

static void yaml_model(sbuf *b, const mp_model *m)
{
    if (m->hf_id[0]) {
        sbuf_put(b, "base_model: ");
        put_yaml_str(b, "the model's Hub id", m->hf_id);
        sbuf_put(b, "\n");
    } else {
        sbuf_put(b, "base_model: \"path/to/model\"  # memplan has no Hub id for %s: put its id or folder here\n",
                 EMIT_TEXT(m->name));
    }
}

/* The data: a text file, one example a line (datasets' text loader, ds_type text,
 * completion prompts on its "text" column: prompt_strategies/completion.py),
 * packed into rows of sequence_len tokens under FlashAttention-2, else padded to
 * them (pad_to_sequence_len): every step holds the plan's micro-batch and sequence. */
static void yaml_data(sbuf *b, const mp_settings *s)
{
    sbuf_put(b, "\ndatasets:\n  - path: data.txt  # launch.sh links DATA_FILE here\n    ds_type: text\n"
                "    type: completion\nval_set_size: 0\noutput_dir: ./out\n");
    sbuf_put(b, "\nsequence_len: %lld\nsample_packing: %s\npad_to_sequence_len: true\n", (long long)s->seq,
             packed(s) ? "true" : "false");
    sbuf_put(b, "micro_batch_size: %lld\ngradient_accumulation_steps: %lld\n", (long long)s->batch,
             (long long)s->accum);
    sbuf_put(b, "num_epochs: 1\nmax_steps: 1000\nlearning_rate: %s\nlogging_steps: 10\n",
             s->lora_rank ? "0.0002" : "0.00002");
}

static void yaml_training(sbuf *b, const mp_settings *s, const mp_model *m)
{
    const mp_precision_desc *pd = mp_precision_desc_of(s->precision);
    bool half = s->precision != MP_FP32, bf16 = half && pd->needs_bf16;
    sbuf_put(b, "\noptimizer: %s\nbf16: %s\nfp16: %s\n", optimizer_of(s), bf16 ? "true" : "false",
             half && !bf16 ? "true" : "false");
    sbuf_put(b, "gradient_checkpointing: %s\n", s->checkpointing == MP_CKPT_FULL ? "true" : "false");
    if (s->checkpointing == MP_CKPT_FULL) sbuf_put(b, "gradient_checkpointing_kwargs:\n  use_reentrant: false\n");
    sbuf_put(b, "attn_implementation: %s\ntorch_compile: %s\n", attn_of(s), s->compile ? "true" : "false");
    (void)m;
}

static void yaml_lora(sbuf *b, const mp_model *m, const mp_settings *s)
{
    if (!s->lora_rank) return;
    const mp_family *f = emit_family_of(m);
    const char *mods[MP_LORA_NROLES];
    int n = mp_family_targets(f, s->lora_targets, mods);
    char dropout[32]; /* a float, as LoraConfig.lora_dropout is typed (peft.py:80) */
    snprintf(dropout, sizeof dropout, "%g", (double)s->lora_dropout);
    if (!strpbrk(dropout, ".e")) strcat(dropout, ".0");
    sbuf_put(b, "\nadapter: %s\n", s->quant == MP_QUANT_NF4_DQ ? "qlora" : "lora");
    if (s->quant == MP_QUANT_NF4_DQ) sbuf_put(b, "load_in_4bit: true\n");
    if (s->quant == MP_QUANT_INT8) sbuf_put(b, "load_in_8bit: true\n");
    sbuf_put(b, "lora_r: %lld\nlora_alpha: %lld\nlora_dropout: %s\nlora_target_modules:\n", (long long)s->lora_rank,
             (long long)(2 * s->lora_rank), dropout);
    for (int i = 0; i < n; i++) sbuf_put(b, "  - %s\n", mods[i]);
    /* any of these given keeps axolotl from turning the kernels on (config.py:1899-2003) */
    sbuf_put(b, "lora_mlp_kernel: false\nlora_qkv_kernel: false\nlora_o_kernel: false\n");
}

static void yaml_engine(sbuf *b, const mp_model *m, const mp_settings *s)
{
    emit_engine e;
    char err[MP_ERR_LEN];
    if (emit_engine_of(s, &e, err)) return sbuf_fail(b, "%s", err);
    if (e.kind == EMIT_DEEPSPEED) {
        sbuf_put(b, "\ndeepspeed: ds_config.json  # beside this file (the bundle writes it)\n");
    } else if (e.kind == EMIT_FSDP) {
        const mp_family *f = emit_family_of(m);
        sbuf_put(b, "\nfsdp:\n  - %s\n  - auto_wrap\nfsdp_version: 1\nfsdp_config:\n",
                 e.stage >= 3 ? "full_shard" : "shard_grad_op");
        sbuf_put(b, "  auto_wrap_policy: TRANSFORMER_BASED_WRAP\n");
        if (f && f->layer_class) sbuf_put(b, "  transformer_layer_cls_to_wrap: %s\n", f->layer_class);
        /* as emit/accelerate.c: the adapters wrapped apart from the frozen base */
        sbuf_put(b, "  offload_params: false\n  activation_checkpointing: false\n  use_orig_params: %s\n"
                    "  cpu_ram_efficient_loading: true\n  state_dict_type: SHARDED_STATE_DICT\n",
                 s->lora_rank ? "false" : "true");
    }
}

static void write_axolotl(sbuf *b, const mp_plan *p)
{
    const mp_model *m = p->m;
    const mp_settings *s = p->s;
    axolotl_summary(b, p);
    sbuf_put(b, "# Run: bash launch.sh DATA_FILE (the bundle), or\n"
                "#   axolotl train config.yml --launcher accelerate -- --num_processes=%lld\n\n",
             (long long)s->gpus);
    yaml_model(b, m);
    yaml_data(b, s);
    yaml_training(b, s, m);
    yaml_lora(b, m, s);
    yaml_engine(b, m, s);
}

/* launch.sh links the data where config.yml reads it, then starts axolotl from
 * the bundle's folder (config.yml's paths are relative to it) on the plan's
 * GPUs. CDPATH and a name starting with '-' cannot redirect cd or ln. */
static void write_axolotl_launch(sbuf *b, const mp_plan *p)
{
    const mp_settings *s = p->s;
    sbuf_put(b, "#!/usr/bin/env bash\n");
    axolotl_summary(b, p);
    sbuf_put(b, "# usage: bash launch.sh DATA_FILE [axolotl train options: --learning-rate 1e-4 --max-steps 200...]\n"
                "set -eu\n"
                "DATA=\"${1:?usage: bash launch.sh DATA_FILE}\"\n"
                "HERE=\"$(CDPATH='' cd -- \"$(dirname -- \"$0\")\" && pwd)\"\n"
                "case \"$DATA\" in /*) ;; *) DATA=\"$PWD/$DATA\" ;; esac\n"
                "if [ ! -f \"$DATA\" ]; then echo \"launch.sh: no data file '$DATA'\" >&2; exit 2; fi\n"
                "ln -sfn -- \"$DATA\" \"$HERE/data.txt\"\n");
    /* what the plan assumed of the allocator, whatever the environment's */
    sbuf_put(b, "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:%s\n", s->expandable_segments ? "True" : "False");
    sbuf_put(b, "cd -- \"$HERE\"\n"
                "exec axolotl train config.yml --launcher accelerate \"${@:2}\" -- --num_processes=%lld\n",
             (long long)s->gpus);
}

static int bundle_axolotl(const mp_plan *p, emit_file out[EMIT_MAX_FILES], char *err)
{
    emit_engine e;
    if (emit_engine_of(p->s, &e, err)) return -1;
    int n = 0;
    out[n++] = emit_target_axolotl.file;
    if (e.kind == EMIT_DEEPSPEED) {
        if (mp_emit_check(&emit_target_deepspeed, p->m, p->s, err)) return -1;
        out[n++] = emit_target_deepspeed.file;
    }
    out[n++] = (emit_file){"launch.sh", write_axolotl_launch, 0755};
    return n;
}

/* What a reader needs before the first run (as hf's README.txt), then the plan. */
static void readme_axolotl(sbuf *b, const mp_plan *p)
{
    const mp_settings *s = p->s;
    sbuf_put(b, "memplan's axolotl bundle for %s: it trains what the plan below assumed, and nothing else.\n\n",
             EMIT_TEXT(p->m->name));
    sbuf_put(b, "RUN\n  bash launch.sh DATA_FILE [axolotl train options]\n"
                "  It runs axolotl train config.yml on %lld GPU(s) (accelerate launch); options such as\n"
                "  --learning-rate 1e-4 or --max-steps 200 are passed on. It needs axolotl%s installed.\n"
                "  The %s is saved in ./out beside config.yml.\n\n",
             (long long)s->gpus, packed(s) ? " with flash-attn" : "",
             s->lora_rank ? "adapter (PEFT's, not the base)" : "model");
    sbuf_put(b, "DATA\n  DATA_FILE is plain text, one example a line (linked as data.txt, read as completions),\n"
                "  %s into rows of %lld tokens: every step holds the micro-batch and sequence the plan counted.\n\n",
             packed(s) ? "packed" : "each padded", (long long)s->seq);
    emit_readme_model(b, p->m, "config.yml", "base_model");
    sbuf_put(b, "WHAT TO CHANGE\n  The learning rate, steps, epochs, output folder and data change nothing the plan\n"
                "  counted. The micro-batch, accumulation, sequence, precision, optimizer, checkpointing, attention,\n"
                "  LoRA, quantisation and sharding keys are the plan's: to change one, plan again with memplan\n"
                "  and write a new bundle, so that the prediction below stays true. memplan check config.yml\n"
                "  --gpu G reads the file back.\n\nTHE PLAN\n");
    axolotl_summary(b, p);
}

const mp_emit_target emit_target_axolotl = {
    .name = "axolotl", .file = {"config.yml", write_axolotl, 0644}, .check = check_axolotl,
    .bundle = bundle_axolotl, .readme = readme_axolotl, .framework = "hf",
};

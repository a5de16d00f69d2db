/* emit.c — runnable configs for memtrain, Hugging Face, DeepSpeed and accelerate,
 * and the atomic file write every command uses. */
#include "memplan.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct sbuf { char *p; size_t n, cap; int oom; } sbuf;

static void put(sbuf *b, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int need = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        if (need < 0) { b->oom = 1; return; }
        if (b->p && b->n + (size_t)need < b->cap) { b->n += (size_t)need; return; }
        size_t cap = (b->cap ? b->cap * 2 : 4096) + (size_t)need;
        char *np = realloc(b->p, cap);
        if (!np) { b->oom = 1; return; }
        b->p = np, b->cap = cap;
    }
}

static const char *bool01(bool v) { return v ? "1" : "0"; }

static void emit_memtrain(sbuf *b, const mp_model *m, const mp_settings *s)
{
    char tg[64];
    put(b, "# memtrain config written by memplan; run: memtrain --config FILE\n");
    put(b, "# model %s\n", m->name);
    put(b, "family = %s\n", m->mlp == MP_MLP_GATED ? "llama" : "gpt2");
    put(b, "layers = %lld\nhidden = %lld\nheads = %lld\nkv-heads = %lld\nffn = %lld\n",
        (long long)m->layers, (long long)m->hidden, (long long)m->heads, (long long)m->kv_heads,
        (long long)m->ffn);
    put(b, "vocab = %lld\nmax-pos = %lld\ntied = %s\n", (long long)m->vocab, (long long)m->max_pos,
        bool01(m->tied));
    put(b, "precision = %s\noptimizer = %s\nadam8-block = %lld\n", mp_precision_name(s->precision),
        mp_optimizer_name(s->optimizer), (long long)s->adam8_block);
    put(b, "checkpointing = %s\nattention = %s\n", mp_ckpt_name(s->checkpointing),
        mp_attention_name(s->attention));
    put(b, "batch = %lld\naccum = %lld\nseq = %lld\n", (long long)s->batch, (long long)s->accum,
        (long long)s->seq);
    put(b, "ce = %s\nce-chunk = %lld\n", mp_ce_name(s->ce), (long long)s->ce_chunk);
    put(b, "lora-rank = %lld\nlora-targets = %s\nquant = %s\n", (long long)s->lora_rank,
        mp_lora_targets_name(s->lora_targets, tg, sizeof tg), mp_quant_name(s->quant));
    put(b, "loader = %s\nshuffle-buffer = %lld\n", mp_loader_name(s->loader),
        (long long)s->shuffle_buffer);
}

static void emit_hf(sbuf *b, const mp_model *m, const mp_settings *s)
{
    char tg[64];
    const char *mods[] = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
    tg[0] = 0;
    size_t off = 0;
    for (int i = 0; i < 7; i++)
        if (s->lora_targets & (1u << i))
            off += (size_t)snprintf(tg + off, sizeof tg - off, "%s\"%s\"", off ? ", " : "", mods[i]);
    bool bf16 = s->precision == MP_AMP_BF16 || s->precision == MP_MIXED_BF16 || s->precision == MP_PURE_BF16;
    bool fp16 = s->precision == MP_AMP_FP16 || s->precision == MP_MIXED_FP16;
    const char *optim = "adamw_torch";
    switch (s->optimizer) {
    case MP_ADAMW_8BIT: optim = "adamw_bnb_8bit"; break;
    case MP_PAGED_ADAMW: optim = "paged_adamw_32bit"; break;
    case MP_PAGED_ADAMW_8BIT: optim = "paged_adamw_8bit"; break;
    case MP_SGD: case MP_SGD_MOMENTUM: optim = "sgd"; break;
    case MP_ADAFACTOR: optim = "adafactor"; break;
    case MP_LION: optim = "lion_32bit"; break;
    default: break;
    }
    put(b, "# Hugging Face Trainer script written by memplan for %s.\n", m->name);
    put(b, "# Predicted to fit; run: python3 train.py (needs transformers, datasets%s).\n",
        s->lora_rank ? ", peft" : "");
    put(b, "import torch\nfrom datasets import load_dataset\n");
    put(b, "from transformers import (AutoModelForCausalLM, AutoTokenizer, Trainer, TrainingArguments,\n"
           "                          DataCollatorForLanguageModeling%s)\n",
        s->quant != MP_QUANT_NONE ? ", BitsAndBytesConfig" : "");
    if (s->lora_rank) put(b, "from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training\n");
    put(b, "\nMODEL = \"%s\"  # a Hugging Face model id or local path\n", m->name);
    put(b, "DATA = \"data.txt\"  # one text file\n\n");
    const char *dtype = s->precision == MP_FP32 || s->precision == MP_AMP_BF16 || s->precision == MP_AMP_FP16
                            ? "torch.float32" : (bf16 ? "torch.bfloat16" : "torch.float16");
    if (s->quant == MP_QUANT_NF4 || s->quant == MP_QUANT_NF4_DQ)
        put(b, "quant = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type=\"nf4\",\n"
               "                           bnb_4bit_use_double_quant=%s,\n"
               "                           bnb_4bit_compute_dtype=%s)\n",
            s->quant == MP_QUANT_NF4_DQ ? "True" : "False", bf16 ? "torch.bfloat16" : "torch.float16");
    else if (s->quant == MP_QUANT_INT8)
        put(b, "quant = BitsAndBytesConfig(load_in_8bit=True)\n");
    put(b, "model = AutoModelForCausalLM.from_pretrained(MODEL, torch_dtype=%s%s%s)\n",
        s->quant != MP_QUANT_NONE ? (bf16 ? "torch.bfloat16" : "torch.float16") : dtype,
        s->quant != MP_QUANT_NONE ? ", quantization_config=quant" : "",
        s->attention == MP_ATTN_FLASH ? ", attn_implementation=\"sdpa\"" : ", attn_implementation=\"eager\"");
    if (s->lora_rank) {
        if (s->quant != MP_QUANT_NONE)
            put(b, "model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=%s)\n",
                s->checkpointing != MP_CKPT_NONE ? "True" : "False");
        put(b, "model = get_peft_model(model, LoraConfig(r=%lld, lora_alpha=%lld, lora_dropout=0.0,\n"
               "                                         target_modules=[%s], task_type=\"CAUSAL_LM\"))\n",
            (long long)s->lora_rank, (long long)(2 * s->lora_rank), tg);
        put(b, "model.print_trainable_parameters()\n");
    }
    put(b, "tok = AutoTokenizer.from_pretrained(MODEL)\ntok.pad_token = tok.pad_token or tok.eos_token\n");
    put(b, "ds = load_dataset(\"text\", data_files=DATA, streaming=%s)[\"train\"]\n",
        s->loader == MP_LOAD_STREAM ? "True" : "False");
    put(b, "ds = ds.map(lambda x: tok(x[\"text\"], truncation=True, max_length=%lld), batched=True, remove_columns=[\"text\"])\n",
        (long long)s->seq);
    if (s->loader == MP_LOAD_STREAM)
        put(b, "ds = ds.shuffle(buffer_size=%lld, seed=0)\n", (long long)s->shuffle_buffer);
    put(b, "args = TrainingArguments(output_dir=\"out\", per_device_train_batch_size=%lld,\n"
           "                         gradient_accumulation_steps=%lld, bf16=%s, fp16=%s,\n"
           "                         gradient_checkpointing=%s, optim=\"%s\", learning_rate=%s,\n"
           "                         max_steps=1000, logging_steps=10, report_to=[])\n",
        (long long)s->batch, (long long)s->accum, bf16 ? "True" : "False", fp16 ? "True" : "False",
        s->checkpointing != MP_CKPT_NONE ? "True" : "False", optim, s->lora_rank ? "2e-4" : "2e-5");
    put(b, "Trainer(model=model, args=args, train_dataset=ds,\n"
           "        data_collator=DataCollatorForLanguageModeling(tok, mlm=False)).train()\n");
}

static void emit_deepspeed(sbuf *b, const mp_model *m, const mp_settings *s)
{
    int64_t dp = s->gpus / (s->tp * s->pp);
    bool bf16 = s->precision == MP_AMP_BF16 || s->precision == MP_MIXED_BF16 || s->precision == MP_PURE_BF16;
    bool fp16 = s->precision == MP_AMP_FP16 || s->precision == MP_MIXED_FP16;
    put(b, "{\n  \"_comment\": \"DeepSpeed config written by memplan for %s on %lld GPU(s)\",\n",
        m->name, (long long)s->gpus);
    put(b, "  \"train_micro_batch_size_per_gpu\": %lld,\n", (long long)s->batch);
    put(b, "  \"gradient_accumulation_steps\": %lld,\n", (long long)s->accum);
    put(b, "  \"train_batch_size\": %lld,\n", (long long)(s->batch * s->accum * dp));
    put(b, "  \"bf16\": {\"enabled\": %s},\n", bf16 ? "true" : "false");
    put(b, "  \"fp16\": {\"enabled\": %s%s},\n", fp16 ? "true" : "false",
        fp16 ? ", \"loss_scale\": 0, \"initial_scale_power\": 16" : "");
    const char *opt = s->optimizer == MP_SGD || s->optimizer == MP_SGD_MOMENTUM ? "SGD"
                    : s->optimizer == MP_LION ? "Lion" : "AdamW";
    put(b, "  \"optimizer\": {\"type\": \"%s\", \"params\": {\"lr\": 2e-5%s}},\n", opt,
        s->optimizer == MP_SGD_MOMENTUM ? ", \"momentum\": 0.9" : "");
    put(b, "  \"zero_optimization\": {\n    \"stage\": %d", s->zero);
    if (s->offload != MP_OFFLOAD_NONE)
        put(b, ",\n    \"offload_optimizer\": {\"device\": \"cpu\", \"pin_memory\": true}");
    if (s->offload == MP_OFFLOAD_PARAMS)
        put(b, ",\n    \"offload_param\": {\"device\": \"cpu\", \"pin_memory\": true}");
    put(b, ",\n    \"overlap_comm\": true,\n    \"contiguous_gradients\": true\n  },\n");
    put(b, "  \"activation_checkpointing\": {\"partition_activations\": %s, \"contiguous_memory_optimization\": false},\n",
        s->checkpointing == MP_CKPT_FULL ? "true" : "false");
    put(b, "  \"gradient_clipping\": 1.0,\n  \"steps_per_print\": 10\n}\n");
}

static void emit_accelerate(sbuf *b, const mp_model *m, const mp_settings *s)
{
    bool bf16 = s->precision == MP_AMP_BF16 || s->precision == MP_MIXED_BF16 || s->precision == MP_PURE_BF16;
    bool fp16 = s->precision == MP_AMP_FP16 || s->precision == MP_MIXED_FP16;
    put(b, "# accelerate config written by memplan for %s; use: accelerate launch --config_file FILE train.py\n", m->name);
    put(b, "compute_environment: LOCAL_MACHINE\n");
    if (s->gpus > 1 && s->zero > 0) {
        put(b, "distributed_type: FSDP\n");
        put(b, "fsdp_config:\n");
        put(b, "  fsdp_sharding_strategy: %s\n", s->zero >= 3 ? "FULL_SHARD" : "SHARD_GRAD_OP");
        put(b, "  fsdp_offload_params: %s\n", s->offload != MP_OFFLOAD_NONE ? "true" : "false");
        put(b, "  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n");
        put(b, "  fsdp_state_dict_type: SHARDED_STATE_DICT\n");
        put(b, "  fsdp_activation_checkpointing: %s\n", s->checkpointing != MP_CKPT_NONE ? "true" : "false");
        put(b, "  fsdp_use_orig_params: true\n");
    } else {
        put(b, "distributed_type: %s\n", s->gpus > 1 ? "MULTI_GPU" : "NO");
    }
    put(b, "mixed_precision: %s\n", bf16 ? "bf16" : fp16 ? "fp16" : "'no'");
    put(b, "num_machines: 1\nnum_processes: %lld\n", (long long)s->gpus);
    put(b, "gradient_accumulation_steps: %lld\n", (long long)s->accum);
    put(b, "main_training_function: main\nuse_cpu: false\n");
}

int mp_emit(const char *kind, const mp_model *m, const mp_settings *s, char **out, char *err)
{
    sbuf b = {0};
    if (strcmp(kind, "memtrain") == 0) emit_memtrain(&b, m, s);
    else if (strcmp(kind, "hf") == 0) emit_hf(&b, m, s);
    else if (strcmp(kind, "deepspeed") == 0) emit_deepspeed(&b, m, s);
    else if (strcmp(kind, "accelerate") == 0) emit_accelerate(&b, m, s);
    else {
        snprintf(err, MP_ERR_LEN, "unknown --emit '%s' (memtrain, hf, deepspeed, accelerate)", kind);
        return -1;
    }
    if (b.oom || !b.p) {
        free(b.p);
        snprintf(err, MP_ERR_LEN, "out of memory writing the config");
        return -1;
    }
    *out = b.p;
    return 0;
}

int mp_write_file_atomic(const char *path, const char *data, size_t len, char *err)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof tmp) {
        snprintf(err, MP_ERR_LEN, "path too long '%.200s'", path);
        return -1;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        snprintf(err, MP_ERR_LEN, "cannot write '%.200s': %s", path, strerror(errno));
        return -1;
    }
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, data + off, len - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            snprintf(err, MP_ERR_LEN, "cannot write '%.200s': %s", path, strerror(errno));
            close(fd);
            unlink(tmp);
            return -1;
        }
        off += (size_t)w;
    }
    if (fsync(fd) || close(fd)) {
        snprintf(err, MP_ERR_LEN, "cannot write '%.200s': %s", path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    if (rename(tmp, path)) {
        snprintf(err, MP_ERR_LEN, "cannot write '%.200s': %s", path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

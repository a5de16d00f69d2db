/* hf.c — a Hugging Face Trainer script (transformers, PEFT, bitsandbytes). */
#include "emitters.h"

#include <stdio.h>
#include <string.h>

void emit_hf(sbuf *b, const mp_model *m, const mp_settings *s)
{
    char tg[64];
    const char *mods[] = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
    tg[0] = 0;
    size_t off = 0;
    for (int i = 0; i < 7; i++)
        if (s->lora_targets & (1u << i))
            off += (size_t)snprintf(tg + off, sizeof tg - off, "%s\"%s\"", off ? ", " : "", mods[i]);
    const mp_precision_desc *pd = mp_precision_desc_of(s->precision);
    const bool bf16 = pd->hf_flag && !strcmp(pd->hf_flag, "bf16"), fp16 = pd->hf_flag && !strcmp(pd->hf_flag, "fp16");
    const bool ckpt = mp_ckpt_desc_of(s->checkpointing)->hf_gradient_checkpointing;
    const mp_quant_desc *qd = mp_quant_desc_of(s->quant);
    sbuf_put(b, "# Hugging Face Trainer script written by memplan for %s.\n", m->name);
    sbuf_put(b, "# Predicted to fit; run: python3 train.py (needs transformers, datasets%s).\n",
        s->lora_rank ? ", peft" : "");
    sbuf_put(b, "import torch\nfrom datasets import load_dataset\n");
    sbuf_put(b, "from transformers import (AutoModelForCausalLM, AutoTokenizer, Trainer, TrainingArguments,\n"
           "                          DataCollatorForLanguageModeling%s)\n",
        s->quant != MP_QUANT_NONE ? ", BitsAndBytesConfig" : "");
    if (s->lora_rank) sbuf_put(b, "from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training\n");
    sbuf_put(b, "\nMODEL = \"%s\"  # a Hugging Face model id or local path\n", m->name);
    sbuf_put(b, "DATA = \"data.txt\"  # one text file\n\n");
    /* a quantised base computes in the 16-bit type the precision names */
    const char *compute = bf16 ? "torch.bfloat16" : "torch.float16";
    if (qd->bits == 4)
        sbuf_put(b, "quant = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type=\"nf4\",\n"
               "                           bnb_4bit_use_double_quant=%s,\n"
               "                           bnb_4bit_compute_dtype=%s)\n",
            qd->double_quant ? "True" : "False", compute);
    else if (qd->bits == 8)
        sbuf_put(b, "quant = BitsAndBytesConfig(load_in_8bit=True)\n");
    sbuf_put(b, "model = AutoModelForCausalLM.from_pretrained(MODEL, torch_dtype=%s%s%s%s\")\n",
        qd->bits ? compute : pd->torch_dtype, qd->bits ? ", quantization_config=quant" : "",
        ", attn_implementation=\"", mp_attention_desc_of(s->attention)->hf_attn);
    if (s->lora_rank) {
        if (s->quant != MP_QUANT_NONE)
            sbuf_put(b, "model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=%s)\n",
                ckpt ? "True" : "False");
        sbuf_put(b, "model = get_peft_model(model, LoraConfig(r=%lld, lora_alpha=%lld, lora_dropout=0.0,\n"
               "                                         target_modules=[%s], task_type=\"CAUSAL_LM\"))\n",
            (long long)s->lora_rank, (long long)(2 * s->lora_rank), tg);
        sbuf_put(b, "model.print_trainable_parameters()\n");
    }
    sbuf_put(b, "tok = AutoTokenizer.from_pretrained(MODEL)\ntok.pad_token = tok.pad_token or tok.eos_token\n");
    sbuf_put(b, "ds = load_dataset(\"text\", data_files=DATA, streaming=%s)[\"train\"]\n",
        mp_loader_desc_of(s->loader)->hf_streaming ? "True" : "False");
    sbuf_put(b, "ds = ds.map(lambda x: tok(x[\"text\"], truncation=True, max_length=%lld), batched=True, remove_columns=[\"text\"])\n",
        (long long)s->seq);
    if (s->loader == MP_LOAD_STREAM)
        sbuf_put(b, "ds = ds.shuffle(buffer_size=%lld, seed=0)\n", (long long)s->shuffle_buffer);
    sbuf_put(b, "args = TrainingArguments(output_dir=\"out\", per_device_train_batch_size=%lld,\n"
           "                         gradient_accumulation_steps=%lld, bf16=%s, fp16=%s,\n"
           "                         gradient_checkpointing=%s, optim=\"%s\", learning_rate=%s,\n"
           "                         max_steps=1000, logging_steps=10, report_to=[])\n",
        (long long)s->batch, (long long)s->accum, bf16 ? "True" : "False", fp16 ? "True" : "False",
        ckpt ? "True" : "False", mp_optimizer_desc_of(s->optimizer)->hf_optim, s->lora_rank ? "2e-4" : "2e-5");
    sbuf_put(b, "Trainer(model=model, args=args, train_dataset=ds,\n"
           "        data_collator=DataCollatorForLanguageModeling(tok, mlm=False)).train()\n");
}

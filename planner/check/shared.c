/* shared.c — the readers of values several formats share (reader.h): every
 * tool built on transformers' Trainer names the micro-batch, accumulation,
 * checkpointing, optimizer and 16-bit flags its way, and means the same. */
#include "check/reader.h"

#include <stdio.h>
#include <string.h>

#include "common/errors.h"
#include "model/family.h"
#include "settings/vocabulary.h"

void ck_set(ck_state *st, const char *setting, const char *value, const char *key, const char *how)
{
    mp_check *c = st->c;
    int i = 0;
    /* a later key for the same setting replaces the earlier one's record */
    while (i < c->norigins && strcmp(c->origin[i].setting, setting)) i++;
    if (i == c->norigins) {
        if (c->norigins == CK_MAX_ORIGINS) return;
        c->norigins++;
    }
    ck_origin *o = &c->origin[i];
    snprintf(o->setting, sizeof o->setting, "%s", setting);
    mp_quote(value, o->value, sizeof o->value);
    mp_quote(key, o->key, sizeof o->key);
    const char *slash = st->file ? strrchr(st->file, '/') : NULL;
    mp_quote(slash ? slash + 1 : st->file ? st->file : "", o->file, sizeof o->file);
    mp_quote(how ? how : "", o->how, sizeof o->how);
}

int ck_bad(const char *key, const ck_node *v, const char *want, char *err)
{
    char q[64], k[64];
    snprintf(err, MP_ERR_LEN, "'%s' is '%s': %s", mp_quote(key, k, sizeof k),
             mp_quote(ck_text(v) ? ck_text(v) : v && v->kind == CK_LIST ? "(a list)" : v && v->kind == CK_MAP ? "(a map)"
                                                                                       : "(null)",
                      q, sizeof q),
             want);
    return -1;
}

int ck_refuse(const char *key, const char *why, char *err)
{
    char k[64];
    snprintf(err, MP_ERR_LEN, "'%s': %s (memplan does not model it: the estimate would be wrong)",
             mp_quote(key, k, sizeof k), why);
    return -1;
}

static int read_count(const ck_node *v, const char *key, int64_t lo, int64_t hi, int64_t *out, char *err)
{
    char want[64];
    snprintf(want, sizeof want, "want a whole number from %lld to %lld", (long long)lo, (long long)hi);
    if (ck_int(v, out) || *out < lo || *out > hi) return ck_bad(key, v, want, err);
    return 0;
}

static void set_count(ck_state *st, const char *setting, int64_t v, const char *key, unsigned pin)
{
    char t[32];
    snprintf(t, sizeof t, "%lld", (long long)v);
    st->given |= pin;
    ck_set(st, setting, t, key, NULL);
}

int ck_read_batch(ck_state *st, const ck_node *v, const char *key, char *err)
{
    if (read_count(v, key, 1, 1 << 20, &st->s.batch, err)) return -1;
    set_count(st, "batch", st->s.batch, key, MP_PIN_BATCH);
    return 0;
}

int ck_read_accum(ck_state *st, const ck_node *v, const char *key, char *err)
{
    if (read_count(v, key, 1, 1 << 20, &st->s.accum, err)) return -1;
    set_count(st, "accum", st->s.accum, key, MP_PIN_ACCUM);
    return 0;
}

int ck_read_seq(ck_state *st, const ck_node *v, const char *key, char *err)
{
    if (read_count(v, key, 1, 1 << 24, &st->s.seq, err)) return -1;
    set_count(st, "seq", st->s.seq, key, MP_PIN_SEQ);
    return 0;
}

/* transformers' gradient_checkpointing recomputes each decoder layer: memplan's full */
int ck_read_checkpointing(ck_state *st, const ck_node *v, const char *key, char *err)
{
    bool on;
    if (ck_bool(v, &on)) return ck_bad(key, v, "want true or false", err);
    st->s.checkpointing = on ? MP_CKPT_FULL : MP_CKPT_NONE;
    st->given |= MP_PIN_CKPT;
    ck_set(st, "checkpointing", mp_ckpt_name(st->s.checkpointing), key, NULL);
    return 0;
}

int ck_read_lora_rank(ck_state *st, const ck_node *v, const char *key, char *err)
{
    if (read_count(v, key, 1, 1 << 16, &st->s.lora_rank, err)) return -1;
    set_count(st, "lora-rank", st->s.lora_rank, key, MP_PIN_LORA);
    return 0;
}

int ck_read_lora_dropout(ck_state *st, const ck_node *v, const char *key, char *err)
{
    double d;
    if (ck_real(v, &d) || d < 0 || d >= 1) return ck_bad(key, v, "want a probability from 0 to below 1", err);
    st->s.lora_dropout = (float)d;
    ck_set(st, "lora-dropout", ck_text(v), key, NULL);
    return 0;
}

/* TrainingArguments' optim names: the vocabulary's aliases, and the fused AdamW
 * (transformers training_args.py OptimizerNames: adamw_torch_fused) */
int ck_read_optimizer(ck_state *st, const ck_node *v, const char *key, char *err)
{
    const char *name = ck_text(v);
    if (!name) return ck_bad(key, v, "want an optimizer's name", err);
    mp_optimizer o;
    if (!strcmp(name, "adamw_torch_fused")) {
        st->s.optimizer = MP_ADAMW, st->s.step_impl = MP_STEP_FUSED;
        ck_set(st, "optimizer-impl", "fused", key, NULL);
    } else if (!mp_optimizer_parse(name, &o)) {
        st->s.optimizer = o;
    } else {
        char why[96], q[48];
        snprintf(why, sizeof why, "optimizer '%s' keeps state memplan has no row for", mp_quote(name, q, sizeof q));
        return ck_refuse(key, why, err);
    }
    st->given |= MP_PIN_OPTIMIZER;
    ck_set(st, "optimizer", mp_optimizer_name(st->s.optimizer), key, NULL);
    return 0;
}

int ck_read_model(ck_state *st, const ck_node *v, const char *key, char *err)
{
    const char *name = ck_text(v);
    if (!name || !*name || strlen(name) >= sizeof st->model_ref) return ck_bad(key, v, "want a model's Hub id or folder", err);
    snprintf(st->model_ref, sizeof st->model_ref, "%s", name);
    return 0;
}

int ck_read_deepspeed_ref(ck_state *st, const ck_node *v, const char *key, char *err)
{
    if (ck_null(v)) return 0;
    const char *path = ck_text(v);
    if (!path || strlen(path) >= sizeof st->named[0]) return ck_bad(key, v, "want a DeepSpeed config's path", err);
    if (st->nnamed < CK_MAX_FILES) snprintf(st->named[st->nnamed++], sizeof st->named[0], "%s", path);
    st->deepspeed = true;
    return 0;
}

/* DeepSpeed's offload device (its JSON's offload_*.device, accelerate's
 * offload_*_device): cpu, or none; NVMe is ZeRO-Infinity's disk tier, not modelled */
int ck_read_offload_device(ck_state *st, const ck_node *v, const char *key, mp_offload to, char *err)
{
    const char *d = ck_text(v);
    if (ck_null(v) || (d && !strcmp(d, "none"))) return 0;
    if (!d || strcmp(d, "cpu")) {
        if (d && !strcmp(d, "nvme")) return ck_refuse(key, "NVMe offload (ZeRO-Infinity's disk tier)", err);
        return ck_bad(key, v, "want cpu, nvme or none", err);
    }
    if (to == MP_OFFLOAD_PARAMS) snprintf(st->param_offload_key, sizeof st->param_offload_key, "%s", key);
    st->offloaded |= 1u << to;
    if (to > st->s.offload) st->s.offload = to;
    st->given |= MP_PIN_OFFLOAD;
    ck_set(st, "offload", mp_offload_name(st->s.offload), key, NULL);
    return 0;
}

/* memplan's params offload is ZeRO-Infinity's both: parameters and the optimizer
 * on the CPU. Parameters alone leave the optimizer on the GPU, which it does not model. */
int ck_check_offload(const ck_state *st, char *err)
{
    if ((st->offloaded & (1u << MP_OFFLOAD_PARAMS)) && !(st->offloaded & (1u << MP_OFFLOAD_OPTIMIZER)))
        return ck_refuse(st->param_offload_key,
                         "parameters offloaded with the optimizer left on the GPU (memplan's params offload "
                         "moves both)", err);
    return 0;
}

int ck_read_compile(ck_state *st, const ck_node *v, const char *key, char *err)
{
    bool on;
    if (ck_bool(v, &on)) return ck_bad(key, v, "want true or false", err);
    st->s.compile = on;
    ck_set(st, "compile", on ? "on" : "off", key, NULL);
    return 0;
}

int ck_read_lora_targets(ck_state *st, const ck_node *v, const char *key, char *err)
{
    size_t o = 0;
    st->lora_modules[0] = 0;
    snprintf(st->lora_key, sizeof st->lora_key, "%s", key);
    if (v && v->kind == CK_LIST) {
        for (const ck_node *i = v->child; i; i = i->next) {
            const char *t = ck_text(i);
            if (!t || strchr(t, ',')) return ck_bad(key, v, "want module names", err);
            o += (size_t)snprintf(st->lora_modules + o, o < sizeof st->lora_modules ? sizeof st->lora_modules - o : 0,
                                  "%s%s", o ? "," : "", t);
        }
    } else if (ck_text(v)) {
        snprintf(st->lora_modules, sizeof st->lora_modules, "%s", ck_text(v));
    } else if (!ck_null(v)) {
        return ck_bad(key, v, "want module names", err);
    }
    if (o >= sizeof st->lora_modules) return ck_bad(key, v, "want fewer module names", err);
    return 0;
}

int ck_read_attn_implementation(ck_state *st, const ck_node *v, const char *key, char *err)
{
    static const char *const tiled[] = {"sdpa", "flash_attention_2", "flash_attention_3", "flex_attention",
                                        "kernels-community/flash-attn"};
    const char *a = ck_text(v);
    if (ck_null(v)) return 0;
    if (!a) return ck_bad(key, v, "want an attention implementation", err);
    if (!strcmp(a, "eager")) st->s.attention = MP_ATTN_EAGER;
    else {
        size_t i = 0;
        while (i < sizeof tiled / sizeof *tiled && strcmp(a, tiled[i])) i++;
        if (i == sizeof tiled / sizeof *tiled)
            return ck_bad(key, v, "want eager, sdpa, flash_attention_2 or flex_attention", err);
        st->s.attention = MP_ATTN_FLASH;
    }
    st->given |= MP_PIN_ATTENTION;
    ck_set(st, "attention", mp_attention_name(st->s.attention), key, NULL);
    return 0;
}

int ck_read_bf16(ck_state *st, const ck_node *v, const char *key, char *err)
{
    bool on;
    const char *t = ck_text(v);
    if (t && !strcmp(t, "auto")) st->precision16 = -1;
    else if (ck_null(v)) return 0;
    else if (ck_bool(v, &on)) return ck_bad(key, v, "want true, false or auto", err);
    else if (on) st->precision16 = 1, st->bf16_off = false;
    else {
        st->bf16_off = true; /* said off: TRL's default (bf16 unless fp16) does not apply */
        if (st->precision16 == 1 || st->precision16 == -1) st->precision16 = 0;
    }
    return 0;
}

int ck_read_fp16(ck_state *st, const ck_node *v, const char *key, char *err)
{
    bool on;
    if (ck_null(v)) return 0;
    if (ck_bool(v, &on)) return ck_bad(key, v, "want true or false", err);
    if (on) st->precision16 = 2;
    return 0;
}

/* The 16-bit flags ask for autocast; what the weights are stored in is the
 * tool's (its model load) or the engine's (DeepSpeed keeps fp32 masters). */
void ck_resolve_precision(ck_state *st, const char *key_bf16, const char *why)
{
    int p16 = st->precision16;
    char how[160] = "";
    if (p16 == -1) { /* axolotl's bf16: auto: bf16 where the GPU has it, else fp16 */
        p16 = !st->gpu || st->gpu->bf16 ? 1 : 2;
        snprintf(how, sizeof how, "auto: %s on %s", p16 == 1 ? "bf16" : "fp16",
                 st->gpu ? st->gpu->name : "a GPU with bf16");
    }
    mp_precision p = MP_FP32;
    bool lora = st->s.lora_rank > 0;
    if (p16 && st->engine_masters) p = p16 == 1 ? MP_MIXED_BF16 : MP_MIXED_FP16;
    else if (p16 && (st->pure16 || (lora && !st->fp32_load))) /* 16-bit weights (the tools load a LoRA base in 16 bits unless told); adapters fp32 */
        p = p16 == 1 ? (lora ? MP_MIXED_BF16 : MP_PURE_BF16) : (lora ? MP_MIXED_FP16 : MP_AMP_FP16);
    else if (p16) p = p16 == 1 ? MP_AMP_BF16 : MP_AMP_FP16;
    st->s.precision = p;
    st->given |= MP_PIN_PRECISION;
    if (why && *why) {
        size_t n = strlen(how);
        snprintf(how + n, sizeof how - n, "%s%s", n ? "; " : "", why);
    }
    ck_set(st, "precision", mp_precision_name(p), p16 ? key_bf16 : "(no 16-bit flag)", how);
}

void ck_note(ck_state *st, const char *text)
{
    mp_check *c = st->c;
    for (int i = 0; i < c->nnotes; i++)
        if (!strcmp(c->note[i], text)) return;
    if (c->nnotes < CK_MAX_NOTES) snprintf(c->note[c->nnotes++], sizeof c->note[0], "%s", text);
}

static ck_origin *origin_of(const ck_state *st, const char *setting)
{
    for (int i = 0; i < st->c->norigins; i++)
        if (!strcmp(st->c->origin[i].setting, setting)) return &st->c->origin[i];
    return NULL;
}

bool ck_from_flag(const ck_state *st, const char *setting)
{
    const ck_origin *o = origin_of(st, setting);
    return o && !strncmp(o->key, "--", 2);
}

void ck_set_how(ck_state *st, const char *setting, const char *how)
{
    ck_origin *o = origin_of(st, setting);
    if (!o || !strncmp(o->key, "--", 2)) return;
    char buf[2 * sizeof o->how + 8];
    snprintf(buf, sizeof buf, "%s%s%s", o->how, o->how[0] ? "; " : "", how);
    mp_quote(buf, o->how, sizeof o->how);
}

int ck_preference(ck_state *st, const char *method_how, const char *ref_how, char *err)
{
    /* the method: the keys', unless --method (applied before the formats finish) */
    if (st->pref_method && !ck_from_flag(st, "method")) {
        st->s.method = (mp_method)(st->pref_method - 1);
        ck_set(st, "method", mp_method_name(st->s.method), st->pref_key, method_how);
    }
    if (st->s.method == MP_METHOD_SFT) return 0;
    const mp_method_desc *md = mp_method_desc_of(st->s.method);
    /* the reference the keys asked for, unless --reference */
    if (!ck_from_flag(st, "reference")) {
        if (st->pref_ref != MP_REF_DEFAULT && !md->reference && !md->reference_optional) {
            char why[160];
            snprintf(why, sizeof why, "a reference for %s, which has none (TRL's %s)", md->v.name, md->trainer);
            return ck_refuse(st->pref_ref_key, why, err);
        }
        if (st->pref_ref != MP_REF_DEFAULT) {
            st->s.reference = st->pref_ref;
            ck_set(st, "reference", mp_reference_name(st->pref_ref), st->pref_ref_key, ref_how);
        } else {
            ck_set(st, "reference", mp_reference_name(mp_reference_used(&st->s)), "(default)",
                   md->reference || md->reference_optional ? ref_how : "the method has no reference model");
        }
    }
    ck_set_how(st, "batch", md->generates ? "completions: num_generations of each prompt (TRL's RepeatSampler)"
                            : md->rows_per_example == 2 ? "pairs: each a chosen and a rejected row in one batch"
                                                        : "examples, each with its KL partner (KTO)");
    return 0;
}

/* names.c — the stable strings for every setting, shared by flags, configs and JSON. */
#include "memplan.h"

#include <stdio.h>
#include <string.h>

static const char *const precision_names[] = {"fp32", "amp-bf16", "amp-fp16", "mixed-bf16",
                                              "mixed-fp16", "pure-bf16"};
static const char *const optimizer_names[] = {"adamw", "adamw-8bit", "paged-adamw",
                                              "paged-adamw-8bit", "sgd", "sgd-momentum",
                                              "adafactor", "lion"};
static const char *const ckpt_names[] = {"none", "selective", "full"};
static const char *const attention_names[] = {"eager", "flash"};
static const char *const quant_names[] = {"none", "int8", "nf4", "nf4-dq"};
static const char *const offload_names[] = {"none", "optimizer", "params"};
static const char *const ce_names[] = {"full", "chunked"};
static const char *const loader_names[] = {"memory", "stream"};
static const char *const task_names[] = {"any", "full", "lora", "qlora"};
static const char *const component_names[] = {"weights", "gradients", "optimizer",
                                              "activations", "overhead"};

#define N(a) ((int)(sizeof(a) / sizeof *(a)))

static const char *name_of(const char *const *names, int n, int v)
{
    return v >= 0 && v < n ? names[v] : "?";
}

static int parse_in(const char *const *names, int n, const char *s, int *out)
{
    for (int i = 0; s && i < n; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = i;
            return 0;
        }
    return -1;
}

#define NAMED(type, fn, table)                                                     \
    const char *mp_##fn##_name(type v) { return name_of(table, N(table), (int)v); } \
    int mp_##fn##_parse(const char *s, type *out)                                   \
    {                                                                                \
        int v;                                                                       \
        if (parse_in(table, N(table), s, &v)) return -1;                             \
        *out = (type)v;                                                              \
        return 0;                                                                    \
    }

NAMED(mp_precision, precision, precision_names)
NAMED(mp_optimizer, optimizer, optimizer_names)
NAMED(mp_ckpt, ckpt, ckpt_names)
NAMED(mp_attention, attention, attention_names)
NAMED(mp_quant, quant, quant_names)
NAMED(mp_offload, offload, offload_names)
NAMED(mp_ce, ce, ce_names)
NAMED(mp_loader, loader, loader_names)
NAMED(mp_task, task, task_names)

const char *mp_component_name(int c) { return name_of(component_names, N(component_names), c); }

static const struct { const char *name; unsigned bits; } target_names[] = {
    {"q", MP_LORA_Q}, {"k", MP_LORA_K}, {"v", MP_LORA_V}, {"o", MP_LORA_O},
    {"gate", MP_LORA_GATE}, {"up", MP_LORA_UP}, {"down", MP_LORA_DOWN},
    {"attn", MP_LORA_ATTN}, {"mlp", MP_LORA_MLP}, {"all", MP_LORA_ALL},
    /* Hugging Face module names, so PEFT's target lists paste in */
    {"q_proj", MP_LORA_Q}, {"k_proj", MP_LORA_K}, {"v_proj", MP_LORA_V},
    {"o_proj", MP_LORA_O}, {"gate_proj", MP_LORA_GATE}, {"up_proj", MP_LORA_UP},
    {"down_proj", MP_LORA_DOWN}, {"all-linear", MP_LORA_ALL},
};

int mp_lora_targets_parse(const char *s, unsigned *bits)
{
    unsigned b = 0;
    if (!s || !*s) return -1;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int found = 0;
        for (int i = 0; i < N(target_names); i++)
            if (strcmp(tok, target_names[i].name) == 0) {
                b |= target_names[i].bits;
                found = 1;
            }
        if (!found) return -1;
    }
    *bits = b;
    return b ? 0 : -1;
}

const char *mp_lora_targets_name(unsigned bits, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = 0;
    for (int i = 0; i < 7; i++)
        if (bits & (1u << i))
            o += (size_t)snprintf(buf + o, o < len ? len - o : 0, "%s%s", o ? "," : "",
                                  target_names[i].name);
    return buf;
}

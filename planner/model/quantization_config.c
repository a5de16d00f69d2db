/* quantization_config.c — how a pre-quantised checkpoint stores its linear
 * layers, from config.json's quantization_config as transformers writes it
 * (huggingface/transformers src/transformers/utils/quantization_config.py
 * @000e2231: QuantizationMethod "bitsandbytes", "gptq", "awq";
 * BitsAndBytesConfig load_in_8bit, load_in_4bit, bnb_4bit_quant_type,
 * bnb_4bit_use_double_quant; GPTQConfig and AwqConfig bits and group_size,
 * 4 and 128 by default, group_size -1 for one group per row). */
#include "model/quantization_config.h"
#include "common/errors.h"
#include "model/model.h"

#include <stdio.h>
#include <string.h>

static bool flag(json_t *qc, const char *key)
{
    return json_is_true(json_object_get(qc, key));
}

/* An integer key with its default; -1 (with err) if present but not an integer. */
static int int_key(json_t *qc, const char *key, int64_t dflt, int64_t *out, const char *path, char *err)
{
    json_t *v = json_object_get(qc, key);
    *out = dflt;
    if (!v || json_is_null(v)) return 0;
    if (!json_is_integer(v)) {
        snprintf(err, MP_ERR_LEN, "config '%.150s': quantization_config '%s' must be an integer", path, key);
        return -1;
    }
    *out = json_integer_value(v);
    return 0;
}

/* bitsandbytes: 4-bit NF4 (FP4 stores the same 4 bits and absmax) or LLM.int8. */
static int read_bitsandbytes(json_t *qc, const char *path, mp_model *m, char *err)
{
    /* transformers' BitsAndBytesConfig raises on both */
    if (flag(qc, "load_in_4bit") && flag(qc, "load_in_8bit")) {
        snprintf(err, MP_ERR_LEN, "config '%.120s': quantization_config sets both load_in_4bit and load_in_8bit "
                 "(transformers refuses both at once)", path);
        return -1;
    }
    if (flag(qc, "load_in_4bit"))
        m->stored_quant = flag(qc, "bnb_4bit_use_double_quant") ? MP_QUANT_NF4_DQ : MP_QUANT_NF4;
    else if (flag(qc, "load_in_8bit"))
        m->stored_quant = MP_QUANT_INT8;
    else {
        snprintf(err, MP_ERR_LEN,
                 "config '%.150s': quantization_config 'bitsandbytes' sets neither load_in_4bit nor load_in_8bit",
                 path);
        return -1;
    }
    return 0;
}

/* GPTQ and AWQ: packed integers at `bits`, one scale and zero point per group. */
static int read_packed(json_t *qc, const char *method, mp_quant q, const char *path, mp_model *m, char *err)
{
    int64_t bits, group;
    if (int_key(qc, "bits", 4, &bits, path, err) || int_key(qc, "group_size", 128, &group, path, err)) return -1;
    if (bits != 2 && bits != 3 && bits != 4 && bits != 8) {
        snprintf(err, MP_ERR_LEN, "config '%.150s': %s 'bits' '%lld' is not 2, 3, 4 or 8", path, method,
                 (long long)bits);
        return -1;
    }
    if (group == 0 || group < -1 || group > (int64_t)1 << 30) {
        snprintf(err, MP_ERR_LEN, "config '%.150s': %s 'group_size' '%lld' is not positive or -1", path, method,
                 (long long)group);
        return -1;
    }
    m->stored_quant = q;
    m->quant_bits = (int)bits;
    m->quant_group = group > 0 ? group : 0;
    return 0;
}

int hf_quantization_config(json_t *config, const char *path, mp_model *m, char *err)
{
    json_t *qc = json_object_get(config, "quantization_config");
    m->stored_quant = MP_QUANT_NONE;
    if (!qc || json_is_null(qc)) return 0;
    if (!json_is_object(qc)) {
        snprintf(err, MP_ERR_LEN, "config '%.150s': 'quantization_config' is not an object", path);
        return -1;
    }
    const char *method = json_string_value(json_object_get(qc, "quant_method"));
    /* configs saved before quant_method existed are bitsandbytes' */
    if (!method && (json_object_get(qc, "load_in_4bit") || json_object_get(qc, "load_in_8bit")))
        method = "bitsandbytes";
    if (!method) {
        snprintf(err, MP_ERR_LEN, "config '%.150s': quantization_config has no 'quant_method'", path);
        return -1;
    }
    if (!strcmp(method, "bitsandbytes")) return read_bitsandbytes(qc, path, m, err);
    if (!strcmp(method, "gptq")) return read_packed(qc, "gptq", MP_QUANT_GPTQ, path, m, err);
    if (!strcmp(method, "awq")) return read_packed(qc, "awq", MP_QUANT_AWQ, path, m, err);
    snprintf(err, MP_ERR_LEN,
             "config '%.100s': quantization_config quant_method '%.40s' is not one memplan models (bitsandbytes, "
             "gptq, awq)", path, method);
    return -1;
}

int hf_quantization_groups_check(const mp_model *m, const char *path, char *err)
{
    if ((m->stored_quant != MP_QUANT_GPTQ && m->stored_quant != MP_QUANT_AWQ) || m->quant_group <= 0) return 0;
    mp_linear lin[16];
    int n = mp_model_linears(m, lin, 16);
    for (int i = 0; i < n && i < 16; i++)
        if (lin[i].in % m->quant_group) {
            snprintf(err, MP_ERR_LEN, "config '%.120s': %s 'group_size' %lld does not divide the %s projection's "
                     "input width %lld (memplan counts whole groups of each row)", path,
                     m->stored_quant == MP_QUANT_GPTQ ? "gptq" : "awq", (long long)m->quant_group, lin[i].name,
                     (long long)lin[i].in);
            return -1;
        }
    return 0;
}

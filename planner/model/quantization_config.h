/* quantization_config.h — a pre-quantised checkpoint's storage, from its
 * config.json (internal to the planner library). */
#ifndef MP_QUANTIZATION_CONFIG_H
#define MP_QUANTIZATION_CONFIG_H

#include "model/model.h"

#include <jansson.h>

/* Read config.json's quantization_config into m->stored_quant, quant_bits and
 * quant_group; absent or null: a 16/32-bit checkpoint. 0, or -1 with err. */
int hf_quantization_config(json_t *config, const char *path, mp_model *m, char *err);

/* A GPTQ/AWQ group size must divide every quantised layer's input width: the
 * estimate counts in / group_size groups per row. Called on the finished model;
 * 0, or -1 with err. */
int hf_quantization_groups_check(const mp_model *m, const char *path, char *err);

#endif

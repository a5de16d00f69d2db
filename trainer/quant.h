/*
 * quant.h — 4-bit NormalFloat (NF4) storage for frozen QLoRA base weights,
 * with optional double quantisation of the block constants
 * (Dettmers et al. 2023, "QLoRA").
 *
 * A tensor of n weights is cut into blocks of 64. Each block keeps its absmax
 * and a 4-bit index per weight into the 16 NF4 levels (w / absmax is rounded
 * to the nearest level). Two indices per byte, low nibble first.
 *
 * Double quantisation (dq): the nb = ceil(n/64) absmax values are stored as
 * int8: their mean is subtracted, then each group of 256 is scaled by its own
 * fp32 absmax to [-127, 127]. The fp32 mean is kept with the group scales.
 *
 * Bytes per tensor (each a separate allocation, tag MT_WEIGHTS):
 *   codes   ceil(n/2)
 *   no dq:  absmax  nb * 4
 *   dq:     absmax  nb * 1,  scales  (ceil(nb/256) + 1) * 4   (+1: the mean)
 */
#ifndef MT_QUANT_H
#define MT_QUANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "precision.h"

#define MT_NF4_BLOCK 64
#define MT_NF4_DQ_BLOCK 256

extern const float mt_nf4_levels[16];

typedef struct mt_nf4 {
    size_t n, nblocks;
    bool dq;
    uint8_t *codes;    /* ceil(n/2) bytes */
    float *absmax;     /* nblocks floats (no dq) */
    int8_t *absmax_q;  /* nblocks bytes (dq) */
    float *scales;     /* ceil(nblocks/256) group scales, then the mean (dq) */
} mt_nf4;

/* Bytes the tensor's storage takes (what mt_nf4_init allocates). */
size_t mt_nf4_bytes(size_t n, bool dq);
int mt_nf4_init(mt_nf4 *q, size_t n, bool dq);
void mt_nf4_free(mt_nf4 *q);

/* Quantise values produced block by block by `gen(ctx, dst, i0, cnt)` (fills
 * dst[0..cnt) with elements i0..i0+cnt). With dq the fp32 absmax values are
 * kept in `scratch` (nblocks floats) until they are double-quantised; NULL
 * allocates a temporary (MT_OTHER) for the call. */
typedef void (*mt_nf4_gen)(void *ctx, float *dst, size_t i0, size_t cnt);
int mt_nf4_quantize_gen(mt_nf4 *q, mt_nf4_gen gen, void *ctx, float *scratch);
int mt_nf4_quantize(mt_nf4 *q, const float *w);

/* out[0..n) = dequantised values, stored as dt. */
void mt_nf4_dequantize(const mt_nf4 *q, void *out, mt_dtype dt);
/* Element e, dequantised. */
float mt_nf4_get(const mt_nf4 *q, size_t e);
/* The absmax of block j as used by dequantisation. */
float mt_nf4_block_absmax(const mt_nf4 *q, size_t j);

/* Serialised size and copy of the storage (for checkpoints). */
size_t mt_nf4_state_size(const mt_nf4 *q);
void mt_nf4_state_save(const mt_nf4 *q, uint8_t *buf);
void mt_nf4_state_load(mt_nf4 *q, const uint8_t *buf);
/* A stored state read back, range-checked: every block constant finite and not
 * negative (dq: the group scales and the mean; the int8 codes within [-127, 127], as
 * quantisation writes them). 0, or -1 with mt_last_error(). Every 4-bit code is a level. */
int mt_nf4_state_check(const mt_nf4 *q, const uint8_t *buf);

#endif

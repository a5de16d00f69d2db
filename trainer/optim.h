/*
 * optim.h — optimizers over one flat array of trainable parameters.
 *
 *   adamw       m, v fp32 (n*4 bytes each), decoupled weight decay
 *   adamw-8bit  m, v as 8-bit codes (n bytes each) with one fp32 absmax per
 *               block of `block` elements per state (nb = ceil(n/block));
 *               a block is dequantised, updated and requantised
 *   sgd-momentum one fp32 buffer (n*4 bytes)
 *   sgd         no state
 *
 * The step reads gradients of any storage type, multiplies them by `gscale`
 * (1 / loss scale), updates the fp32 weights `w` (the master copy in mixed
 * precision), refreshes the 16-bit working copy if given, and can zero the
 * gradients in the same pass (saves a separate memset over the gradients).
 *
 * Weight decay applies to the segments marked `decay` (matrices), not to
 * biases and norm gains.
 */
#ifndef MT_OPTIM_H
#define MT_OPTIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "settings/settings.h"
#include "precision.h"


/* memtrain's own hyper-parameters; the optimizer, its 8-bit block and its
 * state's element size are the planner's settings (mp_settings). */
typedef struct mt_opt_hparams {
    float lr, beta1, beta2, eps, weight_decay, momentum;
} mt_opt_hparams;

typedef struct mt_seg {
    size_t off, n;
    bool decay;
} mt_seg;

typedef struct mt_optim {
    mp_optimizer kind;
    mt_opt_hparams hp;
    size_t n;
    long t;                  /* optimizer steps taken */
    float *m, *v;            /* adamw; m is the momentum buffer for sgd-momentum */
    uint8_t *m8, *v8;        /* adamw-8bit codes */
    float *m_amax, *v_amax;  /* adamw-8bit block scales */
    size_t block, nblocks;   /* adamw-8bit: values per block scale (--adam8-block), blocks */
    size_t value_bytes;      /* bytes of one state value: the planner's (mp_state_value_bytes) */
    float *scratch;          /* adamw-8bit: 2*block floats (MT_WORKSPACE) */
    const mt_seg *segs;      /* owned by the caller, sorted, covering [0, n) */
    size_t nsegs;
} mt_optim;

/* Bytes of optimizer state (MT_OPTIMIZER) for n parameters under the settings:
 * the optimizer row's states of n values of mp_state_value_bytes each, and a
 * low-bit optimizer's fp32 scale per state per --adam8-block values. */
size_t mt_optim_state_bytes(const mp_settings *s, size_t n);

/* The settings' optimizer over n values: its kind, block and state size are the
 * settings' (a state size the kernel does not store is refused); 0, or -1 with
 * mt_last_error(). */
int mt_optim_init(mt_optim *o, const mp_settings *s, const mt_opt_hparams *hp, size_t n,
                  const mt_seg *segs, size_t nsegs);
void mt_optim_free(mt_optim *o);
void mt_optim_step(mt_optim *o, float *w, void *grad, mt_dtype gdt, float gscale, void *w16,
                   mt_dtype wdt, bool zero_grad);

/* The 8-bit code maps (exposed for tests). Signed: codes 0..254, value
 * (c - 127 >= 0 ? + : -) smag[|c - 127|]; unsigned: codes 0..255, umag[c]. */
float mt_q8_signed_value(uint8_t c);
float mt_q8_unsigned_value(uint8_t c);
uint8_t mt_q8_signed_code(float x);   /* x in [-1, 1] */
uint8_t mt_q8_unsigned_code(float x); /* x in [0, 1] */

/* Checkpoint state: raw bytes of all state arrays plus the step count. */
size_t mt_optim_state_size(const mt_optim *o);
void mt_optim_state_save(const mt_optim *o, uint8_t *buf);
void mt_optim_state_load(mt_optim *o, const uint8_t *buf);
/* A state read back, range-checked before it is loaded: the step count is `steps`
 * (the updates the run made), 8-bit codes are codes of the maps (the signed map's
 * 255 is none), block scales finite and not negative. fp32 moments are kept as
 * they are (a float the step can take). 0, or -1 with mt_last_error(). */
int mt_optim_state_check(const mt_optim *o, const uint8_t *buf, long steps);

#endif

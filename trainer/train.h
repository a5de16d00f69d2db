/*
 * train.h — memtrain's training API: a model, its optimizer and its data from
 * one mt_config; one optimizer step at a time; allocator statistics; and the
 * complete training state as a byte buffer for checkpoints.
 *
 *   mt_config c;
 *   mt_config_default(&c);  ... set fields ...
 *   if (mt_config_finish(&c, err) != 0) ...
 *   mt_trainer *t;
 *   if (mt_trainer_create(&c, &t, err) != 0) ...
 *   for (...) { mt_step_result r; mt_trainer_step(t, &r, err); }
 *   mt_mem_stats s; mt_mem_get(&s);          per-tag current / peak bytes
 *   size_t n = mt_trainer_state_size(t);     checkpoint
 *   mt_trainer_state_save(t, buf, n, err);
 *   mt_trainer_free(t);
 *
 * Functions return 0 on success, -1 on failure with a one-line message in
 * err (MT_ERR_LEN bytes; may be NULL). Nothing prints, nothing exits. Not
 * thread-safe.
 */
#ifndef MT_TRAIN_H
#define MT_TRAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alloc.h"
#include "config.h"
#include "model.h"

typedef struct mt_trainer mt_trainer;

typedef struct mt_step_result {
    float loss;        /* mean cross-entropy over the step's accum micro-batches (of every rank) */
    bool skipped;      /* fp16: inf/nan gradients, no update, loss scale halved */
    float loss_scale;  /* the loss scale this step used (1 unless fp16) */
    long step;         /* optimizer steps attempted so far, this one included */
    long skipped_total;
    size_t tokens;     /* tokens processed by this step, over all ranks: B*T*accum*ranks */
    double allreduce_wait_s; /* ZeRO-0/1 over several ranks: seconds this rank waited, after its
                                backward, for the gradients' sum (what the backward did not hide) */
    bool stopped;      /* the stop (mt_trainer_set_stop) came mid-step: the step was abandoned and
                          the trainer is as the last completed step left it (step not counted) */
} mt_step_result;

int mt_trainer_create(const mt_config *cfg, mt_trainer **out, char *err);
void mt_trainer_free(mt_trainer *t);

/* One optimizer step over cfg.accum micro-batches. */
int mt_trainer_step(mt_trainer *t, mt_step_result *r, char *err);
/* A stop asked between layers (mt_model_set_stop: every rank in the same order).
 * When it says true mid-step, mt_trainer_step abandons the step: its partial
 * gradients are dropped (ZeRO-0/1's sums in flight finished first, alike on every
 * rank), and with keep_data the data loader goes back to where the step found it,
 * so a checkpoint then is the last completed step's. keep_data costs a copy of the
 * loader's state (mt_data_state_size) per step, outside the tagged allocator. */
int mt_trainer_set_stop(mt_trainer *t, mt_model_stop_fn stop, void *ctx, bool keep_data, char *err);
/* Mean loss over `batches` further micro-batches, without gradients (the
 * loader advances). */
int mt_trainer_eval(mt_trainer *t, int batches, float *loss, char *err);
void mt_trainer_set_lr(mt_trainer *t, float lr);

mt_model *mt_trainer_model(mt_trainer *t);
const mt_config *mt_trainer_config(const mt_trainer *t);
long mt_trainer_steps(const mt_trainer *t);

/* The allocator's per-tag statistics (same as mt_mem_get). */
void mt_trainer_mem(const mt_trainer *t, mt_mem_stats *s);

/* All state: parameters (and NF4 stores, master copies), optimizer state,
 * loss scaler, data loader position and shuffle buffer, RNG, step count.
 * Loading needs a trainer created from the same configuration. */
size_t mt_trainer_state_size(const mt_trainer *t);
int mt_trainer_state_save(const mt_trainer *t, void *buf, size_t len, char *err);
/* A state read back is range-checked whole (steps, the loss scaler, the optimizer's
 * step count and 8-bit codes and scales, NF4 scales, the data position and tokens)
 * before anything is loaded: refused, the trainer is as it was. The check alone
 * gives the state's step. */
int mt_trainer_state_check(const mt_trainer *t, const void *buf, size_t len, long *step, char *err);
int mt_trainer_state_load(mt_trainer *t, const void *buf, size_t len, char *err);

#endif

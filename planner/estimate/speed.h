/* speed.h — the time of one optimizer step, to rank plans that fit. */
#ifndef SPEED_H
#define SPEED_H

#include "estimate/estimate.h"
#include "model/model.h"
#include "profiles/profiles.h"
#include "settings/settings.h"

/* Fill flops_per_step and, with a GPU, step_seconds, tokens_per_s and mfu;
 * reads e's parameter counts and weights' peak. */
void speed_model(const mp_model *m, const mp_settings *s, const mp_gpu *gpu, mp_estimate *e,
                 double trainable, double dp);

#endif

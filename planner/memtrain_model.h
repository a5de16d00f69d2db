/* memtrain_model.h — the prediction for memplan's reference trainer. */
#ifndef MEMTRAIN_MODEL_H
#define MEMTRAIN_MODEL_H

#include "memplan.h"

/* The exact prediction for `--framework memtrain` (memtrain_model.c). */
int memtrain_estimate(const mp_model *m, const mp_settings *s, mp_estimate *e, bool explain, char *err);

#endif

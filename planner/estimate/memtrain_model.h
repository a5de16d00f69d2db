/* memtrain_model.h — the prediction for memplan's reference trainer. */
#ifndef MEMTRAIN_MODEL_H
#define MEMTRAIN_MODEL_H

#include "estimate/estimate.h"
#include "model/model.h"
#include "settings/settings.h"

/* 0 when memtrain implements every setting of the plan, else -1 and why in err. */
int memtrain_check_supported(const mp_model *m, const mp_settings *s, char *err);
/* 0 when memtrain runs this method with this reference (resolved: mp_reference_used),
 * LoRA rank and ZeRO stage, else -1 and why in err (one line the trainer prints too). */
int memtrain_reference_refused(mp_method method, mp_reference ref, int64_t lora_rank, int zero, char *err);
/* The exact prediction for `--framework memtrain` (memtrain_model.c). */
int memtrain_estimate(const mp_model *m, const mp_settings *s, mp_estimate *e, bool explain, char *err);

#endif

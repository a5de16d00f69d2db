/* run_plan.h — the planner's model and settings of a memtrain run, read from
 * its metrics file's header, so the what-if view can open on the run (W). */
#ifndef MTOP_RUN_PLAN_H
#define MTOP_RUN_PLAN_H

#include "model/model.h"
#include "settings/settings.h"
#include "metrics.h"

/* 0, or -1 with err (MP_ERR_LEN) when the header lacks the model's shape
 * (memtrain writes it from this version on) or holds a value memplan refuses. */
int mtop_plan_of_run(const mtop_meta *meta, mp_model *m, mp_settings *s, char *err);

#endif

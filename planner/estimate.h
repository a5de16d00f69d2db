/* estimate.h — the estimate as the library's own callers run it. */
#ifndef ESTIMATE_H
#define ESTIMATE_H

#include "memplan.h"

/* mp_estimate_run with or without the explanatory terms (the search and the
 * solver skip them). */
int mp_estimate_ex(const mp_model *m, const mp_settings *s, const mp_gpu *gpu, mp_estimate *e,
                   bool explain, char *err);

#endif

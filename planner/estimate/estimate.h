/* estimate.h — the estimate as the library's own callers run it. */
#ifndef ESTIMATE_H
#define ESTIMATE_H

#include "memplan.h"

/* mp_estimate_run with or without the explanatory terms (the search and the
 * solver skip them). */
int mp_estimate_ex(const mp_model *m, const mp_settings *s, const mp_gpu *gpu, mp_estimate *e,
                   bool explain, char *err);
/* The estimate without replaying the step through the caching allocator: its
 * reserved and device figures are lower bounds of the full estimate's (what
 * the search screens candidates with before estimating them whole). */
int mp_estimate_screen(const mp_model *m, const mp_settings *s, const mp_gpu *gpu, mp_estimate *e, char *err);

#endif

/*
 * whatif.h — the what-if planner view's state: a model, settings and a GPU,
 * re-estimated with mp_estimate_run after every change. Pure: no I/O beyond
 * the planner's profile lookups, no drawing.
 *
 *     mtop_whatif w;
 *     mtop_whatif_init(&w, &model, &settings, &gpu, 0.10);
 *     mtop_whatif_apply(&w, MTOP_ACT_BATCH_UP);   // w.ok, w.e, w.fits, or w.err
 */
#ifndef MTOP_WHATIF_H
#define MTOP_WHATIF_H

#include <stdbool.h>

#include "common/errors.h"
#include "estimate/estimate.h"
#include "model/model.h"
#include "profiles/profiles.h"
#include "settings/settings.h"

/* Every action a key can trigger, in both views. */
typedef enum {
    MTOP_ACT_NONE,
    MTOP_ACT_QUIT, MTOP_ACT_HELP, MTOP_ACT_NEXT, MTOP_ACT_PREV, MTOP_ACT_REDRAW,
    /* run view only: a multi-rank run's rank whose panels are shown */
    MTOP_ACT_RANK_NEXT, MTOP_ACT_RANK_PREV,
    /* the what-if view on the followed run's plan, and back */
    MTOP_ACT_WHATIF_RUN,
    /* what-if only */
    MTOP_ACT_BATCH_UP, MTOP_ACT_BATCH_DOWN, MTOP_ACT_ACCUM_UP, MTOP_ACT_ACCUM_DOWN,
    MTOP_ACT_SEQ_UP, MTOP_ACT_SEQ_DOWN, MTOP_ACT_PRECISION, MTOP_ACT_OPTIMIZER,
    MTOP_ACT_CKPT, MTOP_ACT_LORA, MTOP_ACT_QUANT, MTOP_ACT_ATTENTION, MTOP_ACT_CE,
    MTOP_ACT_GPU_NEXT, MTOP_ACT_GPU_PREV, MTOP_ACT_RESET,
    MTOP_NACT
} mtop_action;

/* The key table: what the help screen and the man page list. */
typedef struct mtop_keydef {
    int key;              /* a character or a curses KEY_* code */
    const char *label;    /* as shown: "+", "Tab", "Up" */
    unsigned views;       /* bit 0: run view, bit 1: what-if view */
    mtop_action action;
    const char *help;
} mtop_keydef;
extern const mtop_keydef mtop_keys[];
extern const int mtop_nkeys;
/* The action of a key in a view (0 run, 1 what-if), MTOP_ACT_NONE if none. */
mtop_action mtop_key_action(int key, int view);

#define MTOP_LORA_RANKS {0, 8, 16, 64}

typedef struct mtop_whatif {
    mp_model model;
    mp_settings s, initial;
    mp_gpu gpu, initial_gpu;
    bool have_gpu, initial_have_gpu;
    int gpu_index;        /* position in mp_gpu_at(), -1 for a size or none */
    int initial_index;
    double headroom;      /* fraction kept free (0.10) */
    bool ok;              /* the estimate is valid */
    char err[MP_ERR_LEN]; /* the library's message when it is not */
    bool fits;
    mp_estimate e;
} mtop_whatif;

/* gpu may be NULL (no budget). Runs the first estimate. */
void mtop_whatif_init(mtop_whatif *w, const mp_model *m, const mp_settings *s, const mp_gpu *gpu,
                      double headroom);
/* Re-estimate from w->s and w->gpu. */
void mtop_whatif_update(mtop_whatif *w);
/* Apply a what-if action and re-estimate; false if it is not a what-if action. */
bool mtop_whatif_apply(mtop_whatif *w, mtop_action a);
/* The budget the verdict uses (0 without a GPU), and the usable part. */
double mtop_whatif_budget(const mtop_whatif *w);

/* The what-if state for --once, with the screen's names: model params gpu
 * budget headroom, the knobs (batch accum seq precision optimizer
 * checkpointing lora-rank quant attention ce), fits, error, per component
 * at_peak own_peak share, then allocated reserved device host. Bytes are
 * bytes, share a percentage. malloc'd; NULL when out of memory. */
char *mtop_whatif_json(const mtop_whatif *w);
char *mtop_whatif_csv(const mtop_whatif *w);

#endif

/* search.h — every combination of techniques estimated, ranked, the best
 * that fits chosen; and the inverse questions (the largest batch, sequence
 * or model that fits). */
#ifndef MP_SEARCH_H
#define MP_SEARCH_H

#include <stdbool.h>
#include <stddef.h>

#include "estimate/estimate.h"
#include "model/model.h"
#include "profiles/profiles.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"

/* A compact result per combination; re-run mp_estimate_run for the details. */
typedef struct mp_candidate {
    mp_settings s;
    mp_task task;             /* full, lora or qlora */
    int tier;                 /* the optimizer family: 0 AdamW-class, 1 other adaptive, 2 SGD */
    bool fits;
    double device_bytes, total_bytes, host_bytes, trainable;
    double at_peak[MP_NCOMP];
    double tokens_per_s;
    double offloaded_bytes;   /* states moved to host RAM */
    double host_node_bytes;   /* host RAM of one node's processes */
    double band_best;         /* tokens/s of the fastest plan it is ranked against (its group) */
    bool verified;            /* estimated whole (the allocator replayed), not only screened */
    int group;                /* its ranking group (mp_rank_group), set as it is made */
    unsigned parts;           /* rule 7's moving parts present, the weightiest the highest bit */
} mp_candidate;

/* The speed model's error: plans within this fraction of the fastest of
 * their group are ranked as equally fast, the simpler first. */
#define MP_SPEED_TIE 0.05

typedef struct mp_search_opts {
    mp_task task;
    unsigned pinned;
    int64_t global_batch;     /* sequences per optimizer step, 0: none asked */
    double budget_bytes;      /* per GPU */
    double headroom;          /* fraction kept free, default 0.10 */
    double host_budget_bytes; /* host RAM per node; 0: no limit */
    int64_t max_batch;        /* largest micro-batch tried (default 64) */
    bool prefer_speed;        /* rank by tokens/s alone, not task and optimizer first */
    bool exhaustive;          /* also estimate dominated twins (fp16 beside bf16, paged beside
                                 unpaged), which otherwise are counted but skipped */
    /* Restrict unpinned axes to some values: bit (1 << value) of mp_precision and
     * mp_optimizer; 0 tries them all. (memplan table searches the AdamW-class tier
     * first, which outranks the others whenever one of its plans fits.) */
    unsigned only_precisions, only_optimizers;
    /* Only plans this predicate accepts: 0, else -1 with why it does not (one line);
     * NULL: any. It may first set what the caller's launcher decides whatever the plan
     * says (LLaMA-Factory's torchrun: expandable segments); no axis is such a setting.
     * `plan --emit X` passes X's (emit.h: mp_emit_accept). */
    int (*accept)(const void *ctx, const mp_model *m, mp_settings *s, char *why);
    const void *accept_ctx;
    /* The caller reads only the best plan (cands[0], exactly the plan a whole search
     * ranks first) and, with want_least, r->least: the search replays only the plans
     * that can change them, and r->cands holds the best alone, r->fitting is not
     * counted (memplan table). */
    bool best_only, want_least;
    /* The caller asks only whether a plan fits (memplan plan's "fits with --gpus N"):
     * the search ends at the first plan that fits estimated whole, r->cands[0],
     * not the best one; when none fits, the least memory's, its screen's figures. */
    bool any_fits;
    /* The estimates' context for this model (mp_estimate_ctx_new), kept by the
     * caller across its searches (a table's GPUs); NULL: the search makes its own. */
    mp_estimate_ctx *ctx;
} mp_search_opts;

typedef struct mp_search_result {
    mp_candidate *cands;      /* all considered, best first (fits, then score) */
    size_t n, cap;
    size_t considered;        /* combinations in the space */
    size_t evaluated;         /* estimates computed (larger batches after a miss are pruned) */
    size_t fitting;
    size_t host_limited;      /* estimates that fit the GPU but not the host RAM */
    size_t unwritable;        /* micro-batches of combinations opts.accept refused: skipped */
    mp_candidate least;       /* the first plan of least device_bytes in the whole ranking
                                 (set unless best_only without want_least) */
} mp_search_result;

/* A fitting plan's place in the ranking's groups (the optimizer family, offload,
 * the kind of training, reduced numerics: search.c's rules 2 to 5), smaller first;
 * speed and simplicity decide within a group. */
int mp_rank_group(const mp_candidate *k, bool prefer_speed);
/* Why `alt` ranks below `best` in a search ranked with prefer_speed: the rule
 * that decided, and by how much, into buf (one line). */
const char *mp_rank_reason(const mp_candidate *best, const mp_candidate *alt, bool prefer_speed, char *buf,
                           size_t len);
/* Evaluate every combination the pins allow; `base` holds the pinned values. */
int mp_search(const mp_model *m, const mp_settings *base, const mp_gpu *gpu,
              const mp_search_opts *o, mp_search_result *r, char *err);
void mp_search_free(mp_search_result *r);

/* Inverse questions, by root finding on the estimate (GSL Brent):
 * "max-batch", "max-seq", "max-params". Returns 0, -1 on bad input, or -2
 * when even the smallest value does not fit. */
int mp_solve(const char *what, const mp_model *m, const mp_settings *s, const mp_gpu *gpu,
             double budget_bytes, double headroom, double *answer, mp_model *solved, char *err);

#endif

/* emitters.h — what a target is (a row of emit.c's table), and what the
 * target files share: the text buffer and quoting writers, the engine a plan
 * runs under, the plan summary. Adding a target is one file that defines its
 * row (an emit_target) and one line in emit.c's table. */
#ifndef MP_EMITTERS_H
#define MP_EMITTERS_H

#include <stddef.h>

#include "emit/emit.h"
#include "emit/quote.h"
#include "emit/sbuf.h"
#include "model/family.h"
#include "model/model.h"
#include "settings/settings.h"

/* One file a target writes: its name in a bundle, its text, its mode. */
typedef struct emit_file {
    const char *name;
    void (*write)(sbuf *, const mp_plan *);
    unsigned mode;                /* 0644, or 0755 for a launcher */
} emit_file;
enum { EMIT_MAX_FILES = 6 };

struct mp_emit_target {
    const char *name;             /* --emit NAME */
    emit_file file;               /* what -o FILE or standard output gets */
    /* 0, or -1 with err when the target cannot run the plan as estimated; NULL: it runs any */
    int (*check)(const mp_model *, const mp_settings *, char *err);
    /* -o DIR/: the bundle's files but README.txt, into out; their count, or -1 with
     * err. NULL: the target writes no bundle. */
    int (*bundle)(const mp_plan *, emit_file out[EMIT_MAX_FILES], char *err);
    void (*readme)(sbuf *, const mp_plan *); /* the bundle's README.txt */
    const char *framework;        /* the profile the target's stack is estimated with; NULL: the default */
    /* what the target's launcher sets whatever a searched plan says (NULL: nothing) */
    void (*launcher)(mp_settings *s);
    bool memtrain_values;         /* the search tries only the values memtrain implements */
    bool steps_in_backward;       /* runs the optimizer step in the backward and offloads activations */
    bool trl_methods;             /* writes the preference and RL methods (TRL's trainers: the hf bundle
                                     and the engine files it carries) */
    bool dpo_recipes;             /* writes --method dpo (torchtune's DPO recipes) */
};

/* Every target, in --emit's order: NAME's row is emit_target_NAME, defined in its
 * own file. A new target is a file and a name here. */
#define EMIT_TARGETS(X) X(memtrain) X(hf) X(deepspeed) X(accelerate) X(launch) X(torchtune) X(axolotl) X(llamafactory)
#define EMIT_DECLARE(name) extern const mp_emit_target emit_target_##name;
EMIT_TARGETS(EMIT_DECLARE)

/* The engine that runs a plan (engine.c): the one place that decides it. */
typedef enum { EMIT_SINGLE, EMIT_DDP, EMIT_DEEPSPEED, EMIT_FSDP } emit_engine_kind;
typedef struct emit_engine {
    emit_engine_kind kind;
    int64_t procs;            /* processes to launch: one per GPU */
    int stage;                /* ZeRO stage (DeepSpeed), 2 or 3 for FSDP's strategy, else 0 */
} emit_engine;
/* 0, or -1 with err when no engine runs the plan as estimated. */
int emit_engine_of(const mp_settings *s, emit_engine *e, char *err);
/* A target's check: 0 when an engine runs the plan as estimated, else -1 with err. */
int emit_check_engine(const mp_model *m, const mp_settings *s, char *err);
/* 0, or -1 with err: tiled attention where the architecture's modeling file
 * declares no SDPA (the Trainer would run eager: another plan) */
int emit_check_sdpa(const mp_model *m, const mp_settings *s, char *err);
/* A bundle README's MODEL section: where FILE names the model (KEY), and the Hub login a
 * gated model needs. */
void emit_readme_model(sbuf *b, const mp_model *m, const char *file, const char *key);
const char *emit_engine_name(emit_engine_kind k);
/* The ZeRO bucket DeepSpeed is given, in elements (engine.c). */
long long emit_zero_bucket(const mp_settings *s);

/* Engine spellings the other files and the tests read (each in its target's file). */
const char *emit_hf_optim(mp_optimizer o);               /* TrainingArguments optim */
const char *emit_hf_dtype(mp_precision p);               /* from_pretrained torch_dtype */
const char *emit_accelerate_precision(mp_precision p);   /* accelerate mixed_precision */
const char *emit_deepspeed_precision(mp_precision p);    /* DeepSpeed's block, NULL: none means it */

/* The model's row in the families table, where it tabulates transformers'
 * module names (model/family.h); NULL: memplan has none to write. */
const mp_family *emit_family_of(const mp_model *m);

/* The plan summary (summary.c): up to `max` lines, each one line of plain text (mp_quote). */
enum { EMIT_LINE = 320, EMIT_NLINES = 16 };
int emit_summary_lines(const mp_plan *p, const emit_engine *e, char lines[][EMIT_LINE], int max);
/* The summary as '# ' comment lines (YAML, shell), or behind another prefix. */
void emit_summary_comment(sbuf *b, const mp_plan *p, const emit_engine *e);
void emit_summary_prefixed(sbuf *b, const mp_plan *p, const emit_engine *e, const char *prefix);

#endif

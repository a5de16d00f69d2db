/* emitters.h — the emit targets (one file each) and the text buffer they write into. */
#ifndef MP_EMITTERS_H
#define MP_EMITTERS_H

#include <stddef.h>

#include "emit/quote.h"
#include "emit/sbuf.h"
#include "memplan.h"

/* Each target writes one artifact for the model and settings. The plan's
 * settings reach a target's vocabulary through the settings rows
 * (mp_*_desc_of in memplan.h): no target restates a mapping. */
void emit_memtrain(sbuf *b, const mp_model *m, const mp_settings *s);
void emit_hf(sbuf *b, const mp_model *m, const mp_settings *s);
void emit_deepspeed(sbuf *b, const mp_model *m, const mp_settings *s);
void emit_accelerate(sbuf *b, const mp_model *m, const mp_settings *s);
void emit_launch(sbuf *b, const mp_model *m, const mp_settings *s);
/* torchtune (torchtune.c): its recipe config, the `tune run` launcher, the plan as '# ' lines */
void emit_torchtune(sbuf *b, const mp_model *m, const mp_settings *s);
void emit_torchtune_launch(sbuf *b, const mp_model *m, const mp_settings *s);
void emit_torchtune_summary(sbuf *b, const mp_model *m, const mp_settings *s);
int check_torchtune(const mp_model *m, const mp_settings *s, char *err);

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
int check_deepspeed(const mp_model *m, const mp_settings *s, char *err);
/* 0, or -1 with err when memtrain cannot run the plan (nothing to compile, no CUDA allocator). */
int check_memtrain(const mp_model *m, const mp_settings *s, char *err);
const char *emit_engine_name(emit_engine_kind k);
/* The ZeRO bucket DeepSpeed is given, in elements (deepspeed.c). */
long long emit_zero_bucket(const mp_settings *s);

/* The plan summary (summary.c): up to `max` lines, each one line of plain text (mp_quote). */
enum { EMIT_LINE = 320, EMIT_NLINES = 16 };
int emit_summary_lines(const mp_model *m, const mp_settings *s, const emit_engine *e,
                       char lines[][EMIT_LINE], int max);
/* The summary as '# ' comment lines (YAML, shell). */
void emit_summary_comment(sbuf *b, const mp_model *m, const mp_settings *s, const emit_engine *e);

#endif

/* emitters.h — the emit targets (one file each) and the text buffer they write into. */
#ifndef MP_EMITTERS_H
#define MP_EMITTERS_H

#include <stddef.h>

#include "memplan.h"

/* A growing text buffer; `oom` is set once an allocation failed. */
typedef struct sbuf { char *p; size_t n, cap; int oom; } sbuf;
/* Append printf-formatted text. */
void sbuf_put(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Each target writes one artifact for the model and settings. The plan's
 * settings reach a target's vocabulary through the settings rows
 * (mp_*_desc_of in memplan.h): no target restates a mapping. */
void emit_memtrain(sbuf *b, const mp_model *m, const mp_settings *s);
void emit_hf(sbuf *b, const mp_model *m, const mp_settings *s);
void emit_deepspeed(sbuf *b, const mp_model *m, const mp_settings *s);
void emit_accelerate(sbuf *b, const mp_model *m, const mp_settings *s);

#endif

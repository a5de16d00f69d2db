/* shape.h — the model a memtrain run builds: its shape as memtrain's config and
 * metrics header carry it (rows of keys), and the planner's model of it. */
#ifndef MP_MEMTRAIN_SHAPE_H
#define MP_MEMTRAIN_SHAPE_H

#include <stdbool.h>
#include <stdint.h>

#include "model/model.h"
#include "settings/options.h"

/* The architecture family: gpt2 (LayerNorm and biases, GELU, learned positions,
 * tied head) or llama (RMSNorm, SwiGLU, rotary, GQA, no biases, untied head). */
typedef enum { MEMTRAIN_GPT2, MEMTRAIN_LLAMA, MEMTRAIN_NFAMILY } memtrain_family;
const char *memtrain_family_name(memtrain_family f); /* "gpt2", "llama"; "?" out of range */
int memtrain_family_parse(const char *s, memtrain_family *f);

/* The model's shape (trainer/config.h's legend). */
typedef struct memtrain_shape {
    memtrain_family family;
    int layers;        /* L */
    int hidden;        /* C */
    int heads;         /* NH */
    int kv_heads;      /* KV; 0: NH (gpt2 always NH) */
    int ffn;           /* F; 0: 4C (gpt2), or 8C/3 rounded up to a multiple of 64 (llama) */
    int vocab;         /* V */
    int max_pos;       /* learned position rows (gpt2); 0: T */
    int tied;          /* the head shares the embedding: 0 or 1; -1: as the family has it */
} memtrain_shape;

/* The keys family, layers, hidden, heads, kv-heads, ffn, vocab, max-pos, tied:
 * rows over memtrain_shape. */
extern const mp_opt memtrain_shape_opts[];

/* The shape memtrain builds for a planner model: a gated MLP makes it llama. */
void memtrain_shape_of(const mp_model *m, memtrain_shape *sh);
/* The planner's model of a shape (mp_memtrain_model), positions defaulting to seq. */
int memtrain_shape_model(const memtrain_shape *sh, int64_t seq, mp_model *m, char *err);

/* A memtrain run's model: the family's preset ("gpt2", "llama") around the
 * dimensions already in m, its head tied or not, learned positions defaulting
 * to the sequence, named as memtrain names it (memtrain-gpt2-2x64). Shared by
 * memtrain's prediction and memtop's what-if view of a run. */
int mp_memtrain_model(mp_model *m, const char *family, bool tied, int64_t seq, char *err);

#endif

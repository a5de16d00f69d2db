/* shape.h — the model a memtrain run builds. */
#ifndef MP_MEMTRAIN_SHAPE_H
#define MP_MEMTRAIN_SHAPE_H

#include <stdbool.h>
#include <stdint.h>

#include "model/model.h"

/* A memtrain run's model: the family's preset ("gpt2", "llama") around the
 * dimensions already in m, its head tied or not, learned positions defaulting
 * to the sequence, named as memtrain names it (memtrain-gpt2-2x64). Shared by
 * memtrain's prediction and memtop's what-if view of a run. */
int mp_memtrain_model(mp_model *m, const char *family, bool tied, int64_t seq, char *err);

#endif
